//! failnext's latency-aware ordering fed by failnext-blocklag's probes
//! (`Monitor::feed_latency(failover.latency_feed())`), against wiremock providers on loopback.

use std::time::Duration;

use failnext::{Endpoint, Failover, LatencyOrdering, RequestBuilderExt, ResponseExt};
use failnext_blocklag::Monitor;
use wiremock::matchers::any;
use wiremock::{Mock, MockServer, ResponseTemplate};

const HEIGHT: &str = r#"{"jsonrpc":"2.0","id":1,"result":"0x10"}"#;

async fn provider(delay: Duration) -> MockServer {
    let server = MockServer::start().await;
    answer_after(&server, delay).await;
    server
}

async fn answer_after(server: &MockServer, delay: Duration) {
    server.reset().await;
    let reply = ResponseTemplate::new(200).set_body_string(HEIGHT).set_delay(delay);
    Mock::given(any()).respond_with(reply).mount(server).await;
}

#[tokio::test]
async fn the_monitors_probe_latencies_move_reads_off_a_slow_primary_and_back() {
    let (primary, backup) = (provider(Duration::from_millis(150)).await, provider(Duration::ZERO).await);
    let endpoints = || [Endpoint::new("primary", primary.uri()), Endpoint::new("backup", backup.uri())];
    let monitor = Monitor::builder(endpoints()).build().unwrap();
    let failover = Failover::builder(endpoints())
        .eligible(monitor.clone())
        .no_attempt_timeout()
        // No exploring requests: only the monitor's probes tell failnext about the primary.
        .latency_ordering(LatencyOrdering::new(Duration::from_millis(50)).explore_every(0))
        .build()
        .unwrap();
    monitor.feed_latency(failover.latency_feed());
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new()).with(failover).build();
    let read = || async {
        let resp = client.post(primary.uri()).body(HEIGHT).allow_failover().send().await.unwrap();
        resp.served_by().unwrap().to_string()
    };
    monitor.check().await.unwrap();
    assert_eq!(read().await, "backup", "the primary's probe took 150 ms, the backup's none");
    answer_after(&primary, Duration::ZERO).await;
    let mut back = false;
    for _ in 0..20 {
        monitor.check().await.unwrap();
        if read().await == "primary" {
            back = true;
            break;
        }
    }
    assert!(back, "fast probes brought the primary's reads back");
}

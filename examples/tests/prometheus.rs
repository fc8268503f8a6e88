//! The demo's metrics endpoint (feature `prometheus`): failnext's and failnext-blocklag's
//! metrics, scraped over loopback as Prometheus would, labelled by endpoint id and naming no
//! provider URL; an address that is not loopback is refused, by the function and by the demo.
//!
//! A process has one global `metrics` recorder: only the first test installs the exporter in
//! this process. The others run the demo binary, or are refused before anything is installed.

use std::net::SocketAddr;
use std::process::Command;
use std::sync::Arc;

use failnext::{Endpoint, Failover, RequestBuilderExt};
use failnext_blocklag::Monitor;
use failnext_examples::demo::{EXCERPT_METRIC, MetricsEndpoint, MetricsError, excerpt};
use failnext_loopback::{Action, Received, Reply, Server};

/// A key in the primary's URL path: it must not reach the scrape.
const SECRET: &str = "KEYPATH123";

/// A provider that answers every JSON-RPC call with block `0x10`, echoing the call's id.
fn block_16() -> Arc<dyn Fn(&Received) -> Action + Send + Sync> {
    Arc::new(|req: &Received| {
        let id = serde_json::from_slice::<serde_json::Value>(&req.body)
            .map(|v| v["id"].clone())
            .unwrap_or_default();
        let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": "0x10"}).to_string();
        Action::Reply(Reply::new(200).json(body))
    })
}

/// The samples of `metric` for endpoint `id` in `scrape`.
fn samples<'a>(scrape: &'a str, metric: &str, id: &str) -> Vec<&'a str> {
    let label = format!("endpoint=\"{id}\"");
    excerpt(scrape, metric).into_iter().filter(|line| line.contains(&label)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_serves_failnext_metrics_on_a_loopback_prometheus_endpoint() {
    let endpoint = MetricsEndpoint::start("127.0.0.1:0".parse().unwrap()).expect("the endpoint starts");
    assert!(endpoint.addr().ip().is_loopback() && endpoint.addr().port() != 0, "{endpoint:?}");
    assert_eq!(endpoint.url(), format!("http://{}/metrics", endpoint.addr()));

    let down = Server::start(Arc::new(|_: &Received| Action::Reply(Reply::new(503).text("down")))).await;
    let up = Server::start(block_16()).await;
    let endpoints =
        [Endpoint::new("primary", down.url(&format!("/v3/{SECRET}"))), Endpoint::new("backup", up.url("/"))];
    let failover = Failover::builder(endpoints.clone()).build().unwrap();
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let client = reqwest_middleware::ClientBuilder::new(http).with(failover).build();
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}"#;
    for _ in 0..3 {
        let resp = client
            .post(endpoints[0].url())
            .header("content-type", "application/json")
            .body(call)
            .allow_failover()
            .send()
            .await
            .expect("the backup answers");
        assert_eq!(resp.status(), 200);
    }
    let monitor = Monitor::builder(endpoints.clone()).build().unwrap();
    let _ = monitor.check().await;

    let scrape = endpoint.scrape().await.expect("the endpoint answers a scrape");

    let primary = samples(&scrape, EXCERPT_METRIC, "primary");
    assert!(
        primary.iter().any(|line| line.contains("class=\"trigger\"") && line.ends_with(" 3")),
        "three 503s from the primary: {primary:?}\n{scrape}"
    );
    let backup = samples(&scrape, EXCERPT_METRIC, "backup");
    assert!(
        backup.iter().any(|line| line.contains("class=\"answer\"") && line.ends_with(" 3")),
        "three answers from the backup: {backup:?}\n{scrape}"
    );
    assert!(!samples(&scrape, "failnext_failovers_total", "primary").is_empty(), "{scrape}");
    assert_eq!(
        samples(&scrape, "failnext_blocklag_height", "backup"),
        ["failnext_blocklag_height{endpoint=\"backup\"} 16"]
    );
    assert!(!samples(&scrape, "failnext_blocklag_probe_failures_total", "primary").is_empty(), "{scrape}");

    // Labels are endpoint ids: no provider's address, port or key.
    for server in [&down, &up] {
        assert!(
            !scrape.contains(&format!(":{}", server.port())),
            "a provider's port in the scrape:\n{scrape}"
        );
    }
    for leak in ["127.0.0.1", "http://", SECRET] {
        assert!(!scrape.contains(leak), "{leak:?} in the scrape:\n{scrape}");
    }
}

#[test]
fn a_metrics_address_that_is_not_loopback_is_refused() {
    for addr in ["0.0.0.0:9898", "10.0.0.1:9898", "[::]:9898"] {
        let addr: SocketAddr = addr.parse().unwrap();
        let err = MetricsEndpoint::start(addr).unwrap_err();
        assert!(matches!(err, MetricsError::NotLoopback(a) if a == addr), "{err:?}");
        assert!(err.to_string().contains("not a loopback address"), "{err}");
    }
}

#[test]
fn the_demo_refuses_a_metrics_address_that_is_not_loopback_without_running() {
    let output =
        Command::new(env!("CARGO_BIN_EXE_demo")).args(["--metrics", "0.0.0.0:9898"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("not a loopback address"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(output.stdout.is_empty(), "the bot did not start: {}", String::from_utf8_lossy(&output.stdout));

    let output = Command::new(env!("CARGO_BIN_EXE_demo")).args(["--metrics", "localhost"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("not an IP address and port"), "{stderr}");
}

#[test]
fn the_demo_prints_where_to_scrape_and_ends_with_its_attempt_counters() {
    // The demo draws its picture under $CARGO_TARGET_DIR: a temporary one, so that
    // `target/demo/run.svg` stays the last demo run's.
    let dir = std::env::temp_dir().join(format!("failnext-demo-metrics-{}", std::process::id()));
    let output = Command::new(env!("CARGO_BIN_EXE_demo"))
        .args(["--seconds", "3", "--metrics", "127.0.0.1:0"])
        .env("CARGO_TARGET_DIR", &dir)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let report = format!("{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{report}");

    let first = stdout.lines().next().unwrap_or_default();
    assert!(first.starts_with("metrics: curl http://127.0.0.1:") && first.ends_with("/metrics"), "{report}");
    assert!(!first.contains("127.0.0.1:0/"), "the port taken is shown: {report}");
    let excerpt: Vec<&str> = stdout.lines().skip_while(|line| !line.starts_with("metrics (")).collect();
    for id in ["primary", "backup", "third"] {
        let label = format!("endpoint=\"{id}\"");
        assert!(
            excerpt.iter().any(|line| line.trim_start().starts_with(EXCERPT_METRIC) && line.contains(&label)),
            "no attempts of {id} at the end: {report}"
        );
    }
}

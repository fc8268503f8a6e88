//! Metrics (feature `metrics`) through a recorder that keeps every counter, on loopback
//! servers: labels are endpoint ids, never URLs.

use std::sync::Arc;

use failnext::{Endpoint, Failover, RequestBuilderExt};
use failnext_loopback::metrics::{Kept, Rec};
use failnext_loopback::{Action, Received, Reply, Server};

#[test]
fn attempts_failovers_skips_and_breaker_transitions_are_counted_by_endpoint_id() {
    let kept = Arc::new(Kept::default());
    let recorder = Rec(kept.clone());
    metrics::with_local_recorder(&recorder, || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let down = Server::start(Arc::new(|_: &Received| Action::Reply(Reply::new(503).text("x")))).await;
            let up = Server::start(Arc::new(|_: &Received| Action::Reply(Reply::new(200).text("ok")))).await;
            let secret = "k3y";
            let failover = Failover::builder([
                Endpoint::new("primary", down.url(&format!("/{secret}"))),
                Endpoint::new("backup", up.url("/")),
                Endpoint::new("spare", up.url("/")),
            ])
            .build()
            .unwrap();
            let client =
                reqwest_middleware::ClientBuilder::new(reqwest::Client::new()).with(failover).build();
            for _ in 0..5 {
                let resp = client
                    .get("http://127.0.0.1:9/")
                    .allow_failover()
                    .exclude_endpoints(["spare"])
                    .send()
                    .await;
                assert_eq!(resp.unwrap().status(), 200);
            }
        });
    });
    assert_eq!(kept.get("failnext_attempts_total{class=trigger,endpoint=primary}"), 3, "{:?}", kept.names());
    assert_eq!(kept.get("failnext_attempts_total{class=answer,endpoint=backup}"), 5);
    assert_eq!(kept.get("failnext_failovers_total{endpoint=primary}"), 3);
    assert_eq!(kept.get("failnext_skips_total{endpoint=primary,reason=open}"), 2, "open after 3 triggers");
    assert_eq!(kept.get("failnext_skips_total{endpoint=spare,reason=excluded}"), 5);
    assert_eq!(kept.get("failnext_breaker_transitions_total{endpoint=primary,state=open}"), 1);
    assert_eq!(kept.get("failnext_attempt_seconds{endpoint=backup}"), 5, "one latency sample per attempt");
    assert!(
        kept.names().iter().all(|n| !n.contains("k3y") && !n.contains("127.0.0.1")),
        "{:?}",
        kept.names()
    );
}

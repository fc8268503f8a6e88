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

#[test]
fn hedges_are_counted_by_the_endpoint_whose_first_attempt_was_hedged() {
    let kept = Arc::new(Kept::default());
    let recorder = Rec(kept.clone());
    metrics::with_local_recorder(&recorder, || {
        let rt =
            tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap();
        rt.block_on(async {
            let after = |ms: u64| {
                Server::start_later(Arc::new(move |_: &Received| -> failnext_loopback::Later {
                    Box::pin(async move {
                        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                        Action::Reply(Reply::new(200).text("ok"))
                    })
                }))
            };
            let (slow, fast) = (after(300).await, after(100).await);
            let failover = Failover::builder([
                Endpoint::new("primary", slow.url("/k3y")),
                Endpoint::new("backup", fast.url("/")),
            ])
            .no_attempt_timeout()
            .hedge(failnext::Hedge::after(std::time::Duration::from_millis(20)))
            .build()
            .unwrap();
            let client =
                reqwest_middleware::ClientBuilder::new(reqwest::Client::new()).with(failover).build();
            for _ in 0..3 {
                let resp = client.get("http://127.0.0.1:9/").allow_failover().send().await;
                assert_eq!(resp.unwrap().status(), 200);
            }
        });
    });
    assert_eq!(kept.get("failnext_hedges_total{endpoint=primary}"), 3, "{:?}", kept.names());
    assert_eq!(kept.get("failnext_hedges_total{endpoint=backup}"), 0);
    assert_eq!(kept.get("failnext_attempts_total{class=answer,endpoint=backup}"), 3);
    assert_eq!(kept.get("failnext_attempts_total{class=answer,endpoint=primary}"), 0, "cancelled");
    assert!(kept.names().iter().all(|n| !n.contains("k3y")), "{:?}", kept.names());
}

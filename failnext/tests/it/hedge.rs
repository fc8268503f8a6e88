//! Hedged reads (`Hedge`, opt-in), under paused tokio time: the servers delay with tokio
//! timers, so a 300 ms primary costs no real time.

use std::time::Duration;

use failnext::{Hedge, RequestBuilderExt, ServedBy, Trace, TraceStep};
use tokio::time::Instant;

use crate::support::*;

async fn after(ms: u64) -> failnext_loopback::Server {
    delayed(ms).await.0
}

/// Two endpoints, hedged after 20 ms.
fn hedged(primary: &failnext_loopback::Server, backup: &failnext_loopback::Server) -> failnext::Failover {
    builder([("primary", primary.url("/")), ("backup", backup.url("/"))])
        .no_attempt_timeout()
        .hedge(Hedge::after(Duration::from_millis(20)))
        .build()
        .unwrap()
}

fn served(resp: &reqwest::Response) -> &str {
    resp.extensions().get::<ServedBy>().unwrap().0.as_str()
}

#[tokio::test(start_paused = true)]
async fn a_read_hedged_after_20_ms_is_answered_within_1_3_times_the_backups_latency() {
    // The primary answers 200 ms slower than the backup (100 ms).
    let (primary, backup) = (after(300).await, after(100).await);
    let failover = hedged(&primary, &backup);
    let c = client(failover);
    for _ in 0..5 {
        let started = Instant::now();
        let resp = c.get("http://127.0.0.1:9/").allow_failover().trace().send().await.unwrap();
        let took = started.elapsed();
        assert_eq!(served(&resp), "backup");
        assert!(took <= Duration::from_millis(130), "{took:?}: at most 1.3 × the backup's 100 ms");
        let trace = resp.extensions().get::<Trace>().unwrap();
        assert_eq!(trace.entry("backup").unwrap().steps()[0], TraceStep::Hedged, "{trace}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_fast_primary_is_not_hedged_and_a_write_never_is() {
    let (primary, backup) = (after(10).await, after(10).await);
    let failover = hedged(&primary, &backup);
    let c = client(failover);
    assert_eq!(served(&c.get("http://127.0.0.1:9/").allow_failover().send().await.unwrap()), "primary");
    assert_eq!(backup.requests(), 0, "answered before the hedge delay: no hedge");
    let slow = after(300).await;
    let failover = hedged(&slow, &backup);
    let resp = client(failover).post("http://127.0.0.1:9/").body("{}").send().await.unwrap();
    assert_eq!(served(&resp), "primary", "a POST may not fail over: never hedged");
    assert_eq!(backup.requests(), 0);
}

//! Latency-aware ordering (`LatencyOrdering`, opt-in), under paused tokio time: the servers
//! delay their answers with tokio timers, so a "200 ms slower" primary costs no real time.

use std::sync::atomic::Ordering;
use std::time::Duration;

use failnext::{LatencyOrdering, RequestBuilderExt, ServedBy};
use reqwest_middleware::ClientWithMiddleware;

use crate::support::*;

async fn served(client: &ClientWithMiddleware) -> String {
    let resp = client.get("http://127.0.0.1:9/").allow_failover().send().await.unwrap();
    resp.extensions().get::<ServedBy>().unwrap().0.to_string()
}

#[tokio::test(start_paused = true)]
async fn a_primary_200_ms_slower_loses_its_reads_to_the_backup_and_gets_them_back_when_fast() {
    let (primary, primary_delay) = delayed(210).await;
    let (backup, _) = delayed(10).await;
    let failover = builder([("primary", primary.url("/")), ("backup", backup.url("/"))])
        .no_attempt_timeout()
        .latency_ordering(LatencyOrdering::new(Duration::from_millis(50)).explore_every(4))
        .build()
        .unwrap();
    let c = client(failover);
    let mut first = Vec::new();
    for _ in 0..12 {
        first.push(served(&c).await);
    }
    // Exploration measures the backup within the first few requests; from then on the backup,
    // 200 ms faster, takes the reads, but for the exploring ones.
    let tail = &first[6..];
    assert!(tail.iter().filter(|s| *s == "backup").count() >= 4, "{first:?}");
    // The primary is fast again: its exploring requests (one in eight here: every fourth
    // request explores, in turn over the two) bring its average down, a fifth of the way each
    // time, and it takes the reads back; only the backup's own exploring requests still go there.
    primary_delay.store(10, Ordering::SeqCst);
    let mut later = Vec::new();
    for _ in 0..120 {
        later.push(served(&c).await);
    }
    let back = later[100..].iter().filter(|s| *s == "primary").count();
    assert!(back >= 16, "{back} of the last 20: {later:?}");
}

#[tokio::test(start_paused = true)]
async fn without_latency_ordering_a_slow_primary_keeps_every_read() {
    let (primary, _) = delayed(210).await;
    let (backup, _) = delayed(10).await;
    let failover = builder([("primary", primary.url("/")), ("backup", backup.url("/"))])
        .no_attempt_timeout()
        .build()
        .unwrap();
    let c = client(failover);
    for _ in 0..10 {
        assert_eq!(served(&c).await, "primary");
    }
    assert_eq!(backup.requests(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_requests_own_preference_wins_over_latency_and_the_monitor_can_feed_it() {
    let (primary, _) = delayed(10).await;
    let (backup, _) = delayed(10).await;
    let failover = builder([("primary", primary.url("/")), ("backup", backup.url("/"))])
        .no_attempt_timeout()
        .latency_ordering(LatencyOrdering::new(Duration::from_millis(50)).explore_every(0))
        .build()
        .unwrap();
    // A monitor says the primary's probes take 300 ms and the backup's 5 ms.
    failover.observe_latency("primary", Duration::from_millis(300));
    failover.observe_latency("backup", Duration::from_millis(5));
    let c = client(failover);
    assert_eq!(served(&c).await, "backup");
    let resp = c.get("http://127.0.0.1:9/").prefer_endpoint("primary").allow_failover().send().await.unwrap();
    assert_eq!(
        resp.extensions().get::<ServedBy>().unwrap().0.as_str(),
        "primary",
        "the request's preference wins"
    );
}

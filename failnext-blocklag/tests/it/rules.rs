//! Rules carried across checks: re-admission by hysteresis, the reference height, and what a
//! snapshot keeps about each provider's probes.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use failnext_blocklag::{ProbeErrorKind, Reference};
use failnext_loopback::{Action, Handler, Received};

use crate::support::*;

#[tokio::test]
async fn a_flapping_provider_does_not_change_eligibility_faster_than_readmit_after() {
    let (steady, flapping) = (Node::at(100).await, Node::at(100).await);
    let monitor = monitor([("steady", steady.url()), ("flapping", flapping.url())])
        .max_lag(2)
        .readmit_after(3)
        .build()
        .unwrap();

    // Good, then failing: evicted at once.
    monitor.check().await.unwrap();
    assert!(monitor.eligible("flapping"));
    flapping.set_failing(true);
    monitor.check().await.unwrap_err();
    assert!(!monitor.eligible("flapping"));

    // Flapping good, bad, good, bad...: never three good checks in a row, never eligible.
    let mut changes = Vec::new();
    for check in 0..12 {
        flapping.set_failing(check % 2 == 1);
        let _ = monitor.check().await;
        changes.push(monitor.eligible("flapping"));
        assert!(monitor.eligible("steady"));
    }
    assert!(changes.iter().all(|eligible| !eligible), "{changes:?}");

    // Two good, one lagging (also bad), then three good: re-admitted at the third.
    flapping.set_failing(false);
    let mut seen = Vec::new();
    for height in [100, 100, 90, 100, 100, 100, 100] {
        flapping.set_height(height);
        let _ = monitor.check().await;
        let snapshot = monitor.snapshot().unwrap();
        let entry = snapshot.entry("flapping").unwrap();
        seen.push((entry.consecutive_good_checks(), monitor.eligible("flapping")));
    }
    assert_eq!(seen, [(1, false), (2, false), (0, false), (1, false), (2, false), (3, true), (4, true)]);
}

#[tokio::test]
async fn readmit_after_one_readmits_at_the_first_good_check_as_in_0_1() {
    let (steady, flapping) = (Node::at(100).await, Node::at(100).await);
    let monitor = monitor([("steady", steady.url()), ("flapping", flapping.url())]).build().unwrap();
    for failing in [true, false, true, false] {
        flapping.set_failing(failing);
        let _ = monitor.check().await;
        assert_eq!(monitor.eligible("flapping"), !failing);
    }
}

#[test]
fn readmit_after_zero_is_rejected_naming_the_option() {
    let err = monitor([("a", "http://127.0.0.1:1".into())]).readmit_after(0).build().unwrap_err();
    assert!(err.to_string().contains("readmit_after"), "{err}");
}

#[tokio::test]
async fn a_provider_reporting_1000_blocks_ahead_does_not_evict_the_others_under_corroborated_2() {
    let (a, b, c, liar) = (Node::at(100).await, Node::at(99).await, Node::at(98).await, Node::at(1100).await);
    let endpoints = [("a", a.url()), ("b", b.url()), ("c", c.url()), ("liar", liar.url())];

    // The 0.1 rule: the liar is the reference and every honest provider lags.
    let highest = monitor(endpoints.clone()).max_lag(3).build().unwrap();
    highest.check().await.unwrap();
    assert_eq!(highest.snapshot().unwrap().highest(), 1100);
    assert!(!highest.eligible("a") && !highest.eligible("b") && !highest.eligible("c"));

    let monitor = monitor(endpoints).max_lag(3).reference(Reference::Corroborated(2)).build().unwrap();
    monitor.check().await.unwrap();
    let snapshot = monitor.snapshot().unwrap();
    assert_eq!(snapshot.highest(), 100, "the highest height two providers reached");
    for id in ["a", "b", "c"] {
        assert!(monitor.eligible(id), "{id}");
    }
    assert_eq!(snapshot.lag("c"), Some(2));
    assert_eq!(snapshot.lag("liar"), Some(0), "ahead of the reference counts as 0 behind");

    // A second provider at the outlier's height corroborates it.
    b.set_height(1100);
    monitor.check().await.unwrap();
    assert_eq!(monitor.snapshot().unwrap().highest(), 1100);
    assert!(monitor.eligible("b") && monitor.eligible("liar"));
    assert!(!monitor.eligible("a") && !monitor.eligible("c"));
}

#[test]
fn corroborated_0_is_rejected_naming_the_option() {
    let err = monitor([("a", "http://127.0.0.1:1".into())])
        .reference(Reference::Corroborated(0))
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("reference"), "{err}");
}

#[tokio::test]
async fn the_snapshot_keeps_each_providers_probe_latency_ewma_and_last_error_kind() {
    let (fast, slow) = (Node::at(100).await, Node::at(100).await);
    slow.set_delay(Duration::from_millis(200));
    let monitor = monitor([("fast", fast.url()), ("slow", slow.url())]).build().unwrap();
    monitor.check().await.unwrap();
    let snapshot = monitor.snapshot().unwrap();
    let latency = |id: &str| snapshot.entry(id).unwrap().probe_latency().unwrap();
    assert!(latency("slow") >= Duration::from_millis(200), "{:?}", latency("slow"));
    assert!(latency("fast") < latency("slow"));
    assert_eq!(snapshot.entry("slow").unwrap().last_error_kind(), None);

    // A failure adds no latency sample and is remembered after the provider recovers.
    slow.set_failing(true);
    monitor.check().await.unwrap_err();
    let failed = monitor.snapshot().unwrap();
    let entry = failed.entry("slow").unwrap();
    assert_eq!(entry.last_error_kind(), Some(ProbeErrorKind::Status));
    assert_eq!(entry.last_failed_call(), Some("eth_blockNumber"));
    assert_eq!(entry.probe_latency(), Some(latency("slow")));
    slow.set_failing(false);
    slow.set_delay(Duration::ZERO);
    monitor.check().await.unwrap();
    let recovered = monitor.snapshot().unwrap();
    let entry = recovered.entry("slow").unwrap();
    assert_eq!(entry.last_error_kind(), Some(ProbeErrorKind::Status));
    // The average moves a quarter of the way towards the fast sample.
    let ewma = entry.probe_latency().unwrap();
    assert!(ewma < latency("slow") && ewma >= latency("slow").mul_f64(0.75), "{ewma:?}");
}

/// A loopback provider on the current runtime (so paused time works) answering at `height`.
async fn at_height(height: &Arc<AtomicU64>) -> Server {
    let height = Arc::clone(height);
    Server::start(Arc::new(move |req: &Received| {
        Action::Reply(req.rpc_result(format!("{:#x}", height.load(Ordering::SeqCst))).closing())
    }) as Handler)
    .await
}

#[tokio::test(start_paused = true)]
async fn lag_in_seconds_and_a_stalled_head_follow_the_time_between_checks() {
    let heights: Vec<_> = (0..3).map(|_| Arc::new(AtomicU64::new(100))).collect();
    let mut servers = Vec::new();
    for height in &heights {
        servers.push(at_height(height).await);
    }
    let urls = servers.iter().map(|s| s.url("/rpc"));
    let client = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let monitor = monitor(["a", "b", "behind"].into_iter().zip(urls))
        .client(client)
        .max_lag(0)
        .max_lag_secs(30)
        .stall_after(3)
        .build()
        .unwrap();
    let set = |a: u64, behind: u64| {
        heights[0].store(a, Ordering::SeqCst);
        heights[1].store(a, Ordering::SeqCst);
        heights[2].store(behind, Ordering::SeqCst);
    };

    // A block every 12 s; "behind" 2 blocks (24 s) behind: eligible by time, not by blocks.
    set(100, 98);
    monitor.check().await.unwrap();
    assert!(!monitor.eligible("behind"), "no block time yet: only the blocks count");
    for head in 101..=103 {
        tokio::time::advance(Duration::from_secs(12)).await;
        set(head, head - 2);
        monitor.check().await.unwrap();
    }
    let snapshot = monitor.snapshot().unwrap();
    assert_eq!(snapshot.block_time(), Some(Duration::from_secs(12)));
    assert_eq!(snapshot.lag_time("behind"), Some(Duration::from_secs(24)));
    assert!(monitor.eligible("behind"));

    // 3 blocks (36 s) behind: out.
    tokio::time::advance(Duration::from_secs(12)).await;
    set(104, 101);
    monitor.check().await.unwrap();
    assert!(!monitor.eligible("behind"));
    assert!(!monitor.snapshot().unwrap().stalled());

    // The head stops: stalled after more than 3 block times, and nobody is evicted for it.
    tokio::time::advance(Duration::from_secs(36)).await;
    monitor.check().await.unwrap();
    assert!(!monitor.snapshot().unwrap().stalled(), "exactly 3 block times");
    tokio::time::advance(Duration::from_secs(1)).await;
    monitor.check().await.unwrap();
    let snapshot = monitor.snapshot().unwrap();
    assert!(snapshot.stalled());
    assert_eq!(snapshot.head_unchanged_for(), Duration::from_secs(37));
    assert!(monitor.eligible("a") && monitor.eligible("b"));
}

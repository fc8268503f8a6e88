//! Issue 12's simulator scenarios: the monitor's rules over simulated providers of one chain,
//! checked on a paused tokio clock (the chain is advanced by hand, one block per 100 ms).

use std::time::Duration;

use failnext_blocklag::{Monitor, Reference};
use failnext_examples::sim::{Behaviour, Chain, Provider};

const BLOCK: Duration = Duration::from_millis(100);

async fn providers(chain: &Chain, ids: &[&str]) -> Vec<Provider> {
    let mut out = Vec::new();
    for id in ids {
        out.push(chain.provider(*id).await.unwrap());
    }
    out
}

/// One block, then a check, 100 ms later on the paused clock.
async fn block_and_check(chain: &Chain, monitor: &Monitor) {
    tokio::time::advance(BLOCK).await;
    chain.advance(1);
    let _ = monitor.check().await;
}

#[tokio::test(start_paused = true)]
async fn a_stalled_provider_is_evicted_within_the_configured_seconds() {
    let chain = Chain::manual(1);
    let nodes = providers(&chain, &["a", "b", "stuck"]).await;
    let monitor = Monitor::builder(nodes.iter().map(Provider::endpoint))
        .max_lag(0)
        .max_lag_secs(1)
        .probe_timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    for _ in 0..5 {
        block_and_check(&chain, &monitor).await;
    }
    assert!(monitor.eligible("stuck"));
    assert_eq!(monitor.snapshot().unwrap().block_time(), Some(BLOCK), "the block time, measured");
    nodes[2].set(Behaviour::Stalled).await.unwrap();
    let stalled_at = tokio::time::Instant::now();
    let mut evicted = None;
    for _ in 0..30 {
        block_and_check(&chain, &monitor).await;
        if !monitor.eligible("stuck") {
            evicted = Some(stalled_at.elapsed());
            break;
        }
        assert!(stalled_at.elapsed() <= Duration::from_secs(1), "still eligible while within 1 s behind");
    }
    let evicted = evicted.expect("evicted");
    assert!(evicted <= Duration::from_secs(1) + BLOCK, "evicted {evicted:?} after it stalled");
    assert!(monitor.eligible("a") && monitor.eligible("b"), "the others stay");
}

#[tokio::test(start_paused = true)]
async fn a_flapping_provider_does_not_change_eligibility_faster_than_readmit_after() {
    let chain = Chain::manual(1);
    let nodes = providers(&chain, &["a", "b", "flappy"]).await;
    let monitor = Monitor::builder(nodes.iter().map(Provider::endpoint)).readmit_after(3).build().unwrap();
    block_and_check(&chain, &monitor).await;
    let mut changes = 0;
    let mut was = monitor.eligible("flappy");
    // Down one check, up one check, for 24 checks.
    for round in 0..24 {
        let behaviour = if round % 2 == 0 { Behaviour::Down } else { Behaviour::Healthy };
        nodes[2].set(behaviour).await.unwrap();
        block_and_check(&chain, &monitor).await;
        let now = monitor.eligible("flappy");
        changes += usize::from(now != was);
        was = now;
    }
    assert_eq!(changes, 1, "evicted once, never re-admitted: it never had 3 good checks in a row");
    for _ in 0..3 {
        nodes[2].set(Behaviour::Healthy).await.unwrap();
        block_and_check(&chain, &monitor).await;
    }
    assert!(monitor.eligible("flappy"), "three good checks in a row re-admit it");
}

#[tokio::test(start_paused = true)]
async fn under_corroborated_2_a_provider_reporting_far_ahead_evicts_no_one() {
    let chain = Chain::manual(1);
    let nodes = providers(&chain, &["a", "b", "c"]).await;
    let monitor = Monitor::builder(nodes.iter().map(Provider::endpoint))
        .reference(Reference::Corroborated(2))
        .build()
        .unwrap();
    block_and_check(&chain, &monitor).await;
    // "c" runs 1000 blocks ahead of the others (a fork, a bug, a lie): a lagging simulated
    // provider is behind, so make the honest two the laggards of a chain that jumped.
    chain.advance(1000);
    nodes[0].set(Behaviour::Lagging(1000)).await.unwrap();
    nodes[1].set(Behaviour::Lagging(1000)).await.unwrap();
    let _ = monitor.check().await;
    let snapshot = monitor.snapshot().unwrap();
    assert_eq!(snapshot.highest() + 1000, snapshot.height("c").unwrap());
    assert!(["a", "b", "c"].iter().all(|id| monitor.eligible(id)), "no one evicted by the outlier");
    let highest = Monitor::builder(nodes.iter().map(Provider::endpoint)).build().unwrap();
    let _ = highest.check().await;
    assert!(!highest.eligible("a") && !highest.eligible("b"), "under Reference::Highest the two are evicted");
}

#[tokio::test(start_paused = true)]
async fn latency_ordering_moves_reads_off_a_primary_200_ms_slower_and_back_after_it_recovers() {
    use failnext::{Failover, LatencyOrdering, RequestBuilderExt, ResponseExt};

    let chain = Chain::manual(1);
    let nodes = providers(&chain, &["primary", "backup"]).await;
    let failover = Failover::builder(nodes.iter().map(Provider::endpoint))
        .no_attempt_timeout()
        .latency_ordering(LatencyOrdering::new(Duration::from_millis(50)).explore_every(4))
        .build()
        .unwrap();
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new()).with(failover).build();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}"#;
    let read = || async {
        let send = client.post(nodes[0].url()).header("content-type", "application/json").body(body);
        send.allow_failover().send().await.unwrap().served_by().unwrap().to_string()
    };
    nodes[0].set(Behaviour::Slow(Duration::from_millis(200))).await.unwrap();
    let mut served = Vec::new();
    for _ in 0..12 {
        served.push(read().await);
    }
    let moved = served.iter().position(|s| s == "backup").expect("reads moved to the backup");
    assert!(moved <= 4, "within a few requests: {served:?}");
    assert!(served[6..].iter().filter(|s| *s == "backup").count() >= 4, "{served:?}");
    nodes[0].set(Behaviour::Healthy).await.unwrap();
    let mut later = Vec::new();
    for _ in 0..120 {
        later.push(read().await);
    }
    let back = later[100..].iter().filter(|s| *s == "primary").count();
    assert!(back >= 16, "back on the primary after it recovered: {back} of the last 20");
}

#[tokio::test(start_paused = true)]
async fn a_stalled_head_is_reported_once_as_an_event_and_evicts_no_one() {
    use std::sync::{Arc, Mutex};

    use failnext_blocklag::MonitorEvent;

    let chain = Chain::manual(1);
    let nodes = providers(&chain, &["a", "b"]).await;
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let monitor = Monitor::builder(nodes.iter().map(Provider::endpoint))
        .stall_after(3)
        .on_event(move |e: &MonitorEvent| seen.lock().unwrap().push(e.clone()))
        .build()
        .unwrap();
    for _ in 0..4 {
        block_and_check(&chain, &monitor).await;
    }
    // Every provider's head stops: the reference does not move.
    for node in &nodes {
        node.set(Behaviour::Stalled).await.unwrap();
    }
    for _ in 0..8 {
        block_and_check(&chain, &monitor).await;
    }
    assert!(monitor.snapshot().unwrap().stalled());
    assert!(monitor.eligible("a") && monitor.eligible("b"), "a stall evicts no one");
    for node in &nodes {
        node.set(Behaviour::Healthy).await.unwrap();
    }
    block_and_check(&chain, &monitor).await;
    let events = events.lock().unwrap().clone();
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(matches!(events[0], MonitorEvent::Stalled { unchanged_for, .. } if unchanged_for > 3 * BLOCK));
    assert!(matches!(events[1], MonitorEvent::StallEnded { .. }), "{events:?}");
}

#[tokio::test(start_paused = true)]
async fn a_restarted_monitor_keeps_a_providers_readmission_progress() {
    let chain = Chain::manual(1);
    let nodes = providers(&chain, &["a", "b", "flappy"]).await;
    let build = || Monitor::builder(nodes.iter().map(Provider::endpoint)).readmit_after(3).build().unwrap();
    let before = build();
    block_and_check(&chain, &before).await;
    nodes[2].set(Behaviour::Down).await.unwrap();
    block_and_check(&chain, &before).await;
    nodes[2].set(Behaviour::Healthy).await.unwrap();
    block_and_check(&chain, &before).await;
    assert!(!before.eligible("flappy"), "one good check of the three it needs");
    let kept = before.health().expect("a check published");

    // The process restarts: the new monitor does not re-admit it at its first good check.
    let after = build();
    assert_eq!(after.restore_health(&kept), 3);
    assert!(!after.eligible("flappy") && after.eligible("a"), "restored before any check");
    block_and_check(&chain, &after).await;
    assert!(!after.eligible("flappy"), "two of three");
    block_and_check(&chain, &after).await;
    assert!(after.eligible("flappy"), "the third good check in a row, counting the one before the restart");
    assert_eq!(after.restore_health(&kept), 0, "only into a monitor that has not published");
}

//! One prober per provider per fleet (feature `redis`), on a real `redis-server`: monitors of
//! one fleet probe each provider from one process at a time and all see what it saw, a wrong
//! chain included; a holder that stops is replaced.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use failnext::fleet::Fleet;
use failnext::{Endpoint, EndpointId, HealthSource, Observation};
use failnext_blocklag::Monitor;
use failnext_loopback::{Action, Received, RedisServer, Reply, Server};
use serde_json::{Value, json};

/// A provider at block 16 whose chain id is `chain` (changeable); counts the probes it gets.
async fn provider(chain: Arc<AtomicU64>, probes: Arc<AtomicU64>) -> Server {
    Server::start(Arc::new(move |req: &Received| {
        probes.fetch_add(1, Ordering::Relaxed);
        let chain = chain.load(Ordering::Relaxed);
        let answer = |call: &Value| {
            let result = match call["method"].as_str() {
                Some("eth_chainId") => json!(format!("{chain:#x}")),
                Some("eth_getBlockByNumber") => json!({
                    "number": "0x10",
                    "hash": format!("0x{:064x}", 16),
                    "timestamp": format!("{:#x}", unix_now()),
                }),
                _ => json!("0x10"),
            };
            json!({"jsonrpc": "2.0", "id": call["id"], "result": result})
        };
        let body = match req.json() {
            Value::Array(calls) => Value::Array(calls.iter().map(answer).collect()),
            call => answer(&call),
        };
        Action::Reply(Reply::new(200).json(body.to_string()))
    }))
    .await
}

fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

fn monitor(a: &Server, b: &Server, fleet: Option<Fleet>) -> Monitor {
    let mut builder = Monitor::builder([Endpoint::new("a", a.url("/")), Endpoint::new("b", b.url("/"))])
        .expected_chain_id(1)
        .probe_timeout(Duration::from_millis(500));
    if let Some(fleet) = fleet {
        builder = builder.fleet(fleet);
    }
    builder.build().unwrap()
}

#[tokio::test]
async fn a_fleets_monitors_probe_each_provider_as_often_as_one_and_all_see_a_wrong_chain() {
    let mut redis = RedisServer::start().unwrap();
    let (chain_b, probes_a, probes_b) =
        (Arc::new(AtomicU64::new(1)), Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let a = provider(Arc::new(AtomicU64::new(1)), Arc::clone(&probes_a)).await;
    let b = provider(Arc::clone(&chain_b), Arc::clone(&probes_b)).await;
    let interval = Duration::from_millis(100);

    // One monitor alone, for one second: the probe load of one process.
    let alone = monitor(&a, &b, None);
    let handle = alone.spawn(interval);
    tokio::time::sleep(Duration::from_secs(1)).await;
    drop(handle);
    let one = probes_a.swap(0, Ordering::Relaxed);
    probes_b.store(0, Ordering::Relaxed);

    // Four monitors of one fleet, for one second.
    let monitors: Vec<_> =
        (0..4).map(|_| monitor(&a, &b, Some(Fleet::connect(&redis.url(), "bots").unwrap()))).collect();
    let handles: Vec<_> = monitors.iter().map(|m| m.spawn(interval)).collect();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let four = probes_a.load(Ordering::Relaxed);
    assert!(
        four as f64 <= one as f64 * 1.5 + 2.0,
        "the fleet probes a as one monitor does: {four} vs {one} alone"
    );
    for m in &monitors {
        assert!(m.eligible("a") && m.eligible("b"), "every monitor sees both fit");
    }

    // b moves onto another chain: every monitor sees it within a few intervals.
    chain_b.store(10, Ordering::Relaxed);
    let mut seen = false;
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(25)).await;
        if monitors.iter().all(|m| !m.eligible("b")) {
            seen = true;
            break;
        }
    }
    let views: Vec<_> =
        monitors.iter().map(|m| (m.eligible("b"), m.snapshot().map(|s| format!("{s:?}")))).collect();
    assert!(seen, "every monitor holds b out once its prober saw the wrong chain: {views:#?}");
    assert!(monitors.iter().all(|m| m.eligible("a")));

    // Three of the four stop (the holder of a's lease among them, or not): within a lease
    // (3 s) the one left probes a itself.
    let mut handles = handles;
    let last = handles.pop();
    drop(handles);
    tokio::time::sleep(Duration::from_secs(4)).await;
    probes_a.store(0, Ordering::Relaxed);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = probes_a.load(Ordering::Relaxed);
    assert!(after as f64 >= one as f64 * 0.5, "a is probed again by the monitor left: {after} in 1 s");
    drop(last);
    redis.stop();
}

#[tokio::test]
async fn a_wrong_chain_one_prober_sees_reaches_every_monitor_of_the_fleet_at_once() {
    let mut redis = RedisServer::start().unwrap();
    let chain_b = Arc::new(AtomicU64::new(1));
    let a = provider(Arc::new(AtomicU64::new(1)), Arc::default()).await;
    let b = provider(Arc::clone(&chain_b), Arc::default()).await;
    // Probes every second: without the news pushed, the others would see it at their own
    // next reading of b, up to a second later.
    let monitors: Vec<_> =
        (0..4).map(|_| monitor(&a, &b, Some(Fleet::connect(&redis.url(), "bots").unwrap()))).collect();
    let handles: Vec<_> = monitors.iter().map(|m| m.spawn(Duration::from_secs(1))).collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(monitors.iter().all(|m| m.eligible("b")));
    chain_b.store(10, Ordering::Relaxed);
    let (mut first, mut all) = (None, None);
    let started = tokio::time::Instant::now();
    while all.is_none() && started.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(5)).await;
        let out = monitors.iter().filter(|m| !m.eligible("b")).count();
        if out > 0 && first.is_none() {
            first = Some(started.elapsed());
        }
        if out == monitors.len() {
            all = Some(started.elapsed());
        }
    }
    let (first, all) = (first.expect("the prober saw it"), all.expect("every monitor saw it"));
    assert!(
        all - first <= Duration::from_millis(100),
        "the others within one round trip: {first:?} then {all:?}"
    );
    drop(handles);
    redis.stop();
}

#[tokio::test]
async fn a_head_one_process_saw_in_traffic_is_every_monitors_within_a_round_trip_unless_far_ahead() {
    let mut redis = RedisServer::start().unwrap();
    let a = provider(Arc::new(AtomicU64::new(1)), Arc::default()).await;
    let b = provider(Arc::new(AtomicU64::new(1)), Arc::default()).await;
    // Three monitors of one fleet and one alone, probing every 5 s: between probes, heads
    // come from traffic only.
    let mut monitors: Vec<_> =
        (0..3).map(|_| monitor(&a, &b, Some(Fleet::connect(&redis.url(), "bots").unwrap()))).collect();
    monitors.push(monitor(&a, &b, None));
    let handles: Vec<_> = monitors.iter().map(|m| m.spawn(Duration::from_secs(5))).collect();
    let id = EndpointId::from("a");
    let heads =
        |monitors: &[Monitor]| monitors.iter().map(|m| HealthSource::head_of(m, &id)).collect::<Vec<_>>();
    let started = tokio::time::Instant::now();
    while heads(&monitors).iter().any(|h| *h != Some(16)) && started.elapsed() < Duration::from_secs(3) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(heads(&monitors), vec![Some(16); 4], "every monitor probed a at 16");

    // The first process's reads see a at 20: the fleet's monitors know it within a round trip.
    HealthSource::observe(&monitors[0], &id, Observation::Answered { head: Some(20) });
    let started = tokio::time::Instant::now();
    while heads(&monitors[..3]).iter().any(|h| *h != Some(20)) && started.elapsed() < Duration::from_secs(1) {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let took = started.elapsed();
    assert_eq!(
        heads(&monitors),
        vec![Some(20), Some(20), Some(20), Some(16)],
        "the fleet's, not the lone one's"
    );
    assert!(took <= Duration::from_millis(100), "within one round trip: {took:?}");

    // Another process sees a far ahead (another chain's head, say): its own doubt, not shared.
    HealthSource::observe(&monitors[1], &id, Observation::Answered { head: Some(5_000) });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let others = [HealthSource::head_of(&monitors[0], &id), HealthSource::head_of(&monitors[2], &id)];
    assert_eq!(others, [Some(20), Some(20)], "5 000 stays with the process that saw it");
    drop(handles);
    redis.stop();
}

//! Serialized checks, concurrent probes, cancellation, and readers during publication.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use failnext_blocklag::Monitor;

use crate::support::*;

#[tokio::test]
async fn probes_within_one_check_run_concurrently() {
    // 20 providers that each take 200 ms: one after the other they would need 4 s.
    let server = slow(Duration::from_millis(200), 9).await;
    let ids: Vec<String> = (0..20).map(|i| format!("p{i}")).collect();
    let monitor = monitor(ids.iter().enumerate().map(|(i, id)| (id.as_str(), server.url(&format!("/p{i}")))))
        .build()
        .unwrap();

    let started = Instant::now();
    monitor.check().await.unwrap();
    let elapsed = started.elapsed();

    assert_eq!(server.requests(), 20);
    assert!(elapsed < Duration::from_secs(2), "20 x 200 ms probes took {elapsed:?}: they did not overlap");
    assert!(server.max_in_flight() > 1);
    assert!(ids.iter().all(|id| monitor.eligible(id)));
}

#[tokio::test]
async fn checks_are_serialized() {
    let server = slow(Duration::from_millis(100), 9).await;
    let monitor = monitor([("only", server.url("/rpc"))]).build().unwrap();
    let clone = monitor.clone();
    let (first, second, third) = tokio::join!(monitor.check(), clone.check(), monitor.check());
    first.unwrap();
    second.unwrap();
    third.unwrap();
    assert_eq!(server.requests(), 3);
    assert_eq!(server.max_in_flight(), 1, "two checks probed at the same time");
}

#[tokio::test]
async fn a_waiting_check_that_is_dropped_sends_no_probe() {
    let (server, gate) = gated(9).await;
    let monitor = monitor([("only", server.url("/rpc"))]).build().unwrap();
    let running = tokio::spawn({
        let monitor = monitor.clone();
        async move { monitor.check().await }
    });
    wait_until("the first check is probing", || async { server.requests() == 1 }).await;

    // The first check cannot finish while the gate is shut, so the second one is still waiting
    // for its turn when it is given up (dropped).
    let gave_up = tokio::time::timeout(Duration::from_millis(50), monitor.check()).await;
    assert!(gave_up.is_err(), "the second check should still be waiting");

    gate.send_replace(true);
    within_guard("the first check", running).await.unwrap().unwrap();
    assert_eq!(server.requests(), 1, "the dropped check must not probe");
    monitor.check().await.unwrap();
    assert_eq!(server.requests(), 2);
}

#[tokio::test]
async fn dropping_a_check_mid_probe_keeps_the_previous_snapshot() {
    let (a, b) = (Node::at(100).await, Node::at(110).await);
    let monitor = monitor([("a", a.url()), ("b", b.url())]).max_lag(3).build().unwrap();
    monitor.check().await.unwrap();
    let previous = monitor.snapshot().unwrap();
    assert!(!monitor.eligible("a"));

    // The next check would make `a` eligible, but `b` is slow and the check is dropped.
    a.set_height(110);
    b.set_delay(Duration::from_secs(30));
    let check = tokio::spawn({
        let monitor = monitor.clone();
        async move { monitor.check().await }
    });
    wait_until("both providers were probed", || async { a.requests().await == 2 && b.requests().await == 2 })
        .await;
    check.abort();
    assert!(check.await.unwrap_err().is_cancelled());

    assert!(Arc::ptr_eq(&previous, &monitor.snapshot().unwrap()));
    assert!(!monitor.eligible("a"));
    assert!(monitor.eligible("b"));

    // The dropped check released its turn.
    b.set_delay(Duration::ZERO);
    within_guard("the next check", monitor.check()).await.unwrap();
    assert!(monitor.eligible("a"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eligible_answers_while_a_check_is_in_flight() {
    let (a, b) = (Node::at(100).await, Node::at(110).await);
    let monitor = monitor([("a", a.url()), ("b", b.url())]).max_lag(3).build().unwrap();
    monitor.check().await.unwrap();
    a.set_delay(Duration::from_secs(30));
    b.set_delay(Duration::from_secs(30));
    let check = tokio::spawn({
        let monitor = monitor.clone();
        async move { monitor.check().await }
    });
    wait_until("the check is probing", || async { a.requests().await == 2 && b.requests().await == 2 }).await;

    // If eligible() waited for the check, these threads would not finish before it does.
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let monitor = monitor.clone();
            std::thread::spawn(move || {
                for _ in 0..10_000 {
                    assert!(!monitor.eligible("a"));
                    assert!(monitor.eligible("b"));
                }
            })
        })
        .collect();
    let joined = tokio::task::spawn_blocking(move || readers.into_iter().all(|r| r.join().is_ok()));
    assert!(within_guard("readers during a check", joined).await.unwrap());
    assert!(!check.is_finished());
    check.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_see_whole_snapshots_while_checks_publish() {
    // Publications alternate between "only b eligible" and "only a eligible".
    let (a, b) = (Node::at(100).await, Node::at(110).await);
    let monitor = monitor([("a", a.url()), ("b", b.url())]).max_lag(3).build().unwrap();
    monitor.check().await.unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicUsize::new(0));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (monitor, stop, reads) = (monitor.clone(), stop.clone(), reads.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let snapshot = monitor.snapshot().expect("published before the readers started");
                    let (ea, eb) = (snapshot.is_eligible("a"), snapshot.is_eligible("b"));
                    assert!(ea != eb, "torn snapshot: a={ea} b={eb}");
                    assert_eq!(snapshot.highest(), 110);
                    let (eligible, other) = if ea { ("a", "b") } else { ("b", "a") };
                    assert_eq!(snapshot.height(eligible), Some(110));
                    assert_eq!(snapshot.height(other), Some(100));
                    assert!(!monitor.eligible("unknown"));
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();

    let mut previous = monitor.snapshot().unwrap();
    for round in 0..40 {
        let (ha, hb) = if round % 2 == 0 { (110, 100) } else { (100, 110) };
        a.set_height(ha);
        b.set_height(hb);
        monitor.check().await.unwrap();
        let current = monitor.snapshot().unwrap();
        assert!(!Arc::ptr_eq(&previous, &current), "every check publishes");
        assert_eq!(monitor.eligible("a"), round % 2 == 0);
        previous = current;
    }
    stop.store(true, Ordering::Relaxed);
    let joined = tokio::task::spawn_blocking(move || readers.into_iter().all(|r| r.join().is_ok()));
    assert!(within_guard("readers", joined).await.unwrap(), "a reader saw a torn snapshot");
    assert!(reads.load(Ordering::Relaxed) > 0);
}

#[test]
fn monitor_is_send_sync_and_its_check_future_is_send() {
    fn assert_send_sync<T: Send + Sync + 'static>(_: &T) {}
    fn assert_send<T: Send>(_: &T) {}
    let monitor: Monitor = monitor([("a", "http://127.0.0.1:1".into())]).build().unwrap();
    assert_send_sync(&monitor);
    assert_send(&monitor.check());
}

//! `Monitor::spawn`: every provider probed on its own schedule, until the handle stops them.
//! The timing rules (adaptive interval, jitter, no pile-up) are pinned under paused time by
//! the crate's unit tests of the schedule; these run the real task against loopback servers.

use std::time::Duration;

use crate::support::*;

/// How long to watch a server for late probes after a stop.
const AFTER: Duration = Duration::from_millis(300);

#[tokio::test]
async fn stopping_the_handle_stops_all_probing() {
    let server = slow(Duration::from_millis(5), 9).await;
    let monitor = monitor([("a", server.url("/a")), ("b", server.url("/b"))]).build().unwrap();
    let handle = monitor.spawn(Duration::from_millis(20));
    wait_until("the schedule checked three times", || async { server.requests() >= 6 }).await;
    within_guard("stop", handle.stop()).await;
    let stopped_at = server.requests();
    tokio::time::sleep(AFTER).await;
    assert_eq!(server.requests(), stopped_at, "a probe was sent after stop() returned");
    assert!(monitor.eligible("a") && monitor.eligible("b"));

    // Dropping the handle stops it too (at once, abandoning a running check).
    let handle = monitor.spawn(Duration::from_millis(20));
    wait_until("the new schedule checked", || async { server.requests() >= stopped_at + 4 }).await;
    drop(handle);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let dropped_at = server.requests();
    tokio::time::sleep(AFTER).await;
    assert_eq!(server.requests(), dropped_at, "a probe was sent after the handle was dropped");
}

#[tokio::test]
async fn a_providers_scheduled_probes_never_overlap() {
    // Every probe takes 100 ms, five times the interval: a fixed-rate schedule would overlap.
    // (The probe timeout is set: by default it would follow the 20 ms interval.)
    let (a, b) = (slow(Duration::from_millis(100), 9).await, slow(Duration::from_millis(100), 9).await);
    let monitor = monitor([("a", a.url("/rpc")), ("b", b.url("/rpc"))])
        .probe_timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let handle = monitor.spawn(Duration::from_millis(20));
    wait_until("six scheduled probes each", || async { a.requests() >= 6 && b.requests() >= 6 }).await;
    within_guard("stop", handle.stop()).await;
    assert_eq!(a.max_in_flight(), 1, "two probes reached a at the same time");
    assert_eq!(b.max_in_flight(), 1, "two probes reached b at the same time");
    // A manual check still runs its whole round beside a schedule.
    let handle = monitor.spawn(Duration::from_millis(20));
    within_guard("a manual check", monitor.check()).await.unwrap();
    within_guard("stop", handle.stop()).await;
}

#[tokio::test]
async fn the_schedule_publishes_like_a_manual_check() {
    let (a, b) = (Node::at(100).await, Node::at(110).await);
    let monitor = monitor([("a", a.url()), ("b", b.url())]).max_lag(3).build().unwrap();
    let handle = monitor.spawn(Duration::from_millis(10));
    // Each provider publishes its own entry: a's may come first, alone, and be fit then.
    assert!(within_guard("both first probes", handle.ready(Duration::from_secs(5))).await);
    assert!(!monitor.eligible("a"));
    a.set_height(110);
    wait_until("a catches up", || async { monitor.eligible("a") }).await;
    assert!(!handle.is_finished());
    within_guard("stop", handle.stop()).await;
}

#[tokio::test]
async fn the_schedule_probes_four_times_as_often_while_a_provider_fails() {
    let (a, b) = (Node::at(100).await, Node::at(100).await);
    b.set_failing(true);
    let monitor = monitor([("a", a.url()), ("b", b.url())]).build().unwrap();
    let interval = Duration::from_millis(400);

    // While b fails, its probes are ~100 ms apart: six take well under the ~2 s they would at
    // the full interval.
    let started = std::time::Instant::now();
    let handle = monitor.spawn(interval);
    wait_until("six probes of b while it fails", || async { b.requests().await >= 6 }).await;
    assert!(started.elapsed() < Duration::from_millis(1800), "{:?}", started.elapsed());
    within_guard("stop", handle.stop()).await;

    // All fit: at the full interval, at most 1 + 1.2 s / 360 ms probes of a in 1.2 s.
    b.set_failing(false);
    let before = a.requests().await;
    let handle = monitor.spawn(interval);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    within_guard("stop", handle.stop()).await;
    let checks = a.requests().await - before;
    assert!((1..=4).contains(&checks), "{checks} checks in 1.2 s at a 400 ms interval");
}

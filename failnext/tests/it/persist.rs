//! Health that survives a restart: `Failover::health` and `Failover::restore_health`.

use std::time::Duration;

use failnext::{Failover, RequestBuilderExt};
use failnext_loopback::{Action, Received, Reply, Server};

use crate::support::*;

/// A provider that answers 503 with `Retry-After: 60` (its breaker opens for a minute), and a
/// healthy backup.
async fn backing_off() -> (Server, Server) {
    let busy = Server::start(std::sync::Arc::new(|_: &Received| {
        Action::Reply(Reply::new(503).header("retry-after", "60").text("busy"))
    }))
    .await;
    let backup =
        Server::start(std::sync::Arc::new(|_: &Received| Action::Reply(Reply::new(200).text("ok")))).await;
    (busy, backup)
}

fn failover(busy: &Server, backup: &Server) -> Failover {
    builder([("busy", busy.url("/")), ("backup", backup.url("/"))]).no_attempt_timeout().build().unwrap()
}

#[tokio::test]
async fn a_restarted_failover_keeps_a_provider_s_back_off_until_its_deadline() {
    let (busy, backup) = backing_off().await;
    let before = failover(&busy, &backup);
    let c = client(before.clone());
    c.get("http://127.0.0.1:9/").allow_failover().send().await.unwrap();
    assert!(before.is_cooling_down("busy"));
    let kept = before.health();
    let entry = &kept.endpoints()[0];
    assert_eq!(entry.id(), "busy");
    let left = entry.open_until().unwrap().duration_since(kept.taken_at()).unwrap();
    assert!(left > Duration::from_secs(59) && left <= Duration::from_secs(60), "{left:?}");
    assert_eq!(kept.endpoints()[1].open_until(), None, "the backup is closed");

    // The process restarts: a new Failover, restored, does not send the busy provider anything.
    let after = failover(&busy, &backup);
    assert_eq!(after.restore_health(&kept), 2);
    assert!(after.is_cooling_down("busy"));
    let hits = busy.requests();
    let c = client(after);
    for _ in 0..5 {
        c.get("http://127.0.0.1:9/").allow_failover().send().await.unwrap();
    }
    assert_eq!(busy.requests(), hits, "no request to the provider that asked for a minute's pause");
}

#[cfg(feature = "serde")]
#[tokio::test]
async fn a_deadline_that_passed_while_the_process_was_down_leaves_the_breaker_half_open() {
    let (busy, backup) = backing_off().await;
    let before = failover(&busy, &backup);
    client(before.clone()).get("http://127.0.0.1:9/").allow_failover().send().await.unwrap();
    // Saved as JSON; the process is down for 61 s (the deadline moved back by as much).
    let mut saved: serde_json::Value = serde_json::to_value(before.health()).unwrap();
    let secs = &mut saved["endpoints"][0]["open_until"]["secs_since_epoch"];
    *secs = (secs.as_u64().unwrap() - 61).into();
    let kept: failnext::HealthSnapshot = serde_json::from_value(saved).unwrap();
    let after = failover(&busy, &backup);
    after.restore_health(&kept);
    assert!(!after.is_cooling_down("busy"), "its open time is over: the next request is its trial");
    let hits = busy.requests();
    client(after).get("http://127.0.0.1:9/").allow_failover().send().await.unwrap();
    assert_eq!(busy.requests(), hits + 1, "the trial");
}

#[test]
fn unknown_ids_are_ignored_when_restoring() {
    let a = builder([("a", "http://127.0.0.1:1/".to_owned())]).build().unwrap();
    let b = builder([("b", "http://127.0.0.1:1/".to_owned())]).build().unwrap();
    assert_eq!(b.restore_health(&a.health()), 0);
}

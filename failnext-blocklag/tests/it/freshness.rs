//! "Unknown is not healthy": fail-closed before the first publication, a grace per endpoint,
//! snapshot age and a maximum age. Checks run on real loopback servers; time then moves
//! under a paused Tokio clock (`tokio::time::pause` after the check, `resume` before the next).

use std::time::Duration;

use tokio::time::{advance, pause, resume};

use crate::support::*;

const MS: Duration = Duration::from_millis(1);

#[tokio::test]
async fn snapshots_carry_their_age() {
    let a = Node::at(100).await;
    let monitor = monitor([("a", a.url())]).build().unwrap();
    monitor.check().await.unwrap();
    pause();
    let snapshot = monitor.snapshot().unwrap();
    let at_pause = snapshot.age();
    assert!(at_pause < Duration::from_secs(1), "{at_pause:?}");
    advance(Duration::from_secs(5)).await;
    assert_eq!(snapshot.age(), at_pause + Duration::from_secs(5));
    assert_eq!(snapshot.entry("a").unwrap().last_good_age(), Some(snapshot.age()));
    // Without max_age or grace, age does not matter.
    advance(Duration::from_secs(3600)).await;
    assert!(monitor.eligible("a"));
}

#[tokio::test]
async fn with_fail_closed_no_endpoint_is_eligible_until_a_check_publishes() {
    let (a, b) = (Node::at(100).await, Node::at(100).await);
    let monitor = monitor([("a", a.url()), ("b", b.url())]).fail_closed().build().unwrap();
    assert!(!monitor.eligible("a") && !monitor.eligible("b"));

    // A check that publishes nothing leaves it closed.
    a.set_failing(true);
    b.set_failing(true);
    assert!(!monitor.check().await.unwrap_err().published());
    assert!(!monitor.eligible("a") && !monitor.eligible("b"));

    b.set_failing(false);
    assert!(monitor.check().await.unwrap_err().published());
    assert!(!monitor.eligible("a"));
    assert!(monitor.eligible("b"));
}

#[tokio::test]
async fn before_the_first_publication_the_default_stays_fail_open_even_with_grace() {
    let a = Node::at(100).await;
    let monitor = monitor([("a", a.url())]).grace(Duration::from_secs(1)).build().unwrap();
    assert!(monitor.eligible("a"));
    assert!(!monitor.eligible("unknown"));
}

#[tokio::test]
async fn a_provider_not_heard_from_within_grace_becomes_ineligible() {
    let (a, b) = (Node::at(100).await, Node::at(100).await);
    let grace = Duration::from_secs(10);
    let monitor = monitor([("a", a.url()), ("b", b.url())]).grace(grace).build().unwrap();
    monitor.check().await.unwrap();
    pause();
    let heard = monitor.snapshot().unwrap().age();
    advance(grace - heard).await;
    assert!(monitor.eligible("a") && monitor.eligible("b"), "the grace is inclusive");
    advance(MS).await;
    assert!(
        !monitor.eligible("a") && !monitor.eligible("b"),
        "checks stopped: nothing heard for longer than grace"
    );

    // A new check hears from `a` only: `b` failed, and its last good probe is carried over.
    resume();
    b.set_failing(true);
    assert!(monitor.check().await.unwrap_err().published());
    pause();
    assert!(monitor.eligible("a"));
    assert!(!monitor.eligible("b"));
    let snapshot = monitor.snapshot().unwrap();
    let b_heard = snapshot.entry("b").unwrap().last_good_age().unwrap();
    assert!(b_heard > grace, "{b_heard:?}: b's last good probe is the first check's");
    assert!(snapshot.entry("a").unwrap().last_good_age().unwrap() < grace);
}

#[tokio::test]
async fn a_provider_that_never_answered_has_no_last_good_probe() {
    let (a, b) = (Node::at(100).await, Node::at(100).await);
    b.set_failing(true);
    let monitor = monitor([("a", a.url()), ("b", b.url())]).grace(Duration::from_secs(10)).build().unwrap();
    assert!(monitor.check().await.unwrap_err().published());
    let snapshot = monitor.snapshot().unwrap();
    assert_eq!(snapshot.entry("b").unwrap().last_good_age(), None);
    assert!(!monitor.eligible("b"));
    assert!(monitor.eligible("a"));
}

#[tokio::test]
async fn eligibility_expires_after_max_age_back_to_the_unpublished_rule() {
    let max_age = Duration::from_secs(30);
    for fail_closed in [false, true] {
        let (a, b) = (Node::at(100).await, Node::at(110).await);
        let builder = monitor([("a", a.url()), ("b", b.url())]).max_lag(3).max_age(max_age);
        let monitor = if fail_closed { builder.fail_closed() } else { builder }.build().unwrap();
        assert_eq!(monitor.eligible("a"), !fail_closed);
        monitor.check().await.unwrap();
        pause();
        let age = monitor.snapshot().unwrap().age();
        advance(max_age - age).await;
        assert!(!monitor.eligible("a"), "a lags in a snapshot of max_age");
        assert!(monitor.eligible("b"));
        advance(MS).await;
        assert_eq!(monitor.eligible("a"), !fail_closed, "fail_closed: {fail_closed}");
        assert_eq!(monitor.eligible("b"), !fail_closed, "fail_closed: {fail_closed}");
        assert!(!monitor.eligible("unknown"));

        // A new publication decides again.
        resume();
        monitor.check().await.unwrap();
        assert!(!monitor.eligible("a"));
        assert!(monitor.eligible("b"));
    }
}

#[cfg(feature = "serde")]
#[test]
fn monitor_health_round_trips_through_serde() {
    let monitor = failnext_blocklag::Monitor::builder([failnext::Endpoint::new("a", "http://127.0.0.1:1/")])
        .build()
        .unwrap();
    assert!(monitor.health().is_none(), "nothing learnt before a check");
    let json = r#"{"taken_at":{"secs_since_epoch":1,"nanos_since_epoch":0},"providers":[{"id":"a","eligible":false,"height":7,"consecutive_good_checks":1,"probe_latency":null,"last_good":null}]}"#;
    let health: failnext_blocklag::MonitorHealth = serde_json::from_str(json).unwrap();
    assert_eq!(monitor.restore_health(&health), 1);
    assert!(!monitor.eligible("a"));
    let again = serde_json::to_string(&monitor.health().unwrap()).unwrap();
    assert!(again.contains(r#""consecutive_good_checks":1"#), "{again}");
}

//! One deadline per request (`FailoverBuilder::deadline`, `RequestBuilderExt::deadline`),
//! under paused tokio time: hanging loopback servers cost no real time.

use std::time::Duration;

use failnext::{Error, RequestBuilderExt};
use failnext_loopback::{Action, Reply};
use tokio::time::Instant;

use crate::support::*;

async fn hanging() -> failnext_loopback::Server {
    acting(Action::Hang).await
}

async fn answering(status: u16) -> failnext_loopback::Server {
    acting(Action::Reply(Reply::new(status).text("x"))).await
}

#[tokio::test(start_paused = true)]
async fn with_every_provider_hanging_a_300_ms_deadline_ends_the_request_at_300_ms_naming_every_endpoint() {
    let (a, b, c) = (hanging().await, hanging().await, hanging().await);
    let failover = builder([("primary", a.url("/")), ("backup", b.url("/")), ("third", c.url("/"))])
        .deadline(Duration::from_millis(300))
        .build()
        .unwrap();
    let client = client(failover.clone());
    let started = Instant::now();
    let err = client.get("http://127.0.0.1:9/").allow_failover().send().await.unwrap_err();
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(300) && elapsed <= Duration::from_millis(305), "{elapsed:?}");
    let e = Error::from_middleware(&err).expect("a failnext error");
    assert!(e.is_deadline(), "{e}");
    let tried: Vec<&str> = e.attempts().iter().map(|a| a.endpoint().as_str()).collect();
    let untried: Vec<&str> = e.untried().iter().map(|id| id.as_str()).collect();
    assert_eq!((tried, untried), (vec!["primary"], vec!["backup", "third"]));
    let text = e.to_string();
    for id in ["primary", "backup", "third", "300ms"] {
        assert!(text.contains(id), "{text}");
    }
    assert!(!failover.is_cooling_down("primary"), "cut short by the deadline: neutral for its breaker");
}

#[tokio::test(start_paused = true)]
async fn each_attempt_gets_what_is_left_of_the_deadline() {
    let (a, b) = (hanging().await, hanging().await);
    let failover = builder([("primary", a.url("/")), ("backup", b.url("/"))])
        .attempt_timeout(Duration::from_millis(200))
        .deadline(Duration::from_millis(300))
        .build()
        .unwrap();
    let started = Instant::now();
    let err = client(failover).get("http://127.0.0.1:9/").allow_failover().send().await.unwrap_err();
    assert!(started.elapsed() <= Duration::from_millis(305), "{:?}", started.elapsed());
    let e = Error::from_middleware(&err).unwrap();
    assert!(e.is_deadline() && e.attempts().len() == 2 && e.untried().is_empty(), "{e}");
}

#[tokio::test(start_paused = true)]
async fn a_retained_trigger_response_is_returned_when_the_deadline_passes() {
    let (a, b) = (answering(503).await, hanging().await);
    let failover = builder([("primary", a.url("/")), ("backup", b.url("/"))])
        .deadline(Duration::from_millis(300))
        .build()
        .unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").allow_failover().send().await.unwrap();
    assert_eq!(resp.status(), 503, "the primary's 503, held while the backup hung");
}

#[tokio::test(start_paused = true)]
async fn a_requests_own_deadline_replaces_the_builders_and_none_means_none() {
    let (a, b) = (hanging().await, answering(200).await);
    let failover = builder([("primary", a.url("/")), ("backup", b.url("/"))])
        .attempt_timeout(Duration::from_secs(1))
        .deadline(Duration::from_millis(300))
        .build()
        .unwrap();
    let c = client(failover);
    let resp =
        c.get("http://127.0.0.1:9/").allow_failover().deadline(Duration::from_secs(5)).send().await.unwrap();
    assert_eq!(resp.status(), 200, "5 s: the primary's 1 s attempt timeout, then the backup");
    let err = c.get("http://127.0.0.1:9/").allow_failover().send().await.unwrap_err();
    assert!(Error::from_middleware(&err).unwrap().is_deadline());
}

#[test]
fn a_zero_deadline_is_rejected() {
    let err =
        builder([("a", "http://127.0.0.1:1/".to_owned())]).deadline(Duration::ZERO).build().unwrap_err();
    assert!(err.to_string().contains("deadline"), "{err}");
}

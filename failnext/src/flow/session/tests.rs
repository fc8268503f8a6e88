//! The session's decisions, one step at a time.
//! Test code only: declared `#[cfg(test)] mod tests;` in `mod.rs`, and test-only by itself.

#![cfg(test)]
#![allow(unused_must_use, reason = "tests drive Health::record without emitting")]
use http::Extensions;

use super::*;
use crate::flow::middleware::Failover;
use crate::request::endpoint::Endpoint;
use crate::request::options::ExcludedEndpoints;

fn failover(n: u16) -> Failover {
    let eps = (1..=n).map(|i| Endpoint::new(format!("e{i}"), format!("http://127.0.0.1:{i}/")));
    Failover::builder(eps).build().unwrap()
}

fn request(method: reqwest::Method, body: Option<reqwest::Body>) -> Request {
    let mut req = Request::new(method, "http://127.0.0.1:1/".parse().unwrap());
    *req.body_mut() = body;
    req
}

fn sent_to(step: Step) -> usize {
    match step {
        Step::Send(i, _) => i,
        Step::Hedge(i, _, after) => panic!("sent to {i}, hedged after {after:?}"),
        Step::Wait(i) => panic!("waits for {i}"),
        Step::Admit(i) => panic!("asks the fleet for {i}"),
        Step::Stop(reason) => panic!("stopped: {reason:?}"),
    }
}

fn stopped(step: Step) -> Stop {
    match step {
        Step::Send(i, _) | Step::Hedge(i, _, _) => panic!("sent to {i}"),
        Step::Wait(i) => panic!("waits for {i}"),
        Step::Admit(i) => panic!("asks the fleet for {i}"),
        Step::Stop(reason) => reason,
    }
}

fn error() -> reqwest_middleware::Error {
    reqwest_middleware::Error::middleware(std::io::Error::other("refused"))
}

#[test]
fn nothing_usable_stops_before_sending_with_no_usable_endpoint() {
    let fo = failover(2);
    let mut ext = Extensions::new();
    ext.insert(ExcludedEndpoints(vec!["e1".into(), "e2".into()]));
    let mut session =
        Session::start(fo.shared(), request(reqwest::Method::GET, None), &RequestOptions::read(&ext), None)
            .unwrap();
    assert_eq!(stopped(session.next()), Stop::NoCandidate);
    let err = session.stop(Stop::NoCandidate).unwrap_err();
    assert!(Error::from_middleware(&err).is_some_and(Error::is_no_usable_endpoint));
}

#[test]
fn a_denied_request_stops_after_its_first_attempt() {
    let fo = failover(2);
    let mut session =
        Session::start(fo.shared(), request(reqwest::Method::POST, None), &RequestOptions::default(), None)
            .unwrap();
    assert_eq!(sent_to(session.next()), 0);
    assert!(session.tally.is_none(), "nothing is made for the failover before it is needed");
    let by_default = Settled { allowed: false, by: permission::Decided::ByDefault };
    assert_eq!(session.permission, Some(by_default));
    session.fail(0, error());
    assert_eq!(stopped(session.next()), Stop::MayNotFailOver);
    let err = session.stop(Stop::MayNotFailOver).unwrap_err();
    assert_eq!(Error::from_middleware(&err).map(|e| e.attempts().len()), Some(1));
}

#[test]
fn an_allowed_request_goes_on_until_no_candidate_is_left() {
    let fo = failover(2);
    let mut session =
        Session::start(fo.shared(), request(reqwest::Method::GET, None), &RequestOptions::default(), None)
            .unwrap();
    assert_eq!(sent_to(session.next()), 0);
    session.fail(0, error());
    assert_eq!(sent_to(session.next()), 1);
    assert_eq!(session.sent, 2);
    session.fail(1, error());
    assert_eq!(stopped(session.next()), Stop::NoCandidate);
    let err = session.stop(Stop::NoCandidate).unwrap_err();
    assert_eq!(Error::from_middleware(&err).map(|e| e.attempts().len()), Some(2));
}

#[test]
fn a_single_endpoint_settles_no_permission_and_stops_for_want_of_candidates() {
    let fo = failover(1);
    let mut session =
        Session::start(fo.shared(), request(reqwest::Method::GET, None), &RequestOptions::default(), None)
            .unwrap();
    assert_eq!(sent_to(session.next()), 0);
    assert_eq!(session.permission, None, "permission is settled only when another endpoint exists");
    session.fail(0, error());
    assert_eq!(stopped(session.next()), Stop::NoCandidate);
}

#[tokio::test(start_paused = true)]
async fn a_trial_permit_is_held_for_the_attempt_and_dropped_at_the_next_step() {
    let fo = failover(2);
    let get = || request(reqwest::Method::GET, None);
    let start = |req| Session::start(fo.shared(), req, &RequestOptions::default(), None).unwrap();
    fo.shared().slots[0].health.record(
        crate::Evidence::Failure,
        Some(std::time::Duration::from_millis(1)),
        None,
    );
    tokio::time::advance(std::time::Duration::from_millis(1)).await;
    let mut trial = start(get());
    assert_eq!(sent_to(trial.next()), 0);
    assert!(trial.trial.is_some(), "the session holds the trial permit");
    let mut other = start(get());
    assert_eq!(sent_to(other.next()), 1, "half-open with its trial taken: skipped");
    assert!(other.trial.is_none());
    trial.fail(0, error());
    assert_eq!(sent_to(trial.next()), 1);
    assert!(trial.trial.is_none(), "dropped when the next step is decided");
    let mut third = start(get());
    assert_eq!(sent_to(third.next()), 0, "the permit is free again: the next request is the trial");
    drop(third);
    assert_eq!(sent_to(start(get()).next()), 0, "a dropped session frees it too");
}

#[tokio::test(start_paused = true)]
async fn the_last_resort_settles_permission_for_an_open_candidate_left_behind() {
    let fo = failover(2);
    fo.shared().slots[0].health.record(
        crate::Evidence::Failure,
        Some(std::time::Duration::from_secs(60)),
        None,
    );
    let mut session =
        Session::start(fo.shared(), request(reqwest::Method::POST, None), &RequestOptions::default(), None)
            .unwrap();
    assert_eq!(sent_to(session.next()), 1, "e1 is open: passed over, remembered");
    assert!(session.permission.is_some_and(|p| !p.allowed), "settled: e1 could still be tried");
    session.fail(1, error());
    assert_eq!(
        stopped(session.next()),
        Stop::MayNotFailOver,
        "the last resort never sends a denied request on"
    );
    let mut read =
        Session::start(fo.shared(), request(reqwest::Method::GET, None), &RequestOptions::default(), None)
            .unwrap();
    assert_eq!(sent_to(read.next()), 1);
    read.fail(1, error());
    assert_eq!(sent_to(read.next()), 0, "a read that may fail over gets the open e1 as its last resort");
    assert!(read.trial.is_some());
}

#[tokio::test(start_paused = true)]
async fn a_trial_that_cannot_be_sent_frees_its_permit_at_once() {
    let fo = failover(2);
    let stream = futures::stream::iter([Ok::<_, std::io::Error>(bytes::Bytes::from_static(b"x"))]);
    let req = request(reqwest::Method::GET, Some(reqwest::Body::wrap_stream(stream)));
    let mut session = Session::start(fo.shared(), req, &RequestOptions::default(), None).unwrap();
    assert_eq!(sent_to(session.next()), 0);
    fo.shared().slots[1].health.record(crate::Evidence::Failure, Some(std::time::Duration::ZERO), None);
    session.fail(0, error());
    assert_eq!(stopped(session.next()), Stop::NotReplayable);
    assert!(session.trial.is_none());
    let mut other =
        Session::start(fo.shared(), request(reqwest::Method::GET, None), &RequestOptions::default(), None)
            .unwrap();
    other.plan.next();
    assert_eq!(sent_to(other.next()), 1, "e2's trial is free");
    assert!(other.trial.is_some());
}

#[test]
fn a_streaming_body_stops_as_not_replayable() {
    let fo = failover(2);
    let stream = futures::stream::iter([Ok::<_, std::io::Error>(bytes::Bytes::from_static(b"x"))]);
    let req = request(reqwest::Method::GET, Some(reqwest::Body::wrap_stream(stream)));
    let mut session = Session::start(fo.shared(), req, &RequestOptions::default(), None).unwrap();
    assert_eq!(sent_to(session.next()), 0);
    session.fail(0, error());
    assert_eq!(stopped(session.next()), Stop::NotReplayable);
}

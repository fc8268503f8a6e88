//! The checks judged on hand-written logs: each rule catches what breaks it.

use std::time::Duration;

use super::*;
use crate::soak::record::{AttemptEnd, AttemptEnd as A, Entry, Entry as E, ErrorKind, ResultEnd as R};
use crate::soak::schedule::{Cancel, Kind, RequestSpec};

fn spec(kind: Kind) -> RequestSpec {
    RequestSpec {
        id: 1,
        kind,
        excluded: Vec::new(),
        preferred: None,
        unknown: None,
        cancel: Cancel::Never,
        chunks: 1,
        pause_between_chunks: false,
        think: Duration::ZERO,
    }
}

fn asked_all(answers: [bool; 3]) -> Vec<Entry> {
    answers.iter().enumerate().map(|(i, a)| E::Asked { endpoint: Some(i), answer: *a }).collect()
}

fn attempt(i: usize, number: u32, end: AttemptEnd) -> Vec<Entry> {
    vec![
        E::Dispatched { endpoint: Some(i), streaming: false },
        E::Attempt { endpoint: Some(i), number, end, elapsed: Duration::from_millis(1) },
    ]
}

fn judge(spec: RequestSpec, entries: Vec<Entry>, outcome: Option<Outcome>) -> Violations {
    let f = Finished { spec, entries, outcome, body: None, hung: false, send_elapsed: None };
    let mut v = Violations::default();
    let limits = Limits { attempt_timeout: Duration::from_millis(250), slack: Duration::from_secs(2) };
    let ids: Vec<String> = (0..3).map(|i| format!("p{i}")).collect();
    analyse(&f, &ids, limits, &mut v, &mut Tally::default());
    v
}

fn broken(v: &Violations) -> Vec<Check> {
    Check::ALL.into_iter().filter(|c| v.count(*c).1 > 0).collect()
}

fn ok(status: u16, i: usize) -> Option<Outcome> {
    Some(Outcome::Response { status, served_by: Some(i) })
}

#[test]
fn a_clean_failover_passes() {
    let mut log = asked_all([true, true, true]);
    log.extend(attempt(0, 1, A::Status(503)));
    log.push(E::CooldownSkip { endpoint: Some(1) });
    log.extend(attempt(2, 2, A::Status(200)));
    log.push(E::Result { endpoint: Some(2), end: R::Status(200) });
    let v = judge(spec(Kind::Read), log, ok(200, 2));
    assert_eq!(v.total(), 0, "{:?}", v.examples());
}

#[test]
fn a_denied_write_that_reaches_two_providers_is_caught() {
    let mut log = asked_all([true, true, true]);
    log.extend(attempt(0, 1, A::Status(503)));
    log.extend(attempt(1, 2, A::Status(200)));
    log.push(E::Result { endpoint: Some(1), end: R::Status(200) });
    let v = judge(spec(Kind::WriteDenied), log, ok(200, 1));
    assert!(broken(&v).contains(&Check::DeniedOnce));
    assert!(broken(&v).contains(&Check::Order));
}

#[test]
fn an_attempt_after_a_cooldown_skip_or_to_an_ineligible_endpoint_is_caught() {
    let mut log = asked_all([true, false, true]);
    log.push(E::CooldownSkip { endpoint: Some(0) });
    log.extend(attempt(0, 1, A::Error(ErrorKind::Connect)));
    log.extend(attempt(1, 2, A::Status(200)));
    log.push(E::Result { endpoint: Some(1), end: R::Status(200) });
    let v = judge(spec(Kind::Read), log, ok(200, 1));
    let b = broken(&v);
    assert!(
        b.contains(&Check::Cooling) && b.contains(&Check::Ineligible) && b.contains(&Check::Order),
        "{b:?}"
    );
}

#[test]
fn stopping_early_losing_a_retained_response_and_extra_results_are_caught() {
    // Stops after a 503 although endpoint 1 was left.
    let mut log = asked_all([true, true, false]);
    log.extend(attempt(0, 1, A::Status(503)));
    log.push(E::Result { endpoint: Some(0), end: R::Status(503) });
    assert!(broken(&judge(spec(Kind::Read), log, ok(503, 0))).contains(&Check::Order));
    // An error although an attempt got a response.
    let mut log = asked_all([true, true, false]);
    log.extend(attempt(0, 1, A::Status(503)));
    log.extend(attempt(1, 2, A::Error(ErrorKind::Timeout)));
    log.push(E::Result { endpoint: None, end: R::Error });
    let failed = Some(Outcome::Error(Some(TypedError::Failover(vec![Some(1)]))));
    assert!(broken(&judge(spec(Kind::Read), log, failed)).contains(&Check::ResultRule));
    // Two Result events.
    let mut log = asked_all([true, true, true]);
    log.extend(attempt(0, 1, A::Status(200)));
    log.push(E::Result { endpoint: Some(0), end: R::Status(200) });
    log.push(E::Result { endpoint: None, end: R::Cancelled });
    assert!(broken(&judge(spec(Kind::Read), log, ok(200, 0))).contains(&Check::OneResult));
}

#[test]
fn exclusion_preference_and_streams_are_judged() {
    // Excluded endpoint 0 asked about and attempted; preference 2 ignored.
    let mut s = spec(Kind::Stream);
    s.excluded = vec![0];
    s.preferred = Some(2);
    let mut log = asked_all([true, true, true]);
    log.extend(attempt(0, 1, A::Status(503)));
    log.extend(attempt(1, 2, A::Status(200)));
    log.push(E::Result { endpoint: Some(1), end: R::Status(200) });
    let b = broken(&judge(s, log, ok(200, 1)));
    for c in [Check::AskedOnce, Check::Excluded, Check::Order, Check::StreamOnce] {
        assert!(b.contains(&c), "{c:?} not in {b:?}");
    }
}

#[test]
fn a_cancelled_request_needs_one_final_cancelled_result() {
    let mut s = spec(Kind::Read);
    s.cancel = Cancel::After(Duration::ZERO);
    let mut log = asked_all([true, true, true]);
    log.push(E::Dispatched { endpoint: Some(0), streaming: false });
    log.push(E::Result { endpoint: None, end: R::Cancelled });
    assert_eq!(judge(s.clone(), log, None).total(), 0);
    let mut log = asked_all([true, true, true]);
    log.push(E::Dispatched { endpoint: Some(0), streaming: false });
    assert!(broken(&judge(s.clone(), log, None)).contains(&Check::OneResult));
    // The attempt in flight went to the wrong endpoint.
    let mut log = asked_all([true, true, true]);
    log.push(E::Dispatched { endpoint: Some(1), streaming: false });
    log.push(E::Result { endpoint: None, end: R::Cancelled });
    assert!(broken(&judge(s, log, None)).contains(&Check::Order));
}

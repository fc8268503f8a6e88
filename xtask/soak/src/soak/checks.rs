//! The soak's checks: every rule a finished request must satisfy, judged from its log.
//!
//! A request's log holds, in order, what failnext asked the eligibility hook, what it handed
//! to the rest of the chain (the dispatch middleware), and every event it emitted. From the
//! request's own spec (kind, exclusions, preference) and the recorded eligibility answers,
//! [`analyse`] rebuilds the plan failnext must follow and compares.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use crate::soak::record::{AttemptEnd, Entry, ErrorKind, ResultEnd};
use crate::soak::schedule::{Cancel, Kind, RequestSpec};

/// Statuses that trigger failover in the soak's configuration: 502, 503, 504, and 429 added.
pub(crate) fn is_trigger(status: u16) -> bool {
    matches!(status, 429 | 502 | 503 | 504)
}

/// Every rule the soak checks, one row of the report each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Check {
    Ends,
    AttemptBounded,
    OneResult,
    Typed,
    AskedOnce,
    Excluded,
    Ineligible,
    Cooling,
    Order,
    ResultRule,
    DeniedOnce,
    NoRepeat,
    StreamOnce,
    DispatchMatch,
    SimCounts,
    DuplicateWrite,
    Stray,
    Panics,
    SnapshotMonotonic,
    MonitorChecks,
    EligibleBlocking,
    Tasks,
    Connections,
    Memory,
}

impl Check {
    pub(crate) const ALL: [Check; 24] = [
        Check::Ends,
        Check::AttemptBounded,
        Check::OneResult,
        Check::Typed,
        Check::AskedOnce,
        Check::Excluded,
        Check::Ineligible,
        Check::Cooling,
        Check::Order,
        Check::ResultRule,
        Check::DeniedOnce,
        Check::NoRepeat,
        Check::StreamOnce,
        Check::DispatchMatch,
        Check::SimCounts,
        Check::DuplicateWrite,
        Check::Stray,
        Check::Panics,
        Check::SnapshotMonotonic,
        Check::MonitorChecks,
        Check::EligibleBlocking,
        Check::Tasks,
        Check::Connections,
        Check::Memory,
    ];

    pub(crate) fn label(self) -> &'static str {
        match self {
            Check::Ends => "request ends (outcome or soak cancel), within bound",
            Check::AttemptBounded => "every attempt ends within attempt_timeout",
            Check::OneResult => "exactly one Result event, last, = outcome",
            Check::Typed => "every error is a typed failnext::Error",
            Check::AskedOnce => "eligibility asked once/endpoint, at start",
            Check::Excluded => "no attempt to an excluded endpoint",
            Check::Ineligible => "no attempt to an ineligible endpoint",
            Check::Cooling => "no attempt after CooldownSkip (same req)",
            Check::Order => "attempt order = plan (pref/order/trigger/perm)",
            Check::ResultRule => "result = last HTTP response, else error",
            Check::DeniedOnce => "denied request reached <= 1 provider",
            Check::NoRepeat => "no request reached a provider twice",
            Check::StreamOnce => "streaming body sent at most once",
            Check::DispatchMatch => "dispatched attempts = Attempt events",
            Check::SimCounts => "simulator counts <= dispatches <= requests",
            Check::DuplicateWrite => "chain never saw the same write twice",
            Check::Stray => "no event/question outside a request",
            Check::Panics => "no panic",
            Check::SnapshotMonotonic => "snapshot never regressed (per observer)",
            Check::MonitorChecks => "checks bounded; unpublished keeps snapshot",
            Check::EligibleBlocking => "eligible() never blocked",
            Check::Tasks => "tasks back to baseline",
            Check::Connections => "tcp connections back to baseline",
            Check::Memory => "memory (RSS) back to baseline",
        }
    }
}

/// How many things each check looked at, how many broke it, and the first few findings.
#[derive(Debug, Default)]
pub(crate) struct Violations {
    checked: BTreeMap<Check, u64>,
    broken: BTreeMap<Check, u64>,
    examples: Vec<String>,
}

const MAX_EXAMPLES: usize = 25;

impl Violations {
    pub(crate) fn checked(&mut self, check: Check, n: u64) {
        *self.checked.entry(check).or_default() += n;
    }

    pub(crate) fn add(&mut self, check: Check, what: impl fmt::Display) {
        *self.broken.entry(check).or_default() += 1;
        if self.examples.len() < MAX_EXAMPLES {
            self.examples.push(format!("[{}] {what}", check.label()));
        }
    }

    /// Records one observation of `check`, and a violation when `ok` is false.
    pub(crate) fn expect(&mut self, check: Check, ok: bool, what: impl FnOnce() -> String) {
        self.checked(check, 1);
        if !ok {
            self.add(check, what());
        }
    }

    pub(crate) fn total(&self) -> u64 {
        self.broken.values().sum()
    }

    pub(crate) fn count(&self, check: Check) -> (u64, u64) {
        (self.checked.get(&check).copied().unwrap_or(0), self.broken.get(&check).copied().unwrap_or(0))
    }

    pub(crate) fn examples(&self) -> &[String] {
        &self.examples
    }

    pub(crate) fn merge(&mut self, other: Violations) {
        for (k, v) in other.checked {
            *self.checked.entry(k).or_default() += v;
        }
        for (k, v) in other.broken {
            *self.broken.entry(k).or_default() += v;
        }
        for e in other.examples {
            if self.examples.len() < MAX_EXAMPLES {
                self.examples.push(e);
            }
        }
    }
}

/// What `send()` returned, reduced.
#[derive(Debug)]
pub(crate) enum Outcome {
    Response { status: u16, served_by: Option<usize> },
    Error(Option<TypedError>),
}

/// The failnext error a request ended with.
#[derive(Debug)]
pub(crate) enum TypedError {
    NoUsable,
    Unknown,
    Failover(Vec<Option<usize>>),
}

/// How reading the body of a returned response ended.
#[derive(Debug)]
pub(crate) enum BodyEnd {
    Read {
        duplicate_write: bool,
    },
    Error(ErrorKind),
    /// The soak dropped the request while the body was being read.
    Cancelled,
}

/// One request as the worker saw it end.
#[derive(Debug)]
pub(crate) struct Finished {
    pub(crate) spec: RequestSpec,
    pub(crate) entries: Vec<Entry>,
    /// `None` when the soak dropped the request before `send()` returned.
    pub(crate) outcome: Option<Outcome>,
    pub(crate) body: Option<BodyEnd>,
    /// The safety bound fired: the request did not end by itself.
    pub(crate) hung: bool,
    /// From the first poll to `send()` returning, when it returned.
    pub(crate) send_elapsed: Option<Duration>,
}

/// Time limits a request is judged against.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// failnext's attempt timeout.
    pub(crate) attempt_timeout: Duration,
    /// Scheduling slack allowed on top of it, on a loaded machine.
    pub(crate) slack: Duration,
}

/// Counts of everything the soak saw, for the report.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub(crate) requests: u64,
    pub(crate) by_kind: BTreeMap<&'static str, u64>,
    pub(crate) responses: BTreeMap<u16, u64>,
    pub(crate) retained: u64,
    pub(crate) errors_no_usable: u64,
    pub(crate) errors_unknown: u64,
    pub(crate) errors_failover: u64,
    pub(crate) errors_untyped: u64,
    pub(crate) cancelled_before_start: u64,
    pub(crate) cancelled_in_flight: u64,
    pub(crate) cancelled_in_body: u64,
    pub(crate) hung: u64,
    pub(crate) body_read: u64,
    pub(crate) body_errors: BTreeMap<&'static str, u64>,
    pub(crate) attempts_status: BTreeMap<u16, u64>,
    pub(crate) attempts_error: BTreeMap<&'static str, u64>,
    pub(crate) attempts_per_request: BTreeMap<usize, u64>,
    pub(crate) cooldown_skips: u64,
    pub(crate) not_replayable: u64,
    pub(crate) asked_eligible: u64,
    pub(crate) asked_ineligible: u64,
    pub(crate) excluded_requests: u64,
    pub(crate) preferred_requests: u64,
    pub(crate) preferred_first: u64,
    /// Per request kind: dispatches and attempts that got an HTTP response.
    pub(crate) write_requests: u64,
    pub(crate) write_dispatches: u64,
    pub(crate) write_responses: u64,
    pub(crate) stream_requests: u64,
    pub(crate) stream_dispatches: u64,
    pub(crate) stream_responses: u64,
    pub(crate) read_requests: u64,
    pub(crate) read_dispatches: u64,
    pub(crate) read_responses: u64,
    pub(crate) longest_attempt: Duration,
    pub(crate) longest_send: Duration,
}

impl Tally {
    pub(crate) fn merge(&mut self, o: Tally) {
        fn add<K: Ord>(a: &mut BTreeMap<K, u64>, b: BTreeMap<K, u64>) {
            for (k, v) in b {
                *a.entry(k).or_default() += v;
            }
        }
        self.requests += o.requests;
        add(&mut self.by_kind, o.by_kind);
        add(&mut self.responses, o.responses);
        self.retained += o.retained;
        self.errors_no_usable += o.errors_no_usable;
        self.errors_unknown += o.errors_unknown;
        self.errors_failover += o.errors_failover;
        self.errors_untyped += o.errors_untyped;
        self.cancelled_before_start += o.cancelled_before_start;
        self.cancelled_in_flight += o.cancelled_in_flight;
        self.cancelled_in_body += o.cancelled_in_body;
        self.hung += o.hung;
        self.body_read += o.body_read;
        add(&mut self.body_errors, o.body_errors);
        add(&mut self.attempts_status, o.attempts_status);
        add(&mut self.attempts_error, o.attempts_error);
        add(&mut self.attempts_per_request, o.attempts_per_request);
        self.cooldown_skips += o.cooldown_skips;
        self.not_replayable += o.not_replayable;
        self.asked_eligible += o.asked_eligible;
        self.asked_ineligible += o.asked_ineligible;
        self.excluded_requests += o.excluded_requests;
        self.preferred_requests += o.preferred_requests;
        self.preferred_first += o.preferred_first;
        self.write_requests += o.write_requests;
        self.write_dispatches += o.write_dispatches;
        self.write_responses += o.write_responses;
        self.stream_requests += o.stream_requests;
        self.stream_dispatches += o.stream_dispatches;
        self.stream_responses += o.stream_responses;
        self.read_requests += o.read_requests;
        self.read_dispatches += o.read_dispatches;
        self.read_responses += o.read_responses;
        self.longest_attempt = self.longest_attempt.max(o.longest_attempt);
        self.longest_send = self.longest_send.max(o.longest_send);
    }
}

/// A short, printable description of a request, for findings.
fn describe(f: &Finished) -> String {
    format!(
        "request {} {:?} excl={:?} pref={:?} unknown={:?} cancel={:?} outcome={:?} log={:?}",
        f.spec.id,
        f.spec.kind,
        f.spec.excluded,
        f.spec.preferred,
        f.spec.unknown,
        f.spec.cancel,
        f.outcome,
        f.entries
    )
}

/// Judges one finished request against every per-request rule, and counts what it did.
pub(crate) fn analyse(f: &Finished, n: usize, limits: Limits, v: &mut Violations, t: &mut Tally) {
    let spec = &f.spec;
    t.requests += 1;
    *t.by_kind.entry(spec.kind.label()).or_default() += 1;
    match spec.kind {
        Kind::Read => t.read_requests += 1,
        Kind::Stream => t.stream_requests += 1,
        Kind::WriteDenied | Kind::WriteDefault => t.write_requests += 1,
    }
    if !spec.excluded.is_empty() {
        t.excluded_requests += 1;
    }
    if spec.preferred.is_some() {
        t.preferred_requests += 1;
    }

    v.expect(Check::Ends, !f.hung, || format!("did not end within the safety bound: {}", describe(f)));
    if f.hung {
        t.hung += 1;
        return;
    }
    let cancelled_by_soak = matches!(spec.cancel, Cancel::After(_));
    v.expect(Check::Ends, f.outcome.is_some() || cancelled_by_soak, || {
        format!("no outcome although never cancelled: {}", describe(f))
    });

    let entries = &f.entries;
    v.expect(Check::Stray, !entries.contains(&Entry::Unknown), || {
        format!("unknown event kind: {}", describe(f))
    });

    // ---- one Result event, last, equal to the outcome ----
    let results: Vec<(usize, ResultEnd, Option<usize>)> = entries
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match e {
            Entry::Result { endpoint, end } => Some((i, *end, *endpoint)),
            _ => None,
        })
        .collect();
    let last_is_result = results.len() == 1 && results[0].0 + 1 == entries.len();
    match &f.outcome {
        Some(outcome) => {
            let matches = last_is_result
                && match (outcome, results[0].1, results[0].2) {
                    (Outcome::Response { status, served_by }, ResultEnd::Status(s), e) => {
                        *status == s && served_by.is_some() && *served_by == e
                    }
                    (Outcome::Error(_), ResultEnd::Error, None) => true,
                    _ => false,
                };
            v.expect(Check::OneResult, matches, || format!("result events do not match: {}", describe(f)));
        }
        None if entries.is_empty() => t.cancelled_before_start += 1,
        None => {
            t.cancelled_in_flight += 1;
            v.expect(Check::OneResult, last_is_result && results[0].1 == ResultEnd::Cancelled, || {
                format!("cancelled request without one final Cancelled result: {}", describe(f))
            });
        }
    }
    if let Some(Outcome::Error(typed)) = &f.outcome {
        v.expect(Check::Typed, typed.is_some(), || {
            format!("error is not a failnext::Error: {}", describe(f))
        });
        match typed {
            Some(TypedError::NoUsable) => t.errors_no_usable += 1,
            Some(TypedError::Unknown) => t.errors_unknown += 1,
            Some(TypedError::Failover(_)) => t.errors_failover += 1,
            None => t.errors_untyped += 1,
        }
    }
    if let Some(Outcome::Response { status, .. }) = &f.outcome {
        *t.responses.entry(*status).or_default() += 1;
        if is_trigger(*status) {
            t.retained += 1;
        }
    }
    match &f.body {
        Some(BodyEnd::Read { duplicate_write }) => {
            t.body_read += 1;
            if spec.kind.is_write() {
                v.expect(Check::DuplicateWrite, !duplicate_write, || {
                    format!("the chain answered 'already known': {}", describe(f))
                });
            }
        }
        Some(BodyEnd::Error(kind)) => *t.body_errors.entry(kind.label()).or_default() += 1,
        Some(BodyEnd::Cancelled) => t.cancelled_in_body += 1,
        None => {}
    }
    if entries.is_empty() {
        return;
    }

    // ---- eligibility: asked once per non-excluded endpoint, in order, before anything else ----
    let asks: Vec<(Option<usize>, bool)> = entries
        .iter()
        .take_while(|e| matches!(e, Entry::Asked { .. }))
        .filter_map(|e| match e {
            Entry::Asked { endpoint, answer } => Some((*endpoint, *answer)),
            _ => None,
        })
        .collect();
    let late_asks = entries.iter().skip(asks.len()).any(|e| matches!(e, Entry::Asked { .. }));
    let expected_asks: Vec<Option<usize>> = if spec.unknown.is_some() {
        Vec::new()
    } else {
        (0..n).filter(|i| !spec.excluded.contains(i)).map(Some).collect()
    };
    let asked: Vec<Option<usize>> = asks.iter().map(|(e, _)| *e).collect();
    v.expect(Check::AskedOnce, !late_asks && asked == expected_asks, || {
        format!("eligibility questions {asked:?}, expected {expected_asks:?}: {}", describe(f))
    });
    let mut answer = vec![None; n];
    for (e, a) in &asks {
        if let Some(i) = e {
            answer[*i] = Some(*a);
        }
        if *a {
            t.asked_eligible += 1;
        } else {
            t.asked_ineligible += 1;
        }
    }

    // ---- attempts, dispatches, skips ----
    let dispatched: Vec<(Option<usize>, bool)> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Dispatched { endpoint, streaming } => Some((*endpoint, *streaming)),
            _ => None,
        })
        .collect();
    let attempts: Vec<(Option<usize>, u32, AttemptEnd)> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Attempt { endpoint, number, end, .. } => Some((*endpoint, *number, *end)),
            _ => None,
        })
        .collect();
    // Every attempt is bounded by the attempt timeout; a whole request by one timeout per
    // attempt.
    let bound = limits.attempt_timeout + limits.slack;
    for e in entries {
        if let Entry::Attempt { elapsed, .. } = e {
            t.longest_attempt = t.longest_attempt.max(*elapsed);
            v.expect(Check::AttemptBounded, *elapsed <= bound, || {
                format!(
                    "an attempt took {elapsed:?}, attempt_timeout {:?}: {}",
                    limits.attempt_timeout,
                    describe(f)
                )
            });
        }
    }
    if let Some(took) = f.send_elapsed {
        t.longest_send = t.longest_send.max(took);
        let allowed = limits.attempt_timeout * (attempts.len().max(1) as u32) + limits.slack;
        v.expect(Check::AttemptBounded, took <= allowed, || {
            format!("send() took {took:?} for {} attempts: {}", attempts.len(), describe(f))
        });
    }
    for (_, _, end) in &attempts {
        match end {
            AttemptEnd::Status(s) => *t.attempts_status.entry(*s).or_default() += 1,
            AttemptEnd::Error(k) => *t.attempts_error.entry(k.label()).or_default() += 1,
        }
    }
    *t.attempts_per_request.entry(attempts.len()).or_default() += 1;
    let responses = attempts.iter().filter(|a| matches!(a.2, AttemptEnd::Status(_))).count() as u64;
    match spec.kind {
        Kind::Read => {
            t.read_dispatches += dispatched.len() as u64;
            t.read_responses += responses;
        }
        Kind::Stream => {
            t.stream_dispatches += dispatched.len() as u64;
            t.stream_responses += responses;
        }
        Kind::WriteDenied | Kind::WriteDefault => {
            t.write_dispatches += dispatched.len() as u64;
            t.write_responses += responses;
        }
    }

    for (e, _) in &dispatched {
        let ok = e.is_some_and(|i| !spec.excluded.contains(&i));
        v.expect(Check::Excluded, ok, || {
            format!("attempt to excluded/unknown endpoint {e:?}: {}", describe(f))
        });
        let ok = e.is_some_and(|i| answer[i] == Some(true));
        v.expect(Check::Ineligible, ok, || {
            format!("attempt to endpoint {e:?} not answered eligible at start: {}", describe(f))
        });
    }
    // A CooldownSkip is final for the request: no later dispatch or attempt to that endpoint.
    let mut skipped: Vec<usize> = Vec::new();
    let mut cooling_ok = true;
    for e in entries {
        match e {
            Entry::CooldownSkip { endpoint: Some(i) } => {
                t.cooldown_skips += 1;
                skipped.push(*i);
            }
            Entry::Dispatched { endpoint: Some(i), .. } | Entry::Attempt { endpoint: Some(i), .. }
                if skipped.contains(i) =>
            {
                cooling_ok = false;
            }
            Entry::NotReplayable { .. } => t.not_replayable += 1,
            _ => {}
        }
    }
    v.expect(Check::Cooling, cooling_ok, || format!("attempt after a CooldownSkip: {}", describe(f)));

    if !spec.kind.allowed() {
        v.expect(Check::DeniedOnce, dispatched.len() <= 1, || {
            format!("denied request dispatched {} times: {}", dispatched.len(), describe(f))
        });
    }
    let mut seen = Vec::new();
    let mut repeat = false;
    for (e, _) in &dispatched {
        if seen.contains(e) {
            repeat = true;
        }
        seen.push(*e);
    }
    v.expect(Check::NoRepeat, !repeat, || format!("endpoint reached twice: {}", describe(f)));
    if spec.kind == Kind::Stream {
        let ok = dispatched.len() <= 1
            && attempts.len() <= 1
            && dispatched.iter().all(|(_, streaming)| *streaming);
        v.expect(Check::StreamOnce, ok, || {
            format!("streaming body sent {} times: {}", dispatched.len(), describe(f))
        });
    }

    // Dispatches and Attempt events: the same endpoints in the same order, numbered 1..; a
    // request dropped mid-attempt may have one dispatch without its event.
    let d: Vec<Option<usize>> = dispatched.iter().map(|x| x.0).collect();
    let a: Vec<Option<usize>> = attempts.iter().map(|x| x.0).collect();
    let numbered = attempts.iter().enumerate().all(|(i, x)| x.1 as usize == i + 1);
    let in_flight_ok = f.outcome.is_none() && d.len() == a.len() + 1 && d[..a.len()] == a[..];
    v.expect(Check::DispatchMatch, numbered && (d == a || in_flight_ok), || {
        format!("dispatches {d:?} vs attempts {a:?}: {}", describe(f))
    });

    // ---- the plan failnext must follow ----
    if spec.unknown.is_some() {
        let only_result = entries.iter().all(|e| matches!(e, Entry::Result { .. }));
        v.expect(Check::Order, only_result, || {
            format!("unknown id, yet something happened: {}", describe(f))
        });
        if let Some(outcome) = &f.outcome {
            let ok = matches!(outcome, Outcome::Error(Some(TypedError::Unknown)));
            v.expect(Check::ResultRule, ok, || {
                format!("unknown id did not fail as unknown: {}", describe(f))
            });
        }
        return;
    }
    let usable: Vec<usize> =
        (0..n).filter(|&i| !spec.excluded.contains(&i) && answer[i] == Some(true)).collect();
    let mut plan = Vec::with_capacity(usable.len());
    if let Some(p) = spec.preferred.filter(|p| usable.contains(p)) {
        plan.push(p);
    }
    plan.extend(usable.iter().copied().filter(|i| Some(*i) != spec.preferred));

    judge_order(f, &plan, v, t);
    judge_result(f, &attempts, v);
}

/// Walks the considered endpoints (skips, attempts, the not-replayable candidate) against the
/// plan, and checks where the request was allowed to go on or had to stop.
fn judge_order(f: &Finished, plan: &[usize], v: &mut Violations, t: &mut Tally) {
    let spec = &f.spec;
    let mut pos = 0;
    let mut attempts = 0;
    let mut may_continue = false;
    // The last attempt ended in a failure that lets failover go on (error or trigger status).
    let mut last_failed = false;
    let mut stopped = false;
    let mut not_replayable = false;
    let mut problem: Option<String> = None;
    for e in &f.entries {
        let (endpoint, what) = match e {
            Entry::CooldownSkip { endpoint } => (endpoint, 's'),
            Entry::Attempt { endpoint, end, .. } => {
                let failed = match end {
                    AttemptEnd::Status(s) => is_trigger(*s),
                    AttemptEnd::Error(_) => true,
                };
                (endpoint, if failed { 'f' } else { 'r' })
            }
            Entry::NotReplayable { endpoint } => (endpoint, 'n'),
            _ => continue,
        };
        if problem.is_some() {
            break;
        }
        let expected = plan.get(pos).copied();
        if *endpoint != expected || expected.is_none() {
            problem = Some(format!("considered {endpoint:?} at plan position {pos}, plan {plan:?}"));
            break;
        }
        if stopped {
            problem = Some("went on after it had to stop".to_owned());
            break;
        }
        if attempts > 0 && !(last_failed && may_continue) {
            problem = Some("went on without a failure that allows it".to_owned());
            break;
        }
        pos += 1;
        match what {
            's' => {}
            'n' => {
                not_replayable = true;
                stopped = true;
                if spec.kind != Kind::Stream || attempts == 0 {
                    problem = Some("NotReplayable for a replayable request".to_owned());
                }
            }
            _ => {
                if attempts > 0 && spec.kind == Kind::Stream {
                    problem = Some("a streaming request attempted twice".to_owned());
                }
                if attempts == 0 {
                    may_continue = spec.kind.allowed() && pos < plan.len();
                    if spec.preferred.is_some_and(|p| Some(p) == plan.first().copied() && pos == 1) {
                        t.preferred_first += 1;
                    }
                }
                attempts += 1;
                last_failed = what == 'f';
                if !last_failed {
                    stopped = true;
                }
            }
        }
    }
    // A request that finished by itself must not have stopped early: after a failure that
    // allows failover, with candidates left and a replayable body, it goes on.
    if problem.is_none() && f.outcome.is_some() {
        if attempts == 0 && pos != plan.len() {
            problem = Some("no attempt although candidates were left".to_owned());
        }
        if attempts > 0 && last_failed && may_continue && pos < plan.len() && !not_replayable {
            problem = Some("stopped failing over with candidates left".to_owned());
        }
    }
    // A request dropped mid-attempt: the attempt in flight went to the next candidate, and
    // only if it was allowed to go there.
    let dispatched: Vec<Option<usize>> = f
        .entries
        .iter()
        .filter_map(|e| match e {
            Entry::Dispatched { endpoint, .. } => Some(*endpoint),
            _ => None,
        })
        .collect();
    if problem.is_none() && f.outcome.is_none() && dispatched.len() == attempts + 1 {
        let allowed = attempts == 0 || (last_failed && may_continue && !stopped);
        if !allowed || dispatched.last().copied().flatten() != plan.get(pos).copied() {
            problem = Some(format!("attempt in flight to {:?}, plan position {pos}", dispatched.last()));
        }
    }
    v.expect(Check::Order, problem.is_none(), || {
        format!("{}: {}", problem.clone().unwrap_or_default(), describe(f))
    });
}

/// The returned outcome against the attempts: the last HTTP response wins (a trigger response
/// is retained), an error only when no attempt produced a response, and it lists them.
fn judge_result(f: &Finished, attempts: &[(Option<usize>, u32, AttemptEnd)], v: &mut Violations) {
    let Some(outcome) = &f.outcome else { return };
    let last_response = attempts.iter().rev().find_map(|(e, _, end)| match end {
        AttemptEnd::Status(s) => Some((*e, *s)),
        AttemptEnd::Error(_) => None,
    });
    let endpoints: Vec<Option<usize>> = attempts.iter().map(|a| a.0).collect();
    let ok = match (outcome, last_response) {
        (Outcome::Response { status, served_by }, Some((e, s))) => *status == s && *served_by == e,
        (Outcome::Response { .. }, None) => false,
        (Outcome::Error(_), Some(_)) => false,
        // Nothing attempted: every candidate was skipped, or there was none (judge_order checks
        // that the plan was used up).
        (Outcome::Error(Some(TypedError::NoUsable)), None) => attempts.is_empty(),
        (Outcome::Error(Some(TypedError::Failover(listed))), None) => {
            !listed.is_empty() && *listed == endpoints
        }
        (Outcome::Error(_), None) => false,
    };
    v.expect(Check::ResultRule, ok, || format!("outcome does not follow the attempts: {}", describe(f)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::soak::record::{AttemptEnd as A, Entry as E, ResultEnd as R};

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
        analyse(&f, 3, limits, &mut v, &mut Tally::default());
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
}

//! The checks of one request's log: it ended, its events, its eligibility questions, its
//! dispatches, its timing; then [`rules`] for its plan, order and result.

use failnext_examples::oracle::{self, Plan, Selection};

use super::finished::{AttemptSeen, describe};
use super::{BodyEnd, Check, Finished, Limits, Outcome, Tally, TypedError, Violations, rules};
use crate::soak::record::{AttemptEnd, Entry, ResultEnd};
use crate::soak::schedule::{Cancel, Kind};

/// Judges one finished request over the configured endpoint `ids` against every per-request
/// rule, and counts what it did.
pub(crate) fn analyse(f: &Finished, ids: &[String], limits: Limits, v: &mut Violations, t: &mut Tally) {
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
    v.expect(Check::Stray, !f.entries.contains(&Entry::Unknown), || {
        format!("unknown event kind: {}", describe(f))
    });
    judge_result_event(f, v, t);
    count_outcome(f, v, t);
    if f.entries.is_empty() {
        return;
    }

    let selection = oracle::resolve(ids, spec.excluded_ids(ids), spec.preferred_id(ids));
    let answer = judge_questions(f, ids.len(), selection.as_ref().ok(), v, t);
    let attempts: Vec<AttemptSeen> = f
        .entries
        .iter()
        .filter_map(|e| match e {
            Entry::Attempt { endpoint, number, end, .. } => Some((*endpoint, *number, *end)),
            _ => None,
        })
        .collect();
    judge_timing(f, &attempts, limits, v, t);
    judge_dispatches(f, &answer, &attempts, ids.len(), v, t);

    // ---- the plan failnext must follow ----
    match selection {
        Ok(selection) => {
            let plan = Plan::new(ids.len(), &selection, |i| answer[i] == Some(true));
            rules::judge_order(f, &plan, v, t);
            rules::judge_result(f, &attempts, v);
        }
        Err(_) => rules::judge_unknown(f, v),
    }
}

/// One `Result` event, last, equal to what `send()` returned (or `Cancelled` when the soak
/// dropped the request in flight).
fn judge_result_event(f: &Finished, v: &mut Violations, t: &mut Tally) {
    let entries = &f.entries;
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
}

/// Every error is a failnext error; a write never met a chain that had its transaction.
fn count_outcome(f: &Finished, v: &mut Violations, t: &mut Tally) {
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
        if rules::triggers().is_trigger(*status) {
            t.retained += 1;
        }
    }
    match &f.body {
        Some(BodyEnd::Read { duplicate_write }) => {
            t.body_read += 1;
            if f.spec.kind.is_write() {
                v.expect(Check::DuplicateWrite, !duplicate_write, || {
                    format!("the chain answered 'already known': {}", describe(f))
                });
            }
        }
        Some(BodyEnd::Error(kind)) => *t.body_errors.entry(kind.label()).or_default() += 1,
        Some(BodyEnd::Cancelled) => t.cancelled_in_body += 1,
        None => {}
    }
}

/// Eligibility asked once per non-excluded endpoint, in order, before anything else (none
/// when the request names an unknown id). Returns each endpoint's recorded answer.
fn judge_questions(
    f: &Finished,
    n: usize,
    selection: Option<&Selection>,
    v: &mut Violations,
    t: &mut Tally,
) -> Vec<Option<bool>> {
    let entries = &f.entries;
    let asks: Vec<(Option<usize>, bool)> = entries
        .iter()
        .take_while(|e| matches!(e, Entry::Asked { .. }))
        .filter_map(|e| match e {
            Entry::Asked { endpoint, answer } => Some((*endpoint, *answer)),
            _ => None,
        })
        .collect();
    let late_asks = entries.iter().skip(asks.len()).any(|e| matches!(e, Entry::Asked { .. }));
    let expected_asks: Vec<Option<usize>> = match selection {
        Some(selection) => Plan::new(n, selection, |_| true).asked().iter().copied().map(Some).collect(),
        None => Vec::new(),
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
    answer
}

/// Every attempt is bounded by the attempt timeout; a whole request by one timeout per
/// attempt.
fn judge_timing(f: &Finished, attempts: &[AttemptSeen], limits: Limits, v: &mut Violations, t: &mut Tally) {
    let bound = limits.attempt_timeout + limits.slack;
    for e in &f.entries {
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
}

/// Where the attempts went: never excluded, ineligible or skipped endpoints, never one twice,
/// at most one provider when the request may not fail over or cannot be replayed, and the
/// dispatches match the `Attempt` events.
fn judge_dispatches(
    f: &Finished,
    answer: &[Option<bool>],
    attempts: &[AttemptSeen],
    n: usize,
    v: &mut Violations,
    t: &mut Tally,
) {
    let dispatched: Vec<(Option<usize>, bool)> = f
        .entries
        .iter()
        .filter_map(|e| match e {
            Entry::Dispatched { endpoint, streaming } => Some((*endpoint, *streaming)),
            _ => None,
        })
        .collect();
    tally_attempts(f, attempts, &dispatched, t);
    judge_targets(f, answer, &dispatched, v);
    judge_cooling(f, v, t);
    judge_reach(f, attempts, &dispatched, n, v);
    judge_match(f, attempts, &dispatched, v);
}

/// Counts the request's attempts by how they ended, and its dispatches and responses by kind.
fn tally_attempts(
    f: &Finished,
    attempts: &[AttemptSeen],
    dispatched: &[(Option<usize>, bool)],
    t: &mut Tally,
) {
    let spec = &f.spec;
    for (_, _, end) in attempts {
        match end {
            AttemptEnd::Status(s) => *t.attempts_status.entry(*s).or_default() += 1,
            AttemptEnd::Error(k) => *t.attempts_error.entry(k.label()).or_default() += 1,
        }
    }
    *t.attempts_per_request.entry(attempts.len()).or_default() += 1;
    let responses = attempts.iter().filter(|a| matches!(a.2, AttemptEnd::Status(_))).count() as u64;
    let (kind_dispatches, kind_responses) = match spec.kind {
        Kind::Read => (&mut t.read_dispatches, &mut t.read_responses),
        Kind::Stream => (&mut t.stream_dispatches, &mut t.stream_responses),
        Kind::WriteDenied | Kind::WriteDefault => (&mut t.write_dispatches, &mut t.write_responses),
    };
    *kind_dispatches += dispatched.len() as u64;
    *kind_responses += responses;
}

/// Never an excluded or unknown endpoint, never one not answered eligible at the start.
fn judge_targets(
    f: &Finished,
    answer: &[Option<bool>],
    dispatched: &[(Option<usize>, bool)],
    v: &mut Violations,
) {
    let spec = &f.spec;
    for (e, _) in dispatched {
        let ok = e.is_some_and(|i| !spec.excluded.contains(&i));
        v.expect(Check::Excluded, ok, || {
            format!("attempt to excluded/unknown endpoint {e:?}: {}", describe(f))
        });
        let ok = e.is_some_and(|i| answer[i] == Some(true));
        v.expect(Check::Ineligible, ok, || {
            format!("attempt to endpoint {e:?} not answered eligible at start: {}", describe(f))
        });
    }
}

/// A CooldownSkip is final for the request: no later dispatch or attempt to that endpoint
/// (the skips and the not-replayable stops counted on the way).
fn judge_cooling(f: &Finished, v: &mut Violations, t: &mut Tally) {
    let mut skipped: Vec<usize> = Vec::new();
    let mut cooling_ok = true;
    for e in &f.entries {
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
}

/// At most as many providers as the request may reach (denied: once; not replayable: once,
/// streaming), and never one twice.
fn judge_reach(
    f: &Finished,
    attempts: &[AttemptSeen],
    dispatched: &[(Option<usize>, bool)],
    n: usize,
    v: &mut Violations,
) {
    let spec = &f.spec;
    let (allowed, replayable) = (spec.kind.allowed(), spec.kind.replayable());
    if !allowed {
        let limit = oracle::reach_limit(allowed, replayable, n);
        v.expect(Check::DeniedOnce, dispatched.len() <= limit, || {
            format!("denied request dispatched {} times: {}", dispatched.len(), describe(f))
        });
    }
    let mut seen = Vec::new();
    let mut repeat = false;
    for (e, _) in dispatched {
        if seen.contains(e) {
            repeat = true;
        }
        seen.push(*e);
    }
    v.expect(Check::NoRepeat, !repeat, || format!("endpoint reached twice: {}", describe(f)));
    if !replayable {
        let limit = oracle::reach_limit(allowed, replayable, n);
        let ok = dispatched.len() <= limit
            && attempts.len() <= limit
            && dispatched.iter().all(|(_, streaming)| *streaming);
        v.expect(Check::StreamOnce, ok, || {
            format!("streaming body sent {} times: {}", dispatched.len(), describe(f))
        });
    }
}

/// Dispatches and Attempt events: the same endpoints in the same order, numbered 1..; a
/// request dropped mid-attempt may have one dispatch without its event.
fn judge_match(
    f: &Finished,
    attempts: &[AttemptSeen],
    dispatched: &[(Option<usize>, bool)],
    v: &mut Violations,
) {
    let d: Vec<Option<usize>> = dispatched.iter().map(|x| x.0).collect();
    let a: Vec<Option<usize>> = attempts.iter().map(|x| x.0).collect();
    let numbered = attempts.iter().enumerate().all(|(i, x)| x.1 as usize == i + 1);
    let in_flight_ok = f.outcome.is_none() && d.len() == a.len() + 1 && d[..a.len()] == a[..];
    v.expect(Check::DispatchMatch, numbered && (d == a || in_flight_ok), || {
        format!("dispatches {d:?} vs attempts {a:?}: {}", describe(f))
    });
}

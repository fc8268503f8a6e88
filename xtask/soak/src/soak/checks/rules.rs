//! The plan, the order and the result a request must follow, from the rules oracle
//! (`failnext_examples::oracle`), against what its log shows.

use failnext_examples::oracle::{self, Attempted, Expected, Plan, Step, Triggers, Walk};

use super::finished::{AttemptSeen, describe};
use super::{Check, Finished, Outcome, Tally, TypedError, Violations};
use crate::soak::config::ADDITIONAL_TRIGGER;
use crate::soak::record::Entry;

/// The trigger statuses of the soak's configuration: 502, 503, 504, and 429 added.
pub(crate) fn triggers() -> Triggers {
    Triggers::new([ADDITIONAL_TRIGGER.as_u16()])
}

/// A request naming an unknown id: nothing happens but its `Result`, and it fails as unknown.
pub(super) fn judge_unknown(f: &Finished, v: &mut Violations) {
    let only_result = f.entries.iter().all(|e| matches!(e, Entry::Result { .. }));
    v.expect(Check::Order, only_result, || format!("unknown id, yet something happened: {}", describe(f)));
    if let Some(outcome) = &f.outcome {
        let ok = matches!(outcome, Outcome::Error(Some(TypedError::Unknown)));
        v.expect(Check::ResultRule, ok, || format!("unknown id did not fail as unknown: {}", describe(f)));
    }
}

/// Walks the considered endpoints (skips, attempts, the not-replayable candidate) with the
/// oracle's [`Walk`] over `plan`: each must be the step the rules take next, given which
/// candidates the log shows cooling and how each attempt ended; a request that finished by
/// itself stopped where the rules stop, and one dropped mid-attempt had its attempt in flight
/// to the candidate the rules go to.
pub(super) fn judge_order(f: &Finished, plan: &Plan, v: &mut Violations, t: &mut Tally) {
    let spec = &f.spec;
    let mut walk = Walk::new(plan, spec.kind.permission_query(), spec.kind.replayable(), triggers());
    let mut problem: Option<String> = None;
    for e in &f.entries {
        if !matches!(e, Entry::CooldownSkip { .. } | Entry::Attempt { .. } | Entry::NotReplayable { .. }) {
            continue;
        }
        // The log says whether the candidate was cooling when its turn came.
        let step = walk.next(|_| matches!(e, Entry::CooldownSkip { .. }));
        match (e, &step) {
            (Entry::CooldownSkip { endpoint }, Step::Skip(i)) if *endpoint == Some(*i) => {}
            (Entry::NotReplayable { endpoint }, Step::NotReplayable(i)) if *endpoint == Some(*i) => {}
            (Entry::Attempt { endpoint, end, .. }, Step::Attempt { endpoint: i, number })
                if *endpoint == Some(*i) =>
            {
                if *number == 1 && spec.preferred == Some(*i) {
                    t.preferred_first += 1;
                }
                walk.record(end.attempted());
            }
            (_, Step::Finish(finish)) => {
                problem = Some(format!(
                    "went on after it had to stop ({:?}), plan {:?}",
                    finish.stop,
                    plan.order()
                ));
                break;
            }
            _ => {
                problem =
                    Some(format!("considered {e:?} where the rules take {step:?}, plan {:?}", plan.order()));
                break;
            }
        }
    }
    if problem.is_none() {
        problem = judge_end(f, &mut walk, plan);
    }
    v.expect(Check::Order, problem.is_none(), || {
        format!("{}: {}", problem.clone().unwrap_or_default(), describe(f))
    });
}

/// Where the log ends: a request that finished by itself must not have stopped early (after a
/// failure that allows failover, with candidates left and a replayable body, it goes on); a
/// request dropped mid-attempt went to the next candidate, and only if it was allowed to.
fn judge_end(f: &Finished, walk: &mut Walk<'_>, plan: &Plan) -> Option<String> {
    let dispatched: Vec<Option<usize>> = f
        .entries
        .iter()
        .filter_map(|e| match e {
            Entry::Dispatched { endpoint, .. } => Some(*endpoint),
            _ => None,
        })
        .collect();
    let in_flight = dispatched.len() == walk.attempts().len() + 1;
    match (&f.outcome, walk.next(|_| false)) {
        (Some(_), Step::Finish(_)) => None,
        (Some(_), step) => Some(format!("stopped where the rules take {step:?}, plan {:?}", plan.order())),
        (None, Step::Attempt { endpoint, .. }) if in_flight && dispatched.last() == Some(&Some(endpoint)) => {
            None
        }
        (None, step) if in_flight => Some(format!(
            "attempt in flight to {:?} where the rules take {step:?}, plan {:?}",
            dispatched.last(),
            plan.order()
        )),
        (None, _) => None,
    }
}

/// The returned outcome against the attempts, by the oracle's result rule: the last HTTP
/// response wins (a trigger response is retained), an error only when no attempt produced a
/// response, and it lists them.
pub(super) fn judge_result(f: &Finished, attempts: &[AttemptSeen], v: &mut Violations) {
    let Some(outcome) = &f.outcome else { return };
    let attempted: Vec<(Option<usize>, Attempted)> =
        attempts.iter().map(|(e, _, end)| (*e, end.attempted())).collect();
    let ok = match (outcome, oracle::expected_result(&attempted)) {
        (Outcome::Response { status, served_by }, Expected::Response { endpoint, status: s, .. }) => {
            *status == s && *served_by == endpoint
        }
        // Nothing attempted: every candidate was skipped, or there was none (judge_order checks
        // that the plan was used up).
        (Outcome::Error(Some(TypedError::NoUsable)), Expected::NoUsableEndpoint) => true,
        (Outcome::Error(Some(TypedError::Failover(listed))), Expected::Failover(endpoints)) => {
            *listed == endpoints
        }
        _ => false,
    };
    v.expect(Check::ResultRule, ok, || format!("outcome does not follow the attempts: {}", describe(f)));
}

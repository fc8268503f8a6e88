//! One request, step by step: which candidate comes next, whether it may go on, and how it
//! ends (decision 4, replay, included).

use super::{Attempted, Expected, PermissionQuery, Plan, Settlement, Triggers, expected_result};

/// One thing failnext does for a request, in order; each is one event it emits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// The candidate is cooling down: skipped for good (`CooldownSkip`).
    Skip(usize),
    /// The candidate is attempted, the `number`-th attempt of the request (from 1). Its outcome
    /// goes to [`Walk::record`] before the next step (`Attempt`).
    Attempt {
        /// The endpoint attempted.
        endpoint: usize,
        /// 1 for the first attempt.
        number: u32,
    },
    /// The request would go on to this candidate, but its body cannot be replayed
    /// (`NotReplayable`).
    NotReplayable(usize),
    /// The request ends (`Result`).
    Finish(Finish),
}

/// Why a request stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The last attempt's outcome does not fail over: its response is returned.
    Returned,
    /// The request may not fail over (see [`PermissionQuery::settle`]).
    MayNotFailOver,
    /// The next candidate would need a replay of a body that cannot be replayed.
    NotReplayable,
    /// Every candidate was attempted or skipped.
    NoCandidateLeft,
}

/// How a request ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finish {
    /// Why it stopped.
    pub stop: Stop,
    /// What it must return (see [`expected_result`]).
    pub result: Expected,
}

/// One request walking its [`Plan`]: a pure state machine that says what comes next, given
/// which candidates are cooling when their turn comes and how each attempt ended.
#[derive(Clone, Debug)]
pub struct Walk<'a> {
    order: Vec<usize>,
    next: usize,
    permission: PermissionQuery<'a>,
    settled: Option<Settlement>,
    replayable: bool,
    triggers: Triggers,
    attempts: Vec<(usize, Attempted)>,
    pending: Option<usize>,
    stop: Option<Stop>,
}

impl<'a> Walk<'a> {
    /// A request over `plan`, whose permission is settled from `permission` (when needed),
    /// whose body can be replayed or not, under `triggers`.
    pub fn new(
        plan: &Plan,
        permission: PermissionQuery<'a>,
        replayable: bool,
        triggers: Triggers,
    ) -> Walk<'a> {
        Walk {
            order: plan.order().to_vec(),
            next: 0,
            permission,
            settled: None,
            replayable,
            triggers,
            attempts: Vec::new(),
            pending: None,
            stop: None,
        }
    }

    /// The next step. `is_cooling(i)` is asked, live, only for the candidate whose turn it is.
    /// After [`Step::Finish`] every call returns the same finish.
    ///
    /// # Panics
    ///
    /// When the outcome of the last [`Step::Attempt`] was not [recorded](Walk::record).
    pub fn next(&mut self, mut is_cooling: impl FnMut(usize) -> bool) -> Step {
        assert!(
            self.pending.is_none(),
            "the outcome of attempt {} was not recorded",
            self.attempts.len() + 1
        );
        if self.stop.is_none() {
            self.stop = self.must_stop();
        }
        if let Some(stop) = self.stop {
            return self.finish(stop);
        }
        let Some(&candidate) = self.order.get(self.next) else {
            self.stop = Some(Stop::NoCandidateLeft);
            return self.finish(Stop::NoCandidateLeft);
        };
        self.next += 1;
        if is_cooling(candidate) {
            return Step::Skip(candidate);
        }
        if !self.attempts.is_empty() && !self.replayable {
            self.stop = Some(Stop::NotReplayable);
            return Step::NotReplayable(candidate);
        }
        // Permission is settled once, only when another candidate could follow the first.
        if self.attempts.is_empty() && self.next < self.order.len() {
            self.settled = Some(self.permission.settle());
        }
        self.pending = Some(candidate);
        Step::Attempt { endpoint: candidate, number: self.attempts.len() as u32 + 1 }
    }

    /// Records how the attempt of the last [`Step::Attempt`] ended.
    pub fn record(&mut self, outcome: Attempted) {
        if let Some(endpoint) = self.pending.take() {
            self.attempts.push((endpoint, outcome));
        }
    }

    /// How permission was settled; `None` while (or when) it never had to be.
    pub fn settlement(&self) -> Option<Settlement> {
        self.settled
    }

    /// The attempts so far, with their outcomes.
    pub fn attempts(&self) -> &[(usize, Attempted)] {
        &self.attempts
    }

    /// After an attempt: whether the request stops here rather than considering the next
    /// candidate.
    fn must_stop(&self) -> Option<Stop> {
        let &(_, last) = self.attempts.last()?;
        if !self.triggers.fails_over(last) {
            return Some(Stop::Returned);
        }
        // Not settled means no candidate could follow: the plan's end says so below.
        match self.settled {
            Some(s) if !s.may_fail_over => Some(Stop::MayNotFailOver),
            _ => None,
        }
    }

    fn finish(&self, stop: Stop) -> Step {
        Step::Finish(Finish { stop, result: expected_result(&self.attempts) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::Selection;
    use failnext::Permission;

    fn walk(n: usize, explicit: Option<Permission>, replayable: bool) -> Walk<'static> {
        let plan = Plan::new(n, &Selection::default(), |_| true);
        Walk::new(
            &plan,
            PermissionQuery { explicit, policy: None, method: "POST" },
            replayable,
            Triggers::new([]),
        )
    }

    #[test]
    fn a_denied_request_stops_after_a_trigger() {
        let mut w = walk(2, None, true);
        assert_eq!(w.next(|_| false), Step::Attempt { endpoint: 0, number: 1 });
        w.record(Attempted::Status(502));
        let Step::Finish(f) = w.next(|_| false) else { panic!() };
        assert_eq!(f.stop, Stop::MayNotFailOver);
        assert_eq!(w.settlement().map(|s| s.may_fail_over), Some(false));
    }

    #[test]
    fn cooling_candidates_are_skipped_and_a_stream_is_not_replayed() {
        let mut w = walk(3, Some(Permission::Allow), false);
        assert_eq!(w.next(|i| i == 0), Step::Skip(0));
        assert_eq!(w.next(|_| false), Step::Attempt { endpoint: 1, number: 1 });
        w.record(Attempted::Error);
        assert_eq!(w.next(|_| false), Step::NotReplayable(2));
        let Step::Finish(f) = w.next(|_| false) else { panic!() };
        assert_eq!((f.stop, f.result), (Stop::NotReplayable, Expected::Failover(vec![1])));
    }

    #[test]
    fn a_single_candidate_never_settles_permission() {
        let mut w = walk(1, None, true);
        assert_eq!(w.next(|_| false), Step::Attempt { endpoint: 0, number: 1 });
        w.record(Attempted::Error);
        let Step::Finish(f) = w.next(|_| false) else { panic!() };
        assert_eq!((f.stop, w.settlement()), (Stop::NoCandidateLeft, None));
    }
}

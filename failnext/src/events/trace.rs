//! [`Trace`]: for one request, every configured endpoint and what happened to it.

use std::fmt;
use std::time::Duration;

use crate::judging::classify::Class;
use crate::request::endpoint::EndpointId;

/// For one request (asked for with [`RequestBuilderExt::trace`](crate::RequestBuilderExt::trace)
/// or [`FailoverBuilder::trace`](crate::FailoverBuilder::trace)): every configured endpoint, in
/// configured order, with what happened to it. On the response (an extension) and on the
/// [`Error`](crate::Error) ([`Error::trace`](crate::Error::trace)); `Display` prints it as one
/// block; emitted to `tracing` (feature `tracing`, level debug) when the request ends. Costs
/// nothing on a request that does not ask for it.
///
/// ```text
/// request trace:
///   primary: tried #1: timed out (transport)
///   backup: breaker open for 1.2s
///   third: not tried: deadline passed
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    entries: Vec<TraceEntry>,
}

/// One endpoint's part of a [`Trace`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceEntry {
    endpoint: EndpointId,
    steps: Vec<TraceStep>,
}

/// What happened to an endpoint during one request.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceStep {
    /// The request excluded it.
    Excluded,
    /// The eligibility hook ruled it out.
    Ineligible,
    /// Passed over: cooling down (the reference rule) for this long.
    Cooling(Duration),
    /// Passed over: its breaker was open for this long.
    BreakerOpen(Duration),
    /// Passed over: another request held its breaker's trial.
    TrialBusy,
    /// Passed over: the fleet's budget for it was spent, or it cooled fleet-wide (feature
    /// `redis`).
    FleetBudget,
    /// The request waited for another request's trial on it.
    WaitedForTrial,
    /// It was started as a hedge, while the first attempt was still running.
    Hedged,
    /// Attempt `attempt` was sent to it: its outcome (a status, or the error) and how it was
    /// judged.
    Tried {
        /// The attempt's number in the request.
        attempt: u32,
        /// `200 OK`, or the error (with no URL).
        outcome: String,
        /// How the outcome was judged.
        class: Class,
    },
    /// Attempt `attempt` was sent to it and cancelled before it finished: the other attempt
    /// of a hedged request answered first (see [`Hedge`](crate::Hedge)).
    Cancelled {
        /// The attempt's number in the request.
        attempt: u32,
    },
    /// The request's [`Scope`](crate::Scope) ruled it out from the start: it cannot serve
    /// this request, and why.
    Unfit(crate::judging::scope::Unfit),
    /// Its answer (the attempt before this step) was overruled by the request's
    /// [`Scope`](crate::Scope): no answer for this request, and why. The request went on as
    /// for any flagged answer.
    Overruled(crate::judging::scope::Unfit),
    /// It was not reached, and why.
    NotTried(NotTried),
    /// It was the first attempt's endpoint, and the first attempt ran past the hedge's delay,
    /// but no hedge was started, for this reason ([`NotTried::NotReached`]: no candidate was
    /// left to hedge with).
    NotHedged(NotTried),
}

/// Why an endpoint was not reached in a request, or why a hedge was not started: each is a
/// decision of the request's loop, typed.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NotTried {
    /// Not needed: an answer came first.
    AnswerCameFirst,
    /// The request reached no further: every candidate before it was tried or skipped, and no
    /// rule sent it here.
    NotReached,
    /// An attempt failed and the request may not fail over (a write, say).
    MayNotFailOver,
    /// The request's body is a stream that cannot be sent again.
    NotReplayable,
    /// The request's deadline passed.
    DeadlinePassed,
    /// The failover budget had no token for another attempt.
    BudgetSpent,
}

impl fmt::Display for NotTried {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NotTried::AnswerCameFirst => "not needed: an answer came first",
            NotTried::NotReached => "not reached",
            NotTried::MayNotFailOver => "the request may not fail over",
            NotTried::NotReplayable => "the request's body cannot be sent again",
            NotTried::DeadlinePassed => "deadline passed",
            NotTried::BudgetSpent => "failover budget spent",
        })
    }
}

impl Trace {
    /// Every configured endpoint, in configured order.
    pub fn entries(&self) -> &[TraceEntry] {
        &self.entries
    }

    /// The entry of endpoint `id`.
    pub fn entry(&self, id: &str) -> Option<&TraceEntry> {
        self.entries.iter().find(|e| e.endpoint.as_str() == id)
    }
}

impl TraceEntry {
    /// The endpoint.
    pub fn endpoint(&self) -> &EndpointId {
        &self.endpoint
    }

    /// What happened to it, in order.
    pub fn steps(&self) -> &[TraceStep] {
        &self.steps
    }
}

impl fmt::Display for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("request trace:")?;
        for entry in &self.entries {
            write!(f, "\n  {}: ", entry.endpoint)?;
            for (k, step) in entry.steps.iter().enumerate() {
                if k > 0 {
                    f.write_str("; ")?;
                }
                fmt::Display::fmt(step, f)?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for TraceStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceStep::Excluded => f.write_str("excluded by the request"),
            TraceStep::Ineligible => f.write_str("ineligible"),
            TraceStep::Cooling(d) => write!(f, "cooling down for {d:.1?}"),
            TraceStep::BreakerOpen(d) => write!(f, "breaker open for {d:.1?}"),
            TraceStep::TrialBusy => f.write_str("half-open, its trial taken by another request"),
            TraceStep::FleetBudget => f.write_str("the fleet's budget for it spent, or cooling fleet-wide"),
            TraceStep::WaitedForTrial => f.write_str("waited for another request's trial"),
            TraceStep::Hedged => f.write_str("hedged"),
            TraceStep::Tried { attempt, outcome, class } => {
                write!(f, "tried #{attempt}: {outcome} ({})", class.as_str())
            }
            TraceStep::Cancelled { attempt } => {
                write!(f, "tried #{attempt}: cancelled, the other attempt answered first")
            }
            TraceStep::Unfit(why) => write!(f, "unfit: {why}"),
            TraceStep::Overruled(why) => write!(f, "answer overruled: {why}"),
            TraceStep::NotTried(why) => write!(f, "not tried: {why}"),
            TraceStep::NotHedged(why) => write!(f, "not hedged: {why}"),
        }
    }
}

/// A trace being written, one list of steps per configured endpoint.
#[derive(Debug)]
pub(crate) struct Tracer {
    steps: Vec<Vec<TraceStep>>,
}

impl Tracer {
    pub(crate) fn new(endpoints: usize) -> Tracer {
        Tracer { steps: vec![Vec::new(); endpoints] }
    }

    pub(crate) fn add(&mut self, i: usize, step: TraceStep) {
        if let Some(steps) = self.steps.get_mut(i) {
            steps.push(step);
        }
    }

    /// The trace, every endpoint nothing happened to marked as not reached for `why`.
    pub(crate) fn finish(self, ids: impl Iterator<Item = EndpointId>, why: NotTried) -> Trace {
        let entries = ids
            .zip(self.steps)
            .map(|(endpoint, mut steps)| {
                if steps.is_empty() {
                    steps.push(TraceStep::NotTried(why));
                }
                TraceEntry { endpoint, steps }
            })
            .collect();
        Trace { entries }
    }
}

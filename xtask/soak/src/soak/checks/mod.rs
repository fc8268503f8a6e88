//! The soak's checks: every rule a finished request must satisfy, judged from its log.
//!
//! A request's log holds, in order, what failnext asked the eligibility hook, what it handed
//! to the rest of the chain (the dispatch middleware), and every event it emitted. From the
//! request's own spec (kind, exclusions, preference) and the recorded eligibility answers,
//! [`analyse`] rebuilds the plan failnext must follow, with the rules oracle
//! (`failnext_examples::oracle`), and compares.
//!
//! - `mod.rs`: the checks and the violations found;
//! - [`finished`]: a finished request as the worker saw it;
//! - [`request`]: the checks of one request's log (events, questions, dispatches, timing);
//! - [`rules`]: the plan, the order and the result, from the rules oracle;
//! - [`tally`]: the counts of what the soak saw.

mod finished;
mod request;
mod rules;
mod tally;

use std::collections::BTreeMap;
use std::fmt;

pub(crate) use finished::{BodyEnd, Finished, Limits, Outcome, TypedError};
pub(crate) use request::analyse;
pub(crate) use rules::triggers;
pub(crate) use tally::Tally;

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
    Follower,
    Liar,
}

impl Check {
    pub(crate) const ALL: [Check; 26] = [
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
        Check::Follower,
        Check::Liar,
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
            Check::Follower => "follower: every block once, in order, on chain",
            Check::Liar => "liar: verified blocks, proven logs and consensus reads answer nothing wrong",
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

#[cfg(test)]
mod tests;

//! Health: one endpoint's breaker (or reference cooldown), fed by the evidence the judge draws
//! from each attempt, under the endpoint's [`Cooldown`] rule.
//!
//! Two rules, each a type with its own state, behind one interface, [`Health`]:
//!
//! - the reference rule (`Cooldown::new`, [`reference`](mod@reference)): a streak of failures, and the
//!   instant a cooldown ends; exactly failnext 0.1;
//! - the adaptive breaker (`Cooldown::adaptive`, [`adaptive`]): closed → open(until) →
//!   half-open (one trial permit, a guard released on drop) → closed, with an open time that
//!   is the hint when given, else grows from 250 ms (×2, ±20 % jitter) up to the cap on each
//!   failed trial.
//!
//! Each keeps its state behind a lock with a lock-free flag beside it ([`cell`]), so that a
//! healthy endpoint is recognised from one atomic load.
//!
//! Beside the breaker: why an endpoint is skipped ([`skip`]), the breaker's jitter
//! ([`random`]), and the paired view kept outside the request path ([`source`], [`paired`],
//! [`eligibility`], [`latency`], [`feed`], [`recent`], [`persist`]).

mod adaptive;
mod cell;
pub(crate) mod cooldown;
pub(crate) mod eligibility;
pub(crate) mod feed;
pub(crate) mod latency;
pub(crate) mod paired;
pub(crate) mod persist;
pub(crate) mod random;
pub(crate) mod recent;
mod reference;
pub(crate) mod skip;
pub(crate) mod source;
mod state;
#[cfg(test)]
#[allow(unused_must_use, reason = "tests drive Health::record without emitting")]
mod tests;

use std::time::Duration;

use tokio::time::Instant;

use crate::health::cooldown::{Cooldown, Rule};
use crate::health::skip::Skip;
use crate::judging::classify::Evidence;
use adaptive::Breaker;
pub(crate) use adaptive::{Admit, Permit};
use reference::ReferenceRule;
pub use state::BreakerState;
pub(crate) use state::Kept;

/// The breaker (or cooldown) of one endpoint, shared by every request of one `Failover`: the
/// rule its [`Cooldown`] chose, with that rule's own state.
///
/// Each method hands the call to the rule once; what only the breaker has (a trial, the last
/// resort, the eligibility it follows) is nothing under the other rules. A healthy endpoint
/// (closed, no streak, nothing to forget) is recognised from one atomic load, without the
/// lock, after a match on the variant, which never changes. With cooldown disabled nothing
/// is recorded and nothing is ever skipped.
#[derive(Debug)]
pub(crate) enum Health {
    /// `Cooldown::disabled()`.
    Off,
    /// `Cooldown::new(threshold, duration)`.
    Reference(ReferenceRule),
    /// `Cooldown::adaptive()`.
    Adaptive(Breaker),
}

impl Health {
    /// A clean state under `cooldown` (validated: threshold and duration non-zero).
    pub(crate) fn new(cooldown: Cooldown) -> Health {
        match cooldown.rule() {
            Rule::Disabled => Health::Off,
            Rule::Reference { threshold, duration } => {
                Health::Reference(ReferenceRule::new(threshold, duration))
            }
            Rule::Adaptive(rule) => Health::Adaptive(Breaker::new(rule)),
        }
    }

    /// Whether the state is clean: closed, no failures, nothing to forget.
    #[cfg(test)]
    fn is_clean(&self) -> bool {
        match self {
            Health::Off => true,
            Health::Reference(rule) => rule.is_clean(),
            Health::Adaptive(breaker) => breaker.is_clean(),
        }
    }

    /// When the endpoint's cooldown (or open breaker) ends, if it is skipped now. An expired
    /// reference cooldown is cleared, with its streak; a half-open breaker is not cooling.
    pub(crate) fn cooling_until(&self) -> Option<Instant> {
        match self {
            Health::Off => None,
            Health::Reference(rule) => rule.cooling_until(),
            Health::Adaptive(breaker) => breaker.cooling_until(),
        }
    }

    /// What survives a restart: the open time left (the reference cooldown's too), the failed
    /// trials that grew it, the failure streak and the probation. A trial in flight does not.
    pub(crate) fn export(&self) -> Kept {
        match self {
            Health::Off => Kept::default(),
            Health::Reference(rule) => rule.export(),
            Health::Adaptive(breaker) => breaker.export(),
        }
    }

    /// Takes `kept` over (into a breaker that has seen nothing yet, usually): an open time that
    /// is over by now makes the breaker half-open, so the next request is its trial.
    pub(crate) fn import(&self, kept: &Kept) {
        match self {
            Health::Off => {}
            Health::Reference(rule) => rule.import(kept),
            Health::Adaptive(breaker) => breaker.import(kept),
        }
    }

    /// Learns the eligibility hook's answer for this endpoint at a request's start. When it
    /// turns from ineligible to eligible (a monitor saw the provider fit again), an open
    /// breaker's open time ends now: the next request takes its trial, instead of waiting out
    /// an open time that may have grown to the cap while the provider was down. Adaptive rule
    /// only; one atomic load when the answer did not change.
    pub(crate) fn saw_eligibility(&self, eligible: bool) {
        if let Health::Adaptive(breaker) = self {
            breaker.saw_eligibility(eligible);
        }
    }

    /// Learns when a paired source last saw the endpoint good (`last_good`, its latest
    /// passing probe, asked only when it matters): an open breaker that opened before then
    /// ends its open time now, so the next request is its trial. Adaptive rule only; a clean
    /// breaker answers from one atomic load and never asks.
    pub(crate) fn saw_good(&self, last_good: impl FnOnce() -> Option<Instant>) {
        if let Health::Adaptive(breaker) = self {
            breaker.saw_good(last_good);
        }
    }

    /// Whether a candidate whose turn has come may be sent to now, and as what; or why not.
    ///
    /// Healthy (clean) endpoints are admitted from one atomic load.
    #[inline]
    pub(crate) fn admit(&self) -> Result<Admit<'_>, Skip> {
        match self {
            Health::Off => Ok(Admit::Closed),
            Health::Reference(rule) => rule.admit().map(|()| Admit::Closed),
            Health::Adaptive(breaker) => breaker.admit(),
        }
    }

    /// Whether [`admit`](Health::admit) would admit now without a trial permit, asked without
    /// taking one: the fast path's check (a clean breaker answers from one atomic load).
    #[inline]
    pub(crate) fn admits_freely(&self) -> bool {
        match self {
            Health::Off => true,
            Health::Reference(rule) => rule.admit().is_ok(),
            Health::Adaptive(breaker) => breaker.admits_freely(),
        }
    }

    /// The last resort, for an endpoint skipped as open: its trial now, even before its open
    /// time is over, unless another request holds its trial permit. Adaptive rule only.
    pub(crate) fn force_trial(&self) -> Option<Admit<'_>> {
        match self {
            Health::Adaptive(breaker) => breaker.force_trial(),
            Health::Off | Health::Reference(_) => None,
        }
    }

    /// When its open time ends (in the past when half-open), or `None` when closed (and
    /// always under the other rules).
    pub(crate) fn open_until(&self) -> Option<Instant> {
        match self {
            Health::Adaptive(breaker) => breaker.open_until(),
            Health::Off | Health::Reference(_) => None,
        }
    }

    /// Resolves when the trial in flight ends (its outcome is recorded, or its permit is
    /// dropped), at once when none is in flight (always, but under the adaptive rule). The
    /// caller bounds the wait.
    pub(crate) async fn trial_ended(&self) {
        if let Health::Adaptive(breaker) = self {
            breaker.trial_ended().await;
        }
    }

    /// Learns from an attempt that completed just now: `evidence`, and `hint`, how long the
    /// endpoint should take no traffic when the outcome said so (the judge caps it). `trial` is
    /// the epoch of the trial permit the attempt held, if it was its breaker's trial: while the
    /// breaker is open or half-open, only the trial's own outcome moves it (an attempt admitted
    /// before it opened, finishing late, is older news), except that a hint can lengthen the
    /// open time.
    ///
    /// Returns the breaker's new state when this outcome changed it, for the request to emit.
    /// `Neutral` changes nothing; the reference rule ignores the hint and reports no state.
    #[must_use = "a transition is emitted as Event::Breaker by the request that caused it"]
    pub(crate) fn record(
        &self,
        evidence: Evidence,
        hint: Option<Duration>,
        trial: Option<u64>,
    ) -> Option<BreakerState> {
        match self {
            Health::Off => None,
            Health::Reference(rule) => {
                rule.record(evidence);
                None
            }
            Health::Adaptive(breaker) => breaker.record(evidence, hint, trial),
        }
    }
}

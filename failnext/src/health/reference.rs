//! The reference rule (`Cooldown::new`): a streak of failures, and the instant a cooldown
//! ends; exactly failnext 0.1.

use std::time::Duration;

use tokio::time::Instant;

use super::cell::{Clean, Guarded};
use super::state::{Kept, deadline};
use crate::health::skip::Skip;
use crate::judging::classify::Evidence;

/// One endpoint's cooldown under the reference rule: `threshold` consecutive failures cool it
/// for `duration`; any success resets the streak. Hints are ignored, there is no half-open
/// state, no trial and no last resort.
#[derive(Debug)]
pub(crate) struct ReferenceRule {
    threshold: u32,
    duration: Duration,
    state: Guarded<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Consecutive failures (those while cooling count too, and are discarded at expiry).
    failures: u32,
    /// The cooldown ends then.
    until: Option<Instant>,
    /// Failed trials and probation taken over from a snapshot (an adaptive breaker's): the
    /// reference rule has no use for them, and gives them back as it took them over.
    carried: (u32, u32),
}

impl Clean for State {
    fn is_clean(&self) -> bool {
        self.failures == 0 && self.until.is_none() && self.carried == (0, 0)
    }
}

impl State {
    /// Whether still cooling at `now`; clears the cooldown and its streak otherwise.
    fn still_cooling(&mut self, now: Instant, until: Instant) -> bool {
        if now < until {
            return true;
        }
        self.until = None;
        self.failures = 0;
        false
    }
}

impl ReferenceRule {
    /// A clean state (`threshold` and `duration` validated non-zero).
    pub(crate) fn new(threshold: u32, duration: Duration) -> ReferenceRule {
        ReferenceRule { threshold, duration, state: Guarded::default() }
    }

    #[cfg(test)]
    pub(super) fn is_clean(&self) -> bool {
        self.state.is_clean()
    }

    /// When the cooldown ends, if cooling now. An expired cooldown is cleared, with its streak.
    pub(super) fn cooling_until(&self) -> Option<Instant> {
        let mut state = self.state.dirty()?;
        let now = Instant::now();
        state.until.filter(|&until| state.still_cooling(now, until))
    }

    /// Whether a candidate whose turn has come may be sent to now; a clean state answers from
    /// one atomic load.
    #[inline]
    pub(super) fn admit(&self) -> Result<(), Skip> {
        match self.cooling_until() {
            Some(until) => Err(Skip::CoolingUntil(until)),
            None => Ok(()),
        }
    }

    /// The cooldown left and the streak (see [`Health::export`](super::Health::export)).
    pub(super) fn export(&self) -> Kept {
        let Some(state) = self.state.dirty() else { return Kept::default() };
        let now = Instant::now();
        Kept {
            open_for: state.until.map(|until| until.saturating_duration_since(now)),
            failed_trials: state.carried.0,
            failures: state.failures,
            probation: state.carried.1,
        }
    }

    /// Takes `kept` over.
    pub(super) fn import(&self, kept: &Kept) {
        let now = Instant::now();
        let mut state = self.state.lock();
        state.until = kept.open_for.map(|d| deadline(now, d));
        state.carried = (kept.failed_trials, kept.probation);
        state.failures = kept.failures;
    }

    /// Learns from an attempt that completed just now; `Neutral` changes nothing.
    pub(super) fn record(&self, evidence: Evidence) {
        match evidence {
            Evidence::Failure => self.record_failure(),
            Evidence::Success => self.record_success(),
            Evidence::Neutral => {}
        }
    }

    fn record_failure(&self) {
        let now = Instant::now();
        let mut state = self.state.lock();
        if let Some(until) = state.until {
            if state.still_cooling(now, until) {
                // Failures while cooling count but never extend or restart the cooldown.
                state.failures = state.failures.saturating_add(1);
                return;
            }
        }
        state.failures = state.failures.saturating_add(1);
        if state.failures >= self.threshold {
            state.failures = 0;
            state.until = Some(now + self.duration);
        }
    }

    /// The streak restarts. An active cooldown is not ended.
    fn record_success(&self) {
        if let Some(mut state) = self.state.dirty() {
            state.failures = 0;
        }
    }
}

//! The adaptive breaker (`Cooldown::adaptive`): closed → open(until) → half-open (one trial
//! permit, a guard released on drop) → closed, with an open time that is the hint when given,
//! else grows from 250 ms (×2, ±20 % jitter) up to the cap on each failed trial.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::cell::{Clean, Guarded};
use super::state::{BreakerState, Kept, deadline};
use crate::health::cooldown::Adaptive;
use crate::health::random::Jitter;
use crate::health::skip::Skip;
use crate::judging::classify::Evidence;

/// A candidate that may be sent to now: with a trial permit when it is the breaker's trial.
#[derive(Debug)]
pub(crate) enum Admit<'a> {
    /// Closed (or no rule): send, no permit.
    Closed,
    /// The one trial of a half-open breaker.
    Trial(Permit<'a>),
}

/// The one trial permit of a half-open breaker. Dropping it without an outcome recorded (the
/// request's future was dropped) frees the trial for the next request.
#[derive(Debug)]
pub(crate) struct Permit<'a> {
    breaker: &'a Breaker,
    epoch: u64,
}

impl Permit<'_> {
    /// Which trial this is, for [`Health::record`](super::Health::record).
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.breaker.release(self.epoch);
    }
}

/// One endpoint's adaptive breaker, with its settings.
#[derive(Debug)]
pub(crate) struct Breaker {
    rule: Adaptive,
    state: Guarded<State>,
    /// Wakes the requests waiting for the trial in flight to end ([`Breaker::trial_ended`]).
    ended: Notify,
    /// The eligibility hook's latest answer for this endpoint (true until it says otherwise).
    eligible: AtomicBool,
}

#[derive(Debug, Default)]
struct State {
    /// Consecutive failures while closed.
    failures: u32,
    /// Open until then, half-open after.
    until: Option<Instant>,
    /// When it last opened.
    opened: Option<Instant>,
    /// The open time is a hint the provider gave (a `Retry-After`, a quota): a pause it asked
    /// for, which neither a good answer nor a good probe ends early.
    hinted: bool,
    /// Failed trials since the growth was last reset; the open time without a hint is
    /// 250 ms × 2^level, capped.
    level: u32,
    /// Successes still needed, after a successful trial, before `level` is reset; while
    /// non-zero one failure opens the breaker again.
    probation: u32,
    /// The epoch of the trial permit in flight.
    trial: Option<u64>,
    epochs: u64,
    /// The jitter's generator, seeded on first use (from the breaker's address).
    rng: Option<Jitter>,
}

impl Clean for State {
    fn is_clean(&self) -> bool {
        self.failures == 0
            && self.until.is_none()
            && self.level == 0
            && self.probation == 0
            && self.trial.is_none()
    }
}

/// One attempt's outcome, as [`Breaker::record`] takes it.
#[derive(Clone, Copy, Debug)]
struct Outcome {
    evidence: Evidence,
    hint: Option<Duration>,
    /// The epoch of the trial permit the attempt held, if any.
    trial: Option<u64>,
}

impl Breaker {
    /// A closed breaker with nothing to forget, under `rule`.
    pub(crate) fn new(rule: Adaptive) -> Breaker {
        Breaker { rule, state: Guarded::default(), ended: Notify::new(), eligible: AtomicBool::new(true) }
    }

    #[cfg(test)]
    pub(super) fn is_clean(&self) -> bool {
        self.state.is_clean()
    }

    /// When its open time ends, if open now; a half-open breaker is not cooling.
    pub(super) fn cooling_until(&self) -> Option<Instant> {
        let state = self.state.dirty()?;
        let now = Instant::now();
        state.until.filter(|&until| now < until)
    }

    /// The open time left, the failed trials that grew it, the failure streak and the
    /// probation (see [`Health::export`](super::Health::export)).
    pub(super) fn export(&self) -> Kept {
        let Some(state) = self.state.dirty() else { return Kept::default() };
        let now = Instant::now();
        Kept {
            open_for: state.until.map(|until| until.saturating_duration_since(now)),
            failed_trials: state.level,
            failures: state.failures,
            probation: state.probation,
        }
    }

    /// Takes `kept` over (see [`Health::import`](super::Health::import)).
    pub(super) fn import(&self, kept: &Kept) {
        let now = Instant::now();
        let mut state = self.state.lock();
        state.until = kept.open_for.map(|d| deadline(now, d));
        state.level = kept.failed_trials;
        state.failures = kept.failures;
        state.probation = kept.probation;
        state.trial = None;
    }

    /// See [`Health::saw_eligibility`](super::Health::saw_eligibility): one atomic load when the
    /// answer did not change.
    pub(super) fn saw_eligibility(&self, eligible: bool) {
        if self.eligible.load(Ordering::Relaxed) == eligible {
            return;
        }
        self.eligible.store(eligible, Ordering::Relaxed);
        if !eligible || self.state.is_clean() {
            return;
        }
        let now = Instant::now();
        let mut state = self.state.lock();
        if state.open_untried(now) {
            state.until = Some(now);
        }
    }

    /// See [`Health::saw_good`](super::Health::saw_good).
    pub(super) fn saw_good(&self, last_good: impl FnOnce() -> Option<Instant>) {
        if self.state.is_clean() {
            return;
        }
        // Asked outside the lock: a source's answer may take its own.
        let Some(at) = last_good() else { return };
        let now = Instant::now();
        let mut state = self.state.lock();
        if state.open_untried(now) && !state.hinted && state.opened.is_some_and(|opened| opened < at) {
            state.until = Some(now);
        }
    }

    /// Whether a candidate whose turn has come may be sent to now, and as what; or why not.
    /// A clean (closed) breaker answers from one atomic load.
    #[inline]
    pub(super) fn admit(&self) -> Result<Admit<'_>, Skip> {
        let Some(mut state) = self.state.dirty() else { return Ok(Admit::Closed) };
        let now = Instant::now();
        let admitted = match state.until {
            None => Ok(None),
            Some(until) if now < until => Err(Skip::Open { until }),
            Some(_) if state.trial.is_some() => Err(Skip::HalfOpenBusy),
            Some(_) => Ok(Some(state.take_trial())),
        };
        drop(state);
        admitted.map(|epoch| self.admission(epoch))
    }

    /// Whether [`admit`](Self::admit) would admit without a trial permit (closed).
    #[inline]
    pub(super) fn admits_freely(&self) -> bool {
        self.state.dirty().is_none_or(|state| state.until.is_none())
    }

    /// The last resort: the trial now, even before the open time is over, unless another
    /// request holds the trial permit.
    pub(super) fn force_trial(&self) -> Option<Admit<'_>> {
        let mut state = self.state.lock();
        let epoch = match state.until {
            None => None,
            Some(_) if state.trial.is_some() => return None,
            Some(_) => Some(state.take_trial()),
        };
        drop(state);
        Some(self.admission(epoch))
    }

    /// When its open time ends (in the past when half-open), or `None` when closed.
    pub(super) fn open_until(&self) -> Option<Instant> {
        self.state.dirty()?.until
    }

    fn admission(&self, trial: Option<u64>) -> Admit<'_> {
        match trial {
            Some(epoch) => Admit::Trial(Permit { breaker: self, epoch }),
            None => Admit::Closed,
        }
    }

    /// Frees the trial permit `epoch`, unless an outcome already ended that trial.
    fn release(&self, epoch: u64) {
        let mut state = self.state.lock();
        if state.trial == Some(epoch) {
            state.trial = None;
            drop(state);
            self.ended.notify_waiters();
        }
    }

    /// Resolves when the trial in flight ends (its outcome is recorded, or its permit is
    /// dropped), at once when none is in flight. The caller bounds the wait.
    pub(super) async fn trial_ended(&self) {
        let ended = self.ended.notified();
        let mut ended = std::pin::pin!(ended);
        // Registered before the state is read, so an end between the two is not missed.
        ended.as_mut().enable();
        if self.state.lock().trial.is_none() {
            return;
        }
        ended.await;
    }

    /// See [`Health::record`](super::Health::record).
    pub(super) fn record(
        &self,
        evidence: Evidence,
        hint: Option<Duration>,
        trial: Option<u64>,
    ) -> Option<BreakerState> {
        if evidence == Evidence::Neutral
            || (evidence == Evidence::Success && hint.is_none() && self.state.is_clean())
        {
            return None;
        }
        let seed = std::ptr::from_ref(self) as usize as u64;
        let mut state = self.state.lock();
        let in_flight = state.trial.is_some();
        let change = state.learn(self.rule, Outcome { evidence, hint, trial }, Instant::now(), seed);
        let ended = in_flight && state.trial.is_none();
        drop(state);
        if ended {
            self.ended.notify_waiters();
        }
        change
    }
}

impl State {
    fn take_trial(&mut self) -> u64 {
        self.epochs = self.epochs.wrapping_add(1);
        self.trial = Some(self.epochs);
        self.epochs
    }

    /// Whether its open time runs at `now` and no trial is in flight: what evidence that the
    /// provider is good may cut short (its next request is then the trial).
    fn open_untried(&self, now: Instant) -> bool {
        self.until.is_some_and(|until| now < until) && self.trial.is_none()
    }

    /// The breaker's step for one outcome (not `Neutral`) at `now`.
    ///
    /// - Open or half-open, and not the trial's outcome (an attempt admitted before the breaker
    ///   opened, or a trial a hint has since superseded): only a hint counts, and it can only
    ///   lengthen the open time (it ends the trial in flight: the provider asked for a pause).
    /// - Otherwise a hint opens the breaker for exactly that long (the growth is unchanged).
    /// - Closed: failures in a row open it after 3 (after 1 while on probation, as a failed
    ///   trial); a success resets the streak and counts towards forgetting the growth.
    /// - The trial's outcome: a success closes the breaker on probation, a failure opens it
    ///   again, for longer.
    fn learn(&mut self, rule: Adaptive, outcome: Outcome, now: Instant, seed: u64) -> Option<BreakerState> {
        let Outcome { evidence, hint, trial } = outcome;
        let is_trial = trial.is_some() && self.trial == trial;
        if let Some(until) = self.until.filter(|_| !is_trial) {
            // A good answer while open (an attempt admitted before it opened, a last resort
            // beside the trial) ends the open time: the next request is its trial.
            if evidence == Evidence::Success && hint.is_none() {
                if self.open_untried(now) && !self.hinted {
                    self.until = Some(now);
                }
                return None;
            }
            let hint = hint?;
            let later = deadline(now, hint);
            if later <= until {
                return None;
            }
            self.until = Some(later);
            self.trial = None;
            self.hinted = true;
            // Half-open (its open time over) → open: a transition. Open → open longer: not one.
            return (until <= now).then_some(BreakerState::Open { duration: hint });
        }
        if let Some(hint) = hint {
            let state = self.open_for(now, hint);
            self.hinted = true;
            return Some(state);
        }
        let closed = self.until.is_none();
        match (evidence, closed) {
            (Evidence::Failure, true) => {
                self.failures = self.failures.saturating_add(1);
                if self.probation == 0 && self.failures < Adaptive::TRIP_AFTER {
                    return None;
                }
                if self.probation != 0 {
                    self.level = self.level.saturating_add(1);
                }
                let open = self.open_time(rule, seed);
                Some(self.open_for(now, open))
            }
            (Evidence::Failure, false) => {
                self.level = self.level.saturating_add(1);
                let open = self.open_time(rule, seed);
                Some(self.open_for(now, open))
            }
            (Evidence::Success, true) => {
                self.failures = 0;
                if self.probation != 0 {
                    self.probation -= 1;
                    if self.probation == 0 {
                        self.level = 0;
                    }
                }
                None
            }
            (Evidence::Success, false) => {
                self.until = None;
                self.trial = None;
                self.failures = 0;
                // The trial is the first of the successes in a row that forget the growth.
                self.probation = Adaptive::READMIT_AFTER - 1;
                if self.probation == 0 {
                    self.level = 0;
                }
                Some(BreakerState::Closed)
            }
            (Evidence::Neutral, _) => None,
        }
    }

    fn open_for(&mut self, now: Instant, open: Duration) -> BreakerState {
        self.until = Some(deadline(now, open));
        self.opened = Some(now);
        self.hinted = false;
        self.trial = None;
        self.failures = 0;
        self.probation = 0;
        BreakerState::Open { duration: open }
    }

    /// 250 ms × 2^level, capped at `max_open`, with ±20 % jitter, never above the cap.
    fn open_time(&mut self, rule: Adaptive, seed: u64) -> Duration {
        let base = Adaptive::FIRST_OPEN.saturating_mul(1 << self.level.min(20)).min(rule.max_open);
        let rng =
            self.rng.get_or_insert_with(|| Jitter::from_seed(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1));
        let per_mille = 800 + rng.below(401) as u32;
        (base / 1000).saturating_mul(per_mille).min(rule.max_open)
    }
}

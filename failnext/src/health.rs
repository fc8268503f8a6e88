//! Health: one endpoint's breaker (or reference cooldown), fed by the evidence the judge draws
//! from each attempt, under the endpoint's [`Cooldown`] rule.
//!
//! Two rules share one small state:
//!
//! - the reference rule (`Cooldown::new`): a streak of failures, and the instant a cooldown
//!   ends; exactly failnext 0.1;
//! - the adaptive breaker (`Cooldown::adaptive`): closed → open(until) → half-open (one trial
//!   permit, a guard released on drop) → closed, with an open time that is the hint when given,
//!   else grows from 250 ms (×2, ±20 % jitter) up to the cap on each failed trial.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::classify::Evidence;
use crate::cooldown::{Adaptive, Cooldown, Rule};
use crate::select::Skip;

/// A breaker's new state, as [`Event::Breaker`](crate::Event::Breaker) reports it.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BreakerState {
    /// The endpoint takes no traffic for this long from now (the hint, or the breaker's own
    /// open time), except a last-resort trial.
    Open {
        /// How long it stays open.
        duration: Duration,
    },
    /// A request took the endpoint's one trial permit: its open time is over, or the last
    /// resort sends it a trial early.
    HalfOpen,
    /// The endpoint takes its full traffic again: its trial succeeded.
    Closed,
}

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
    health: &'a Health,
    epoch: u64,
}

impl Permit<'_> {
    /// Which trial this is, for [`Health::record`].
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.health.release(self.epoch);
    }
}

/// The breaker (or cooldown) state of one endpoint, shared by every request of one `Failover`,
/// with the rule that drives it.
///
/// The lock is held only for a few field updates; no callback ever runs under it. A healthy
/// endpoint (closed, no streak, nothing to forget) is recognised from one atomic load, without
/// the lock, so the hot path of a healthy provider costs no locking. With cooldown disabled
/// nothing is recorded and nothing is ever skipped.
#[derive(Debug)]
pub(crate) struct Health {
    rule: Rule,
    state: Mutex<State>,
    /// False only when the state is clean: closed, no failures, nothing to forget.
    dirty: AtomicBool,
    /// Wakes the requests waiting for the trial in flight to end ([`Health::trial_ended`]).
    ended: Notify,
    /// The eligibility hook's latest answer for this endpoint (true until it says otherwise).
    eligible: AtomicBool,
}

#[derive(Debug, Default)]
struct State {
    /// Consecutive failures while closed (not cooling).
    failures: u32,
    /// Reference: the cooldown ends then. Adaptive: open until then, half-open after.
    until: Option<Instant>,
    /// Adaptive: failed trials since the growth was last reset; the open time without a hint
    /// is 250 ms × 2^level, capped.
    level: u32,
    /// Adaptive: successes still needed, after a successful trial, before `level` is reset;
    /// while non-zero one failure opens the breaker again.
    probation: u32,
    /// Adaptive: the epoch of the trial permit in flight.
    trial: Option<u64>,
    epochs: u64,
    /// Adaptive: the jitter's xorshift state, seeded on first use.
    rng: u64,
}

impl Health {
    /// A clean state under `cooldown` (validated: threshold and duration non-zero).
    pub(crate) fn new(cooldown: Cooldown) -> Health {
        Health {
            rule: cooldown.rule(),
            state: Mutex::default(),
            dirty: AtomicBool::new(false),
            ended: Notify::new(),
            eligible: AtomicBool::new(true),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // No code panics while holding the lock, but a poisoned state is still a valid state.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn is_clean(&self) -> bool {
        !self.dirty.load(Ordering::Acquire)
    }

    /// Keeps the lock-free flag in step with the state; called with the lock held.
    fn publish(&self, state: &State) {
        let dirty = state.failures != 0
            || state.until.is_some()
            || state.level != 0
            || state.probation != 0
            || state.trial.is_some();
        self.dirty.store(dirty, Ordering::Release);
    }

    /// When the endpoint's cooldown (or open breaker) ends, if it is skipped now. An expired
    /// reference cooldown is cleared, with its streak; a half-open breaker is not cooling.
    pub(crate) fn cooling_until(&self) -> Option<Instant> {
        if self.is_clean() {
            return None;
        }
        let now = Instant::now();
        match self.rule {
            Rule::Disabled => None,
            Rule::Reference { .. } => {
                let mut state = self.lock();
                let cooling = state.until.filter(|&until| state.still_cooling(now, until));
                self.publish(&state);
                cooling
            }
            Rule::Adaptive(_) => self.lock().until.filter(|&until| now < until),
        }
    }

    /// What survives a restart: the open time left (the reference cooldown's too), the failed
    /// trials that grew it, the failure streak and the probation. A trial in flight does not.
    pub(crate) fn export(&self) -> Kept {
        if self.is_clean() {
            return Kept::default();
        }
        let now = Instant::now();
        let state = self.lock();
        Kept {
            open_for: state.until.map(|until| until.saturating_duration_since(now)),
            failed_trials: state.level,
            failures: state.failures,
            probation: state.probation,
        }
    }

    /// Takes `kept` over (into a breaker that has seen nothing yet, usually): an open time that
    /// is over by now makes the breaker half-open, so the next request is its trial.
    pub(crate) fn import(&self, kept: &Kept) {
        if matches!(self.rule, Rule::Disabled) {
            return;
        }
        let now = Instant::now();
        let mut state = self.lock();
        state.until = kept.open_for.map(|d| deadline(now, d));
        state.level = kept.failed_trials;
        state.failures = kept.failures;
        state.probation = kept.probation;
        state.trial = None;
        self.publish(&state);
    }

    /// Learns the eligibility hook's answer for this endpoint at a request's start. When it
    /// turns from ineligible to eligible (a monitor saw the provider fit again), an open
    /// breaker's open time ends now: the next request takes its trial, instead of waiting out
    /// an open time that may have grown to the cap while the provider was down. Adaptive rule
    /// only; one atomic load when the answer did not change.
    pub(crate) fn saw_eligibility(&self, eligible: bool) {
        if self.eligible.load(Ordering::Relaxed) == eligible {
            return;
        }
        self.eligible.store(eligible, Ordering::Relaxed);
        if !eligible || self.is_clean() || !matches!(self.rule, Rule::Adaptive(_)) {
            return;
        }
        let now = Instant::now();
        let mut state = self.lock();
        if state.until.is_some_and(|until| now < until) && state.trial.is_none() {
            state.until = Some(now);
        }
        self.publish(&state);
    }

    /// Whether a candidate whose turn has come may be sent to now, and as what; or why not.
    ///
    /// Healthy (clean) endpoints are admitted from one atomic load.
    pub(crate) fn admit(&self) -> Result<Admit<'_>, Skip> {
        if self.is_clean() {
            return Ok(Admit::Closed);
        }
        match self.rule {
            Rule::Disabled => Ok(Admit::Closed),
            Rule::Reference { .. } => match self.cooling_until() {
                Some(until) => Err(Skip::CoolingUntil(until)),
                None => Ok(Admit::Closed),
            },
            Rule::Adaptive(_) => {
                let now = Instant::now();
                let mut state = self.lock();
                let admitted = match state.until {
                    None => Ok(None),
                    Some(until) if now < until => Err(Skip::Open { until }),
                    Some(_) if state.trial.is_some() => Err(Skip::HalfOpenBusy),
                    Some(_) => Ok(Some(state.take_trial())),
                };
                self.publish(&state);
                drop(state);
                admitted.map(|epoch| self.admission(epoch))
            }
        }
    }

    /// The last resort, for an endpoint skipped as open: its trial now, even before its open
    /// time is over, unless another request holds its trial permit. Adaptive rule only.
    pub(crate) fn force_trial(&self) -> Option<Admit<'_>> {
        let Rule::Adaptive(_) = self.rule else { return None };
        let mut state = self.lock();
        let epoch = match state.until {
            None => None,
            Some(_) if state.trial.is_some() => return None,
            Some(_) => Some(state.take_trial()),
        };
        self.publish(&state);
        drop(state);
        Some(self.admission(epoch))
    }

    /// When its open time ends (in the past when half-open), or `None` when closed.
    pub(crate) fn open_until(&self) -> Option<Instant> {
        if self.is_clean() {
            return None;
        }
        match self.rule {
            Rule::Adaptive(_) => self.lock().until,
            _ => None,
        }
    }

    fn admission(&self, trial: Option<u64>) -> Admit<'_> {
        match trial {
            Some(epoch) => Admit::Trial(Permit { health: self, epoch }),
            None => Admit::Closed,
        }
    }

    /// Frees the trial permit `epoch`, unless an outcome already ended that trial.
    fn release(&self, epoch: u64) {
        let mut state = self.lock();
        if state.trial == Some(epoch) {
            state.trial = None;
            self.publish(&state);
            drop(state);
            self.ended.notify_waiters();
        }
    }

    /// Resolves when the trial in flight ends (its outcome is recorded, or its permit is
    /// dropped), at once when none is in flight. The caller bounds the wait.
    pub(crate) async fn trial_ended(&self) {
        let ended = self.ended.notified();
        let mut ended = std::pin::pin!(ended);
        // Registered before the state is read, so an end between the two is not missed.
        ended.as_mut().enable();
        if self.lock().trial.is_none() {
            return;
        }
        ended.await;
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
        match self.rule {
            Rule::Disabled => None,
            Rule::Reference { threshold, duration } => {
                match evidence {
                    Evidence::Failure => self.record_failure(threshold, duration),
                    Evidence::Success => self.record_success(),
                    Evidence::Neutral => {}
                }
                None
            }
            Rule::Adaptive(rule) => {
                if evidence == Evidence::Neutral
                    || (evidence == Evidence::Success && hint.is_none() && self.is_clean())
                {
                    return None;
                }
                let seed = std::ptr::from_ref(self) as usize as u64;
                let mut state = self.lock();
                let in_flight = state.trial.is_some();
                let change = state.learn(rule, Outcome { evidence, hint, trial }, Instant::now(), seed);
                self.publish(&state);
                let ended = in_flight && state.trial.is_none();
                drop(state);
                if ended {
                    self.ended.notify_waiters();
                }
                change
            }
        }
    }

    // ----- the reference rule, exactly as in 0.1 -----

    fn record_failure(&self, threshold: u32, duration: Duration) {
        let now = Instant::now();
        let mut state = self.lock();
        if let Some(until) = state.until {
            if state.still_cooling(now, until) {
                // Failures while cooling count but never extend or restart the cooldown.
                state.failures = state.failures.saturating_add(1);
                self.publish(&state);
                return;
            }
        }
        state.failures = state.failures.saturating_add(1);
        if state.failures >= threshold {
            state.failures = 0;
            state.until = Some(now + duration);
        }
        self.publish(&state);
    }

    /// The streak restarts. An active cooldown is not ended.
    fn record_success(&self) {
        if self.is_clean() {
            return;
        }
        let mut state = self.lock();
        state.failures = 0;
        self.publish(&state);
    }
}

/// A breaker's state as it survives a restart (see [`Health::export`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Kept {
    /// How long it stays open (or cooling) from now; `Some(0)`: half-open.
    pub(crate) open_for: Option<Duration>,
    pub(crate) failed_trials: u32,
    pub(crate) failures: u32,
    pub(crate) probation: u32,
}

/// One attempt's outcome, as [`Health::record`] takes it.
#[derive(Clone, Copy, Debug)]
struct Outcome {
    evidence: Evidence,
    hint: Option<Duration>,
    /// The epoch of the trial permit the attempt held, if any.
    trial: Option<u64>,
}

impl State {
    /// Reference rule: whether still cooling at `now`; clears the cooldown and its streak
    /// otherwise.
    fn still_cooling(&mut self, now: Instant, until: Instant) -> bool {
        if now < until {
            return true;
        }
        self.until = None;
        self.failures = 0;
        false
    }

    fn take_trial(&mut self) -> u64 {
        self.epochs = self.epochs.wrapping_add(1);
        self.trial = Some(self.epochs);
        self.epochs
    }

    /// The adaptive rule's step for one outcome (not `Neutral`) at `now`.
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
            let hint = hint?;
            let later = deadline(now, hint);
            if later <= until {
                return None;
            }
            self.until = Some(later);
            self.trial = None;
            // Half-open (its open time over) → open: a transition. Open → open longer: not one.
            return (until <= now).then_some(BreakerState::Open { duration: hint });
        }
        if let Some(hint) = hint {
            return Some(self.open_for(now, hint));
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
        self.trial = None;
        self.failures = 0;
        self.probation = 0;
        BreakerState::Open { duration: open }
    }

    /// 250 ms × 2^level, capped at `max_open`, with ±20 % jitter, never above the cap.
    fn open_time(&mut self, rule: Adaptive, seed: u64) -> Duration {
        let base = Adaptive::FIRST_OPEN.saturating_mul(1 << self.level.min(20)).min(rule.max_open);
        let per_mille = 800 + (self.random(seed) % 401) as u32;
        (base / 1000).saturating_mul(per_mille).min(rule.max_open)
    }

    /// xorshift64, seeded from the Health's address on first use: jitter, not cryptography.
    fn random(&mut self, seed: u64) -> u64 {
        if self.rng == 0 {
            self.rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        }
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x
    }
}

/// `now + d`, saturating far in the future.
fn deadline(now: Instant, d: Duration) -> Instant {
    now.checked_add(d).unwrap_or_else(|| now + Duration::from_secs(u64::from(u32::MAX)))
}

#[cfg(test)]
#[allow(unused_must_use, reason = "tests drive Health::record without emitting")]
mod tests {
    use super::*;

    const MIN: Duration = Duration::from_secs(60);
    const MS: Duration = Duration::from_millis(1);

    fn health(threshold: u32) -> Health {
        Health::new(Cooldown::new(threshold, MIN))
    }

    fn is_cooling(h: &Health) -> bool {
        h.cooling_until().is_some()
    }

    #[tokio::test(start_paused = true)]
    async fn trips_at_threshold_and_expires_exactly_at_deadline() {
        let h = health(2);
        h.record(Evidence::Failure, None, None);
        assert!(!is_cooling(&h));
        h.record(Evidence::Failure, None, None);
        assert_eq!(h.cooling_until(), Some(Instant::now() + MIN));
        tokio::time::advance(MIN - Duration::from_millis(1)).await;
        assert!(is_cooling(&h));
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(!is_cooling(&h), "admitted at exactly cooling-until");
    }

    #[tokio::test(start_paused = true)]
    async fn success_resets_streak_but_not_active_cooldown() {
        let h = health(2);
        h.record(Evidence::Failure, None, None);
        h.record(Evidence::Success, None, None);
        h.record(Evidence::Failure, None, None);
        assert!(!is_cooling(&h));
        h.record(Evidence::Failure, None, None);
        assert!(is_cooling(&h));
        h.record(Evidence::Success, None, None);
        assert!(is_cooling(&h));
    }

    #[tokio::test(start_paused = true)]
    async fn failures_while_cooling_do_not_extend_and_are_discarded_at_expiry() {
        let h = health(3);
        for _ in 0..3 {
            h.record(Evidence::Failure, None, None);
        }
        tokio::time::advance(Duration::from_secs(30)).await;
        h.record(Evidence::Failure, None, None);
        h.record(Evidence::Failure, None, None);
        tokio::time::advance(Duration::from_secs(30)).await;
        assert!(!is_cooling(&h), "not extended by failures while cooling");
        h.record(Evidence::Failure, None, None);
        assert!(!is_cooling(&h), "fresh streak after expiry: the two failures while cooling are gone");
    }

    #[tokio::test(start_paused = true)]
    async fn disabled_records_nothing() {
        let h = Health::new(Cooldown::disabled());
        for _ in 0..10 {
            h.record(Evidence::Failure, Some(MIN), None);
        }
        assert!(!is_cooling(&h));
        assert!(!h.dirty.load(Ordering::Acquire));
    }

    #[tokio::test(start_paused = true)]
    async fn reference_rule_ignores_hints_and_neutral_evidence_and_reports_no_state() {
        let h = health(2);
        assert_eq!(h.record(Evidence::Failure, Some(MIN), None), None);
        assert!(!is_cooling(&h), "a hint does not trip the reference rule");
        h.record(Evidence::Neutral, None, None);
        assert_eq!(h.record(Evidence::Failure, Some(Duration::from_secs(1)), None), None);
        assert_eq!(
            h.cooling_until(),
            Some(Instant::now() + MIN),
            "neutral kept the streak; the hint is ignored"
        );
        assert!(matches!(h.admit(), Err(Skip::CoolingUntil(_))));
        assert!(h.force_trial().is_none(), "no last resort under the reference rule");
    }

    // ----- the adaptive breaker -----

    fn breaker() -> Health {
        Health::new(Cooldown::adaptive())
    }

    fn open_for(state: Option<BreakerState>) -> Duration {
        match state {
            Some(BreakerState::Open { duration }) => duration,
            other => panic!("not opened: {other:?}"),
        }
    }

    fn trial(h: &Health) -> Permit<'_> {
        match h.admit() {
            Ok(Admit::Trial(permit)) => permit,
            other => panic!("no trial: {other:?}"),
        }
    }

    fn within(d: Duration, nominal: Duration) -> bool {
        d >= nominal * 8 / 10 && d <= nominal * 12 / 10
    }

    #[tokio::test(start_paused = true)]
    async fn three_failures_open_for_about_250_ms_and_a_healthy_breaker_stays_clean() {
        let h = breaker();
        h.record(Evidence::Success, None, None);
        assert!(!h.dirty.load(Ordering::Acquire), "success on a clean breaker takes no lock");
        assert_eq!(h.record(Evidence::Failure, None, None), None);
        assert_eq!(h.record(Evidence::Failure, None, None), None);
        assert!(matches!(h.admit(), Ok(Admit::Closed)));
        let open = open_for(h.record(Evidence::Failure, None, None));
        assert!(within(open, Duration::from_millis(250)), "{open:?}");
        assert!(matches!(h.admit(), Err(Skip::Open { .. })));
        assert!(is_cooling(&h));
    }

    #[tokio::test(start_paused = true)]
    async fn a_hint_opens_at_once_for_exactly_that_long() {
        let h = breaker();
        let hint = Duration::from_secs(5);
        assert_eq!(
            h.record(Evidence::Failure, Some(hint), None),
            Some(BreakerState::Open { duration: hint })
        );
        assert_eq!(h.cooling_until(), Some(Instant::now() + hint));
        h.record(Evidence::Failure, None, None);
        h.record(Evidence::Success, None, None);
        assert_eq!(h.cooling_until(), Some(Instant::now() + hint), "late outcomes change nothing");
        tokio::time::advance(hint).await;
        assert!(!is_cooling(&h));
        let _trial = trial(&h);
    }

    #[tokio::test(start_paused = true)]
    async fn neutral_changes_nothing() {
        let h = breaker();
        h.record(Evidence::Failure, None, None);
        h.record(Evidence::Failure, None, None);
        for _ in 0..5 {
            assert_eq!(h.record(Evidence::Neutral, Some(MIN), None), None);
        }
        assert!(
            h.record(Evidence::Failure, None, None).is_some(),
            "the streak survived the neutral outcomes"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn one_trial_at_a_time_and_a_dropped_permit_frees_it() {
        let h = breaker();
        let open = open_for(h.record(Evidence::Failure, Some(Duration::from_secs(1)), None));
        tokio::time::advance(open).await;
        let permit = trial(&h);
        assert!(matches!(h.admit(), Err(Skip::HalfOpenBusy)));
        assert!(h.force_trial().is_none(), "the last resort does not take a held permit");
        drop(permit);
        let _again = trial(&h);
    }

    #[tokio::test(start_paused = true)]
    async fn failed_trials_grow_the_open_time_to_the_cap_and_a_good_trial_closes() {
        let h = breaker();
        let mut open = open_for(h.record(Evidence::Failure, Some(MS), None));
        let mut seen = Vec::new();
        for _ in 0..12 {
            tokio::time::advance(open).await;
            let permit = trial(&h);
            open = open_for(h.record(Evidence::Failure, None, Some(permit.epoch())));
            drop(permit);
            seen.push(open);
        }
        let nominal = |k: u32| Duration::from_millis(250 * (1 << k)).min(Duration::from_secs(30));
        for (k, d) in seen.iter().enumerate() {
            let nominal = nominal(k as u32 + 1);
            assert!(within(*d, nominal) && *d <= Duration::from_secs(30), "trial {k}: {d:?} vs {nominal:?}");
        }
        tokio::time::advance(open).await;
        let permit = trial(&h);
        assert_eq!(h.record(Evidence::Success, None, Some(permit.epoch())), Some(BreakerState::Closed));
        drop(permit);
        assert!(matches!(h.admit(), Ok(Admit::Closed)));
    }

    #[tokio::test(start_paused = true)]
    async fn after_a_good_trial_one_failure_reopens_until_three_successes_in_a_row() {
        let h = breaker();
        for _ in 0..3 {
            h.record(Evidence::Failure, None, None);
        }
        let first = h.cooling_until().unwrap();
        tokio::time::advance(first - Instant::now()).await;
        let permit = trial(&h);
        assert_eq!(h.record(Evidence::Success, None, Some(permit.epoch())), Some(BreakerState::Closed));
        drop(permit);
        let open = open_for(h.record(Evidence::Failure, None, None));
        assert!(within(open, Duration::from_millis(500)), "a relapse is a failed trial: {open:?}");
        tokio::time::advance(open).await;
        let permit = trial(&h);
        h.record(Evidence::Success, None, Some(permit.epoch()));
        drop(permit);
        h.record(Evidence::Success, None, None);
        h.record(Evidence::Success, None, None);
        assert!(!h.dirty.load(Ordering::Acquire), "three successes in a row forget everything");
        assert_eq!(h.record(Evidence::Failure, None, None), None, "back to three failures");
    }

    #[tokio::test(start_paused = true)]
    async fn max_open_caps_the_open_time_but_not_a_hint() {
        let h = Health::new(Cooldown::adaptive().max_open(Duration::from_millis(100)));
        for _ in 0..2 {
            h.record(Evidence::Failure, None, None);
        }
        assert!(open_for(h.record(Evidence::Failure, None, None)) <= Duration::from_millis(100));
        tokio::time::advance(Duration::from_millis(100)).await;
        let permit = trial(&h);
        assert_eq!(open_for(h.record(Evidence::Failure, Some(MIN), Some(permit.epoch()))), MIN);
    }

    #[tokio::test(start_paused = true)]
    async fn the_last_resort_takes_the_trial_of_an_open_breaker_early() {
        let h = breaker();
        h.record(Evidence::Failure, Some(MIN), None);
        assert!(h.open_until().is_some());
        let Some(Admit::Trial(permit)) = h.force_trial() else { panic!("no forced trial") };
        assert!(matches!(h.admit(), Err(Skip::Open { .. })), "others still skip it");
        assert_eq!(
            h.record(Evidence::Success, None, Some(permit.epoch())),
            Some(BreakerState::Closed),
            "the trial's outcome"
        );
        drop(permit);
        assert!(matches!(h.admit(), Ok(Admit::Closed)));
    }

    #[tokio::test(start_paused = true)]
    async fn while_open_or_half_open_only_the_trials_own_outcome_moves_the_breaker() {
        let h = breaker();
        let open = open_for(h.record(Evidence::Failure, Some(Duration::from_secs(1)), None));
        // Attempts admitted before it opened finish late: older news, ignored.
        assert_eq!(h.record(Evidence::Failure, None, None), None);
        assert_eq!(h.record(Evidence::Success, None, None), None);
        tokio::time::advance(open).await;
        assert_eq!(h.record(Evidence::Failure, None, None), None, "half-open, no trial yet: still ignored");
        let permit = trial(&h);
        assert_eq!(h.record(Evidence::Failure, None, None), None, "a late failure does not end the trial");
        assert_eq!(h.record(Evidence::Failure, None, Some(permit.epoch() + 1)), None, "nor another epoch's");
        assert!(matches!(h.admit(), Err(Skip::HalfOpenBusy)), "the trial is still the one in flight");
        assert_eq!(h.record(Evidence::Success, None, Some(permit.epoch())), Some(BreakerState::Closed));
        drop(permit);
        assert!(matches!(h.admit(), Ok(Admit::Closed)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_late_hint_lengthens_the_open_time_and_supersedes_the_trial() {
        let h = breaker();
        let open = open_for(h.record(Evidence::Failure, Some(Duration::from_secs(1)), None));
        tokio::time::advance(open).await;
        let permit = trial(&h);
        let five = Duration::from_secs(5);
        assert_eq!(
            h.record(Evidence::Failure, Some(five), None),
            Some(BreakerState::Open { duration: five })
        );
        assert_eq!(h.cooling_until(), Some(Instant::now() + five));
        assert_eq!(
            h.record(Evidence::Success, None, Some(permit.epoch())),
            None,
            "the superseded trial's success"
        );
        assert_eq!(h.cooling_until(), Some(Instant::now() + five), "the provider's pause holds");
        assert_eq!(h.record(Evidence::Failure, Some(MS), None), None, "a shorter hint does not shorten it");
        drop(permit);
    }

    #[tokio::test(start_paused = true)]
    async fn turning_eligible_again_ends_the_open_time_but_not_a_reference_cooldown() {
        let h = breaker();
        h.saw_eligibility(true);
        h.record(Evidence::Failure, Some(MIN), None);
        h.saw_eligibility(true);
        assert!(matches!(h.admit(), Err(Skip::Open { .. })), "no change of answer: nothing happens");
        h.saw_eligibility(false);
        assert!(matches!(h.admit(), Err(Skip::Open { .. })));
        h.saw_eligibility(true);
        let permit = trial(&h);
        assert_eq!(h.record(Evidence::Success, None, Some(permit.epoch())), Some(BreakerState::Closed));
        let reference = health(1);
        reference.record(Evidence::Failure, None, None);
        reference.saw_eligibility(false);
        reference.saw_eligibility(true);
        assert!(is_cooling(&reference), "the reference rule is exactly 0.1's");
    }
}

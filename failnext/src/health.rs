//! Health: one endpoint's streak of failures and the instant its cooldown ends, fed by the
//! evidence the judge draws from each attempt, under the endpoint's cooldown rule.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

use crate::classify::Evidence;
use crate::cooldown::Cooldown;

/// The cooldown state of one endpoint, shared by every request of one `Failover`, with the
/// rule that drives it.
///
/// The lock is held only for a few field updates; no callback ever runs under it. A healthy
/// endpoint (no streak, not cooling) is recognised from one atomic load, without the lock, so
/// the hot path of a healthy provider costs no locking. With cooldown disabled nothing is
/// recorded and nothing is ever cooling.
#[derive(Debug)]
pub(crate) struct Health {
    /// `(threshold, duration)`; `None` when cooldown is disabled.
    rule: Option<(u32, Duration)>,
    state: Mutex<State>,
    /// False only when the state is clean: no failures and no cooldown.
    dirty: AtomicBool,
}

#[derive(Debug, Default)]
struct State {
    failures: u32,
    cooling_until: Option<Instant>,
}

impl Health {
    /// A clean state under `cooldown` (validated: threshold and duration non-zero).
    pub(crate) fn new(cooldown: Cooldown) -> Health {
        Health { rule: cooldown.setting(), state: Mutex::default(), dirty: AtomicBool::new(false) }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // No code panics while holding the lock, but a poisoned state is still a valid state.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// When the endpoint's cooldown ends, if it is cooling now. An expired cooldown is
    /// cleared, with its streak.
    pub(crate) fn cooling_until(&self) -> Option<Instant> {
        if self.rule.is_none() || !self.dirty.load(Ordering::Acquire) {
            return None;
        }
        let mut state = self.lock();
        let cooling = state.cooling_until.filter(|&until| state.still_cooling(Instant::now(), until));
        self.publish(&state);
        cooling
    }

    /// Learns from an attempt that completed just now. `Neutral` changes nothing; the
    /// reference rule ignores the `hint` (how long the endpoint asked to take no traffic).
    pub(crate) fn record(&self, evidence: Evidence, _hint: Option<Duration>) {
        let Some((threshold, duration)) = self.rule else { return };
        match evidence {
            Evidence::Failure => self.record_failure(threshold, duration),
            Evidence::Success => self.record_success(),
            Evidence::Neutral => {}
        }
    }

    /// Keeps the lock-free flag in step with the state; called with the lock held.
    fn publish(&self, state: &State) {
        let dirty = state.failures != 0 || state.cooling_until.is_some();
        self.dirty.store(dirty, Ordering::Release);
    }

    fn record_failure(&self, threshold: u32, duration: Duration) {
        let now = Instant::now();
        let mut state = self.lock();
        if let Some(until) = state.cooling_until {
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
            state.cooling_until = Some(now + duration);
        }
        self.publish(&state);
    }

    /// The streak restarts. An active cooldown is not ended.
    fn record_success(&self) {
        if !self.dirty.load(Ordering::Acquire) {
            return;
        }
        let mut state = self.lock();
        state.failures = 0;
        self.publish(&state);
    }
}

impl State {
    /// Returns whether still cooling at `now`; clears the cooldown and its streak otherwise.
    fn still_cooling(&mut self, now: Instant, until: Instant) -> bool {
        if now < until {
            return true;
        }
        self.cooling_until = None;
        self.failures = 0;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: Duration = Duration::from_secs(60);

    fn health(threshold: u32) -> Health {
        Health::new(Cooldown::new(threshold, MIN))
    }

    fn is_cooling(h: &Health) -> bool {
        h.cooling_until().is_some()
    }

    #[tokio::test(start_paused = true)]
    async fn trips_at_threshold_and_expires_exactly_at_deadline() {
        let h = health(2);
        h.record(Evidence::Failure, None);
        assert!(!is_cooling(&h));
        h.record(Evidence::Failure, None);
        assert_eq!(h.cooling_until(), Some(Instant::now() + MIN));
        tokio::time::advance(MIN - Duration::from_millis(1)).await;
        assert!(is_cooling(&h));
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(!is_cooling(&h), "admitted at exactly cooling-until");
    }

    #[tokio::test(start_paused = true)]
    async fn success_resets_streak_but_not_active_cooldown() {
        let h = health(2);
        h.record(Evidence::Failure, None);
        h.record(Evidence::Success, None);
        h.record(Evidence::Failure, None);
        assert!(!is_cooling(&h));
        h.record(Evidence::Failure, None);
        assert!(is_cooling(&h));
        h.record(Evidence::Success, None);
        assert!(is_cooling(&h));
    }

    #[tokio::test(start_paused = true)]
    async fn failures_while_cooling_do_not_extend_and_are_discarded_at_expiry() {
        let h = health(3);
        for _ in 0..3 {
            h.record(Evidence::Failure, None);
        }
        tokio::time::advance(Duration::from_secs(30)).await;
        h.record(Evidence::Failure, None);
        h.record(Evidence::Failure, None);
        tokio::time::advance(Duration::from_secs(30)).await;
        assert!(!is_cooling(&h), "not extended by failures while cooling");
        h.record(Evidence::Failure, None);
        assert!(!is_cooling(&h), "fresh streak after expiry: the two failures while cooling are gone");
    }

    #[tokio::test(start_paused = true)]
    async fn disabled_records_nothing() {
        let h = Health::new(Cooldown::disabled());
        for _ in 0..10 {
            h.record(Evidence::Failure, None);
        }
        assert!(!is_cooling(&h));
        assert!(!h.dirty.load(Ordering::Acquire));
    }
}

//! Passive cooldown: per-endpoint streak of failures and the instant cooling ends.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

/// How many consecutive failures put an endpoint into cooldown, and for how long.
///
/// Failures are transport errors (anything the rest of the middleware chain returns as an
/// error) and HTTP 502, 503 and 504. Any other response, including one whose status was added
/// with [`additional_trigger_status_codes`](crate::FailoverBuilder::additional_trigger_status_codes),
/// resets the streak. A cooling endpoint is skipped when its turn comes; cooling ends
/// `duration` after the attempt that reached the threshold completed.
///
/// Cooldown is not a health check: there are no probes, no half-open state and no background
/// task. Default is 3 failures and 30 seconds.
///
/// ```
/// use std::time::Duration;
/// use failnext::Cooldown;
///
/// let strict = Cooldown::new(1, Duration::from_secs(60));
/// assert_eq!(strict.threshold(), Some(1));
/// assert_eq!(Cooldown::default(), Cooldown::new(3, Duration::from_secs(30)));
/// assert!(Cooldown::disabled().is_disabled());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Cooldown {
    setting: Option<(u32, Duration)>,
}

impl Cooldown {
    /// Cool an endpoint for `duration` after `threshold` consecutive failures.
    ///
    /// A zero threshold or a zero duration is rejected by
    /// [`FailoverBuilder::build`](crate::FailoverBuilder::build); use [`Cooldown::disabled`]
    /// to turn cooldown off.
    pub const fn new(threshold: u32, duration: Duration) -> Self {
        Cooldown { setting: Some((threshold, duration)) }
    }

    /// Never skip an endpoint because of its past failures.
    pub const fn disabled() -> Self {
        Cooldown { setting: None }
    }

    /// Whether cooldown is off.
    pub const fn is_disabled(&self) -> bool {
        self.setting.is_none()
    }

    /// Consecutive failures that start a cooldown, or `None` when disabled.
    pub fn threshold(&self) -> Option<u32> {
        self.setting.map(|(t, _)| t)
    }

    /// How long a cooldown lasts, or `None` when disabled.
    pub fn duration(&self) -> Option<Duration> {
        self.setting.map(|(_, d)| d)
    }

    pub(crate) fn setting(&self) -> Option<(u32, Duration)> {
        self.setting
    }
}

impl Default for Cooldown {
    fn default() -> Self {
        Cooldown::new(3, Duration::from_secs(30))
    }
}

/// The cooldown state of one endpoint, shared by every request of one `Failover`.
///
/// The lock is held only for a few field updates; no callback ever runs under it. A healthy
/// endpoint (no streak, not cooling) is recognised from one atomic load, without the lock, so
/// the hot path of a healthy provider costs no locking.
#[derive(Debug, Default)]
pub(crate) struct Health {
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
    fn lock(&self) -> MutexGuard<'_, State> {
        // No code panics while holding the lock, but a poisoned state is still a valid state.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether the endpoint is cooling now. An expired cooldown is cleared, with its streak.
    pub(crate) fn is_cooling(&self) -> bool {
        if !self.dirty.load(Ordering::Acquire) {
            return false;
        }
        let mut state = self.lock();
        let cooling = match state.cooling_until {
            None => false,
            Some(until) => state.expire_at(Instant::now(), until),
        };
        self.publish(&state);
        cooling
    }

    /// Keeps the lock-free flag in step with the state; called with the lock held.
    fn publish(&self, state: &State) {
        let dirty = state.failures != 0 || state.cooling_until.is_some();
        self.dirty.store(dirty, Ordering::Release);
    }

    /// Records a failed attempt that completed just now.
    pub(crate) fn record_failure(&self, threshold: u32, duration: Duration) {
        let now = Instant::now();
        let mut state = self.lock();
        if let Some(until) = state.cooling_until {
            if state.expire_at(now, until) {
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

    /// Records an attempt that got a non-failure response: the streak restarts. An active
    /// cooldown is not ended.
    pub(crate) fn record_success(&self) {
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
    fn expire_at(&mut self, now: Instant, until: Instant) -> bool {
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

    #[tokio::test(start_paused = true)]
    async fn trips_at_threshold_and_expires_exactly_at_deadline() {
        let h = Health::default();
        h.record_failure(2, MIN);
        assert!(!h.is_cooling());
        h.record_failure(2, MIN);
        assert!(h.is_cooling());
        tokio::time::advance(MIN - Duration::from_millis(1)).await;
        assert!(h.is_cooling());
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(!h.is_cooling(), "admitted at exactly cooling-until");
    }

    #[tokio::test(start_paused = true)]
    async fn success_resets_streak_but_not_active_cooldown() {
        let h = Health::default();
        h.record_failure(2, MIN);
        h.record_success();
        h.record_failure(2, MIN);
        assert!(!h.is_cooling());
        h.record_failure(2, MIN);
        assert!(h.is_cooling());
        h.record_success();
        assert!(h.is_cooling());
    }

    #[tokio::test(start_paused = true)]
    async fn failures_while_cooling_do_not_extend_and_are_discarded_at_expiry() {
        let h = Health::default();
        h.record_failure(1, MIN);
        tokio::time::advance(Duration::from_secs(30)).await;
        h.record_failure(1, MIN);
        h.record_failure(1, MIN);
        tokio::time::advance(Duration::from_secs(30)).await;
        assert!(!h.is_cooling(), "not extended by failures while cooling");
        h.record_failure(2, MIN);
        assert!(!h.is_cooling(), "fresh streak after expiry");
    }
}

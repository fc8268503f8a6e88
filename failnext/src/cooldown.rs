//! `Cooldown`: the public rule for skipping an endpoint after consecutive failures.
//!
//! The per-endpoint state that applies it lives in `health.rs`.

use std::time::Duration;

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

    /// `(threshold, duration)`, or `None` when disabled.
    pub(crate) fn setting(&self) -> Option<(u32, Duration)> {
        self.setting
    }
}

impl Default for Cooldown {
    fn default() -> Self {
        Cooldown::new(3, Duration::from_secs(30))
    }
}

//! The vocabulary both rules share: the state a breaker reports ([`BreakerState`]), what
//! survives a restart ([`Kept`]), and the one deadline rule.

use std::time::Duration;

use tokio::time::Instant;

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

/// A breaker's state as it survives a restart (see [`Health::export`](super::Health::export)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Kept {
    /// How long it stays open (or cooling) from now; `Some(0)`: half-open.
    pub(crate) open_for: Option<Duration>,
    pub(crate) failed_trials: u32,
    pub(crate) failures: u32,
    pub(crate) probation: u32,
}

/// `now + d`, saturating far in the future.
pub(super) fn deadline(now: Instant, d: Duration) -> Instant {
    now.checked_add(d).unwrap_or_else(|| now + Duration::from_secs(u64::from(u32::MAX)))
}

//! Health that survives a restart: [`HealthSnapshot`], taken from a `Failover` and restored
//! into a new one.

use std::time::{Duration, SystemTime};

use crate::health::Kept;

/// Every endpoint's health at one instant, to restore into a new [`Failover`](crate::Failover)
/// after a restart, so that a bot does not hammer a provider that asked it to back off a
/// minute ago ([`Failover::health`](crate::Failover::health),
/// [`Failover::restore_health`](crate::Failover::restore_health)).
///
/// Times are wall-clock deadlines (`SystemTime`), so they expire across the restart: a
/// breaker whose open time ended while the process was down comes back half-open, and the
/// next request is its trial. With the feature `serde` it serializes (serde's `SystemTime` and
/// `Duration` forms).
///
/// ```
/// use failnext::{Endpoint, Failover};
///
/// let endpoints = || [Endpoint::new("primary", "http://127.0.0.1:8545")];
/// let before = Failover::builder(endpoints()).build()?;
/// let kept = before.health(); // save it (serde, feature "serde") before the process exits
/// let after = Failover::builder(endpoints()).build()?;
/// assert_eq!(after.restore_health(&kept), 1);
/// # Ok::<(), failnext::ConfigError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct HealthSnapshot {
    pub(crate) taken_at: SystemTime,
    pub(crate) endpoints: Vec<EndpointHealth>,
}

/// One endpoint's part of a [`HealthSnapshot`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct EndpointHealth {
    pub(crate) id: String,
    /// The breaker is open (or, under the reference rule, cooling) until then.
    pub(crate) open_until: Option<SystemTime>,
    pub(crate) failed_trials: u32,
    pub(crate) failures: u32,
    pub(crate) probation: u32,
    /// The latency average, with latency-aware ordering.
    pub(crate) latency: Option<Duration>,
}

impl HealthSnapshot {
    /// When it was taken.
    pub fn taken_at(&self) -> SystemTime {
        self.taken_at
    }

    /// Each endpoint's health, in configured order.
    pub fn endpoints(&self) -> &[EndpointHealth] {
        &self.endpoints
    }
}

impl EndpointHealth {
    /// The endpoint's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Until when it takes no traffic (but a last-resort trial), if it is open or cooling.
    pub fn open_until(&self) -> Option<SystemTime> {
        self.open_until
    }

    /// The failed trials that grew its open time (adaptive breaker).
    pub fn failed_trials(&self) -> u32 {
        self.failed_trials
    }

    /// Its latency average, with latency-aware ordering.
    pub fn latency(&self) -> Option<Duration> {
        self.latency
    }

    pub(crate) fn of(id: &str, kept: Kept, latency: Option<Duration>, now: SystemTime) -> EndpointHealth {
        EndpointHealth {
            id: id.to_owned(),
            open_until: kept.open_for.map(|d| now.checked_add(d).unwrap_or(now)),
            failed_trials: kept.failed_trials,
            failures: kept.failures,
            probation: kept.probation,
            latency,
        }
    }

    /// The breaker state to take over `now`: the time left on its deadline (zero if it passed).
    pub(crate) fn kept(&self, now: SystemTime) -> Kept {
        Kept {
            open_for: self.open_until.map(|until| until.duration_since(now).unwrap_or(Duration::ZERO)),
            failed_trials: self.failed_trials,
            failures: self.failures,
            probation: self.probation,
        }
    }
}

//! `LatencyFeed`: a handle that feeds latency samples into a `Failover` without keeping it
//! alive. It holds a weak reference to what takes the samples ([`LatencySink`], implemented by
//! `shared`), so that it sits below `shared` and below the health source that is handed one.

use std::sync::Weak;
use std::time::Duration;

/// What takes a [`LatencyFeed`]'s samples: a `Failover`'s shared state.
pub(crate) trait LatencySink: Send + Sync {
    /// Adds a latency sample to endpoint `id`'s average.
    fn observe_latency(&self, id: &str, latency: Duration);
}

/// Feeds latency samples into a [`Failover`](crate::Failover) (made by
/// [`Failover::latency_feed`](crate::Failover::latency_feed)) without keeping it alive. With
/// failnext-blocklag, `Monitor::feed_latency(failover.latency_feed())` passes every probe's
/// latency on.
#[derive(Clone)]
pub struct LatencyFeed(pub(crate) Weak<dyn LatencySink>);

impl LatencyFeed {
    /// Adds `latency` to endpoint `id`'s average, as
    /// [`Failover::observe_latency`](crate::Failover::observe_latency) does; `false` once the
    /// `Failover` is gone.
    pub fn observe(&self, id: &str, latency: Duration) -> bool {
        let Some(shared) = self.0.upgrade() else { return false };
        shared.observe_latency(id, latency);
        true
    }
}

impl std::fmt::Debug for LatencyFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LatencyFeed").field("alive", &(self.0.strong_count() > 0)).finish()
    }
}

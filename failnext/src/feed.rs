//! `LatencyFeed`: a handle that feeds latency samples into a `Failover` without keeping it
//! alive. It sits above `shared` (it holds a weak reference to it), while the latency
//! averages themselves (`latency.rs`) sit below.

use std::sync::Weak;
use std::time::Duration;

use crate::shared::Shared;

/// Feeds latency samples into a [`Failover`](crate::Failover) (made by
/// [`Failover::latency_feed`](crate::Failover::latency_feed)) without keeping it alive. With
/// failnext-blocklag, `Monitor::feed_latency(failover.latency_feed())` passes every probe's
/// latency on.
#[derive(Clone)]
pub struct LatencyFeed(pub(crate) Weak<Shared>);

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

//! [`MonitorEvent`]: what a check saw that an application may want to log or alert on.

use std::sync::Arc;
use std::time::Duration;

/// A hook given to [`MonitorBuilder::on_event`](crate::MonitorBuilder::on_event).
pub(crate) type Hook = Arc<dyn Fn(&MonitorEvent) + Send + Sync>;

/// Something a check saw, reported once, by the check (or spawned probe) that saw it.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MonitorEvent {
    /// The reference head has not moved for more than
    /// [`stall_after`](crate::MonitorBuilder::stall_after) block times: every provider agrees
    /// on a head that stopped. No provider is made ineligible by it.
    Stalled {
        /// The head that stopped.
        head: u64,
        /// How long it has not moved.
        unchanged_for: Duration,
    },
    /// The reference head moves again after a stall.
    StallEnded {
        /// The new head.
        head: u64,
    },
    /// A provider's head became stale: older than the
    /// [maximum head age](crate::MonitorBuilder::max_head_age) by its block's timestamp
    /// ([`SnapshotEntry::is_stale`](crate::SnapshotEntry::is_stale)). Ineligible from now.
    HeadStale {
        /// The provider.
        endpoint: failnext::EndpointId,
        /// Its head.
        head: u64,
        /// How old its head was.
        age: Duration,
    },
    /// A provider's head became implausible: stamped in the future, or higher than the chain
    /// could have made ([`SnapshotEntry::is_implausible`](crate::SnapshotEntry::is_implausible)).
    /// Ineligible from now, and never the reference.
    HeadImplausible {
        /// The provider.
        endpoint: failnext::EndpointId,
        /// The head it reported.
        head: u64,
    },
}

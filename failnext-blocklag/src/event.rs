//! [`MonitorEvent`]: what a check saw that an application may want to log or alert on.

use std::sync::Arc;
use std::time::Duration;

/// A hook given to [`MonitorBuilder::on_event`](crate::MonitorBuilder::on_event).
pub(crate) type Hook = Arc<dyn Fn(&MonitorEvent) + Send + Sync>;

/// Something a check saw, reported once, by the check that saw it.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
}

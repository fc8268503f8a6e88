//! A server's counts, and the guards that keep them: a request abandoned, a request in
//! flight, a connection open.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Debug, Default)]
/// What a server counted.
pub(crate) struct Stats {
    pub(crate) requests: AtomicUsize,
    pub(crate) connections: AtomicUsize,
    pub(crate) open: AtomicUsize,
    pub(crate) in_flight: AtomicUsize,
    pub(crate) max_in_flight: AtomicUsize,
    pub(crate) abandoned: AtomicUsize,
}

/// Counts a request as abandoned when dropped before [`finish`](Abandon::finish).
pub(crate) struct Abandon(pub(super) Option<Arc<Stats>>);

impl Abandon {
    /// The request ended as planned.
    pub(crate) fn finish(&mut self) {
        self.0 = None;
    }
}

impl Drop for Abandon {
    fn drop(&mut self) {
        if let Some(stats) = &self.0 {
            stats.abandoned.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// A request whose action is being decided.
pub(super) struct InFlight(Arc<Stats>);

impl InFlight {
    pub(super) fn enter(stats: &Arc<Stats>) -> InFlight {
        let now = stats.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        stats.max_in_flight.fetch_max(now, Ordering::SeqCst);
        InFlight(stats.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// An open connection.
pub(super) struct Open(pub(super) Arc<Stats>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

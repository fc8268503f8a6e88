//! Monotonic reads: the highest head the transport has observed, each provider's head as the
//! application knows it, and [`FailureKind::BelowFloor`](super::FailureKind::BelowFloor) when no provider is at that height.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::EndpointId;

/// The highest block number the transport has observed: `eth_blockNumber` answers it
/// returned, bundle references, heads it was given. `0` until then (no floor).
#[derive(Debug, Default)]
pub(crate) struct Head(AtomicU64);

impl Head {
    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    pub(crate) fn observe(&self, number: u64) {
        self.0.fetch_max(number, Ordering::AcqRel);
    }
}

/// A provider's current head by endpoint id, `None` when unknown.
type HeadOf = dyn Fn(&EndpointId) -> Option<u64> + Send + Sync;

/// The application's view of each provider's current head (a block-height monitor's
/// snapshot), by endpoint id.
#[derive(Clone)]
pub(crate) struct Heads(pub(crate) Arc<HeadOf>);

impl Heads {
    /// The heads an application function gives, by endpoint id.
    pub(crate) fn of_fn(heads: impl Fn(&str) -> Option<u64> + Send + Sync + 'static) -> Heads {
        Heads(Arc::new(move |id: &EndpointId| heads(id.as_str())))
    }

    /// The heads a paired health source knows.
    pub(crate) fn of_source(source: Arc<dyn crate::HealthSource>) -> Heads {
        Heads(Arc::new(move |id: &EndpointId| source.head_of(id)))
    }

    pub(crate) fn of(&self, endpoint: &EndpointId) -> Option<u64> {
        (self.0)(endpoint)
    }
}

impl fmt::Debug for Heads {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<fn>")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_head_only_rises() {
        let head = Head::default();
        assert_eq!(head.get(), 0);
        head.observe(5);
        head.observe(3);
        assert_eq!(head.get(), 5);
    }
}

//! Monotonic reads: the highest head the transport has observed, each provider's head as the
//! application knows it, and [`BelowFloor`] when no provider is at that height.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use alloy_transport::{TransportError, TransportErrorKind};

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

/// A read that no provider could answer at or above the floor of
/// [monotonic reads](super::FailoverTransportBuilder::monotonic_reads): every provider's known head
/// is below the highest head this transport has already returned (or a bundle's reference),
/// or the ones that were asked answered `eth_blockNumber` below it. Wait for the providers to
/// catch up and read again; nothing stale was returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BelowFloor {
    pub(crate) floor: u64,
    /// Each provider below the floor, with the head it is known at or answered.
    pub(crate) behind: Vec<(EndpointId, Option<u64>)>,
}

impl BelowFloor {
    /// The floor: the highest head already observed (or the bundle's reference number).
    pub fn floor(&self) -> u64 {
        self.floor
    }

    /// The providers left out for being below the floor, with their head when known.
    pub fn behind(&self) -> &[(EndpointId, Option<u64>)] {
        &self.behind
    }

    /// This error inside an alloy `TransportError`, if it is one.
    pub fn find(err: &TransportError) -> Option<&BelowFloor> {
        err.as_transport_err()?.as_custom()?.downcast_ref()
    }

    pub(crate) fn into_transport(self) -> TransportError {
        TransportErrorKind::custom(self)
    }
}

impl fmt::Display for BelowFloor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no provider is at or above block {} (the highest head already observed)", self.floor)?;
        for (k, (endpoint, head)) in self.behind.iter().enumerate() {
            f.write_str(if k == 0 { ": " } else { ", " })?;
            match head {
                Some(h) => write!(f, "{endpoint} at {h}")?,
                None => write!(f, "{endpoint} at an unknown head")?,
            }
        }
        f.write_str("; read again once they catch up")
    }
}

impl std::error::Error for BelowFloor {}

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

    #[test]
    fn below_floor_says_who_is_behind_and_what_to_do() {
        let err = BelowFloor { floor: 5, behind: vec![("primary".into(), Some(0)), ("backup".into(), None)] };
        let text = err.to_string();
        assert!(
            text.contains("block 5") && text.contains("primary at 0") && text.contains("read again"),
            "{text}"
        );
        let transport = err.clone().into_transport();
        assert_eq!(BelowFloor::find(&transport), Some(&err));
    }
}

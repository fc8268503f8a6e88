//! A bundle's reference block ([`BlockRef`]), what a bundle's clones share about it (who did
//! not know it), and the error when nobody did ([`ReferenceUnknown`]): what the transport, the
//! packet's scope and coherence need of a bundle, below the [`Bundle`](super::Bundle) itself.

use std::fmt;
use std::sync::{Mutex, MutexGuard};

use alloy_primitives::B256;
use alloy_transport::{TransportError, TransportErrorKind};

use crate::EndpointId;

/// A block by number and hash: a [`Bundle`](super::Bundle)'s reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BlockRef {
    /// Its number.
    pub number: u64,
    /// Its hash.
    pub hash: B256,
}

impl BlockRef {
    /// The block `number` whose hash is `hash`.
    pub const fn new(number: u64, hash: B256) -> BlockRef {
        BlockRef { number, hash }
    }
}

impl fmt::Display for BlockRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{} ({})", self.number, self.hash)
    }
}

/// What a bundle's clones share.
#[derive(Debug)]
pub(crate) struct BundleState {
    pub(crate) reference: BlockRef,
    /// The endpoints that did not know the reference (or had no state at it), in the order
    /// they said so: the bundle's later reads skip them.
    missed: Mutex<Vec<EndpointId>>,
}

impl BundleState {
    /// A bundle's shared state at `reference`, nobody known to miss it yet.
    pub(crate) fn new(reference: BlockRef) -> BundleState {
        BundleState { reference, missed: Mutex::new(Vec::new()) }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<EndpointId>> {
        self.missed.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn missed(&self) -> Vec<EndpointId> {
        self.lock().clone()
    }

    /// Whether `endpoint` was found not to know the reference.
    pub(crate) fn did_miss(&self, endpoint: &EndpointId) -> bool {
        self.lock().contains(endpoint)
    }

    pub(crate) fn missed_at(&self, endpoint: &EndpointId) {
        let mut missed = self.lock();
        if !missed.contains(endpoint) {
            missed.push(endpoint.clone());
        }
    }

    pub(crate) fn unknown(&self) -> TransportError {
        TransportErrorKind::custom(ReferenceUnknown { reference: self.reference, missed: self.missed() })
    }
}

/// A bundle read that no provider could answer at the bundle's reference: each one asked
/// did not know the block (an unknown hash, or no longer canonical for it) or had no state
/// at it, and the others are excluded, down or were already found not to know it. Nothing was
/// answered at any provider's own latest block. **Restart the decision at a new reference.**
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReferenceUnknown {
    reference: BlockRef,
    missed: Vec<EndpointId>,
}

impl ReferenceUnknown {
    /// The bundle's reference.
    pub fn reference(&self) -> BlockRef {
        self.reference
    }

    /// The endpoints that did not know it (or had no state at it), in the order they said so.
    pub fn missed(&self) -> &[EndpointId] {
        &self.missed
    }

    /// This error inside an alloy `TransportError`, if it is one.
    pub fn find(err: &TransportError) -> Option<&ReferenceUnknown> {
        err.as_transport_err()?.as_custom()?.downcast_ref()
    }
}

impl fmt::Display for ReferenceUnknown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no usable provider knows the reference block {}", self.reference)?;
        if !self.missed.is_empty() {
            let ids: Vec<&str> = self.missed.iter().map(EndpointId::as_str).collect();
            write!(f, " (unknown to {})", ids.join(", "))?;
        }
        f.write_str("; restart the decision at a new reference")
    }
}

impl std::error::Error for ReferenceUnknown {}

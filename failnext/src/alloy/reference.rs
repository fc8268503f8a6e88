//! What a bundle's clones share about its reference block (who did not know it), and the
//! error when nobody did
//! ([`FailureKind::ReferenceUnknown`](super::FailureKind::ReferenceUnknown)): what the
//! transport, the packet's scope and coherence need of a bundle, below the
//! [`Bundle`](super::Bundle) itself.

use std::sync::{Mutex, MutexGuard};

use alloy_transport::TransportError;

use super::block::BlockRef;
use super::failure::raised::{Detail, Raised};
use crate::EndpointId;

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
        Raised::new(Detail::ReferenceUnknown { reference: self.reference, missed: self.missed() })
            .into_transport()
    }
}

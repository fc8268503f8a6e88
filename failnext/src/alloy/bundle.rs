//! [`Bundle`]: the reads of one decision, pinned to one reference block by its hash.

use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};

use alloy_json_rpc::{Request, RequestPacket, ResponsePacket, SerializedRequest};
use alloy_transport::{BoxTransport, TransportConnect, TransportError, TransportErrorKind, TransportFut};
use serde_json::value::RawValue;

use super::block::{BlockParam, block_index, by_hash};
use super::methods::Access;
use super::reference::{BlockRef, BundleState};
use super::transport::FailoverTransport;
use crate::EndpointId;

/// The state reads of one decision, all answered at one reference block: an alloy transport
/// (a `tower::Service<RequestPacket>`) over a [`FailoverTransport`], made by
/// [`FailoverTransport::bundle`]. Cheap to clone; clones are the same bundle.
///
/// ```no_run
/// # fn demo(transport: failnext::alloy::FailoverTransport, number: u64, hash: alloy_primitives::B256) {
/// use failnext::alloy::BlockRef;
///
/// let bundle = transport.bundle(BlockRef::new(number, hash));
/// // alloy: let provider = ProviderBuilder::new().connect_client(RpcClient::new(bundle.clone(), false));
/// // every balance, storage slot and eth_call of the decision reads block `hash`
/// println!("quoted at {}", bundle.reference());
/// # }
/// ```
///
/// What it does to each call, and why a read fails with [`ReferenceUnknown`](super::ReferenceUnknown), is in the
/// [module docs](super#read-bundles). It shares the transport's failover, breakers, memory
/// and capabilities; what it adds is its reference and the endpoints that did not know it.
#[derive(Clone, Debug)]
pub struct Bundle {
    transport: FailoverTransport,
    state: Arc<BundleState>,
}

impl FailoverTransport {
    /// A [`Bundle`] at `reference`: an alloy transport whose state reads are all answered at
    /// that block, by its hash (see [the module docs](super#read-bundles)). It shares this
    /// transport's failover; `reference.number` counts as an observed head.
    pub fn bundle(&self, reference: BlockRef) -> Bundle {
        self.observe_head(reference.number);
        Bundle::new(self.clone(), reference)
    }
}

// ===== impl Bundle =====

impl Bundle {
    pub(crate) fn new(transport: FailoverTransport, reference: BlockRef) -> Bundle {
        Bundle { transport, state: Arc::new(BundleState::new(reference)) }
    }

    /// The reference block every state read of this bundle is answered at (for the decision's
    /// log).
    pub fn reference(&self) -> BlockRef {
        self.state.reference
    }

    /// The endpoints that did not know the reference (or had no state at it) when this bundle
    /// asked them, in the order they said so; its later reads skip them.
    pub fn missed(&self) -> Vec<EndpointId> {
        self.state.missed()
    }

    async fn send(self, packet: RequestPacket) -> Result<ResponsePacket, TransportError> {
        let packet = self.pin(packet)?;
        self.transport.send_in(packet, Some(&self.state)).await
    }

    /// Each call of `packet` as the bundle sends it: writes and `pending` refused, state reads
    /// pinned to the reference.
    fn pin(&self, packet: RequestPacket) -> Result<RequestPacket, TransportError> {
        match packet {
            RequestPacket::Single(req) => Ok(RequestPacket::Single(self.pin_call(req)?)),
            RequestPacket::Batch(reqs) => reqs
                .into_iter()
                .map(|req| self.pin_call(req))
                .collect::<Result<_, _>>()
                .map(RequestPacket::Batch),
        }
    }

    fn pin_call(&self, req: SerializedRequest) -> Result<SerializedRequest, TransportError> {
        let refuse = |why| TransportErrorKind::custom(BundleRefused { method: req.method().to_owned(), why });
        if self.transport.access(req.method()) == Access::Write {
            return Err(refuse("a bundle only reads; send writes through the transport"));
        }
        let Some(index) = block_index(req.method()) else { return Ok(req) };
        let Some(mut params) = owned_params(&req) else { return Ok(req) };
        match BlockParam::parse(params.get(index).map(|p| &**p)) {
            BlockParam::Pending => {
                return Err(refuse("it asks for the pending block, and a bundle reads one settled block"));
            }
            BlockParam::Absent | BlockParam::Latest => {}
            // An explicit block (a number, a hash, `safe`, `finalized`, `earliest`) is the
            // caller's choice: left alone.
            _ => return Ok(req),
        }
        // Never sent unpinned: a read the bundle cannot pin is refused, not answered at latest.
        let Some(pinned) = by_hash(&self.state.reference.hash) else {
            return Err(refuse("its block parameter could not be written"));
        };
        match params.len() {
            n if n > index => params[index] = pinned,
            n if n == index => params.push(pinned),
            // Fewer params than the ones before the block: malformed, the node answers.
            _ => return Ok(req),
        }
        let (meta, _) = req.decompose();
        Request { meta, params }.serialize().map_err(TransportError::ser_err)
    }
}

/// The params of `req` as a list, each kept as it was written.
fn owned_params(req: &SerializedRequest) -> Option<Vec<Box<RawValue>>> {
    serde_json::from_str(req.params()?.get()).ok()
}

impl tower_service::Service<RequestPacket> for Bundle {
    type Response = ResponsePacket;
    type Error = TransportError;
    type Future = TransportFut<'static>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, packet: RequestPacket) -> Self::Future {
        Box::pin(self.clone().send(packet))
    }
}

/// `ProviderBuilder::new().connect_with(&bundle)` connects to it.
impl TransportConnect for Bundle {
    fn is_local(&self) -> bool {
        self.transport.is_local()
    }

    async fn get_transport(&self) -> Result<BoxTransport, TransportError> {
        Ok(BoxTransport::new(self.clone()))
    }
}

// ===== errors =====

/// A call a [`Bundle`] does not send: a write (a bundle only reads), or a state read of the
/// `pending` block (a bundle reads one settled block). Nothing was sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BundleRefused {
    method: String,
    why: &'static str,
}

impl BundleRefused {
    /// The call's method.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// This error inside an alloy `TransportError`, if it is one.
    pub fn find(err: &TransportError) -> Option<&BundleRefused> {
        err.as_transport_err()?.as_custom()?.downcast_ref()
    }
}

impl fmt::Display for BundleRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is not sent through a bundle: {}", self.method, self.why)
    }
}

impl std::error::Error for BundleRefused {}

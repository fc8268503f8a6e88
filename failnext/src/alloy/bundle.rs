//! [`Bundle`]: the reads of one decision, pinned to one reference block by its hash.

use std::sync::Arc;
use std::task::{Context, Poll};

use alloy_json_rpc::{Request, RequestPacket, ResponsePacket, SerializedRequest};
use alloy_transport::{BoxTransport, TransportConnect, TransportError, TransportFut};
use serde_json::value::RawValue;

use super::block::BlockRef;
use super::block::{BlockParam, block_index, by_hash};
use super::failure::raised::{Detail, Raised, Refusal};
use super::methods::Access;
use super::reference::BundleState;
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
/// What it does to each call, and why a read fails with [`FailureKind::ReferenceUnknown`](super::FailureKind::ReferenceUnknown), is in the
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

    /// A [`Bundle`] at the head: the highest block every provider the paired
    /// [monitor](super::FailoverTransportBuilder::monitor) admits is known to have (so no
    /// admitted provider is asked for a block it has not seen yet), or, without a monitor
    /// (or before it knows a head), the `latest` block of the provider that answers. The
    /// block is read by number through the transport (`eth_getBlockByNumber`, a read that
    /// fails over) and pinned by the hash it answered.
    ///
    /// # Errors
    ///
    /// The read's failure (see [`Failure`](super::Failure)); an answer without that block
    /// (`null`) or one that is not a block is a deserialization error.
    pub async fn bundle_at_head(&self) -> alloy_transport::TransportResult<Bundle> {
        let tag = self.agreed_head().map_or_else(|| "latest".to_owned(), |n| format!("0x{n:x}"));
        let header: super::follow::Header = self.call("eth_getBlockByNumber", (tag, false)).await?;
        Ok(self.bundle(header.block().block_ref()))
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

    /// Each call of `packet` as the bundle sends it: writes and the pending nonce refused, state
    /// reads pinned to the reference.
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
        let refuse = |refusal| {
            Raised::new(Detail::BundleRefused { method: req.method().to_owned(), refusal }).into_transport()
        };
        if self.transport.access(req.method()) == Access::Write {
            return Err(refuse(Refusal::Write));
        }
        let Some(index) = block_index(req.method()) else { return Ok(req) };
        let Some(mut params) = owned_params(&req) else { return Ok(req) };
        match BlockParam::parse(params.get(index).map(|p| &**p)) {
            // The pending nonce counts transactions no block holds yet: answered at the
            // reference it would be too low while the account has some in flight.
            BlockParam::Pending if req.method() == "eth_getTransactionCount" => {
                return Err(refuse(Refusal::PendingNonce));
            }
            // `pending` (alloy's default for `call` and `estimate_gas`): "the state now", which
            // in a bundle is its reference, as for `latest`.
            BlockParam::Absent | BlockParam::Latest | BlockParam::Pending => {}
            // An explicit block (a number, a hash, `safe`, `finalized`, `earliest`) is the
            // caller's choice: left alone.
            _ => return Ok(req),
        }
        // Never sent unpinned: a read the bundle cannot pin is refused, not answered at latest.
        let Some(pinned) = by_hash(&self.state.reference.hash) else {
            return Err(refuse(Refusal::Unwritable));
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

#[cfg(test)]
mod tests {
    use alloy_json_rpc::Id;
    use alloy_primitives::B256;
    use serde_json::{Value, json};

    use super::*;
    use crate::Endpoint;
    use crate::alloy::Failure;

    const ADDR: &str = "0x00000000000000000000000000000000000000aa";

    fn bundle() -> Bundle {
        let transport = FailoverTransport::new([Endpoint::new("only", "http://127.0.0.1:1/")]).unwrap();
        transport.bundle(BlockRef::new(100, B256::repeat_byte(0x77)))
    }

    fn call(method: &'static str, params: Value, id: u64) -> SerializedRequest {
        Request::new(method, Id::Number(id), params).serialize().unwrap()
    }

    fn single(method: &'static str, params: Value) -> RequestPacket {
        RequestPacket::Single(call(method, params, 1))
    }

    /// Each call of `packet` as the bundle would send it, as (method, params).
    fn pinned(packet: RequestPacket) -> Result<Vec<(String, Value)>, TransportError> {
        let calls = match bundle().pin(packet)? {
            RequestPacket::Single(req) => vec![req],
            RequestPacket::Batch(reqs) => reqs,
        };
        Ok(calls
            .iter()
            .map(|req| {
                let params = req.params().map_or(Value::Null, |p| serde_json::from_str(p.get()).unwrap());
                (req.method().to_owned(), params)
            })
            .collect())
    }

    fn reference() -> Value {
        json!({"blockHash": B256::repeat_byte(0x77), "requireCanonical": true})
    }

    fn tx() -> Value {
        json!({"from": ADDR, "to": ADDR, "data": "0x"})
    }

    #[test]
    fn a_pending_state_read_in_a_bundle_reads_the_reference_block() {
        // alloy's `Provider::call(tx)` sends `[tx, "pending"]`.
        let sent = pinned(single("eth_call", json!([tx(), "pending"]))).unwrap();
        assert_eq!(sent, [("eth_call".to_owned(), json!([tx(), reference()]))]);
        let sent = pinned(single("eth_getBalance", json!([ADDR, "pending"]))).unwrap();
        assert_eq!(sent[0].1, json!([ADDR, reference()]));
        let sent = pinned(single("eth_getStorageAt", json!([ADDR, "0x0", "pending"]))).unwrap();
        assert_eq!(sent[0].1, json!([ADDR, "0x0", reference()]));
    }

    #[test]
    fn a_pending_gas_estimate_and_access_list_in_a_bundle_read_the_reference_block() {
        // alloy's `Provider::estimate_gas(tx)` sends `[tx, "pending"]`.
        for method in ["eth_estimateGas", "eth_createAccessList"] {
            let sent = pinned(single(method, json!([tx(), "pending"]))).unwrap();
            assert_eq!(sent, [(method.to_owned(), json!([tx(), reference()]))]);
        }
    }

    #[test]
    fn a_pending_call_with_state_overrides_keeps_its_overrides_in_a_bundle() {
        let overrides = json!({ADDR: {"balance": "0x1"}});
        let sent = pinned(single("eth_call", json!([tx(), "pending", overrides]))).unwrap();
        assert_eq!(sent[0].1, json!([tx(), reference(), overrides]));
    }

    #[test]
    fn a_batch_of_pending_latest_and_missing_blocks_in_a_bundle_is_pinned_call_by_call() {
        let batch = RequestPacket::Batch(vec![
            call("eth_call", json!([tx(), "pending"]), 1),
            call("eth_estimateGas", json!([tx(), "pending"]), 2),
            call("eth_getCode", json!([ADDR, "latest"]), 3),
            call("eth_getBalance", json!([ADDR]), 4),
            call("eth_getBalance", json!([ADDR, "0x5"]), 5),
            call("eth_chainId", json!([]), 6),
        ]);
        let sent = pinned(batch).unwrap();
        let params: Vec<&Value> = sent.iter().map(|(_, p)| p).collect();
        assert_eq!(
            params,
            [
                &json!([tx(), reference()]),
                &json!([tx(), reference()]),
                &json!([ADDR, reference()]),
                &json!([ADDR, reference()]),
                &json!([ADDR, "0x5"]),
                &json!([]),
            ]
        );
    }

    #[test]
    fn an_explicit_block_in_a_bundle_is_left_alone() {
        let other = json!({"blockHash": B256::repeat_byte(1)});
        for block in [
            json!("0x5"),
            json!({"blockNumber": "0x9"}),
            json!("earliest"),
            json!("safe"),
            json!("finalized"),
            other,
        ] {
            for method in ["eth_call", "eth_estimateGas", "eth_createAccessList"] {
                let sent = pinned(single(method, json!([tx(), block]))).unwrap();
                assert_eq!(sent[0].1, json!([tx(), block]), "{method} at {block}");
            }
        }
    }

    #[test]
    fn the_pending_nonce_is_refused_by_a_bundle_and_nothing_of_its_batch_is_sent() {
        let err = pinned(single("eth_getTransactionCount", json!([ADDR, "pending"]))).unwrap_err();
        let refused = Failure::find(&err).filter(Failure::is_bundle_refused);
        let refused = refused.unwrap_or_else(|| panic!("not BundleRefused: {err}"));
        assert_eq!(refused.method(), Some("eth_getTransactionCount"));
        let batch = RequestPacket::Batch(vec![
            call("eth_call", json!([tx(), "pending"]), 1),
            call("eth_getTransactionCount", json!([ADDR, "pending"]), 2),
        ]);
        assert!(Failure::find(&pinned(batch).unwrap_err()).is_some_and(|f| f.is_bundle_refused()));
        // The mined nonce is a state read like any other.
        let sent = pinned(single("eth_getTransactionCount", json!([ADDR, "latest"]))).unwrap();
        assert_eq!(sent[0].1, json!([ADDR, reference()]));
    }

    #[test]
    fn a_write_is_refused_by_a_bundle() {
        let err = pinned(single("eth_sendRawTransaction", json!(["0x00"]))).unwrap_err();
        let refused = Failure::find(&err).filter(Failure::is_bundle_refused);
        let refused = refused.unwrap_or_else(|| panic!("not BundleRefused: {err}"));
        assert_eq!(refused.method(), Some("eth_sendRawTransaction"));
    }
}

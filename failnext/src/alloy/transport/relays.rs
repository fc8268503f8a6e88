//! After a [fan-out](crate::alloy::FailoverTransportBuilder::broadcast_to), a lookup of its
//! transaction (`eth_getTransactionReceipt`, `eth_getTransactionByHash`) asks every relay the
//! transaction went to (those that accepted it, or may have), at once, and returns the first
//! answer that is not `null` (in the relays' order): one relay's `null` is not final while
//! another may have mined it. `null` comes back only when every relay that answered says so.

use std::future::Future;

use alloy_json_rpc::{RequestPacket, ResponsePacket, ResponsePayload};
use alloy_primitives::B256;
use alloy_transport::TransportResult;

use super::{Answered, FailoverTransport};
use crate::EndpointId;
use crate::alloy::block::params;
use crate::alloy::fanout::Delivery;

impl FailoverTransport {
    /// The relays a lookup of `packet` asks: every endpoint a fan-out of its transaction went
    /// to, when there are two or more (empty otherwise: the lookup goes as any read).
    pub(super) fn relays(&self, packet: &RequestPacket) -> Vec<EndpointId> {
        let RequestPacket::Single(req) = packet else { return Vec::new() };
        if !matches!(req.method(), "eth_getTransactionReceipt" | "eth_getTransactionByHash") {
            return Vec::new();
        }
        let Some([hash]) = params::<[B256; 1]>(req) else { return Vec::new() };
        let Some(outcome) = self.memory.fanout(&hash) else { return Vec::new() };
        let relays: Vec<EndpointId> = outcome
            .deliveries
            .iter()
            .filter(|(_, delivery)| {
                matches!(delivery, Delivery::Accepted | Delivery::PossiblySubmitted { .. })
            })
            .map(|(id, _)| id.clone())
            .collect();
        if relays.len() < 2 { Vec::new() } else { relays }
    }

    /// The lookup asked of each of `relays` alone, through `send`, at once: the first answer
    /// that is not `null`; else the first answer; else the first error.
    pub(super) async fn ask_relays<'a, F, Fut>(
        &self,
        relays: &'a [EndpointId],
        send: F,
    ) -> TransportResult<Answered>
    where
        F: Fn(Option<&'a EndpointId>) -> Fut,
        Fut: Future<Output = TransportResult<Answered>>,
    {
        let results = futures_util::future::join_all(relays.iter().map(|id| send(Some(id)))).await;
        let found = |result: &TransportResult<Answered>| match result {
            Ok((ResponsePacket::Single(r), _)) => {
                matches!(&r.payload, ResponsePayload::Success(v) if v.get() != "null")
            }
            _ => false,
        };
        let at = results
            .iter()
            .position(found)
            .or_else(|| results.iter().position(Result::is_ok))
            .unwrap_or_default();
        results.into_iter().nth(at).unwrap_or_else(|| {
            Err(alloy_transport::TransportErrorKind::custom_str("a lookup after a fan-out reached no relay"))
        })
    }
}

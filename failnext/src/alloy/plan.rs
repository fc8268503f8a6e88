//! A packet's plan: what the transport decides for one packet before it is sent (may it fail
//! over, which endpoints it excludes or prefers, the filter it is pinned to, the calls whose
//! answers teach something), and what it learns from the answer (created filters, accepted
//! broadcasts, "already known").

use alloy_json_rpc::{RequestPacket, Response, ResponsePacket, ResponsePayload, SerializedRequest};
use alloy_primitives::{Address, B256, hex};
use alloy_transport::{TransportError, TransportErrorKind, TransportResult};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::block::params;
use super::broadcast::{RawTx, is_already_known};
use super::call::{ServedByCell, TraceCell};
use super::failure::raised::{Detail, Pin, Raised};
use super::fanout::Fault;
use super::memory::Memory;
use super::methods::{Access, MethodTable};
use crate::{EndpointId, Error, ExcludedEndpoints, Permission, PreferredEndpoint};

/// One call of a packet that is not a plain read, as the plan needs it after the answer.
#[derive(Debug)]
pub(crate) struct Call<'p> {
    id: &'p alloy_json_rpc::Id,
    method: &'p str,
    access: Access,
    /// For `eth_sendRawTransaction`: the transaction, decoded locally.
    raw: Option<RawTx>,
    /// For `eth_sendTransaction`: the `from` of its params.
    from: Option<Address>,
}

/// What the transport decided for one packet before sending it.
#[derive(Debug, Default)]
pub(crate) struct Plan<'p> {
    /// The calls that are not plain reads (a read needs nothing after its answer): empty, so
    /// allocation-free, for a packet of reads.
    pub(crate) calls: Vec<Call<'p>>,
    pub(crate) may_fail_over: bool,
    pub(crate) excluded: Vec<EndpointId>,
    pub(crate) preferred: Option<EndpointId>,
    /// The endpoint a filter call is pinned to, and the filter.
    pub(crate) pinned: Option<(EndpointId, String)>,
    pub(crate) cells: Vec<ServedByCell>,
    /// Where the calls that asked for it want the request's trace.
    pub(crate) traces: Vec<TraceCell>,
}

impl<'p> Plan<'p> {
    pub(crate) fn of(
        packet: &'p RequestPacket,
        table: &MethodTable,
        memory: &Memory,
        endpoints: &[EndpointId],
    ) -> TransportResult<Plan<'p>> {
        let mut plan = Plan { may_fail_over: true, ..Plan::default() };
        let mut explicit_preference = false;
        for req in packet.requests() {
            let method = req.method();
            let access = table.access(method);
            let ext = req.meta().extensions();
            let may = match ext.get::<Permission>() {
                Some(Permission::Allow) => access != Access::UseFilter,
                Some(Permission::Deny) => false,
                _ => matches!(access, Access::Read | Access::NewFilter),
            };
            plan.may_fail_over &= may;
            if let Some(ExcludedEndpoints(ids)) = ext.get::<ExcludedEndpoints>() {
                plan.excluded.extend(ids.iter().cloned());
            }
            if let (Some(PreferredEndpoint(id)), false) =
                (ext.get::<PreferredEndpoint>(), explicit_preference)
            {
                plan.preferred = Some(id.clone());
                explicit_preference = true;
            }
            if let Some(cell) = ext.get::<ServedByCell>() {
                plan.cells.push(cell.clone());
            }
            if let Some(cell) = ext.get::<TraceCell>() {
                plan.traces.push(cell.clone());
            }
            let mut call = Call { id: req.id(), method, access, raw: None, from: None };
            match (access, method) {
                (Access::UseFilter, _) => plan.pin_filter(req, memory)?,
                (
                    _,
                    "eth_sendRawTransaction"
                    | "eth_sendRawTransactionSync"
                    | "eth_sendRawTransactionConditional"
                    | "eth_sendPrivateRawTransaction",
                ) => {
                    call.raw = first_param::<String>(req)
                        .and_then(|hex| hex::decode(hex).ok())
                        .map(|b| RawTx::of(&b));
                }
                (_, "eth_sendPrivateTransaction") => {
                    // Flashbots' form: `[{"tx": "0x..", "maxBlockNumber": .., "preferences": ..}]`.
                    call.raw = first_param::<PrivateTx>(req)
                        .and_then(|p| hex::decode(p.tx).ok())
                        .map(|b| RawTx::of(&b));
                }
                (_, "eth_sendTransaction" | "eth_sendTransactionSync") => {
                    call.from = first_param::<From>(req).map(|f| f.from);
                }
                (_, "eth_getTransactionReceipt" | "eth_getTransactionByHash") if !explicit_preference => {
                    if let Some(hash) = first_param::<B256>(req) {
                        plan.preferred = memory.tx_endpoint(&hash).or(plan.preferred.take());
                    }
                }
                (_, "eth_getTransactionCount") if !explicit_preference => {
                    if let Some((sender, tag)) = params::<(Address, String)>(req) {
                        if tag == "pending" {
                            plan.preferred = memory.sender_endpoint(&sender).or(plan.preferred.take());
                        }
                    }
                }
                _ => {}
            }
            if access != Access::Read {
                plan.calls.push(call);
            }
        }
        if let Some((endpoint, _)) = &plan.pinned {
            // Only the filter's endpoint: every other one is excluded, and nothing fails over.
            plan.may_fail_over = false;
            plan.excluded.extend(endpoints.iter().filter(|e| *e != endpoint).cloned());
            plan.preferred = Some(endpoint.clone());
        }
        Ok(plan)
    }

    /// A filter call goes where the filter was created; a filter this transport did not create
    /// (made before a restart, say) goes the usual way, without failover.
    fn pin_filter(&mut self, req: &SerializedRequest, memory: &Memory) -> TransportResult<()> {
        let Some(filter) = first_param::<String>(req) else { return Ok(()) };
        let Some(endpoint) = memory.filter_endpoint(&filter) else { return Ok(()) };
        match &self.pinned {
            Some((other, first)) if *other != endpoint => Err(Raised::new(Detail::FilterPinned {
                filter,
                endpoint,
                pin: Pin::Batched { filter: first.clone(), endpoint: other.clone() },
            })
            .into_transport()),
            _ => {
                self.pinned = Some((endpoint, filter));
                Ok(())
            }
        }
    }

    /// Writes `trace` into the cells of the calls that asked for it.
    pub(crate) fn record_trace(&self, trace: Option<&crate::Trace>) {
        if let Some(trace) = trace {
            self.traces.iter().for_each(|cell| cell.set(trace));
        }
    }

    /// The hash of the raw transaction a single-call packet broadcasts, when it is one (what
    /// a fan-out sends).
    pub(crate) fn raw_broadcast(&self, packet: &RequestPacket) -> Option<B256> {
        match (packet, self.calls.as_slice()) {
            (RequestPacket::Single(_), [call]) if call.access == Access::Write => call.raw.map(|r| r.hash),
            _ => None,
        }
    }

    pub(crate) fn writes(&self) -> bool {
        self.calls.iter().any(|c| c.access == Access::Write)
    }

    fn hashes(&self) -> Vec<B256> {
        self.calls.iter().filter_map(|c| c.raw.map(|r| r.hash)).collect()
    }

    /// The error for a packet whose request failed (no response at all).
    pub(crate) fn send_failed(&self, err: reqwest_middleware::Error) -> TransportError {
        let err = err.without_url();
        let failnext = Error::from_middleware(&err);
        if let (Some((endpoint, filter)), Some(e)) = (&self.pinned, failnext) {
            if e.is_no_usable_endpoint() {
                let pin = Pin::Unusable;
                return Raised::new(Detail::FilterPinned {
                    filter: filter.clone(),
                    endpoint: endpoint.clone(),
                    pin,
                })
                .into_transport();
            }
        }
        if !self.writes() {
            return TransportErrorKind::custom(err);
        }
        let hashes = self.hashes();
        let (fault, endpoint) = match failnext {
            Some(e) if e.is_no_usable_endpoint() => (Fault::NoUsableEndpoint, None),
            // No attempt at all (an unknown endpoint named by the call, a deadline that passed
            // while another request held the breaker's trial): nothing left the process.
            Some(e) if e.attempts().is_empty() => (Fault::NotAttempted, None),
            Some(e) if e.attempts().iter().all(|a| is_connect(a.error())) => (Fault::ConnectionRefused, None),
            Some(e) => (Fault::AnswerLost, e.attempts().last().map(|a| a.endpoint().clone())),
            None if is_connect(&err) => (Fault::ConnectionRefused, None),
            None => (Fault::AnswerLost, None),
        };
        let detail = if fault.never_sent() {
            Detail::NeverSent { hashes, fault }
        } else {
            Detail::PossiblySubmitted { hashes, endpoint, fault }
        };
        Raised { detail, cause: Some(std::sync::Arc::new(err)) }.into_transport()
    }

    /// The error for a write whose answer, from `endpoint`, was lost (`fault`), its cause
    /// `cause` when there is one.
    pub(crate) fn lost(
        &self,
        endpoint: Option<EndpointId>,
        fault: Fault,
        cause: Option<reqwest_middleware::Error>,
    ) -> TransportError {
        let detail = Detail::PossiblySubmitted { hashes: self.hashes(), endpoint, fault };
        Raised { detail, cause: cause.map(std::sync::Arc::new) }.into_transport()
    }

    /// After an answer from `served`: remembers created filters and accepted broadcasts, and
    /// turns "already known" for a raw transaction into success with its hash.
    pub(crate) fn learn(&self, answer: &mut ResponsePacket, served: &EndpointId, memory: &Memory) {
        if self.calls.is_empty() {
            return;
        }
        let responses: &mut [Response] = match answer {
            ResponsePacket::Single(r) => std::slice::from_mut(r),
            ResponsePacket::Batch(rs) => rs.as_mut_slice(),
        };
        for response in responses {
            let Some(call) = self.calls.iter().find(|c| *c.id == response.id) else { continue };
            match (&response.payload, call.access) {
                (ResponsePayload::Success(result), Access::NewFilter) => {
                    if let Ok(filter) = serde_json::from_str::<String>(result.get()) {
                        memory.filter_created(&filter, served.clone());
                    }
                }
                (ResponsePayload::Success(_), Access::UseFilter) if call.method == "eth_uninstallFilter" => {
                    if let Some((_, filter)) = &self.pinned {
                        memory.filter_removed(filter);
                    }
                }
                (ResponsePayload::Success(result), Access::Write) => {
                    // A hash, or the receipt a `Sync` variant answers with.
                    let hash = call.raw.map(|r| r.hash).or_else(|| {
                        serde_json::from_str::<B256>(result.get()).ok().or_else(|| {
                            serde_json::from_str::<Receipt>(result.get()).ok().map(|r| r.transaction_hash)
                        })
                    });
                    let sender = call.raw.and_then(|r| r.sender).or(call.from);
                    if let Some(hash) = hash {
                        memory.broadcast(hash, sender, served);
                    }
                }
                (ResponsePayload::Failure(e), Access::Write) if is_already_known(&e.message) => {
                    let Some(raw) = call.raw else { continue };
                    let Ok(result) = serde_json::value::to_raw_value(&raw.hash) else { continue };
                    memory.broadcast(raw.hash, raw.sender, served);
                    response.payload = ResponsePayload::Success(result);
                }
                _ => {}
            }
        }
    }
}

#[derive(Deserialize)]
struct From {
    from: Address,
}

/// The first parameter of `eth_sendPrivateTransaction`.
#[derive(Deserialize)]
struct PrivateTx {
    tx: String,
}

/// The part of a receipt (`eth_sendTransactionSync`'s answer) that names its transaction.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Receipt {
    transaction_hash: B256,
}

/// The call's first parameter, parsed as `T`.
pub(crate) fn first_param<T: for<'de> Deserialize<'de>>(req: &SerializedRequest) -> Option<T> {
    let mut all: Vec<Box<RawValue>> = params(req)?;
    if all.is_empty() {
        return None;
    }
    serde_json::from_str(all.swap_remove(0).get()).ok()
}

fn is_connect(err: &reqwest_middleware::Error) -> bool {
    matches!(err, reqwest_middleware::Error::Reqwest(e) if e.is_connect())
}

//! Coherent state for a decision, the transport's side: which endpoints cannot serve a packet
//! (a bundle's misses, the monotonic floor, capabilities it needs that they lack) and what the
//! answers teach (who did not know a reference, who lacks archive state or a method, who
//! refused a request this large).
//!
//! The packet's scope ([`PacketScope`](super::scope::PacketScope)) hands both to the one
//! request loop: the endpoints found unfit are passed over there, each a decision of the loop
//! (an event, a trace step); what an answer teaches is learnt when the loop judges it. On the
//! healthy path (nothing lacking, no bundle, no floor) it reads two atomics and parses nothing.

use std::cell::OnceCell;
use std::time::Duration;

use alloy_json_rpc::{RequestPacket, Response, ResponsePacket, ResponsePayload};

use super::block::{BlockParam, quantity};
use super::capability::{Capabilities, Capability};
use super::failure::raised::{Detail, Raised};
use super::monotonic::{Head, Heads};
use super::reference::BundleState;
use crate::EndpointId;
use crate::judging::findings::{Missed, Missing};
use crate::judging::scope::Unfit;

/// How long an endpoint found to lack a capability is skipped for it, by default.
pub(crate) const LACK_FOR: Duration = Duration::from_secs(600);

/// State older than this many blocks behind the head needs an archive node, by default.
pub(crate) const ARCHIVE_DEPTH: u64 = 128;

/// What the transport's clones share for coherence: the highest head observed and who lacks
/// what.
#[derive(Debug, Default)]
pub(crate) struct Coherence {
    pub(crate) head: Head,
    pub(crate) capabilities: Capabilities,
    /// Whether the chain's block headers hash as Ethereum's (see `verify.rs`).
    pub(crate) blocks: super::verify::BlockCheck,
    /// Whether the transport listens for the lacks its fleet announces (feature `redis`).
    #[cfg(feature = "redis")]
    pub(crate) listening: std::sync::atomic::AtomicBool,
}

/// How the transport is configured for coherence (copied with it).
#[derive(Clone, Debug)]
pub(crate) struct Rules {
    pub(crate) archive_depth: u64,
    pub(crate) lack_for: Duration,
    /// Set by `monotonic_reads`: each provider's head, as the application knows it.
    pub(crate) heads: Option<Heads>,
}

impl Default for Rules {
    fn default() -> Self {
        Rules { archive_depth: ARCHIVE_DEPTH, lack_for: LACK_FOR, heads: None }
    }
}

/// One packet, as coherence sees it.
pub(crate) struct Packet<'p> {
    pub(crate) packet: &'p RequestPacket,
    pub(crate) bundle: Option<&'p BundleState>,
    /// Every call is a plain read.
    pub(crate) reads: bool,
    /// Its serialized size, measured at most once and only when a request-size lack asks.
    size: OnceCell<usize>,
}

impl<'p> Packet<'p> {
    pub(crate) fn new(packet: &'p RequestPacket, bundle: Option<&'p BundleState>, reads: bool) -> Self {
        Packet { packet, bundle, reads, size: OnceCell::new() }
    }

    /// Its size is known already: `size` bytes (the body that was sent).
    pub(crate) fn sized(self, size: usize) -> Self {
        let _ = self.size.set(size);
        self
    }

    /// The block number a state read of this packet reads at, the oldest one, when it names
    /// one (a number, `earliest`, the bundle's reference); `None` for latest and unknown
    /// hashes.
    fn oldest_block(&self) -> Option<u64> {
        self.packet
            .requests()
            .iter()
            .filter_map(|req| match BlockParam::of(req)? {
                BlockParam::Number(n) => Some(n),
                BlockParam::Hash(h) => {
                    self.bundle.filter(|b| b.reference.hash == h).map(|b| b.reference.number)
                }
                _ => None,
            })
            .min()
    }

    /// Whether a state read of this packet names a block (a number, a hash, `earliest`).
    fn names_a_block(&self) -> bool {
        self.packet
            .requests()
            .iter()
            .any(|req| matches!(BlockParam::of(req), Some(BlockParam::Number(_) | BlockParam::Hash(_))))
    }

    /// The packet's size as sent: its serialized JSON.
    pub(crate) fn size(&self) -> usize {
        *self.size.get_or_init(|| serde_json::to_vec(self.packet).map_or(0, |body| body.len()))
    }

    /// The one method of the packet, when all its calls have it.
    fn one_method(&self) -> Option<&str> {
        let mut methods = self.packet.requests().iter().map(|r| r.method());
        let first = methods.next()?;
        methods.all(|m| m == first).then_some(first)
    }
}

impl Coherence {
    /// The endpoints that cannot serve this packet, and why (those in `excluded` aside). Errs
    /// when a bundle's misses or the monotonic floor leave no endpoint; capabilities never do
    /// (when every endpoint lacks what the packet needs, it goes as if none did, and the nodes
    /// answer).
    pub(crate) fn unfit(
        &self,
        rules: &Rules,
        packet: &Packet<'_>,
        endpoints: &[EndpointId],
        excluded: &[EndpointId],
    ) -> Result<Vec<(EndpointId, Unfit)>, alloy_transport::TransportError> {
        let mut unfit: Vec<(EndpointId, Unfit)> = Vec::new();
        let out = |unfit: &[(EndpointId, Unfit)], id: &EndpointId| {
            excluded.contains(id) || unfit.iter().any(|(e, _)| e == id)
        };
        let none_left = |unfit: &[(EndpointId, Unfit)]| endpoints.iter().all(|e| out(unfit, e));
        if let Some(bundle) = packet.bundle {
            let missed = bundle.missed();
            if !missed.is_empty() {
                for id in missed {
                    if !out(&unfit, &id) {
                        unfit.push((id, Unfit::UnknownBlock));
                    }
                }
                if none_left(&unfit) {
                    return Err(bundle.unknown());
                }
            }
        }
        if let (Some(heads), true) = (&rules.heads, packet.reads) {
            // A bundle's reads are pinned to its reference: a provider at or above it can
            // answer them; only one known below it is passed over. Other reads: the highest
            // head already observed, and a provider is passed over only when its known head
            // (a monitor's view, which trails the chain by a probe's age) is more than the
            // tolerance below it; when that would leave none, the read goes ahead and the
            // answers are judged (an `eth_blockNumber` below the floor still fails over).
            let (floor, tolerance) = match packet.bundle {
                Some(b) => (b.reference.number, 0),
                None => (self.head.get(), crate::DEFAULT_TOLERANCE),
            };
            let behind: Vec<(EndpointId, u64)> = endpoints
                .iter()
                .filter_map(|id| {
                    heads.of(id).filter(|h| h.saturating_add(tolerance) < floor).map(|h| (id.clone(), h))
                })
                .collect();
            let before = unfit.len();
            for (id, h) in &behind {
                if !out(&unfit, id) {
                    unfit.push((id.clone(), Unfit::BelowFloor { head: Some(*h), floor }));
                }
            }
            if none_left(&unfit) && !behind.is_empty() {
                if packet.bundle.is_some() {
                    let behind = behind.into_iter().map(|(id, h)| (id, Some(h))).collect();
                    return Err(Raised::new(Detail::BelowFloor { floor, behind }).into_transport());
                }
                unfit.truncate(before);
            }
        }
        if self.capabilities.is_active() {
            let before = unfit.len();
            let archive = OnceCell::new();
            let block_hash = packet.bundle.is_some();
            let methods = packet.packet.requests();
            let mut lacking = Vec::new();
            self.capabilities.lacking_for(
                |capability| match capability {
                    Capability::Archive => *archive.get_or_init(|| self.needs_archive(rules, packet)),
                    Capability::BlockHash => block_hash,
                    // Serialized only when some endpoint lacks a request size.
                    Capability::RequestSize(max) => packet.size() > *max,
                    other => methods.iter().any(|r| other.needed_by_method(r.method())),
                },
                &mut lacking,
            );
            for (id, capability) in lacking {
                if !out(&unfit, &id) {
                    unfit.push((id, Unfit::Lacks(capability.to_string())));
                }
            }
            if none_left(&unfit) {
                unfit.truncate(before);
            }
        }
        Ok(unfit)
    }

    /// Whether a state read of `packet` is more than the archive depth behind the head.
    fn needs_archive(&self, rules: &Rules, packet: &Packet<'_>) -> bool {
        let head = self.head.get();
        packet.oldest_block().is_some_and(|n| head.saturating_sub(n) > rules.archive_depth)
    }

    /// Learns from what an answer of `endpoint` said it lacked.
    pub(crate) fn learn(&self, rules: &Rules, packet: &Packet<'_>, endpoint: &EndpointId, missed: Missed) {
        let at_block = missed.has(Missing::Block) || missed.has(Missing::State);
        if let (Some(bundle), true) = (packet.bundle, at_block) {
            bundle.missed_at(endpoint);
        }
        if missed.has(Missing::State) && packet.names_a_block() {
            self.found(rules, endpoint, Capability::Archive);
        }
        if let (true, Some(method)) = (missed.has(Missing::Method), packet.one_method()) {
            self.found(rules, endpoint, Capability::of_method(method));
        }
    }

    /// `endpoint` answered HTTP 413 to `packet`: it lacks requests of its size.
    pub(crate) fn too_large(&self, rules: &Rules, packet: &Packet<'_>, endpoint: &EndpointId) {
        let size = packet.size();
        if size > 0 {
            self.found(rules, endpoint, Capability::RequestSize(size - 1));
        }
    }

    fn found(&self, rules: &Rules, endpoint: &EndpointId, capability: Capability) {
        #[cfg(feature = "tracing")]
        let shown = capability.to_string();
        if self.capabilities.found(endpoint, capability, rules.lack_for) {
            #[cfg(feature = "tracing")]
            tracing::debug!(target: "failnext", %endpoint, capability = %shown, for_ = ?rules.lack_for, "endpoint found to lack a capability");
        }
    }
}

/// The lowest `eth_blockNumber` result in `answer`, for the calls of `packet` that ask it.
pub(crate) fn lowest_head(packet: &RequestPacket, answer: &ResponsePacket) -> Option<u64> {
    let asks = |r: &Response| {
        packet.requests().iter().any(|req| req.method() == "eth_blockNumber" && *req.id() == r.id)
    };
    responses(answer)
        .iter()
        .filter(|r| asks(r))
        .filter_map(|r| match &r.payload {
            ResponsePayload::Success(v) => serde_json::from_str::<&str>(v.get()).ok().and_then(quantity),
            ResponsePayload::Failure(_) => None,
        })
        .min()
}

/// `answer`, a single successful `eth_blockNumber` answer, with `head` as its result (the
/// same id); `None` for anything else.
pub(crate) fn head_answer(answer: &ResponsePacket, head: u64) -> Option<ResponsePacket> {
    let ResponsePacket::Single(response) = answer else { return None };
    let ResponsePayload::Success(_) = &response.payload else { return None };
    let result = serde_json::value::RawValue::from_string(format!("\"0x{head:x}\"")).ok()?;
    Some(ResponsePacket::Single(Response {
        id: response.id.clone(),
        payload: ResponsePayload::Success(result),
    }))
}

/// Whether `packet` asks `eth_blockNumber` (a string comparison per call).
pub(crate) fn asks_head(packet: &RequestPacket) -> bool {
    packet.requests().iter().any(|r| r.method() == "eth_blockNumber")
}

fn responses(answer: &ResponsePacket) -> &[Response] {
    match answer {
        ResponsePacket::Single(r) => std::slice::from_ref(r),
        ResponsePacket::Batch(rs) => rs,
    }
}

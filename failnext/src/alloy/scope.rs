//! [`PacketScope`]: what one packet knows about itself, handed to the one request loop as its
//! [`Scope`]: the endpoints that cannot serve it (with why), the review of each judged answer
//! (HTTP 413, an `eth_blockNumber` below the floor, what a stale answer says an endpoint
//! lacks), and later attempts made again from the packet.

use std::borrow::Borrow;
use std::sync::{Arc, Mutex, MutexGuard};

use alloy_json_rpc::RequestPacket;
use http::StatusCode;
use http::header::{CONTENT_TYPE, HeaderValue};
use reqwest::Response;

use super::coherence::{Coherence, Packet, Rules};
use super::reference::BundleState;
use crate::judging::scope::{Scope, Unfit};
use crate::{EndpointId, Judgement};

/// One packet's scope. `P` is the packet: borrowed on the transport's own route, shared (an
/// `Arc`) down a client chain, where the scope must live in the request's extensions.
pub(crate) struct PacketScope<P> {
    pub(crate) packet: P,
    pub(crate) coherence: Arc<Coherence>,
    pub(crate) rules: Rules,
    pub(crate) bundle: Option<Arc<BundleState>>,
    /// Every call is a plain read.
    pub(crate) reads: bool,
    /// The body's size as sent.
    pub(crate) size: usize,
    /// With monotonic reads, for a single `eth_blockNumber` that may fail over: the floor its
    /// answer must reach.
    pub(crate) floor: Option<u64>,
    /// The endpoints that cannot serve the packet, and why.
    pub(crate) unfit: Vec<(EndpointId, Unfit)>,
    /// The endpoints whose `eth_blockNumber` answer was below the floor, with it.
    pub(crate) behind: Mutex<Vec<(EndpointId, Option<u64>)>>,
    /// Every endpoint, for the best head known when an empty answer is judged.
    pub(crate) endpoints: Arc<[EndpointId]>,
}

impl PacketScope<()> {
    /// This scope, for `packet`.
    pub(crate) fn with<P>(self, packet: P) -> PacketScope<P> {
        let PacketScope {
            packet: (),
            coherence,
            rules,
            bundle,
            reads,
            size,
            floor,
            unfit,
            behind,
            endpoints,
        } = self;
        PacketScope { packet, coherence, rules, bundle, reads, size, floor, unfit, behind, endpoints }
    }
}

impl<P: Borrow<RequestPacket>> PacketScope<P> {
    /// The packet as coherence sees it.
    fn view(&self) -> Packet<'_> {
        Packet::new(self.packet.borrow(), self.bundle.as_deref(), self.reads).sized(self.size)
    }

    fn behind_list(&self) -> MutexGuard<'_, Vec<(EndpointId, Option<u64>)>> {
        self.behind.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The endpoints whose answer was below the floor, in the order they answered.
    pub(crate) fn behind(&self) -> Vec<(EndpointId, Option<u64>)> {
        self.behind_list().clone()
    }

    /// An empty answer (`null`, `[]`) from `endpoint` is no answer when its known head is below
    /// the block in question ([`super::empty`]): why, then.
    fn not_there_yet(&self, endpoint: &EndpointId) -> Option<Unfit> {
        let heads = self.rules.heads.as_ref()?;
        let asked = super::empty::asked(self.packet.borrow())?;
        let head = heads.of(endpoint)?;
        let best = self.endpoints.iter().filter_map(|e| heads.of(e)).chain([self.coherence.head.get()]).max();
        let needed = asked.needs(best.filter(|b| *b > 0))?;
        (head < needed).then_some(Unfit::BelowFloor { head: Some(head), floor: needed })
    }
}

impl<P: Borrow<RequestPacket> + Send + Sync> Scope for PacketScope<P> {
    fn unfit(&self, endpoint: &EndpointId) -> Option<Unfit> {
        self.unfit.iter().find(|(e, _)| e == endpoint).map(|(_, why)| why.clone())
    }

    fn review(
        &self,
        endpoint: &EndpointId,
        response: Option<&Response>,
        judgement: &Judgement,
    ) -> Option<Unfit> {
        let response = response?;
        if response.status() == StatusCode::PAYLOAD_TOO_LARGE {
            // This provider takes no request this large; another may.
            self.coherence.too_large(&self.rules, &self.view(), endpoint);
            return Some(Unfit::TooLarge);
        }
        let findings = judgement.findings();
        if findings.lacks_anything() {
            self.coherence.learn(&self.rules, &self.view(), endpoint, findings.missed);
            if self.bundle.is_some() && (findings.lacks_block() || findings.lacks_state()) {
                // Not an answer at the bundle's block, whatever the classifier made of it.
                return Some(Unfit::UnknownBlock);
            }
        }
        if findings.empty_result() && self.reads {
            if let Some(why) = self.not_there_yet(endpoint) {
                return Some(why);
            }
        }
        match (self.floor, findings.quantity()) {
            // A block or two below: answered with the floor (the transport's own rule).
            (Some(floor), Some(head)) if head.saturating_add(crate::DEFAULT_TOLERANCE) < floor => {
                self.behind_list().push((endpoint.clone(), Some(head)));
                Some(Unfit::BelowFloor { head: Some(head), floor })
            }
            _ => None,
        }
    }

    fn rebuilds(&self) -> bool {
        true
    }

    fn rebuild(&self, url: &url::Url) -> Option<reqwest::Request> {
        Some(again(self.packet.borrow(), url))
    }
}

/// A later attempt of `packet` to `url`, made again from the packet (serialized anew) rather
/// than copied before the first attempt: the healthy path copies nothing.
pub(crate) fn again(packet: &RequestPacket, url: &url::Url) -> reqwest::Request {
    let mut req = reqwest::Request::new(http::Method::POST, url.clone());
    let headers = req.headers_mut();
    headers.extend(packet.headers());
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    // It serialized for the first attempt, so it does again; an empty body otherwise.
    *req.body_mut() = Some(serde_json::to_vec(packet).unwrap_or_default().into());
    req
}

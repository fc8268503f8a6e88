//! `eth_getLogs` that no provider serves whole: split into ranges the providers serve, each
//! part a read that fails over as any other, and the parts' logs merged into the one answer an
//! unlimited node would give; and each provider's range limit, learnt from its answers.
//!
//! # Why
//!
//! Providers cap a logs query: by its block range ("exceed maximum block range: 5000"), by the
//! number of logs it returns ("query returned more than 10000 results"), each its own way. The
//! JSON-RPC classifier judges such an answer a [`Class::Limit`]: the query fails over and the
//! provider is not cooled. When every provider refuses, the caller would get the last refusal,
//! although the same logs are there for the asking, a narrower range at a time.
//!
//! # How
//!
//! - **Which queries.** One `eth_getLogs` (a single call, not a batch) whose filter has
//!   numeric `fromBlock` and `toBlock` (hex quantities, or `"earliest"`), `fromBlock <=
//!   toBlock`, and no `blockHash`. A tag (`"latest"`, a missing `toBlock`) is left alone: its
//!   range moves while the parts are read.
//! - **A refusal.** The answer is an error (a JSON-RPC error response, or an HTTP error), and
//!   the request's [`Trace`] shows the endpoint that gave it judged [`Class::Limit`] (or its
//!   HTTP 413 overruled as [`Unfit::TooLarge`]). The query asks for its trace, so judging is
//!   the classifier's, read once.
//! - **Parts.** The range is cut into parts as wide as the widest one a provider is known to
//!   serve, else in halves; each part is the caller's call (same id, same metadata: its
//!   exclusions and permission hold) with its own range, sent through the transport. A part
//!   refused again is cut again; a one-block part refused is the end: the providers' own error
//!   is returned. Any other failure of a part (no provider answered, an error answer that is
//!   not a refusal) is returned as it is.
//! - **Merging.** The parts' logs in block order (`blockNumber`, then `logIndex`), each log
//!   once (by `blockHash`, else `blockNumber`, and `logIndex`), as one answer with the
//!   caller's id. Each log is passed on as the provider wrote it.
//! - **Bounds.** At most [`MAX_PARTS`] parts (a cut that would need more is not made), and no
//!   new part after the transport's [deadline](super::FailoverTransportBuilder::deadline)
//!   (counted from the query's start; each part has its own too). Past either, the first refusal is
//!   returned.
//!
//! # What is learnt
//!
//! Per provider, the widest range it served and the narrowest it refused (for
//! [`LEARNT_FOR`]; a range it serves later forgets the refusal). A query no provider is known
//! to refuse goes in the transport's order, untouched. One that some provider is known to
//! refuse goes first to a provider that served one as wide, else to one not known to refuse
//! it; one every provider is known to refuse is cut at once, unasked, to the widest range a
//! provider served. So one refusal teaches the transport, and the next query as wide costs no
//! refused attempt.

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

use alloy_json_rpc::{
    Id, Request, RequestPacket, Response, ResponsePacket, ResponsePayload, SerializedRequest,
};
use alloy_transport::{TransportError, TransportErrorKind, TransportResult};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio::time::Instant;

use super::call::{ServedByCell, TraceCell};
use crate::{Class, EndpointId, PreferredEndpoint, Trace, TraceStep, Unfit};

/// The most parts one logs query is split into.
pub(crate) const MAX_PARTS: usize = 4096;

/// How long a provider's refusal of a range is remembered (then it is asked again).
pub(crate) const LEARNT_FOR: Duration = Duration::from_secs(600);

/// A range of blocks, both ends included.
type Range = (u64, u64);

/// What splitting a logs query needs of the transport that sends it (implemented by the
/// transport, so that this module does not depend on it).
pub(crate) trait Splitter {
    /// The limits learnt so far; `None` when this transport does not split logs.
    fn limits(&self) -> Option<&Limits>;
    /// The providers, in the transport's order.
    fn endpoint_ids(&self) -> &[EndpointId];
    /// Sends one call (a part, or the query whole) as any other read.
    fn send_one(&self, packet: RequestPacket)
    -> impl Future<Output = TransportResult<ResponsePacket>> + Send;
}

// ===== Query =====

/// One `eth_getLogs` call the transport may split.
#[derive(Debug)]
pub(crate) struct Query {
    request: SerializedRequest,
    filter: Map<String, Value>,
    from: u64,
    to: u64,
}

impl Query {
    /// `packet` as a logs query to split when refused: one `eth_getLogs` whose filter has
    /// numeric bounds and no `blockHash`, on a transport that splits logs; else the packet back.
    pub(crate) fn of(transport: &impl Splitter, packet: RequestPacket) -> Result<Query, RequestPacket> {
        let RequestPacket::Single(request) = packet else { return Err(packet) };
        if transport.limits().is_none() || request.method() != "eth_getLogs" {
            return Err(RequestPacket::Single(request));
        }
        match bounds(&request) {
            Some((filter, from, to)) => Ok(Query { request, filter, from, to }),
            None => Err(RequestPacket::Single(request)),
        }
    }

    /// The query's answer: as sent when a provider serves it, else merged from its parts.
    pub(crate) async fn fetch(self, transport: &impl Splitter) -> TransportResult<ResponsePacket> {
        let Some(limits) = transport.limits() else {
            return transport.send_one(RequestPacket::Single(self.request)).await;
        };
        let endpoints = transport.endpoint_ids();
        let deadline = limits.deadline.map(|d| Instant::now() + d);
        let mut refusal = None;
        let whole = width((self.from, self.to));
        let mut pending = match limits.advice(endpoints, whole) {
            Advice::Split(chunk) => chunks((self.from, self.to), chunk),
            Advice::Send(prefer) => {
                match send(transport, limits, whole, self.request.clone(), prefer).await {
                    Judged::Refused(answer) if whole > 1 => {
                        refusal = Some(answer);
                        chunks((self.from, self.to), limits.chunk(endpoints, whole))
                    }
                    Judged::Refused(answer) | Judged::Answer(answer) => return answer,
                }
            }
        };
        let mut logs = Vec::new();
        let mut parts = 0;
        while let Some(range) = pending.pop() {
            let prefer = match limits.advice(endpoints, width(range)) {
                Advice::Split(chunk) => {
                    let more = chunks(range, chunk);
                    if parts + pending.len() + more.len() > MAX_PARTS {
                        return given_up(refusal);
                    }
                    pending.extend(more);
                    continue;
                }
                Advice::Send(prefer) => prefer,
            };
            if parts >= MAX_PARTS || deadline.is_some_and(|d| Instant::now() >= d) {
                return given_up(refusal);
            }
            parts += 1;
            let request = self.part(range)?;
            match send(transport, limits, width(range), request, prefer).await {
                Judged::Refused(answer) if width(range) > 1 => {
                    let more = chunks(range, limits.chunk(endpoints, width(range)));
                    if parts + pending.len() + more.len() > MAX_PARTS {
                        return given_up(refusal.or(Some(answer)));
                    }
                    refusal.get_or_insert(answer);
                    pending.extend(more);
                }
                // One block refused: the providers' own error.
                Judged::Refused(answer) => return answer,
                Judged::Answer(Ok(packet)) => match listed(&packet)? {
                    Some(part) => logs.extend(part),
                    None => return Ok(packet),
                },
                Judged::Answer(err) => return err,
            }
        }
        merged(self.request.id().clone(), logs)
    }

    /// The caller's call over `range`: the same id and metadata, the filter's bounds replaced.
    fn part(&self, (from, to): Range) -> TransportResult<SerializedRequest> {
        let mut filter = self.filter.clone();
        filter.insert("fromBlock".to_owned(), Value::String(format!("{from:#x}")));
        filter.insert("toBlock".to_owned(), Value::String(format!("{to:#x}")));
        Request { meta: self.request.meta().clone(), params: [filter] }
            .serialize()
            .map_err(TransportError::ser_err)
    }
}

/// The filter of an `eth_getLogs` call and its bounds, when both are numbers, in order, and
/// the filter names no block hash.
fn bounds(request: &SerializedRequest) -> Option<(Map<String, Value>, u64, u64)> {
    let [filter]: [Map<String, Value>; 1] = super::block::params(request)?;
    if filter.contains_key("blockHash") {
        return None;
    }
    let number = |key: &str| match filter.get(key)? {
        Value::String(s) if s == "earliest" => Some(0),
        Value::String(s) => super::block::quantity(s),
        _ => None,
    };
    let (from, to) = (number("fromBlock")?, number("toBlock")?);
    (from <= to).then_some((filter, from, to))
}

/// How many blocks `range` spans.
const fn width((from, to): Range) -> u64 {
    to - from + 1
}

/// `range` cut into parts at most `chunk` wide (at least one block, and narrower than the
/// range when it spans more than one), the lowest last: the order a stack pops them.
fn chunks((from, to): Range, chunk: u64) -> Vec<Range> {
    let chunk = chunk.clamp(1, width((from, to)).saturating_sub(1).max(1));
    let mut parts = Vec::new();
    let mut start = from;
    loop {
        let end = start.saturating_add(chunk - 1).min(to);
        parts.push((start, end));
        if end == to {
            break;
        }
        start = end + 1;
    }
    parts.reverse();
    parts
}

/// What a split that went past its bounds returns: the first refusal met, else an error.
fn given_up(refusal: Option<TransportResult<ResponsePacket>>) -> TransportResult<ResponsePacket> {
    refusal.unwrap_or_else(|| {
        Err(TransportErrorKind::custom_str(
            "eth_getLogs: the range needs more parts, or more time, than the transport allows",
        ))
    })
}

// ===== one part =====

/// An answer as the split sees it.
enum Judged {
    /// Every provider that answered refused the range for its size: this is the last refusal.
    Refused(TransportResult<ResponsePacket>),
    /// Anything else: logs, or a failure that splitting would not mend.
    Answer(TransportResult<ResponsePacket>),
}

/// Sends `request` (a range `width` blocks wide) through the transport, first to `prefer`
/// unless the call prefers another, learns from its trace which providers refused and which
/// served it, and judges the answer. The caller's own served-by and trace cells, if any, get
/// what they would have got.
async fn send(
    transport: &impl Splitter,
    limits: &Limits,
    width: u64,
    mut request: SerializedRequest,
    prefer: Option<EndpointId>,
) -> Judged {
    let (served, trace) = (ServedByCell::new(), TraceCell::new());
    let extensions = request.meta_mut().extensions_mut();
    let theirs = (extensions.insert(served.clone()), extensions.insert(trace.clone()));
    if let Some(id) = prefer.filter(|_| extensions.get::<PreferredEndpoint>().is_none()) {
        extensions.insert(PreferredEndpoint(id));
    }
    let answer = transport.send_one(RequestPacket::Single(request)).await;
    let (served, trace) = (served.get(), trace.get());
    if let (Some(cell), Some(id)) = (theirs.0, &served) {
        cell.set(id);
    }
    if let (Some(cell), Some(trace)) = (theirs.1, &trace) {
        cell.set(trace);
    }
    let refusers = trace.as_ref().map(refusers).unwrap_or_default();
    refusers.iter().for_each(|id| limits.refused(id, width));
    let failed = match &answer {
        Ok(packet) => packet.is_error(),
        Err(err) => err.as_transport_err().and_then(TransportErrorKind::as_http_error).is_some(),
    };
    match served {
        Some(id) if failed && refusers.contains(&id) => Judged::Refused(answer),
        Some(id) if !failed => {
            limits.served(&id, width);
            Judged::Answer(answer)
        }
        _ => Judged::Answer(answer),
    }
}

/// The endpoints `trace` shows refusing the request for its size.
fn refusers(trace: &Trace) -> Vec<EndpointId> {
    let refused = |step: &TraceStep| {
        matches!(step, TraceStep::Tried { class: Class::Limit, .. } | TraceStep::Overruled(Unfit::TooLarge))
    };
    trace.entries().iter().filter(|e| e.steps().iter().any(refused)).map(|e| e.endpoint().clone()).collect()
}

/// The logs of a single success answer (`null` is none); `None` for an error answer.
fn listed(packet: &ResponsePacket) -> TransportResult<Option<Vec<Box<RawValue>>>> {
    let ResponsePacket::Single(Response { payload: ResponsePayload::Success(result), .. }) = packet else {
        return Ok(None);
    };
    let logs: Option<Vec<Box<RawValue>>> =
        serde_json::from_str(result.get()).map_err(|err| TransportError::deser_err(err, result.get()))?;
    Ok(Some(logs.unwrap_or_default()))
}

// ===== merging =====

/// What orders and identifies a log.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Key {
    block_number: Option<String>,
    block_hash: Option<String>,
    log_index: Option<String>,
}

/// A log with what orders it (block number, log index: missing ones last) and what
/// identifies it (block hash or number, and log index).
struct Keyed {
    order: (u64, u64),
    identity: Option<(String, u64)>,
    log: Box<RawValue>,
}

impl Keyed {
    fn of(log: Box<RawValue>) -> Keyed {
        let quantity = |q: &Option<String>| q.as_deref().and_then(super::block::quantity);
        let key = serde_json::from_str::<Key>(log.get()).ok();
        let number = key.as_ref().and_then(|k| quantity(&k.block_number));
        let index = key.as_ref().and_then(|k| quantity(&k.log_index));
        let identity = key.and_then(|k| Some((k.block_hash.or(k.block_number)?, index?)));
        Keyed { order: (number.unwrap_or(u64::MAX), index.unwrap_or(u64::MAX)), identity, log }
    }
}

/// `logs` in block order (a log without a block number last, as it came), each once, as one
/// answer with id `id`.
fn merged(id: Id, logs: Vec<Box<RawValue>>) -> TransportResult<ResponsePacket> {
    let mut keyed: Vec<Keyed> = logs.into_iter().map(Keyed::of).collect();
    keyed.sort_by_key(|k| k.order);
    let mut seen = HashSet::new();
    let mut body = String::from("[");
    for Keyed { identity, log, .. } in keyed {
        if identity.is_some_and(|identity| !seen.insert(identity)) {
            continue;
        }
        if body.len() > 1 {
            body.push(',');
        }
        body.push_str(log.get());
    }
    body.push(']');
    let result = RawValue::from_string(body).map_err(|err| TransportError::deser_err(err, "merged logs"))?;
    Ok(ResponsePacket::Single(Response { id, payload: ResponsePayload::Success(result) }))
}

// ===== Limits =====

/// What the transport has learnt of each provider's logs range, and how long a split may go
/// on. Clones of the transport share it.
#[derive(Debug, Default)]
pub(crate) struct Limits {
    known: Mutex<Vec<(EndpointId, Known)>>,
    /// No part is started this long after the query's start (the transport's deadline).
    deadline: Option<Duration>,
    /// The fleet the refusals are shared with (feature `redis`), and whether this transport
    /// listens for the others'.
    #[cfg(feature = "redis")]
    fleet: Option<(crate::fleet::Fleet, std::sync::OnceLock<std::sync::Weak<Limits>>)>,
    #[cfg(feature = "redis")]
    listening: std::sync::atomic::AtomicBool,
}

/// One provider's known range limits.
#[derive(Clone, Copy, Debug, Default)]
struct Known {
    /// The widest range it served (0: none yet).
    served: u64,
    /// The narrowest range it refused, and when.
    refused: Option<(u64, Instant)>,
}

impl Known {
    /// Whether it is known to refuse a range `width` blocks wide, at `now`.
    fn refuses(&self, width: u64, now: Instant) -> bool {
        self.refused.is_some_and(|(refused, at)| refused <= width && now.duration_since(at) < LEARNT_FOR)
    }
}

/// What to do with a range, as far as the limits tell.
#[derive(Debug, PartialEq, Eq)]
enum Advice {
    /// Send it, first to this endpoint when given.
    Send(Option<EndpointId>),
    /// Every provider is known to refuse it: cut it into parts this wide, unasked.
    Split(u64),
}

impl Limits {
    /// Nothing learnt yet; no part started `deadline` after a query's start.
    #[cfg_attr(feature = "redis", allow(dead_code, reason = "with a fleet, made by `shared`"))]
    pub(crate) fn until(deadline: Option<Duration>) -> Limits {
        Limits { deadline, ..Limits::default() }
    }

    /// The same, sharing what it learns with `fleet` (feature `redis`): each refusal learnt
    /// here is announced, and the refusals other processes announce are learnt here (from
    /// the first logs query on; refusals announced before are learnt again at a refusal).
    #[cfg(feature = "redis")]
    pub(crate) fn shared(
        deadline: Option<Duration>,
        fleet: Option<crate::fleet::Fleet>,
    ) -> std::sync::Arc<Limits> {
        let fleet = fleet.map(|f| (f, std::sync::OnceLock::new()));
        let limits = std::sync::Arc::new(Limits { deadline, fleet, ..Limits::default() });
        if let Some((_, me)) = &limits.fleet {
            let _ = me.set(std::sync::Arc::downgrade(&limits));
        }
        limits
    }

    /// Starts listening for the refusals other processes of the fleet announce, once.
    #[cfg(feature = "redis")]
    fn listen(&self) {
        let Some((fleet, me)) = &self.fleet else { return };
        let me = me.get().cloned().unwrap_or_default();
        fleet.listen_for(&self.listening, me, |limits: &Limits, name, value| {
            if let (Some(id), Ok(width)) = (name.strip_prefix("logs:"), value.parse::<u64>()) {
                limits.refused_here(&EndpointId::from(id), width);
            }
        });
    }

    fn known(&self) -> std::sync::MutexGuard<'_, Vec<(EndpointId, Known)>> {
        self.known.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn update(&self, id: &EndpointId, change: impl FnOnce(&mut Known)) {
        let mut known = self.known();
        match known.iter_mut().find(|(e, _)| e == id) {
            Some((_, k)) => change(k),
            None => {
                let mut k = Known::default();
                change(&mut k);
                known.push((id.clone(), k));
            }
        }
    }

    /// `id` served a range `width` blocks wide.
    fn served(&self, id: &EndpointId, width: u64) {
        self.update(id, |k| {
            k.served = k.served.max(width);
            if k.refused.is_some_and(|(refused, _)| refused <= k.served) {
                k.refused = None;
            }
        });
    }

    /// `id` refused a range `width` blocks wide: learnt, and announced to the fleet.
    fn refused(&self, id: &EndpointId, width: u64) {
        self.refused_here(id, width);
        #[cfg(feature = "redis")]
        if let Some((fleet, _)) = &self.fleet {
            fleet.announce_soon(format!("logs:{}", id.as_str()), width.to_string(), LEARNT_FOR);
        }
    }

    /// `id` refused a range `width` blocks wide, here or (announced) in another process.
    fn refused_here(&self, id: &EndpointId, width: u64) {
        let now = Instant::now();
        self.update(id, |k| {
            let narrowest = match k.refused {
                Some((refused, at)) if now.duration_since(at) < LEARNT_FOR => refused.min(width),
                _ => width,
            };
            k.refused = Some((narrowest, now));
            k.served = k.served.min(narrowest - 1);
        });
    }

    /// What to do with a range `width` blocks wide, over `endpoints` in order.
    ///
    /// While no provider is known to refuse it, the transport's order stands; else a provider
    /// known to serve it goes first, or one not known to refuse it; when every provider is
    /// known to refuse it, it is cut unasked.
    fn advice(&self, endpoints: &[EndpointId], width: u64) -> Advice {
        #[cfg(feature = "redis")]
        self.listen();
        let now = Instant::now();
        let known = self.known();
        let of = |id: &EndpointId| known.iter().find(|(e, _)| e == id).map(|(_, k)| *k).unwrap_or_default();
        let refuses = |id: &&EndpointId| of(id).refuses(width, now);
        if !endpoints.iter().any(|id| refuses(&id)) {
            return Advice::Send(None);
        }
        if let Some(id) = endpoints.iter().find(|id| of(id).served >= width) {
            return Advice::Send(Some(id.clone()));
        }
        if endpoints.iter().all(|id| refuses(&id)) && width > 1 {
            return Advice::Split(chunk(&known, endpoints, width));
        }
        Advice::Send(endpoints.iter().find(|id| !refuses(id)).cloned())
    }

    /// How wide the parts of a refused range `width` blocks wide are: the widest range a
    /// provider is known to serve, else half the range.
    fn chunk(&self, endpoints: &[EndpointId], width: u64) -> u64 {
        chunk(&self.known(), endpoints, width)
    }
}

/// [`Limits::chunk`] of what is `known`.
fn chunk(known: &[(EndpointId, Known)], endpoints: &[EndpointId], width: u64) -> u64 {
    let widest = known
        .iter()
        .filter(|(id, _)| endpoints.contains(id))
        .map(|(_, k)| k.served)
        .filter(|served| (1..width).contains(served))
        .max();
    widest.unwrap_or_else(|| width.div_ceil(2))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(names: &[&str]) -> Vec<EndpointId> {
        names.iter().map(|n| EndpointId::from(*n)).collect()
    }

    fn raw(json: &str) -> Box<RawValue> {
        RawValue::from_string(json.to_owned()).unwrap()
    }

    fn log(block: u64, index: u64) -> Box<RawValue> {
        raw(&format!(
            r#"{{"blockNumber":"{block:#x}","blockHash":"0x{block:064x}","logIndex":"{index:#x}"}}"#
        ))
    }

    fn result(packet: &ResponsePacket) -> Value {
        match packet {
            ResponsePacket::Single(Response { payload: ResponsePayload::Success(r), .. }) => {
                serde_json::from_str(r.get()).unwrap()
            }
            other => panic!("{other:?}"),
        }
    }

    /// Stands in for providers that serve at most `limits[i]` blocks: what the split does,
    /// part by part, until each part is served; the parts served, in order.
    fn split_against(
        limits: &Limits,
        range: Range,
        provider_limits: &[u64],
        names: &[EndpointId],
    ) -> (Vec<Range>, usize) {
        let mut pending = vec![range];
        let (mut served, mut asked) = (Vec::new(), 0);
        while let Some(range) = pending.pop() {
            let prefer = match limits.advice(names, width(range)) {
                Advice::Split(chunk) => {
                    pending.extend(chunks(range, chunk));
                    continue;
                }
                Advice::Send(prefer) => prefer,
            };
            // The loop: the preferred provider first, then the others in order.
            let order = prefer.iter().chain(names.iter().filter(|id| Some(*id) != prefer.as_ref()));
            let mut answered = false;
            for id in order {
                asked += 1;
                let i = names.iter().position(|n| n == id).unwrap();
                if width(range) <= provider_limits[i] {
                    limits.served(id, width(range));
                    answered = true;
                    break;
                }
                limits.refused(id, width(range));
            }
            if answered {
                served.push(range);
            } else {
                pending.extend(chunks(range, limits.chunk(names, width(range))));
            }
        }
        (served, asked)
    }

    #[test]
    fn a_range_refused_everywhere_is_halved_until_each_part_is_served() {
        let names = ids(&["a", "b"]);
        let (served, _) = split_against(&Limits::default(), (0, 999), &[100, 300], &names);
        assert_eq!(served.first().map(|r| r.0), Some(0));
        assert_eq!(served.last().map(|r| r.1), Some(999));
        assert!(served.windows(2).all(|w| w[0].1 + 1 == w[1].0), "contiguous, in order: {served:?}");
        assert!(served.iter().all(|r| width(*r) <= 300), "{served:?}");
    }

    #[test]
    fn one_refusal_teaches_and_the_next_query_is_cut_to_a_served_width_and_sent_where_it_was_served() {
        let (names, limits) = (ids(&["a", "b", "c"]), Limits::default());
        let (served, asked) = split_against(&limits, (0, 10_000), &[1000, 2000, 5000], &names);
        assert!(served.iter().all(|r| width(*r) <= 5000), "{served:?}");
        // The whole and its first half (3 refusals each), the first quarter and the second
        // (a and b refuse, c serves), then the second half, which a and b are known to
        // refuse, straight to c.
        assert_eq!(served, [(0, 2500), (2501, 5000), (5001, 10_000)]);
        assert_eq!(asked, 3 + 3 + 3 + 3 + 1);
        // The next query, as wide: cut unasked, every part straight to c.
        let (served, asked) = split_against(&limits, (0, 10_000), &[1000, 2000, 5000], &names);
        assert_eq!(asked, served.len(), "{served:?}");
    }

    #[test]
    fn a_width_every_provider_refused_is_split_without_asking() {
        let names = ids(&["a", "b"]);
        let limits = Limits::default();
        limits.refused(&names[0], 1000);
        assert_eq!(
            limits.advice(&names, 1000),
            Advice::Send(Some(names[1].clone())),
            "b is not known to refuse"
        );
        limits.refused(&names[1], 800);
        limits.served(&names[1], 400);
        assert_eq!(limits.advice(&names, 2000), Advice::Split(400));
        assert_eq!(limits.advice(&names, 400), Advice::Send(None), "none is known to refuse it: in order");
        limits.refused(&names[0], 300);
        assert_eq!(limits.advice(&names, 400), Advice::Send(Some(names[1].clone())), "b served it");
    }

    #[test]
    fn a_range_served_later_forgets_the_refusal() {
        let id = EndpointId::from("a");
        let limits = Limits::default();
        limits.refused(&id, 1000);
        assert_eq!(limits.advice(std::slice::from_ref(&id), 1000), Advice::Split(500));
        limits.served(&id, 1000);
        assert_eq!(limits.advice(std::slice::from_ref(&id), 1000), Advice::Send(None));
    }

    #[tokio::test(start_paused = true)]
    async fn a_refusal_is_forgotten_after_a_while() {
        let names = ids(&["a"]);
        let limits = Limits::default();
        limits.refused(&names[0], 1000);
        assert_eq!(limits.advice(&names, 1000), Advice::Split(500));
        tokio::time::advance(LEARNT_FOR).await;
        assert_eq!(limits.advice(&names, 1000), Advice::Send(None));
    }

    #[test]
    fn chunks_cover_the_range_lowest_last_and_never_the_whole() {
        assert_eq!(chunks((10, 19), 4), vec![(18, 19), (14, 17), (10, 13)]);
        assert_eq!(chunks((10, 19), 10), vec![(19, 19), (10, 18)], "never the whole range");
        assert_eq!(chunks((5, 5), 3), vec![(5, 5)]);
        assert_eq!(chunks((0, u64::MAX - 1), u64::MAX).len(), 2);
    }

    #[test]
    fn merged_logs_are_in_block_order_each_once_with_the_callers_id() {
        let logs = vec![log(7, 1), log(3, 0), log(7, 0), log(3, 0), log(9, 2)];
        let packet = merged(Id::Number(42), logs).unwrap();
        let ResponsePacket::Single(response) = &packet else { panic!("a batch") };
        assert_eq!(response.id, Id::Number(42));
        let order: Vec<(String, String)> = result(&packet)
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                (l["blockNumber"].as_str().unwrap().to_owned(), l["logIndex"].as_str().unwrap().to_owned())
            })
            .collect();
        let want = [("0x3", "0x0"), ("0x7", "0x0"), ("0x7", "0x1"), ("0x9", "0x2")];
        assert_eq!(order, want.map(|(b, i)| (b.to_owned(), i.to_owned())));
    }

    #[test]
    fn a_merged_log_is_passed_on_as_the_provider_wrote_it() {
        let written = r#"{"address":"0xab","topics":[],"data":"0x","blockNumber":"0x1","logIndex":"0x0","removed":false}"#;
        let packet = merged(Id::Number(1), vec![raw(written)]).unwrap();
        let ResponsePacket::Single(Response { payload: ResponsePayload::Success(r), .. }) = packet else {
            panic!("not a success")
        };
        assert_eq!(r.get(), format!("[{written}]"));
    }

    #[test]
    fn only_numeric_bounds_without_a_block_hash_are_split() {
        let request =
            |filter: Value| Request::new("eth_getLogs", Id::Number(1), [filter]).serialize().unwrap();
        let splittable = |filter| bounds(&request(filter)).map(|(_, from, to)| (from, to));
        assert_eq!(
            splittable(serde_json::json!({"fromBlock": "0x0", "toBlock": "0x2710"})),
            Some((0, 10_000))
        );
        assert_eq!(
            splittable(serde_json::json!({"fromBlock": "earliest", "toBlock": "0x10"})),
            Some((0, 16))
        );
        assert_eq!(splittable(serde_json::json!({"fromBlock": "0x0", "toBlock": "latest"})), None);
        assert_eq!(splittable(serde_json::json!({"fromBlock": "0x0"})), None);
        assert_eq!(splittable(serde_json::json!({"fromBlock": "0x10", "toBlock": "0x1"})), None);
        assert_eq!(
            splittable(serde_json::json!({"blockHash": "0xab", "fromBlock": "0x0", "toBlock": "0x1"})),
            None
        );
    }

    #[test]
    fn a_part_is_the_callers_call_with_its_own_range() {
        let filter =
            serde_json::json!({"address": "0xab", "fromBlock": "0x0", "toBlock": "0x63", "topics": [null]});
        let request = Request::new("eth_getLogs", Id::Number(9), [filter]).serialize().unwrap();
        let (filter, from, to) = bounds(&request).unwrap();
        let query = Query { request, filter, from, to };
        let part = query.part((16, 31)).unwrap();
        assert_eq!(part.id(), &Id::Number(9));
        let sent: Value = serde_json::from_str(part.serialized().get()).unwrap();
        assert_eq!(
            sent["params"],
            serde_json::json!([{"address": "0xab", "fromBlock": "0x10", "toBlock": "0x1f", "topics": [null]}])
        );
    }
}

//! A packet's way through the loop: its plan and scope, sent on the transport's own client
//! or down the caller's chain (or fanned out), and its answer read back.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use alloy_json_rpc::{RequestPacket, ResponsePacket};
use alloy_transport::{TransportError, TransportErrorKind, TransportResult};
use http::StatusCode;
use http::header::{CONTENT_TYPE, HeaderValue};
use reqwest_middleware::ClientWithMiddleware;

use crate::alloy::coherence::{self, Packet};
use crate::alloy::failure::raised::{Detail, Raised};
use crate::alloy::fanout::Fault;
use crate::alloy::plan::Plan;
use crate::alloy::reference::BundleState;
use crate::alloy::scope::PacketScope;
use crate::alloy::verify::Found;

use super::Answered;
use super::spread::Spread;
use super::verified::Checked;
use crate::request::options::RequestOptions;
use crate::{
    EndpointId, Error, ExcludedEndpoints, Permission, PreferredEndpoint, RequestBuilderExt, RequestScope,
    ResponseExt,
};

use super::{FailoverTransport, Route};

/// Where the transport addresses its requests: `Failover` points each attempt at an
/// endpoint's URL, so this one never leaves the process (and holds no secret).
const ADDRESS: &str = "http://failnext.invalid/";

/// [`ADDRESS`] as a `Url`, parsed once (a request parses a `&str` URL every time); `None`
/// never happens (the constant parses), and then the request parses the string.
fn address() -> Option<url::Url> {
    static PARSED: std::sync::LazyLock<Option<url::Url>> =
        std::sync::LazyLock::new(|| url::Url::parse(ADDRESS).ok());
    PARSED.clone()
}

/// A packet's request, on a reqwest or a middleware chain's builder: its headers, JSON, and
/// its body.
macro_rules! posting {
    ($builder:expr, $packet:expr, $body:expr) => {
        $builder
            .headers($packet.headers())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body($body)
    };
}

/// Where one send is aimed ([`FailoverTransport::aim`]).
struct Aim<'s> {
    permission: Permission,
    excluded: std::borrow::Cow<'s, [EndpointId]>,
    preferred: Option<&'s EndpointId>,
    trace: bool,
}

/// The code and message of the first JSON-RPC error in `answer`, if any.
fn first_error(answer: &ResponsePacket) -> Option<(i64, String)> {
    let responses: &[alloy_json_rpc::Response] = match answer {
        ResponsePacket::Single(r) => std::slice::from_ref(r),
        ResponsePacket::Batch(rs) => rs,
    };
    responses.iter().find_map(|r| match &r.payload {
        alloy_json_rpc::ResponsePayload::Failure(e) => Some((e.code, e.message.to_string())),
        alloy_json_rpc::ResponsePayload::Success(_) => None,
    })
}

/// A non-2xx body that is a JSON-RPC error response, as alloy's `Http` returns it.
fn json_rpc_error_response(body: &[u8]) -> Option<ResponsePacket> {
    let packet = serde_json::from_slice::<ResponsePacket>(body).ok()?;
    packet.is_error().then_some(packet)
}

fn http_error(status: StatusCode, body: String, retry_after: Option<Duration>) -> TransportError {
    TransportErrorKind::http_error_with_retry_after(status.as_u16(), body, retry_after)
}

impl FailoverTransport {
    pub(super) async fn send(self, packet: RequestPacket) -> TransportResult<ResponsePacket> {
        #[cfg(feature = "redis")]
        self.listen_to_fleet();
        // An `eth_getLogs` no provider serves whole is split (boxed: the common path stays small).
        match crate::alloy::logs::Query::of(&self, packet) {
            Ok(query) => Box::pin(query.fetch(&self)).await,
            Err(packet) => self.send_in(packet, None).await,
        }
    }

    /// Sends `packet`, one of `bundle`'s when given (pinned to its reference already), through
    /// the one request loop: plans it, finds the endpoints that cannot serve it (its scope
    /// passes them over, each a decision of the loop), and lets the loop judge each answer
    /// with the packet in view (HTTP 413, an `eth_blockNumber` below the floor, a bundle's
    /// block an endpoint did not know fail over there). What comes back is checked once more
    /// for what the loop had to return for want of another endpoint.
    pub(crate) fn send_in<'a>(
        &'a self,
        packet: RequestPacket,
        bundle: Option<&'a Arc<BundleState>>,
    ) -> impl std::future::Future<Output = TransportResult<ResponsePacket>> + Send + 'a {
        self.send_with(packet, bundle, Vec::new(), true)
    }

    /// `send_in`, never to the providers of `forgers` (found to answer blocks that are not
    /// the chain's); `verify`: the answer's blocks are checked (see `verify.rs`).
    pub(super) async fn send_with(
        &self,
        packet: RequestPacket,
        bundle: Option<&Arc<BundleState>>,
        forgers: Vec<EndpointId>,
        verify: bool,
    ) -> TransportResult<ResponsePacket> {
        let mut plan = Plan::of(&packet, &self.table, &self.memory, &self.endpoints)?;
        plan.excluded.extend(forgers.iter().cloned());
        let reads = plan.calls.is_empty();
        // Writes go only where the user routed them.
        if let Some(writes) = self.writes.as_deref().filter(|_| plan.writes()) {
            plan.excluded.extend(self.endpoints.iter().filter(|id| !writes.contains(id)).cloned());
        }
        let body = bytes::Bytes::from(serde_json::to_vec(&packet).map_err(TransportError::ser_err)?);
        let view = Packet::new(&packet, bundle.map(|b| &**b), reads).sized(body.len());
        let unfit = match plan.pinned {
            None => self.coherence.unfit(&self.rules, &view, &self.endpoints, &plan.excluded)?,
            Some(_) => Vec::new(),
        };
        let spread = self.spread(&packet, &plan, &unfit, reads);
        let asks_head = coherence::asks_head(&packet);
        let monotonic = self.rules.heads.is_some() && reads && plan.may_fail_over;
        let single_head = asks_head && matches!(&packet, RequestPacket::Single(_));
        let scope = PacketScope {
            packet: (),
            coherence: Arc::clone(&self.coherence),
            rules: self.rules.clone(),
            bundle: bundle.cloned(),
            reads,
            size: body.len(),
            floor: (monotonic && single_head).then(|| self.coherence.head.get()),
            unfit,
            behind: Mutex::default(),
            endpoints: Arc::clone(&self.endpoints),
        };
        let (outcome, behind) = match &self.route {
            Route::Direct { client } => {
                let scope = scope.with(&packet);
                let send = |only| self.direct(client, &packet, body.clone(), &plan, &scope, only);
                let outcome = self.spread_out(&spread, &plan, send).await;
                (outcome, scope.behind())
            }
            Route::Chain(client) => {
                // Down a chain the scope rides in the request's extensions: it owns its packet.
                let scope = Arc::new(scope.with(Arc::new(packet.clone())));
                let send = |only| self.chain(client, &packet, body.clone(), &plan, &scope, only);
                let outcome = self.spread_out(&spread, &plan, send).await;
                (outcome, scope.behind())
            }
        };
        let (answer, served) = outcome?;
        if let (Spread::Vote(..), Some(id)) = (&spread, &served) {
            // Each voter's answer marked the call's cells: the one returned names its provider.
            plan.cells.iter().for_each(|cell| cell.set(id));
        }
        let found = if verify { self.coherence.blocks.check(&packet, &answer) } else { Found::Nothing };
        let (answer, served) = match found {
            Found::Nothing | Found::Verified => (answer, served),
            failed => match self.checked(&packet, bundle, (answer, served), forgers, failed).await? {
                Checked::Keep(answer, served) => (answer, served),
                Checked::Replaced(answer) => return Ok(answer),
            },
        };
        self.settled(&packet, bundle, (answer, served), behind, (monotonic, single_head, asks_head))
    }

    /// What the loop returned, checked once more for what it had to return for want of
    /// another endpoint: a bundle's miss, a head below the floor of monotonic reads.
    fn settled(
        &self,
        packet: &RequestPacket,
        bundle: Option<&Arc<BundleState>>,
        (answer, served): (ResponsePacket, Option<EndpointId>),
        behind: Vec<(EndpointId, Option<u64>)>,
        (monotonic, single_head, asks_head): (bool, bool, bool),
    ) -> TransportResult<ResponsePacket> {
        if let (Some(bundle), Some(id)) = (bundle, &served) {
            if bundle.did_miss(id) {
                // What the loop returned for want of another endpoint was a miss: never an
                // answer at that provider's own latest block, the error.
                return Err(bundle.unknown());
            }
        }
        if let Some(n) = asks_head.then(|| coherence::lowest_head(packet, &answer)).flatten() {
            let floor = self.coherence.head.get();
            if monotonic && single_head && n < floor && floor - n <= crate::DEFAULT_TOLERANCE {
                // A block or two below the head already observed (the provider answered a
                // moment earlier than another): the read answers that head, which the chain
                // has, rather than going back or failing over.
                if let Some(at_floor) = coherence::head_answer(&answer, floor) {
                    return Ok(at_floor);
                }
            }
            if monotonic && n < floor {
                let mut behind = behind;
                if let Some(id) = served.filter(|id| !behind.iter().any(|(e, _)| e == id)) {
                    behind.push((id, Some(n)));
                }
                return Err(Raised::new(Detail::BelowFloor { floor, behind }).into_transport());
            }
            self.coherence.head.observe(n);
        }
        Ok(answer)
    }

    /// The packet through the loop on the transport's own client, its options handed over.
    async fn direct(
        &self,
        client: &reqwest::Client,
        packet: &RequestPacket,
        body: bytes::Bytes,
        plan: &Plan<'_>,
        scope: &dyn crate::Scope,
        only: Option<&EndpointId>,
    ) -> TransportResult<Answered> {
        let failover = &self.failover;
        let aim = self.aim(plan, only);
        // Addressed to the first endpoint: its attempt needs no other URL.
        let request = match failover.first_url().cloned().or_else(address) {
            Some(url) => client.post(url),
            None => client.post(ADDRESS),
        };
        let request = posting!(request, packet, body)
            .build()
            .map_err(|e| TransportErrorKind::custom(e.without_url()))?;
        let opts = RequestOptions {
            permission: Some(aim.permission),
            excluded: &aim.excluded,
            preferred: aim.preferred,
            deadline: None,
            trace: aim.trace,
        };
        let sent = failover.execute_on(client, request, &opts, scope).await;
        self.answered(plan, sent.map(|(response, i)| (response, Some(failover.endpoint_id(i).clone())))).await
    }

    /// The packet down the caller's chain, which carries the `Failover`: its options, and the
    /// scope, ride in the request's extensions.
    async fn chain(
        &self,
        client: &ClientWithMiddleware,
        packet: &RequestPacket,
        body: bytes::Bytes,
        plan: &Plan<'_>,
        scope: &Arc<PacketScope<Arc<RequestPacket>>>,
        only: Option<&EndpointId>,
    ) -> TransportResult<Answered> {
        let aim = self.aim(plan, only);
        let request = match address() {
            Some(url) => client.post(url),
            None => client.post(ADDRESS),
        };
        let scope: Arc<dyn crate::Scope> = Arc::clone(scope) as Arc<dyn crate::Scope>;
        let mut request = posting!(request, packet, body)
            .with_extension(aim.permission)
            .with_extension(RequestScope(scope));
        if !aim.excluded.is_empty() {
            request = request.with_extension(ExcludedEndpoints(aim.excluded.into_owned()));
        }
        if let Some(id) = aim.preferred {
            request = request.with_extension(PreferredEndpoint(id.clone()));
        }
        if aim.trace {
            request = request.trace();
        }
        let sent = request.send().await;
        self.answered(
            plan,
            sent.map(|response| {
                let served = response.served_by().cloned();
                (response, served)
            }),
        )
        .await
    }

    /// The answer of a send of `plan`'s packet (who served it), or its failure; the loop's
    /// trace recorded either way.
    async fn answered(
        &self,
        plan: &Plan<'_>,
        sent: Result<(reqwest::Response, Option<EndpointId>), reqwest_middleware::Error>,
    ) -> TransportResult<Answered> {
        match sent {
            Ok((response, served)) => {
                plan.record_trace(response.extensions().get::<crate::Trace>());
                self.answer(plan, response, served).await
            }
            Err(err) => {
                plan.record_trace(Error::from_middleware(&err).and_then(Error::trace));
                Err(plan.send_failed(err))
            }
        }
    }

    /// Where a send of `plan`'s packet is aimed: the plan's exclusions and preference, or, for
    /// one endpoint of a fan-out (`only`), every other endpoint left out; whether it may fail
    /// over, and whether it is traced.
    fn aim<'s>(&'s self, plan: &'s Plan<'_>, only: Option<&'s EndpointId>) -> Aim<'s> {
        let permission = if plan.may_fail_over { Permission::Allow } else { Permission::Deny };
        let (excluded, preferred) = match only {
            None => (std::borrow::Cow::Borrowed(&plan.excluded[..]), plan.preferred.as_ref()),
            Some(only) => {
                let others = self.endpoints.iter().filter(|id| *id != only).cloned().collect();
                (std::borrow::Cow::Owned(others), None)
            }
        };
        Aim { permission, excluded, preferred, trace: !plan.traces.is_empty() }
    }

    /// Sends a raw transaction to each of `targets` at once (the same bytes; each send may
    /// reach only its endpoint) and merges what they did into one [`Broadcast`](crate::alloy::Broadcast):
    /// the first acceptance is the answer; with none, the first refusal, unless an answer
    /// may have been lost or nothing reached any endpoint, which is the error.
    pub(super) async fn fan_out<'a, F, Fut>(
        &self,
        targets: &'a [EndpointId],
        hash: alloy_primitives::B256,
        plan: &Plan<'_>,
        send: F,
    ) -> TransportResult<Answered>
    where
        F: Fn(Option<&'a EndpointId>) -> Fut,
        Fut: std::future::Future<Output = TransportResult<Answered>>,
    {
        use crate::alloy::fanout::{Broadcast, Delivery};
        let targets: Vec<&EndpointId> = targets.iter().filter(|id| !plan.excluded.contains(id)).collect();
        let results = futures_util::future::join_all(targets.iter().map(|id| send(Some(*id)))).await;
        let mut deliveries = Vec::with_capacity(targets.len());
        let (mut accepted, mut refused) = (None, None);
        for (id, result) in targets.into_iter().zip(results) {
            let delivery = match result {
                Ok((answer, served)) => match first_error(&answer) {
                    None => {
                        accepted.get_or_insert((answer, served));
                        Delivery::Accepted
                    }
                    Some((code, message)) => {
                        refused.get_or_insert((answer, served));
                        Delivery::Refused { code, message }
                    }
                },
                Err(err) => {
                    let failure = crate::alloy::Failure::find(&err);
                    match (failure.and_then(|f| f.fault()), failure.and_then(|f| f.http())) {
                        (Some(fault), _) if fault.never_sent() => Delivery::NeverSent { fault },
                        (Some(fault), _) => Delivery::PossiblySubmitted { fault },
                        (None, Some(http)) => Delivery::Refused {
                            code: i64::from(http.status),
                            message: format!("HTTP {}", http.status),
                        },
                        (None, None) => Delivery::PossiblySubmitted { fault: Fault::AnswerLost },
                    }
                }
            };
            deliveries.push((id.clone(), delivery));
        }
        let outcome = Broadcast { hash, deliveries };
        self.memory.fanned_out(hash, outcome.clone());
        match (accepted, refused) {
            (Some(answer), _) => Ok(answer),
            (None, Some(answer)) if !outcome.possibly_submitted() => Ok(answer),
            _ => Err(Raised::new(Detail::Broadcast(outcome)).into_transport()),
        }
    }

    /// The answer `response` (from `served`) makes for `plan`'s packet.
    async fn answer(
        &self,
        plan: &Plan<'_>,
        response: reqwest::Response,
        served: Option<EndpointId>,
    ) -> TransportResult<Answered> {
        if let Some(id) = &served {
            plan.cells.iter().for_each(|cell| cell.set(id));
        }
        let status = response.status();
        // Any status, uncapped: what alloy's own `Http` hands its `RetryBackoffLayer`.
        let retry_after =
            crate::judging::retry_after::from_headers(response.headers(), std::time::SystemTime::now());
        let body = match response.bytes().await {
            Ok(body) => body,
            Err(err) => {
                let err = err.without_url();
                return Err(if plan.writes() {
                    plan.lost(served, Fault::BodyBrokeOff, Some(reqwest_middleware::Error::Reqwest(err)))
                } else if !status.is_success() {
                    http_error(status, format!("<failed to read response body: {err}>"), retry_after)
                } else {
                    TransportErrorKind::custom(err)
                });
            }
        };
        if !status.is_success() {
            if let Some(packet) = json_rpc_error_response(&body) {
                return Ok((packet, served));
            }
            if plan.writes() && status.is_server_error() {
                return Err(plan.lost(served, Fault::Status(status.as_u16()), None));
            }
            return Err(http_error(status, String::from_utf8_lossy(&body).into_owned(), retry_after));
        }
        let mut answer: ResponsePacket = serde_json::from_slice(&body)
            .map_err(|err| TransportError::deser_err(err, String::from_utf8_lossy(&body)))?;
        if let Some(id) = &served {
            plan.learn(&mut answer, id, &self.memory);
        }
        Ok((answer, served))
    }
}

//! [`FailoverTransport`]: alloy's JSON-RPC packets through a failnext client.

use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use alloy_json_rpc::{RequestPacket, ResponsePacket};
use alloy_transport::{
    BoxTransport, TransportConnect, TransportError, TransportErrorKind, TransportFut, TransportResult,
};
use http::StatusCode;
use http::header::{CONTENT_TYPE, HeaderValue};
use reqwest_middleware::ClientWithMiddleware;
use serde_json::value::RawValue;

use super::capability::Capability;
use super::coherence::{self, Coherence, Packet, Rules};
use super::memory::Memory;
use super::methods::{Access, MethodTable};
use super::monotonic::{BelowFloor, Heads};
use super::plan::Plan;
use super::reference::BundleState;
use super::scope::PacketScope;
use crate::options::RequestOptions;
use crate::{
    ConfigError, Endpoint, EndpointId, Error, ExcludedEndpoints, Failover, FailoverBuilder, Permission,
    PreferredEndpoint, RequestBuilderExt, RequestScope, ResponseExt,
};

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

/// How long a broadcast's endpoint is preferred for lookups of its hash and its sender's
/// pending nonce, by default.
pub(crate) const REMEMBER_BROADCASTS: Duration = Duration::from_secs(120);

/// An alloy transport (a `tower::Service<RequestPacket>`) that sends every JSON-RPC packet
/// through a [`Failover`]: reads fail over, writes never do, filters stay on the provider that
/// created them, lookups of a broadcast follow it, and a lost broadcast is typed
/// ([`PossiblySubmitted`](super::PossiblySubmitted)). Cheap to clone; clones share everything.
///
/// ```no_run
/// # fn demo() -> Result<(), failnext::ConfigError> {
/// use failnext::Endpoint;
/// use failnext::alloy::FailoverTransport;
///
/// let transport = FailoverTransport::new([
///     Endpoint::new("primary", "http://127.0.0.1:8545"),
///     Endpoint::new("backup", "http://127.0.0.1:8546"),
/// ])?;
/// // alloy: ProviderBuilder::new().connect_client(RpcClient::new(transport, false))
/// # drop(transport); Ok(()) }
/// ```
///
/// Where failover is not the point it behaves like alloy's own `Http<reqwest::Client>`: the
/// packet's headers are sent, a non-2xx answer whose body is a JSON-RPC error comes back as
/// that error response, other non-2xx answers are alloy's HTTP errors with the `Retry-After`
/// (delta-seconds or HTTP-date), so `RetryBackoffLayer`'s `is_retry_err` sees what it would
/// see from `Http`. No error holds an endpoint URL: failnext's errors name endpoint ids.
#[derive(Clone, Debug)]
pub struct FailoverTransport {
    route: Route,
    failover: Failover,
    endpoints: Arc<[EndpointId]>,
    table: MethodTable,
    memory: Arc<Memory>,
    local: bool,
    coherence: Arc<Coherence>,
    rules: Rules,
    /// The paired health source, when there is one.
    source: Option<Source>,
    /// The only endpoints writes reach, when the user named them.
    writes: Option<Arc<[EndpointId]>>,
    /// The endpoints a raw transaction fans out to, when the user named them.
    fanout: Option<Arc<[EndpointId]>>,
    /// The logs ranges learnt, when refused logs queries are split (see `logs.rs`).
    pub(super) logs: Option<Arc<super::logs::Limits>>,
}

/// A paired health source, shown as such in `Debug`.
#[derive(Clone)]
struct Source(Arc<dyn crate::HealthSource>);

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<source>")
    }
}

impl FailoverTransport {
    /// A transport over `endpoints` with failnext's defaults and the
    /// [`JsonRpcClassifier`](crate::jsonrpc::JsonRpcClassifier) as the judge, on a plain `reqwest::Client` (no TLS unless your
    /// reqwest features add it).
    ///
    /// # Errors
    ///
    /// When the endpoints are invalid (see [`FailoverBuilder::build`]).
    pub fn new(endpoints: impl IntoIterator<Item = Endpoint>) -> Result<FailoverTransport, ConfigError> {
        FailoverTransport::from_builder(Failover::builder(endpoints))
    }

    /// A transport over the `Failover` that `builder` builds, on a default `reqwest::Client`
    /// (`reqwest::Client::new()`: system proxies, reqwest's defaults); the
    /// [`JsonRpcClassifier`](crate::jsonrpc::JsonRpcClassifier) judges unless the builder has a classifier of its own.
    ///
    /// # Errors
    ///
    /// When the builder's configuration is invalid (see [`FailoverBuilder::build`]).
    pub fn from_builder(builder: FailoverBuilder) -> Result<FailoverTransport, ConfigError> {
        FailoverTransport::from_builder_on(builder, reqwest::Client::new())
    }

    /// [`from_builder`](FailoverTransport::from_builder) on your own `reqwest::Client` (its
    /// pool, TLS, proxy and timeout settings), sent to directly: no middleware chain, as
    /// alloy's `Http::with_client` does.
    ///
    /// ```
    /// use failnext::{Endpoint, Failover};
    /// use failnext::alloy::FailoverTransport;
    ///
    /// let client = reqwest::Client::builder().no_proxy().build()?;
    /// let builder = Failover::builder([
    ///     Endpoint::new("primary", "http://127.0.0.1:8545"),
    ///     Endpoint::new("backup", "http://127.0.0.1:8546"),
    /// ]);
    /// let transport = FailoverTransport::from_builder_on(builder, client)?;
    /// # drop(transport);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// When the builder's configuration is invalid (see [`FailoverBuilder::build`]).
    pub fn from_builder_on(
        builder: FailoverBuilder,
        client: reqwest::Client,
    ) -> Result<FailoverTransport, ConfigError> {
        let failover = builder.judging_packets().build()?;
        Ok(FailoverTransport::on(Route::Direct { client }, &failover))
    }

    /// A transport over your own client chain, which must carry `failover` (middlewares
    /// before it run once per call, after it once per attempt). Judging is `failover`'s: give
    /// it a [`JsonRpcClassifier`](crate::jsonrpc::JsonRpcClassifier) so that HTTP-200 rate limits and truncated bodies fail over.
    pub fn with_client(client: ClientWithMiddleware, failover: &Failover) -> FailoverTransport {
        FailoverTransport::on(Route::Chain(client), failover)
    }

    fn on(route: Route, failover: &Failover) -> FailoverTransport {
        let endpoints: Arc<[EndpointId]> = failover.endpoints().iter().map(|e| e.id().clone()).collect();
        let local = failover.endpoints().iter().all(|e| is_loopback(e.url()));
        FailoverTransport {
            route,
            failover: failover.clone(),
            endpoints,
            table: MethodTable::new(),
            memory: Arc::new(Memory::new(REMEMBER_BROADCASTS)),
            local,
            coherence: Arc::new(Coherence::default()),
            rules: Rules::default(),
            source: None,
            writes: None,
            fanout: None,
            logs: Some(Arc::default()),
        }
    }

    /// What the builder adds once the rest is set: the heads of monotonic reads, the paired
    /// source, the write endpoints and the fan-out (ids checked by the builder).
    pub(crate) fn routed(
        mut self,
        heads: Option<Heads>,
        source: Option<Arc<dyn crate::HealthSource>>,
        writes: Option<Vec<EndpointId>>,
        fanout: Option<Vec<EndpointId>>,
    ) -> FailoverTransport {
        self.rules.heads = heads;
        self.source = source.map(Source);
        self.writes = writes.map(Into::into);
        self.fanout = fanout.map(Into::into);
        self
    }

    /// The `Failover` under the transport: endpoint health ([`Failover::health`]), breaker
    /// state, [`restore_health`](Failover::restore_health), the latency feed. Clones share it.
    pub fn failover(&self) -> &Failover {
        &self.failover
    }

    /// How the latest [fan-out](super::FailoverTransportBuilder::broadcast_to) of `hash` went,
    /// endpoint by endpoint, while it is remembered (the last 4096 fan-outs).
    pub fn broadcast_outcome(&self, hash: &alloy_primitives::B256) -> Option<super::Broadcast> {
        self.memory.fanout(hash)
    }

    /// The transport's endpoints, in order.
    pub(crate) fn endpoint_ids(&self) -> &[EndpointId] {
        &self.endpoints
    }

    /// The highest block every provider the paired source admits is known to have (`None`
    /// without a source, or when it knows no head of an admitted provider).
    pub(crate) fn agreed_head(&self) -> Option<u64> {
        let source = &self.source.as_ref()?.0;
        self.endpoints.iter().filter(|id| source.eligible(id)).filter_map(|id| source.head_of(id)).min()
    }

    /// Uses `table` to decide which methods may fail over.
    #[must_use]
    pub fn method_table(mut self, table: MethodTable) -> FailoverTransport {
        self.table = table;
        self
    }

    /// How long lookups of a broadcast (`eth_getTransactionReceipt`,
    /// `eth_getTransactionByHash` of its hash, `eth_getTransactionCount(sender, "pending")`)
    /// prefer the endpoint that accepted it (default 2 minutes). Set it before the transport
    /// is used: it starts a fresh memory.
    #[must_use]
    pub fn remember_broadcasts_for(mut self, duration: Duration) -> FailoverTransport {
        self.memory = Arc::new(Memory::new(duration));
        self
    }

    /// Whether every endpoint is on this machine (loopback), as alloy's `is_local` means it:
    /// the value to give `RpcClient::new`.
    pub fn is_local(&self) -> bool {
        self.local
    }

    /// Declares that endpoint `endpoint` lacks `capability`, for good: requests that need it
    /// skip that endpoint, the others still use it (see [the module docs](super#capabilities)).
    /// Clones share it.
    ///
    /// # Errors
    ///
    /// When `endpoint` names no endpoint of this transport (a typo would otherwise declare
    /// nothing, silently); [`ConfigError::endpoint_id`] names it.
    pub fn lacks(
        self,
        endpoint: impl Into<EndpointId>,
        capability: Capability,
    ) -> Result<FailoverTransport, ConfigError> {
        let endpoint = endpoint.into();
        if !self.endpoints.contains(&endpoint) {
            return Err(ConfigError::unknown_endpoint(endpoint));
        }
        self.coherence.capabilities.declare(endpoint, capability);
        Ok(self)
    }

    /// What endpoint `endpoint` lacks now: declared, or found and not yet forgotten.
    pub fn lacking(&self, endpoint: &str) -> Vec<Capability> {
        self.coherence.capabilities.lacking(endpoint)
    }

    /// A state read more than `blocks` blocks behind the head needs
    /// [`Capability::Archive`]. Default is 128 (geth keeps the state of its last 128 blocks).
    #[must_use]
    pub fn archive_depth(mut self, blocks: u64) -> FailoverTransport {
        self.rules.archive_depth = blocks;
        self
    }

    /// How long an endpoint found to lack a capability (its answer said "missing trie node"
    /// to a historical read, or "method not found") is skipped by the requests that need it;
    /// then it is asked again. Declared lacks stay for good. Default is 10 minutes.
    #[must_use]
    pub fn lack_found_for(mut self, duration: Duration) -> FailoverTransport {
        self.rules.lack_for = duration;
        self
    }

    /// Monotonic reads: no read is answered by a provider below the highest head this
    /// transport has observed (see [`head`](FailoverTransport::head)). `heads` gives a
    /// provider's current head by endpoint id (a block-height monitor's snapshot), `None` when
    /// unknown: a provider known to be more than [`DEFAULT_TOLERANCE`](crate::DEFAULT_TOLERANCE)
    /// blocks below the floor is skipped for reads (a monitor's view trails the chain by the
    /// age of its probe, so a provider known a block or two below is asked), and when that
    /// would leave no provider the read goes ahead, its answers judged. An `eth_blockNumber`
    /// answer below the floor fails over instead of being returned, and when no provider
    /// answers at or above it the read fails with [`BelowFloor`] (a bundle's reads, pinned to
    /// its reference, fail with it at once when every provider is known below). Writes and
    /// filter calls are not affected. Default is off.
    #[must_use]
    pub fn monotonic_reads(
        mut self,
        heads: impl Fn(&str) -> Option<u64> + Send + Sync + 'static,
    ) -> FailoverTransport {
        self.rules.heads = Some(Heads::of_fn(heads));
        self
    }

    /// Counts `number` as an observed head (a head the application learnt elsewhere): it
    /// raises the floor of monotonic reads and the head archive depth is measured from.
    pub fn observe_head(&self, number: u64) {
        self.coherence.head.observe(number);
    }

    /// The highest head this transport has observed: `eth_blockNumber` answers it returned,
    /// bundle references, [`observe_head`](FailoverTransport::observe_head); `None` before any.
    pub fn head(&self) -> Option<u64> {
        Some(self.coherence.head.get()).filter(|n| *n > 0)
    }

    /// One call of `method` with `params` through the transport, its result parsed as `R`.
    pub(crate) async fn call<R: serde::de::DeserializeOwned>(
        &self,
        method: &'static str,
        params: impl alloy_json_rpc::RpcSend,
    ) -> TransportResult<R> {
        self.call_served(method, params, &[]).await.map(|(r, _)| r)
    }

    /// `call`, never to the endpoints of `avoid`, with the endpoint that answered.
    pub(crate) async fn call_served<R: serde::de::DeserializeOwned>(
        &self,
        method: &'static str,
        params: impl alloy_json_rpc::RpcSend,
        avoid: &[EndpointId],
    ) -> TransportResult<(R, Option<EndpointId>)> {
        let cell = super::ServedByCell::new();
        let request = served_request(method, 0, params, &cell, avoid)?;
        let answer = self.send_in(RequestPacket::Single(request), None).await?;
        let ResponsePacket::Single(response) = answer else {
            return Err(TransportErrorKind::custom_str("a single call was answered with a batch"));
        };
        let result = match response.payload {
            alloy_json_rpc::ResponsePayload::Success(result) => result,
            alloy_json_rpc::ResponsePayload::Failure(payload) => {
                return Err(alloy_json_rpc::RpcError::ErrorResp(payload));
            }
        };
        let value =
            serde_json::from_str(result.get()).map_err(|err| TransportError::deser_err(err, result.get()))?;
        Ok((value, cell.get()))
    }

    /// One batch of `method` calls through the transport, one per entry of `params`: each
    /// call's result parsed as `R`, `None` where the call failed or its answer is missing;
    /// never to the endpoints of `avoid`.
    pub(crate) async fn call_batch<R: serde::de::DeserializeOwned, P: alloy_json_rpc::RpcSend>(
        &self,
        method: &'static str,
        params: Vec<P>,
        avoid: &[EndpointId],
    ) -> TransportResult<(Vec<Option<R>>, Option<EndpointId>)> {
        let cell = super::ServedByCell::new();
        let requests = (0_u64..)
            .zip(params)
            .map(|(i, p)| served_request(method, i, p, &cell, avoid))
            .collect::<Result<Vec<_>, TransportError>>()?;
        let results = self.batch(requests).await?;
        Ok((results.iter().map(|r| parsed(r.as_deref())).collect(), cell.get()))
    }

    /// Two calls of different methods in one batch (one provider's view of both), never to
    /// the endpoints of `avoid`: each one's result, `None` where it failed.
    pub(crate) async fn call_pair<A, B>(
        &self,
        (first, first_params): (&'static str, impl alloy_json_rpc::RpcSend),
        (second, second_params): (&'static str, impl alloy_json_rpc::RpcSend),
        avoid: &[EndpointId],
    ) -> TransportResult<((Option<A>, Option<B>), Option<EndpointId>)>
    where
        A: serde::de::DeserializeOwned,
        B: serde::de::DeserializeOwned,
    {
        let cell = super::ServedByCell::new();
        let requests = vec![
            served_request(first, 0, first_params, &cell, avoid)?,
            served_request(second, 1, second_params, &cell, avoid)?,
        ];
        let results = self.batch(requests).await?;
        let raw = |i: usize| results.get(i).and_then(Option::as_deref);
        Ok(((parsed(raw(0)), parsed(raw(1))), cell.get()))
    }

    /// `requests` (ids 0, 1, ...) through the transport as one batch: each call's raw result
    /// by id, `None` where it failed or its answer is missing.
    async fn batch(
        &self,
        requests: Vec<alloy_json_rpc::SerializedRequest>,
    ) -> TransportResult<Vec<Option<Box<RawValue>>>> {
        let n = requests.len();
        let answer = self.send_in(RequestPacket::Batch(requests), None).await?;
        let responses = match answer {
            ResponsePacket::Batch(responses) => responses,
            ResponsePacket::Single(response) => vec![response],
        };
        let mut results: Vec<Option<Box<RawValue>>> = vec![None; n];
        for response in responses {
            let (alloy_json_rpc::Id::Number(i), alloy_json_rpc::ResponsePayload::Success(result)) =
                (response.id, response.payload)
            else {
                continue;
            };
            if let Some(slot) = usize::try_from(i).ok().and_then(|i| results.get_mut(i)) {
                *slot = Some(result);
            }
        }
        Ok(results)
    }

    /// How `method` is sent, as the table says.
    pub(crate) fn access(&self, method: &str) -> Access {
        self.table.access(method)
    }

    /// Splits logs queries every provider refuses, starting no part after `deadline`, or
    /// none (see [`FailoverTransportBuilder::split_logs`](super::FailoverTransportBuilder::split_logs)).
    pub(crate) fn split_logs(mut self, on: bool, deadline: Option<Duration>) -> FailoverTransport {
        self.logs = on.then(|| Arc::new(super::logs::Limits::until(deadline)));
        self
    }

    async fn send(self, packet: RequestPacket) -> TransportResult<ResponsePacket> {
        // An `eth_getLogs` no provider serves whole is split (boxed: the common path stays small).
        match super::logs::Query::of(&self, packet) {
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
    pub(crate) async fn send_in(
        &self,
        packet: RequestPacket,
        bundle: Option<&Arc<BundleState>>,
    ) -> TransportResult<ResponsePacket> {
        let mut plan = Plan::of(&packet, &self.table, &self.memory, &self.endpoints)?;
        let reads = plan.calls.is_empty();
        // Writes go only where the user routed them; a raw transaction to every fan-out
        // endpoint at once.
        let fanout = self.fanout.as_deref().and_then(|to| Some((to, plan.raw_broadcast(&packet)?)));
        if let Some(writes) = self.writes.as_deref().filter(|_| plan.writes()) {
            plan.excluded.extend(self.endpoints.iter().filter(|id| !writes.contains(id)).cloned());
        }
        let body = bytes::Bytes::from(serde_json::to_vec(&packet).map_err(TransportError::ser_err)?);
        let view = Packet::new(&packet, bundle.map(|b| &**b), reads).sized(body.len());
        let unfit = match plan.pinned {
            None => self.coherence.unfit(&self.rules, &view, &self.endpoints, &plan.excluded)?,
            Some(_) => Vec::new(),
        };
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
                let outcome = match fanout {
                    Some((targets, hash)) => self.fan_out(targets, hash, &plan, send).await,
                    None => send(None).await,
                };
                (outcome, scope.behind())
            }
            Route::Chain(client) => {
                // Down a chain the scope rides in the request's extensions: it owns its packet.
                let scope = Arc::new(scope.with(Arc::new(packet.clone())));
                let send = |only| self.chain(client, &packet, body.clone(), &plan, &scope, only);
                let outcome = match fanout {
                    Some((targets, hash)) => self.fan_out(targets, hash, &plan, send).await,
                    None => send(None).await,
                };
                (outcome, scope.behind())
            }
        };
        let (answer, served) = outcome?;
        if let (Some(bundle), Some(id)) = (bundle, &served) {
            if bundle.did_miss(id) {
                // What the loop returned for want of another endpoint was a miss: never an
                // answer at that provider's own latest block, the error.
                return Err(bundle.unknown());
            }
        }
        if let Some(n) = asks_head.then(|| coherence::lowest_head(&packet, &answer)).flatten() {
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
                return Err(BelowFloor { floor, behind }.into_transport());
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
    ) -> TransportResult<(ResponsePacket, Option<EndpointId>)> {
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
    ) -> TransportResult<(ResponsePacket, Option<EndpointId>)> {
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
    ) -> TransportResult<(ResponsePacket, Option<EndpointId>)> {
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
    /// reach only its endpoint) and merges what they did into one [`Broadcast`](super::Broadcast):
    /// the first acceptance is the answer; with none, the first refusal, unless an answer
    /// may have been lost or nothing reached any endpoint, which is the error.
    async fn fan_out<'a, F, Fut>(
        &self,
        targets: &'a [EndpointId],
        hash: alloy_primitives::B256,
        plan: &Plan<'_>,
        send: F,
    ) -> TransportResult<(ResponsePacket, Option<EndpointId>)>
    where
        F: Fn(Option<&'a EndpointId>) -> Fut,
        Fut: std::future::Future<Output = TransportResult<(ResponsePacket, Option<EndpointId>)>>,
    {
        use super::fanout::{Broadcast, Delivery};
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
                Err(err) => match super::Failure::find(&err) {
                    Some(super::Failure::NeverSent(never)) => Delivery::NeverSent { why: never.why.clone() },
                    Some(super::Failure::PossiblySubmitted(lost)) => {
                        Delivery::PossiblySubmitted { why: lost.why.clone() }
                    }
                    Some(super::Failure::Status(http)) => Delivery::Refused {
                        code: i64::from(http.status),
                        message: format!("HTTP {}", http.status),
                    },
                    _ => Delivery::PossiblySubmitted { why: err.to_string() },
                },
            };
            deliveries.push((id.clone(), delivery));
        }
        let outcome = Broadcast { hash, deliveries };
        self.memory.fanned_out(hash, outcome.clone());
        match (accepted, refused) {
            (Some(answer), _) => Ok(answer),
            (None, Some(answer)) if !outcome.possibly_submitted() => Ok(answer),
            _ => Err(TransportErrorKind::custom(outcome)),
        }
    }

    /// The answer `response` (from `served`) makes for `plan`'s packet.
    async fn answer(
        &self,
        plan: &Plan<'_>,
        response: reqwest::Response,
        served: Option<EndpointId>,
    ) -> TransportResult<(ResponsePacket, Option<EndpointId>)> {
        if let Some(id) = &served {
            plan.cells.iter().for_each(|cell| cell.set(id));
        }
        let status = response.status();
        // Any status, uncapped: what alloy's own `Http` hands its `RetryBackoffLayer`.
        let retry_after = crate::retry_after::from_headers(response.headers(), std::time::SystemTime::now());
        let body = match response.bytes().await {
            Ok(body) => body,
            Err(err) => {
                let err = err.without_url();
                return Err(if plan.writes() {
                    plan.lost(served, format!("the answer's body broke off ({err})"))
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
                return Err(plan.lost(served, format!("the provider answered HTTP {status}")));
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

/// Splitting a logs query sends its parts as any other read.
impl super::logs::Splitter for FailoverTransport {
    fn limits(&self) -> Option<&super::logs::Limits> {
        self.logs.as_deref()
    }
    fn endpoint_ids(&self) -> &[EndpointId] {
        &self.endpoints
    }
    fn send_one(
        &self,
        packet: RequestPacket,
    ) -> impl Future<Output = TransportResult<ResponsePacket>> + Send {
        self.send_in(packet, None)
    }
}

impl tower_service::Service<RequestPacket> for FailoverTransport {
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

/// `ProviderBuilder::new().connect_with(&transport)` connects to it.
impl TransportConnect for FailoverTransport {
    fn is_local(&self) -> bool {
        self.local
    }

    async fn get_transport(&self) -> Result<BoxTransport, TransportError> {
        Ok(BoxTransport::new(self.clone()))
    }
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
use posting;

/// Where one send is aimed ([`FailoverTransport::aim`]).
struct Aim<'s> {
    permission: Permission,
    excluded: std::borrow::Cow<'s, [EndpointId]>,
    preferred: Option<&'s EndpointId>,
    trace: bool,
}

/// How the transport reaches `Failover`.
#[derive(Clone, Debug)]
enum Route {
    /// It owns its client: failnext's attempt loop runs on it directly, without a middleware
    /// chain or options in extensions (the healthy path costs less).
    Direct { client: reqwest::Client },
    /// The caller's chain, which carries `Failover`.
    Chain(ClientWithMiddleware),
}

/// A call of `method` with `params` and id `id`, whose answering endpoint is written into
/// `cell`, sent to none of `avoid`.
fn served_request(
    method: &'static str,
    id: u64,
    params: impl alloy_json_rpc::RpcSend,
    cell: &super::ServedByCell,
    avoid: &[EndpointId],
) -> TransportResult<alloy_json_rpc::SerializedRequest> {
    let mut request = alloy_json_rpc::Request::new(method, alloy_json_rpc::Id::Number(id), params)
        .serialize()
        .map_err(TransportError::ser_err)?;
    let extensions = request.meta_mut().extensions_mut();
    extensions.insert(cell.clone());
    if !avoid.is_empty() {
        extensions.insert(ExcludedEndpoints(avoid.to_vec()));
    }
    Ok(request)
}

/// A call's raw result parsed as `R`; `None` without one, or when it is not an `R`.
fn parsed<R: serde::de::DeserializeOwned>(raw: Option<&RawValue>) -> Option<R> {
    raw.and_then(|raw| serde_json::from_str(raw.get()).ok())
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

fn is_loopback(url: &str) -> bool {
    url::Url::parse(url).ok().and_then(|u| u.host().map(|h| h.to_owned())).is_some_and(|host| match host {
        url::Host::Domain(d) => d == "localhost",
        url::Host::Ipv4(ip) => ip.is_loopback(),
        url::Host::Ipv6(ip) => ip.is_loopback(),
    })
}

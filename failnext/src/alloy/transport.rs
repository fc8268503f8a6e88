//! [`FailoverTransport`]: alloy's JSON-RPC packets through a failnext client.

use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use alloy_json_rpc::{RequestPacket, Response, ResponsePacket, ResponsePayload, SerializedRequest};
use alloy_primitives::{Address, B256, hex};
use alloy_transport::{
    BoxTransport, TransportConnect, TransportError, TransportErrorKind, TransportFut, TransportResult,
};
use http::StatusCode;
use http::header::{CONTENT_TYPE, HeaderValue};
use reqwest_middleware::ClientWithMiddleware;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::block::params;
use super::broadcast::{NeverSent, PossiblySubmitted, RawTx, is_already_known};
use super::bundle::{BlockRef, Bundle, BundleState};
use super::call::ServedByCell;
use super::capability::Capability;
use super::coherence::{self, Coherence, Misses, Packet, Rules};
use super::memory::Memory;
use super::methods::{Access, MethodTable};
use super::monotonic::{BelowFloor, Heads};
use crate::jsonrpc::{JsonRpcClassifier, Missed, Missing};
use crate::options::RequestOptions;
use crate::{
    ConfigError, Endpoint, EndpointId, Error, ExcludedEndpoints, Failover, FailoverBuilder, Permission,
    PreferredEndpoint, ResponseExt,
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
const REMEMBER_BROADCASTS: Duration = Duration::from_secs(120);

/// An alloy transport (a `tower::Service<RequestPacket>`) that sends every JSON-RPC packet
/// through a [`Failover`]: reads fail over, writes never do, filters stay on the provider that
/// created them, lookups of a broadcast follow it, and a lost broadcast is typed
/// ([`PossiblySubmitted`]). Cheap to clone; clones share everything.
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
    endpoints: Arc<[EndpointId]>,
    table: MethodTable,
    memory: Arc<Memory>,
    local: bool,
    coherence: Arc<Coherence>,
    rules: Rules,
}

impl FailoverTransport {
    /// A transport over `endpoints` with failnext's defaults and the
    /// [`JsonRpcClassifier`] as the judge, on a plain `reqwest::Client` (no TLS unless your
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
    /// [`JsonRpcClassifier`] judges unless the builder has a classifier of its own.
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
        let builder =
            if builder.has_classifier() { builder } else { builder.classifier(JsonRpcClassifier::new()) };
        let failover = builder.build()?;
        let route = Route::Direct { client, failover: failover.clone() };
        Ok(FailoverTransport::on(route, &failover))
    }

    /// A transport over your own client chain, which must carry `failover` (middlewares
    /// before it run once per call, after it once per attempt). Judging is `failover`'s: give
    /// it a [`JsonRpcClassifier`] so that HTTP-200 rate limits and truncated bodies fail over.
    pub fn with_client(client: ClientWithMiddleware, failover: &Failover) -> FailoverTransport {
        FailoverTransport::on(Route::Chain(client), failover)
    }

    fn on(route: Route, failover: &Failover) -> FailoverTransport {
        let endpoints: Arc<[EndpointId]> = failover.endpoints().iter().map(|e| e.id().clone()).collect();
        let local = failover.endpoints().iter().all(|e| is_loopback(e.url()));
        FailoverTransport {
            route,
            endpoints,
            table: MethodTable::new(),
            memory: Arc::new(Memory::new(REMEMBER_BROADCASTS)),
            local,
            coherence: Arc::new(Coherence::default()),
            rules: Rules::default(),
        }
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

    /// A [`Bundle`] at `reference`: an alloy transport whose state reads are all answered at
    /// that block, by its hash (see [the module docs](super#read-bundles)). It shares this
    /// transport's failover; `reference.number` counts as an observed head.
    pub fn bundle(&self, reference: BlockRef) -> Bundle {
        self.coherence.head.observe(reference.number);
        Bundle::new(self.clone(), reference)
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
    /// unknown: a provider known to be below is skipped for reads, and an `eth_blockNumber`
    /// answer below the floor fails over instead of being returned. When no provider is left,
    /// the read fails with [`BelowFloor`]. Writes and filter calls are not affected. Default
    /// is off.
    #[must_use]
    pub fn monotonic_reads(
        mut self,
        heads: impl Fn(&str) -> Option<u64> + Send + Sync + 'static,
    ) -> FailoverTransport {
        self.rules.heads = Some(Heads(Arc::new(heads)));
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

    /// How `method` is sent, as the table says.
    pub(crate) fn access(&self, method: &str) -> Access {
        self.table.access(method)
    }

    async fn send(self, packet: RequestPacket) -> TransportResult<ResponsePacket> {
        self.send_in(packet, None).await
    }

    /// Sends `packet`, one of `bundle`'s when given (pinned to its reference already): plans
    /// it, adds the endpoints coherence skips, and sends it again without the endpoint that
    /// answered when that answer may not be returned (a bundle's read its endpoint did not
    /// know, an `eth_blockNumber` below the monotonic floor) and the failover did not already
    /// try the others. Only a packet of reads that may fail over is sent again, at most once
    /// per endpoint (each round excludes one more).
    pub(crate) async fn send_in(
        &self,
        packet: RequestPacket,
        bundle: Option<&BundleState>,
    ) -> TransportResult<ResponsePacket> {
        let mut plan = Plan::of(&packet, &self.table, &self.memory, &self.endpoints)?;
        let view = Packet::new(&packet, bundle, plan.calls.is_empty());
        if plan.pinned.is_none() {
            self.coherence.exclude(&self.rules, &view, &self.endpoints, &mut plan.excluded)?;
        }
        let asks_head = coherence::asks_head(&packet);
        // Only a packet of reads that may fail over is sent a second time.
        let resend = view.reads && plan.may_fail_over;
        let mut behind = Vec::new();
        loop {
            let (outcome, mut missed) = self.exchange(&packet, &plan).await;
            let (answer, served) = match outcome {
                Ok(answered) => answered,
                Err(Refused::TooLarge(err, served)) => {
                    // HTTP 413: this provider takes no request this large; another may.
                    self.coherence.learn(&self.rules, &view, &missed);
                    self.coherence.too_large(&self.rules, &view, &served);
                    if resend && plan.exclude_again(Some(&served), &self.endpoints) {
                        continue;
                    }
                    return Err(err);
                }
                Err(Refused::Other(err)) => {
                    self.coherence.learn(&self.rules, &view, &missed);
                    return Err(err);
                }
            };
            // The final answer judged with the request in view. The classifier flagged it
            // when it is among the misses: then the failover has tried every other endpoint.
            let last = coherence::missed_in(&answer);
            let flagged = served.as_ref().is_some_and(|id| missed.iter().any(|(e, _)| e == id));
            if let (Some(id), false, false) = (&served, last.is_empty(), flagged) {
                missed.push((id.clone(), last));
            }
            self.coherence.learn(&self.rules, &view, &missed);
            if let (Some(bundle), true) = (bundle, last.has(Missing::Block) || last.has(Missing::State)) {
                // Never answered at that provider's own latest block: another, or the error.
                if resend && !flagged && plan.exclude_again(served.as_ref(), &self.endpoints) {
                    continue;
                }
                return Err(bundle.unknown());
            }
            if let Some(n) = asks_head.then(|| coherence::lowest_head(&packet, &answer)).flatten() {
                let floor = self.coherence.head.get();
                if self.rules.heads.is_some() && resend && n < floor {
                    if let Some(id) = &served {
                        behind.push((id.clone(), Some(n)));
                    }
                    if plan.exclude_again(served.as_ref(), &self.endpoints) {
                        continue;
                    }
                    return Err(BelowFloor { floor, behind }.into_transport());
                }
                self.coherence.head.observe(n);
            }
            return Ok(answer);
        }
    }

    /// One exchange of `packet` through the failover, as `plan` says: the answer and the
    /// endpoint that gave it, and who the attempts' flagged answers said lacked what.
    async fn exchange(
        &self,
        packet: &RequestPacket,
        plan: &Plan<'_>,
    ) -> (Result<(ResponsePacket, Option<EndpointId>), Refused>, Vec<(EndpointId, Missed)>) {
        match &self.route {
            Route::Direct { client, failover } => {
                let misses = Misses::default();
                let outcome = self.direct(client, failover, packet, plan, &misses).await;
                (outcome, misses.take())
            }
            Route::Chain(client) => {
                // Down the chain, the observer rides in the request's extensions.
                let misses = Arc::new(Misses::default());
                let outcome = self.chain(client, packet, plan, &misses).await;
                (outcome, misses.take())
            }
        }
    }

    async fn direct(
        &self,
        client: &reqwest::Client,
        failover: &Failover,
        packet: &RequestPacket,
        plan: &Plan<'_>,
        misses: &Misses,
    ) -> Result<(ResponsePacket, Option<EndpointId>), Refused> {
        let body = serde_json::to_vec(packet).map_err(TransportError::ser_err)?;
        let permission = if plan.may_fail_over { Permission::Allow } else { Permission::Deny };
        // Addressed to the first endpoint: its attempt needs no other URL.
        let request = match failover.first_url().cloned().or_else(address) {
            Some(url) => client.post(url),
            None => client.post(ADDRESS),
        };
        let request = request
            .headers(packet.headers())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(body)
            .build()
            .map_err(|e| TransportErrorKind::custom(e.without_url()))?;
        let opts = RequestOptions {
            permission: Some(permission),
            excluded: &plan.excluded,
            preferred: plan.preferred.as_ref(),
            deadline: None,
            trace: false,
        };
        match failover.execute_direct(client, request, &opts, &Again(packet), Some(misses)).await {
            Ok((response, i)) => self.answer(plan, response, Some(failover.endpoint_id(i).clone())).await,
            Err(err) => Err(plan.send_failed(err).into()),
        }
    }

    async fn chain(
        &self,
        client: &ClientWithMiddleware,
        packet: &RequestPacket,
        plan: &Plan<'_>,
        misses: &Arc<Misses>,
    ) -> Result<(ResponsePacket, Option<EndpointId>), Refused> {
        let body = serde_json::to_vec(packet).map_err(TransportError::ser_err)?;
        let permission = if plan.may_fail_over { Permission::Allow } else { Permission::Deny };
        let request = match address() {
            Some(url) => client.post(url),
            None => client.post(ADDRESS),
        };
        let mut request = request
            .headers(packet.headers())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(body)
            .with_extension(permission)
            .with_extension(crate::session::Observer(misses.clone()));
        if !plan.excluded.is_empty() {
            request = request.with_extension(ExcludedEndpoints(plan.excluded.clone()));
        }
        if let Some(id) = &plan.preferred {
            request = request.with_extension(PreferredEndpoint(id.clone()));
        }
        match request.send().await {
            Ok(response) => {
                let served = response.served_by().cloned();
                self.answer(plan, response, served).await
            }
            Err(err) => Err(plan.send_failed(err).into()),
        }
    }

    /// The answer `response` (from `served`) makes for `plan`'s packet.
    async fn answer(
        &self,
        plan: &Plan<'_>,
        response: reqwest::Response,
        served: Option<EndpointId>,
    ) -> Result<(ResponsePacket, Option<EndpointId>), Refused> {
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
                return Err(Refused::Other(if plan.writes() {
                    plan.lost(served, format!("the answer's body broke off ({err})"))
                } else if !status.is_success() {
                    http_error(status, format!("<failed to read response body: {err}>"), retry_after)
                } else {
                    TransportErrorKind::custom(err)
                }));
            }
        };
        if !status.is_success() {
            if let Some(packet) = json_rpc_error_response(&body) {
                return Ok((packet, served));
            }
            if plan.writes() && status.is_server_error() {
                return Err(plan.lost(served, format!("the provider answered HTTP {status}")).into());
            }
            let err = http_error(status, String::from_utf8_lossy(&body).into_owned(), retry_after);
            return Err(match served {
                Some(id) if status == StatusCode::PAYLOAD_TOO_LARGE => Refused::TooLarge(err, id),
                _ => err.into(),
            });
        }
        let mut answer: ResponsePacket = serde_json::from_slice(&body)
            .map_err(|err| TransportError::deser_err(err, String::from_utf8_lossy(&body)))?;
        if let Some(id) = &served {
            plan.learn(&mut answer, id, &self.memory);
        }
        Ok((answer, served))
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

/// A later attempt of `packet`, made again from the packet (serialized anew) rather than
/// copied before the first attempt: the healthy path copies nothing.
struct Again<'p>(&'p RequestPacket);

impl crate::session::Rebuild for Again<'_> {
    fn request(&self, url: &url::Url) -> reqwest::Request {
        let mut req = reqwest::Request::new(http::Method::POST, url.clone());
        let headers = req.headers_mut();
        headers.extend(self.0.headers());
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        // It serialized for the first attempt, so it does again; an empty body otherwise.
        *req.body_mut() = Some(serde_json::to_vec(self.0).unwrap_or_default().into());
        req
    }
}

/// How the transport reaches `Failover`.
#[derive(Clone, Debug)]
enum Route {
    /// It owns its client: failnext's attempt loop runs on it directly, without a middleware
    /// chain or options in extensions (the healthy path costs less).
    Direct { client: reqwest::Client, failover: Failover },
    /// The caller's chain, which carries `Failover`.
    Chain(ClientWithMiddleware),
}

/// One call of a packet that is not a plain read, as the plan needs it after the answer.
#[derive(Debug)]
struct Call<'p> {
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
struct Plan<'p> {
    /// The calls that are not plain reads (a read needs nothing after its answer): empty, so
    /// allocation-free, for a packet of reads.
    calls: Vec<Call<'p>>,
    may_fail_over: bool,
    excluded: Vec<EndpointId>,
    preferred: Option<EndpointId>,
    /// The endpoint a filter call is pinned to, and the filter.
    pinned: Option<(EndpointId, String)>,
    cells: Vec<ServedByCell>,
}

impl<'p> Plan<'p> {
    fn of(
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
            let mut call = Call { id: req.id(), method, access, raw: None, from: None };
            match (access, method) {
                (Access::UseFilter, _) => plan.pin_filter(req, memory)?,
                (
                    _,
                    "eth_sendRawTransaction"
                    | "eth_sendRawTransactionSync"
                    | "eth_sendRawTransactionConditional",
                ) => {
                    call.raw = first_param::<String>(req)
                        .and_then(|hex| hex::decode(hex).ok())
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
            Some((other, first)) if *other != endpoint => Err(TransportErrorKind::custom(FilterPinned {
                filter,
                endpoint,
                why: format!("the same batch uses filter {first} of endpoint {other}"),
            })),
            _ => {
                self.pinned = Some((endpoint, filter));
                Ok(())
            }
        }
    }

    /// Excludes `served` for another round of the packet, if it is not excluded already and
    /// some endpoint is left after it.
    fn exclude_again(&mut self, served: Option<&EndpointId>, endpoints: &[EndpointId]) -> bool {
        let Some(served) = served.filter(|id| !self.excluded.contains(id)) else { return false };
        self.excluded.push(served.clone());
        let left = endpoints.iter().any(|e| !self.excluded.contains(e));
        if !left {
            self.excluded.pop();
        }
        left
    }

    fn writes(&self) -> bool {
        self.calls.iter().any(|c| c.access == Access::Write)
    }

    fn hashes(&self) -> Vec<B256> {
        self.calls.iter().filter_map(|c| c.raw.map(|r| r.hash)).collect()
    }

    /// The error for a packet whose request failed (no response at all).
    fn send_failed(&self, err: reqwest_middleware::Error) -> TransportError {
        let failnext = Error::from_middleware(&err);
        if let (Some((endpoint, filter)), Some(e)) = (&self.pinned, failnext) {
            if e.is_no_usable_endpoint() {
                return TransportErrorKind::custom(FilterPinned {
                    filter: filter.clone(),
                    endpoint: endpoint.clone(),
                    why: "that endpoint is not usable now (cooling, ineligible or excluded); the filter lives only there"
                        .to_owned(),
                });
            }
        }
        if !self.writes() {
            return TransportErrorKind::custom(err.without_url());
        }
        let hashes = self.hashes();
        match failnext {
            Some(e) if e.is_no_usable_endpoint() => {
                NeverSent { hashes, why: "no endpoint was usable, nothing was sent".to_owned() }
                    .into_transport()
            }
            Some(e) if !e.attempts().is_empty() && e.attempts().iter().all(|a| is_connect(a.error())) => {
                NeverSent { hashes, why: format!("no provider accepted the connection ({e})") }
                    .into_transport()
            }
            Some(e) => {
                let endpoint = e.attempts().last().map(|a| a.endpoint().clone());
                PossiblySubmitted { hashes, endpoint, why: e.to_string() }.into_transport()
            }
            None if is_connect(&err) => {
                NeverSent { hashes, why: format!("the connection was refused ({})", err.without_url()) }
                    .into_transport()
            }
            None => PossiblySubmitted { hashes, endpoint: None, why: err.without_url().to_string() }
                .into_transport(),
        }
    }

    fn lost(&self, endpoint: Option<EndpointId>, why: String) -> TransportError {
        PossiblySubmitted { hashes: self.hashes(), endpoint, why }.into_transport()
    }

    /// After an answer from `served`: remembers created filters and accepted broadcasts, and
    /// turns "already known" for a raw transaction into success with its hash.
    fn learn(&self, answer: &mut ResponsePacket, served: &EndpointId, memory: &Memory) {
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
                    let hash =
                        call.raw.map(|r| r.hash).or_else(|| serde_json::from_str::<B256>(result.get()).ok());
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

/// A filter call that cannot reach the provider holding its filter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterPinned {
    filter: String,
    endpoint: EndpointId,
    why: String,
}

impl FilterPinned {
    /// The filter id.
    pub fn filter(&self) -> &str {
        &self.filter
    }

    /// The endpoint that created the filter.
    pub fn endpoint(&self) -> &EndpointId {
        &self.endpoint
    }

    /// This error inside an alloy `TransportError`, if it is one.
    pub fn find(err: &TransportError) -> Option<&FilterPinned> {
        err.as_transport_err()?.as_custom()?.downcast_ref()
    }
}

impl std::fmt::Display for FilterPinned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "filter {} was created on endpoint {} and cannot be used elsewhere: {}; create a new filter",
            self.filter, self.endpoint, self.why
        )
    }
}

impl std::error::Error for FilterPinned {}

#[derive(Deserialize)]
struct From {
    from: Address,
}

/// The call's first parameter, parsed as `T`.
fn first_param<T: for<'de> Deserialize<'de>>(req: &SerializedRequest) -> Option<T> {
    let mut all: Vec<Box<RawValue>> = params(req)?;
    if all.is_empty() {
        return None;
    }
    serde_json::from_str(all.swap_remove(0).get()).ok()
}

/// A non-2xx body that is a JSON-RPC error response, as alloy's `Http` returns it.
fn json_rpc_error_response(body: &[u8]) -> Option<ResponsePacket> {
    let packet = serde_json::from_slice::<ResponsePacket>(body).ok()?;
    packet.is_error().then_some(packet)
}

/// Why an exchange gave no answer: HTTP 413 from a provider (which a packet of reads may try
/// elsewhere), or any other error.
#[derive(Debug)]
enum Refused {
    TooLarge(TransportError, EndpointId),
    Other(TransportError),
}

impl std::convert::From<TransportError> for Refused {
    fn from(err: TransportError) -> Refused {
        Refused::Other(err)
    }
}

fn http_error(status: StatusCode, body: String, retry_after: Option<Duration>) -> TransportError {
    TransportErrorKind::http_error_with_retry_after(status.as_u16(), body, retry_after)
}

fn is_connect(err: &reqwest_middleware::Error) -> bool {
    matches!(err, reqwest_middleware::Error::Reqwest(e) if e.is_connect())
}

fn is_loopback(url: &str) -> bool {
    url::Url::parse(url).ok().and_then(|u| u.host().map(|h| h.to_owned())).is_some_and(|host| match host {
        url::Host::Domain(d) => d == "localhost",
        url::Host::Ipv4(ip) => ip.is_loopback(),
        url::Host::Ipv6(ip) => ip.is_loopback(),
    })
}

//! [`FailoverTransport`]: alloy's JSON-RPC packets through a failnext client.

use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use alloy_json_rpc::{RequestPacket, ResponsePacket};
use alloy_transport::{BoxTransport, TransportConnect, TransportError, TransportFut, TransportResult};
use reqwest_middleware::ClientWithMiddleware;

use super::capability::Capability;
use super::coherence::{Coherence, Rules};
use super::memory::Memory;
use super::methods::{Access, MethodTable};
use super::monotonic::Heads;
use crate::{ConfigError, Endpoint, EndpointId, Failover, FailoverBuilder};

mod calls;
mod send;

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
    /// answers at or above it the read fails with [`BelowFloor`](super::BelowFloor) (a
    /// bundle's reads, pinned to its reference, fail with it at once when every provider is
    /// known below). Writes and
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

/// How the transport reaches `Failover`.
#[derive(Clone, Debug)]
enum Route {
    /// It owns its client: failnext's attempt loop runs on it directly, without a middleware
    /// chain or options in extensions (the healthy path costs less).
    Direct { client: reqwest::Client },
    /// The caller's chain, which carries `Failover`.
    Chain(ClientWithMiddleware),
}

fn is_loopback(url: &str) -> bool {
    url::Url::parse(url).ok().and_then(|u| u.host().map(|h| h.to_owned())).is_some_and(|host| match host {
        url::Host::Domain(d) => d == "localhost",
        url::Host::Ipv4(ip) => ip.is_loopback(),
        url::Host::Ipv6(ip) => ip.is_loopback(),
    })
}

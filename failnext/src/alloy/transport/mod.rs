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
use crate::{ConfigError, Endpoint, EndpointId, Failover};

mod calls;
mod relays;
mod send;
mod spread;
mod verified;
mod vote;

/// How long a broadcast's endpoint is preferred for lookups of its hash and its sender's
/// pending nonce, by default.
pub(crate) const REMEMBER_BROADCASTS: Duration = Duration::from_secs(120);

/// An alloy transport (a `tower::Service<RequestPacket>`) that sends every JSON-RPC packet
/// through a [`Failover`]: reads fail over, writes never do, filters stay on the provider that
/// created them, lookups of a broadcast follow it, and a lost broadcast is typed
/// ([`FailureKind::PossiblySubmitted`](super::FailureKind::PossiblySubmitted)). Cheap to clone; clones share everything.
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
    /// Consensus reads, when the user named methods to vote.
    consensus: Option<Arc<super::consensus::Consensus>>,
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
    /// A transport over `endpoints` with the defaults a bot should get: the same as
    /// `FailoverTransport::builder(endpoints).build()` (see [`FailoverTransportBuilder`](super::FailoverTransportBuilder)
    /// for every setting and its default), on a plain `reqwest::Client` (no TLS unless your
    /// reqwest features add it).
    ///
    /// # Errors
    ///
    /// When the endpoints are invalid (see [`FailoverBuilder::build`](crate::FailoverBuilder::build)).
    pub fn new(endpoints: impl IntoIterator<Item = Endpoint>) -> Result<FailoverTransport, ConfigError> {
        FailoverTransport::builder(endpoints).build()
    }

    /// The transport the builder assembled: `failover` reached by `route`, with the
    /// transport's own settings (ids in them checked by the builder).
    pub(super) fn assemble(route: Route, failover: Failover, settings: Settings) -> FailoverTransport {
        let endpoints: Arc<[EndpointId]> = failover.endpoints().iter().map(|e| e.id().clone()).collect();
        let local = failover.endpoints().iter().all(|e| is_loopback(e.url()));
        let coherence = Arc::new(Coherence::default());
        let logs = settings.split_logs.then(|| limits(&failover, settings.deadline));
        #[cfg(feature = "redis")]
        if let Some(fleet) = failover.shared_fleet() {
            let _ = coherence.capabilities.fleet.set(fleet);
        }
        for (id, capability) in settings.lacks {
            coherence.capabilities.declare(id, capability);
        }
        let mut rules = Rules { heads: settings.heads, ..Rules::default() };
        if let Some(depth) = settings.archive_depth {
            rules.archive_depth = depth;
        }
        if let Some(duration) = settings.lack_for {
            rules.lack_for = duration;
        }
        FailoverTransport {
            route,
            failover,
            endpoints,
            table: settings.table,
            memory: Arc::new(Memory::new(settings.remember)),
            local,
            coherence,
            rules,
            source: settings.source.map(Source),
            writes: settings.writes.map(Into::into),
            fanout: settings.fanout.map(Into::into),
            logs,
            consensus: settings
                .consensus
                .map(|(methods, quorum)| Arc::new(super::consensus::Consensus::new(methods, quorum))),
        }
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

    /// Whether every endpoint is on this machine (loopback), as alloy's `is_local` means it:
    /// the value to give `RpcClient::new`.
    pub fn is_local(&self) -> bool {
        self.local
    }

    /// What endpoint `endpoint` lacks now: declared, or found and not yet forgotten.
    pub fn lacking(&self, endpoint: &str) -> Vec<Capability> {
        self.coherence.capabilities.lacking(endpoint)
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

/// The transport's own settings, as [`FailoverTransportBuilder`](super::FailoverTransportBuilder)
/// gathered them.
pub(super) struct Settings {
    pub(super) table: MethodTable,
    pub(super) remember: Duration,
    pub(super) archive_depth: Option<u64>,
    pub(super) lack_for: Option<Duration>,
    pub(super) lacks: Vec<(EndpointId, Capability)>,
    /// Logs queries every provider refuses are split, starting no part after `deadline`.
    pub(super) split_logs: bool,
    pub(super) deadline: Option<Duration>,
    /// The heads of monotonic reads.
    pub(super) heads: Option<Heads>,
    pub(super) source: Option<Arc<dyn crate::HealthSource>>,
    pub(super) writes: Option<Vec<EndpointId>>,
    pub(super) fanout: Option<Vec<EndpointId>>,
    pub(super) consensus: Option<(Vec<String>, super::consensus::Quorum)>,
}

/// An answer to a packet, and the endpoint that gave it.
type Answered = (ResponsePacket, Option<EndpointId>);

/// How the transport reaches `Failover`.
#[derive(Clone, Debug)]
pub(super) enum Route {
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

/// The logs range limits of a transport over `failover`, shared with its fleet (feature
/// `redis`) when it has one.
fn limits(failover: &Failover, deadline: Option<std::time::Duration>) -> Arc<super::logs::Limits> {
    #[cfg(feature = "redis")]
    return super::logs::Limits::shared(deadline, failover.shared_fleet());
    #[cfg(not(feature = "redis"))]
    {
        let _ = failover;
        Arc::new(super::logs::Limits::until(deadline))
    }
}

impl FailoverTransport {
    /// Listens (once, from the first call in a runtime) for the capability lacks other
    /// processes of the fleet announce (feature `redis`).
    #[cfg(feature = "redis")]
    #[inline]
    pub(super) fn listen_to_fleet(&self) {
        let Some(fleet) = self.coherence.capabilities.fleet.get() else { return };
        let heard =
            |coherence: &Coherence, name: &str, value: &str| coherence.capabilities.heard(name, value);
        fleet.listen_for(&self.coherence.listening, Arc::downgrade(&self.coherence), heard);
    }
}

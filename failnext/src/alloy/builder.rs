//! [`FailoverTransportBuilder`]: every setting of a `Failover` and of the transport in one
//! builder, with the defaults a bot should get.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;

use super::capability::Capability;
use super::methods::MethodTable;
use super::monotonic::Heads;
use super::transport::{FailoverTransport, REMEMBER_BROADCASTS, Route, Settings};
use crate::{
    Budget, Classifier, ConfigError, Cooldown, Eligibility, Endpoint, EndpointId, Event, Failover,
    FailoverBuilder, HealthSource, Hedge, LatencyOrdering,
};
use reqwest_middleware::Middleware;

/// The hedge reads get, when a [monitor](FailoverTransportBuilder::monitor) is paired, unless
/// told otherwise: after the 95th percentile of the first endpoint's recent latencies (no
/// hedge until it has 16 samples), never before 10 ms.
pub const DEFAULT_HEDGE: Hedge = crate::flow::hedge::PAIRED_HEDGE;

/// The failover budget unless told otherwise: up to one failover attempt (or hedge) per
/// request on average, plus 10 a second, at most 1 000 banked.
///
/// The bank is what a burst of failures spends before the ratio binds: a moment when every
/// admitted provider fails at once makes each read fail over two or three times. 100 banked
/// was under half a second of a bot reading 250 times a second, and reads that a provider
/// could answer ended with a 503 for want of a token (the soak, under faults flipping every
/// ~200 ms); tower's retry budget banks ten seconds of deposits. An outage of every
/// provider still costs at most 1 000 extra attempts, then one per read.
pub const DEFAULT_BUDGET: Budget = Budget::new(1.0).min_per_sec(10).max_balance(1000);

/// The request deadline unless told otherwise.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(30);

/// The latency ordering's margin when a monitor is paired and no ordering is set.
pub const DEFAULT_LATENCY_MARGIN: Duration = Duration::from_millis(10);

use crate::request::setting::Setting;

/// Configures a [`FailoverTransport`]: every [`FailoverBuilder`] setting and the transport's
/// own, in one builder. Made by [`FailoverTransport::builder`]; nothing is checked until
/// [`build`](FailoverTransportBuilder::build).
///
/// # Defaults, and why
///
/// The transport is for bots and services that read a lot and write a little, so its
/// defaults differ from the [reqwest middleware](crate::FailoverBuilder)'s conservative ones
/// (which keep 0.1's rules: no hedge, no budget, no deadline, no judging unless asked):
///
/// | setting | default | why | off |
/// | --- | --- | --- | --- |
/// | judging | the [JSON-RPC classifier](crate::jsonrpc::JsonRpcClassifier) | a rate limit or an internal error arrives as HTTP 200, a truncated body as a broken one: they fail over | [`classifier`](Self::classifier) (yours; its verdicts win) |
/// | [hedge](Self::hedge) | with a [monitor](Self::monitor): [`DEFAULT_HEDGE`], after the p95 of the first endpoint's recent latency, not before 10 ms; without one, none | a slow answer is raced by the next provider at a cost of about 1 read in 20 (writes are never hedged); without a monitor's view of heads the race goes to the fastest answer, stale or not, and the soak measured more stale reads, so it is not a default there | [`no_hedge`](Self::no_hedge) |
/// | [failover budget](Self::failover_budget) | [`DEFAULT_BUDGET`]: one failover attempt per request on average, plus 10/s, 1 000 banked | an outage of every provider does not multiply the load by the number of providers; generous enough that a flapping provider is still failed over from (the soak measures it) | [`no_failover_budget`](Self::no_failover_budget) |
/// | [deadline](Self::deadline) | [`DEFAULT_DEADLINE`]: 30 s for the whole request | alloy's `Http` waits for ever; three hung attempts (10 s each) is as long as a bot should wait | [`no_deadline`](Self::no_deadline) |
/// | [monitor](Self::monitor) paired | [latency ordering](Self::latency_ordering) with a 10 ms margin, [monotonic reads](Self::monotonic_reads) from the monitor's heads | the probes measure every provider, so reads go to the fastest fit one; a read never goes back below a head already returned | [`no_latency_ordering`](Self::no_latency_ordering), [`no_monotonic_reads`](Self::no_monotonic_reads) |
/// | [writes](Self::writes_to) | the first usable endpoint, at most one | as the middleware; name your write endpoints to keep a transaction off the others | — |
/// | [split logs](Self::split_logs) | on: an `eth_getLogs` every provider refuses for its range is split, its parts merged | providers cap logs ranges and result counts, each its own way; the logs are there a narrower range at a time | [`split_logs(false)`](Self::split_logs) |
///
/// ```no_run
/// use std::time::Duration;
/// use failnext::{Endpoint, Hedge};
/// use failnext::alloy::FailoverTransport;
///
/// let transport = FailoverTransport::builder([
///     Endpoint::new("relay", "http://127.0.0.1:8545"),
///     Endpoint::new("public", "http://127.0.0.1:8546"),
/// ])
/// .hedge(Hedge::after(Duration::from_millis(50)))
/// .deadline(Duration::from_secs(5))
/// .writes_to(["relay"])
/// .build()?;
/// # drop(transport);
/// # Ok::<(), failnext::ConfigError>(())
/// ```
#[must_use = "a builder does nothing until build() is called"]
pub struct FailoverTransportBuilder {
    ids: Vec<EndpointId>,
    failover: FailoverBuilder,
    client: Option<reqwest::Client>,
    per_call: Vec<Arc<dyn Middleware>>,
    per_attempt: Vec<Arc<dyn Middleware>>,
    hedge: Setting<Hedge>,
    budget: Setting<Budget>,
    deadline: Setting<Duration>,
    ordering: Setting<LatencyOrdering>,
    monotonic: Setting<Heads>,
    source: Option<Arc<dyn HealthSource>>,
    table: MethodTable,
    remember: Duration,
    archive_depth: Option<u64>,
    lack_for: Option<Duration>,
    lacks: Vec<(EndpointId, Capability)>,
    writes: Option<Vec<EndpointId>>,
    broadcast: Option<Vec<EndpointId>>,
    split_logs: bool,
    consensus: Option<(Vec<String>, super::Quorum)>,
}

impl FailoverTransport {
    /// Starts configuring a transport over `endpoints`, in priority order, with the defaults
    /// a bot should get (see [`FailoverTransportBuilder`]).
    pub fn builder(endpoints: impl IntoIterator<Item = Endpoint>) -> FailoverTransportBuilder {
        let endpoints: Vec<Endpoint> = endpoints.into_iter().collect();
        FailoverTransportBuilder {
            ids: endpoints.iter().map(|e| e.id().clone()).collect(),
            failover: Failover::builder(endpoints),
            client: None,
            per_call: Vec::new(),
            per_attempt: Vec::new(),
            hedge: Setting::Default,
            budget: Setting::Default,
            deadline: Setting::Default,
            ordering: Setting::Default,
            monotonic: Setting::Default,
            source: None,
            table: MethodTable::new(),
            remember: REMEMBER_BROADCASTS,
            archive_depth: None,
            lack_for: None,
            lacks: Vec::new(),
            writes: None,
            broadcast: None,
            split_logs: true,
            consensus: None,
        }
    }
}

impl FailoverTransportBuilder {
    /// Pairs the transport with a health view kept outside the request path, in one call:
    /// failnext-blocklag's `Monitor`, or its spawned schedule's `MonitorHandle` (the transport
    /// then owns the schedule: it runs as long as a clone of the transport lives).
    ///
    /// It wires everything [`FailoverBuilder::monitor`] does (eligibility as advice, the
    /// probes' latencies, heads judged, every answer reported back), and on top:
    ///
    /// - reads are [ordered by latency](Self::latency_ordering) (margin 10 ms) and
    ///   [hedged](Self::hedge) at the 95th percentile ([`DEFAULT_HEDGE`]) unless set;
    /// - [monotonic reads](Self::monotonic_reads) take each provider's head from the source
    ///   ([`HealthSource::head_of`]), unless set or turned off;
    /// - [`FailoverTransport::bundle_at_head`] starts a bundle at the highest block every
    ///   admitted provider has.
    ///
    /// With failnext-blocklag (its spawned schedule's handle is a `HealthSource`):
    ///
    /// ```text
    /// let monitor = Monitor::builder(endpoints.clone()).build()?;
    /// let transport = FailoverTransport::builder(endpoints)
    ///     .monitor(monitor.spawn(Duration::from_secs(1)))
    ///     .build()?;
    /// ```
    ///
    /// Any [`HealthSource`] will do:
    ///
    /// ```
    /// use failnext::{Endpoint, EndpointId, HealthSource};
    /// use failnext::alloy::FailoverTransport;
    ///
    /// /// Admits every endpoint but a known-broken one.
    /// struct NotTheOldNode;
    ///
    /// impl HealthSource for NotTheOldNode {
    ///     fn eligible(&self, id: &EndpointId) -> bool {
    ///         id.as_str() != "old"
    ///     }
    /// }
    ///
    /// let transport = FailoverTransport::builder([
    ///     Endpoint::new("old", "http://127.0.0.1:8545"),
    ///     Endpoint::new("new", "http://127.0.0.1:8546"),
    /// ])
    /// .monitor(NotTheOldNode)
    /// .build()?;
    /// # drop(transport);
    /// # Ok::<(), failnext::ConfigError>(())
    /// ```
    pub fn monitor(mut self, source: impl HealthSource) -> Self {
        self.source = Some(Arc::new(source));
        self
    }

    /// Writes (every call the [`MethodTable`] does not call a read or a filter call:
    /// broadcasts, signing, unknown methods) only ever reach these endpoints: never another,
    /// whatever a breaker, a monitor or a per-call preference says. When none of them is
    /// usable the write fails as [`FailureKind::NeverSent`](super::FailureKind::NeverSent) and nothing was sent
    /// anywhere. Reads still use every endpoint. A later call replaces the list.
    ///
    /// Default: every endpoint (a write goes to the first usable one, and only there).
    pub fn writes_to<I>(mut self, ids: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<EndpointId>,
    {
        self.writes = Some(ids.into_iter().map(Into::into).collect());
        self
    }

    /// Fans a signed raw transaction (`eth_sendRawTransaction`, its `Sync` and
    /// `Conditional` variants, `eth_sendPrivateRawTransaction`, `eth_sendPrivateTransaction`)
    /// out to every one of these endpoints at once: the same bytes, so the same hash, to
    /// each, once. The call succeeds with the hash when at least one accepted it; how each
    /// endpoint took it is a [`Broadcast`](super::Broadcast), given by
    /// [`FailoverTransport::broadcast_outcome`] (and by the error, when none accepted it).
    /// Other writes follow [`writes_to`](Self::writes_to). With `writes_to` set, every
    /// endpoint named here must be one of its (checked by [`build`](Self::build)).
    ///
    /// Default: no fan-out (a raw transaction reaches one endpoint).
    pub fn broadcast_to<I>(mut self, ids: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<EndpointId>,
    {
        self.broadcast = Some(ids.into_iter().map(Into::into).collect());
        self
    }

    /// Whether an `eth_getLogs` that every provider refuses for its size is split and merged.
    ///
    /// On: a single `eth_getLogs` whose filter has numeric `fromBlock` and `toBlock` (no
    /// `blockHash`, no tag such as `"latest"`), refused by every provider it reached for its
    /// range or result count (an answer the classifier judges [`Class::Limit`](crate::Class::Limit),
    /// or HTTP 413), is read in parts: as wide as the widest range a provider is known to
    /// serve, else halves, each part a read that fails over as any other and is cut again
    /// when refused. The parts' logs come back as one answer with the caller's id, in block
    /// order, each log once: what one node without a limit returns. A one-block range still
    /// refused returns the providers' own error; at most 4096 parts, and no part is started
    /// after the [deadline](Self::deadline). Each provider's limits are learnt (the widest
    /// range it served, the narrowest it refused, for 10 minutes): a later query as wide goes
    /// first to a provider that serves it, or is cut at once when every provider refuses it.
    ///
    /// Off: the refusal is returned, as for any other read. Batches, other methods and
    /// queries that are served are never touched.
    ///
    /// Default is on.
    pub fn split_logs(mut self, on: bool) -> Self {
        self.split_logs = on;
        self
    }

    /// Consensus reads: a read of one of `methods` (a single call, never a write) goes to
    /// several providers at once and returns only an answer `quorum.agree()` of them gave,
    /// asking no more than `quorum.of()`; a provider that answers otherwise is told as
    /// [`Event::Disagreed`](crate::Event::Disagreed) and, after [`DISSENTS`](super::DISSENTS)
    /// disagreements in a row, ruled out for that method for the
    /// [lack period](Self::lack_found_for); no agreement is
    /// [`FailureKind::NoConsensus`](super::FailureKind::NoConsensus) with each provider's
    /// answer digest. See [the consensus module's rules](super#consensus-reads). Costs
    /// `quorum.agree()` requests per read while the providers agree.
    ///
    /// ```
    /// use failnext::Endpoint;
    /// use failnext::alloy::{FailoverTransport, Quorum};
    ///
    /// let transport = FailoverTransport::builder([
    ///     Endpoint::new("a", "https://a.example/rpc"),
    ///     Endpoint::new("b", "https://b.example/rpc"),
    ///     Endpoint::new("c", "https://c.example/rpc"),
    /// ])
    /// .consensus(["eth_call", "eth_getBalance"], Quorum::new(2, 3))
    /// .build()?;
    /// # drop(transport);
    /// # Ok::<(), failnext::ConfigError>(())
    /// ```
    ///
    /// Default: no method is voted.
    pub fn consensus<I, S>(mut self, methods: I, quorum: super::Quorum) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.consensus = Some((methods.into_iter().map(Into::into).collect(), quorum));
        self
    }

    /// Sends on this `reqwest::Client` (its pool, TLS, proxy and timeouts), directly, as
    /// alloy's `Http::with_client` does. Default: `reqwest::Client::new()` (system proxies,
    /// reqwest's defaults).
    ///
    /// ```
    /// use failnext::Endpoint;
    /// use failnext::alloy::FailoverTransport;
    ///
    /// let client = reqwest::Client::builder().no_proxy().build()?;
    /// let transport = FailoverTransport::builder([
    ///     Endpoint::new("primary", "http://127.0.0.1:8545"),
    ///     Endpoint::new("backup", "http://127.0.0.1:8546"),
    /// ])
    /// .client(client)
    /// .build()?;
    /// # drop(transport);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn client(mut self, client: reqwest::Client) -> Self {
        self.client = Some(client);
        self
    }

    /// Runs `middleware` once per call, before failover (a request log, a metrics layer, a
    /// header every call needs), in the order added. With any middleware the transport sends
    /// through a `reqwest-middleware` chain on its [client](Self::client): the added
    /// middlewares, then failnext's, then the [per-attempt](Self::attempt_middleware) ones.
    pub fn call_middleware(mut self, middleware: impl Middleware) -> Self {
        self.per_call.push(Arc::new(middleware));
        self
    }

    /// Runs `middleware` once per attempt, after failover chose the endpoint (it sees the
    /// request addressed to that endpoint, and its answer before it is judged), in the order
    /// added.
    ///
    /// ```
    /// use failnext::Endpoint;
    /// use failnext::alloy::FailoverTransport;
    /// use reqwest_middleware::{Middleware, Next, Result};
    ///
    /// /// Counts the attempts the transport sends.
    /// struct CountAttempts(std::sync::atomic::AtomicUsize);
    ///
    /// #[async_trait::async_trait]
    /// impl Middleware for CountAttempts {
    ///     async fn handle(
    ///         &self,
    ///         req: reqwest::Request,
    ///         ext: &mut http::Extensions,
    ///         next: Next<'_>,
    ///     ) -> Result<reqwest::Response> {
    ///         self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    ///         next.run(req, ext).await
    ///     }
    /// }
    ///
    /// let transport = FailoverTransport::builder([Endpoint::new("primary", "http://127.0.0.1:8545")])
    ///     .attempt_middleware(CountAttempts(Default::default()))
    ///     .build()?;
    /// # drop(transport);
    /// # Ok::<(), failnext::ConfigError>(())
    /// ```
    pub fn attempt_middleware(mut self, middleware: impl Middleware) -> Self {
        self.per_attempt.push(Arc::new(middleware));
        self
    }

    /// Hedges reads with `hedge` (see [`FailoverBuilder::hedge`]). Default: [`DEFAULT_HEDGE`]
    /// with a [monitor](Self::monitor), none without.
    pub fn hedge(mut self, hedge: Hedge) -> Self {
        self.hedge = Setting::Set(hedge);
        self
    }

    /// No hedged reads.
    pub fn no_hedge(mut self) -> Self {
        self.hedge = Setting::Off;
        self
    }

    /// Limits failover attempts and hedges (see [`FailoverBuilder::failover_budget`]).
    /// Default: [`DEFAULT_BUDGET`].
    pub fn failover_budget(mut self, budget: Budget) -> Self {
        self.budget = Setting::Set(budget);
        self
    }

    /// No failover budget: every request may try every endpoint.
    pub fn no_failover_budget(mut self) -> Self {
        self.budget = Setting::Off;
        self
    }

    /// Bounds every request as a whole (see [`FailoverBuilder::deadline`]). Default:
    /// [`DEFAULT_DEADLINE`].
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Setting::Set(deadline);
        self
    }

    /// No request deadline (each attempt is still bounded by the attempt timeout).
    pub fn no_deadline(mut self) -> Self {
        self.deadline = Setting::Off;
        self
    }

    /// Orders endpoints by latency as well as priority (see
    /// [`FailoverBuilder::latency_ordering`]). Default: with a [monitor](Self::monitor),
    /// `LatencyOrdering::new(10 ms)`; without one, priority order only.
    pub fn latency_ordering(mut self, ordering: LatencyOrdering) -> Self {
        self.ordering = Setting::Set(ordering);
        self
    }

    /// Priority order only, even with a monitor.
    pub fn no_latency_ordering(mut self) -> Self {
        self.ordering = Setting::Off;
        self
    }

    /// Monotonic reads: no read is answered by a provider below the highest head this
    /// transport has observed (see [`FailoverTransport::head`]). `heads` gives a provider's
    /// current head by endpoint id (a block-height monitor's snapshot), `None` when unknown: a
    /// provider known to be more than [`DEFAULT_TOLERANCE`](crate::DEFAULT_TOLERANCE) blocks
    /// below the floor is skipped for reads (a monitor's view trails the chain by the age of
    /// its probe, so a provider known a block or two below is asked), and when that would
    /// leave no provider the read goes ahead, its answers judged. An `eth_blockNumber` answer
    /// below the floor fails over instead of being returned, and when no provider answers at
    /// or above it the read fails with [`FailureKind::BelowFloor`](super::FailureKind) (a
    /// bundle's reads, pinned to its reference, fail with it at once when every provider is
    /// known below). Writes and filter calls are not affected.
    ///
    /// Default: with a [monitor](Self::monitor), its heads; without one, off.
    pub fn monotonic_reads(mut self, heads: impl Fn(&str) -> Option<u64> + Send + Sync + 'static) -> Self {
        self.monotonic = Setting::Set(Heads::of_fn(heads));
        self
    }

    /// No monotonic reads, even with a monitor.
    pub fn no_monotonic_reads(mut self) -> Self {
        self.monotonic = Setting::Off;
        self
    }

    /// See [`FailoverBuilder::eligible`].
    pub fn eligible(mut self, eligibility: impl Eligibility) -> Self {
        self.failover = self.failover.eligible(eligibility);
        self
    }

    /// Judges answers with `classifier` instead of the JSON-RPC classifier, which still
    /// reads each body first for what the transport learns from it (see
    /// [`FailoverBuilder::classifier`]).
    pub fn classifier(mut self, classifier: impl Classifier) -> Self {
        self.failover = self.failover.classifier(classifier);
        self
    }

    /// See [`FailoverBuilder::additional_trigger_status_codes`].
    pub fn additional_trigger_status_codes(mut self, codes: impl IntoIterator<Item = StatusCode>) -> Self {
        self.failover = self.failover.additional_trigger_status_codes(codes);
        self
    }

    /// See [`FailoverBuilder::cooldown`]. Default: the adaptive breaker.
    pub fn cooldown(mut self, cooldown: Cooldown) -> Self {
        self.failover = self.failover.cooldown(cooldown);
        self
    }

    /// See [`FailoverBuilder::attempt_timeout`]. Default: 10 s.
    pub fn attempt_timeout(mut self, timeout: Duration) -> Self {
        self.failover = self.failover.attempt_timeout(timeout);
        self
    }

    /// See [`FailoverBuilder::no_attempt_timeout`].
    pub fn no_attempt_timeout(mut self) -> Self {
        self.failover = self.failover.no_attempt_timeout();
        self
    }

    /// See [`FailoverBuilder::trace`].
    pub fn trace(mut self, all: bool) -> Self {
        self.failover = self.failover.trace(all);
        self
    }

    /// Makes this transport one of a fleet sharing `fleet`'s Redis (feature `redis`): see
    /// [`FailoverBuilder::fleet`]. A write to a budgeted provider is admitted like any
    /// request; refused, it is not sent anywhere it was not routed to (a write that may not
    /// fail over fails, unsent).
    #[cfg(feature = "redis")]
    pub fn fleet(mut self, fleet: crate::fleet::Fleet) -> Self {
        self.failover = self.failover.fleet(fleet);
        self
    }

    /// See [`FailoverBuilder::on_event`].
    pub fn on_event(mut self, hook: impl Fn(&Event<'_>) + Send + Sync + 'static) -> Self {
        self.failover = self.failover.on_event(hook);
        self
    }

    /// Uses `table` to decide which methods may fail over (default: [`MethodTable::new`]).
    pub fn method_table(mut self, table: MethodTable) -> Self {
        self.table = table;
        self
    }

    /// How long lookups of a broadcast (`eth_getTransactionReceipt`,
    /// `eth_getTransactionByHash` of its hash, `eth_getTransactionCount(sender, "pending")`)
    /// prefer the endpoint that accepted it. Default: 2 minutes.
    pub fn remember_broadcasts_for(mut self, duration: Duration) -> Self {
        self.remember = duration;
        self
    }

    /// A state read more than `blocks` blocks behind the head needs
    /// [`Capability::Archive`]. Default: 128 blocks (geth keeps the state of its last 128).
    pub fn archive_depth(mut self, blocks: u64) -> Self {
        self.archive_depth = Some(blocks);
        self
    }

    /// How long an endpoint found to lack a capability (its answer said "missing trie node"
    /// to a historical read, or "method not found") is skipped by the requests that need it;
    /// then it is asked again. Declared lacks stay for good. Default: 10 minutes.
    pub fn lack_found_for(mut self, duration: Duration) -> Self {
        self.lack_for = Some(duration);
        self
    }

    /// Declares that endpoint `endpoint` lacks `capability`, for good: requests that need it
    /// skip that endpoint, the others still use it (see [the module docs](super#capabilities)).
    /// An id that names no endpoint fails [`build`](Self::build) (a typo would otherwise
    /// declare nothing, silently).
    pub fn lacks(mut self, endpoint: impl Into<EndpointId>, capability: Capability) -> Self {
        self.lacks.push((endpoint.into(), capability));
        self
    }

    /// Validates the configuration and builds the transport.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`]: every case of [`FailoverBuilder::build`]; an id given to
    /// [`writes_to`](Self::writes_to), [`broadcast_to`](Self::broadcast_to) or
    /// [`lacks`](Self::lacks) that names no endpoint
    /// ([`ConfigError::endpoint_id`] names it); a `broadcast_to` endpoint that `writes_to`
    /// leaves out.
    pub fn build(self) -> Result<FailoverTransport, ConfigError> {
        let known = |id: &EndpointId| {
            if self.ids.contains(id) { Ok(()) } else { Err(ConfigError::unknown_endpoint(id.clone())) }
        };
        let mut named =
            self.writes.iter().chain(&self.broadcast).flatten().chain(self.lacks.iter().map(|(id, _)| id));
        named.try_for_each(known)?;
        if let (Some(writes), Some(broadcast)) = (&self.writes, &self.broadcast) {
            if let Some(id) = broadcast.iter().find(|id| !writes.contains(id)) {
                return Err(ConfigError::broadcast_outside_writes(id.clone()));
            }
        }
        let paired = self.source.is_some();
        let deadline = self.deadline.or(Some(DEFAULT_DEADLINE));
        let mut failover = self.failover;
        // A paired failover builder has the paired default hedge; this one's setting wins.
        if !matches!(self.hedge, Setting::Default) {
            failover.hedge = self.hedge;
        }
        if let Some(budget) = self.budget.or(Some(DEFAULT_BUDGET)) {
            failover = failover.failover_budget(budget);
        }
        if let Some(deadline) = deadline {
            failover = failover.deadline(deadline);
        }
        if let Some(ordering) = self.ordering.or(paired.then(|| LatencyOrdering::new(DEFAULT_LATENCY_MARGIN)))
        {
            failover = failover.latency_ordering(ordering);
        }
        if let Some(source) = &self.source {
            failover = failover.monitor(Arc::clone(source));
        }
        let failover = failover.judging_packets().build()?;
        let client = self.client.unwrap_or_default();
        let route = if self.per_call.is_empty() && self.per_attempt.is_empty() {
            Route::Direct { client }
        } else {
            let chain = self
                .per_call
                .into_iter()
                .fold(reqwest_middleware::ClientBuilder::new(client), |c, m| c.with_arc(m));
            let chain = self.per_attempt.into_iter().fold(chain.with(failover.clone()), |c, m| c.with_arc(m));
            Route::Chain(chain.build())
        };
        let heads = self.monotonic.or(self.source.clone().map(Heads::of_source));
        let settings = Settings {
            table: self.table,
            remember: self.remember,
            archive_depth: self.archive_depth,
            lack_for: self.lack_for,
            lacks: self.lacks,
            split_logs: self.split_logs,
            deadline,
            heads,
            source: self.source,
            writes: self.writes,
            fanout: self.broadcast,
            consensus: self.consensus,
        };
        Ok(FailoverTransport::assemble(route, failover, settings))
    }
}

impl fmt::Debug for FailoverTransportBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FailoverTransportBuilder")
            .field("failover", &self.failover)
            .field("hedge", &self.hedge)
            .field("budget", &self.budget)
            .field("deadline", &self.deadline)
            .field("ordering", &self.ordering)
            .field("monitor", &self.source.as_ref().map(|_| "<source>"))
            .field("writes_to", &self.writes)
            .field("broadcast_to", &self.broadcast)
            .field("split_logs", &self.split_logs)
            .field("consensus", &self.consensus)
            .finish_non_exhaustive()
    }
}

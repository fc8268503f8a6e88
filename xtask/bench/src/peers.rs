//! The peer table: alloy's own `Http`, alloy's `FallbackLayer` (with and without
//! `RetryBackoffLayer`) and failnext's `FailoverTransport` over the same loopback providers,
//! in seven scenarios where the first provider is good or bad in one way.
//!
//! Every contender is an alloy `RpcClient` calling `eth_blockNumber`. An answer is correct when
//! it is the head of the good providers ([`HEAD`]); a JSON-RPC error, a transport error, a
//! lagging head or no answer within [`CALL_LIMIT`] is not. Three providers: the first
//! (`primary`) is the one a scenario makes bad, `secondary` and `backup` are always good. Each
//! contender gets fresh servers and its own clients, so none inherits another's state, and
//! sends its reads from [`LANES`] tasks, each starting one read every [`GAP`] (open loop,
//! ~650 reads/s; none started after [`RUN_LIMIT`]), so that time-based behaviour (breakers, flapping, `Retry-After`) plays out
//! over the run.
//!
//! Measured per contender: correct answers; p50 and p99 of every read; requests that reached
//! the bad provider (counted by that server; for the refused primary, where nothing arrives,
//! the attempts the client started, counted on the client side), with the failnext monitor's
//! probes counted apart (by their User-Agent); and the client thread's CPU time per read.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use alloy::primitives::U64;
use alloy::rpc::client::{ClientBuilder as RpcClientBuilder, RpcClient};
use alloy::rpc::json_rpc::{RequestPacket, ResponsePacket};
use alloy::transports::http::Http;
use alloy::transports::layers::{FallbackService, RetryBackoffLayer};
use alloy::transports::{TransportError, TransportFut};
use failnext::alloy::FailoverTransport;
use failnext::{Endpoint, Event, Hedge};
use failnext_blocklag::Monitor;
use failnext_loopback::{Action, Later, LaterHandler, Received, Refused, Reply};
use serde_json::Value;

use crate::measure::quantile;
use crate::os::{Clock, cpu_time};
use crate::servers::Servers;
use crate::variants::{BoxError, reqwest_client};

/// The good providers' head.
pub(crate) const HEAD: u64 = 0x1000;

/// How far behind the lagging primary is.
const LAG: u64 = 20;

/// Tasks sending reads.
const LANES: usize = 4;

/// Each task starts a read this often (when the previous one has returned).
const GAP: Duration = Duration::from_millis(6);

/// A contender starts no read after this long (alloy's retry layer over a rate-limited
/// provider takes a second per read); the table shows how many it sent.
const RUN_LIMIT: Duration = Duration::from_secs(15);

/// A read not answered within this counts as wrong and is abandoned.
const CALL_LIMIT: Duration = Duration::from_secs(5);

/// The `slow` scenario: the good providers' latency, and the primary's.
const SLOW_BASE: Duration = Duration::from_millis(100);
const SLOW_PRIMARY: Duration = Duration::from_millis(300);

/// The hedge delay of `failnext + hedge 20 ms`.
pub(crate) const HEDGE_DELAY: Duration = Duration::from_millis(20);

/// The `flapping` primary is up, then down (503), for this long each, from its start.
const FLAP: Duration = Duration::from_millis(150);

/// The `Retry-After` of the rate-limited primary, seconds.
const RETRY_AFTER: u64 = 5;

/// The User-Agent of the failnext monitor's probes (so the server can count them apart).
const PROBE_AGENT: &str = "failnext-bench-probe";

/// How often the paired rows' monitors probe each provider: the README's `spawn(2 s)`, and
/// `spawn(5 s)`.
const CHECK_EVERY: Duration = Duration::from_secs(2);
const CHECK_EVERY_SLOW: Duration = Duration::from_secs(5);

/// What the first provider does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    Healthy,
    Refused,
    Unavailable,
    RateLimited,
    Slow,
    Lagging,
    Flapping,
}

/// Every scenario, in run order.
pub(crate) const FAULTS: [Fault; 7] = [
    Fault::Healthy,
    Fault::Refused,
    Fault::Unavailable,
    Fault::RateLimited,
    Fault::Slow,
    Fault::Lagging,
    Fault::Flapping,
];

/// The contenders.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Peer {
    /// alloy's `Http` to the primary alone: what one provider gives.
    AlloyHttp,
    /// alloy's `Http` to a good provider alone (the `slow` scenario only: the backup's own
    /// latency, which hedging is measured against).
    AlloyHttpBackup,
    /// `FallbackLayer::default()` over three `Http`s: every read to the three best-ranked
    /// transports at once (its default `active_transport_count` is 3), the first `Ok` wins.
    Fallback,
    /// `FallbackLayer` with `active_transport_count` 1: each read to the best-ranked one only.
    FallbackOne,
    /// `RetryBackoffLayer::new(10, 100, 10_000)` over `FallbackLayer::default()`: rate-limit
    /// errors (429, -32005, ...) retried after their hint or 100 ms, up to 10 times.
    FallbackRetry,
    /// `FailoverTransport::builder(..).build()` (what `FailoverTransport::new` builds), on the
    /// same client as alloy's `Http` rows: the transport's defaults (adaptive breaker, JSON-RPC
    /// classifier, p95 hedge, failover budget, 30 s deadline).
    Failnext,
    /// failnext's defaults plus `Hedge::after(20 ms)` (the `slow` scenario only).
    FailnextHedge,
    /// The defaults paired with a failnext-blocklag monitor in one call:
    /// `FailoverTransport::builder(..).monitor(monitor.spawn(100 ms))`, the monitor with its
    /// own defaults, the first read once every provider's first probe has published.
    FailnextPaired,
    /// The same, with the monitor probing every 5 s (`spawn(5 s)`).
    FailnextPaired5s,
}

impl Peer {
    fn name(self) -> &'static str {
        match self {
            Peer::AlloyHttp => "alloy Http (primary only)",
            Peer::AlloyHttpBackup => "alloy Http (backup only)",
            Peer::Fallback => "alloy FallbackLayer (default: 3 at once)",
            Peer::FallbackOne => "alloy FallbackLayer (1 at a time)",
            Peer::FallbackRetry => "alloy RetryBackoffLayer + FallbackLayer",
            Peer::Failnext => "failnext (defaults)",
            Peer::FailnextHedge => "failnext + hedge 20 ms",
            Peer::FailnextPaired => "failnext (paired, spawn 2 s)",
            Peer::FailnextPaired5s => "failnext (paired, spawn 5 s)",
        }
    }

    fn is_failnext(self) -> bool {
        matches!(self, Peer::Failnext | Peer::FailnextHedge | Peer::FailnextPaired | Peer::FailnextPaired5s)
    }

    fn is_fallback(self) -> bool {
        matches!(self, Peer::Fallback | Peer::FallbackOne | Peer::FallbackRetry)
    }
}

impl Fault {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Fault::Healthy => "healthy",
            Fault::Refused => "primary refused",
            Fault::Unavailable => "primary 503",
            Fault::RateLimited => "primary 200 + -32005, Retry-After: 5",
            Fault::Slow => "primary 200 ms slower (good ones 100 ms)",
            Fault::Lagging => "primary 20 blocks behind",
            Fault::Flapping => "primary flapping (150 ms up, 150 ms 503)",
        }
    }

    /// The contenders, in table order: the backup alone and the fixed hedge only where the
    /// hedge's claim is measured (the `slow` scenario).
    fn peers(self) -> impl Iterator<Item = Peer> {
        const PEERS: [Peer; 9] = [
            Peer::AlloyHttp,
            Peer::AlloyHttpBackup,
            Peer::Fallback,
            Peer::FallbackOne,
            Peer::FallbackRetry,
            Peer::Failnext,
            Peer::FailnextHedge,
            Peer::FailnextPaired,
            Peer::FailnextPaired5s,
        ];
        let slow_only = |p: &Peer| matches!(p, Peer::AlloyHttpBackup | Peer::FailnextHedge);
        PEERS.into_iter().filter(move |p| self == Fault::Slow || !slow_only(p))
    }

    /// Reads per contender.
    fn reads(self, quick: bool) -> usize {
        match (self, quick) {
            (Fault::Slow, false) => 120,
            (_, false) => 800,
            (Fault::Slow, true) => 8,
            (_, true) => 24,
        }
    }
}

/// One contender's figures in one scenario.
#[derive(Debug)]
pub(crate) struct Row {
    pub(crate) fault: Fault,
    pub(crate) peer: Peer,
    pub(crate) reads: u64,
    pub(crate) correct: u64,
    pub(crate) p50_ms: f64,
    pub(crate) p99_ms: f64,
    /// Requests that reached the bad provider (none in `healthy`): the client's own, without
    /// probes.
    pub(crate) to_bad: u64,
    /// The monitor's probes that reached the bad provider (the paired row only).
    pub(crate) probes: Option<u64>,
    /// The bad provider's breaker trials (failnext's rows; 0 for the others).
    pub(crate) trials: u64,
    /// Requests the three providers received in all, probes included.
    pub(crate) total_requests: u64,
    pub(crate) cpu_us: f64,
}

/// Runs every scenario for every contender.
pub(crate) async fn run(servers: &Servers, quick: bool) -> Result<Vec<Row>, BoxError> {
    let mut rows = Vec::new();
    for fault in FAULTS {
        for peer in fault.peers() {
            rows.push(run_one(servers, fault, peer, fault.reads(quick)).await?);
        }
    }
    Ok(rows)
}

/// The three providers of one run.
struct Providers {
    primary: Provider,
    good: [Provider; 2],
}

/// A loopback provider, or the refusing primary.
enum Provider {
    Serving { server: Arc<failnext_loopback::Server>, counts: Arc<Counts> },
    Refusing(Refused),
}

impl Provider {
    fn url(&self) -> String {
        match self {
            Provider::Serving { server, .. } => format!("http://{}/", server.addr()),
            Provider::Refusing(refused) => refused.url("/"),
        }
    }

    /// Requests received so far, probes included (0 for the refusing one).
    fn requests(&self) -> u64 {
        match self {
            Provider::Serving { server, .. } => server.requests() as u64,
            Provider::Refusing(_) => 0,
        }
    }

    /// The probes, and the other requests it answered with its fault, so far.
    fn counts(&self) -> (u64, u64) {
        match self {
            Provider::Serving { counts, .. } => (counts.probes.load(Relaxed), counts.faulty.load(Relaxed)),
            Provider::Refusing(_) => (0, 0),
        }
    }
}

async fn run_one(servers: &Servers, fault: Fault, peer: Peer, reads: usize) -> Result<Row, BoxError> {
    let started = Instant::now();
    let base = if fault == Fault::Slow { SLOW_BASE } else { Duration::ZERO };
    let primary = match fault {
        Fault::Refused => Provider::Refusing(Refused::new()),
        Fault::Slow => serve(servers, Act::Good(SLOW_PRIMARY), started)?,
        Fault::Healthy => serve(servers, Act::Good(Duration::ZERO), started)?,
        Fault::Unavailable => serve(servers, Act::Unavailable, started)?,
        Fault::RateLimited => serve(servers, Act::RateLimited, started)?,
        Fault::Lagging => serve(servers, Act::Lagging, started)?,
        Fault::Flapping => serve(servers, Act::Flapping, started)?,
    };
    let providers = Providers {
        primary,
        good: [serve(servers, Act::Good(base), started)?, serve(servers, Act::Good(base), started)?],
    };
    let urls = [providers.primary.url(), providers.good[0].url(), providers.good[1].url()];
    let attempts = Arc::new(AtomicU64::new(0));
    let trials = Arc::new(AtomicU64::new(0));
    let (client, monitor) = contender(peer, &urls, &attempts, &trials).await?;
    let all = |p: &Providers| p.primary.requests() + p.good.iter().map(Provider::requests).sum::<u64>();
    let ((probes_before, faulty_before), all_before) = (providers.primary.counts(), all(&providers));
    let cpu_before = cpu_time(Clock::Thread);

    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..LANES {
        tasks.spawn(lane(client.clone(), next.clone(), reads, started + RUN_LIMIT));
    }
    let mut answers: Vec<(u64, bool)> = Vec::with_capacity(reads);
    while let Some(done) = tasks.join_next().await {
        answers.extend(done?);
    }

    let cpu = cpu_time(Clock::Thread).saturating_sub(cpu_before);
    // The paired transport owns the monitor's schedule: dropping the client stops its probes.
    drop(client);
    let (probes, faulty) = providers.primary.counts();
    let probes = probes - probes_before;
    let to_bad = if fault == Fault::Refused { attempts.load(Relaxed) } else { faulty - faulty_before };
    let mut latencies: Vec<u64> = answers.iter().map(|a| a.0).collect();
    latencies.sort_unstable();
    Ok(Row {
        fault,
        peer,
        reads: answers.len() as u64,
        correct: answers.iter().filter(|a| a.1).count() as u64,
        p50_ms: quantile(&latencies, 0.50) / 1e6,
        p99_ms: quantile(&latencies, 0.99) / 1e6,
        to_bad,
        probes: monitor.map(|_| probes),
        trials: trials.load(Relaxed),
        total_requests: all(&providers) - all_before,
        cpu_us: cpu.as_secs_f64() * 1e6 / answers.len().max(1) as f64,
    })
}

/// One task's reads: `(latency ns, correct)`.
async fn lane(client: RpcClient, next: Arc<AtomicUsize>, total: usize, until: Instant) -> Vec<(u64, bool)> {
    let mut out = Vec::new();
    let mut tick = tokio::time::interval(GAP);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while Instant::now() < until && next.fetch_add(1, Relaxed) < total {
        tick.tick().await;
        let started = Instant::now();
        let call = client.request_noparams::<U64>("eth_blockNumber");
        let correct =
            matches!(tokio::time::timeout(CALL_LIMIT, call).await, Ok(Ok(n)) if n == U64::from(HEAD));
        out.push((started.elapsed().as_nanos() as u64, correct));
    }
    out
}

/// The contender's client, and the monitor it probes with (the paired row).
async fn contender(
    peer: Peer,
    urls: &[String; 3],
    attempts: &Arc<AtomicU64>,
    trials: &Arc<AtomicU64>,
) -> Result<(RpcClient, Option<Monitor>), BoxError> {
    let http = |i: usize| -> Result<Counted, BoxError> {
        let inner = Http::with_client(reqwest_client()?, urls[i].parse()?);
        Ok(Counted { inner, attempts: (i == 0).then(|| attempts.clone()) })
    };
    let https = || -> Result<Vec<Counted>, BoxError> { (0..3).map(http).collect() };
    let endpoints: Vec<Endpoint> = ["primary", "secondary", "backup"]
        .iter()
        .zip(urls)
        .map(|(id, url)| Endpoint::new(*id, url.as_str()))
        .collect();
    let counting = {
        let (attempts, trials) = (attempts.clone(), trials.clone());
        move |event: &Event<'_>| match event {
            Event::Attempt { endpoint, .. } if endpoint.as_str() == "primary" => {
                attempts.fetch_add(1, Relaxed);
            }
            Event::Breaker { endpoint, state: failnext::BreakerState::HalfOpen }
                if endpoint.as_str() == "primary" =>
            {
                trials.fetch_add(1, Relaxed);
            }
            _ => {}
        }
    };
    Ok(match peer {
        Peer::AlloyHttp => (RpcClient::new(http(0)?, true), None),
        Peer::AlloyHttpBackup => (RpcClient::new(http(2)?, true), None),
        // `FallbackLayer::default()` is `FallbackService::new(transports, 3)` plus a set of
        // sequential methods that `eth_blockNumber` is not in.
        Peer::Fallback => (RpcClient::new(FallbackService::new(https()?, 3), true), None),
        Peer::FallbackOne => (RpcClient::new(FallbackService::new(https()?, 1), true), None),
        Peer::FallbackRetry => {
            let client = RpcClientBuilder::default()
                .layer(RetryBackoffLayer::new(10, 100, 10_000))
                .transport(FallbackService::new(https()?, 3), true);
            (client, None)
        }
        Peer::Failnext => {
            let transport =
                FailoverTransport::builder(endpoints).client(reqwest_client()?).on_event(counting).build()?;
            (RpcClient::new(transport, true), None)
        }
        Peer::FailnextHedge => {
            let transport = FailoverTransport::builder(endpoints)
                .client(reqwest_client()?)
                .hedge(Hedge::after(HEDGE_DELAY))
                .no_failover_budget()
                .no_deadline()
                .on_event(counting)
                .build()?;
            (RpcClient::new(transport, true), None)
        }
        Peer::FailnextPaired | Peer::FailnextPaired5s => {
            let probe_client = reqwest::Client::builder().no_proxy().user_agent(PROBE_AGENT).build()?;
            let monitor = Monitor::builder(endpoints.clone()).client(probe_client).build()?;
            let every = if peer == Peer::FailnextPaired { CHECK_EVERY } else { CHECK_EVERY_SLOW };
            let schedule = monitor.spawn(every);
            // The first read once the monitor has a view, as an application starts.
            schedule.ready(Duration::from_secs(5)).await;
            let transport = FailoverTransport::builder(endpoints)
                .client(reqwest_client()?)
                .monitor(schedule)
                .on_event(counting)
                .build()?;
            (RpcClient::new(transport, true), Some(monitor))
        }
    })
}

/// What a provider does with every call.
#[derive(Clone, Copy, Debug)]
enum Act {
    /// Answers [`HEAD`] (and chain id 1) after this delay.
    Good(Duration),
    /// HTTP 503 with a JSON-RPC error.
    Unavailable,
    /// HTTP 200 with a -32005 error and `Retry-After`.
    RateLimited,
    /// Answers `HEAD - LAG`.
    Lagging,
    /// Good for [`FLAP`], then 503 for [`FLAP`], from `started`.
    Flapping,
}

/// What a provider counts: the monitor's probes, and the other requests it answered with its
/// fault (a 503, a rate limit, a lagging head, a slow answer).
#[derive(Debug, Default)]
struct Counts {
    probes: AtomicU64,
    faulty: AtomicU64,
}

fn serve(servers: &Servers, act: Act, started: Instant) -> Result<Provider, BoxError> {
    let counts = Arc::new(Counts::default());
    let counted = counts.clone();
    let handler: LaterHandler = Arc::new(move |req: &Received| {
        let (reply, delay, faulty) = answer(req, act, started);
        if req.headers.get(reqwest::header::USER_AGENT).is_some_and(|v| v == PROBE_AGENT) {
            counted.probes.fetch_add(1, Relaxed);
        } else if faulty {
            counted.faulty.fetch_add(1, Relaxed);
        }
        Box::pin(async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            Action::Reply(reply)
        }) as Later
    });
    let server = servers.serve(handler)?;
    Ok(Provider::Serving { server, counts })
}

/// The reply to `req` (a call, or a batch: the monitor's probe asks the chain id and the
/// latest block in one request), its delay, and whether it is the provider's fault.
fn answer(req: &Received, act: Act, started: Instant) -> (Reply, Duration, bool) {
    let body: Value = req.json();
    let down = match act {
        Act::Flapping => (started.elapsed().as_nanos() / FLAP.as_nanos()) % 2 == 1,
        Act::Unavailable => true,
        _ => false,
    };
    if down {
        // What a load balancer in front of a provider sends: an HTML page, not JSON-RPC (alloy's
        // `Http` returns a JSON-RPC error body of a 503 as an answer, which FallbackLayer takes).
        let page = "<html><body><h1>503 Service Temporarily Unavailable</h1></body></html>";
        return (Reply::new(503).content_type("text/html").send(page), Duration::ZERO, true);
    }
    if let Act::RateLimited = act {
        let id = body.get("id").cloned().unwrap_or_default();
        let error = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32005,"message":"rate limit exceeded"}}}}"#
        );
        let reply = Reply::new(200).json(error).header("retry-after", RETRY_AFTER.to_string());
        return (reply, Duration::ZERO, true);
    }
    let delay = if let Act::Good(delay) = act { delay } else { Duration::ZERO };
    let (reply, faulty) = match &body {
        Value::Array(calls) => {
            let answers: Vec<(Value, bool)> = calls.iter().map(|call| one(call, act, started)).collect();
            let faulty = answers.iter().any(|a| a.1);
            (Value::Array(answers.into_iter().map(|a| a.0).collect()), faulty)
        }
        call => one(call, act, started),
    };
    let faulty = faulty || delay == SLOW_PRIMARY;
    (Reply::new(200).json(reply.to_string()), delay, faulty)
}

/// The answer to one call, and whether it is the provider's fault (a lagging head).
fn one(call: &Value, act: Act, started: Instant) -> (Value, bool) {
    let id = call.get("id").cloned().unwrap_or_default();
    let method = call.get("method").and_then(Value::as_str).unwrap_or_default();
    let (head, lagging) = match act {
        Act::Lagging => (HEAD - LAG, true),
        _ => (HEAD, false),
    };
    let (result, faulty) = match method {
        "eth_chainId" => (Value::from("0x1"), false),
        "eth_getBlockByNumber" => (block(head, started), lagging),
        _ => (Value::from(format!("0x{head:x}")), lagging),
    };
    (serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result}), faulty)
}

/// Block `number` as a provider answers `eth_getBlockByNumber`: its hash made of its number,
/// its timestamp the contender's start (`started`): the head does not move during a run
/// (at most [`RUN_LIMIT`]), well within the monitor's head age.
fn block(number: u64, started: Instant) -> Value {
    let made = std::time::SystemTime::now()
        .checked_sub(started.elapsed())
        .unwrap_or_else(std::time::SystemTime::now);
    let secs = made.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let hash = |n: u64| format!("0x{n:064x}");
    serde_json::json!({
        "number": format!("0x{number:x}"),
        "hash": hash(number),
        "parentHash": hash(number.saturating_sub(1)),
        "timestamp": format!("0x{secs:x}"),
        "transactions": [],
    })
}

/// alloy's `Http`, counting the calls it starts (the refused primary's attempts).
#[derive(Clone, Debug)]
struct Counted {
    inner: Http<reqwest::Client>,
    attempts: Option<Arc<AtomicU64>>,
}

impl tower_service::Service<RequestPacket> for Counted {
    type Response = ResponsePacket;
    type Error = TransportError;
    type Future = TransportFut<'static>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, packet: RequestPacket) -> TransportFut<'static> {
        if let Some(attempts) = &self.attempts {
            attempts.fetch_add(1, Relaxed);
        }
        self.inner.call(packet)
    }
}

// ===== the table =====

/// The peer table as markdown.
pub(crate) fn markdown(rows: &[Row], quick: bool) -> String {
    use std::fmt::Write as _;
    let mut md = String::new();
    let _ = writeln!(
        md,
        "### peers: alloy's Http, FallbackLayer (± RetryBackoffLayer) and failnext's transport{}\n\n\
         Three loopback providers; the first is the one the scenario makes bad. {LANES} tasks each start an \
         `eth_blockNumber` read every {} ms (open loop); fresh servers and clients per contender. Correct: \
         the good head (0x{HEAD:x}); errors, JSON-RPC errors, a lagging head and no answer within {} s are \
         not. To bad: requests the bad provider answered with its fault (a 503, a rate limit, a lagging \
         head, a slow answer; refused: attempts started), apart from failnext-blocklag's probes, shown as \
         `+N probes`. All reqs: requests the three providers received, \
         probes included. CPU: the client thread (the monitor's checks included), per read.\n",
        if quick { " (quick: too few reads to compare)" } else { "" },
        GAP.as_millis(),
        CALL_LIMIT.as_secs(),
    );
    md.push_str(
        "| scenario | client | correct | p50 ms | p99 ms | to bad | all reqs | CPU µs/read |\n\
         |---|---|--:|--:|--:|--:|--:|--:|\n",
    );
    for r in rows {
        let probes = r.probes.map_or(String::new(), |p| format!(" +{p} probes"));
        let _ = writeln!(
            md,
            "| {} | {} | {}/{} ({:.1} %) | {:.2} | {:.2} | {}{probes} | {} | {:.1} |",
            r.fault.name(),
            r.peer.name(),
            r.correct,
            r.reads,
            100.0 * r.correct as f64 / r.reads.max(1) as f64,
            r.p50_ms,
            r.p99_ms,
            r.to_bad,
            r.total_requests,
            r.cpu_us,
        );
    }
    md
}

/// The peer table as JSON rows.
pub(crate) fn json(rows: &[Row]) -> Value {
    Value::Array(
        rows.iter()
            .map(|r| {
                serde_json::json!({
                    "scenario": r.fault.name(),
                    "client": r.peer.name(),
                    "reads": r.reads,
                    "correct": r.correct,
                    "p50_ms": r.p50_ms,
                    "p99_ms": r.p99_ms,
                    "to_bad": r.to_bad,
                    "probes": r.probes,
                    "total_requests": r.total_requests,
                    "cpu_us_per_read": r.cpu_us,
                })
            })
            .collect(),
    )
}

/// The issue's claims on the peer table, per scenario: each side's best configuration (the
/// most correct answers, then the fewest requests to the bad provider, probes included).
pub(crate) fn verdicts(rows: &[Row]) -> Vec<crate::targets::Verdict> {
    use crate::targets::Verdict;
    let mut out = Vec::new();
    let share = |r: &Row| r.correct as f64 / r.reads.max(1) as f64;
    let load = |r: &Row| r.to_bad + r.probes.unwrap_or(0);
    fn best<'a>(
        side: &[&'a Row],
        share: impl Fn(&Row) -> f64,
        load: impl Fn(&Row) -> u64,
    ) -> Option<&'a Row> {
        side.iter().copied().max_by(|a, b| share(a).total_cmp(&share(b)).then(load(b).cmp(&load(a))))
    }
    for fault in FAULTS {
        let here: Vec<&Row> = rows.iter().filter(|r| r.fault == fault).collect();
        let ours: Vec<&Row> = here.iter().copied().filter(|r| r.peer.is_failnext()).collect();
        let theirs: Vec<&Row> = here.iter().copied().filter(|r| r.peer.is_fallback()).collect();
        let (Some(ours), Some(theirs)) = (best(&ours, share, load), best(&theirs, share, load)) else {
            continue;
        };
        out.push(Verdict {
            target: format!(
                "peers, {}: failnext answers correctly at least as often as FallbackLayer",
                fault.name()
            ),
            measured: format!(
                "{} {:.1} % vs {} {:.1} %",
                ours.peer.name(),
                100.0 * share(ours),
                theirs.peer.name(),
                100.0 * share(theirs),
            ),
            met: Some(share(ours) >= share(theirs)),
        });
        if fault != Fault::Healthy {
            out.push(Verdict {
                target: format!(
                    "peers, {}: failnext sends fewer requests to the bad provider (probes included)",
                    fault.name()
                ),
                measured: format!("{} vs {}", load(ours), load(theirs)),
                // Both at zero: neither can send fewer, and failnext sent none.
                met: Some(load(ours) < load(theirs) || load(ours) == 0),
            });
        }
    }
    let slow = |p: Peer| rows.iter().find(|r| r.fault == Fault::Slow && r.peer == p);
    if let (Some(best), Some(backup)) = (slow(Peer::FailnextHedge), slow(Peer::AlloyHttpBackup)) {
        let ratio = best.p99_ms / backup.p99_ms;
        out.push(Verdict {
            target: format!(
                "peers, primary 200 ms slower: hedged ({} ms) read p99 ≤ 1.3 × the backup's own p99",
                HEDGE_DELAY.as_millis()
            ),
            measured: format!("{ratio:.3}× ({:.1} vs {:.1} ms)", best.p99_ms, backup.p99_ms),
            met: Some(ratio <= 1.3),
        });
    }
    // The paired row: every scenario right, the slow primary hidden, and the bad provider
    // asked only by its breaker's trials and the monitor's probes.
    for r in rows.iter().filter(|r| r.peer == Peer::FailnextPaired) {
        out.push(Verdict {
            target: format!("peers, {}: failnext (paired) answers 100 % correctly", r.fault.name()),
            measured: format!("{}/{}", r.correct, r.reads),
            met: Some(r.correct == r.reads),
        });
        if r.fault != Fault::Healthy {
            out.push(Verdict {
                target: format!(
                    "peers, {}: failnext (paired) sends the bad provider nothing but breaker trials (and probes)",
                    r.fault.name()
                ),
                measured: format!("{} requests, {} trials, +{} probes", r.to_bad, r.trials, r.probes.unwrap_or(0)),
                met: Some(r.to_bad <= r.trials),
            });
        }
    }
    if let (Some(paired), Some(backup)) = (slow(Peer::FailnextPaired), slow(Peer::AlloyHttpBackup)) {
        let ratio = paired.p99_ms / backup.p99_ms;
        out.push(Verdict {
            target: "peers, primary 200 ms slower: failnext (paired) p99 ≤ 1.1 × the backup's own".into(),
            measured: format!("{ratio:.3}× ({:.1} vs {:.1} ms)", paired.p99_ms, backup.p99_ms),
            met: Some(ratio <= 1.1),
        });
    }
    // The defaults row on its own against FallbackLayer's best.
    for fault in FAULTS {
        let share = |r: &Row| r.correct as f64 / r.reads.max(1) as f64;
        let here = rows.iter().filter(|r| r.fault == fault);
        let theirs = here.clone().filter(|r| r.peer.is_fallback()).map(share).fold(0.0, f64::max);
        if let Some(ours) = here.clone().find(|r| r.peer == Peer::Failnext) {
            out.push(Verdict {
                target: format!(
                    "peers, {}: failnext (defaults) ≥ FallbackLayer in correct answers",
                    fault.name()
                ),
                measured: format!("{:.1} % vs {:.1} %", 100.0 * share(ours), 100.0 * theirs),
                met: Some(share(ours) >= theirs),
            });
        }
    }
    let healthy = |p: Peer| rows.iter().find(|r| r.fault == Fault::Healthy && r.peer == p);
    if let (Some(f), Some(a)) = (healthy(Peer::Failnext), healthy(Peer::AlloyHttp)) {
        out.push(Verdict {
            target: "peers, healthy: failnext's transport CPU/read vs alloy Http (see alloy-healthy for the paired figure)".into(),
            measured: format!("{:.1} vs {:.1} µs ({:.3}×)", f.cpu_us, a.cpu_us, f.cpu_us / a.cpu_us),
            met: None,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(method: &str, agent: Option<&str>) -> Received {
        let mut req = Received {
            body: format!(r#"{{"jsonrpc":"2.0","id":7,"method":"{method}","params":[]}}"#).into(),
            ..Received::default()
        };
        if let Some(agent) = agent {
            req.headers.insert(reqwest::header::USER_AGENT, agent.parse().unwrap());
        }
        req
    }

    #[test]
    fn each_fault_is_answered_as_its_scenario_says() {
        let now = Instant::now();
        let (good, delay, faulty) = answer(&call("eth_blockNumber", None), Act::Good(Duration::ZERO), now);
        assert_eq!((good.status(), delay, faulty), (200, Duration::ZERO, false));
        let (_, delay, faulty) = answer(&call("eth_blockNumber", None), Act::Good(SLOW_PRIMARY), now);
        assert_eq!((delay, faulty), (SLOW_PRIMARY, true), "the slow primary's answers are its fault");
        let (_, _, faulty) = answer(&call("eth_blockNumber", None), Act::Good(SLOW_BASE), now);
        assert!(!faulty, "a good provider's own latency is not a fault");
        assert_eq!(answer(&call("eth_blockNumber", None), Act::Unavailable, now).0.status(), 503);
        let (limited, _, faulty) = answer(&call("eth_blockNumber", None), Act::RateLimited, now);
        assert_eq!((limited.status(), faulty), (200, true));
        let (_, _, faulty) = answer(&call("eth_chainId", None), Act::Lagging, now);
        assert!(!faulty, "a lagging provider is on the right chain");
        assert!(answer(&call("eth_blockNumber", None), Act::Lagging, now).2);
        // Flapping: up for the first period, down for the next.
        assert!(!answer(&call("eth_blockNumber", None), Act::Flapping, now).2);
        let earlier = now.checked_sub(FLAP + Duration::from_millis(1)).unwrap();
        assert!(answer(&call("eth_blockNumber", None), Act::Flapping, earlier).2);
    }

    #[test]
    fn the_verdicts_take_each_sides_best_configuration() {
        let row = |fault, peer, correct, to_bad, probes| Row {
            fault,
            peer,
            reads: 100,
            correct,
            p50_ms: 1.0,
            p99_ms: 2.0,
            to_bad,
            probes,
            trials: 0,
            total_requests: 0,
            cpu_us: 1.0,
        };
        let rows = [
            row(Fault::Lagging, Peer::Fallback, 10, 100, None),
            row(Fault::Lagging, Peer::FallbackOne, 10, 90, None),
            row(Fault::Lagging, Peer::Failnext, 0, 100, None),
            row(Fault::Lagging, Peer::FailnextPaired, 100, 0, Some(12)),
        ];
        let lagging = verdicts(&rows);
        // Each side's best, then the paired row's own claims, then the defaults row's.
        assert_eq!(lagging.len(), 5, "{lagging:?}");
        assert_eq!(lagging[0].met, Some(true), "{:?}", lagging[0]);
        assert_eq!(lagging[1].measured, "12 vs 90");
        assert_eq!(lagging[1].met, Some(true));
        assert_eq!(lagging[2].met, Some(true), "the paired row is 100 % correct: {:?}", lagging[2]);
        assert_eq!(lagging[3].met, Some(true), "no request, no trial: {:?}", lagging[3]);
        assert_eq!(lagging[4].met, Some(false), "the defaults row, 0 % against 10 %: {:?}", lagging[4]);
        let worse = [
            row(Fault::Unavailable, Peer::Fallback, 100, 5, None),
            row(Fault::Unavailable, Peer::Failnext, 99, 1, None),
        ];
        let worse = verdicts(&worse);
        assert_eq!(worse[0].met, Some(false), "fewer correct answers is not met: {:?}", worse[0]);
        assert_eq!(worse[1].met, Some(true), "1 vs 5 requests to the bad provider");
    }
}

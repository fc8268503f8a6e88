//! The fault-injection soak: many concurrent requests through `Failover` + `Monitor` against
//! simulated providers whose faults switch on a seeded schedule, with every rule checked.
//!
//! A run has two phases with the same load: a short warm-up, after which the process's
//! resources (tasks, connections, memory) are taken as the baseline, and the main phase, after
//! which they must return to that baseline. Both phases are checked.
//!
//! Per phase:
//!
//! - `--concurrency` workers send requests drawn from the seed: reads (`eth_call`, allowed to
//!   fail over), writes (`eth_sendRawTransaction`, denied explicitly or by the POST method
//!   rule), streaming-body reads (`eth_getBalance` through `Body::wrap_stream`), with random
//!   exclusions, preferences and unknown ids, and one request in eight dropped at a random
//!   point;
//! - a fault schedule switches a random provider to a random behaviour every few
//!   milliseconds (down, 5xx, 429, hang, lag, stall, wrong chain, malformed, reset mid-body,
//!   JSON-RPC error, slow, oversized) or back to healthy;
//! - the monitor checks on an interval (some checks dropped midway) and is failover's
//!   eligibility, through a wrapper that records every answer;
//! - a thread and a task watch `eligible()` and `snapshot()`.
//!
//! Every request runs in a task-local scope holding its own log; the eligibility wrapper, a
//! middleware after `Failover` (one call per attempt, before anything is sent) and the event
//! hook write to it. When the request ends, the log is compared with the rules (module `checks`).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use failnext_soak::soak::{Config, Profile};
//!
//! let report = failnext_soak::soak::run(Config::new(Profile::Ci, 42)).await?;
//! println!("{report}");
//! assert_eq!(report.violations(), 0);
//! # Ok(()) }
//! ```

mod checks;
mod record;
mod report;
mod schedule;
mod watch;

use std::fmt;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use failnext::{Cooldown, Failover, RequestBuilderExt, ResponseExt};
use failnext_blocklag::Monitor;
use failnext_examples::SIM_CHAIN_ID;
use failnext_examples::sim::{Behaviour, Chain, Provider};
use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use reqwest_middleware::ClientWithMiddleware;

pub use report::Report;

use checks::{BodyEnd, Check, Finished, Limits, Outcome, Tally, TypedError, Violations};
use failnext_loopback::resources::Usage;
use record::{Dispatch, Endpoints, ErrorKind, HookStats, RecordedEligibility, RequestLog};
use schedule::{Cancel, Kind, RequestSpec, Unknown};
use watch::{Background, Observed, Settings};

/// Which preset a soak starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// A few thousand requests; well under a minute in a debug build. Run by `cargo xtask ci`.
    Ci,
    /// 200 000 requests at concurrency 64; about two minutes in release. Run by
    /// `cargo xtask soak`.
    Full,
}

impl Profile {
    /// `ci` or `full`.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Ci => "ci",
            Profile::Full => "full",
        }
    }
}

impl std::str::FromStr for Profile {
    type Err = String;

    fn from_str(s: &str) -> Result<Profile, String> {
        match s {
            "ci" => Ok(Profile::Ci),
            "full" => Ok(Profile::Full),
            other => Err(format!("unknown profile {other:?}: expected ci or full")),
        }
    }
}

/// Settings of one soak run. [`Config::new`] fills them from a profile; every field may be
/// changed afterwards.
#[derive(Clone, Debug)]
pub struct Config {
    /// The preset these settings came from (shown in the report).
    pub profile: Profile,
    /// Seed of the request mix and of the fault and check schedules.
    pub seed: u64,
    /// Requests of the main phase.
    pub requests: u64,
    /// Requests of the warm-up phase, before the resource baseline is taken.
    pub warmup_requests: u64,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Simulated providers (endpoints), `p0` first.
    pub providers: usize,
    /// failnext's per-attempt deadline; bounds every hang.
    pub attempt_timeout: Duration,
    /// The monitor's probe timeout.
    pub probe_timeout: Duration,
    /// Pause between two monitor checks.
    pub check_interval: Duration,
    /// Range of the pause between two fault switches, in milliseconds.
    pub fault_wait_ms: (u64, u64),
    /// failnext's cooldown: consecutive failures and duration.
    pub cooldown: (u32, Duration),
    /// The monitor's `max_lag`.
    pub max_lag: u64,
    /// Block time of the simulated chain.
    pub block_time: Duration,
    /// Each worker pauses up to this long before a request (none for three in ten), as a bot
    /// between calls; with `concurrency` this sets the request rate.
    pub think_max: Duration,
    /// Cancelled requests are dropped after a delay drawn in `0..=cancel_window`.
    pub cancel_window: Duration,
    /// Scheduling slack allowed on top of `attempt_timeout` and `probe_timeout` when judging
    /// that attempts and checks are bounded, on a loaded machine.
    pub timing_slack: Duration,
    /// A request not finished after this long counts as hung (a violation).
    pub safety_bound: Duration,
    /// How long to wait for connections and tasks to return to the baseline.
    pub settle_timeout: Duration,
    /// How much resident memory may exceed the baseline after the run, on top of what the
    /// simulated chain keeps by design (see [`TX_ALLOWANCE`]).
    pub memory_tolerance: u64,
}

impl Config {
    /// The preset of `profile`, with `seed`.
    pub fn new(profile: Profile, seed: u64) -> Config {
        let (requests, warmup_requests) = match profile {
            Profile::Ci => (5_000, 1_000),
            Profile::Full => (200_000, 10_000),
        };
        Config {
            profile,
            seed,
            requests,
            warmup_requests,
            concurrency: 64,
            providers: 4,
            attempt_timeout: Duration::from_millis(250),
            probe_timeout: Duration::from_millis(250),
            check_interval: Duration::from_millis(100),
            fault_wait_ms: (5, 60),
            cooldown: (3, Duration::from_millis(150)),
            max_lag: 2,
            block_time: Duration::from_millis(250),
            think_max: Duration::from_millis(20),
            cancel_window: Duration::from_millis(400),
            timing_slack: Duration::from_secs(2),
            safety_bound: Duration::from_secs(30),
            settle_timeout: Duration::from_secs(15),
            memory_tolerance: 32 * 1024 * 1024,
        }
    }
}

/// A soak that could not run at all (not a violation: nothing was checked).
#[derive(Debug)]
pub struct SetupError(String);

impl fmt::Display for SetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SetupError {}

impl From<io::Error> for SetupError {
    fn from(e: io::Error) -> SetupError {
        SetupError(format!("simulator: {e}"))
    }
}

/// What every request needs.
struct Ctx {
    client: ClientWithMiddleware,
    endpoints: Endpoints,
    /// The URL requests are built with: the first provider's.
    url: String,
    seed: u64,
    think_ms: u64,
    cancel_window: Duration,
    safety_bound: Duration,
    limits: Limits,
}

/// Runs a soak with `config` and reports what it saw. Needs a multi-threaded tokio runtime
/// with time and I/O enabled.
///
/// # Errors
///
/// When the simulator, the client or the middleware cannot be set up. Violations are not
/// errors: they are in the report.
pub async fn run(config: Config) -> Result<Report, SetupError> {
    let started = Instant::now();
    let chain = Chain::start(SIM_CHAIN_ID, config.block_time);
    let mut providers = Vec::with_capacity(config.providers);
    for i in 0..config.providers {
        providers.push(chain.provider(format!("p{i}")).await?);
    }
    let endpoints = Endpoints {
        ids: providers.iter().map(|p| p.id().to_owned()).collect(),
        ports: providers.iter().map(|p| p.addr().port()).collect(),
    };
    let list: Vec<failnext::Endpoint> = providers.iter().map(Provider::endpoint).collect();

    // Idle connections close after half a second, so they can be seen to return to the
    // baseline while the clients are still alive.
    let idle = Duration::from_millis(500);
    let build_err = |e: reqwest::Error| SetupError(format!("reqwest client: {e}"));
    let probe_client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .pool_idle_timeout(idle)
        .build()
        .map_err(build_err)?;
    let monitor = Monitor::builder(list.clone())
        .max_lag(config.max_lag)
        .expected_chain_id(chain.id())
        .probe_timeout(config.probe_timeout)
        .client(probe_client)
        .build()
        .map_err(|e| SetupError(format!("monitor: {e}")))?;
    let stats = Arc::new(HookStats::default());
    let hook = {
        let (endpoints, stats) = (endpoints.clone(), stats.clone());
        move |event: &failnext::Event<'_>| record::on_event(&endpoints, &stats, event)
    };
    let failover = Failover::builder(list)
        .eligible(RecordedEligibility {
            monitor: monitor.clone(),
            endpoints: endpoints.clone(),
            stats: stats.clone(),
        })
        .additional_trigger_status_codes([http::StatusCode::TOO_MANY_REQUESTS])
        .cooldown(Cooldown::new(config.cooldown.0, config.cooldown.1))
        .attempt_timeout(config.attempt_timeout)
        .on_event(hook)
        .build()
        .map_err(|e| SetupError(format!("failover: {e}")))?;
    let client = reqwest_middleware::ClientBuilder::new(
        reqwest::Client::builder().pool_idle_timeout(idle).build().map_err(build_err)?,
    )
    .with(failover)
    .with(Dispatch { endpoints: endpoints.clone(), stats: stats.clone() })
    .build();
    let ctx = Arc::new(Ctx {
        client,
        url: providers.first().map(|p| p.url().to_owned()).unwrap_or_default(),
        endpoints: endpoints.clone(),
        seed: config.seed,
        think_ms: u64::try_from(config.think_max.as_millis()).unwrap_or(u64::MAX),
        cancel_window: config.cancel_window,
        safety_bound: config.safety_bound,
        limits: Limits { attempt_timeout: config.attempt_timeout, slack: config.timing_slack },
    });
    let settings = Settings {
        seed: config.seed,
        attempt_timeout: config.attempt_timeout,
        probe_timeout: config.probe_timeout,
        timing_slack: config.timing_slack,
        check_interval: config.check_interval,
        fault_wait_ms: config.fault_wait_ms,
        ports: endpoints.ports.clone(),
    };

    let mut v = Violations::default();
    let mut tally = Tally::default();
    let mut seen = Observed::default();
    let mut sim = SimCounts::default();

    // Warm-up: the same load, so that pools, allocator arenas and lazily spawned tasks exist
    // before the baseline is taken.
    let phase_started = Instant::now();
    let warm =
        phase(&ctx, &settings, &providers, &monitor, 0, config.warmup_requests, config.concurrency).await;
    let warmup_elapsed = phase_started.elapsed();
    absorb(warm, &mut v, &mut tally, &mut seen, &mut sim);
    let baseline = settle(&endpoints.ports, None, config.settle_timeout).await;

    let phase_started = Instant::now();
    let main = phase(
        &ctx,
        &settings,
        &providers,
        &monitor,
        config.warmup_requests,
        config.requests,
        config.concurrency,
    )
    .await;
    let main_elapsed = phase_started.elapsed();
    // The simulated chain remembers every transaction it accepted (to refuse duplicates), so
    // memory grows with the writes of the main phase, by design.
    let chain_allowance = main.sim.writes.saturating_mul(TX_ALLOWANCE);
    absorb(main, &mut v, &mut tally, &mut seen, &mut sim);
    let after = settle(&endpoints.ports, Some(baseline), config.settle_timeout).await;

    v.expect(Check::Tasks, after.tasks == baseline.tasks, || {
        format!("live tasks {:?} after the run, {:?} at baseline", after.tasks, baseline.tasks)
    });
    v.expect(Check::Connections, after.connections == baseline.connections, || {
        format!("connections {:?} after the run, {:?} at baseline", after.connections, baseline.connections)
    });
    let grown = after.rss.unwrap_or(0).saturating_sub(baseline.rss.unwrap_or(0));
    let memory_limit = config.memory_tolerance.saturating_add(chain_allowance);
    v.expect(Check::Memory, grown <= memory_limit, || {
        format!("RSS grew by {grown} bytes, limit {memory_limit}")
    });
    let stray = stats.stray.load(Ordering::Relaxed);
    v.checked(Check::Stray, stats.eligible_calls.load(Ordering::Relaxed));
    for _ in 0..stray {
        v.add(Check::Stray, "an event, eligibility question or dispatch outside any soak request");
    }

    // Everything is dropped here (client, failover, monitor, simulator); the report is what
    // remains.
    let hook_eligible_max = record::nanos(stats.eligible_max_ns.load(Ordering::Relaxed));
    drop(ctx);
    drop(providers);
    drop(chain);
    Ok(Report {
        config,
        elapsed: started.elapsed(),
        warmup_elapsed,
        main_elapsed,
        violations: v,
        tally,
        seen,
        sim,
        hook_eligible_max,
        baseline,
        after,
        chain_allowance,
    })
}

/// Bytes allowed per transaction the simulated chain stores: its 66-byte hash as a `String`
/// (an 80-byte allocation), a hash-map slot, and the map's doubling when it grows.
pub const TX_ALLOWANCE: u64 = 256;

/// What one phase produced.
struct PhaseResult {
    violations: Violations,
    tally: Tally,
    seen: Observed,
    sim: SimCounts,
}

/// Calls of each soak method the simulated providers received, summed over providers.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SimCounts {
    pub(crate) reads: u64,
    pub(crate) writes: u64,
    pub(crate) streams: u64,
}

fn absorb(p: PhaseResult, v: &mut Violations, t: &mut Tally, seen: &mut Observed, sim: &mut SimCounts) {
    v.merge(p.violations);
    t.merge(p.tally);
    seen.merge(p.seen);
    sim.reads += p.sim.reads;
    sim.writes += p.sim.writes;
    sim.streams += p.sim.streams;
}

/// One phase: `count` requests from id `first`, with faults, checks and observers running.
async fn phase(
    ctx: &Arc<Ctx>,
    settings: &Settings,
    providers: &[Provider],
    monitor: &Monitor,
    first: u64,
    count: u64,
    concurrency: usize,
) -> PhaseResult {
    // Every provider starts healthy, with a provider's usual latency.
    let mut rng = schedule::Rng::derive(ctx.seed ^ first, 0x1A7E);
    for p in providers {
        p.reset_counts();
        // A failure to rebind after `Down` leaves the provider down: a fault like any other.
        let _ = p.set(Behaviour::Slow(rng.millis(10, 120))).await;
    }
    let background = Background::start(settings, providers, monitor, first);
    let next = Arc::new(AtomicU64::new(first));
    let end = first + count;
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..concurrency.max(1) {
        let (ctx, next) = (ctx.clone(), next.clone());
        workers.spawn(async move {
            let n = ctx.endpoints.len();
            let mut v = Violations::default();
            let mut t = Tally::default();
            loop {
                let id = next.fetch_add(1, Ordering::Relaxed);
                if id >= end {
                    break;
                }
                let spec = RequestSpec::draw(ctx.seed, id, n, ctx.cancel_window, ctx.think_ms);
                if !spec.think.is_zero() {
                    tokio::time::sleep(spec.think).await;
                }
                let finished = run_request(&ctx, spec).await;
                checks::analyse(&finished, n, ctx.limits, &mut v, &mut t);
            }
            (v, t)
        });
    }
    let mut violations = Violations::default();
    let mut tally = Tally::default();
    while let Some(joined) = workers.join_next().await {
        violations.checked(Check::Panics, 1);
        match joined {
            Ok((v, t)) => {
                violations.merge(v);
                tally.merge(t);
            }
            Err(e) => violations.add(Check::Panics, format!("worker task: {e}")),
        }
    }
    let seen = background.stop(providers, &mut violations).await;
    let sum = |method: &str| providers.iter().map(|p| p.count(method)).sum::<u64>();
    let sim = SimCounts { reads: sum("eth_call"), writes: sum(WRITE_METHOD), streams: sum("eth_getBalance") };
    judge_sim_counts(&sim, &tally, &mut violations);
    PhaseResult { violations, tally, seen, sim }
}

const WRITE_METHOD: &str = "eth_sendRawTransaction";

/// What providers received lies between what got an HTTP response and what was dispatched;
/// a write or a streaming body was dispatched at most once per request.
fn judge_sim_counts(sim: &SimCounts, t: &Tally, v: &mut Violations) {
    let rows = [
        ("writes", t.write_responses, sim.writes, t.write_dispatches, Some(t.write_requests)),
        ("streams", t.stream_responses, sim.streams, t.stream_dispatches, Some(t.stream_requests)),
        ("reads", t.read_responses, sim.reads, t.read_dispatches, None),
    ];
    for (what, responses, received, dispatched, requests) in rows {
        let ok = responses <= received && received <= dispatched && requests.is_none_or(|r| dispatched <= r);
        v.expect(Check::SimCounts, ok, || {
            format!(
                "{what}: {responses} answered <= {received} received <= {dispatched} dispatched <= {requests:?} requests fails"
            )
        });
    }
}

/// Waits until connections (and tasks) are back to `target` (to zero connections and a steady
/// task count when there is no target yet), then reads the usage.
async fn settle(ports: &[u16], target: Option<Usage>, limit: Duration) -> Usage {
    let deadline = Instant::now() + limit;
    let mut previous: Option<Usage> = None;
    let mut steady = 0;
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = Usage::now(ports);
        let done = match target {
            Some(t) => now.connections == t.connections && now.tasks == t.tasks,
            None => {
                let idle = now.connections.is_none_or(|c| c.client == 0 && c.server == 0);
                steady = if previous.is_some_and(|p| p.tasks == now.tasks) { steady + 1 } else { 0 };
                idle && steady >= 5
            }
        };
        previous = Some(now);
        if done || Instant::now() >= deadline {
            return now;
        }
    }
}

/// Sends one request as its spec says, within its log's scope, and collects how it ended.
async fn run_request(ctx: &Ctx, spec: RequestSpec) -> Finished {
    let log = Arc::new(RequestLog::default());
    let state = Arc::new(Mutex::new(Ended::default()));
    let exchange = record::scope(log.clone(), exchange(ctx, &spec, state.clone()));
    let bounded = async {
        match spec.cancel {
            Cancel::Never => {
                exchange.await;
                false
            }
            Cancel::After(deadline) => tokio::time::timeout(deadline, exchange).await.is_err(),
        }
    };
    let (hung, cancelled) = match tokio::time::timeout(ctx.safety_bound, bounded).await {
        Ok(cancelled) => (false, cancelled),
        Err(_) => (true, false),
    };
    let Ended { outcome, body, send_elapsed } =
        std::mem::take(&mut *state.lock().unwrap_or_else(|p| p.into_inner()));
    let body = match body {
        None if cancelled && outcome.is_some() => Some(BodyEnd::Cancelled),
        body => body,
    };
    Finished { spec, entries: log.take(), outcome, body, hung, send_elapsed }
}

/// What a request got so far; written as it goes, so a dropped request keeps what it had.
#[derive(Debug, Default)]
struct Ended {
    outcome: Option<Outcome>,
    body: Option<BodyEnd>,
    send_elapsed: Option<Duration>,
}

async fn exchange(ctx: &Ctx, spec: &RequestSpec, state: Arc<Mutex<Ended>>) {
    let update = |f: &mut dyn FnMut(&mut Ended)| f(&mut state.lock().unwrap_or_else(|p| p.into_inner()));
    let started = Instant::now();
    let sent = build(ctx, spec).send().await;
    let took = started.elapsed();
    update(&mut |e| e.send_elapsed = Some(took));
    let response = match sent {
        Ok(resp) => resp,
        Err(err) => {
            let typed = failnext::Error::from_middleware(&err).map(|e| {
                if e.is_no_usable_endpoint() {
                    TypedError::NoUsable
                } else if e.is_unknown_endpoint() {
                    TypedError::Unknown
                } else {
                    let listed = e.attempts().iter().map(|a| ctx.endpoints.by_id(a.endpoint().as_str()));
                    TypedError::Failover(listed.collect())
                }
            });
            let mut outcome = Some(Outcome::Error(typed));
            update(&mut |e| e.outcome = outcome.take());
            return;
        }
    };
    let served_by = response.served_by().and_then(|id| ctx.endpoints.by_id(id.as_str()));
    let status = response.status().as_u16();
    update(&mut |e| e.outcome = Some(Outcome::Response { status, served_by }));
    let mut body = Some(match response.bytes().await {
        Ok(bytes) => {
            BodyEnd::Read { duplicate_write: spec.kind.is_write() && contains(&bytes, b"already known") }
        }
        Err(e) => BodyEnd::Error(ErrorKind::of(&reqwest_middleware::Error::Reqwest(e))),
    });
    update(&mut |e| e.body = body.take());
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

const UNKNOWN_ID: &str = "not-configured";

fn build(ctx: &Ctx, spec: &RequestSpec) -> reqwest_middleware::RequestBuilder {
    let mut b = ctx.client.post(&ctx.url).header(CONTENT_TYPE, "application/json");
    b = match spec.kind {
        Kind::Read => b.body(read_body(spec.id)).allow_failover(),
        Kind::WriteDenied => b.body(write_body(ctx.seed, spec.id)).deny_failover(),
        Kind::WriteDefault => b.body(write_body(ctx.seed, spec.id)),
        Kind::Stream => {
            let body = stream_body(spec.id).into_bytes();
            let len = body.len();
            // The simulator reads `Content-Length` bodies only; hyper keeps a length set by
            // the caller and sends the stream with it.
            b.header(CONTENT_LENGTH, len)
                .body(streaming(body, spec.chunks, spec.pause_between_chunks))
                .allow_failover()
        }
    };
    if !spec.excluded.is_empty() {
        b = b.exclude_endpoints(spec.excluded.iter().map(|i| ctx.endpoints.ids[*i].clone()));
    }
    if let Some(p) = spec.preferred {
        b = b.prefer_endpoint(ctx.endpoints.ids[p].clone());
    }
    match spec.unknown {
        Some(Unknown::Excluded) => b.exclude_endpoints([UNKNOWN_ID]),
        Some(Unknown::Preferred) => b.prefer_endpoint(UNKNOWN_ID),
        None => b,
    }
}

fn read_body(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"eth_call","params":[{{"to":"0x000000000000000000000000000000000000dead","data":"0x"}},"latest"]}}"#
    )
}

/// A write whose raw transaction is unique to this run and request, so the chain would answer
/// "already known" if it ever arrived twice.
fn write_body(seed: u64, id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"{WRITE_METHOD}","params":["0x02{seed:016x}{id:016x}"]}}"#
    )
}

fn stream_body(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"eth_getBalance","params":["0x000000000000000000000000000000000000beef","latest"]}}"#
    )
}

/// `body` as a stream of `chunks` pieces, optionally pausing between them.
fn streaming(body: Vec<u8>, chunks: usize, pause: bool) -> reqwest::Body {
    use futures::StreamExt;
    let size = body.len().div_ceil(chunks.max(1)).max(1);
    let pieces: Vec<Vec<u8>> = body.chunks(size).map(<[u8]>::to_vec).collect();
    let stream = futures::stream::iter(pieces.into_iter().enumerate()).then(move |(i, piece)| async move {
        if pause && i > 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        Ok::<_, io::Error>(piece)
    });
    reqwest::Body::wrap_stream(stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny soak end to end: everything is wired and nothing is violated.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_small_soak_has_no_violations() {
        let mut config = Config::new(Profile::Ci, 7);
        config.requests = 300;
        config.warmup_requests = 100;
        config.concurrency = 16;
        let report = run(config).await.unwrap();
        assert_eq!(report.violations(), 0, "{report}");
        assert!(report.requests() >= 400);
    }
}

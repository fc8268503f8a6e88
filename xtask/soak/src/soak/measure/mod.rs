//! The measure: what each failnext configuration makes of the same simulated providers.
//!
//! After the checked phases, a soak run measures each configuration of [`Subject::ALL`] over
//! one or more [`MeasureRun`]s, one after the other, each a [`Scenario`]:
//!
//! - **flapping** (`Scenario::Flapping`): every provider flaps, independently and seeded,
//!   between healthy spells and the faults issue 10 lists (below), with fault windows of about
//!   `fault` (`--fault-ms`); the full profile measures ~2 s and ~200 ms windows;
//! - **half-stale** (`Scenario::HalfStale`): no flapping; provider 0 answers every other
//!   request 20 blocks behind (`Behaviour::HalfStale(20)`, a load balancer over backends out
//!   of sync) and is the fastest (no extra delay), the others are healthy at 20..40 ms.
//!
//! A *read* is a single JSON-RPC `eth_blockNumber` (bytes body, `allow_failover()`, no
//! exclusion, no preference, never dropped by the soak), sent to the first provider's URL. Its
//! answer can be judged by its head:
//!
//! - it is **answered correctly** when `send()` returned HTTP 2xx whose whole body was read
//!   and is a JSON-RPC reply with a `result` (no `error`) and the request's `id`, that result
//!   is a hex quantity within [`HEAD_TOLERANCE`] (3) blocks of the simulated chain's true head
//!   (`Chain::head()` read just before `send()` and after the body: correct when
//!   `head_at_start - 3 <= result <= head_at_end`), and it was served by a provider that was on
//!   the right chain during the whole request (by the ground truth: it was never switched to
//!   the wrong chain while the request ran). A read not answered correctly is a *miss*, by
//!   cause: behind by N blocks (stale, lagging, stalled), ahead of the chain, wrong chain, a
//!   JSON-RPC error, a malformed body, an HTTP status, no usable endpoint, every attempt
//!   failed;
//! - it is **answerable** when some provider was healthy (a healthy spell: `Slow(10..120
//!   ms)`, or the half-stale scenario's healthy ones) during the whole request, from just
//!   before `send()` to the end of the body read, by the providers' own schedule (its switch
//!   to healthy had returned before the request started and its next switch began after it
//!   ended), whatever the monitor thought;
//! - it is **counted** (the previous figure, kept) when it was answerable by a provider `p`
//!   that was also eligible for the whole request: the monitor answered `eligible(p)` when
//!   failnext asked, which failnext does once per endpoint at the start of the request and
//!   keeps for the whole request (`Monitor::eligible`; the soak's check `AskedOnce`), so a later
//!   snapshot changes nothing failnext may do for it. Counted reads are answerable ones.
//!
//! Per configuration, the figures are:
//!
//! - **correct of answerable** (issue 20's figure) and **correct of counted**, as percentages
//!   with their counts, and correct of all reads. Reads that were not answerable are in no
//!   figure but the last: no configuration is expected to answer them;
//! - **requests per read**: attempts (one per dispatch, hedges and failovers included,
//!   recorded by a middleware after `Failover` before anything is sent) over reads;
//! - the **p50 and p99 latency of the reads answered correctly** (from just before `send()` to
//!   the end of the body);
//! - **requests that reached a provider while it was refused**: attempts whose endpoint was
//!   certainly down at that instant (its switch to `Down` had returned, listener closed, and
//!   its next switch had not begun);
//! - the misses of answerable reads by cause, and how many of them were counted.
//!
//! For the paired configuration, the report also prints issue 20's targets, each with its
//! measured value and MET or MISSED (never a soak violation; module `targets`).
//!
//! Beside the reads, each transport configuration (`transport-defaults`, `transport-paired`)
//! runs a chain follower (`failnext::alloy::Follower`, its own transport with the same
//! settings, and for the paired one its own monitor, so nothing it does feeds the reads'
//! figures) from the block after the head at the start, with its default polling and the
//! chain id (`Follower::chain_id`: providers moved onto another chain, two of which may agree
//! on it, cannot set the chain it follows). Every
//! block it yields is judged against the simulated chain: each once, in order, the chain's
//! own hash, linked to the one before, no reorg (the chain has none), no error; anything else
//! is a violation of the check `follower` (module `follow`). The report gives blocks yielded
//! of those made, requests per block, the delay from a block's making to its yield (p50,
//! p99) and how often a provider was found off the chain.
//!
//! The configurations run **interleaved**, at the same time: each has its own `Failover` and
//! its own `reqwest` client (so no pool, health or cooldown state is shared), over the same
//! providers and the same fault windows. All but the paired one use the same monitor as
//! eligibility, checked by the soak on an interval; the paired one has a monitor of its own
//! (same providers, `max_lag`, chain id and probe timeout, `Monitor::spawn`ed at the check
//! interval), because pairing feeds evidence back into its monitor. The load is an open loop:
//! one seeded stream of arrival instants (`rate` reads per second on average) and, at each
//! instant, one read per configuration, whatever earlier reads are doing. So every
//! configuration gets the same reads at the same instants; a closed loop (workers waiting for
//! their previous read) would send more reads where a configuration fails fast
//! (`NoUsableEndpoint` is immediate) and so weigh its bad spells more. Interleaving gives every
//! configuration the very same faults at the same instants, so the figures differ only by the
//! configuration (with sequential phases, the same seed gives the same schedule of windows, but
//! not the same timing against the requests and the monitor's checks), and a run lasts one
//! measure per scenario, not one per configuration. The price: the configurations share the
//! machine and the providers' load, identically for each.
//!
//! The flapping scenario's fault windows (`timeline::Windows`): each provider, independently
//! and seeded, flaps between a healthy spell of `1..=4` fault lengths and a fault of
//! `1/2..=3/2` fault lengths, drawn from the faults issue 10 lists: refused, 502/503/504, 429
//! with `Retry-After` (about the window, in whole seconds), HTTP 200 with JSON-RPC `-32005` or
//! `-32603`, a malformed body, a truncated body, a body reset mid-way, a hang, lag (3..6
//! blocks), a stalled head, the wrong chain. A provider goes to the wrong chain across a
//! restart (down first, long enough for the monitor to see it: see `timeline::Windows::new`),
//! as providers do; the monitor checks the chain at every check.

mod follow;
mod judge;
pub mod subject;
mod targets;
mod timeline;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use failnext::{Eligibility, EndpointId, Failover, ResponseExt};
use failnext_blocklag::{Monitor, MonitorHandle};
use failnext_examples::sim::{Chain, Provider};
use http::Extensions;
use http::header::CONTENT_TYPE;
use reqwest::{Request, Response};
use reqwest_middleware::{ClientWithMiddleware, Middleware, Next};
use tokio::sync::watch;

pub use judge::{Figures, HEAD_TOLERANCE};
pub use subject::Subject;
pub use targets::Target;

use crate::soak::SetupError;
use crate::soak::record::Endpoints;
use crate::soak::schedule::{FaultKind, Rng};
use judge::{Answer, Asked, Dispatches, Sample, judge, judge_body};
use subject::RecordedSource;
use timeline::{Timeline, Windows};

tokio::task_local! {
    static READ: Arc<ReadLog>;
}

/// What the providers do during one measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// Every provider flaps, seeded, between healthy spells and faults of about `fault`.
    Flapping {
        /// The mean length of a fault window.
        fault: Duration,
    },
    /// Provider 0 lags 20 blocks on every other request and is the fastest; the others are
    /// healthy at 20..40 ms; nothing flaps.
    HalfStale,
}

impl Scenario {
    /// A short name: `flapping` or `half-stale` (for `--scenario`).
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Flapping { .. } => "flapping",
            Scenario::HalfStale => "half-stale",
        }
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scenario::Flapping { fault } => write!(f, "flapping ~{} ms", fault.as_millis()),
            Scenario::HalfStale => {
                write!(f, "half-stale (p0 lags {} blocks every other request)", timeline::HALF_STALE_LAG)
            }
        }
    }
}

/// One measure: a scenario, for a while.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MeasureRun {
    /// What the providers do.
    pub scenario: Scenario,
    /// How long the configurations are measured (zero: this measure does not run).
    pub duration: Duration,
}

/// Settings of the measures.
#[derive(Clone, Debug)]
pub struct MeasureSettings {
    /// The measures, one after the other (empty: no measure).
    pub runs: Vec<MeasureRun>,
    /// Reads sent per second to each configuration (open loop, seeded arrival times).
    pub rate: u32,
    /// The configurations, side by side.
    pub subjects: Vec<Subject>,
}

/// What failnext did for one read: the eligibility answers it got and where it dispatched.
#[derive(Debug, Default)]
struct ReadLog {
    inner: Mutex<(Asked, Dispatches)>,
    /// Hedges failnext sent (its `Event::Hedge`s).
    hedges: std::sync::atomic::AtomicU32,
}

impl ReadLog {
    /// The read in scope sent a hedge.
    fn hedged() {
        let _ = READ.try_with(|log| log.hedges.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    }

    fn with(f: impl FnOnce(&mut (Asked, Dispatches))) {
        let _ = READ.try_with(|log| f(&mut log.inner.lock().unwrap_or_else(|p| p.into_inner())));
    }
}

/// The monitor as eligibility, recording each answer in the read's log.
struct Recorded {
    monitor: Monitor,
    endpoints: Endpoints,
}

impl Eligibility for Recorded {
    fn is_eligible(&self, id: &EndpointId) -> bool {
        let answer = self.monitor.eligible(id);
        let i = self.endpoints.by_id(id.as_str());
        ReadLog::with(|l| l.0.push((i, answer)));
        answer
    }
}

/// After `Failover`: records each attempt's endpoint and instant, before it is sent.
struct Dispatched {
    endpoints: Endpoints,
}

#[async_trait::async_trait]
impl Middleware for Dispatched {
    async fn handle(
        &self,
        req: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        let i = self.endpoints.by_port(req.url().port());
        ReadLog::with(|l| l.1.push((i, Instant::now())));
        next.run(req, extensions).await
    }
}

/// What one measure found.
#[derive(Debug, Clone)]
pub struct MeasureReport {
    pub(crate) run: MeasureRun,
    pub(crate) rate: u32,
    pub(crate) elapsed: Duration,
    pub(crate) figures: Vec<(Subject, Figures)>,
    /// Per provider, the share of the measure it spent in a fault.
    pub(crate) faulty: Vec<f64>,
    pub(crate) windows: BTreeMap<FaultKind, u64>,
    /// The chain followers of the transport configurations.
    pub(crate) followed: Vec<(Subject, follow::Followed)>,
}

impl MeasureReport {
    /// The figures of `subject`, if it was measured.
    pub fn figures(&self, subject: Subject) -> Option<&Figures> {
        self.figures.iter().find(|(s, _)| *s == subject).map(|(_, f)| f)
    }

    /// The scenario and duration of this measure.
    pub fn run(&self) -> MeasureRun {
        self.run
    }

    /// What each transport configuration's chain follower got wrong: `(configuration,
    /// blocks yielded, problems)`.
    pub(crate) fn follower_problems(&self) -> impl Iterator<Item = (Subject, u64, &[String])> {
        self.followed.iter().map(|(s, f)| (*s, f.yielded, f.problems.as_slice()))
    }

    /// Issue 20's targets for the paired configuration, measured (empty when it was not).
    pub fn targets(&self) -> Vec<Target> {
        targets::targets(self)
    }
}

/// The shared pieces every configuration's `Failover` is built over.
pub(crate) struct Shared<'a> {
    pub(crate) providers: &'a [Provider],
    pub(crate) chain: &'a Chain,
    pub(crate) monitor: &'a Monitor,
    pub(crate) endpoints: &'a Endpoints,
    pub(crate) seed: u64,
    pub(crate) attempt_timeout: Duration,
    pub(crate) check_interval: Duration,
    pub(crate) probe_timeout: Duration,
    /// The monitors' `max_lag` (for the paired configuration's own monitor).
    pub(crate) max_lag: u64,
}

/// Runs one measure: every configuration at once over the same providers, in `run`'s scenario.
pub(crate) async fn measure(
    shared: &Shared<'_>,
    settings: &MeasureSettings,
    run: MeasureRun,
) -> Result<MeasureReport, SetupError> {
    let list: Vec<failnext::Endpoint> = shared.providers.iter().map(Provider::endpoint).collect();
    let url = shared.providers.first().map(|p| p.url().to_owned()).unwrap_or_default();
    let mut clients = Vec::new();
    let mut own_monitors = Vec::new();

    // Each configuration's own monitor, for its probe count.
    let mut probing: Vec<(Subject, Monitor)> = Vec::new();
    for subject in &settings.subjects {
        if let Some(interval) = subject.readme_interval() {
            let (client, monitor) = readme_client(*subject, interval, &list, shared.endpoints).await?;
            clients.push((*subject, client));
            probing.push((*subject, monitor));
            continue;
        }
        let builder = Failover::builder(list.clone()).attempt_timeout(shared.attempt_timeout).on_event(|e| {
            if let failnext::Event::Hedge { .. } = e {
                ReadLog::hedged();
            }
        });
        let builder = if subject.is_paired() {
            let monitor = own_monitor(shared, &list)?;
            own_monitors.push(monitor.clone());
            probing.push((*subject, monitor.clone()));

            builder.monitor(RecordedSource { source: monitor, endpoints: shared.endpoints.clone() })
        } else {
            builder
                .eligible(Recorded { monitor: shared.monitor.clone(), endpoints: shared.endpoints.clone() })
        };
        let failover = subject
            .configure(builder)
            .build()
            .map_err(|e| SetupError(format!("failover ({subject}): {e}")))?;
        let client = reqwest_middleware::ClientBuilder::new(idle_client()?)
            .with(failover)
            .with(Dispatched { endpoints: shared.endpoints.clone() })
            .build();
        clients.push((*subject, Client::Reqwest(client)));
    }

    // The scenario, and a check of every monitor, before the first read.
    let timeline = Arc::new(Mutex::new(Timeline { providers: vec![Vec::new(); shared.providers.len()] }));
    let (stop, stopped) = watch::channel(false);
    let mut background = tokio::task::JoinSet::new();
    match run.scenario {
        Scenario::Flapping { fault } => {
            for (p, provider) in shared.providers.iter().enumerate() {
                // Down long enough for a whole check of the soak's monitor to start and publish
                // after the restart began: its pause between checks, and a check that may wait
                // out the probe timeout, twice (the check in progress, then the next), with
                // room for scheduling. A monitor that checks less often than that (the README's
                // 2 s and 5 s) may see no sign of the restart: the provider then answers the
                // chain's own heads from another chain until its next check, which nothing but
                // an `eth_chainId` of its own can tell. Those reads count as misses ("2xx head
                // from the wrong chain"): the price of the interval, not hidden.
                let restart = shared.check_interval + 2 * shared.probe_timeout + Duration::from_millis(100);
                let windows = Windows::new(shared.seed, p, fault, restart);
                background.spawn(timeline::flap(
                    provider.clone(),
                    p,
                    windows,
                    timeline.clone(),
                    stopped.clone(),
                ));
            }
        }
        Scenario::HalfStale => timeline::half_stale(shared.providers, shared.seed, &timeline).await,
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    let checks = own_monitors.iter().chain(std::iter::once(shared.monitor)).map(Monitor::check);
    let _ = futures::future::join_all(checks).await;
    let handles: Vec<MonitorHandle> = own_monitors.iter().map(|m| m.spawn(shared.check_interval)).collect();

    // A chain follower per transport configuration (its own transport, and for the paired one
    // its own monitor, so that nothing it does feeds the reads' figures), over the same
    // providers and faults, from the next block on.
    let from = shared.chain.head() + 1;
    let made: follow::Made = Arc::default();
    background.spawn(follow::watch_made(shared.chain.clone(), made.clone(), stopped.clone()));
    let mut followers = tokio::task::JoinSet::new();
    for subject in
        settings.subjects.iter().filter(|s| matches!(s, Subject::Transport | Subject::TransportPaired))
    {
        let mut builder =
            failnext::alloy::FailoverTransport::builder(list.clone()).attempt_timeout(shared.attempt_timeout);
        if subject.is_paired() {
            let monitor = own_monitor(shared, &list)?.spawn(shared.check_interval);
            monitor.ready(shared.check_interval + 2 * shared.probe_timeout).await;
            builder = builder.monitor(monitor);
        }
        let transport =
            builder.build().map_err(|e| SetupError(format!("follower transport ({subject}): {e}")))?;
        // A bot knows its chain: the follower is given the chain id, as the monitors are.
        let follower = transport.follow(failnext::alloy::Start::Number(from)).chain_id(shared.chain.id());
        let (subject, chain, made, stopped) = (*subject, shared.chain.clone(), made.clone(), stopped.clone());
        followers.spawn(async move { (subject, follow::follow(follower, from, chain, made, stopped).await) });
    }
    {
        let (monitor, interval, mut stopped) =
            (shared.monitor.clone(), shared.check_interval, stopped.clone());
        background.spawn(async move {
            while !crate::soak::watch::stopped_or(&mut stopped, interval).await {
                let _ = monitor.check().await;
            }
        });
    }

    let probes =
        tokio::spawn(count_probes(probing.iter().map(|(_, m)| m.clone()).collect(), stopped.clone()));

    // Open loop: one seeded stream of arrival instants, and at each one a read per
    // configuration, whatever the earlier reads are doing. Every configuration gets the same
    // reads at the same instants (a closed loop would send more reads where a configuration
    // fails fast, and weigh its bad spells more).
    let started = Instant::now();
    let deadline = started + run.duration;
    let mean_gap_us = 1_000_000 / u64::from(settings.rate.max(1));
    let mut rng = Rng::derive(shared.seed, 0x4EAD);
    let mut reads = tokio::task::JoinSet::new();
    let mut samples: BTreeMap<Subject, Vec<Sample>> = BTreeMap::new();
    let mut collect = |joined: Result<(Subject, Sample), tokio::task::JoinError>| {
        if let Ok((subject, sample)) = joined {
            samples.entry(subject).or_default().push(sample);
        }
    };
    let mut at = tokio::time::Instant::now();
    let mut id = 0u64;
    while Instant::now() < deadline {
        at += Duration::from_micros(rng.below(2 * mean_gap_us + 1));
        tokio::time::sleep_until(at).await;
        id += 1;
        for (subject, client) in &clients {
            let (subject, client, url, endpoints, chain) =
                (*subject, client.clone(), url.clone(), shared.endpoints.clone(), shared.chain.clone());
            reads.spawn(async move {
                let sample = match &client {
                    Client::Reqwest(client) => read(client, &url, &endpoints, &chain, id).await,
                    Client::Alloy(client) => read_alloy(client, &endpoints, &chain).await,
                };
                (subject, sample)
            });
        }
        while let Some(joined) = reads.try_join_next() {
            collect(joined);
        }
    }
    while let Some(joined) = reads.join_next().await {
        collect(joined);
    }
    let elapsed = started.elapsed();
    let _ = stop.send(true);
    let mut followed = Vec::new();
    while let Some(joined) = followers.join_next().await {
        if let Ok(done) = joined {
            followed.push(done);
        }
    }
    followed.sort_by_key(|(subject, _)| *subject);
    while background.join_next().await.is_some() {}
    let probes = probes.await.unwrap_or_default();
    for handle in handles {
        handle.stop().await;
    }
    drop(clients);
    let ended = Instant::now();
    let timeline = std::mem::take(&mut *timeline.lock().unwrap_or_else(|p| p.into_inner()));

    let mut windows = BTreeMap::new();
    for switches in &timeline.providers {
        for s in switches.iter().filter(|s| s.kind != FaultKind::Healthy) {
            *windows.entry(s.kind).or_default() += 1;
        }
    }
    let n = shared.providers.len();
    let faulty = (0..n).map(|p| timeline.faulty_share(p, started, ended)).collect();
    let per_provider_sec = |count: u64| count as f64 / n.max(1) as f64 / elapsed.as_secs_f64().max(1e-9);
    let figures = settings
        .subjects
        .iter()
        .map(|s| {
            let mut figures = judge(samples.get(s).map_or(&[][..], Vec::as_slice), &timeline, n);
            figures.probes_per_provider_sec = probing
                .iter()
                .zip(&probes)
                .find(|((subject, _), _)| subject == s)
                .map(|(_, count)| per_provider_sec(*count));
            (*s, figures)
        })
        .collect();
    Ok(MeasureReport { run, rate: settings.rate, elapsed, figures, faulty, windows, followed })
}

/// How a configuration's reads are sent: a reqwest client with its `Failover`, or alloy's
/// `RpcClient` over a `FailoverTransport`.
#[derive(Clone)]
enum Client {
    Reqwest(ClientWithMiddleware),
    Alloy(alloy::rpc::client::RpcClient),
}

/// Counts the probes of each monitor until `stopped`: a probe of the spawned schedule
/// publishes its provider's entry with a new `checked` instant, sampled every 5 ms (the
/// shortest re-check is 45 ms). A probe that publishes nothing (every provider failed) is
/// not counted.
async fn count_probes(monitors: Vec<Monitor>, mut stopped: watch::Receiver<bool>) -> Vec<u64> {
    let mut counts = vec![0u64; monitors.len()];
    let mut last: Vec<Vec<Option<tokio::time::Instant>>> = vec![Vec::new(); monitors.len()];
    // Per monitor, per provider: for the debug output's breakdown.
    let mut each: Vec<Vec<u64>> = vec![Vec::new(); monitors.len()];
    while !crate::soak::watch::stopped_or(&mut stopped, Duration::from_millis(5)).await {
        for (((monitor, count), last), each) in monitors.iter().zip(&mut counts).zip(&mut last).zip(&mut each)
        {
            let Some(snapshot) = monitor.snapshot() else { continue };
            let checked: Vec<_> = snapshot.entries().iter().map(|e| e.checked()).collect();
            if last.len() == checked.len() {
                each.resize(checked.len(), 0);
                for (i, (now, before)) in checked.iter().zip(last.iter()).enumerate() {
                    if now != before {
                        *count += 1;
                        each[i] += 1;
                    }
                }
            }
            if DEBUGGING.load(std::sync::atomic::Ordering::Relaxed) && *last != checked {
                let entries: Vec<String> = snapshot
                    .entries()
                    .iter()
                    .map(|e| {
                        let fit = if monitor.eligible(e.endpoint().as_str()) { "in" } else { "OUT" };
                        let why = e.error().map(|e| format!(" {e}")).unwrap_or_default();
                        let contra = e.contradiction().map(|c| format!(" {c:?}")).unwrap_or_default();
                        let doubted = if e.is_doubted() { " doubted" } else { "" };
                        format!(
                            "{}:{fit} h={:?} lag={:?}{why}{contra}{doubted}",
                            e.endpoint(),
                            e.height(),
                            e.lag()
                        )
                    })
                    .collect();
                debug(|| {
                    format!(
                        "view {:p} ref={} bt={:?}: {}",
                        monitor,
                        snapshot.highest(),
                        snapshot.block_time(),
                        entries.join(" | ")
                    )
                });
            }
            *last = checked;
        }
    }
    for (monitor, each) in monitors.iter().zip(&each) {
        debug(|| format!("probes of monitor {monitor:p}, per provider: {each:?}"));
    }
    counts
}

/// A README setup, as pasted: its own monitor with the builder's defaults, spawned at
/// `interval` and given `ready(5 s)`, paired in one call. The measure adds only what it
/// records: the eligibility answers (`RecordedSource`, a pass-through), and the attempts and
/// hedges (an event hook for alloy, the `Dispatched` middleware for reqwest).
async fn readme_client(
    subject: Subject,
    interval: Duration,
    list: &[failnext::Endpoint],
    endpoints: &Endpoints,
) -> Result<(Client, Monitor), SetupError> {
    let built = Monitor::builder(list.to_vec())
        .build()
        .map_err(|e| SetupError(format!("monitor ({subject}): {e}")))?;
    let monitor = built.spawn(interval);
    monitor.ready(Duration::from_secs(5)).await;
    let source = RecordedSource { source: monitor, endpoints: endpoints.clone() };
    if subject.is_alloy() {
        let recorded = endpoints.clone();
        let transport = failnext::alloy::FailoverTransport::builder(list.to_vec())
            .monitor(source)
            .on_event(move |e| record_event(&recorded, e))
            .build()
            .map_err(|e| SetupError(format!("transport ({subject}): {e}")))?;
        return Ok((Client::Alloy(alloy::rpc::client::RpcClient::new(transport, false)), built));
    }
    let builder = Failover::builder(list.to_vec()).on_event(|e| {
        if let failnext::Event::Hedge { .. } = e {
            ReadLog::hedged();
        }
    });
    let failover = subject
        .configure(builder)
        .monitor(source)
        .build()
        .map_err(|e| SetupError(format!("failover ({subject}): {e}")))?;
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(failover)
        .with(Dispatched { endpoints: endpoints.clone() })
        .build();
    Ok((Client::Reqwest(client), built))
}

/// An alloy read's attempts and hedges, from the transport's events (its requests go through
/// its own client, which no middleware of the measure's wraps): each attempt at the instant
/// it started.
fn record_event(endpoints: &Endpoints, event: &failnext::Event<'_>) {
    match event {
        failnext::Event::Attempt { endpoint, elapsed, .. } => {
            let i = endpoints.by_id(endpoint.as_str());
            let at = Instant::now().checked_sub(*elapsed).unwrap_or_else(Instant::now);
            ReadLog::with(|l| l.1.push((i, at)));
        }
        failnext::Event::Hedge { .. } => ReadLog::hedged(),
        _ => {}
    }
}

/// One read through alloy's `RpcClient` (`eth_blockNumber`, as `Provider::get_block_number`
/// sends it), judged as [`read`] judges a body.
async fn read_alloy(client: &alloy::rpc::client::RpcClient, endpoints: &Endpoints, chain: &Chain) -> Sample {
    use alloy::transports::TransportError;
    use failnext::alloy::{CallExt, ServedByCell};
    let log = Arc::new(ReadLog::default());
    let served = ServedByCell::new();
    let traced = failnext::alloy::TraceCell::new();
    let head_start = chain.head();
    let start = Instant::now();
    let call = client.request_noparams::<alloy::primitives::U64>("eth_blockNumber").map_meta(|meta| {
        let meta = meta.record_served_by(&served);
        if DEBUGGING.load(std::sync::atomic::Ordering::Relaxed) { meta.record_trace(&traced) } else { meta }
    });
    let result = READ.scope(log.clone(), call).await;
    let end = Instant::now();
    let head_end = chain.head();
    match &result {
        Err(err) => debug(|| format!("alloy read failed: {err}; trace: {:?}", traced.get())),
        Ok(head) => debug(|| format!("alloy read {head} by {:?}; trace: {:?}", served.get(), traced.get())),
    }
    let answer = match result {
        Ok(head) => Answer::Head {
            by: served.get().and_then(|e| endpoints.by_id(e.as_str())),
            head: head.to::<u64>(),
        },
        Err(TransportError::ErrorResp(payload)) => Answer::RpcError(payload.code),
        Err(TransportError::DeserError { .. }) => Answer::NotJsonRpc,
        Err(err) => match failnext::alloy::Failure::find(&err) {
            Some(f) if f.is_read() && f.error().is_some_and(failnext::Error::is_no_usable_endpoint) => {
                Answer::NoUsable
            }
            _ => Answer::Failed,
        },
    };
    let (asked, mut dispatched) = std::mem::take(&mut *log.inner.lock().unwrap_or_else(|p| p.into_inner()));
    dispatched.sort_by_key(|(_, at)| *at);
    let hedges = log.hedges.load(std::sync::atomic::Ordering::Relaxed);
    Sample { start, end, head_start, head_end, answer, asked, dispatched, hedges }
}

/// Whether `SOAK_DEBUG` is set (known once [`debug`] was first called).
static DEBUGGING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// With `SOAK_DEBUG` set: prints `line()` on stderr, stamped with the milliseconds since the
/// first such line (a trace of the measure's switches and failed reads).
pub(crate) fn debug(line: impl FnOnce() -> String) {
    debug_at(None, line);
}

/// As [`debug`], stamped with `at` (an instant of the measure) instead of now.
pub(crate) fn debug_at(at: Option<Instant>, line: impl FnOnce() -> String) {
    static ON: std::sync::OnceLock<Option<Instant>> = std::sync::OnceLock::new();
    let epoch = ON.get_or_init(|| {
        let on = std::env::var_os("SOAK_DEBUG").is_some();
        DEBUGGING.store(on, std::sync::atomic::Ordering::Relaxed);
        on.then(Instant::now)
    });
    if let Some(epoch) = epoch {
        #[allow(clippy::print_stderr, reason = "a debugging trace asked for by SOAK_DEBUG")]
        {
            let at = at.unwrap_or_else(Instant::now).saturating_duration_since(*epoch);
            eprintln!("DEBUG {:>6} {}", at.as_millis(), line());
        }
    }
}

/// A `reqwest` client whose idle connections close after half a second.
fn idle_client() -> Result<reqwest::Client, SetupError> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .pool_idle_timeout(Duration::from_millis(500))
        .build()
        .map_err(|e| SetupError(format!("reqwest client: {e}")))
}

/// A paired configuration's own monitor: the shared one's settings, its own probe client.
fn own_monitor(shared: &Shared<'_>, list: &[failnext::Endpoint]) -> Result<Monitor, SetupError> {
    Monitor::builder(list.to_vec())
        .max_lag(shared.max_lag)
        .expected_chain_id(shared.chain.id())
        .probe_timeout(shared.probe_timeout)
        .client(idle_client()?)
        .build()
        .map_err(|e| SetupError(format!("monitor (paired): {e}")))
}

/// Sends one read and reduces how it ended.
async fn read(
    client: &ClientWithMiddleware,
    url: &str,
    endpoints: &Endpoints,
    chain: &Chain,
    id: u64,
) -> Sample {
    use failnext::RequestBuilderExt;
    let log = Arc::new(ReadLog::default());
    let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"eth_blockNumber","params":[]}}"#);
    let head_start = chain.head();
    let start = Instant::now();
    let exchange = async {
        let request = client.post(url).header(CONTENT_TYPE, "application/json").body(body).allow_failover();
        let traced = DEBUGGING.load(std::sync::atomic::Ordering::Relaxed);
        let sent = if traced { request.trace() } else { request }.send();
        match sent.await {
            Err(err) => {
                debug(|| format!("read {id} failed: {err}"));
                match failnext::Error::from_middleware(&err) {
                    Some(e) if e.is_no_usable_endpoint() => Answer::NoUsable,
                    _ => Answer::Failed,
                }
            }
            Ok(resp) => {
                let trace = resp.extensions().get::<failnext::Trace>().cloned();
                let by = resp.served_by().cloned();
                let status = resp.status();
                let served_by = resp.served_by().and_then(|e| endpoints.by_id(e.as_str()));
                if !status.is_success() {
                    return Answer::Status(status.as_u16());
                }
                match resp.bytes().await {
                    Err(_) => Answer::BodyFailed,
                    Ok(bytes) => {
                        let answer = judge_body(&bytes, id, served_by);
                        if let Some(trace) = trace {
                            debug(|| format!("read {id} answered {answer:?} by {by:?}: {trace:?}"));
                        }
                        answer
                    }
                }
            }
        }
    };
    let answer = READ.scope(log.clone(), exchange).await;
    let end = Instant::now();
    let head_end = chain.head();
    let (asked, dispatched) = std::mem::take(&mut *log.inner.lock().unwrap_or_else(|p| p.into_inner()));
    if end - start > Duration::from_secs(1) {
        let sent: Vec<_> =
            dispatched.iter().map(|(p, at)| (*p, at.saturating_duration_since(start))).collect();
        debug(|| format!("read {id} took {:?}: {answer:?}, sent {sent:?}", end - start));
    }
    let hedges = log.hedges.load(std::sync::atomic::Ordering::Relaxed);
    Sample { start, end, head_start, head_end, answer, asked, dispatched, hedges }
}

/// `99.50% (398/400)`, or `n/a (0/0)` of nothing.
fn share(percent: f64, n: u64, of: u64) -> String {
    if of == 0 { format!("n/a ({n}/{of})") } else { format!("{percent:.2}% ({n}/{of})") }
}

fn ms(d: Option<Duration>) -> String {
    d.map_or_else(|| "n/a".to_owned(), |d| format!("{:.1}", d.as_secs_f64() * 1000.0))
}

impl fmt::Display for MeasureReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "\nMeasure, {}: eth_blockNumber reads answered correctly (a head within {HEAD_TOLERANCE} blocks, right chain)",
            self.run.scenario
        )?;
        writeln!(
            f,
            "  {:.1} s, configurations interleaved, {} reads/s each (open loop)",
            self.elapsed.as_secs_f64(),
            self.rate
        )?;
        let shares: Vec<String> = self.faulty.iter().map(|s| format!("{:.0} %", s * 100.0)).collect();
        writeln!(f, "  time in a fault per provider: {}", shares.join(", "))?;
        let windows: Vec<String> = self.windows.iter().map(|(k, n)| format!("{k}: {n}")).collect();
        writeln!(f, "  fault windows: {}", windows.join(", "))?;
        writeln!(
            f,
            "\n  {:<20} {:>24} {:>24} {:>13} {:>8} {:>9} {:>7} {:>7} {:>8}",
            "configuration",
            "correct of answerable",
            "correct of counted",
            "correct/all",
            "req/read",
            "probes/s",
            "p50 ms",
            "p99 ms",
            "refused"
        )?;
        for (subject, fig) in &self.figures {
            writeln!(
                f,
                "  {:<20} {:>24} {:>24} {:>13} {:>8.3} {:>9} {:>7} {:>7} {:>8}",
                subject.name(),
                share(fig.answerable_percent(), fig.correct_answerable, fig.answerable),
                share(fig.percent(), fig.correct, fig.counted),
                format!("{}/{}", fig.correct_all, fig.reads),
                fig.requests_per_read(),
                fig.probes_per_provider_sec.map_or_else(|| "-".to_owned(), |p| format!("{p:.3}")),
                ms(fig.p50),
                ms(fig.p99),
                fig.refused_hits
            )?;
        }
        writeln!(
            f,
            "  (answerable: some provider healthy throughout; counted: one also eligible throughout; req/read: attempts per read;\n   probes/s: its own monitor's probes per provider per second;\n   p50/p99: latency of the reads answered correctly; refused: attempts that reached a provider while it was refused)"
        )?;
        for (subject, fig) in &self.figures {
            writeln!(
                f,
                "  {} = {}; answerable reads not answered correctly (of them counted):",
                subject.name(),
                subject.describe()
            )?;
            if fig.misses.is_empty() {
                writeln!(f, "    none")?;
            }
            for (why, (n, counted)) in &fig.misses {
                writeln!(f, "    {:<46} {n:>10} {:>12}", why.to_string(), format!("({counted})"))?;
            }
            if !fig.extra.is_empty() {
                writeln!(f, "    attempts beyond the first, by the first attempt's provider:")?;
                for (why, n) in &fig.extra {
                    writeln!(f, "      {why:<44} {n:>10}")?;
                }
            }
            if !fig.slow.is_empty() {
                writeln!(f, "    correct reads over 100 ms:")?;
                for (why, n) in &fig.slow {
                    writeln!(f, "      {why:<44} {n:>10}")?;
                }
            }
        }
        if !self.followed.is_empty() {
            writeln!(f, "\n  Chain followers over the same providers and faults (each its own transport):")?;
        }
        for (subject, followed) in &self.followed {
            writeln!(f, "  {:<20} {followed}", subject.name())?;
            for problem in &followed.problems {
                writeln!(f, "    {problem}")?;
            }
        }
        if self.elapsed < Duration::from_secs(60) && matches!(self.run.scenario, Scenario::Flapping { .. }) {
            writeln!(
                f,
                "  (a short measure: the reference's 30 s cooldown has not cycled; figures are indicative)"
            )?;
        }
        Ok(())
    }
}

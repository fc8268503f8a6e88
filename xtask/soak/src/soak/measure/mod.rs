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

mod background;
mod clients;
mod display;
mod follow;
mod judge;
mod load;
mod probes;
mod read;
mod recording;
pub mod subject;
mod targets;
mod timeline;
mod trace;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use failnext_blocklag::{Monitor, MonitorHandle};
use failnext_examples::sim::{Chain, Provider};
use tokio::sync::watch;

pub use judge::{Figures, HEAD_TOLERANCE};
pub use subject::Subject;
pub use targets::Target;

use crate::soak::SetupError;
use crate::soak::record::Endpoints;
use crate::soak::schedule::FaultKind;
use judge::{Sample, judge};
use timeline::Timeline;

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
    let clients::Clients { clients, own_monitors, probing } = clients::build(shared, settings, &list).await?;

    // The scenario, and a check of every monitor, before the first read.
    let timeline = Arc::new(Mutex::new(Timeline { providers: vec![Vec::new(); shared.providers.len()] }));
    let (stop, stopped) = watch::channel(false);
    let mut background = tokio::task::JoinSet::new();
    background::start_scenario(shared, run.scenario, &timeline, &mut background, &stopped).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let checks = own_monitors.iter().chain(std::iter::once(shared.monitor)).map(Monitor::check);
    let _ = futures::future::join_all(checks).await;
    let handles: Vec<MonitorHandle> = own_monitors.iter().map(|m| m.spawn(shared.check_interval)).collect();

    let followers =
        background::spawn_followers(shared, &settings.subjects, &list, &mut background, &stopped).await?;
    background::spawn_checks(shared, &mut background, &stopped);

    let probes =
        tokio::spawn(probes::count_probes(probing.iter().map(|(_, m)| m.clone()).collect(), stopped.clone()));

    // Open loop: one seeded stream of arrival instants, and at each one a read per
    // configuration, whatever the earlier reads are doing.
    let started = Instant::now();
    let deadline = started + run.duration;
    let samples = load::send_reads(shared, settings.rate, deadline, &clients, &url).await;
    let elapsed = started.elapsed();
    let _ = stop.send(true);
    let followed = background::join_followers(followers).await;
    while background.join_next().await.is_some() {}
    let probes = probes.await.unwrap_or_default();
    for handle in handles {
        handle.stop().await;
    }
    drop(clients);
    let ended = Instant::now();
    let timeline = std::mem::take(&mut *timeline.lock().unwrap_or_else(|p| p.into_inner()));

    let windows = fault_windows(&timeline);
    let n = shared.providers.len();
    let faulty = (0..n).map(|p| timeline.faulty_share(p, started, ended)).collect();
    let figures = figures(&settings.subjects, &timeline, n, &samples, &probing, &probes, elapsed);
    Ok(MeasureReport { run, rate: settings.rate, elapsed, figures, faulty, windows, followed })
}

/// How many fault windows of each kind the providers went through.
fn fault_windows(timeline: &Timeline) -> BTreeMap<FaultKind, u64> {
    let mut windows = BTreeMap::new();
    for switches in &timeline.providers {
        for s in switches.iter().filter(|s| s.kind != FaultKind::Healthy) {
            *windows.entry(s.kind).or_default() += 1;
        }
    }
    windows
}

/// Each configuration's figures, judged from its samples against `timeline`, with its own
/// monitor's probes per provider per second (of `probes`, counted in `probing`'s order).
fn figures(
    subjects: &[Subject],
    timeline: &Timeline,
    n: usize,
    samples: &BTreeMap<Subject, Vec<Sample>>,
    probing: &[(Subject, Monitor)],
    probes: &[u64],
    elapsed: Duration,
) -> Vec<(Subject, Figures)> {
    let per_provider_sec = |count: u64| count as f64 / n.max(1) as f64 / elapsed.as_secs_f64().max(1e-9);
    subjects
        .iter()
        .map(|s| {
            let mut figures = judge(samples.get(s).map_or(&[][..], Vec::as_slice), timeline, n);
            figures.probes_per_provider_sec = probing
                .iter()
                .zip(probes)
                .find(|((subject, _), _)| subject == s)
                .map(|(_, count)| per_provider_sec(*count));
            (*s, figures)
        })
        .collect()
}

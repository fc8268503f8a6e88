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
//!   truncated body, JSON-RPC error `-32000`/`-32005`/`-32603`, slow, oversized) or back to
//!   healthy;
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
mod config;
mod exchange;
pub mod measure;
mod phase;
mod record;
mod report;
mod schedule;
mod watch;

use std::fmt;
use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use failnext::{Cooldown, Failover};
use failnext_blocklag::Monitor;
use failnext_examples::SIM_CHAIN_ID;
use failnext_examples::sim::{Chain, Provider};
use failnext_loopback::resources::Usage;
use reqwest_middleware::ClientWithMiddleware;

pub use config::{Config, Profile};
pub use measure::{MeasureReport, MeasureRun, MeasureSettings, Scenario, Subject, Target};
pub use report::Report;

use checks::{Check, Limits, Tally, Violations};
use config::ADDITIONAL_TRIGGER;
use phase::{SimCounts, absorb, phase, settle};
use record::{Dispatch, Endpoints, HookStats, RecordedEligibility};
use watch::{Observed, Settings};

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
pub(crate) struct Ctx {
    pub(crate) client: ClientWithMiddleware,
    pub(crate) endpoints: Endpoints,
    /// The URL requests are built with: the first provider's.
    pub(crate) url: String,
    pub(crate) seed: u64,
    pub(crate) think_ms: u64,
    pub(crate) cancel_window: Duration,
    pub(crate) safety_bound: Duration,
    pub(crate) limits: Limits,
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
    let (chain, providers, endpoints) = start_providers(&config).await?;
    let list: Vec<failnext::Endpoint> = providers.iter().map(Provider::endpoint).collect();
    let Wired { monitor, stats, client } = wire(&config, &chain, list, &endpoints)?;
    let url = providers.first().map(|p| p.url().to_owned()).unwrap_or_default();
    let ctx = Arc::new(context(&config, client, url, &endpoints));
    let settings = watch_settings(&config, &endpoints);

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
    judge_resources(&mut v, &config, &baseline, &after, chain_allowance);
    judge_stray(&mut v, &stats);

    // The measures, after the resources were judged: their configurations are Failovers of
    // their own over the same providers and monitor (or one of their own); the checks above do
    // not look at them.
    let shared = measure::Shared {
        providers: &providers,
        chain: &chain,
        monitor: &monitor,
        endpoints: &endpoints,
        seed: config.seed,
        attempt_timeout: config.attempt_timeout,
        check_interval: config.check_interval,
        probe_timeout: config.probe_timeout,
        max_lag: config.max_lag,
    };
    let measured = run_measures(&shared, &config.measure, &mut v).await?;
    let liar = run_liar(&config, &mut v).await?;

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
        measure: measured,
        liar,
    })
}

/// The simulated chain and its providers, and how the soak tells the providers apart.
async fn start_providers(config: &Config) -> Result<(Chain, Vec<Provider>, Endpoints), SetupError> {
    let chain = Chain::start(SIM_CHAIN_ID, config.block_time);
    let mut providers = Vec::with_capacity(config.providers);
    for i in 0..config.providers {
        providers.push(chain.provider(format!("p{i}")).await?);
    }
    let endpoints = Endpoints {
        ids: providers.iter().map(|p| p.id().to_owned()).collect(),
        ports: providers.iter().map(|p| p.addr().port()).collect(),
    };
    Ok((chain, providers, endpoints))
}

/// The monitor, the hook's statistics and the client through `Failover` that the checked
/// phases send with.
struct Wired {
    monitor: Monitor,
    stats: Arc<HookStats>,
    client: ClientWithMiddleware,
}

/// Builds the monitor over `list` and the client through `Failover`, with the soak's recorders
/// (eligibility answers, event hook, dispatches) wired in.
fn wire(
    config: &Config,
    chain: &Chain,
    list: Vec<failnext::Endpoint>,
    endpoints: &Endpoints,
) -> Result<Wired, SetupError> {
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
        .additional_trigger_status_codes([ADDITIONAL_TRIGGER])
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
    Ok(Wired { monitor, stats, client })
}

/// What every request of the checked phases needs.
fn context(config: &Config, client: ClientWithMiddleware, url: String, endpoints: &Endpoints) -> Ctx {
    Ctx {
        client,
        url,
        endpoints: endpoints.clone(),
        seed: config.seed,
        think_ms: u64::try_from(config.think_max.as_millis()).unwrap_or(u64::MAX),
        cancel_window: config.cancel_window,
        safety_bound: config.safety_bound,
        limits: Limits { attempt_timeout: config.attempt_timeout, slack: config.timing_slack },
    }
}

/// The settings of the fault schedule, the monitor's checks and the observers.
fn watch_settings(config: &Config, endpoints: &Endpoints) -> Settings {
    Settings {
        seed: config.seed,
        attempt_timeout: config.attempt_timeout,
        probe_timeout: config.probe_timeout,
        timing_slack: config.timing_slack,
        check_interval: config.check_interval,
        fault_wait_ms: config.fault_wait_ms,
        ports: endpoints.ports.clone(),
    }
}

/// Whether the tasks, connections and memory returned to the baseline after the main phase
/// (memory: within the tolerance and what the chain's transactions are allowed).
fn judge_resources(
    v: &mut Violations,
    config: &Config,
    baseline: &Usage,
    after: &Usage,
    chain_allowance: u64,
) {
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
}

/// Events, eligibility questions and dispatches outside any soak request.
fn judge_stray(v: &mut Violations, stats: &HookStats) {
    let stray = stats.stray.load(Ordering::Relaxed);
    v.checked(Check::Stray, stats.eligible_calls.load(Ordering::Relaxed));
    for _ in 0..stray {
        v.add(Check::Stray, "an event, eligibility question or dispatch outside any soak request");
    }
}

/// Runs every measure of `settings` (none without configurations), and checks what their chain
/// followers yielded.
async fn run_measures(
    shared: &measure::Shared<'_>,
    settings: &MeasureSettings,
    v: &mut Violations,
) -> Result<Vec<MeasureReport>, SetupError> {
    let mut measured = Vec::new();
    if !settings.subjects.is_empty() {
        for run in settings.runs.iter().filter(|r| !r.duration.is_zero()) {
            measured.push(measure::measure(shared, settings, *run).await?);
        }
    }
    for (subject, yielded, problems) in measured.iter().flat_map(measure::MeasureReport::follower_problems) {
        v.checked(Check::Follower, yielded);
        for problem in problems {
            v.add(Check::Follower, format!("the chain follower of {subject}: {problem}"));
        }
    }
    Ok(measured)
}

/// The liar (issue 31), when `config` asks for it: its rows, and a violation per wrong answer
/// of the contender that must answer nothing wrong.
async fn run_liar(
    config: &Config,
    v: &mut Violations,
) -> Result<Option<Vec<failnext_liar::Row>>, SetupError> {
    if config.liar_rounds == 0 {
        return Ok(None);
    }
    let (seed, spell) = (config.seed, config.liar_spell);
    let weather = |i: u32| failnext_liar::Weather::Seeded { seed, provider: u64::from(i), spell };
    let rows = failnext_liar::run(config.liar_rounds, weather)
        .await
        .map_err(|e| SetupError(format!("liar: {e}")))?;
    for row in rows.iter().filter(|r| r.must_be_right) {
        v.checked(Check::Liar, row.reads);
        for _ in 0..row.wrong() {
            v.add(
                Check::Liar,
                format!(
                    "{} against a liar that {}: a wrong answer (blocks {}, balances {}, receipts {}, unknown receipts {}, logs {})",
                    row.contender,
                    row.liar,
                    row.wrong_blocks,
                    row.wrong_balances,
                    row.wrong_receipts,
                    row.wrong_unknown,
                    row.wrong_logs
                ),
            );
        }
    }
    Ok(Some(rows))
}

/// Bytes allowed per transaction the simulated chain stores: its 66-byte hash as a `String`
/// (an 80-byte allocation), a hash-map slot, and the map's doubling when it grows.
pub const TX_ALLOWANCE: u64 = 256;

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
        for run in &mut config.measure.runs {
            run.duration = Duration::from_millis(500);
        }
        config.liar_rounds = 1;
        let report = run(config).await.unwrap();
        assert_eq!(report.violations(), 0, "{report}");
        let liar = report.liar().expect("the liar ran");
        assert_eq!(liar.len(), 6, "three liars, two contenders");
        assert!(liar.iter().all(|r| r.reads > 0), "{report}");
        assert!(report.requests() >= 400);
        let scenarios: Vec<&str> = report.measures().iter().map(|m| m.run().scenario.name()).collect();
        assert_eq!(scenarios, ["flapping", "half-stale"]);
        for measured in report.measures() {
            for subject in [Subject::Reference, Subject::Paired] {
                let f = measured.figures(subject).unwrap();
                assert!(f.reads > 0 && f.counted <= f.answerable && f.answerable <= f.reads, "{report}");
                assert!(f.correct <= f.counted && f.correct_answerable <= f.answerable, "{report}");
            }
            assert!(!measured.targets().is_empty(), "{report}");
        }
        // The half-stale scenario's three healthy providers answer every read.
        let half = &report.measures()[1].figures(Subject::Reference).unwrap();
        assert_eq!(half.answerable, half.reads, "{report}");
    }
}

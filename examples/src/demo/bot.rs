//! The bot itself: setup, its concurrent tasks (monitor, reader, writer, live view, fault
//! timeline), and the summary.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use failnext::{Endpoint, EndpointId, Failover, RequestBuilderExt};
use failnext_blocklag::Monitor;
use reqwest::StatusCode;
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::{Instant, Interval, MissedTickBehavior};

use crate::demo::config::Config;
use crate::demo::summary::{ProviderSummary, READ_METHODS, Stats, Summary, quantile};
use crate::demo::trace::{Counters, Recorded, hook, traced};
use crate::demo::{DemoError, PROVIDER_IDS, timeline};
use crate::monitoring::{answers_reads, describe, eligible_now, probe_client};
use crate::sim::{Chain, Provider};
use crate::{DUMMY_RAW_TX, Reply, SIM_CHAIN_ID, call, causes, send};

/// The account every balance read and call is about.
const ZERO_ADDRESS: &str = "0x0000000000000000000000000000000000000000";

/// Runs the demo bot until `config.duration` has passed or `shutdown` completes (pass
/// `std::future::pending()` for no early stop), printing its log and live view through `out`,
/// one line per call, and returns the summary.
///
/// # Errors
///
/// When the bot cannot start: a simulated provider cannot bind a loopback port, or the real
/// provider URLs are not one to three `http://` URLs that failnext accepts.
pub async fn run(
    config: Config,
    out: impl Fn(&str) + Send + Sync + 'static,
    shutdown: impl Future<Output = ()>,
) -> Result<Summary, DemoError> {
    let bot = Arc::new(Bot::start(config, Box::new(out)).await?);
    bot.introduce();

    let (stop, stopped) = watch::channel(false);
    let mut tasks = JoinSet::new();
    tasks.spawn(bot.clone().checker(stopped.clone()));
    tasks.spawn(bot.clone().reader(stopped.clone()));
    tasks.spawn(bot.clone().writer(stopped.clone()));
    tasks.spawn(bot.clone().viewer(stopped.clone()));
    if bot.sim.is_some() {
        tasks.spawn(bot.clone().scenario(stopped));
    }

    let interrupted = tokio::select! {
        () = tokio::time::sleep(bot.config.duration) => false,
        () = shutdown => true,
    };
    if interrupted {
        bot.say("interrupted: finishing the requests in flight");
    }
    // Every task stops taking new work and finishes what it is doing (each operation is
    // bounded by its own timeout).
    let _ = stop.send(true);
    while let Some(joined) = tasks.join_next().await {
        if let Err(e) = joined {
            if e.is_panic() {
                std::panic::resume_unwind(e.into_panic());
            }
        }
    }
    bot.view();
    Ok(bot.summary())
}

struct Bot {
    config: Config,
    ids: Vec<EndpointId>,
    /// Where requests are addressed (the primary's URL); failnext sends each attempt to the
    /// endpoint it tries.
    url: String,
    client: ClientWithMiddleware,
    failover: Failover,
    monitor: Monitor,
    sim: Option<Sim>,
    counters: Arc<Counters>,
    stats: Mutex<Stats>,
    started: Instant,
    out: Box<dyn Fn(&str) + Send + Sync>,
}

struct Sim {
    chain: Chain,
    providers: Vec<Provider>,
}

/// Waits for the next tick, or for the stop signal: `false` means stop.
async fn next(tick: &mut Interval, stop: &mut watch::Receiver<bool>) -> bool {
    if *stop.borrow() {
        return false;
    }
    tokio::select! {
        biased;
        _ = stop.changed() => false,
        _ = tick.tick() => true,
    }
}

fn every(period: Duration) -> Interval {
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    tick
}

impl Bot {
    async fn start(config: Config, out: Box<dyn Fn(&str) + Send + Sync>) -> Result<Bot, DemoError> {
        let simulated = config.is_simulated();
        let (endpoints, sim) = if simulated {
            let chain = Chain::start(SIM_CHAIN_ID, config.block_time);
            let mut providers = Vec::new();
            for id in PROVIDER_IDS {
                let provider =
                    chain.provider(id).await.map_err(|e| DemoError::new(format!("simulator: {e}")))?;
                providers.push(provider);
            }
            let endpoints: Vec<Endpoint> = providers.iter().map(Provider::endpoint).collect();
            (endpoints, Some(Sim { chain, providers }))
        } else {
            (real_endpoints(&config.rpc)?, None)
        };

        let probes = probe_client(simulated).map_err(|e| DemoError::new(format!("probe client: {e}")))?;
        let monitor = Monitor::builder(endpoints.clone())
            .max_lag(config.max_lag)
            .probe_timeout(config.probe_timeout)
            .client(probes)
            .build()
            .map_err(|e| DemoError::new(causes(&e)))?;

        let counters = Arc::new(Counters::default());
        let failover = Failover::builder(endpoints.clone())
            // A bot passes `monitor.clone()` here; the demo records what failnext saw.
            .eligible(Recorded(monitor.clone()))
            // Rate limits are worth trying the next provider for (they do not count toward
            // cooldown, which only 502/503/504 and errors do).
            .additional_trigger_status_codes([StatusCode::TOO_MANY_REQUESTS])
            .cooldown(config.cooldown)
            .attempt_timeout(config.attempt_timeout)
            .on_event(hook(counters.clone()))
            .build()
            .map_err(|e| DemoError::new(causes(&e)))?;
        let http = if simulated { reqwest::Client::builder().no_proxy() } else { reqwest::Client::builder() };
        let http = http.build().map_err(|e| DemoError::new(format!("http client: {e}")))?;
        let client = ClientBuilder::new(http).with(failover.clone()).build();

        let ids: Vec<EndpointId> = endpoints.iter().map(|e| e.id().clone()).collect();
        let url = endpoints.first().map(|e| e.url().to_owned()).unwrap_or_default();
        Ok(Bot {
            stats: Mutex::new(Stats::new(ids.len())),
            config,
            ids,
            url,
            client,
            failover,
            monitor,
            sim,
            counters,
            started: Instant::now(),
            out,
        })
    }

    // ----- output -----

    fn say(&self, line: &str) {
        (self.out)(line);
    }

    fn stamp(&self) -> String {
        format!("[{:5.1}s]", self.started.elapsed().as_secs_f64())
    }

    fn log(&self, what: &str) {
        self.say(&format!("{} {what}", self.stamp()));
    }

    fn introduce(&self) {
        let c = &self.config;
        let secs = |d: Duration| format!("{:.2} s", d.as_secs_f64());
        let ids: Vec<&str> = self.ids.iter().map(EndpointId::as_str).collect();
        match &self.sim {
            Some(sim) => self.say(&format!(
                "failnext demo: {} simulated providers ({}) on chain {}, {} s, a block every {}",
                ids.len(),
                ids.join(", "),
                sim.chain.id(),
                c.duration.as_secs_f64(),
                secs(c.block_time),
            )),
            None => {
                self.say(&format!(
                    "failnext demo: {} real providers, {} s, no fault injection",
                    ids.len(),
                    c.duration.as_secs_f64()
                ));
                for endpoint in self.failover.endpoints() {
                    self.say(&format!("  {endpoint}"));
                }
            }
        }
        self.say(&format!(
            "  monitor: checks every {}, max lag {} blocks; failnext: 429 triggers failover, cooldown {} failures / {}, attempt timeout {}",
            secs(c.check_interval),
            c.max_lag,
            c.cooldown.threshold().unwrap_or(0),
            c.cooldown.duration().map_or_else(|| "off".to_owned(), secs),
            secs(c.attempt_timeout),
        ));
        self.say(&format!(
            "  bot: a read every {} (failover allowed), a write every {} (failover denied)",
            secs(c.read_interval),
            secs(c.write_interval)
        ));
        if self.sim.is_some() {
            let plan: Vec<String> = timeline::script(c.lag_blocks)
                .iter()
                .map(|s| {
                    let at = timeline::when(s.at, c.duration, c.check_interval);
                    format!("{:.1}s {}", at.as_secs_f64(), s.note)
                })
                .collect();
            self.say(&format!("  timeline: {}; third stays healthy", plan.join("; ")));
        }
    }

    /// The live view: one header line, then one line per provider.
    fn view(&self) {
        let snapshot = self.monitor.snapshot();
        let (header, served) = {
            let s = self.stats();
            let header = format!(
                "{} reads {} (failed {}), writes {}, failovers {}, cooldown skips {}",
                self.stamp(),
                s.reads(),
                s.reads_failed,
                s.writes,
                self.counters.failovers(),
                self.counters.cooldown_skips(),
            );
            let served: Vec<u64> = s.served_reads.iter().zip(&s.served_writes).map(|(r, w)| r + w).collect();
            (header, served)
        };
        self.say(&header);
        for (i, id) in self.ids.iter().enumerate() {
            let height = snapshot
                .as_ref()
                .and_then(|s| s.height(id))
                .map_or_else(|| "-".to_owned(), |h| h.to_string());
            let eligible = snapshot.as_ref().is_none_or(|s| s.is_eligible(id));
            let cooling = self.failover.is_cooling_down(id);
            let sim = match &self.sim {
                Some(sim) => sim
                    .providers
                    .get(i)
                    .map(|p| format!("  ({})", describe(&p.behaviour())))
                    .unwrap_or_default(),
                None => String::new(),
            };
            self.say(&format!(
                "  {:<8} height {height:>8}  eligible {:<3}  cooling {:<3}  served {:>4}{sim}",
                id.as_str(),
                yes(eligible),
                yes(cooling),
                served.get(i).copied().unwrap_or(0),
            ));
        }
    }

    // ----- tasks -----

    /// Checks every provider's height on the configured interval.
    async fn checker(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let mut tick = every(self.config.check_interval);
        // Each probe is bounded by the probe timeout and they run at once: this bounds the check.
        let bound = self.config.probe_timeout + Duration::from_secs(1);
        let mut shown: Option<Vec<EndpointId>> = None;
        while next(&mut tick, &mut stop).await {
            if tokio::time::timeout(bound, self.monitor.check()).await.is_err() {
                self.log("monitor: check timed out, previous eligibility kept");
            }
            // A failed probe is reported through eligibility below, with its reason.
            let eligible = eligible_now(&self.monitor);
            if shown.as_ref() != Some(&eligible) {
                self.log(&self.eligibility_line(&eligible));
                shown = Some(eligible);
            }
        }
    }

    fn eligibility_line(&self, eligible: &[EndpointId]) -> String {
        let names: Vec<&str> = eligible.iter().map(EndpointId::as_str).collect();
        let snapshot = self.monitor.snapshot();
        let out: Vec<String> = self
            .ids
            .iter()
            .filter(|id| !eligible.contains(id))
            .map(|id| {
                let why = match snapshot.as_ref().and_then(|s| s.entry(id)) {
                    Some(entry) => match (entry.error(), entry.lag()) {
                        (Some(error), _) => error.to_string(),
                        (None, Some(lag)) => format!("{lag} blocks behind"),
                        (None, None) => "no height".to_owned(),
                    },
                    None => "not checked".to_owned(),
                };
                format!("{id} ({why})")
            })
            .collect();
        let mut line = format!(
            "monitor: eligible: {}",
            if names.is_empty() { "none".to_owned() } else { names.join(", ") }
        );
        if !out.is_empty() {
            line.push_str(&format!("; ineligible: {}", out.join(", ")));
        }
        line
    }

    /// Reads on the configured interval, cycling through the read methods.
    async fn reader(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let mut tick = every(self.config.read_interval);
        let mut n = 0usize;
        while next(&mut tick, &mut stop).await {
            self.read(n % READ_METHODS.len()).await;
            n += 1;
        }
    }

    async fn read(&self, kind: usize) {
        let method = READ_METHODS[kind % READ_METHODS.len()];
        let params = match method {
            "eth_getBalance" => json!([ZERO_ADDRESS, "latest"]),
            "eth_call" => json!([{ "to": ZERO_ADDRESS, "data": "0x" }, "latest"]),
            _ => json!([]),
        };
        let healthy_before = self.healthy();
        let started = Instant::now();
        let request = call(&self.client, &self.url, method, params).allow_failover();
        let (outcome, trace) = traced(tokio::time::timeout(self.request_bound(), send(request))).await;
        let latency = started.elapsed();
        let healthy_after = self.healthy();

        let failure = match &outcome {
            Err(_) => Some("no answer in time".to_owned()),
            Ok(Err(e)) => Some(failure_reason(e)),
            Ok(Ok(reply)) => read_failure(reply),
        };
        // A provider healthy all along (by the simulator's account) and eligible when the read
        // started (as failnext saw it) should have answered.
        let witness = match (&healthy_before, &healthy_after) {
            (Some(before), Some(after)) => self
                .ids
                .iter()
                .enumerate()
                .find(|&(i, id)| before[i] && after[i] && trace.was_eligible(id))
                .map(|(_, id)| id.clone()),
            _ => None,
        };

        let mut s = self.stats();
        s.reads_by_method[kind % READ_METHODS.len()] += 1;
        s.read_latencies.push(latency);
        if let Ok(Ok(reply)) = &outcome {
            if let Some(i) = self.index(reply.served_by()) {
                s.served_reads[i] += 1;
            }
        }
        if let Some(why) = failure {
            s.reads_failed += 1;
            if let Some(id) = witness {
                s.reads_failed_with_healthy_eligible += 1;
                let at = self.stamp();
                s.violation(format!("{at} {method} failed ({why}) while {id} was healthy and eligible"));
            }
        }
    }

    /// Sends a write now and then, failover denied.
    async fn writer(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        // Half a check interval off the checks, so some writes land while a fault is fresh
        // and the monitor has not noticed it yet: they show that a write is not failed over.
        let period = self.config.write_interval;
        let first = self.started + period + self.config.check_interval / 2;
        let mut tick = tokio::time::interval_at(first, period);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut n = 0u64;
        while next(&mut tick, &mut stop).await {
            n += 1;
            self.write(n).await;
        }
    }

    async fn write(&self, n: u64) {
        // A distinct raw transaction each time (the simulator refuses repeats, as nodes do);
        // real nodes reject these bytes, so nothing is broadcast.
        let raw = format!("{DUMMY_RAW_TX}{n:08x}");
        let before = self.write_counts();
        let request = call(&self.client, &self.url, "eth_sendRawTransaction", json!([raw])).deny_failover();
        let (outcome, trace) = traced(tokio::time::timeout(self.request_bound(), send(request))).await;
        let after = self.write_counts();

        // Writes are sent one at a time and nothing else sends eth_sendRawTransaction, so the
        // counters' growth during this write is this write's.
        let received: u64 = match (&before, &after) {
            (Some(b), Some(a)) => a.iter().zip(b).map(|(a, b)| a.saturating_sub(*b)).sum(),
            _ => 0,
        };
        let reached = received.max(trace.attempts.len() as u64);
        let tried: Vec<&str> = trace.attempts.iter().map(EndpointId::as_str).collect();

        let result = match &outcome {
            Err(_) => "no answer in time".to_owned(),
            Ok(Err(e)) => format!("no response: {}", failure_reason(e)),
            Ok(Ok(reply)) => match (reply.error(), reply.result()) {
                (Some(error), _) => format!("{}: {error}", reply.served_by()),
                (None, Some(Value::String(_))) if reply.status().is_success() => {
                    format!("{}: accepted", reply.served_by())
                }
                _ => format!("{}: http {}", reply.served_by(), reply.status().as_u16()),
            },
        };

        {
            let mut s = self.stats();
            s.writes += 1;
            match &outcome {
                Ok(Ok(reply)) => {
                    if let Some(i) = self.index(reply.served_by()) {
                        s.served_writes[i] += 1;
                    }
                    let accepted = reply.status().is_success()
                        && reply.error().is_none()
                        && matches!(reply.result(), Some(Value::String(_)));
                    if accepted {
                        s.writes_accepted += 1;
                    } else {
                        s.writes_rejected += 1;
                    }
                }
                _ => s.writes_failed += 1,
            }
            if reached > 1 {
                s.writes_to_several += 1;
                let at = self.stamp();
                s.violation(format!(
                    "{at} write {n} reached {reached} providers (attempts: {})",
                    tried.join(", ")
                ));
            }
        }
        let to = if tried.is_empty() { "nobody".to_owned() } else { tried.join(", ") };
        self.log(&format!("write {n} (failover denied) tried {to} -> {result}"));
    }

    /// Prints the live view on the configured interval.
    async fn viewer(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let period = self.config.view_interval;
        let mut tick = tokio::time::interval_at(Instant::now() + period, period);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        while next(&mut tick, &mut stop).await {
            // The run prints a last view when it ends: no second one at the very end.
            if self.started.elapsed() + period / 2 < self.config.duration {
                self.view();
            }
        }
    }

    /// Switches the simulated providers' behaviours on the scripted timeline.
    async fn scenario(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let Some(sim) = &self.sim else { return };
        for step in timeline::script(self.config.lag_blocks) {
            let at = self.started + timeline::when(step.at, self.config.duration, self.config.check_interval);
            tokio::select! {
                biased;
                _ = stop.changed() => return,
                () = tokio::time::sleep_until(at) => {}
            }
            let Some(provider) = sim.providers.get(step.provider) else { continue };
            match provider.set(step.behaviour).await {
                Ok(()) => self.log(&format!(">> {}", step.note)),
                Err(e) => self.log(&format!(">> {} failed: {e}", step.note)),
            }
        }
    }

    // ----- helpers -----

    fn stats(&self) -> MutexGuard<'_, Stats> {
        // Nothing panics while holding the lock; poisoned statistics are still statistics.
        self.stats.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn index(&self, id: &str) -> Option<usize> {
        self.ids.iter().position(|e| e == id)
    }

    /// Bounds one whole request: every provider may take up to an attempt timeout.
    fn request_bound(&self) -> Duration {
        self.config.attempt_timeout * u32::try_from(self.ids.len()).unwrap_or(u32::MAX)
            + Duration::from_secs(1)
    }

    /// Which simulated providers answer reads now; `None` against real providers.
    fn healthy(&self) -> Option<Vec<bool>> {
        let sim = self.sim.as_ref()?;
        Some(
            sim.providers
                .iter()
                .map(|p| answers_reads(&p.behaviour(), self.config.attempt_timeout))
                .collect(),
        )
    }

    /// Each simulated provider's `eth_sendRawTransaction` count; `None` against real providers.
    fn write_counts(&self) -> Option<Vec<u64>> {
        let sim = self.sim.as_ref()?;
        Some(sim.providers.iter().map(|p| p.count("eth_sendRawTransaction")).collect())
    }

    fn summary(&self) -> Summary {
        let s = self.stats();
        let mut latencies = s.read_latencies.clone();
        latencies.sort_unstable();
        let providers = self
            .ids
            .iter()
            .enumerate()
            .map(|(i, id)| ProviderSummary {
                id: id.to_string(),
                reads_served: s.served_reads.get(i).copied().unwrap_or(0),
                writes_served: s.served_writes.get(i).copied().unwrap_or(0),
                received: self.sim.as_ref().and_then(|sim| sim.providers.get(i)).map(Provider::total),
            })
            .collect();
        Summary {
            simulated: self.sim.is_some(),
            elapsed: self.started.elapsed(),
            reads_by_method: READ_METHODS
                .iter()
                .zip(s.reads_by_method)
                .map(|(m, n)| ((*m).to_owned(), n))
                .collect(),
            reads_failed: s.reads_failed,
            reads_failed_with_healthy_eligible: self
                .sim
                .as_ref()
                .map(|_| s.reads_failed_with_healthy_eligible),
            writes: s.writes,
            writes_accepted: s.writes_accepted,
            writes_rejected: s.writes_rejected,
            writes_failed: s.writes_failed,
            writes_to_several: s.writes_to_several,
            providers,
            attempts: self.counters.attempts(),
            failovers: self.counters.failovers(),
            cooldown_skips: self.counters.cooldown_skips(),
            read_p50: quantile(&latencies, 0.50),
            read_p99: quantile(&latencies, 0.99),
            violations: s.violations.clone(),
        }
    }
}

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

/// Why a reply is not a correct answer to a read, if it is not.
fn read_failure(reply: &Reply) -> Option<String> {
    if let Some(error) = reply.error() {
        return Some(format!("{}: {error}", reply.served_by()));
    }
    if !reply.status().is_success() {
        return Some(format!("{}: http {}", reply.served_by(), reply.status().as_u16()));
    }
    match reply.result() {
        Some(Value::Null) | None => Some(format!("{}: no result", reply.served_by())),
        Some(_) => None,
    }
}

/// The attempts of a failnext error, or the error with its causes.
fn failure_reason(err: &reqwest_middleware::Error) -> String {
    match failnext::Error::from_middleware(err) {
        Some(e) if !e.attempts().is_empty() => {
            let attempts: Vec<String> = e.attempts().iter().map(attempt_reason).collect();
            attempts.join("; ")
        }
        _ => causes(err).to_string(),
    }
}

fn attempt_reason(attempt: &failnext::Attempt) -> String {
    let error = attempt.error();
    let kind = if error.is_connect() {
        "could not connect"
    } else if error.is_timeout() {
        "timed out"
    } else {
        "transport error"
    };
    format!("{} {kind}", attempt.endpoint())
}

/// The endpoints for `--rpc` URLs: `primary`, `backup`, `third` in order.
fn real_endpoints(urls: &[String]) -> Result<Vec<Endpoint>, DemoError> {
    if urls.is_empty() || urls.len() > PROVIDER_IDS.len() {
        return Err(DemoError::new(format!(
            "give one to {} provider URLs, not {}",
            PROVIDER_IDS.len(),
            urls.len()
        )));
    }
    let https = urls.iter().any(|url| url.trim_start().to_ascii_lowercase().starts_with("https:"));
    if https && !cfg!(feature = "tls") {
        return Err(DemoError::new(
            "https provider URLs need TLS: run the demo with `--features tls`, or use http URLs",
        ));
    }
    Ok(PROVIDER_IDS.iter().zip(urls).map(|(id, url)| Endpoint::new(*id, url.as_str())).collect())
}

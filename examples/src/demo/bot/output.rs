//! What the bot prints: its log lines, the introduction, the live view, and the summary it
//! returns.

use std::sync::Arc;
use std::time::Duration;

use failnext::{BreakerState, EndpointId};
use failnext_blocklag::{Snapshot, SnapshotEntry};
use tokio::sync::watch;
use tokio::time::{Instant, MissedTickBehavior};

use super::{Bot, next};
use crate::demo::summary::{ProviderSummary, READ_METHODS, Summary, quantile};
use crate::demo::timeline;
use crate::monitoring::describe;
use crate::sim::Provider;

impl Bot {
    pub(super) fn say(&self, line: &str) {
        (self.out)(line);
    }

    pub(super) fn stamp(&self) -> String {
        format!("[{:5.1}s]", self.started.elapsed().as_secs_f64())
    }

    pub(super) fn log(&self, what: &str) {
        self.say(&format!("{} {what}", self.stamp()));
    }

    pub(super) fn introduce(&self) {
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
            let plan: Vec<String> = timeline::script(c.lag_blocks, c.block_time)
                .iter()
                .map(|s| {
                    let at = timeline::when(s.at, c.duration, c.check_interval);
                    format!("{:.1}s {}", at.as_secs_f64(), s.note)
                })
                .collect();
            self.say(&format!("  timeline: {}", plan.join("; ")));
        }
    }

    /// The live view: one header line, then one line per provider with its height, whether
    /// the monitor holds it eligible and why, its breaker, the requests it served and (in the
    /// simulator) its behaviour.
    pub(super) fn view(&self) {
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
            let entry = snapshot.as_ref().and_then(|s| s.entry(id));
            let height =
                entry.and_then(SnapshotEntry::height).map_or_else(|| "-".to_owned(), |h| h.to_string());
            let eligible = snapshot.as_ref().is_none_or(|s| s.is_eligible(id));
            let why = why(snapshot.as_deref(), id);
            let cooling = self.failover.is_cooling_down(id);
            let breaker = self.breaker(i, cooling);
            let timing =
                snapshot.as_deref().and_then(|s| timing(s, id)).map(|t| format!("  {t}")).unwrap_or_default();
            let sim = match &self.sim {
                Some(sim) => sim
                    .providers
                    .get(i)
                    .map(|p| format!("  ({})", describe(&p.behaviour())))
                    .unwrap_or_default(),
                None => String::new(),
            };
            self.say(&format!(
                "  {:<8} height {height:>8}  eligible {:<3} {:<30}  cooling {:<3} {:<26}  served {:>4}{timing}{sim}",
                id.as_str(),
                yes(eligible),
                format!("({why})"),
                yes(cooling),
                format!("(breaker {breaker})"),
                served.get(i).copied().unwrap_or(0),
            ));
        }
    }

    /// Provider `i`'s breaker: open while it cools down (failnext's `is_cooling_down`),
    /// half-open when its last `Event::Breaker` said so, closed otherwise; and how often it
    /// opened.
    fn breaker(&self, i: usize, cooling: bool) -> String {
        let told = self.ids.get(i).and_then(|id| self.counters.breaker(id));
        let state = match told {
            _ if cooling => "open",
            Some(b) if b.last == BreakerState::HalfOpen => "half-open",
            _ => "closed",
        };
        match self.openings(i) {
            0 => state.to_owned(),
            n => format!("{state}, opened {n}x"),
        }
    }

    /// Prints the live view on the configured interval.
    pub(super) async fn viewer(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
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

    pub(super) fn summary(&self) -> Summary {
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
            picture: None,
            probes_after_stop: s.probes_after_stop,
        }
    }
}

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

/// Why `id` is eligible or not in `snapshot`: the probe's error, or how far behind the
/// reference head it is against the limit; the fail-open before the first check.
pub(super) fn why(snapshot: Option<&Snapshot>, id: &str) -> String {
    let Some(snapshot) = snapshot else { return "not checked yet, fail-open".to_owned() };
    let Some(entry) = snapshot.entry(id) else { return "not checked".to_owned() };
    if entry.is_implausible() {
        let head = entry.height().unwrap_or_default();
        return format!("implausible head {head}: more than the chain could have made, never the reference");
    }
    if entry.is_stale() {
        let age = entry.head_age().unwrap_or_default().as_secs_f64();
        return format!("stale head, {age:.1} s old by its timestamp");
    }
    if let Some(observation) = entry.contradiction() {
        return format!("contradicted by real traffic ({observation:?}), probed again");
    }
    if entry.is_doubted() {
        let share = entry.bad_share().unwrap_or_default() * 100.0;
        return format!("doubted: {share:.0} % of its recent answers bad");
    }
    match (entry.error(), entry.lag()) {
        (Some(error), _) => error.to_string(),
        (None, Some(lag)) if entry.is_eligible() => format!("{lag} behind, max {}", snapshot.max_lag()),
        (None, Some(lag)) => format!("{lag} blocks behind, max {}", snapshot.max_lag()),
        (None, None) => "no height".to_owned(),
    }
}

// ===== lag in seconds and probe latency =====

/// One provider's lag in seconds (its lag in blocks times the monitor's block-time average)
/// and its probe latency average, for the live view and the monitor's eligibility line; `None`
/// while the snapshot knows neither.
pub(super) fn timing(snapshot: &Snapshot, id: &str) -> Option<String> {
    let lag = snapshot.lag_time(id).map(|lag| format!("lag {:.1} s", lag.as_secs_f64()));
    let probe = snapshot
        .entry(id)
        .and_then(SnapshotEntry::probe_latency)
        .map(|l| format!("probe {} ms", l.as_millis()));
    match (lag, probe) {
        (None, None) => None,
        (Some(l), None) => Some(l),
        (None, Some(p)) => Some(p),
        (Some(l), Some(p)) => Some(format!("{l}, {p}")),
    }
}

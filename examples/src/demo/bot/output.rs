//! What the bot prints: its log lines, the introduction, the live view, and the summary it
//! returns.

use std::sync::Arc;
use std::time::Duration;

use failnext::EndpointId;
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
        }
    }
}

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

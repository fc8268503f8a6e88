//! What the bot saw: running statistics, and the summary printed at the end.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// The read methods the bot cycles through.
pub(crate) const READ_METHODS: [&str; 3] = ["eth_blockNumber", "eth_getBalance", "eth_call"];

/// How many invariant violations are described in full.
const MAX_DESCRIBED: usize = 10;

/// Running statistics, updated by the reader and the writer.
#[derive(Debug)]
pub(crate) struct Stats {
    /// Probes the simulated providers received after the polling monitor's handle stopped.
    pub(crate) probes_after_stop: Option<u64>,
    pub(crate) reads_by_method: [u64; 3],
    pub(crate) reads_failed: u64,
    pub(crate) reads_failed_with_healthy_eligible: u64,
    /// Per provider, in configured order: responses to reads and to writes.
    pub(crate) served_reads: Vec<u64>,
    pub(crate) served_writes: Vec<u64>,
    pub(crate) writes: u64,
    pub(crate) writes_accepted: u64,
    pub(crate) writes_rejected: u64,
    pub(crate) writes_failed: u64,
    pub(crate) writes_to_several: u64,
    pub(crate) read_latencies: Vec<Duration>,
    pub(crate) violations: Vec<String>,
}

impl Stats {
    pub(crate) fn new(providers: usize) -> Stats {
        Stats {
            probes_after_stop: None,
            reads_by_method: [0; 3],
            reads_failed: 0,
            reads_failed_with_healthy_eligible: 0,
            served_reads: vec![0; providers],
            served_writes: vec![0; providers],
            writes: 0,
            writes_accepted: 0,
            writes_rejected: 0,
            writes_failed: 0,
            writes_to_several: 0,
            read_latencies: Vec::new(),
            violations: Vec::new(),
        }
    }

    pub(crate) fn reads(&self) -> u64 {
        self.reads_by_method.iter().sum()
    }

    pub(crate) fn violation(&mut self, what: String) {
        if self.violations.len() < MAX_DESCRIBED {
            self.violations.push(what);
        }
    }
}

/// The end-of-run summary of the demo bot, returned by [`run`](crate::demo::run).
#[derive(Debug, Clone)]
pub struct Summary {
    /// Whether the providers were simulated (and the health invariant checked).
    pub simulated: bool,
    /// How long the bot ran.
    pub elapsed: Duration,
    /// Reads sent, by method.
    pub reads_by_method: Vec<(String, u64)>,
    /// Reads that got no correct answer (an error, an HTTP error or a JSON-RPC error).
    pub reads_failed: u64,
    /// Reads that failed although a provider was healthy (known from the simulator, before
    /// and after the read) and eligible (as failnext saw it when the read started). Must be
    /// zero. `None` against real providers, whose health is unknown.
    pub reads_failed_with_healthy_eligible: Option<u64>,
    /// Writes sent, failover denied.
    pub writes: u64,
    /// Writes a provider accepted (it returned a transaction hash).
    pub writes_accepted: u64,
    /// Writes a provider answered with an HTTP or JSON-RPC error.
    pub writes_rejected: u64,
    /// Writes that got no HTTP response (connection refused, timeout, ...).
    pub writes_failed: u64,
    /// Writes that reached more than one provider, counted from failnext's attempt events and,
    /// in the simulator, from each provider's `eth_sendRawTransaction` counter. Must be zero.
    pub writes_to_several: u64,
    /// Per provider, in priority order.
    pub providers: Vec<ProviderSummary>,
    /// Attempts failnext made, all requests together.
    pub attempts: u64,
    /// Attempts that moved a request on to the next provider.
    pub failovers: u64,
    /// Providers passed over because they were cooling down.
    pub cooldown_skips: u64,
    /// Median read latency (from sending to the whole reply read).
    pub read_p50: Option<Duration>,
    /// 99th percentile read latency.
    pub read_p99: Option<Duration>,
    /// The first few invariant violations, described.
    pub violations: Vec<String>,
    /// Where the picture of the run (SVG) was written, if it was.
    pub picture: Option<PathBuf>,
    /// `eth_blockNumber` probes the simulated providers received after the polling monitor
    /// (`Monitor::spawn`) was stopped, counted by the providers over two check intervals.
    /// Must be zero. `None` against real providers.
    pub probes_after_stop: Option<u64>,
}

/// One provider's line in a [`Summary`].
#[derive(Debug, Clone)]
pub struct ProviderSummary {
    /// The endpoint id: `primary`, `backup` or `third`.
    pub id: String,
    /// Reads it answered.
    pub reads_served: u64,
    /// Writes it answered.
    pub writes_served: u64,
    /// HTTP requests it received in all, the monitor's probes and failed attempts included
    /// (simulator only).
    pub received: Option<u64>,
}

impl Summary {
    pub(crate) fn reads(&self) -> u64 {
        self.reads_by_method.iter().map(|(_, n)| n).sum()
    }

    /// Whether every invariant held: no read failed while a healthy eligible provider
    /// existed, and no write reached more than one provider.
    pub fn invariants_hold(&self) -> bool {
        self.reads_failed_with_healthy_eligible.unwrap_or(0) == 0
            && self.writes_to_several == 0
            && self.probes_after_stop.unwrap_or(0) == 0
    }
}

/// The `p`-th quantile (0 < p <= 1) of sorted samples, by the nearest-rank method.
pub(crate) fn quantile(sorted: &[Duration], p: f64) -> Option<Duration> {
    if sorted.is_empty() {
        return None;
    }
    // Nearest rank: the smallest sample with at least p of all samples at or below it.
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len()) - 1).copied()
}

fn ms(d: Option<Duration>) -> String {
    d.map_or_else(|| "-".to_owned(), |d| format!("{:.1} ms", d.as_secs_f64() * 1000.0))
}

fn verdict(holds: bool) -> &'static str {
    if holds { "ok" } else { "VIOLATED" }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let against = if self.simulated { "simulated providers" } else { "real providers" };
        writeln!(f, "summary: {:.1} s against {against}", self.elapsed.as_secs_f64())?;
        let by_method: Vec<String> = self.reads_by_method.iter().map(|(m, n)| format!("{m} {n}")).collect();
        writeln!(f, "  requests: {} reads ({}), {} writes", self.reads(), by_method.join(", "), self.writes)?;
        writeln!(f, "  served by:")?;
        for p in &self.providers {
            write!(f, "    {:<8} {:>5} reads {:>3} writes", p.id, p.reads_served, p.writes_served)?;
            if let Some(received) = p.received {
                write!(f, "   ({received} requests received, probes and failed attempts included)")?;
            }
            writeln!(f)?;
        }
        writeln!(
            f,
            "  attempts: {}, failovers: {}, cooldown skips: {}",
            self.attempts, self.failovers, self.cooldown_skips
        )?;
        writeln!(f, "  read latency: p50 {}, p99 {}", ms(self.read_p50), ms(self.read_p99))?;
        writeln!(f, "  reads failed: {}", self.reads_failed)?;
        match self.reads_failed_with_healthy_eligible {
            Some(n) => writeln!(
                f,
                "  reads failed while a healthy eligible provider existed: {n} (must be 0) {}",
                verdict(n == 0)
            )?,
            None => writeln!(
                f,
                "  reads failed while a healthy eligible provider existed: not checked (real providers)"
            )?,
        }
        writeln!(
            f,
            "  writes: {} sent with failover denied, {} accepted, {} rejected, {} without response",
            self.writes, self.writes_accepted, self.writes_rejected, self.writes_failed
        )?;
        writeln!(
            f,
            "  writes that reached more than one provider: {} (must be 0) {}",
            self.writes_to_several,
            verdict(self.writes_to_several == 0)
        )?;
        if let Some(n) = self.probes_after_stop {
            writeln!(
                f,
                "  monitor probes after its polling handle stopped: {n} (must be 0) {}",
                verdict(n == 0)
            )?;
        }
        for v in &self.violations {
            writeln!(f, "  violation: {v}")?;
        }
        if let Some(path) = &self.picture {
            writeln!(f, "  picture: {} (one lane per provider, reads and writes over time)", path.display())?;
        }
        write!(f, "invariants: {}", if self.invariants_hold() { "all held" } else { "BROKEN" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_quantiles() {
        let ms = |n: u64| Duration::from_millis(n);
        let samples: Vec<Duration> = (1..=100).map(ms).collect();
        assert_eq!(quantile(&samples, 0.5), Some(ms(50)));
        assert_eq!(quantile(&samples, 0.99), Some(ms(99)));
        assert_eq!(quantile(&[ms(7)], 0.99), Some(ms(7)));
        assert_eq!(quantile(&[], 0.5), None);
    }
}

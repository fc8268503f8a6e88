//! One measured batch of requests, and the medians over rounds.
//!
//! A batch sends a fixed number of requests through one variant, one at a time or from
//! `concurrency` tasks on the client's thread, and records wall time, every latency, CPU time
//! (the whole process, and the client thread alone), peak RSS, the client's allocations, and
//! the TCP connections the servers accepted meanwhile.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use crate::alloc;
use crate::os::{Clock, cpu_time, max_rss_kib};
use crate::servers::Server;
use crate::variants::Variant;

/// A batch that takes longer than this is abandoned (its requests are cancelled).
const BATCH_LIMIT: Duration = Duration::from_secs(60);

/// What one batch measured.
#[derive(Debug)]
pub(crate) struct Sample {
    pub(crate) requests: u64,
    pub(crate) errors: u64,
    pub(crate) wall: Duration,
    /// Nanoseconds, sorted.
    pub(crate) latencies: Vec<u64>,
    pub(crate) cpu_process: Duration,
    pub(crate) cpu_client: Duration,
    pub(crate) allocs: u64,
    pub(crate) bytes: u64,
    pub(crate) peak_heap: u64,
    pub(crate) connections: u64,
    pub(crate) max_rss_kib: u64,
}

/// Medians over the rounds of one variant at one concurrency; latencies pooled.
#[derive(Debug)]
pub(crate) struct Summary {
    pub(crate) variant: &'static str,
    pub(crate) concurrency: usize,
    pub(crate) rounds: usize,
    pub(crate) requests: u64,
    pub(crate) errors: u64,
    pub(crate) rps: f64,
    /// Requests per second of process CPU time: with client and server pinned to one CPU, the
    /// throughput that CPU sustains, unaffected by other work on the machine.
    pub(crate) rps_cpu: f64,
    pub(crate) p50_us: f64,
    pub(crate) p99_us: f64,
    pub(crate) cpu_process_us: f64,
    pub(crate) cpu_client_us: f64,
    pub(crate) allocs: f64,
    pub(crate) bytes: f64,
    pub(crate) peak_heap_kib: f64,
    pub(crate) connections: f64,
    pub(crate) max_rss_mib: f64,
    /// Every latency of every round, nanoseconds, sorted.
    pub(crate) latencies: Vec<u64>,
    /// The main figures of each round, for paired comparisons between variants (round `i` of
    /// every variant ran back to back).
    pub(crate) per_round: Vec<Round>,
}

/// One round's figures of one variant.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Round {
    pub(crate) rps: f64,
    pub(crate) rps_cpu: f64,
    pub(crate) p50_us: f64,
    pub(crate) cpu_process_us: f64,
    pub(crate) cpu_client_us: f64,
}

/// Sends `requests` requests through `variant` from `concurrency` tasks; `watch` are the
/// servers whose new connections are counted.
pub(crate) async fn batch(
    variant: &Arc<Variant>,
    requests: usize,
    concurrency: usize,
    watch: &[&Server],
) -> Sample {
    let connections = || watch.iter().map(|s| s.connections()).sum::<u64>();
    let next = Arc::new(AtomicUsize::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    // Allocated before the counters are read, so the harness adds nothing per request.
    let lanes: Vec<Vec<u64>> = (0..concurrency).map(|_| Vec::with_capacity(requests)).collect();
    let conns_before = connections();
    let (proc_before, client_before) = (cpu_time(Clock::Process), cpu_time(Clock::Thread));
    let alloc_before = alloc::snapshot();
    let heap_before = alloc::reset_peak();
    let started = Instant::now();

    let mut tasks = JoinSet::new();
    for lat in lanes {
        tasks.spawn(lane(variant.clone(), next.clone(), requests, lat, errors.clone()));
    }
    let all = async {
        let mut done = Vec::with_capacity(concurrency);
        while let Some(Ok(lat)) = tasks.join_next().await {
            done.push(lat);
        }
        done
    };
    let lanes = tokio::time::timeout(BATCH_LIMIT, all).await.unwrap_or_default();

    let wall = started.elapsed();
    let peak_heap = alloc::peak().saturating_sub(heap_before).max(0) as u64;
    let alloc_after = alloc::snapshot();
    let (proc_after, client_after) = (cpu_time(Clock::Process), cpu_time(Clock::Thread));
    let mut latencies: Vec<u64> = lanes.into_iter().flatten().collect();
    latencies.sort_unstable();
    let done = latencies.len() as u64;
    Sample {
        requests: done,
        errors: errors.load(Relaxed) + (requests as u64).saturating_sub(done),
        wall,
        latencies,
        cpu_process: proc_after.saturating_sub(proc_before),
        cpu_client: client_after.saturating_sub(client_before),
        allocs: alloc_after.allocs - alloc_before.allocs,
        bytes: alloc_after.bytes - alloc_before.bytes,
        peak_heap,
        connections: connections() - conns_before,
        max_rss_kib: max_rss_kib(),
    }
}

async fn lane(
    variant: Arc<Variant>,
    next: Arc<AtomicUsize>,
    total: usize,
    mut latencies: Vec<u64>,
    errors: Arc<AtomicU64>,
) -> Vec<u64> {
    while next.fetch_add(1, Relaxed) < total {
        let started = Instant::now();
        if !variant.call().await {
            errors.fetch_add(1, Relaxed);
        }
        latencies.push(started.elapsed().as_nanos() as u64);
    }
    latencies
}

// ===== impl Summary =====

impl Summary {
    /// Medians of per-request figures over `samples` (one per round).
    pub(crate) fn of(variant: &'static str, concurrency: usize, samples: Vec<Sample>) -> Summary {
        let per_req = |f: &dyn Fn(&Sample) -> f64| {
            median(samples.iter().map(|s| f(s) / s.requests.max(1) as f64).collect())
        };
        let of = |f: &dyn Fn(&Sample) -> f64| median(samples.iter().map(f).collect());
        let mut latencies: Vec<u64> = samples.iter().flat_map(|s| s.latencies.iter().copied()).collect();
        latencies.sort_unstable();
        let per_round = samples
            .iter()
            .map(|s| {
                let n = s.requests.max(1) as f64;
                Round {
                    rps: s.requests as f64 / s.wall.as_secs_f64().max(1e-9),
                    rps_cpu: s.requests as f64 / s.cpu_process.as_secs_f64().max(1e-9),
                    p50_us: quantile(&s.latencies, 0.50) / 1e3,
                    cpu_process_us: s.cpu_process.as_secs_f64() * 1e6 / n,
                    cpu_client_us: s.cpu_client.as_secs_f64() * 1e6 / n,
                }
            })
            .collect::<Vec<_>>();
        Summary {
            variant,
            concurrency,
            rounds: samples.len(),
            requests: samples.iter().map(|s| s.requests).sum(),
            errors: samples.iter().map(|s| s.errors).sum(),
            rps: median(per_round.iter().map(|r| r.rps).collect()),
            rps_cpu: median(per_round.iter().map(|r| r.rps_cpu).collect()),
            p50_us: median(per_round.iter().map(|r| r.p50_us).collect()),
            p99_us: of(&|s| quantile(&s.latencies, 0.99) / 1e3),
            cpu_process_us: median(per_round.iter().map(|r| r.cpu_process_us).collect()),
            cpu_client_us: median(per_round.iter().map(|r| r.cpu_client_us).collect()),
            allocs: per_req(&|s| s.allocs as f64),
            bytes: per_req(&|s| s.bytes as f64),
            peak_heap_kib: of(&|s| s.peak_heap as f64 / 1024.0),
            connections: per_req(&|s| s.connections as f64),
            max_rss_mib: samples.iter().map(|s| s.max_rss_kib).max().unwrap_or(0) as f64 / 1024.0,
            latencies,
            per_round,
        }
    }

    /// The median over rounds of `f(self's round, other's round)`: a paired comparison, so
    /// drift between rounds (other work on the machine) cancels out.
    pub(crate) fn paired(&self, other: &Summary, f: impl Fn(&Round, &Round) -> f64) -> f64 {
        median(self.per_round.iter().zip(&other.per_round).map(|(a, b)| f(a, b)).collect())
    }
}

/// The `q` quantile of sorted values (nearest rank), as f64.
pub(crate) fn quantile(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1] as f64
}

/// The median (mean of the middle two for an even count); NaN when empty.
pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantile_is_nearest_rank() {
        let v = [10, 20, 30, 40];
        assert_eq!(quantile(&v, 0.5), 20.0);
        assert_eq!(quantile(&v, 0.99), 40.0);
        assert_eq!(quantile(&v, 0.0), 10.0);
        assert!(quantile(&[], 0.5).is_nan());
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(Vec::new()).is_nan());
    }
}

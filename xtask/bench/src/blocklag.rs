//! failnext-blocklag: how `check()` scales with the number of providers, and what
//! `Monitor::eligible()` costs on one and two threads while checks publish.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use failnext::Endpoint;
use failnext_blocklag::Monitor;

use crate::measure::{median, quantile};
use crate::os::{Clock, cpu_count, cpu_time, pin_this_thread};
use crate::servers::{Behavior, Servers};
use crate::variants::BoxError;

/// How long each provider takes to answer a probe in the scaling test.
pub(crate) const PROBE_DELAY: Duration = Duration::from_millis(20);

/// The provider counts of the scaling test.
pub(crate) const PROVIDERS: [usize; 3] = [1, 32, 128];

/// The ids `eligible()` is asked about, in turn (a power of two: the loop indexes with a mask).
const IDS: [&str; 4] = ["p0", "p1", "p2", "p3"];

/// `check()` durations over one provider count.
#[derive(Debug)]
pub(crate) struct CheckRow {
    pub(crate) providers: usize,
    pub(crate) failed_checks: usize,
    pub(crate) median_ms: f64,
    pub(crate) p99_ms: f64,
    /// The client thread's CPU time per check (median): the part that other work on the
    /// machine can stretch.
    pub(crate) cpu_ms: f64,
    /// Every check's duration, nanoseconds, sorted.
    pub(crate) durations: Vec<u64>,
}

/// `eligible()` cost in one mode.
#[derive(Debug)]
pub(crate) struct EligibleRow {
    pub(crate) mode: &'static str,
    pub(crate) threads: usize,
    pub(crate) calls_per_thread: u64,
    /// Thread CPU time per call (immune to the publisher stealing the core).
    pub(crate) ns_cpu: f64,
    /// Wall time per call.
    pub(crate) ns_wall: f64,
    /// Snapshots published while this mode was measured (median round).
    pub(crate) publications: f64,
}

/// Everything the blocklag part measured.
#[derive(Debug)]
pub(crate) struct Outcome {
    pub(crate) checks: Vec<CheckRow>,
    pub(crate) eligible: Vec<EligibleRow>,
}

/// Runs both parts; `rounds` checks per provider count (interleaved) and eligible rounds.
pub(crate) async fn run(servers: &Servers, rounds: usize, quick: bool) -> Result<Outcome, BoxError> {
    let checks = check_scaling(servers, rounds.max(if quick { 2 } else { 30 })).await?;
    let eligible = eligible_cost(servers, rounds.clamp(3, 7), if quick { 200_000 } else { 10_000_000 })?;
    Ok(Outcome { checks, eligible })
}

async fn check_scaling(servers: &Servers, rounds: usize) -> Result<Vec<CheckRow>, BoxError> {
    let behavior = Behavior::Head { delay: PROBE_DELAY, height: 20_000_000 };
    let mut monitors = Vec::new();
    for n in PROVIDERS {
        let monitor = monitor(servers, n, behavior)?;
        // Warm-up: the probe client opens its connections.
        let _ = monitor.check().await;
        monitors.push(monitor);
    }
    let mut durations = vec![Vec::with_capacity(rounds); PROVIDERS.len()];
    let mut cpu = vec![Vec::with_capacity(rounds); PROVIDERS.len()];
    let mut failed = [0; PROVIDERS.len()];
    for round in 0..rounds {
        for k in 0..monitors.len() {
            let i = (k + round) % monitors.len();
            let (started, cpu_before) = (Instant::now(), cpu_time(Clock::Thread));
            let ok = monitors[i].check().await.is_ok();
            durations[i].push(started.elapsed().as_nanos() as u64);
            cpu[i].push(cpu_time(Clock::Thread).saturating_sub(cpu_before).as_secs_f64() * 1e3);
            failed[i] += usize::from(!ok);
        }
    }
    Ok(PROVIDERS
        .into_iter()
        .zip(durations)
        .zip(failed)
        .zip(cpu)
        .map(|(((providers, mut durations), failed_checks), cpu)| {
            durations.sort_unstable();
            CheckRow {
                providers,
                failed_checks,
                median_ms: quantile(&durations, 0.5) / 1e6,
                p99_ms: quantile(&durations, 0.99) / 1e6,
                cpu_ms: median(cpu),
                durations,
            }
        })
        .collect())
}

fn eligible_cost(servers: &Servers, rounds: usize, calls: u64) -> Result<Vec<EligibleRow>, BoxError> {
    let monitor = monitor(servers, IDS.len(), Behavior::Head { delay: Duration::ZERO, height: 7 })?;
    let publications = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let publisher = {
        let (monitor, publications, stop) = (monitor.clone(), publications.clone(), stop.clone());
        std::thread::Builder::new().name("bench-publisher".into()).spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            rt.block_on(async {
                // The first check publishes before any measurement; later ones only while
                // `publishing` modes run (the idle mode waits for them to stop).
                while !stop.load(Relaxed) {
                    if monitor.check().await.is_ok() {
                        publications.fetch_add(1, Relaxed);
                    }
                }
            });
            Ok::<(), std::io::Error>(())
        })?
    };
    while publications.load(Relaxed) < 3 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut modes: Vec<(&'static str, usize, Vec<[f64; 3]>)> =
        vec![("publishing", 1, Vec::new()), ("publishing", 2, Vec::new())];
    for round in 0..rounds {
        for k in 0..modes.len() {
            let i = (k + round) % modes.len();
            let before = publications.load(Relaxed);
            let (cpu, wall) = spin(&monitor, modes[i].1, calls);
            let published = (publications.load(Relaxed) - before) as f64;
            modes[i].2.push([cpu, wall, published]);
        }
    }
    stop.store(true, Relaxed);
    let _ = publisher.join();
    // With the publisher stopped: the same monitor, nothing else running on the client side.
    let mut idle = Vec::new();
    for _ in 0..rounds {
        let (cpu, wall) = spin(&monitor, 1, calls);
        idle.push([cpu, wall, 0.0]);
    }
    modes.insert(0, ("idle", 1, idle));
    Ok(modes
        .into_iter()
        .map(|(mode, threads, rounds)| {
            let col = |j: usize| median(rounds.iter().map(|r| r[j]).collect());
            EligibleRow {
                mode,
                threads,
                calls_per_thread: calls,
                ns_cpu: col(0),
                ns_wall: col(1),
                publications: col(2),
            }
        })
        .collect())
}

/// `threads` threads call `eligible` `calls` times each; returns the mean over threads of
/// (thread CPU ns per call, wall ns per call).
fn spin(monitor: &Monitor, threads: usize, calls: u64) -> (f64, f64) {
    let per_thread: Vec<(f64, f64)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    // One core each: the two-thread case must really run in parallel.
                    pin_this_thread(Some(t % cpu_count()));
                    let cpu = cpu_time(Clock::Thread);
                    let started = Instant::now();
                    // Asked the way failnext asks: with clones of the configured ids.
                    let ids: Vec<failnext::EndpointId> =
                        monitor.endpoints().iter().map(|ep| ep.id().clone()).collect();
                    let mut eligible = 0u64;
                    for i in 0..calls {
                        let id = ids[(i as usize + t) & (IDS.len() - 1)].as_str();
                        eligible += u64::from(monitor.eligible(std::hint::black_box(id)));
                    }
                    std::hint::black_box(eligible);
                    let wall = started.elapsed().as_nanos() as f64;
                    let cpu = cpu_time(Clock::Thread).saturating_sub(cpu).as_nanos() as f64;
                    (cpu / calls as f64, wall / calls as f64)
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let n = per_thread.len().max(1) as f64;
    (per_thread.iter().map(|p| p.0).sum::<f64>() / n, per_thread.iter().map(|p| p.1).sum::<f64>() / n)
}

fn monitor(servers: &Servers, n: usize, behavior: Behavior) -> Result<Monitor, BoxError> {
    let mut endpoints = Vec::with_capacity(n);
    for i in 0..n {
        endpoints.push(Endpoint::new(id(i), servers.spawn(behavior)?.url));
    }
    Ok(Monitor::builder(endpoints).max_lag(2).build()?)
}

fn id(i: usize) -> String {
    format!("p{i}")
}

//! One run per scenario and contender: fresh providers and client, reads from a few lanes in
//! an open loop, and the figures they give.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use alloy::primitives::U64;
use alloy::rpc::client::RpcClient;
use failnext_loopback::Refused;

use super::contender::contender;
use super::provider::{Act, Provider, Providers, serve};
use super::scenario::{
    CALL_LIMIT, FAULTS, Fault, GAP, HEAD, LANES, Peer, RUN_LIMIT, Row, SLOW_BASE, SLOW_PRIMARY,
};
use crate::measure::quantile;
use crate::os::{Clock, cpu_time};
use crate::servers::Servers;
use crate::variants::BoxError;

/// Runs every scenario for every contender.
pub(crate) async fn run(servers: &Servers, quick: bool) -> Result<Vec<Row>, BoxError> {
    let mut rows = Vec::new();
    for fault in FAULTS {
        for peer in fault.peers() {
            rows.push(run_one(servers, fault, peer, fault.reads(quick)).await?);
        }
    }
    Ok(rows)
}

async fn run_one(servers: &Servers, fault: Fault, peer: Peer, reads: usize) -> Result<Row, BoxError> {
    let started = Instant::now();
    let base = if fault == Fault::Slow { SLOW_BASE } else { Duration::ZERO };
    let primary = match fault {
        Fault::Refused => Provider::Refusing(Refused::new()),
        Fault::Slow => serve(servers, Act::Good(SLOW_PRIMARY), started)?,
        Fault::Healthy => serve(servers, Act::Good(Duration::ZERO), started)?,
        Fault::Unavailable => serve(servers, Act::Unavailable, started)?,
        Fault::RateLimited => serve(servers, Act::RateLimited, started)?,
        Fault::Lagging => serve(servers, Act::Lagging, started)?,
        Fault::Flapping => serve(servers, Act::Flapping, started)?,
    };
    let providers = Providers {
        primary,
        good: [serve(servers, Act::Good(base), started)?, serve(servers, Act::Good(base), started)?],
    };
    let urls = [providers.primary.url(), providers.good[0].url(), providers.good[1].url()];
    let attempts = Arc::new(AtomicU64::new(0));
    let trials = Arc::new(AtomicU64::new(0));
    let (client, monitor) = contender(peer, &urls, &attempts, &trials).await?;
    let all = |p: &Providers| p.primary.requests() + p.good.iter().map(Provider::requests).sum::<u64>();
    let ((probes_before, faulty_before), all_before) = (providers.primary.counts(), all(&providers));
    let cpu_before = cpu_time(Clock::Thread);

    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..LANES {
        tasks.spawn(lane(client.clone(), next.clone(), reads, started + RUN_LIMIT));
    }
    let mut answers: Vec<(u64, bool)> = Vec::with_capacity(reads);
    while let Some(done) = tasks.join_next().await {
        answers.extend(done?);
    }

    let cpu = cpu_time(Clock::Thread).saturating_sub(cpu_before);
    // The paired transport owns the monitor's schedule: dropping the client stops its probes.
    drop(client);
    let (probes, faulty) = providers.primary.counts();
    let probes = probes - probes_before;
    let to_bad = if fault == Fault::Refused { attempts.load(Relaxed) } else { faulty - faulty_before };
    let mut latencies: Vec<u64> = answers.iter().map(|a| a.0).collect();
    latencies.sort_unstable();
    Ok(Row {
        fault,
        peer,
        reads: answers.len() as u64,
        correct: answers.iter().filter(|a| a.1).count() as u64,
        p50_ms: quantile(&latencies, 0.50) / 1e6,
        p99_ms: quantile(&latencies, 0.99) / 1e6,
        to_bad,
        probes: monitor.map(|_| probes),
        trials: trials.load(Relaxed),
        total_requests: all(&providers) - all_before,
        cpu_us: cpu.as_secs_f64() * 1e6 / answers.len().max(1) as f64,
    })
}

/// One task's reads: `(latency ns, correct)`.
async fn lane(client: RpcClient, next: Arc<AtomicUsize>, total: usize, until: Instant) -> Vec<(u64, bool)> {
    let mut out = Vec::new();
    let mut tick = tokio::time::interval(GAP);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while Instant::now() < until && next.fetch_add(1, Relaxed) < total {
        tick.tick().await;
        let started = Instant::now();
        let call = client.request_noparams::<U64>("eth_blockNumber");
        let correct =
            matches!(tokio::time::timeout(CALL_LIMIT, call).await, Ok(Ok(n)) if n == U64::from(HEAD));
        out.push((started.elapsed().as_nanos() as u64, correct));
    }
    out
}

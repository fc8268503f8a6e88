//! One phase of a soak: the workers sending requests with faults, checks and observers
//! running, the simulator's counts against the requests, and waiting for resources to settle.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use failnext_blocklag::Monitor;
use failnext_examples::sim::{Behaviour, Provider};
use failnext_loopback::resources::Usage;

use crate::soak::Ctx;
use crate::soak::checks::{self, Check, Tally, Violations};
use crate::soak::exchange::{WRITE_METHOD, run_request};
use crate::soak::schedule::{self, RequestSpec};
use crate::soak::watch::{Background, Observed, Settings};

/// What one phase produced.
pub(crate) struct PhaseResult {
    violations: Violations,
    tally: Tally,
    seen: Observed,
    pub(crate) sim: SimCounts,
}

/// Calls of each soak method the simulated providers received, summed over providers.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SimCounts {
    pub(crate) reads: u64,
    pub(crate) writes: u64,
    pub(crate) streams: u64,
}

pub(crate) fn absorb(
    p: PhaseResult,
    v: &mut Violations,
    t: &mut Tally,
    seen: &mut Observed,
    sim: &mut SimCounts,
) {
    v.merge(p.violations);
    t.merge(p.tally);
    seen.merge(p.seen);
    sim.reads += p.sim.reads;
    sim.writes += p.sim.writes;
    sim.streams += p.sim.streams;
}

/// One phase: `count` requests from id `first`, with faults, checks and observers running.
pub(crate) async fn phase(
    ctx: &Arc<Ctx>,
    settings: &Settings,
    providers: &[Provider],
    monitor: &Monitor,
    first: u64,
    count: u64,
    concurrency: usize,
) -> PhaseResult {
    // Every provider starts healthy, with a provider's usual latency.
    let mut rng = schedule::Rng::derive(ctx.seed ^ first, 0x1A7E);
    for p in providers {
        p.reset_counts();
        // A failure to rebind after `Down` leaves the provider down: a fault like any other.
        let _ = p.set(Behaviour::Slow(rng.millis(10, 120))).await;
    }
    let background = Background::start(settings, providers, monitor, first);
    let next = Arc::new(AtomicU64::new(first));
    let end = first + count;
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..concurrency.max(1) {
        let (ctx, next) = (ctx.clone(), next.clone());
        workers.spawn(async move {
            let n = ctx.endpoints.len();
            let mut v = Violations::default();
            let mut t = Tally::default();
            loop {
                let id = next.fetch_add(1, Ordering::Relaxed);
                if id >= end {
                    break;
                }
                let spec = RequestSpec::draw(ctx.seed, id, n, ctx.cancel_window, ctx.think_ms);
                if !spec.think.is_zero() {
                    tokio::time::sleep(spec.think).await;
                }
                let finished = run_request(&ctx, spec).await;
                checks::analyse(&finished, &ctx.endpoints.ids, ctx.limits, &mut v, &mut t);
            }
            (v, t)
        });
    }
    let mut violations = Violations::default();
    let mut tally = Tally::default();
    while let Some(joined) = workers.join_next().await {
        violations.checked(Check::Panics, 1);
        match joined {
            Ok((v, t)) => {
                violations.merge(v);
                tally.merge(t);
            }
            Err(e) => violations.add(Check::Panics, format!("worker task: {e}")),
        }
    }
    let seen = background.stop(providers, &mut violations).await;
    let sum = |method: &str| providers.iter().map(|p| p.count(method)).sum::<u64>();
    let sim = SimCounts { reads: sum("eth_call"), writes: sum(WRITE_METHOD), streams: sum("eth_getBalance") };
    judge_sim_counts(&sim, &tally, &mut violations);
    PhaseResult { violations, tally, seen, sim }
}

/// What providers received lies between what got an HTTP response and what was dispatched;
/// a write or a streaming body was dispatched at most once per request.
fn judge_sim_counts(sim: &SimCounts, t: &Tally, v: &mut Violations) {
    let rows = [
        ("writes", t.write_responses, sim.writes, t.write_dispatches, Some(t.write_requests)),
        ("streams", t.stream_responses, sim.streams, t.stream_dispatches, Some(t.stream_requests)),
        ("reads", t.read_responses, sim.reads, t.read_dispatches, None),
    ];
    for (what, responses, received, dispatched, requests) in rows {
        let ok = responses <= received && received <= dispatched && requests.is_none_or(|r| dispatched <= r);
        v.expect(Check::SimCounts, ok, || {
            format!(
                "{what}: {responses} answered <= {received} received <= {dispatched} dispatched <= {requests:?} requests fails"
            )
        });
    }
}

/// Waits until connections (and tasks) are back to `target` (to zero connections and a steady
/// task count when there is no target yet), then reads the usage.
pub(crate) async fn settle(ports: &[u16], target: Option<Usage>, limit: Duration) -> Usage {
    let deadline = Instant::now() + limit;
    let mut previous: Option<Usage> = None;
    let mut steady = 0;
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = Usage::now(ports);
        let done = match target {
            Some(t) => now.connections == t.connections && now.tasks == t.tasks,
            None => {
                let idle = now.connections.is_none_or(|c| c.client == 0 && c.server == 0);
                steady = if previous.is_some_and(|p| p.tasks == now.tasks) { steady + 1 } else { 0 };
                idle && steady >= 5
            }
        };
        previous = Some(now);
        if done || Instant::now() >= deadline {
            return now;
        }
    }
}

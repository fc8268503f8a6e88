//! Continuous monitoring: check block heights on one interval, read on another, and shut
//! down cleanly on Ctrl-C.
//!
//! A bot runs the monitor's `check()` from a task of its own (there is no background polling)
//! and reads through failnext from another. Each operation has its own timeout, so a hanging
//! provider cannot stall either loop. Against the simulator the checks run every 500 ms and
//! the reads every 200 ms, and midway the primary falls behind: the next check makes it
//! ineligible and the reads move to the backup. Against real providers the intervals are
//! 15 s and 10 s.
//!
//! It stops on Ctrl-C, or after `--seconds N` (4 by default against the simulator; against
//! real providers it runs until Ctrl-C unless given `--seconds`), lets the operations in
//! flight finish, and exits with a non-zero status if a read failed while an eligible,
//! healthy provider existed.
//!
//! Run it with `cargo run -p failnext-examples --example blocklag-continuous -- --seconds 4`.
#![allow(clippy::print_stdout, reason = "an example shows what happened on stdout")]

use std::error::Error;
use std::time::Duration;

use failnext::{EndpointId, Failover, RequestBuilderExt};
use failnext_blocklag::Monitor;
// Unpublished helpers (simulator, call/send/ensure): see "Copying an example" in examples/README.md.
use failnext_examples::monitoring::{answers_reads, eligible_now, probe_client};
use failnext_examples::sim::{Behaviour, Provider};
use failnext_examples::{Network, call, causes, ensure, send};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use serde_json::json;
use tokio::sync::watch;
use tokio::time::{Instant, MissedTickBehavior};

/// A provider more than this many blocks behind the highest one is not used.
const MAX_LAG: u64 = 3;

/// How often and how long each operation may take.
#[derive(Debug, Clone, Copy)]
struct Schedule {
    check_every: Duration,
    /// Bounds one whole check (its probes run at once, each bounded by `probe_timeout`).
    check_timeout: Duration,
    probe_timeout: Duration,
    read_every: Duration,
    /// Bounds one whole read, failovers included.
    read_timeout: Duration,
    /// Bounds each attempt of a read, so a hanging provider leaves time for the next.
    attempt_timeout: Duration,
    /// `None`: until Ctrl-C.
    run_for: Option<Duration>,
}

impl Schedule {
    fn new(simulated: bool, seconds: Option<Duration>) -> Schedule {
        if simulated {
            Schedule {
                check_every: Duration::from_millis(500),
                check_timeout: Duration::from_millis(450),
                probe_timeout: Duration::from_millis(400),
                read_every: Duration::from_millis(200),
                read_timeout: Duration::from_secs(2),
                attempt_timeout: Duration::from_millis(800),
                run_for: Some(seconds.unwrap_or(Duration::from_secs(4))),
            }
        } else {
            // The reference's intervals for real providers.
            Schedule {
                check_every: Duration::from_secs(15),
                check_timeout: Duration::from_secs(10),
                probe_timeout: Duration::from_secs(5),
                read_every: Duration::from_secs(10),
                read_timeout: Duration::from_secs(12),
                attempt_timeout: Duration::from_secs(5),
                run_for: seconds,
            }
        }
    }
}

/// What the read loop saw.
#[derive(Debug, Default)]
struct Reads {
    /// Who served each successful read, with the time it started.
    served: Vec<(Duration, String)>,
    failed: u64,
    /// Failed reads while a provider was eligible (by the monitor) and healthy (by the
    /// simulator, before and after the read).
    failed_while_usable: u64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let seconds = seconds_arg()?;
    // Simulator set-up: replace `net` with your providers (see examples/README.md).
    let net = Network::from_env().await?;
    println!("{net}");
    // Simulator set-up: short intervals against the simulator, 15 s and 10 s against yours.
    let schedule = Schedule::new(net.sim().is_some(), seconds);
    print_schedule(&schedule);

    let monitor = Monitor::builder(net.endpoints())
        .max_lag(MAX_LAG)
        .probe_timeout(schedule.probe_timeout)
        // Simulator set-up: no proxy on loopback; for your providers the default client will do.
        .client(probe_client(net.sim().is_some())?)
        .build()?;
    let failover = Failover::builder(net.endpoints())
        .eligible(monitor.clone())
        .attempt_timeout(schedule.attempt_timeout)
        .build()?;
    let client = ClientBuilder::new(net.http_client()?).with(failover).build();

    let started = Instant::now();
    let (stop, stopped) = watch::channel(false);
    let checker = tokio::spawn(check_loop(monitor.clone(), schedule, started, stopped.clone()));
    // Simulator only: the providers' health, for the check that no read failed needlessly.
    let providers: Vec<Provider> =
        net.sim().map(|sim| vec![sim.primary.clone(), sim.backup.clone()]).unwrap_or_default();
    let reader = tokio::spawn(read_loop(
        client,
        net.url().to_owned(),
        monitor,
        providers,
        schedule,
        started,
        stopped.clone(),
    ));
    // Simulator only: midway through a bounded run, the primary falls behind.
    let fault = match (net.sim(), schedule.run_for) {
        (Some(sim), Some(run_for)) => Some(tokio::spawn(lag_midway(
            sim.primary.clone(),
            started,
            run_for / 2 + schedule.check_every / 4,
            stopped,
        ))),
        _ => None,
    };

    let interrupted = until_stopped(schedule, started).await?;
    // Clean shutdown: no new operation starts, and those in flight finish (each is bounded
    // by its timeout) before the summary.
    stop.send(true)?;
    checker.await?;
    let reads = reader.await?;
    let lagged_at = match fault {
        Some(task) => task.await?,
        None => None,
    };

    summarise(&reads, net.sim().is_some(), interrupted, lagged_at)
}

/// Prints the schedule: how often the monitor checks and reads are sent, and when the run ends.
fn print_schedule(schedule: &Schedule) {
    println!(
        "checks every {:?} (timeout {:?}), reads every {:?} (timeout {:?}); {}",
        schedule.check_every,
        schedule.check_timeout,
        schedule.read_every,
        schedule.read_timeout,
        match schedule.run_for {
            Some(d) => format!("stops after {d:?} or on Ctrl-C"),
            None => "press Ctrl-C to stop".to_owned(),
        }
    );
}

/// Waits for the end of a bounded run or for Ctrl-C; `true` when interrupted.
async fn until_stopped(schedule: Schedule, started: Instant) -> Result<bool, Box<dyn Error>> {
    let bound = async {
        match schedule.run_for {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    let interrupted = tokio::select! {
        signal = tokio::signal::ctrl_c() => {
            signal?;
            println!("{} Ctrl-C: stopping", stamp(started));
            true
        }
        () = bound => {
            println!("{} time is up: stopping", stamp(started));
            false
        }
    };
    Ok(interrupted)
}

/// Prints who served the reads and, against the simulator (`simulated`), checks what happened:
/// no read failed needlessly and, when the run was not interrupted, the backup took over once
/// the primary fell behind (at `lagged_at`).
fn summarise(
    reads: &Reads,
    simulated: bool,
    interrupted: bool,
    lagged_at: Option<Duration>,
) -> Result<(), Box<dyn Error>> {
    let count = |id: &str| reads.served.iter().filter(|(_, by)| by == id).count();
    println!(
        "reads: {} served (primary {}, backup {}), {} failed",
        reads.served.len(),
        count("primary"),
        count("backup"),
        reads.failed
    );
    // Simulator only: checks what happened.
    if simulated {
        println!("reads failed while an eligible healthy provider existed: {}", reads.failed_while_usable);
        ensure(reads.failed_while_usable == 0, "no read failed while an eligible healthy provider existed")?;
        if !interrupted {
            let lagged_at = lagged_at.ok_or("the primary never fell behind")?;
            let before = reads.served.iter().any(|(at, by)| *at < lagged_at && by == "primary");
            let after = reads.served.iter().any(|(at, by)| *at > lagged_at && by == "backup");
            ensure(before, "the primary served reads before it fell behind")?;
            ensure(after, "the backup served reads after the primary fell behind")?;
        }
    }
    Ok(())
}

/// Checks every provider's height on its interval, each check bounded by its timeout.
async fn check_loop(monitor: Monitor, schedule: Schedule, started: Instant, mut stop: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(schedule.check_every);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            biased;
            _ = stop.changed() => return,
            _ = tick.tick() => {}
        }
        match tokio::time::timeout(schedule.check_timeout, monitor.check()).await {
            Err(_) => println!("{} check timed out; previous eligibility kept", stamp(started)),
            // A partial failure still publishes; the line below shows the result.
            Ok(Err(e)) if !e.published() => println!("{} check failed: {e}", stamp(started)),
            Ok(_) => {}
        }
        let Some(snapshot) = monitor.snapshot() else { continue };
        let line: Vec<String> = snapshot
            .entries()
            .iter()
            .map(|e| {
                let height = e.height().map_or_else(|| "-".to_owned(), |h| h.to_string());
                format!("{} {height} eligible: {}", e.endpoint(), e.is_eligible())
            })
            .collect();
        println!("{} check: {}", stamp(started), line.join(", "));
    }
}

/// Reads on its interval, each read bounded by its timeout, and says when the provider
/// serving the reads changes.
async fn read_loop(
    client: ClientWithMiddleware,
    url: String,
    monitor: Monitor,
    sim: Vec<Provider>,
    schedule: Schedule,
    started: Instant,
    mut stop: watch::Receiver<bool>,
) -> Reads {
    let mut tick = tokio::time::interval(schedule.read_every);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut reads = Reads::default();
    loop {
        tokio::select! {
            biased;
            _ = stop.changed() => return reads,
            _ = tick.tick() => {}
        }
        let at = started.elapsed();
        let usable_before = usable(&monitor, &sim, schedule.attempt_timeout);
        let read = call(&client, &url, "eth_blockNumber", json!([])).allow_failover();
        let outcome = tokio::time::timeout(schedule.read_timeout, send(read)).await;
        let failure = match outcome {
            Ok(Ok(reply)) if reply.quantity().is_some() => {
                let by = reply.served_by().to_owned();
                if reads.served.last().is_none_or(|(_, last)| *last != by) {
                    println!("{} served by: {by}", stamp(started));
                }
                reads.served.push((at, by));
                continue;
            }
            Ok(Ok(reply)) => {
                format!("{} answered HTTP {} without a block number", reply.served_by(), reply.status())
            }
            Ok(Err(e)) => causes(&e).to_string(),
            Err(_) => format!("no answer within {:?}", schedule.read_timeout),
        };
        reads.failed += 1;
        println!("{} read failed: {failure}", stamp(started));
        let usable_after = usable(&monitor, &sim, schedule.attempt_timeout);
        if usable_before.iter().any(|id| usable_after.contains(id)) {
            reads.failed_while_usable += 1;
            println!("{} ... while an eligible healthy provider existed", stamp(started));
        }
    }
}

/// The providers eligible by the monitor's latest snapshot and healthy by the simulator's
/// account; empty against real providers, whose health the example cannot know.
fn usable(monitor: &Monitor, sim: &[Provider], timeout: Duration) -> Vec<EndpointId> {
    let eligible = eligible_now(monitor);
    sim.iter()
        .filter(|p| answers_reads(&p.behaviour(), timeout))
        .filter_map(|p| eligible.iter().find(|id| id.as_str() == p.id()).cloned())
        .collect()
}

/// Makes the simulated primary fall 10 blocks behind `after` the start; returns when it did,
/// from the start, or `None` if the run stopped first.
async fn lag_midway(
    primary: Provider,
    started: Instant,
    after: Duration,
    mut stop: watch::Receiver<bool>,
) -> Option<Duration> {
    tokio::select! {
        biased;
        _ = stop.changed() => return None,
        () = tokio::time::sleep_until(started + after) => {}
    }
    match primary.set(Behaviour::Lagging(10)).await {
        Ok(()) => {
            println!("{} >> the primary falls 10 blocks behind", stamp(started));
            Some(started.elapsed())
        }
        Err(e) => {
            println!("could not make the primary lag: {e}");
            None
        }
    }
}

fn stamp(started: Instant) -> String {
    format!("[{:4.1}s]", started.elapsed().as_secs_f64())
}

/// `--seconds N`, the only argument.
fn seconds_arg() -> Result<Option<Duration>, Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let mut seconds = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--seconds" => {
                let value = args.next().ok_or("--seconds needs a number")?;
                let n: f64 = value.parse().map_err(|_| format!("--seconds: not a number: {value}"))?;
                if !(n.is_finite() && n > 0.0) {
                    return Err(format!("--seconds: must be positive: {value}").into());
                }
                seconds = Some(Duration::from_secs_f64(n));
            }
            other => return Err(format!("unknown argument {other}; usage: [--seconds N]").into()),
        }
    }
    Ok(seconds)
}

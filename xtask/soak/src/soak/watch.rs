//! Background work of a soak phase: the fault schedule, the monitor's check loop, snapshot
//! observers (an async task and a plain thread) and a resource sampler.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use failnext_blocklag::{Monitor, ProbeError, Snapshot};
use failnext_examples::sim::{Behaviour, Provider};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::soak::checks::{Check, Violations};
use crate::soak::schedule::{FaultKind, FaultSchedule, Rng};
use failnext_loopback::resources::{Connections, Usage};

/// A call of `Monitor::eligible` slower than this is counted as slow.
pub(crate) const SLOW_ELIGIBLE: Duration = Duration::from_millis(50);
/// More slow calls than this in a phase is blocking, not scheduling noise.
const MAX_SLOW_ELIGIBLE: u64 = 10;

/// What the background work of one phase saw.
#[derive(Debug, Default)]
pub(crate) struct Observed {
    pub(crate) faults: BTreeMap<FaultKind, u64>,
    pub(crate) rebind_failures: u64,
    pub(crate) checks_ok: u64,
    pub(crate) checks_partial: u64,
    pub(crate) checks_unpublished: u64,
    pub(crate) checks_cancelled: u64,
    pub(crate) check_max: Duration,
    pub(crate) probe_errors: BTreeMap<&'static str, u64>,
    pub(crate) snapshot_reads: u64,
    pub(crate) snapshots_seen: u64,
    pub(crate) eligible_calls: u64,
    pub(crate) eligible_max: Duration,
    pub(crate) eligible_slow: u64,
    pub(crate) peak_tasks: usize,
    pub(crate) peak_connections: Connections,
    pub(crate) peak_rss: u64,
    /// RSS once a second during the phase.
    pub(crate) rss_timeline: Vec<u64>,
}

impl Observed {
    pub(crate) fn merge(&mut self, o: Observed) {
        for (k, v) in o.faults {
            *self.faults.entry(k).or_default() += v;
        }
        for (k, v) in o.probe_errors {
            *self.probe_errors.entry(k).or_default() += v;
        }
        self.rebind_failures += o.rebind_failures;
        self.checks_ok += o.checks_ok;
        self.checks_partial += o.checks_partial;
        self.checks_unpublished += o.checks_unpublished;
        self.checks_cancelled += o.checks_cancelled;
        self.check_max = self.check_max.max(o.check_max);
        self.snapshot_reads += o.snapshot_reads;
        self.snapshots_seen += o.snapshots_seen;
        self.eligible_calls += o.eligible_calls;
        self.eligible_max = self.eligible_max.max(o.eligible_max);
        self.eligible_slow += o.eligible_slow;
        self.peak_tasks = self.peak_tasks.max(o.peak_tasks);
        self.peak_connections.client = self.peak_connections.client.max(o.peak_connections.client);
        self.peak_connections.server = self.peak_connections.server.max(o.peak_connections.server);
        self.peak_rss = self.peak_rss.max(o.peak_rss);
        // The last phase's timeline is the one reported (the main phase).
        if !o.rss_timeline.is_empty() {
            self.rss_timeline = o.rss_timeline;
        }
    }
}

/// Settings of the background work.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    pub(crate) seed: u64,
    pub(crate) attempt_timeout: Duration,
    pub(crate) probe_timeout: Duration,
    pub(crate) timing_slack: Duration,
    pub(crate) check_interval: Duration,
    pub(crate) fault_wait_ms: (u64, u64),
    pub(crate) ports: Vec<u16>,
}

/// The running background work; [`Background::stop`] ends it and collects what it saw.
#[derive(Debug)]
pub(crate) struct Background {
    stop: watch::Sender<bool>,
    thread_stop: Arc<AtomicBool>,
    faults: JoinHandle<(BTreeMap<FaultKind, u64>, u64)>,
    checker: JoinHandle<(Observed, Violations)>,
    observer: JoinHandle<(u64, u64, Violations)>,
    sampler: JoinHandle<(usize, Connections, u64, Vec<u64>)>,
    reader: thread::JoinHandle<(Observed, Violations)>,
}

impl Background {
    pub(crate) fn start(
        settings: &Settings,
        providers: &[Provider],
        monitor: &Monitor,
        salt: u64,
    ) -> Background {
        let (stop, stopped) = watch::channel(false);
        let thread_stop = Arc::new(AtomicBool::new(false));
        let schedule = FaultSchedule::new(
            settings.seed ^ salt,
            providers.len(),
            settings.attempt_timeout,
            settings.fault_wait_ms,
        );
        let faults = tokio::spawn(run_faults(schedule, providers.to_vec(), stopped.clone()));
        let checker = tokio::spawn(run_checks(
            monitor.clone(),
            Rng::derive(settings.seed ^ salt, 0xC4EC),
            settings.check_interval,
            (settings.probe_timeout, settings.timing_slack),
            stopped.clone(),
        ));
        let observer = tokio::spawn(observe(monitor.clone(), stopped.clone()));
        let sampler = tokio::spawn(sample(settings.ports.clone(), stopped));
        let reader = {
            let monitor = monitor.clone();
            let stop = thread_stop.clone();
            let probe_timeout = settings.probe_timeout;
            thread::spawn(move || read_eligibility(&monitor, &stop, probe_timeout))
        };
        Background { stop, thread_stop, faults, checker, observer, sampler, reader }
    }

    /// Stops everything, waits for it, and puts every provider back to healthy.
    pub(crate) async fn stop(self, providers: &[Provider], v: &mut Violations) -> Observed {
        let _ = self.stop.send(true);
        self.thread_stop.store(true, Ordering::Relaxed);
        let mut seen = Observed::default();
        match self.faults.await {
            Ok((faults, rebind)) => {
                seen.faults = faults;
                seen.rebind_failures = rebind;
            }
            Err(e) => v.add(Check::Panics, format!("fault schedule task: {e}")),
        }
        match self.checker.await {
            Ok((checks, found)) => {
                seen.merge(checks);
                v.merge(found);
            }
            Err(e) => v.add(Check::Panics, format!("monitor check task: {e}")),
        }
        match self.observer.await {
            Ok((reads, distinct, found)) => {
                seen.snapshot_reads += reads;
                seen.snapshots_seen += distinct;
                v.merge(found);
            }
            Err(e) => v.add(Check::Panics, format!("snapshot observer task: {e}")),
        }
        match self.sampler.await {
            Ok((tasks, conns, rss, timeline)) => {
                seen.peak_tasks = tasks;
                seen.peak_connections = conns;
                seen.peak_rss = rss;
                seen.rss_timeline = timeline;
            }
            Err(e) => v.add(Check::Panics, format!("resource sampler task: {e}")),
        }
        let reader = tokio::task::spawn_blocking(move || self.reader.join()).await;
        match reader {
            Ok(Ok((read, found))) => {
                seen.merge(read);
                v.merge(found);
            }
            _ => v.add(Check::Panics, "eligibility reader thread panicked"),
        }
        for p in providers {
            // Binding the port again can fail in a rare race (see `Provider::set`); try a
            // few times, then report it as a provider left down.
            for _ in 0..10 {
                if p.set(Behaviour::Healthy).await.is_ok() {
                    break;
                }
                seen.rebind_failures += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        seen
    }
}

async fn stopped_or(stop: &mut watch::Receiver<bool>, wait: Duration) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(wait) => false,
        _ = stop.wait_for(|s| *s) => true,
    }
}

async fn run_faults(
    mut schedule: FaultSchedule,
    providers: Vec<Provider>,
    mut stop: watch::Receiver<bool>,
) -> (BTreeMap<FaultKind, u64>, u64) {
    let mut counts = BTreeMap::new();
    let mut rebind_failures = 0;
    loop {
        let step = schedule.next_step();
        if stopped_or(&mut stop, step.wait).await {
            break;
        }
        let Some(provider) = providers.get(step.provider) else { continue };
        if provider.set(step.behaviour).await.is_err() {
            rebind_failures += 1;
        }
        *counts.entry(step.kind).or_default() += 1;
    }
    (counts, rebind_failures)
}

fn same(a: &Option<Arc<Snapshot>>, b: &Option<Arc<Snapshot>>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        _ => false,
    }
}

fn taken(s: &Option<Arc<Snapshot>>) -> Option<SystemTime> {
    s.as_ref().map(|s| s.taken_at())
}

fn probe_error_label(e: &ProbeError) -> &'static str {
    match e {
        ProbeError::Transport(_) => "transport",
        ProbeError::Timeout => "timeout",
        ProbeError::Status(_) => "http status",
        ProbeError::BodyTooLarge => "body too large",
        ProbeError::InvalidJson => "invalid json",
        ProbeError::NotJsonRpc => "not json-rpc",
        ProbeError::IdMismatch => "id mismatch",
        ProbeError::JsonRpc { .. } => "json-rpc error",
        ProbeError::InvalidQuantity(_) => "invalid quantity",
        ProbeError::WrongChain { .. } => "wrong chain",
        _ => "other",
    }
}

/// The monitor's check loop. Checks the failure table of `Monitor::check`: a published check
/// leaves a newer snapshot, an unpublished or dropped one leaves the previous one; and a check
/// that runs to the end is bounded by the probe timeout.
async fn run_checks(
    monitor: Monitor,
    mut rng: Rng,
    interval: Duration,
    (probe_timeout, slack): (Duration, Duration),
    mut stop: watch::Receiver<bool>,
) -> (Observed, Violations) {
    let mut seen = Observed::default();
    let mut v = Violations::default();
    // Probes run concurrently, each bounded by the probe timeout.
    let bound = probe_timeout + slack;
    let window = u64::try_from(probe_timeout.as_millis()).unwrap_or(1);
    loop {
        if stopped_or(&mut stop, interval).await {
            break;
        }
        let before = monitor.snapshot();
        // One check in ten is dropped at a random point.
        let cancel = rng.chance(100).then(|| rng.millis(0, window));
        let started = Instant::now();
        let result = match cancel {
            Some(deadline) => tokio::time::timeout(deadline, monitor.check()).await.ok(),
            None => Some(monitor.check().await),
        };
        let elapsed = started.elapsed();
        let after = monitor.snapshot();
        let published = match &result {
            None => {
                seen.checks_cancelled += 1;
                false
            }
            Some(Ok(())) => {
                seen.checks_ok += 1;
                true
            }
            Some(Err(e)) => {
                for failure in e.failures() {
                    *seen.probe_errors.entry(probe_error_label(failure.error())).or_default() += 1;
                }
                if e.published() {
                    seen.checks_partial += 1;
                } else {
                    seen.checks_unpublished += 1;
                }
                e.published()
            }
        };
        if result.is_some() {
            seen.check_max = seen.check_max.max(elapsed);
            v.expect(Check::MonitorChecks, elapsed <= bound, || {
                format!("a check took {elapsed:?}, beyond probe timeout + slack ({bound:?})")
            });
        }
        if published {
            let newer = !same(&before, &after) && taken(&after) >= taken(&before);
            v.expect(Check::MonitorChecks, newer, || {
                "a published check did not leave a newer snapshot".to_owned()
            });
        } else {
            v.expect(Check::MonitorChecks, same(&before, &after), || {
                format!("an unpublished check ({result:?}) replaced the snapshot")
            });
        }
        v.expect(Check::SnapshotMonotonic, taken(&after) >= taken(&before), || {
            "check loop saw the snapshot go back in time".to_owned()
        });
    }
    (seen, v)
}

/// An async observer on the runtime: the snapshot it loads never goes back in time.
async fn observe(monitor: Monitor, mut stop: watch::Receiver<bool>) -> (u64, u64, Violations) {
    let mut v = Violations::default();
    let mut last: Option<Arc<Snapshot>> = None;
    let (mut reads, mut distinct) = (0, 0);
    loop {
        if stopped_or(&mut stop, Duration::from_millis(1)).await {
            break;
        }
        let now = monitor.snapshot();
        reads += 1;
        if !same(&now, &last) {
            distinct += 1;
        }
        v.expect(Check::SnapshotMonotonic, taken(&now) >= taken(&last), || {
            "async observer saw the snapshot go back in time".to_owned()
        });
        last = now;
    }
    (reads, distinct, v)
}

/// A plain thread hammering `eligible()` and `snapshot()`: every call is timed, and the
/// snapshot it sees never goes back in time.
fn read_eligibility(monitor: &Monitor, stop: &AtomicBool, probe_timeout: Duration) -> (Observed, Violations) {
    let mut seen = Observed::default();
    let mut v = Violations::default();
    let ids: Vec<String> = monitor.endpoints().iter().map(|e| e.id().as_str().to_owned()).collect();
    let mut last: Option<Arc<Snapshot>> = None;
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..16 {
            for id in &ids {
                let started = Instant::now();
                std::hint::black_box(monitor.eligible(id));
                let took = started.elapsed();
                seen.eligible_calls += 1;
                seen.eligible_max = seen.eligible_max.max(took);
                if took > SLOW_ELIGIBLE {
                    seen.eligible_slow += 1;
                }
            }
        }
        let now = monitor.snapshot();
        seen.snapshot_reads += 1;
        v.expect(Check::SnapshotMonotonic, taken(&now) >= taken(&last), || {
            "reader thread saw the snapshot go back in time".to_owned()
        });
        last = now;
        thread::sleep(Duration::from_micros(500));
    }
    // A reader that waited for checks would be slow once per slow check, hundreds of times a
    // run, and as long as a probe timeout; a thread preempted on a loaded machine is late
    // rarely, and briefly.
    let blocked = seen.eligible_max >= probe_timeout.max(Duration::from_secs(1))
        || seen.eligible_slow > MAX_SLOW_ELIGIBLE;
    v.expect(Check::EligibleBlocking, !blocked, || {
        format!(
            "eligible(): max {:?}, {} of {} calls over {SLOW_ELIGIBLE:?}",
            seen.eligible_max, seen.eligible_slow, seen.eligible_calls
        )
    });
    (seen, v)
}

/// Samples the process's resources while the phase runs, keeping the peaks.
async fn sample(ports: Vec<u16>, mut stop: watch::Receiver<bool>) -> (usize, Connections, u64, Vec<u64>) {
    let (mut tasks, mut conns, mut rss) = (0, Connections::default(), 0);
    let mut timeline = Vec::new();
    let started = Instant::now();
    loop {
        let u = Usage::now(&ports);
        tasks = tasks.max(u.tasks.unwrap_or(0));
        if let Some(c) = u.connections {
            conns.client = conns.client.max(c.client);
            conns.server = conns.server.max(c.server);
        }
        rss = rss.max(u.rss.unwrap_or(0));
        if started.elapsed() >= Duration::from_secs(timeline.len() as u64) {
            timeline.push(u.rss.unwrap_or(0));
        }
        if stopped_or(&mut stop, Duration::from_millis(200)).await {
            break;
        }
    }
    (tasks, conns, rss, timeline)
}

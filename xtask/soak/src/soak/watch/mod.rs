//! Background work of a soak phase: the fault schedule ([`faults`]), the monitor's check loop
//! ([`checker`]), snapshot observers, an async task and a plain thread ([`observers`]), and a
//! resource sampler ([`sampler`]).

mod checker;
mod faults;
mod observers;
mod sampler;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, SystemTime};

use failnext_blocklag::{Monitor, Snapshot};
use failnext_examples::sim::{Behaviour, Provider};
use failnext_loopback::resources::Connections;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::soak::checks::{Check, Violations};
use crate::soak::schedule::{FaultKind, FaultSchedule, Rng};

pub(crate) use observers::SLOW_ELIGIBLE;

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
        let faults = tokio::spawn(faults::run(schedule, providers.to_vec(), stopped.clone()));
        let checker = tokio::spawn(checker::run(
            monitor.clone(),
            Rng::derive(settings.seed ^ salt, 0xC4EC),
            settings.check_interval,
            (settings.probe_timeout, settings.timing_slack),
            stopped.clone(),
        ));
        let observer = tokio::spawn(observers::observe(monitor.clone(), stopped.clone()));
        let sampler = tokio::spawn(sampler::sample(settings.ports.clone(), stopped));
        let reader = {
            let monitor = monitor.clone();
            let stop = thread_stop.clone();
            let probe_timeout = settings.probe_timeout;
            thread::spawn(move || observers::read_eligibility(&monitor, &stop, probe_timeout))
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

/// Waits `wait`, or until the phase stops: `true` means stop.
pub(super) async fn stopped_or(stop: &mut watch::Receiver<bool>, wait: Duration) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(wait) => false,
        _ = stop.wait_for(|s| *s) => true,
    }
}

/// Whether two loads are the same snapshot.
pub(super) fn same(a: &Option<Arc<Snapshot>>, b: &Option<Arc<Snapshot>>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        _ => false,
    }
}

/// When a loaded snapshot was taken (`None` before the first check).
pub(super) fn taken(s: &Option<Arc<Snapshot>>) -> Option<SystemTime> {
    s.as_ref().map(|s| s.taken_at())
}

//! `Monitor::spawn` and its [`MonitorHandle`]: checks on an adaptive, jittered schedule, one at
//! a time, on the current Tokio runtime.
//!
//! The schedule itself ([`run`], [`pace`]) knows nothing of probes: it is given a check to
//! run and what the check concluded, so its timing is tested under paused time without I/O.

use std::fmt;
use std::future::Future;
use std::pin::pin;
use std::time::Duration;

use failnext::Jitter;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::monitor::Monitor;

impl Monitor {
    /// Starts checking on a schedule, in a task of the current Tokio runtime
    /// ([`tokio::spawn`]), until the returned handle is [stopped](MonitorHandle::stop) or
    /// dropped.
    ///
    /// The first check starts at once. After each check the task sleeps, then checks again:
    ///
    /// - for `interval` when the check returned `Ok(())` and every endpoint of the latest
    ///   snapshot is eligible ("all fit");
    /// - for `interval / 4` otherwise: some probe failed, some provider lagged or was
    ///   ineligible for another reason, or nothing was published. The monitor looks again
    ///   sooner while something is wrong, and slows down as soon as one check finds all fit;
    /// - each sleep is jittered by up to ±10 % (uniformly, from a per-task
    ///   [`failnext::Jitter`] seeded from entropy), so that monitors started together drift
    ///   apart.
    ///
    /// The sleep starts when the check ends: a check that takes longer than the interval
    /// delays the next one, and checks never pile up or overlap. The task runs the same
    /// serialized [`check`](Monitor::check) as a manual call, so a manual `check()` at the same
    /// time waits for its turn (manual checks stay available and do not reset the schedule).
    /// Check errors are not reported by the task; they are in the published
    /// [`Snapshot`](crate::Snapshot) (a failed probe is an ineligible entry with its
    /// [`error`](crate::SnapshotEntry::error)).
    ///
    /// With a [`grace`](crate::MonitorBuilder::grace) or a
    /// [`max_age`](crate::MonitorBuilder::max_age), keep `interval` (plus the longest check,
    /// about one [probe timeout](crate::MonitorBuilder::probe_timeout)) below them, or fit
    /// providers expire between two checks.
    ///
    /// The task holds a clone of the monitor, so the monitor lives at least as long as the
    /// task.
    ///
    /// # Panics
    ///
    /// When called outside a Tokio runtime (as [`tokio::spawn`]); the runtime needs its time
    /// driver, as [`check`](Monitor::check) does. When `interval` is zero.
    pub fn spawn(&self, interval: Duration) -> MonitorHandle {
        self.spawn_with(interval, Jitter::from_entropy())
    }

    /// [`spawn`](Monitor::spawn), with the sleeps jittered by `jitter`: a seeded
    /// [`Jitter::from_seed`] makes the schedule's timing reproducible (tests).
    pub(crate) fn spawn_with(&self, interval: Duration, jitter: Jitter) -> MonitorHandle {
        assert!(!interval.is_zero(), "Monitor::spawn needs a non-zero interval");
        let (stop, stopped) = watch::channel(false);
        let monitor = self.clone();
        let check = move || {
            let monitor = monitor.clone();
            async move {
                let outcome = monitor.check().await;
                outcome.is_ok()
                    && monitor.snapshot().is_some_and(|s| s.entries().iter().all(|e| e.is_eligible()))
            }
        };
        let task = tokio::spawn(run(check, interval, jitter, stopped));
        MonitorHandle { task: Some(task), stop }
    }
}

/// The schedule of a [`Monitor::spawn`]ed task. Dropping it aborts the task at once (a running
/// check is abandoned and publishes nothing); [`stop`](MonitorHandle::stop) ends it
/// gracefully.
#[must_use = "dropping the handle stops the schedule at once"]
pub struct MonitorHandle {
    /// `None` only once `stop` took it.
    task: Option<JoinHandle<()>>,
    stop: watch::Sender<bool>,
}

impl MonitorHandle {
    /// Stops the schedule and waits for its task to end.
    ///
    /// A check that is running is let finish (each probe is bounded by the
    /// [probe timeout](crate::MonitorBuilder::probe_timeout)) and publishes as usual; a sleep
    /// between checks is cut short. When this returns no probe of the schedule is in flight and
    /// none will be sent. Drop the handle instead to abandon a running check at once.
    pub async fn stop(mut self) {
        self.stop.send_replace(true);
        if let Some(task) = self.task.take() {
            // The task only ends by returning, or by a panic in the check, which has nowhere
            // better to go: the schedule is over either way.
            let _ = task.await;
        }
    }

    /// Whether the task has ended (after [`stop`](MonitorHandle::stop) or a panic in a check).
    pub fn is_finished(&self) -> bool {
        self.task.as_ref().is_none_or(JoinHandle::is_finished)
    }
}

impl Drop for MonitorHandle {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

impl fmt::Debug for MonitorHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("failnext_blocklag::MonitorHandle").field("finished", &self.is_finished()).finish()
    }
}

/// Runs `check` until `stopped` turns true: a check, then a [`pace`]d sleep, and so on. `check`
/// resolves to whether everything was fit. A stop during a check lets it finish; a stop during
/// a sleep ends it.
pub(crate) async fn run<C, F>(
    mut check: C,
    interval: Duration,
    mut jitter: Jitter,
    mut stopped: watch::Receiver<bool>,
) where
    C: FnMut() -> F,
    F: Future<Output = bool>,
{
    while !*stopped.borrow_and_update() {
        let all_fit = check().await;
        if *stopped.borrow_and_update() {
            break;
        }
        let sleep = pin!(tokio::time::sleep(pace(interval, all_fit, &mut jitter)));
        // A closed channel (the handle is gone) also ends the sleep; the loop then ends too if
        // it was a stop, and otherwise the task is being aborted anyway.
        let changed = pin!(stopped.changed());
        futures::future::select(sleep, changed).await;
    }
}

/// The sleep after a check: `interval` when all were fit, `interval / 4` otherwise, times a
/// uniform factor in [0.9, 1.1] drawn from `jitter`.
pub(crate) fn pace(interval: Duration, all_fit: bool, jitter: &mut Jitter) -> Duration {
    let base = if all_fit { interval } else { interval / 4 };
    // A factor in [0.9, 1.1] in steps of 1/10 000.
    let tenth_mille = 9_000 + jitter.below(2_001);
    base.mul_f64(tenth_mille as f64 / 10_000.0)
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tokio::time::Instant;

    use super::*;

    const INTERVAL: Duration = Duration::from_secs(1);

    /// When each fake check started and ended, and how many ran at once at most.
    #[derive(Default)]
    struct Log {
        starts: Vec<Instant>,
        ends: Vec<Instant>,
        running: usize,
        max_running: usize,
    }

    /// Runs the schedule over a fake check that takes `takes` and answers `script[n]` at its
    /// `n`-th run (the last answer once the script is exhausted), for `for_` of paused time.
    async fn schedule(script: &[bool], takes: Duration, for_: Duration) -> Log {
        let log = Arc::new(Mutex::new(Log::default()));
        let (stop, stopped) = watch::channel(false);
        let (script, shared) = (script.to_vec(), log.clone());
        let check = move || {
            let log = shared.clone();
            let answer = {
                let mut log = log.lock().unwrap();
                log.starts.push(Instant::now());
                log.running += 1;
                log.max_running = log.max_running.max(log.running);
                script[(log.starts.len() - 1).min(script.len() - 1)]
            };
            async move {
                tokio::time::sleep(takes).await;
                let mut log = log.lock().unwrap();
                log.ends.push(Instant::now());
                log.running -= 1;
                answer
            }
        };
        let task = tokio::spawn(run(check, INTERVAL, Jitter::from_seed(7), stopped));
        tokio::time::sleep(for_).await;
        stop.send_replace(true);
        task.await.unwrap();
        Arc::try_unwrap(log).ok().unwrap().into_inner().unwrap()
    }

    fn within(gap: Duration, base: Duration) -> bool {
        gap >= base.mul_f64(0.9) && gap <= base.mul_f64(1.1)
    }

    #[tokio::test(start_paused = true)]
    async fn the_interval_shortens_while_a_provider_fails_and_lengthens_when_all_are_fit() {
        let script = [true, true, false, false, false, true, true, true];
        let log = schedule(&script, Duration::ZERO, Duration::from_secs(8)).await;
        assert!(log.starts.len() >= script.len(), "{} checks", log.starts.len());
        for (i, pair) in log.starts.windows(2).enumerate() {
            let answer = script[i.min(script.len() - 1)];
            let base = if answer { INTERVAL } else { INTERVAL / 4 };
            let gap = pair[1] - pair[0];
            assert!(within(gap, base), "check {i} (all fit: {answer}) was followed after {gap:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_check_longer_than_the_interval_delays_the_next_one_and_none_overlap() {
        let takes = Duration::from_secs(3);
        let log = schedule(&[true], takes, Duration::from_secs(30)).await;
        assert!(log.starts.len() >= 5, "{} checks", log.starts.len());
        assert_eq!(log.max_running, 1, "two checks ran at once");
        for (i, end) in log.ends.iter().enumerate() {
            let Some(next) = log.starts.get(i + 1) else { break };
            assert!(within(*next - *end, INTERVAL), "sleep after check {i}: {:?}", *next - *end);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_stop_during_a_check_lets_it_finish_and_a_stop_during_a_sleep_ends_it() {
        // Stopped 1.5 s into the first 3 s check: it ends at 3 s, and no other starts.
        let log = schedule(&[true], Duration::from_secs(3), Duration::from_millis(1500)).await;
        assert_eq!((log.starts.len(), log.ends.len()), (1, 1));
        // Stopped in the middle of the first sleep: the stop returns at once.
        let before = Instant::now();
        let log = schedule(&[true], Duration::ZERO, Duration::from_millis(500)).await;
        assert_eq!(log.starts.len(), 1);
        assert_eq!(Instant::now() - before, Duration::from_millis(500));
    }

    #[test]
    fn pace_is_jittered_within_ten_percent_of_its_base() {
        let mut jitter = Jitter::from_seed(1);
        let (mut low, mut high) = (Duration::MAX, Duration::ZERO);
        for _ in 0..10_000 {
            let fit = pace(INTERVAL, true, &mut jitter);
            assert!(within(fit, INTERVAL), "{fit:?}");
            let short = pace(INTERVAL, false, &mut jitter);
            assert!(within(short, INTERVAL / 4), "{short:?}");
            (low, high) = (low.min(fit), high.max(fit));
        }
        assert!(low < INTERVAL.mul_f64(0.91) && high > INTERVAL.mul_f64(1.09), "{low:?}..{high:?}");
        assert_ne!(Jitter::from_seed(0).next_u64(), 0, "zero is not a fixed point");
    }

    #[test]
    fn the_same_seed_paces_the_same_sleeps() {
        let sleeps = |seed| {
            let mut jitter = Jitter::from_seed(seed);
            (0..64).map(|i| pace(INTERVAL, i % 3 != 0, &mut jitter)).collect::<Vec<_>>()
        };
        assert_eq!(sleeps(7), sleeps(7));
        assert_ne!(sleeps(7), sleeps(8));
    }
}

//! `Monitor::spawn` and its [`MonitorHandle`]: each provider probed on its own adaptive,
//! jittered schedule, on the current Tokio runtime, and woken early by failnext ([`Link`]).
//!
//! The schedule itself ([`run`], [`pace`]) knows nothing of probes: it is given a probe to
//! run and what the probe concluded, so its timing is tested under paused time without I/O.

use std::fmt;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use failnext::Jitter;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use crate::runtime::monitor::Monitor;
use crate::runtime::wake::Link;

impl Monitor {
    /// Starts probing on a schedule, in a task of the current Tokio runtime
    /// ([`tokio::spawn`]), until the returned handle is [stopped](MonitorHandle::stop) or
    /// dropped.
    ///
    /// Every provider is probed on its own schedule, and its entry is published as soon as its
    /// own probe ends (the others' entries are kept, the reference height and their fitness
    /// re-derived): a provider that hangs delays only its own entry, never another's. The
    /// first probes start at once. After each probe of a provider, its next one comes:
    ///
    /// - `interval` later when it is fit (eligible in the snapshot its probe published);
    /// - but not while real traffic vouches for it: paired with failnext, a provider that
    ///   answered well (an answer that showed its head) within the last `interval` is not
    ///   probed; its next probe comes `interval` after its latest such answer. Traffic is the
    ///   probe: a provider serving reads costs one probe per four intervals (its answers show
    ///   it alive and current, not on the right chain: the probe checks that);
    /// - on a backoff otherwise (failed, lagging, still being re-admitted, doubted or
    ///   contradicted, [Paired with failnext](crate#paired-with-failnext)): 50 ms after the
    ///   first unfit probe (about one attempt's latency), doubling at each unfit probe in a
    ///   row of the same kind (a provider refused, then found on the wrong chain, starts again
    ///   at 50 ms: it is moving), never more than `interval`. An eviction lasts about as long
    ///   as the fault, not as long as the interval. The backoff runs only while the reads need the provider: while
    ///   two other providers are admitted, a provider held out waits an interval from its
    ///   last check (looking every 200 ms at most whether it is needed yet);
    /// - at once when failnext asks for it ([`HealthSource::check_now`]) while the reads need
    ///   the provider (as above), honoured at most once per provider per `interval`
    ///   (requests in between are dropped, never queued), or
    ///   when an answer contradicts the view (a failure, a head behind or implausible, of a
    ///   provider the view admits), or when a provider held out for failing answers well
    ///   (each at most once per 50 ms);
    /// - each sleep is jittered by up to ±10 % (uniformly, from a per-provider
    ///   [`failnext::Jitter`] seeded from entropy), so that providers and monitors started
    ///   together drift apart.
    ///
    /// The sleep starts when the probe ends: a provider's probes never overlap. Each probe is
    /// bounded by the [probe timeout](crate::MonitorBuilder::probe_timeout), which for a
    /// spawned schedule is `min(5 s, interval)` unless set explicitly. With an
    /// [expected chain id](crate::MonitorBuilder::expected_chain_id), every probe also asks
    /// for `eth_chainId` (in the same batch), as every [`check`](Monitor::check) does. Probe
    /// errors are not reported by the task; they are in the published
    /// [`Snapshot`](crate::Snapshot) (a failed probe is an ineligible entry with its
    /// [`error`](crate::SnapshotEntry::error)); each entry's
    /// [`checked`](crate::SnapshotEntry::checked) says when its provider's probe ended.
    /// A probe whose snapshot would have no height at all (every provider failed or was not
    /// probed yet) publishes nothing, as a check in which every probe fails.
    ///
    /// Manual [`check`](Monitor::check)s stay available: they run the whole round as before
    /// and do not reset the schedule (a check's probe of a provider may overlap the
    /// schedule's). Spawning again replaces the target of `check_now` with the new schedule.
    ///
    /// With a [`grace`](crate::MonitorBuilder::grace) or a
    /// [`max_age`](crate::MonitorBuilder::max_age), keep `interval` (plus one probe timeout)
    /// below them, or fit providers expire between two probes.
    ///
    /// The task holds a clone of the monitor, so the monitor lives at least as long as the
    /// task.
    ///
    /// [`HealthSource::check_now`]: failnext::HealthSource::check_now
    ///
    /// # Panics
    ///
    /// When called outside a Tokio runtime (as [`tokio::spawn`]); the runtime needs its time
    /// driver, as [`check`](Monitor::check) does. When `interval` is zero.
    pub fn spawn(&self, interval: Duration) -> MonitorHandle {
        self.spawn_with(interval, Jitter::from_entropy())
    }

    /// [`spawn`](Monitor::spawn), with the sleeps jittered by generators seeded from `jitter`:
    /// a seeded [`Jitter::from_seed`] makes the schedule's timing reproducible (tests).
    pub(crate) fn spawn_with(&self, interval: Duration, mut jitter: Jitter) -> MonitorHandle {
        assert!(!interval.is_zero(), "Monitor::spawn needs a non-zero interval");
        let (stop, stopped) = watch::channel(false);
        let inner = self.inner();
        let n = self.endpoints().len();
        let link = Arc::new(Link::new(interval, n));
        inner.set_half_life(interval / 4);
        inner.schedule.store(Some(link.clone()));
        let timeout = inner.settings.spawned_timeout(interval);
        let providers: Vec<_> = (0..n)
            .map(|i| {
                let (monitor, link, stopped) = (self.clone(), link.clone(), stopped.clone());
                let jitter = Jitter::from_seed(jitter.next_u64());
                async move {
                    let probe = || monitor.probe_one(i, timeout);
                    let view = Provider { monitor: &monitor, i };
                    run(probe, interval, jitter, stopped, link.wakes.get(i), view).await;
                }
            })
            .collect();
        let probes = futures::future::join_all(providers);
        #[cfg(feature = "redis")]
        let task = match inner.settings.fleet.clone() {
            // The probes other processes of the fleet announce, taken at once.
            Some(fleet) => {
                let monitor = self.clone();
                tokio::spawn(async move {
                    let listen = fleet.listen(|name, note| monitor.relayed(name, note));
                    futures::future::select(std::pin::pin!(probes), std::pin::pin!(listen)).await;
                })
            }
            None => tokio::spawn(async move {
                probes.await;
            }),
        };
        #[cfg(not(feature = "redis"))]
        let task = tokio::spawn(async move {
            probes.await;
        });
        MonitorHandle { task: Some(task), stop, monitor: self.clone() }
    }
}

/// Provider `i` in its monitor's view, for its schedule.
struct Provider<'a> {
    monitor: &'a Monitor,
    i: usize,
}

impl View for Provider<'_> {
    fn held_out(&self) -> bool {
        self.monitor.inner().held_out(self.i)
    }
    fn needed(&self) -> bool {
        self.monitor.inner().needed(self.i)
    }
    fn answered_ago(&self) -> Option<Duration> {
        self.monitor.inner().answered_ago(self.i)
    }
}

/// The schedule of a [`Monitor::spawn`]ed task. Dropping it aborts the task at once (the
/// probes running are abandoned and publish nothing); [`stop`](MonitorHandle::stop) ends it
/// gracefully.
#[must_use = "dropping the handle stops the schedule at once"]
pub struct MonitorHandle {
    /// `None` only once `stop` took it.
    task: Option<JoinHandle<()>>,
    stop: watch::Sender<bool>,
    /// The monitor the schedule runs: the handle is a [`HealthSource`](failnext::HealthSource)
    /// too, so a transport that owns it keeps the schedule running.
    pub(crate) monitor: Monitor,
}

impl MonitorHandle {
    /// Stops the schedule and waits for its task to end.
    ///
    /// The probes that are running are let finish (each is bounded by the
    /// [probe timeout](crate::MonitorBuilder::probe_timeout)) and publish as usual; the sleeps
    /// between probes are cut short. When this returns no probe of the schedule is in flight
    /// and none will be sent. Drop the handle instead to abandon the running probes at once.
    pub async fn stop(mut self) {
        self.stop.send_replace(true);
        if let Some(task) = self.task.take() {
            // The task only ends by returning, or by a panic in the check, which has nowhere
            // better to go: the schedule is over either way.
            let _ = task.await;
        }
    }

    /// Waits until every provider's first probe of this schedule has published (each is
    /// bounded by the [probe timeout](crate::MonitorBuilder::probe_timeout)), so that the
    /// first request already has the monitor's view; `false` when that took longer than
    /// `within` (the view is then partial, and requests go ahead on what there is).
    ///
    /// ```no_run
    /// # #[allow(dead_code)]
    /// # async fn demo(monitor: failnext_blocklag::Monitor) {
    /// use std::time::Duration;
    ///
    /// let handle = monitor.spawn(Duration::from_secs(2));
    /// handle.ready(Duration::from_secs(5)).await;
    /// # }
    /// ```
    pub async fn ready(&self, within: Duration) -> bool {
        let all_probed =
            || self.monitor.snapshot().is_some_and(|s| s.entries().iter().all(|e| e.checked().is_some()));
        let until = tokio::time::Instant::now() + within;
        while !all_probed() {
            if tokio::time::Instant::now() >= until {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        true
    }

    /// The monitor whose schedule this is.
    pub fn monitor(&self) -> &Monitor {
        &self.monitor
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

/// The schedule of one provider: `check` runs, then a sleep ([`pace`]), and again, until
/// `stopped`. A stop during a check lets it finish; a stop during a sleep ends it; `wake`
/// ends a sleep early (a permit stored while a check runs ends the next sleep at once).
///
/// While the view admits the provider, its idle probe is skipped while real traffic vouches
/// for it ([`View::answered_ago`] within `interval`: the sleep is extended to `interval`
/// after that answer), for up to [`VOUCHED_INTERVALS`]; answers after a silence of
/// [`QUIET`](crate::runtime::monitor::traffic::QUIET) or more vouch for nothing until a probe answers. After a check that found it unfit,
/// the sleep is a backoff ([`pace`]): short at first, doubling while it stays unfit, never
/// beyond `interval`. A provider the view holds out is checked at the end of its sleep (or
/// when woken) only while the reads need it ([`View::needed`]); otherwise it looks again
/// every [`LOOK`] at most, and is checked once `interval` has passed since its last check.
pub(crate) async fn run<C, F>(
    mut check: C,
    interval: Duration,
    mut jitter: Jitter,
    mut stopped: watch::Receiver<bool>,
    wake: Option<&Notify>,
    view: impl View,
) where
    C: FnMut() -> F,
    F: Future<Output: Checked>,
{
    let mut unfit_streak = 0u32;
    let mut last_why = None;
    while !*stopped.borrow_and_update() {
        let why = check().await.unfit_why();
        // The backoff grows while the provider stays unfit the same way; a fault of another
        // kind (refused, then on the wrong chain) is a provider that moves, re-checked soon.
        unfit_streak = match why {
            None => 0,
            Some(_) if why != last_why => 1,
            Some(_) => unfit_streak.saturating_add(1),
        };
        last_why = why;
        if *stopped.borrow_and_update() {
            break;
        }
        let mut sleep_for = pace(interval, unfit_streak, &mut jitter);
        let checked = tokio::time::Instant::now();
        loop {
            let slept = {
                let sleep = pin!(tokio::time::sleep(sleep_for));
                // A closed channel (the handle is gone) also ends the sleep; the loop then
                // ends too if it was a stop, and otherwise the task is being aborted anyway.
                let changed = pin!(stopped.changed());
                let woken = pin!(async {
                    match wake {
                        Some(wake) => wake.notified().await,
                        None => std::future::pending().await,
                    }
                });
                match futures::future::select(sleep, futures::future::select(changed, woken)).await {
                    futures::future::Either::Left(_) => true,
                    futures::future::Either::Right(_) => false,
                }
            };
            if *stopped.borrow() || stopped.has_changed().is_err() {
                break;
            }
            let waited = checked.elapsed();
            let held = view.held_out();
            // Traffic is the probe: a provider the view admits that answered well within the
            // interval is not probed until an interval has passed since that answer (and at
            // least once in `VOUCHED_INTERVALS`, for its chain id).
            if slept && !held && waited < interval * VOUCHED_INTERVALS {
                if let Some(ago) = view.answered_ago().filter(|ago| *ago < interval) {
                    sleep_for = jittered(interval - ago, &mut jitter);
                    continue;
                }
            }
            // A provider held out is re-checked (on its backoff, or woken by evidence) only
            // while the reads need it; otherwise the wait is only a look at whether they do,
            // and it is re-checked an interval after its last check.
            if held && waited < interval && !view.needed() {
                let step = pace(interval, unfit_streak.max(1), &mut jitter);
                sleep_for = step.min(LOOK).min(interval - waited);
                continue;
            }
            break;
        }
    }
}

/// What a check found, for the schedule: fit, or unfit and in which way.
pub(crate) trait Checked {
    /// `None` when fit; else what made it unfit, as a value equal for the same kind of fault.
    fn unfit_why(&self) -> Option<u32>;
}

/// A spawned probe's finding ([`Monitor::probe_one`]): `None` when fit, else its kind.
impl Checked for Option<u32> {
    fn unfit_why(&self) -> Option<u32> {
        *self
    }
}

/// Fit or not, with no kind: every unfit check is of the same kind.
impl Checked for bool {
    fn unfit_why(&self) -> Option<u32> {
        (!*self).then_some(0)
    }
}

/// What the schedule of one provider asks of the monitor's view between its checks.
pub(crate) trait View {
    /// Whether the view holds the provider out now (not admitted, or contradicted).
    fn held_out(&self) -> bool;
    /// Whether the reads need it back: too few other providers admitted.
    fn needed(&self) -> bool;
    /// How long ago it last answered well with its head, as traffic told.
    fn answered_ago(&self) -> Option<Duration>;
}

/// How many intervals traffic may stand in for a fit provider's probe: its answers show it
/// alive and current, not that it is still on the chain (only a probe asks `eth_chainId`),
/// so it is probed at least this often.
const VOUCHED_INTERVALS: u32 = 4;

/// The longest sleep between two looks at whether an unfit provider that was not needed is
/// needed now.
const LOOK: Duration = Duration::from_millis(200);

use crate::runtime::wake::FIRST_RECHECK;

/// The sleep after a check: `interval` when the provider was fit (`unfit_streak` 0), else the
/// backoff [`FIRST_RECHECK`] × 2^(streak − 1), at most `interval`; times a uniform factor in
/// [0.9, 1.1] drawn from `jitter`.
pub(crate) fn pace(interval: Duration, unfit_streak: u32, jitter: &mut Jitter) -> Duration {
    let base = match unfit_streak {
        0 => interval,
        n => FIRST_RECHECK.saturating_mul(1 << (n - 1).min(20)).min(interval),
    };
    jittered(base, jitter)
}

/// `base` times a uniform factor in [0.9, 1.1] (steps of 1/10 000) drawn from `jitter`.
fn jittered(base: Duration, jitter: &mut Jitter) -> Duration {
    let tenth_mille = 9_000 + jitter.below(2_001);
    base.mul_f64(tenth_mille as f64 / 10_000.0)
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tokio::time::Instant;

    use super::*;

    const INTERVAL: Duration = Duration::from_secs(1);

    /// A view the test controls: held out, needed, answered.
    struct Fake<H, N, A> {
        held: H,
        needed: N,
        answered: A,
    }

    impl<H, N, A> View for Fake<H, N, A>
    where
        H: Fn() -> bool,
        N: Fn() -> bool,
        A: Fn() -> Option<Duration>,
    {
        fn held_out(&self) -> bool {
            (self.held)()
        }
        fn needed(&self) -> bool {
            (self.needed)()
        }
        fn answered_ago(&self) -> Option<Duration> {
            (self.answered)()
        }
    }

    /// A check that always answers `fit`, and the instants it started at.
    #[allow(clippy::type_complexity, reason = "a test's shared log")]
    fn starts_of(
        fit: bool,
    ) -> (Arc<Mutex<Vec<Instant>>>, impl FnMut() -> std::future::Ready<bool> + Send + 'static) {
        let log = Arc::new(Mutex::new(Vec::new()));
        let seen = log.clone();
        let check = move || {
            seen.lock().unwrap().push(Instant::now());
            std::future::ready(fit)
        };
        (log, check)
    }

    /// Held out and needed, no traffic: every check's sleep is its pace.
    fn needed_always() -> impl View {
        Fake { held: || true, needed: || true, answered: || None }
    }

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
        let task = tokio::spawn(run(check, INTERVAL, Jitter::from_seed(7), stopped, None, needed_always()));
        tokio::time::sleep(for_).await;
        stop.send_replace(true);
        task.await.unwrap();
        Arc::try_unwrap(log).ok().unwrap().into_inner().unwrap()
    }

    fn within(gap: Duration, base: Duration) -> bool {
        gap >= base.mul_f64(0.9) && gap <= base.mul_f64(1.1)
    }

    #[tokio::test(start_paused = true)]
    async fn an_unfit_provider_is_rechecked_on_a_backoff_from_fifty_ms_and_a_fit_one_every_interval() {
        let script = [true, true, false, false, false, false, false, false, true, true];
        let log = schedule(&script, Duration::ZERO, Duration::from_secs(8)).await;
        assert!(log.starts.len() >= script.len(), "{} checks", log.starts.len());
        let mut streak = 0;
        for (i, pair) in log.starts.windows(2).enumerate() {
            let fit = script[i.min(script.len() - 1)];
            streak = if fit { 0 } else { streak + 1 };
            let base = if fit { INTERVAL } else { (FIRST_RECHECK * (1 << (streak - 1))).min(INTERVAL) };
            let gap = pair[1] - pair[0];
            assert!(within(gap, base), "check {i} (fit: {fit}) was followed after {gap:?}, not ~{base:?}");
        }
    }

    /// A check's finding by kind, for the test below.
    #[derive(Clone, Copy)]
    struct Found(Option<u32>);

    impl Checked for Found {
        fn unfit_why(&self) -> Option<u32> {
            self.0
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_provider_unfit_another_way_is_rechecked_on_the_short_backoff_again() {
        const REFUSED: Found = Found(Some(1));
        const WRONG_CHAIN: Found = Found(Some(2));
        let script = [REFUSED, REFUSED, REFUSED, REFUSED, REFUSED, WRONG_CHAIN, WRONG_CHAIN, WRONG_CHAIN];
        let log = Arc::new(Mutex::new(Vec::new()));
        let seen = log.clone();
        let check = move || {
            let mut seen = seen.lock().unwrap();
            seen.push(Instant::now());
            std::future::ready(script[(seen.len() - 1).min(script.len() - 1)])
        };
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(run(check, INTERVAL, Jitter::from_seed(11), stopped, None, needed_always()));
        tokio::time::sleep(Duration::from_millis(2000)).await;
        stop.send_replace(true);
        task.await.unwrap();
        let starts = log.lock().unwrap().clone();
        let gaps: Vec<Duration> = starts.windows(2).map(|p| p[1] - p[0]).collect();
        // Refused five times: 50, 100, 200, 400, 800 ms; then on the wrong chain: 50, 100 ms again.
        let ms = [50, 100, 200, 400, 800, 50, 100];
        assert!(gaps.len() >= ms.len(), "{gaps:?}");
        for (gap, base) in gaps.iter().zip(ms) {
            assert!(within(*gap, Duration::from_millis(base)), "{gaps:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_fit_provider_that_answered_within_the_interval_is_probed_once_in_four_intervals_traffic_is_the_probe()
     {
        let (log, check) = starts_of(true);
        let (stop, stopped) = watch::channel(false);
        // Traffic answered 300 ms ago, every time the schedule asks: the probe comes only
        // once in four intervals (for the chain id, which answers do not show).
        let started = Instant::now();
        let view = Fake { held: || false, needed: || true, answered: || Some(Duration::from_millis(300)) };
        let task = tokio::spawn(run(check, INTERVAL, Jitter::from_seed(3), stopped, None, view));
        tokio::time::sleep(Duration::from_secs(10)).await;
        stop.send_replace(true);
        task.await.unwrap();
        let starts = log.lock().unwrap().clone();
        assert_eq!(starts.len(), 3, "{starts:?}");
        assert_eq!(starts[0], started, "the first probe, before any traffic");
        for pair in starts.windows(2) {
            let gap = pair[1] - pair[0];
            assert!(gap >= INTERVAL * 4 && gap <= INTERVAL * 5, "{gap:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn answers_do_not_stand_in_for_the_probe_of_a_provider_the_view_holds_out() {
        let (log, check) = starts_of(true);
        let (stop, stopped) = watch::channel(false);
        // Its last probe passed, but an answer since contradicted the view (held out): its
        // reserve answers, good or not, do not delay its next probe.
        let view = Fake { held: || true, needed: || true, answered: || Some(Duration::from_millis(300)) };
        let task = tokio::spawn(run(check, INTERVAL, Jitter::from_seed(9), stopped, None, view));
        tokio::time::sleep(Duration::from_millis(3500)).await;
        stop.send_replace(true);
        task.await.unwrap();
        assert_eq!(log.lock().unwrap().len(), 4, "probed every interval");
    }

    #[tokio::test(start_paused = true)]
    async fn an_unfit_provider_waits_for_the_interval_while_others_serve_and_is_rechecked_once_needed() {
        let (log, check) = starts_of(false);
        let needed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (stop, stopped) = watch::channel(false);
        let started = Instant::now();
        let asked = needed.clone();
        let view = Fake {
            held: || true,
            needed: move || asked.load(std::sync::atomic::Ordering::SeqCst),
            answered: || None,
        };
        let task = tokio::spawn(run(check, INTERVAL, Jitter::from_seed(5), stopped, None, view));
        // Others serve: no backoff re-checks, the next probe an interval after the first.
        tokio::time::sleep(INTERVAL.mul_f64(0.85)).await;
        assert_eq!(log.lock().unwrap().len(), 1, "re-checked while not needed");
        tokio::time::sleep(INTERVAL.mul_f64(0.3)).await;
        assert_eq!(log.lock().unwrap().len(), 2, "the interval passed without a re-check");
        // The reads need it now: re-checked within a look (200 ms), then on the backoff.
        needed.store(true, std::sync::atomic::Ordering::SeqCst);
        let at = Instant::now();
        tokio::time::sleep(Duration::from_millis(250)).await;
        let starts = log.lock().unwrap().clone();
        assert!(
            starts.len() >= 3 && starts[2] - at <= Duration::from_millis(200),
            "{:?}",
            starts[2] - started
        );
        stop.send_replace(true);
        task.await.unwrap();
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
            let fit = pace(INTERVAL, 0, &mut jitter);
            assert!(within(fit, INTERVAL), "{fit:?}");
            let short = pace(INTERVAL, 1, &mut jitter);
            assert!(within(short, FIRST_RECHECK), "{short:?}");
            let capped = pace(INTERVAL, 30, &mut jitter);
            assert!(within(capped, INTERVAL), "{capped:?}");
            (low, high) = (low.min(fit), high.max(fit));
        }
        assert!(low < INTERVAL.mul_f64(0.91) && high > INTERVAL.mul_f64(1.09), "{low:?}..{high:?}");
        assert_ne!(Jitter::from_seed(0).next_u64(), 0, "zero is not a fixed point");
    }

    #[test]
    fn the_same_seed_paces_the_same_sleeps() {
        let sleeps = |seed| {
            let mut jitter = Jitter::from_seed(seed);
            (0..64).map(|i| pace(INTERVAL, i % 3, &mut jitter)).collect::<Vec<_>>()
        };
        assert_eq!(sleeps(7), sleeps(7));
        assert_ne!(sleeps(7), sleeps(8));
    }
}

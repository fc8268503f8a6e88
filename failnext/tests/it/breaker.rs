//! The adaptive breaker (`Cooldown::adaptive`, the default since 0.2), under paused tokio time.
//!
//! As in `cooldown.rs`, clients have no connection pool and no timeouts, so no timer exists and
//! the paused clock only moves when a test advances it. A provider that is "down" is a
//! per-attempt middleware after `Failover` that fails the attempt with a connection-refused
//! error (an error from the rest of the chain is an attempt failure, like a refused connect)
//! and counts every attempt it sees; when "up", it passes the attempt on to a real loopback
//! server. It can also hold one attempt until the test releases it, to keep a trial in flight.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use failnext::{BreakerState, Cooldown, Event, Failover, RequestBuilderExt, ServedBy};
use http::Extensions;
use reqwest::{Request, Response};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware, Middleware, Next};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::support::*;

const MS: Duration = Duration::from_millis(1);
const HOUR: Duration = Duration::from_secs(3600);
const CAP: Duration = Duration::from_secs(30);

/// One provider: a loopback server behind a switch the test flips.
struct Provider {
    id: &'static str,
    server: Scripted,
    down: AtomicBool,
    attempts: AtomicUsize,
    /// Hold the next attempt (until `release`), signalling `arrived`.
    hold: AtomicBool,
    arrived: Notify,
    release: Notify,
}

impl Provider {
    async fn new(id: &'static str, down: bool) -> Arc<Provider> {
        Arc::new(Provider {
            id,
            server: status(200).await,
            down: AtomicBool::new(down),
            attempts: AtomicUsize::new(0),
            hold: AtomicBool::new(false),
            arrived: Notify::new(),
            release: Notify::new(),
        })
    }

    fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    fn attempts(&self) -> usize {
        self.attempts.load(Ordering::SeqCst)
    }

    /// The next attempt to this provider waits until `release`.
    fn hold_next(&self) {
        self.hold.store(true, Ordering::SeqCst);
    }
}

/// The per-attempt switch over every provider.
struct Switch(Vec<Arc<Provider>>);

#[async_trait::async_trait]
impl Middleware for Switch {
    async fn handle(
        &self,
        req: Request,
        ext: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        let url = req.url().to_string();
        let Some(p) = self.0.iter().find(|p| p.server.url() == url) else { return next.run(req, ext).await };
        p.attempts.fetch_add(1, Ordering::SeqCst);
        if p.hold.swap(false, Ordering::SeqCst) {
            p.arrived.notify_one();
            p.release.notified().await;
        }
        if p.down.load(Ordering::SeqCst) {
            let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
            return Err(reqwest_middleware::Error::middleware(refused));
        }
        next.run(req, ext).await
    }
}

/// What the hook saw: breaker transitions and attempts, with the paused clock's time.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<(Instant, String)>>>);

impl Log {
    fn hook(&self) -> impl Fn(&Event<'_>) + Send + Sync + 'static {
        let log = self.0.clone();
        move |event: &Event<'_>| {
            let line = match *event {
                Event::Breaker { endpoint, state } => format!("{endpoint} {state:?}"),
                Event::Attempt { endpoint, .. } => format!("attempt {endpoint}"),
                Event::CooldownSkip { endpoint } => format!("skip {endpoint}"),
                _ => return,
            };
            log.lock().unwrap().push((Instant::now(), line));
        }
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap()).into_iter().map(|(_, line)| line).collect()
    }

    fn timed(&self) -> Vec<(Instant, String)> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

fn failover(providers: &[&Arc<Provider>], cooldown: Option<Cooldown>, log: &Log) -> Failover {
    // No attempt timeout: no timer may exist while the test moves the paused clock.
    failover_with(providers, cooldown, log, None)
}

/// A `Failover` over `providers`, with `attempt_timeout` (none when `None`).
fn failover_with(
    providers: &[&Arc<Provider>],
    cooldown: Option<Cooldown>,
    log: &Log,
    attempt_timeout: Option<Duration>,
) -> Failover {
    let mut b = builder(providers.iter().map(|p| (p.id, p.server.url()))).on_event(log.hook());
    b = match attempt_timeout {
        Some(t) => b.attempt_timeout(t),
        None => b.no_attempt_timeout(),
    };
    if let Some(c) = cooldown {
        b = b.cooldown(c);
    }
    b.build().unwrap()
}

/// A `Failover` over `providers` (with `cooldown`, else the default), a paused-time client
/// through it, and the log of its events.
fn rig(providers: &[&Arc<Provider>], cooldown: Option<Cooldown>) -> (Failover, ClientWithMiddleware, Log) {
    let log = Log::default();
    let failover = failover(providers, cooldown, &log);
    let client = paused_client(failover.clone(), providers);
    (failover, client, log)
}

fn paused_client(failover: Failover, providers: &[&Arc<Provider>]) -> ClientWithMiddleware {
    let http = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let switch = Switch(providers.iter().map(|p| Arc::clone(p)).collect());
    ClientBuilder::new(http).with(failover).with(switch).build()
}

fn served_by(resp: &Response) -> Option<&str> {
    resp.extensions().get::<ServedBy>().map(|s| s.0.as_str())
}

async fn read(client: &ClientWithMiddleware) -> Response {
    client.get("http://127.0.0.1:9/").send().await.unwrap()
}

/// One attempt to `id` alone (a GET that may not fail over).
async fn only(client: &ClientWithMiddleware, id: &str) -> reqwest_middleware::Result<Response> {
    client.get("http://127.0.0.1:9/").prefer_endpoint(id).deny_failover().send().await
}

/// Opens `p`'s breaker with three failures in a row.
async fn trip(client: &ClientWithMiddleware, p: &Provider) {
    let down = p.down.swap(true, Ordering::SeqCst);
    for _ in 0..3 {
        only(client, p.id).await.unwrap_err();
    }
    p.set_down(down);
}

fn within_jitter(d: Duration, nominal: Duration) -> bool {
    d >= nominal * 8 / 10 && d <= nominal * 12 / 10
}

#[tokio::test(start_paused = true)]
async fn default_cooldown_is_the_adaptive_breaker() {
    let (e1, e2) = (Provider::new("e1", true).await, Provider::new("e2", false).await);
    let (failover, client, log) = rig(&[&e1, &e2], None);
    for expect in [false, false, true] {
        assert_eq!(served_by(&read(&client).await), Some("e2"));
        assert_eq!(failover.is_cooling_down("e1"), expect, "opens after 3 failures in a row");
    }
    let opened = log.take();
    let Some(open) = opened.iter().find_map(|l| l.strip_prefix("e1 Open { duration: ")) else {
        panic!("no Open event: {opened:?}")
    };
    assert!(open.ends_with("ms }"), "sub-second: {open}");
    tokio::time::advance(Duration::from_millis(300)).await;
    assert!(!failover.is_cooling_down("e1"), "open for at most 250 ms + 20 %");
    e1.set_down(false);
    assert_eq!(served_by(&read(&client).await), Some("e1"), "its trial");
    assert_eq!(log.take(), ["e1 HalfOpen", "attempt e1", "e1 Closed"]);
}

#[test]
fn a_zero_max_open_is_rejected_and_max_open_leaves_other_rules_alone() {
    let one = || builder([("e1", "http://127.0.0.1:1/".to_owned())]);
    let err = one().cooldown(Cooldown::adaptive().max_open(Duration::ZERO)).build().unwrap_err();
    assert!(err.to_string().contains("duration"), "{err}");
    assert!(one().cooldown(Cooldown::adaptive().max_open(MS)).build().is_ok());
    let reference = Cooldown::new(3, CAP);
    assert_eq!(reference.max_open(HOUR), reference);
    assert_eq!(Cooldown::disabled().max_open(HOUR), Cooldown::disabled());
    assert_eq!((Cooldown::adaptive().threshold(), Cooldown::adaptive().duration()), (Some(3), Some(CAP)));
}

#[tokio::test(start_paused = true)]
async fn a_refused_provider_gets_only_its_trials_for_60s_at_100_reads_per_second() {
    let (e1, e2) = (Provider::new("e1", true).await, Provider::new("e2", false).await);
    let (_, client, log) = rig(&[&e1, &e2], None);
    let start = Instant::now();
    while Instant::now() - start < Duration::from_secs(60) {
        let resp = read(&client).await;
        assert_eq!(resp.status(), 200, "every read is answered");
        tokio::time::advance(Duration::from_millis(10)).await;
    }
    let refused = e1.attempts();
    assert!((3..=12).contains(&refused), "{refused} attempts while refused for 60 s (6000 reads)");
    // It comes back. It takes traffic again at its next trial, which is at most the cap away,
    // and from that trial on it takes every read.
    e1.set_down(false);
    log.timed();
    let back = Instant::now();
    while served_by(&read(&client).await) != Some("e1") {
        assert!(Instant::now() - back <= CAP + Duration::from_millis(10), "back within the cap");
        tokio::time::advance(Duration::from_millis(10)).await;
    }
    let trial_at = Instant::now();
    let mut served = 0;
    while Instant::now() - trial_at < Duration::from_secs(1) {
        tokio::time::advance(Duration::from_millis(10)).await;
        served += usize::from(served_by(&read(&client).await) == Some("e1"));
    }
    assert_eq!(served, 100, "full traffic within a second of its successful trial");
    assert_eq!(e1.attempts(), refused + 101);
}

/// The same with a monitor as eligibility (a stand-in that sees each change 100 ms late, as a
/// polling monitor checking every 100 ms would): the provider gets its trials only until the
/// monitor rules it out, and takes traffic again within a second of coming back, however long
/// its open time had grown.
#[tokio::test(start_paused = true)]
async fn with_a_monitor_a_refused_provider_gets_at_most_a_dozen_attempts_and_is_back_within_a_second() {
    let (e1, e2) = (Provider::new("e1", true).await, Provider::new("e2", false).await);
    let fit = Arc::new(AtomicBool::new(true));
    let seen = fit.clone();
    let log = Log::default();
    let failover = builder([("e1", e1.server.url()), ("e2", e2.server.url())])
        .no_attempt_timeout()
        .on_event(log.hook())
        .eligible(move |id: &failnext::EndpointId| id.as_str() != "e1" || seen.load(Ordering::SeqCst))
        .build()
        .unwrap();
    let client = paused_client(failover.clone(), &[&e1, &e2]);
    let lag = Duration::from_millis(100);
    let start = Instant::now();
    while Instant::now() - start < Duration::from_secs(60) {
        if Instant::now() - start >= lag {
            fit.store(false, Ordering::SeqCst);
        }
        assert_eq!(read(&client).await.status(), 200, "every read is answered");
        tokio::time::advance(Duration::from_millis(10)).await;
    }
    let refused = e1.attempts();
    assert!((3..=12).contains(&refused), "{refused} attempts while refused for 60 s (6000 reads)");
    e1.set_down(false);
    let back = Instant::now();
    let mut first = None;
    while Instant::now() - back < Duration::from_secs(2) {
        if Instant::now() - back >= lag {
            fit.store(true, Ordering::SeqCst);
        }
        if served_by(&read(&client).await) == Some("e1") {
            first.get_or_insert(Instant::now() - back);
        }
        tokio::time::advance(Duration::from_millis(10)).await;
    }
    let first = first.expect("e1 took traffic again");
    assert!(first <= Duration::from_secs(1), "back {first:?} after it came back");
    assert_eq!(e1.attempts(), refused + 190, "and from then on it takes every read");
}

/// A slow monitor (it rules the provider out 5 s after it went down, and sees it back 100 ms
/// after it is): by then failed trials have grown the open time to about 4 s, ending 6.6 s at
/// the earliest. Back at 5.5 s, the provider is taken again at once when the monitor says so,
/// not when that open time ends.
#[tokio::test(start_paused = true)]
async fn turning_eligible_again_ends_an_open_time_that_outlasts_the_outage() {
    let (e1, e2) = (Provider::new("e1", true).await, Provider::new("e2", false).await);
    let fit = Arc::new(AtomicBool::new(true));
    let seen = fit.clone();
    let failover = builder([("e1", e1.server.url()), ("e2", e2.server.url())])
        .no_attempt_timeout()
        .eligible(move |id: &failnext::EndpointId| id.as_str() != "e1" || seen.load(Ordering::SeqCst))
        .build()
        .unwrap();
    let client = paused_client(failover.clone(), &[&e1, &e2]);
    let start = Instant::now();
    let mut first = None;
    while Instant::now() - start < Duration::from_secs(7) {
        let t = Instant::now() - start;
        fit.store(!(Duration::from_secs(5)..Duration::from_millis(5600)).contains(&t), Ordering::SeqCst);
        e1.set_down(t < Duration::from_millis(5500));
        if served_by(&read(&client).await) == Some("e1") {
            first.get_or_insert(t);
        }
        tokio::time::advance(Duration::from_millis(10)).await;
    }
    assert_eq!(first, Some(Duration::from_millis(5600)), "the first read after the monitor saw it back");
}

#[tokio::test(start_paused = true)]
async fn half_open_admits_exactly_one_trial_at_a_time() {
    let (e1, e2) = (Provider::new("e1", false).await, Provider::new("e2", false).await);
    let (_, client, log) = rig(&[&e1, &e2], None);
    trip(&client, &e1).await;
    tokio::time::advance(Duration::from_millis(300)).await;
    log.take();
    e1.hold_next();
    let trial = tokio::spawn({
        let client = client.clone();
        async move { served_by(&read(&client).await).map(str::to_owned) }
    });
    e1.arrived.notified().await;
    for _ in 0..5 {
        assert_eq!(served_by(&read(&client).await), Some("e2"), "others skip it meanwhile");
    }
    assert_eq!(e1.attempts(), 4, "three failures, then exactly one trial in flight");
    e1.release.notify_one();
    assert_eq!(trial.await.unwrap().as_deref(), Some("e1"));
    let events = log.take();
    assert_eq!(events[0], "e1 HalfOpen");
    assert_eq!(events.iter().filter(|l| *l == "skip e1").count(), 5);
    assert_eq!(events[events.len() - 2..], ["attempt e1", "e1 Closed"]);
    assert_eq!(served_by(&read(&client).await), Some("e1"), "closed: full traffic");
}

#[tokio::test(start_paused = true)]
async fn a_dropped_trial_frees_the_permit() {
    let (e1, e2) = (Provider::new("e1", false).await, Provider::new("e2", false).await);
    let (_, client, log) = rig(&[&e1, &e2], None);
    trip(&client, &e1).await;
    tokio::time::advance(Duration::from_millis(300)).await;
    e1.hold_next();
    let trial = tokio::spawn({
        let client = client.clone();
        async move { read(&client).await }
    });
    e1.arrived.notified().await;
    assert_eq!(served_by(&read(&client).await), Some("e2"), "the trial is in flight");
    trial.abort();
    assert!(trial.await.unwrap_err().is_cancelled());
    log.take();
    assert_eq!(served_by(&read(&client).await), Some("e1"), "the next request is the trial");
    assert_eq!(log.take(), ["e1 HalfOpen", "attempt e1", "e1 Closed"]);
}

#[tokio::test(start_paused = true)]
async fn open_time_grows_with_failed_trials_up_to_the_cap() {
    let (e1, e2) = (Provider::new("e1", true).await, Provider::new("e2", false).await);
    let (failover, client, log) = rig(&[&e1, &e2], None);
    let mut opens = Vec::new();
    while opens.len() < 12 {
        assert_eq!(served_by(&read(&client).await), Some("e2"));
        let opened = log.take().iter().find_map(|l| {
            let ms = l.strip_prefix("e1 Open { duration: ")?.strip_suffix(" }")?;
            Some(parse(ms))
        });
        let Some(open) = opened else { continue };
        opens.push(open);
        // Skipped until exactly the end of the open time, tried at once after it.
        tokio::time::advance(open - MS).await;
        assert!(failover.is_cooling_down("e1"));
        assert_eq!(served_by(&read(&client).await), Some("e2"));
        assert!(!log.take().iter().any(|l| l == "attempt e1"));
        tokio::time::advance(MS).await;
        assert!(!failover.is_cooling_down("e1"));
    }
    for (k, &open) in opens.iter().enumerate() {
        let nominal = (Duration::from_millis(250) * (1 << k)).min(CAP);
        assert!(within_jitter(open, nominal) && open <= CAP, "open {k}: {open:?}, nominal {nominal:?}");
    }
    assert_eq!(e1.attempts(), 3 + 11, "three failures, then one failed trial per open time");
}

/// A `Debug`-printed `Duration` as a `Duration`.
fn parse(debug: &str) -> Duration {
    let (number, unit) = debug.split_at(debug.find(|c: char| c.is_ascii_alphabetic()).unwrap());
    let n: f64 = number.parse().unwrap();
    match unit {
        "s" => Duration::from_secs_f64(n),
        "ms" => Duration::from_secs_f64(n / 1e3),
        "µs" => Duration::from_secs_f64(n / 1e6),
        other => panic!("unit {other}"),
    }
}

#[tokio::test(start_paused = true)]
async fn last_resort_sends_to_the_soonest_to_recover() {
    let (e1, e2) = (Provider::new("e1", false).await, Provider::new("e2", false).await);
    let (failover, client, log) = rig(&[&e1, &e2], None);
    // e2 opens first (250 ms ± 20 %: ends by 300 ms), e1 150 ms later (ends at 350 ms or later).
    trip(&client, &e2).await;
    tokio::time::advance(Duration::from_millis(150)).await;
    trip(&client, &e1).await;
    tokio::time::advance(Duration::from_millis(10)).await;
    assert!(failover.is_cooling_down("e1") && failover.is_cooling_down("e2"));
    log.take();
    let resp = client.post("http://127.0.0.1:9/").body("{}").send().await.unwrap();
    assert_eq!(served_by(&resp), Some("e2"), "not NoUsableEndpoint: the soonest to recover");
    assert_eq!(log.take(), ["skip e1", "skip e2", "e2 HalfOpen", "attempt e2", "e2 Closed"]);
    assert!(failover.is_cooling_down("e1"), "e1 is still open");
}

/// Real time (the trial reaches a real loopback server), no timing asserted: the order is held
/// by the test. A request that may not fail over waits (a read is sent beside the trial: see
/// the next test).
#[tokio::test]
async fn with_nothing_else_left_a_request_that_may_not_fail_over_waits_for_the_trial_in_flight_and_follows_its_success()
 {
    let only_one = Provider::new("only", false).await;
    let log = Log::default();
    let failover = failover_with(&[&only_one], None, &log, Some(Duration::from_secs(30)));
    let client = paused_client(failover.clone(), &[&only_one]);
    trip(&client, &only_one).await;
    assert!(failover.is_cooling_down("only"));
    only_one.hold_next();
    let spawn_write = || {
        let client = client.clone();
        tokio::spawn(async move { client.post("http://127.0.0.1:9/").body("{}").send().await })
    };
    let trial = spawn_write();
    only_one.arrived.notified().await;
    let waiter = spawn_write();
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    assert!(!waiter.is_finished(), "the second request waits: it is not failed with NoUsableEndpoint");
    assert_eq!(only_one.attempts(), 3 + 1, "and sends nothing while the trial is in flight");
    only_one.release.notify_one();
    for handle in [trial, waiter] {
        let resp = handle.await.unwrap().unwrap();
        assert_eq!(served_by(&resp), Some("only"));
    }
    assert_eq!(only_one.attempts(), 3 + 2, "the trial, then the waiting request once it closed the breaker");
    assert!(!failover.is_cooling_down("only"));
}

/// Issue 28: a read (it may fail over) with nothing else left does not wait for another
/// request's trial: a trial to a provider that hangs would hold every read for the attempt
/// timeout. It is sent beside the trial, as an ordinary attempt.
#[tokio::test]
async fn with_nothing_else_left_a_read_is_sent_beside_the_trial_in_flight() {
    let only_one = Provider::new("only", false).await;
    let log = Log::default();
    let failover = failover_with(&[&only_one], None, &log, Some(Duration::from_secs(30)));
    let client = paused_client(failover.clone(), &[&only_one]);
    trip(&client, &only_one).await;
    only_one.hold_next();
    let trial = tokio::spawn({
        let client = client.clone();
        async move { client.get("http://127.0.0.1:9/").send().await }
    });
    only_one.arrived.notified().await;
    let beside = client.get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(served_by(&beside), Some("only"), "answered while the trial is still held");
    assert_eq!(only_one.attempts(), 3 + 2);
    only_one.release.notify_one();
    assert_eq!(served_by(&trial.await.unwrap().unwrap()), Some("only"));
}

#[tokio::test(start_paused = true)]
async fn a_wait_for_another_requests_trial_lasts_at_most_the_attempt_timeout() {
    let only_one = Provider::new("only", true).await;
    let log = Log::default();
    let bound = Duration::from_secs(2);
    let failover = failover_with(&[&only_one], None, &log, Some(bound));
    let client = paused_client(failover.clone(), &[&only_one]);
    trip(&client, &only_one).await;
    // The trial is held before it is sent (no attempt timeout applies there): it never ends.
    only_one.hold_next();
    let trial = tokio::spawn({
        let client = client.clone();
        async move { read_err(&client).await }
    });
    only_one.arrived.notified().await;
    let started = Instant::now();
    // A request that may not fail over (a read would be sent beside the trial).
    let err = client.post("http://127.0.0.1:9/").body("{}").send().await.unwrap_err();
    assert!(failnext_error(&err).is_no_usable_endpoint(), "{err}");
    assert_eq!(started.elapsed(), bound, "one wait, as long as the attempt timeout, then no more");
    assert_eq!(only_one.attempts(), 3 + 1);
    only_one.release.notify_one();
    assert!(failnext_error(&trial.await.unwrap()).is_failover());
}

/// Without an attempt timeout nothing bounds a trial, so no request waits for one: with
/// nothing else left, it is sent beside the trial in flight as an ordinary attempt (an open
/// breaker is no proof the provider cannot answer). No usable endpoint only when nothing is.
#[tokio::test(start_paused = true)]
async fn without_a_bound_a_request_is_sent_beside_a_trial_in_flight_rather_than_refused() {
    let only_one = Provider::new("only", true).await;
    let (failover, client, _) = rig(&[&only_one], None);
    trip(&client, &only_one).await;
    assert!(failover.is_cooling_down("only"));
    // Open, its permit free: every request is sent, as the trial (the last resort).
    for _ in 0..3 {
        let err = read_err(&client).await;
        assert!(!failnext_error(&err).is_no_usable_endpoint() && failnext_error(&err).is_failover());
    }
    assert_eq!(only_one.attempts(), 3 + 3);
    // Its trial in flight: another request has nothing to send to.
    only_one.hold_next();
    let trial = tokio::spawn({
        let client = client.clone();
        async move { read_err(&client).await }
    });
    only_one.arrived.notified().await;
    let beside = read_err(&client).await;
    assert!(failnext_error(&beside).is_failover(), "sent beside the trial: {beside}");
    assert_eq!(only_one.attempts(), 3 + 3 + 2);
    only_one.release.notify_one();
    assert!(failnext_error(&trial.await.unwrap()).is_failover());
    // Every candidate excluded: no usable endpoint, whatever the breaker.
    let err = client.get("http://127.0.0.1:9/").exclude_endpoints(["only"]).send().await.unwrap_err();
    assert!(failnext_error(&err).is_no_usable_endpoint());
    assert_eq!(only_one.attempts(), 8);
}

async fn read_err(client: &ClientWithMiddleware) -> reqwest_middleware::Error {
    client.get("http://127.0.0.1:9/").send().await.unwrap_err()
}

#[tokio::test(start_paused = true)]
async fn a_denied_write_never_reaches_a_second_provider_whatever_the_breaker() {
    let (e1, e2, e3) =
        (Provider::new("e1", true).await, Provider::new("e2", true).await, Provider::new("e3", true).await);
    let (_, client, log) = rig(&[&e1, &e2, &e3], None);
    let write = || client.post("http://127.0.0.1:9/").body(r#"{"method":"eth_sendRawTransaction"}"#);
    let total = || e1.attempts() + e2.attempts() + e3.attempts();
    // Closed, open, half-open, last resort, probation: each write reaches exactly one provider,
    // whether it is denied by default or explicitly.
    let mut served = 0;
    for round in 0..60 {
        let before = total();
        let sent = if round % 2 == 0 { write().send().await } else { write().deny_failover().send().await };
        match sent {
            Ok(resp) => served += usize::from(served_by(&resp) == Some("e3")),
            Err(err) => assert_eq!(failnext_error(&err).attempts().len(), 1, "round {round}"),
        }
        assert_eq!(total(), before + 1, "round {round}: exactly one provider reached");
        tokio::time::advance(Duration::from_millis(100)).await;
        if round == 30 {
            e3.set_down(false);
        }
    }
    assert!(served > 0, "e3 came back and served writes");
    let trials = log.take().iter().filter(|l| l.ends_with("HalfOpen")).count();
    assert!(trials > 3, "the breaker's trials and last resort were exercised: {trials}");
}

#[tokio::test(start_paused = true)]
async fn reference_rule_has_no_last_resort() {
    let (e1, e2) = (Provider::new("e1", true).await, Provider::new("e2", true).await);
    let (failover, client, log) = rig(&[&e1, &e2], Some(Cooldown::new(1, HOUR)));
    read_err(&client).await;
    assert!(failover.is_cooling_down("e1") && failover.is_cooling_down("e2"));
    let err = read_err(&client).await;
    assert!(failnext_error(&err).is_no_usable_endpoint());
    assert_eq!((e1.attempts(), e2.attempts()), (1, 1));
    assert_eq!(log.take(), ["attempt e1", "attempt e2", "skip e1", "skip e2"], "and no Breaker event");
}

#[tokio::test(start_paused = true)]
async fn breaker_transitions_are_events_of_the_request_that_causes_them() {
    let (e1, e2) = (Provider::new("e1", true).await, Provider::new("e2", false).await);
    let (_, client, log) = rig(&[&e1, &e2], None);
    read(&client).await;
    read(&client).await;
    log.take();
    read(&client).await;
    let events = log.take();
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[0], "attempt e1");
    assert!(events[1].starts_with("e1 Open { duration: "), "{events:?}");
    assert_eq!(events[2], "attempt e2");
    tokio::time::advance(Duration::from_millis(300)).await;
    read(&client).await;
    let events = log.take();
    assert_eq!(events[..2], ["e1 HalfOpen", "attempt e1"]);
    assert!(events[2].starts_with("e1 Open { duration: "), "a failed trial re-opens: {events:?}");
    assert_eq!(events[3], "attempt e2");
    let _ = BreakerState::Closed;
}

/// End to end: the judge passes a 503's `Retry-After` to the breaker as the hint (the
/// breaker's side alone is pinned by `health::tests::a_hint_opens_at_once_for_exactly_that_long`).
#[tokio::test(start_paused = true)]
async fn retry_after_hint_keeps_the_endpoint_open_for_that_long() {
    let busy = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::any())
        .respond_with(wiremock::ResponseTemplate::new(503).insert_header("retry-after", "5"))
        .mount(&busy)
        .await;
    let e2 = status(200).await;
    let failover = builder([("e1", format!("{}/rpc", busy.uri())), ("e2", e2.url())])
        .no_attempt_timeout()
        .build()
        .unwrap();
    let http = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let client = ClientBuilder::new(http).with(failover.clone()).build();
    let hits = || busy.received_requests();
    assert_eq!(served_by(&read(&client).await), Some("e2"));
    assert!(failover.is_cooling_down("e1"), "one answer with a hint opens the breaker at once");
    tokio::time::advance(Duration::from_secs(5) - MS).await;
    assert_eq!(served_by(&read(&client).await), Some("e2"));
    assert_eq!(hits().await.map(|r| r.len()), Some(1), "no request for 5 s");
    tokio::time::advance(MS).await;
    assert!(!failover.is_cooling_down("e1"));
    read(&client).await;
    assert_eq!(hits().await.map(|r| r.len()), Some(2), "its trial, exactly 5 s later");
}

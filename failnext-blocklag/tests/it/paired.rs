//! The spawned schedule and the monitor as failnext's `HealthSource`: per-provider
//! publication (never late), evidence-weighed re-admission and contradictions (rarely wrong),
//! `check_now`. All under paused time, against loopback providers.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use failnext::{Endpoint, EndpointId, HealthSource, Observation};
use failnext_blocklag::{Monitor, MonitorBuilder, ProbeError};
use failnext_loopback::{Action, Received, Reply, Server};
use tokio::time::{Instant, sleep};

const MS: fn(u64) -> Duration = Duration::from_millis;
const SECS: fn(u64) -> Duration = Duration::from_secs;

/// What a [`Provider`] does with each request.
#[derive(Clone, Copy)]
#[repr(u8)]
enum Mode {
    Healthy = 0,
    Failing = 1,
    Hanging = 2,
    /// Healthy on its 1st, 3rd, ... request, 503 on the others.
    Alternating = 3,
}

/// The answers of a provider at `height` on chain 1 to `body`, one call or a batch: the head
/// block (stamped now) for `eth_getBlockByNumber`, the chain id, or the height.
fn answer_all(body: &serde_json::Value, height: u64, chain: u64) -> serde_json::Value {
    let answer = |call: &serde_json::Value| {
        let result = match call["method"].as_str() {
            Some("eth_chainId") => serde_json::json!(format!("{chain:#x}")),
            Some("eth_getBlockByNumber") => {
                let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
                serde_json::json!({
                    "number": format!("{height:#x}"),
                    "hash": format!("0x{height:064x}"),
                    "timestamp": format!("{:#x}", now.as_secs()),
                })
            }
            _ => serde_json::json!(format!("{height:#x}")),
        };
        serde_json::json!({"jsonrpc": "2.0", "id": call["id"], "result": result})
    };
    match body {
        serde_json::Value::Array(calls) => serde_json::Value::Array(calls.iter().map(answer).collect()),
        call => answer(call),
    }
}

/// A scripted JSON-RPC provider on the loopback toolkit: answers `eth_blockNumber` with its
/// height and `eth_chainId` with 1, fails with 503, or never answers.
struct Provider {
    server: Server,
    state: Arc<State>,
}

#[derive(Default)]
struct State {
    height: AtomicU64,
    /// Its chain id; 0 stands for 1 (the default).
    chain: AtomicU64,
    mode: AtomicU8,
    seen: AtomicUsize,
    /// Requests answered with a result.
    good: AtomicUsize,
}

impl Provider {
    async fn new(height: u64, mode: Mode) -> Provider {
        let state = Arc::new(State {
            height: AtomicU64::new(height),
            mode: AtomicU8::new(mode as u8),
            ..State::default()
        });
        let shared = state.clone();
        let server = Server::start(Arc::new(move |req: &Received| {
            let n = shared.seen.fetch_add(1, Ordering::SeqCst);
            let healthy = match shared.mode.load(Ordering::SeqCst) {
                0 => true,
                2 => return Action::Hang,
                3 => n % 2 == 0,
                _ => false,
            };
            if !healthy {
                return Action::Reply(Reply::new(503).closing());
            }
            shared.good.fetch_add(1, Ordering::SeqCst);
            let height = shared.height.load(Ordering::SeqCst);
            let chain = shared.chain.load(Ordering::SeqCst).max(1);
            Action::Reply(Reply::new(200).json(answer_all(&req.json(), height, chain).to_string()).closing())
        }))
        .await;
        Provider { server, state }
    }

    fn url(&self) -> String {
        self.server.url("/rpc")
    }

    fn requests(&self) -> usize {
        self.server.requests()
    }

    fn good_answers(&self) -> usize {
        self.state.good.load(Ordering::SeqCst)
    }

    fn set(&self, mode: Mode) {
        self.state.mode.store(mode as u8, Ordering::SeqCst);
    }

    fn set_chain(&self, chain: u64) {
        self.state.chain.store(chain, Ordering::SeqCst);
    }

    fn set_height(&self, height: u64) {
        self.state.height.store(height, Ordering::SeqCst);
    }
}

fn builder(providers: &[(&str, &Provider)]) -> MonitorBuilder {
    Monitor::builder(providers.iter().map(|(id, p)| Endpoint::new(*id, p.url())))
}

/// Providers a, b (in `b_mode`) and c at height 100, and their monitor spawned at 5 s, ready.
async fn three_at_100_spawned(
    b_mode: Mode,
) -> (Provider, Provider, Provider, Monitor, failnext_blocklag::MonitorHandle) {
    let (a, b, c) = (
        Provider::new(100, Mode::Healthy).await,
        Provider::new(100, b_mode).await,
        Provider::new(100, Mode::Healthy).await,
    );
    let monitor = builder(&[("a", &a), ("b", &b), ("c", &c)]).build().unwrap();
    let handle = monitor.spawn(SECS(5));
    assert!(handle.ready(SECS(1)).await);
    (a, b, c, monitor, handle)
}

fn id(name: &str) -> EndpointId {
    EndpointId::from(name)
}

fn checked(monitor: &Monitor, id: &str) -> Option<Instant> {
    monitor.snapshot().and_then(|s| s.entry(id).and_then(|e| e.checked()))
}

#[tokio::test(start_paused = true)]
async fn without_a_chain_id_the_spawned_monitor_learns_the_majoritys_and_holds_out_a_provider_on_another() {
    let (_a, b, c, monitor, handle) = three_at_100_spawned(Mode::Healthy).await;
    // c comes back from a restart on another chain: the failed read of the restart holds it
    // out at once; its re-check (an interval later: a and b serve, so the reads do not need
    // it sooner) finds the other chain.
    c.set_chain(5);
    monitor.observe(&id("c"), Observation::Failed);
    sleep(MS(100)).await;
    assert!(!monitor.eligible("c"));
    sleep(SECS(6)).await;
    assert!(HealthSource::never(&monitor, &id("c")), "{:?}", monitor.snapshot().unwrap().entry("c"));
    assert!(monitor.eligible("a") && monitor.eligible("b"));
    // Without traffic, its idle probe finds it within one interval.
    b.set_chain(5);
    sleep(SECS(6)).await;
    assert!(HealthSource::never(&monitor, &id("b")));
    within(handle.stop()).await;
}

/// Observes `id` answering badly every other time, every 100 ms, until dropped.
fn half_bad_traffic(monitor: &Monitor, id: &str) -> tokio::task::JoinHandle<()> {
    let (monitor, id) = (monitor.clone(), EndpointId::from(id));
    tokio::spawn(async move {
        loop {
            monitor.observe(&id, Observation::Answered { head: None });
            sleep(MS(100)).await;
            monitor.observe(&id, Observation::Failed);
            sleep(MS(100)).await;
        }
    })
}

#[tokio::test(start_paused = true)]
async fn a_hanging_provider_delays_no_other_providers_entry() {
    let (a, b, hang) = (
        Provider::new(100, Mode::Healthy).await,
        Provider::new(100, Mode::Healthy).await,
        Provider::new(100, Mode::Hanging).await,
    );
    // The probe timeout is set to 5 s, five intervals: the hanging probe holds for that long.
    let monitor = builder(&[("a", &a), ("b", &b), ("hang", &hang)]).probe_timeout(SECS(5)).build().unwrap();
    let started = Instant::now();
    let handle = monitor.spawn(SECS(1));

    sleep(MS(50)).await;
    let first = monitor.snapshot().expect("a and b published without waiting for hang");
    assert!(first.entry("a").unwrap().checked().is_some() && first.entry("b").unwrap().checked().is_some());
    assert_eq!(first.entry("hang").unwrap().checked(), None, "{first:?}");
    assert!(monitor.eligible("a") && monitor.eligible("b"));

    let (mut last_a, mut last_b) = (checked(&monitor, "a").unwrap(), checked(&monitor, "b").unwrap());
    for k in 1..=3 {
        a.set_height(100 + k);
        b.set_height(100 + k);
        sleep(MS(1_200)).await;
        let snapshot = monitor.snapshot().unwrap();
        let (at_a, at_b) = (checked(&monitor, "a").unwrap(), checked(&monitor, "b").unwrap());
        assert!(at_a > last_a && at_b > last_b, "round {k}: {snapshot:?}");
        assert_eq!((snapshot.height("a"), snapshot.height("b")), (Some(100 + k), Some(100 + k)));
        (last_a, last_b) = (at_a, at_b);
    }
    assert!(started.elapsed() < SECS(5));
    assert_eq!(checked(&monitor, "hang"), None, "the hanging probe has not ended yet");
    assert_eq!(hang.requests(), 1);
    within(handle.stop()).await;
    // The stop waited for the hanging probe, which then failed on its own.
    assert!(matches!(monitor.snapshot().unwrap().entry("hang").unwrap().error(), Some(ProbeError::Timeout)));
}

#[tokio::test(start_paused = true)]
async fn the_spawned_probe_timeout_follows_the_interval() {
    for (set, expected) in [(None, SECS(2)), (Some(SECS(5)), SECS(5))] {
        let (ok, hang) = (Provider::new(100, Mode::Healthy).await, Provider::new(100, Mode::Hanging).await);
        let mut builder = builder(&[("ok", &ok), ("hang", &hang)]);
        if let Some(timeout) = set {
            builder = builder.probe_timeout(timeout);
        }
        let monitor = builder.build().unwrap();
        let started = Instant::now();
        let handle = monitor.spawn(SECS(2));
        while checked(&monitor, "hang").is_none() {
            sleep(MS(10)).await;
        }
        let took = started.elapsed();
        assert!(took >= expected && took < expected + MS(50), "set {set:?}: failed after {took:?}");
        assert!(matches!(
            monitor.snapshot().unwrap().entry("hang").unwrap().error(),
            Some(ProbeError::Timeout)
        ));
        drop(handle);
    }
}

#[tokio::test(start_paused = true)]
async fn check_now_is_honoured_at_most_once_per_interval() {
    let p = Provider::new(100, Mode::Healthy).await;
    let monitor = builder(&[("p", &p)]).build().unwrap();
    let started = Instant::now();
    let at = |secs_tenths: u64| started + MS(secs_tenths * 100);
    // Before a schedule is spawned, there is nothing to wake.
    monitor.check_now(&id("p"));
    let handle = monitor.spawn(SECS(10));
    sleep(MS(100)).await;
    assert_eq!(p.requests(), 1, "the first probe");

    // 1 s: twenty requests, one probe.
    tokio::time::sleep_until(at(10)).await;
    for _ in 0..20 {
        monitor.check_now(&id("p"));
    }
    sleep(MS(100)).await;
    assert_eq!(p.requests(), 2);
    // 2 s and 5 s: within the interval of the honoured one, dropped (not queued).
    for tenths in [20, 50] {
        tokio::time::sleep_until(at(tenths)).await;
        for _ in 0..20 {
            monitor.check_now(&id("p"));
        }
    }
    // The next scheduled probe comes 9 to 11 s after the honoured one.
    tokio::time::sleep_until(at(99)).await;
    assert_eq!(p.requests(), 2, "a dropped request was queued");
    tokio::time::sleep_until(at(121)).await;
    assert_eq!(p.requests(), 3, "the scheduled probe");
    // 12.1 s: an interval after the honoured one, honoured again.
    monitor.check_now(&id("p"));
    monitor.check_now(&id("p"));
    sleep(MS(100)).await;
    assert_eq!(p.requests(), 4);
    // Unknown ids are ignored.
    monitor.check_now(&id("nobody"));
    within(handle.stop()).await;
}

#[tokio::test(start_paused = true)]
async fn a_behind_observation_makes_an_admitted_provider_ineligible_at_once() {
    let (a, b) = (Provider::new(100, Mode::Healthy).await, Provider::new(100, Mode::Healthy).await);
    let monitor = builder(&[("a", &a), ("b", &b)]).max_lag(2).build().unwrap();
    let handle = monitor.spawn(SECS(10));
    sleep(MS(100)).await;
    assert!(monitor.eligible("a"));
    // Real traffic served by a, all good so far.
    for _ in 0..10 {
        monitor.observe(&id("a"), Observation::Answered { head: Some(100) });
    }

    let behind = Observation::Behind { head: 90, floor: 98 };
    monitor.observe(&id("a"), behind);
    // At once: no await in between.
    assert!(!monitor.eligible("a"));
    assert!(!HealthSource::eligible(&monitor, &id("a")));
    let entry = monitor.snapshot().unwrap().entry("a").cloned().unwrap();
    assert_eq!(entry.contradiction(), Some(behind));
    assert!(!entry.is_eligible());
    assert!(monitor.eligible("b"));

    // ... and it is probed: its probe finds it at 100 again, which re-admits it.
    sleep(MS(100)).await;
    assert_eq!(a.requests(), 2);
    let entry = monitor.snapshot().unwrap().entry("a").cloned().unwrap();
    assert_eq!(entry.contradiction(), None);
    assert!(monitor.eligible("a"), "{entry:?}");

    // A plain failure rules it out too, until its re-check (at once) finds it good again.
    monitor.observe(&id("a"), Observation::Failed);
    assert!(!monitor.eligible("a"));
    sleep(MS(100)).await;
    assert!(monitor.eligible("a"));
    // A head behind of a provider already ineligible contradicts nothing.
    monitor.observe(&id("b"), Observation::Implausible { head: 10_000, limit: 200 });
    assert!(!monitor.eligible("b"));
    monitor.observe(&id("b"), Observation::Behind { head: 1, floor: 98 });
    assert_eq!(
        monitor.snapshot().unwrap().entry("b").unwrap().contradiction(),
        Some(Observation::Implausible { head: 10_000, limit: 200 })
    );
    within(handle.stop()).await;
}

#[tokio::test(start_paused = true)]
async fn three_attempts_outrun_in_a_row_make_an_admitted_provider_ineligible_until_its_probe_answers() {
    // failnext's hedge answered first while the attempt at a had run 80 ms without an answer.
    let (a, b) = (Provider::new(100, Mode::Healthy).await, Provider::new(100, Mode::Healthy).await);
    let monitor = builder(&[("a", &a), ("b", &b)]).max_lag(2).build().unwrap();
    let handle = monitor.spawn(SECS(10));
    sleep(MS(100)).await;
    for _ in 0..10 {
        monitor.observe(&id("a"), Observation::Answered { head: Some(100) });
    }
    // One outrun between good answers is the tail a hedge cuts off: no probe, still admitted.
    for _ in 0..5 {
        monitor.observe(&id("a"), Observation::Outrun { after: MS(80) });
        monitor.observe(&id("a"), Observation::Answered { head: Some(100) });
    }
    sleep(MS(100)).await;
    assert!(monitor.eligible("a"));
    assert_eq!(a.requests(), 1, "no probe for the tail latency");
    for _ in 0..3 {
        monitor.observe(&id("a"), Observation::Outrun { after: MS(80) });
    }
    assert!(!monitor.eligible("a"), "three in a row: ruled out at once");
    // Its probe runs now and answers: re-admitted.
    sleep(MS(100)).await;
    assert_eq!(a.requests(), 2);
    assert!(monitor.eligible("a"));
    // Hanging now: outrun attempts, then its probe times out, and it stays out.
    a.set(Mode::Hanging);
    for _ in 0..3 {
        monitor.observe(&id("a"), Observation::Outrun { after: MS(80) });
    }
    sleep(SECS(6)).await;
    assert!(!monitor.eligible("a"));
    within(handle.stop()).await;
}

#[tokio::test(start_paused = true)]
async fn a_provider_bad_on_half_its_answers_is_not_readmitted_by_one_good_probe() {
    let (a, p) = (Provider::new(100, Mode::Healthy).await, Provider::new(100, Mode::Alternating).await);
    let monitor = builder(&[("a", &a), ("p", &p)]).build().unwrap();
    // Real traffic finds p bad on every other answer.
    let traffic = half_bad_traffic(&monitor, "p");
    let handle = monitor.spawn(SECS(4));
    sleep(MS(100)).await;
    assert!(monitor.eligible("p"), "its first probe was good");

    // Its failures in traffic rule it out, each until a re-check; once its evidence is half
    // bad (two seconds of traffic), it is out for good.
    sleep(SECS(2)).await;
    while monitor.eligible("p") {
        sleep(MS(20)).await;
    }
    let (out_at, good_probes) = (Instant::now(), p.good_answers());
    let mut doubted = 0;
    while out_at.elapsed() < SECS(16) {
        sleep(MS(20)).await;
        let snapshot = monitor.snapshot().unwrap();
        let entry = snapshot.entry("p").unwrap();
        assert!(!monitor.eligible("p"), "re-admitted {:?} after it went out: {entry:?}", out_at.elapsed());
        if entry.is_doubted() {
            assert!(entry.bad_share().unwrap() > 0.25, "{entry:?}");
            doubted += 1;
        }
    }
    // Every other probe in those 16 s (on a backoff that grows to the interval) was good, and
    // none re-admitted it.
    assert!(p.good_answers() - good_probes >= 3, "{} good probes", p.good_answers() - good_probes);
    assert!(doubted > 0);
    assert!(monitor.eligible("a"));
    traffic.abort();
    within(handle.stop()).await;
}

#[tokio::test(start_paused = true)]
async fn a_recovered_provider_is_readmitted_at_its_first_good_probe() {
    let (a, p) = (Provider::new(100, Mode::Healthy).await, Provider::new(100, Mode::Healthy).await);
    let monitor = builder(&[("a", &a), ("p", &p)]).build().unwrap();
    let handle = monitor.spawn(SECS(4));
    // While admitted, p serves traffic well for a while.
    for _ in 0..20 {
        monitor.observe(&id("p"), Observation::Answered { head: None });
        sleep(MS(100)).await;
    }
    assert!(monitor.eligible("p"));

    // Then it goes down: its answers fail, failnext asks for a check, the probe fails.
    p.set(Mode::Failing);
    for _ in 0..3 {
        monitor.observe(&id("p"), Observation::Failed);
        monitor.check_now(&id("p"));
    }
    sleep(MS(100)).await;
    assert!(!monitor.eligible("p"));
    // Out, it gets no traffic; its probes (every second) keep failing for 5 s.
    sleep(SECS(5)).await;
    assert!(!monitor.eligible("p"));

    p.set(Mode::Healthy);
    let before = p.good_answers();
    while p.good_answers() == before {
        sleep(MS(1)).await;
    }
    // Its first good probe since it recovered re-admits it.
    sleep(MS(1)).await;
    let entry = monitor.snapshot().unwrap().entry("p").cloned().unwrap();
    assert!(monitor.eligible("p"), "{entry:?}");
    assert!(entry.bad_share().unwrap() <= 0.25, "{entry:?}");
    assert_eq!(p.good_answers(), before + 1);
    within(handle.stop()).await;
}

#[tokio::test(start_paused = true)]
async fn one_spawned_round_of_128_providers_sends_one_http_request_each() {
    // One server, a path per provider. Every spawned probe is one HTTP request: a batch of
    // eth_chainId and eth_getBlockByNumber, the chain id verified at every probe.
    let server = Server::start(Arc::new(|req: &Received| {
        Action::Reply(Reply::new(200).json(answer_all(&req.json(), 100, 1).to_string()).closing())
    }))
    .await;
    let endpoints = (0..128).map(|i| Endpoint::new(format!("p{i}"), server.url(&format!("/p{i}"))));
    let monitor = Monitor::builder(endpoints).expected_chain_id(1).build().unwrap();
    let handle = monitor.spawn(SECS(10));
    sleep(SECS(1)).await;
    let counts = |log: Vec<Received>| {
        let mut counts: HashMap<String, usize> = HashMap::new();
        for req in log {
            let calls: Vec<String> = req
                .json()
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| c["method"].as_str().unwrap_or_default().to_owned())
                .collect();
            assert_eq!(calls, ["eth_chainId", "eth_getBlockByNumber"], "one batch of both");
            *counts.entry(req.target.clone()).or_default() += 1;
        }
        counts
    };
    let first = counts(server.take_log());
    assert_eq!(first.len(), 128, "every provider probed");
    assert!(first.values().all(|&n| n == 1), "{first:?}");
    let snapshot = monitor.snapshot().unwrap();
    assert!(snapshot.entries().iter().all(|e| e.is_eligible() && e.checked().is_some()));
    assert!(snapshot.entries().iter().all(|e| e.head_timestamp().is_some()));

    // The next round (9 to 11 s later): again one request per provider.
    sleep(SECS(11)).await;
    let second = counts(server.take_log());
    assert_eq!(second.len(), 128);
    assert!(second.values().all(|&n| n == 1), "{second:?}");
    within(handle.stop()).await;
}

#[tokio::test(start_paused = true)]
async fn a_provider_that_refuses_batches_is_probed_with_separate_calls_found_once() {
    // It answers a batch with one JSON-RPC error object, as providers without batch support do.
    let server = Server::start(Arc::new(|req: &Received| {
        let body = req.json();
        let reply = if body.is_array() {
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"batch requests are not supported"}}"#
                .to_owned()
        } else {
            answer_all(&body, 100, 1).to_string()
        };
        Action::Reply(Reply::new(200).json(reply).closing())
    }))
    .await;
    let monitor =
        Monitor::builder([Endpoint::new("single", server.url("/rpc"))]).expected_chain_id(1).build().unwrap();
    let handle = monitor.spawn(SECS(10));
    sleep(SECS(1)).await;
    let batches = |log: &[Received]| log.iter().filter(|r| r.json().is_array()).count();
    let first = server.take_log();
    assert_eq!((batches(&first), first.len()), (1, 3), "a batch, then the two calls");
    assert!(monitor.eligible("single"));
    assert!(monitor.snapshot().unwrap().entries()[0].head_timestamp().is_some());
    sleep(SECS(11)).await;
    let second = server.take_log();
    assert_eq!((batches(&second), second.len()), (0, 2), "found once: separate calls since");
    within(handle.stop()).await;
}

#[tokio::test(start_paused = true)]
async fn head_is_the_reference_height_last_reported_with_max_lag_as_tolerance() {
    let (a, b) = (Provider::new(100, Mode::Healthy).await, Provider::new(98, Mode::Healthy).await);
    let monitor = builder(&[("a", &a), ("b", &b)]).max_lag(3).build().unwrap();
    assert_eq!(monitor.head(), None);
    let handle = monitor.spawn(SECS(10));
    sleep(MS(100)).await;
    let head = monitor.head().expect("published");
    assert_eq!((head.number(), head.blocks_of_tolerance()), (100, 3));
    assert_eq!(Some(head.seen()), checked(&monitor, "a"));
    assert_eq!(head.known_block_time(), None, "the head has not moved yet");
    within(handle.stop()).await;
}

/// `future`, within a minute of (paused) time: turns a hang into a failure.
async fn within<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(SECS(60), future).await.expect("finished in time")
}

#[tokio::test]
async fn a_failover_paired_after_the_first_probes_gets_their_latencies_at_once() {
    let (a, b) = (Provider::new(100, Mode::Healthy).await, Provider::new(100, Mode::Healthy).await);
    let monitor = builder(&[("a", &a), ("b", &b)]).build().unwrap();
    let schedule = monitor.spawn(SECS(60));
    assert!(within(schedule.ready(SECS(5))).await, "both first probes published");
    let endpoints = [Endpoint::new("a", a.url()), Endpoint::new("b", b.url())];
    let failover = failnext::Failover::builder(endpoints)
        .latency_ordering(failnext::LatencyOrdering::new(MS(10)))
        .monitor(schedule)
        .build()
        .unwrap();
    // The next probe is a minute away: only the snapshot taken before pairing can have fed
    // these.
    let health = failover.health();
    assert!(health.endpoints().iter().all(|e| e.latency().is_some()), "{health:?}");
}

#[tokio::test(start_paused = true)]
async fn with_probes_every_five_seconds_a_recovered_provider_serves_again_at_its_first_good_answer() {
    let (a, b) = (Provider::new(100, Mode::Healthy).await, Provider::new(100, Mode::Healthy).await);
    let monitor = builder(&[("a", &a), ("b", &b)]).build().unwrap();
    let handle = monitor.spawn(SECS(5));
    assert!(handle.ready(SECS(1)).await);
    // A read fails at a: out at once, and its re-checks fail on a backoff (50, 100, 200 ms ...).
    a.set(Mode::Failing);
    monitor.observe(&id("a"), Observation::Failed);
    assert!(!monitor.eligible("a"));
    sleep(MS(2_500)).await;
    assert!(!monitor.eligible("a"));
    // It recovers between two re-checks: nothing admits it yet...
    a.set(Mode::Healthy);
    sleep(MS(20)).await;
    assert!(!monitor.eligible("a"), "its next re-check is about a second away");
    // ... until its first good answer (a reserve read), which has it probed at once.
    monitor.observe(&id("a"), Observation::Answered { head: Some(100) });
    sleep(MS(1)).await;
    assert!(monitor.eligible("a"));
    within(handle.stop()).await;
}

/// Observes `id` answering `head` every 50 ms, `times` times.
async fn answers_every_50_ms(monitor: &Monitor, id: &str, head: u64, times: usize) {
    for _ in 0..times {
        monitor.observe(&EndpointId::from(id), Observation::Answered { head: Some(head) });
        sleep(MS(50)).await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_provider_that_answers_after_a_quiet_spell_has_its_chain_probed_at_once_not_intervals_later() {
    let (_a, _b, c, monitor, handle) = three_at_100_spawned(Mode::Healthy).await;
    // c serves reads without a pause for 12 s: traffic is its probe (once in four intervals).
    let before = c.requests();
    answers_every_50_ms(&monitor, "c", 100, 240).await;
    assert!(c.requests() - before <= 1, "probed {} times while it served", c.requests() - before);
    // The reads go elsewhere for a second, and c restarts onto another chain meanwhile, too
    // fast for anything to see it down. Its answers show the chain's heights, as before.
    sleep(MS(500)).await;
    c.set_chain(5);
    sleep(MS(500)).await;
    let resumed = Instant::now();
    answers_every_50_ms(&monitor, "c", 100, 2).await;
    // Its first answer after the quiet spell had its probe (with `eth_chainId`) sent at once.
    assert!(HealthSource::never(&monitor, &id("c")), "{:?}", monitor.snapshot().unwrap().entry("c"));
    assert!(!monitor.eligible("c"));
    assert!(checked(&monitor, "c").is_some_and(|at| at >= resumed));
    assert!(monitor.eligible("a") && monitor.eligible("b"));
    within(handle.stop()).await;
}

#[tokio::test(start_paused = true)]
async fn a_provider_answering_far_ahead_of_the_chain_has_its_chain_probed_at_once() {
    let (_a, _b, c, monitor, handle) = three_at_100_spawned(Mode::Healthy).await;
    // c serves reads without a pause: traffic is its probe (once in four intervals).
    answers_every_50_ms(&monitor, "c", 100, 40).await;
    // It moves onto another chain, higher up, without a pause in its answers: they show a
    // head 500 blocks ahead of every other provider's, answered well.
    c.set_chain(5);
    let moved = Instant::now();
    answers_every_50_ms(&monitor, "c", 600, 2).await;
    assert!(HealthSource::never(&monitor, &id("c")), "{:?}", monitor.snapshot().unwrap().entry("c"));
    assert!(checked(&monitor, "c").is_some_and(|at| at >= moved));
    assert!(monitor.eligible("a") && monitor.eligible("b"));
    within(handle.stop()).await;
}

#[tokio::test(start_paused = true)]
async fn a_held_out_provider_answering_a_reserve_read_after_a_quiet_spell_has_its_chain_probed_at_once() {
    let (_a, _b, c, monitor, handle) = three_at_100_spawned(Mode::Failing).await;
    // c falls behind; a read fails there, and its probe (at once: with b down, the reads
    // need it) finds it lagging: held out, not for failing.
    c.set_height(90);
    monitor.observe(&id("c"), Observation::Failed);
    sleep(MS(100)).await;
    assert!(!monitor.eligible("c") && !HealthSource::never(&monitor, &id("c")));
    // Its re-checks find it lagging on a backoff (50, 100, 200, 400, 800 ms...). Between two
    // of them it is back at the head, restarted onto another chain, and answers a read as the
    // reserve: its probe runs now, not at its next re-check.
    sleep(MS(1_900)).await;
    c.set_chain(5);
    c.set_height(100);
    monitor.observe(&id("c"), Observation::Answered { head: Some(100) });
    sleep(MS(20)).await;
    assert!(HealthSource::never(&monitor, &id("c")), "{:?}", monitor.snapshot().unwrap().entry("c"));
    within(handle.stop()).await;
}

#[tokio::test]
async fn a_provider_first_probed_behind_the_others_teaches_no_block_time_and_is_never_served() {
    // Before, the reference's jump from 80 to 100 within a millisecond of the first probes was
    // learnt as the block time: heads were projected thousands of blocks ahead, every answer
    // overruled, and the lagging provider served what was left.
    let (a, b, c) = (
        Provider::new(80, Mode::Healthy).await,
        Provider::new(100, Mode::Healthy).await,
        Provider::new(100, Mode::Healthy).await,
    );
    let endpoints: Vec<Endpoint> =
        [("a", &a), ("b", &b), ("c", &c)].iter().map(|(i, p)| Endpoint::new(*i, p.url())).collect();
    let monitor = Monitor::builder(endpoints.clone()).build().unwrap();
    let schedule = monitor.spawn(MS(500));
    assert!(schedule.ready(SECS(2)).await);
    let failover = failnext::Failover::builder(endpoints)
        .classifier(failnext::jsonrpc::JsonRpcClassifier::new())
        .monitor(schedule)
        .build()
        .unwrap();
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new()).with(failover).build();
    for _ in 0..20 {
        let resp = failnext::RequestBuilderExt::allow_failover(
            client
                .post("http://127.0.0.1:9/")
                .header("content-type", "application/json")
                .body(r#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}"#),
        )
        .send()
        .await
        .unwrap();
        let by = resp.extensions().get::<failnext::ServedBy>().map(|s| s.0.to_string());
        assert_ne!(by.as_deref(), Some("a"));
        assert!(resp.text().await.unwrap().contains("0x64"));
        sleep(MS(20)).await;
    }
    assert_eq!(monitor.snapshot().unwrap().block_time(), None, "the head never moved");
}

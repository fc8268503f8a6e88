//! Hedged reads (`Hedge`, opt-in), under paused tokio time: the servers delay with tokio
//! timers, so a 300 ms primary costs no real time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use failnext::{
    Budget, Classified, Classifier, EndpointId, FailoverBuilder, Hedge, Judgement, NotTried,
    RequestBuilderExt, ServedBy, Trace, TraceStep,
};
use tokio::time::Instant;

use crate::support::events::*;
use crate::support::*;

async fn after(ms: u64) -> failnext_loopback::Server {
    delayed(ms).await.0
}

/// The builder of [`hedged`]: two endpoints, hedged after 20 ms.
fn hedged_builder(
    primary: &failnext_loopback::Server,
    backup: &failnext_loopback::Server,
) -> FailoverBuilder {
    builder([("primary", primary.url("/")), ("backup", backup.url("/"))])
        .no_attempt_timeout()
        .hedge(Hedge::after(Duration::from_millis(20)))
}

/// Two endpoints, hedged after 20 ms.
fn hedged(primary: &failnext_loopback::Server, backup: &failnext_loopback::Server) -> failnext::Failover {
    hedged_builder(primary, backup).build().unwrap()
}

/// Two endpoints, hedged after 20 ms, within `budget`.
fn hedged_within(
    primary: &failnext_loopback::Server,
    backup: &failnext_loopback::Server,
    budget: Budget,
) -> failnext::Failover {
    hedged_builder(primary, backup).failover_budget(budget).build().unwrap()
}

fn served(resp: &reqwest::Response) -> &str {
    resp.extensions().get::<ServedBy>().unwrap().0.as_str()
}

#[tokio::test(start_paused = true)]
async fn a_read_hedged_after_20_ms_is_answered_within_1_3_times_the_backups_latency() {
    // The primary answers 200 ms slower than the backup (100 ms).
    let (primary, backup) = (after(300).await, after(100).await);
    let failover = hedged(&primary, &backup);
    let c = client(failover);
    for _ in 0..5 {
        let started = Instant::now();
        let resp = c.get("http://127.0.0.1:9/").allow_failover().trace().send().await.unwrap();
        let took = started.elapsed();
        assert_eq!(served(&resp), "backup");
        assert!(took <= Duration::from_millis(130), "{took:?}: at most 1.3 × the backup's 100 ms");
        let trace = resp.extensions().get::<Trace>().unwrap();
        assert_eq!(trace.entry("backup").unwrap().steps()[0], TraceStep::Hedged, "{trace}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_fast_primary_is_not_hedged_and_a_write_never_is() {
    let (primary, backup) = (after(10).await, after(10).await);
    let failover = hedged(&primary, &backup);
    let c = client(failover);
    assert_eq!(served(&c.get("http://127.0.0.1:9/").allow_failover().send().await.unwrap()), "primary");
    assert_eq!(backup.requests(), 0, "answered before the hedge delay: no hedge");
    let slow = after(300).await;
    let failover = hedged(&slow, &backup);
    let resp = client(failover).post("http://127.0.0.1:9/").body("{}").send().await.unwrap();
    assert_eq!(served(&resp), "primary", "a POST may not fail over: never hedged");
    assert_eq!(backup.requests(), 0);
}

#[tokio::test(start_paused = true)]
async fn with_latency_ordering_a_primary_whose_attempts_are_always_outrun_loses_first_place() {
    // Every first attempt to the slow primary is cancelled by its hedge: only the time it had
    // run (20 ms + the backup's 100 ms) measures it. Without that sample it would stay first.
    let (primary, backup) = (after(300).await, after(100).await);
    let failover = builder([("primary", primary.url("/")), ("backup", backup.url("/"))])
        .no_attempt_timeout()
        .hedge(Hedge::after(Duration::from_millis(20)))
        .latency_ordering(failnext::LatencyOrdering::new(Duration::from_millis(10)).explore_every(0))
        .build()
        .unwrap();
    let c = client(failover);
    // Which endpoint was the hedge (started second) in each request.
    let mut hedge = Vec::new();
    for _ in 0..6 {
        let resp = c.get("http://127.0.0.1:9/").allow_failover().trace().send().await.unwrap();
        assert_eq!(served(&resp), "backup");
        let trace = resp.extensions().get::<Trace>().unwrap();
        let hedged = ["primary", "backup"]
            .into_iter()
            .find(|id| trace.entry(id).unwrap().steps().first() == Some(&TraceStep::Hedged));
        hedge.push(hedged.unwrap_or("none"));
    }
    assert_eq!(hedge[0], "backup", "unmeasured: the configured order, the primary first");
    assert_eq!(*hedge.last().unwrap(), "primary", "{hedge:?}: the outrun primary measured slower, second");
}

#[tokio::test(start_paused = true)]
async fn with_latency_ordering_the_hedge_goes_to_the_fastest_endpoint_left_not_the_next_in_order() {
    // a and b answer in 300 ms, c in 100 ms, d in 120 ms: c goes first, and its hedge to d
    // (120 ms), not to a (the next in order, 300 ms).
    let (a, b, c, d) = (after(300).await, after(300).await, after(100).await, after(120).await);
    let failover = builder([("a", a.url("/")), ("b", b.url("/")), ("c", c.url("/")), ("d", d.url("/"))])
        .no_attempt_timeout()
        .hedge(Hedge::after(Duration::from_millis(20)))
        .latency_ordering(failnext::LatencyOrdering::new(Duration::from_millis(10)).explore_every(0))
        .build()
        .unwrap();
    for (id, ms) in [("a", 300), ("b", 300), ("c", 100), ("d", 120)] {
        failover.observe_latency(id, Duration::from_millis(ms));
    }
    let c_client = client(failover);
    let resp = c_client.get("http://127.0.0.1:9/").allow_failover().trace().send().await.unwrap();
    assert_eq!(served(&resp), "c");
    let trace = resp.extensions().get::<Trace>().unwrap();
    assert_eq!(trace.entry("d").unwrap().steps().first(), Some(&TraceStep::Hedged), "{trace}");
    assert_eq!((a.requests(), b.requests()), (0, 0), "the slow ones are not hedged to: {trace}");
}

#[tokio::test(start_paused = true)]
async fn without_latency_ordering_the_hedge_goes_to_the_next_in_order() {
    let (a, b) = (after(300).await, after(100).await);
    let (c, d) = (after(300).await, after(20).await);
    let failover = builder([("a", a.url("/")), ("b", b.url("/")), ("c", c.url("/")), ("d", d.url("/"))])
        .no_attempt_timeout()
        .hedge(Hedge::after(Duration::from_millis(20)))
        .build()
        .unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").allow_failover().trace().send().await.unwrap();
    assert_eq!(served(&resp), "b", "a, then its hedge b: the configured order");
    assert_eq!((c.requests(), d.requests()), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn the_outrun_first_attempt_is_traced_as_cancelled() {
    let (primary, backup) = (after(300).await, after(100).await);
    let c = client(hedged(&primary, &backup));
    let resp = c.get("http://127.0.0.1:9/").allow_failover().trace().send().await.unwrap();
    assert_eq!(served(&resp), "backup");
    let trace = resp.extensions().get::<Trace>().unwrap();
    assert_eq!(trace.entry("primary").unwrap().steps(), [TraceStep::Cancelled { attempt: 1 }], "{trace}");
    assert_eq!(trace.entry("backup").unwrap().steps()[0], TraceStep::Hedged, "{trace}");
}

#[tokio::test(start_paused = true)]
async fn a_hedge_is_one_event_naming_both_endpoints_before_either_attempts_event() {
    // The hedge wins: the cancelled first attempt has no Attempt event.
    let ((primary, delay), backup) = (delayed(300).await, after(100).await);
    let rec = Recorder::new();
    let failover = builder([("primary", primary.url("/")), ("backup", backup.url("/"))])
        .no_attempt_timeout()
        .hedge(Hedge::after(Duration::from_millis(20)))
        .on_event(rec.hook())
        .build()
        .unwrap();
    let c = client(failover);
    c.get("http://127.0.0.1:9/").allow_failover().send().await.unwrap();
    assert_eq!(
        rec.take(),
        [hedge("backup", "primary", 20), attempt("backup", 2, 200), result("backup", 200)]
    );
    // The first attempt wins: the hedge is cancelled, and still one event.
    delay.store(50, Ordering::SeqCst);
    c.get("http://127.0.0.1:9/").allow_failover().send().await.unwrap();
    assert_eq!(
        rec.take(),
        [hedge("backup", "primary", 20), attempt("primary", 1, 200), result("primary", 200)]
    );
    // Answered before the delay: no hedge, no event.
    delay.store(10, Ordering::SeqCst);
    c.get("http://127.0.0.1:9/").allow_failover().send().await.unwrap();
    assert_eq!(rec.take(), [attempt("primary", 1, 200), result("primary", 200)]);
}

#[tokio::test(start_paused = true)]
async fn a_read_that_denies_failover_is_never_hedged() {
    let (primary, backup) = (after(300).await, after(10).await);
    let c = client(hedged(&primary, &backup));
    let resp = c.get("http://127.0.0.1:9/").deny_failover().send().await.unwrap();
    assert_eq!(served(&resp), "primary");
    assert_eq!(backup.requests(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_streaming_body_is_never_hedged() {
    let (primary, backup) = (after(300).await, after(10).await);
    let c = client(hedged(&primary, &backup));
    let chunks = futures::stream::iter([Ok::<_, std::io::Error>("{\"id\":1}")]);
    let resp = c
        .get("http://127.0.0.1:9/")
        .body(reqwest::Body::wrap_stream(chunks))
        .allow_failover()
        .send()
        .await
        .unwrap();
    assert_eq!(served(&resp), "primary", "a stream cannot be sent twice: never hedged");
    assert_eq!(backup.requests(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_hedge_needs_a_budget_token_and_without_one_the_first_attempt_goes_on_alone() {
    let (primary, backup) = (after(300).await, after(100).await);
    // One token, never refilled.
    let c = client(hedged_within(&primary, &backup, Budget::new(0.0).min_per_sec(0).max_balance(1)));
    assert_eq!(served(&c.get("http://127.0.0.1:9/").allow_failover().send().await.unwrap()), "backup");
    let started = Instant::now();
    let resp = c.get("http://127.0.0.1:9/").allow_failover().send().await.unwrap();
    assert_eq!(served(&resp), "primary", "the budget is spent: no hedge");
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(backup.requests(), 1, "only the hedge that had its token");
}

#[tokio::test(start_paused = true)]
async fn a_hedge_the_budget_refuses_uses_nothing_up_and_the_failover_still_reaches_its_candidate() {
    let (primary, backup) = (delayed_status(1500, 503).await.0, after(10).await);
    // One token to start, then one a second.
    let c = client(hedged_within(&primary, &backup, Budget::new(0.0).min_per_sec(1).max_balance(1)));
    // The first request's hedge takes the token.
    assert_eq!(served(&c.get("http://127.0.0.1:9/").allow_failover().send().await.unwrap()), "backup");
    let resp = c.get("http://127.0.0.1:9/").allow_failover().trace().send().await.unwrap();
    let trace = resp.extensions().get::<Trace>().unwrap().clone();
    assert_eq!(
        served(&resp),
        "backup",
        "the failover after the 503 reached the candidate the hedge did not use"
    );
    let primary_steps = trace.entry("primary").unwrap().steps();
    assert_eq!(primary_steps[0], TraceStep::NotHedged(NotTried::BudgetSpent), "{trace}");
    assert!(matches!(primary_steps[1], TraceStep::Tried { attempt: 1, .. }), "{trace}");
    assert!(
        matches!(trace.entry("backup").unwrap().steps(), [TraceStep::Tried { attempt: 2, .. }]),
        "{trace}"
    );
    assert!(trace.to_string().contains("primary: not hedged: failover budget spent"), "{trace}");
    assert_eq!(backup.requests(), 2, "the first request's hedge and this failover");
}

// ===== percentile delay =====

/// Two endpoints hedged by `hedge`; the primary answers in 100 ms until told otherwise
/// through the returned handle, the backup in 10 ms. The recorder keeps the events.
async fn percentile(hedge: Hedge) -> Percentile {
    let (primary, delay) = delayed(100).await;
    let backup = after(10).await;
    let rec = Recorder::new();
    let failover = builder([("primary", primary.url("/")), ("backup", backup.url("/"))])
        .no_attempt_timeout()
        .hedge(hedge)
        .on_event(rec.hook())
        .build()
        .unwrap();
    Percentile { client: client(failover), delay, rec, _primary: primary, _backup: backup }
}

struct Percentile {
    client: reqwest_middleware::ClientWithMiddleware,
    delay: Arc<AtomicU64>,
    rec: Recorder,
    _primary: failnext_loopback::Server,
    _backup: failnext_loopback::Server,
}

impl Percentile {
    /// Sends `n` reads.
    async fn warm(&self, n: usize) {
        for _ in 0..n {
            self.read().await;
        }
        self.rec.take();
    }

    /// One read: who served it and how long it took.
    async fn read(&self) -> (String, Duration) {
        let started = Instant::now();
        let resp = self.client.get("http://127.0.0.1:9/").allow_failover().send().await.unwrap();
        (served(&resp).to_owned(), started.elapsed())
    }

    /// The primary stops answering (for a minute of tokio time).
    fn hang(&self) {
        self.delay.store(60_000, Ordering::SeqCst);
    }

    /// The delay of the one hedge recorded since the last call.
    fn hedged_after(&self) -> Duration {
        let hedges: Vec<Duration> = self
            .rec
            .take()
            .into_iter()
            .filter_map(|ev| match ev {
                Ev::Hedge(ep, 2, first, after) if ep == "backup" && first == "primary" => Some(after),
                Ev::Hedge(..) => panic!("another hedge: {ev:?}"),
                _ => None,
            })
            .collect();
        assert_eq!(hedges.len(), 1, "one hedge event: {hedges:?}");
        hedges[0]
    }
}

const MS: Duration = Duration::from_millis(1);

#[tokio::test(start_paused = true)]
async fn a_percentile_hedge_fires_at_the_first_endpoints_p90_not_the_fallback() {
    let p = percentile(Hedge::percentile(0.9).fallback(Duration::from_secs(1))).await;
    p.warm(20).await;
    p.hang();
    let (served, took) = p.read().await;
    assert_eq!(served, "backup");
    let after = p.hedged_after();
    assert!((100 * MS..101 * MS).contains(&after), "p90 of 100 ms answers: {after:?}");
    assert!((110 * MS..120 * MS).contains(&took), "the hedge at ~100 ms + the backup's 10 ms: {took:?}");
}

#[tokio::test(start_paused = true)]
async fn a_percentile_hedge_uses_its_fallback_until_the_endpoint_has_16_samples() {
    let p = percentile(Hedge::percentile(0.9).fallback(300 * MS)).await;
    p.warm(15).await;
    p.hang();
    let (served, took) = p.read().await;
    assert_eq!(served, "backup");
    assert_eq!(p.hedged_after(), 300 * MS, "15 samples are too few: the fallback");
    assert!((310 * MS..320 * MS).contains(&took), "{took:?}");
}

#[tokio::test(start_paused = true)]
async fn without_a_fallback_an_unmeasured_endpoint_is_not_hedged() {
    let p = percentile(Hedge::percentile(0.9)).await;
    p.delay.store(500, Ordering::SeqCst);
    let (served, took) = p.read().await;
    assert_eq!(served, "primary", "no samples, no fallback: no hedge");
    assert!(took >= 500 * MS);
    assert!(p.rec.take().iter().all(|ev| !matches!(ev, Ev::Hedge(..))));
}

#[tokio::test(start_paused = true)]
async fn the_ceiling_and_the_floor_bound_a_percentile_delay() {
    let p = percentile(Hedge::percentile(0.9).at_most(50 * MS)).await;
    p.warm(20).await;
    p.hang();
    let (served, took) = p.read().await;
    assert_eq!(served, "backup");
    assert_eq!(p.hedged_after(), 50 * MS, "p90 is 100 ms, the ceiling 50 ms");
    assert!((60 * MS..70 * MS).contains(&took), "{took:?}");

    let p = percentile(Hedge::percentile(0.9).at_least(200 * MS)).await;
    p.warm(20).await;
    p.hang();
    let (served, took) = p.read().await;
    assert_eq!(served, "backup");
    assert_eq!(p.hedged_after(), 200 * MS, "p90 is 100 ms, the floor 200 ms");
    assert!((210 * MS..220 * MS).contains(&took), "{took:?}");
}

#[tokio::test(start_paused = true)]
async fn hedging_the_slow_tail_does_not_make_the_percentile_forget_it() {
    // The primary answers in 100 ms, one in four in 1 s: p90 is 1 s, hedged at the 500 ms
    // ceiling. The slow ones are then cancelled at 510 ms (the backup's answer) and still
    // count, as the time they ran, so p90 stays among them; were they left out, only the
    // 100 ms answers would come in and the delay would sink to 100 ms.
    let p = percentile(Hedge::percentile(0.9).at_most(500 * MS)).await;
    let mut hedged = 0;
    for k in 0..64 {
        p.delay.store(if k % 4 == 0 { 1000 } else { 100 }, Ordering::SeqCst);
        hedged += usize::from(p.read().await.0 == "backup");
    }
    assert_eq!(hedged, 12, "the slow ones after the first 16 requests");
    p.rec.take();
    p.hang();
    p.read().await;
    assert_eq!(p.hedged_after(), 500 * MS, "the slow quarter is still in the samples");
}

#[test]
fn an_impossible_percentile_or_a_floor_above_the_ceiling_is_a_config_error() {
    let build = |hedge: Hedge| {
        builder([("a", "http://127.0.0.1:1/".to_owned()), ("b", "http://127.0.0.1:2/".to_owned())])
            .hedge(hedge)
            .build()
            .map(drop)
    };
    for q in [f64::NAN, 0.0, 1.0, -0.1, 1.1] {
        let err = build(Hedge::percentile(q)).unwrap_err();
        assert!(err.to_string().contains("percentile"), "{q}: {err}");
    }
    let err = build(Hedge::after(20 * MS).at_least(2 * MS).at_most(MS)).unwrap_err();
    assert!(err.to_string().contains("ceiling"), "{err}");
    assert!(build(Hedge::percentile(0.99).at_least(MS).at_most(MS)).is_ok());
}

// ===== the losing attempt =====

/// Holds every answer until the instant it is set to, so that both attempts of a hedge
/// complete in the same poll.
struct HoldUntil(Arc<Mutex<Instant>>);

#[async_trait::async_trait]
impl Classifier for HoldUntil {
    async fn classify(&self, _: &EndpointId, response: reqwest::Response) -> Classified {
        let until = *self.0.lock().unwrap();
        tokio::time::sleep_until(until).await;
        Classified::Response(response, Judgement::answer())
    }
}

/// A keep-alive server that answers after 10 ms with a 2 KiB body sent 150 ms after the
/// headers (still on its way when the response is given up).
async fn slow_small_body() -> failnext_loopback::Server {
    failnext_loopback::Server::start_later(Arc::new(
        |_: &failnext_loopback::Received| -> failnext_loopback::Later {
            Box::pin(async {
                tokio::time::sleep(10 * MS).await;
                let reply =
                    failnext_loopback::Reply::new(200).length(2048).pause(150 * MS).send(vec![b'x'; 2048]);
                failnext_loopback::Action::Reply(reply)
            })
        },
    ))
    .await
}

// In real time: under paused time, the drain's own bound can pass (auto-advanced) before the
// pooled connection's reader has been polled, which says nothing about a real client.
#[tokio::test]
async fn a_losing_answer_whose_headers_came_is_drained_and_keeps_its_connection() {
    // The hedge (backup, 20 + 10 ms) and the first attempt (primary, 40 ms) both have their
    // answer's headers when the classifier lets them go at once, at 100 ms: the first wins,
    // the hedge's small answer is read to its end in the background (its body comes at
    // 180 ms), and its connection serves the next hedge. (Dropped with its body on the way,
    // every hedge would open a new connection.)
    let (primary, backup) = (after(40).await, slow_small_body().await);
    let until = Arc::new(Mutex::new(Instant::now()));
    let failover = builder([("primary", primary.url("/")), ("backup", backup.url("/"))])
        .no_attempt_timeout()
        .hedge(Hedge::after(20 * MS))
        .classifier(HoldUntil(until.clone()))
        .build()
        .unwrap();
    let c = client(failover);
    for _ in 0..5 {
        *until.lock().unwrap() = Instant::now() + 100 * MS;
        let resp = c.get("http://127.0.0.1:9/").allow_failover().trace().send().await.unwrap();
        assert_eq!(served(&resp), "primary");
        let trace = resp.extensions().get::<Trace>().unwrap();
        assert!(
            matches!(
                trace.entry("backup").unwrap().steps(),
                [TraceStep::Hedged, TraceStep::Tried { attempt: 2, .. }]
            ),
            "the loser's outcome is traced: {trace}"
        );
        // Let the drain finish and the pool take the connection back.
        tokio::time::sleep(150 * MS).await;
    }
    assert_eq!(backup.requests(), 5);
    let opened = backup.connections();
    assert!(opened <= 2, "5 hedges opened {opened} connections to the backup");
}

#[tokio::test(start_paused = true)]
async fn a_losing_attempt_still_waiting_for_its_headers_is_dropped_with_its_connection() {
    let (primary, backup) = (after(300).await, after(100).await);
    let c = client(hedged(&primary, &backup));
    for _ in 0..3 {
        assert_eq!(served(&c.get("http://127.0.0.1:9/").allow_failover().send().await.unwrap()), "backup");
    }
    tokio::time::sleep(10 * MS).await;
    assert_eq!(primary.abandoned(), 3, "every outrun first attempt was cancelled");
    assert_eq!(primary.connections(), 3, "and its connection closed with it");
}

#[tokio::test(start_paused = true)]
async fn a_hedge_that_fails_is_replaced_at_once_by_the_next_candidate_while_the_first_hangs() {
    // The primary answers after 10 s (as good as hung), the backup fails at once, the third
    // answers in 30 ms: the read takes the hedge delay and the third's latency, not 10 s.
    let (primary, third) = (after(10_000).await, after(30).await);
    let backup = delayed_status(0, 503).await.0;
    let failover =
        builder([("primary", primary.url("/")), ("backup", backup.url("/")), ("third", third.url("/"))])
            .no_attempt_timeout()
            .hedge(Hedge::after(Duration::from_millis(20)))
            .build()
            .unwrap();
    let started = Instant::now();
    let resp = client(failover).get("http://127.0.0.1:9/").allow_failover().trace().send().await.unwrap();
    let took = started.elapsed();
    let trace = resp.extensions().get::<Trace>().unwrap().clone();
    assert_eq!(served(&resp), "third", "{trace}");
    assert!(took <= Duration::from_millis(60), "{took:?}");
    let trace = resp.extensions().get::<Trace>().unwrap();
    assert_eq!(trace.entry("third").unwrap().steps()[0], TraceStep::Hedged, "{trace}");
    assert!(
        matches!(trace.entry("primary").unwrap().steps().last(), Some(TraceStep::Cancelled { .. })),
        "{trace}"
    );
}

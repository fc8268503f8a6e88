//! Catalogue §G: passive cooldown, C62-C82, under paused tokio time.
//!
//! The cooldown clock is `tokio::time::Instant`, so time only moves when a test calls
//! `tokio::time::advance`. The paused runtime would also jump to its next timer whenever it
//! idles while a wiremock server (on its own thread) answers; these tests therefore use a
//! client without a connection pool (whose idle timer would be such a timer) and set no
//! timeouts (opting out of the default attempt timeout, 0.1's default, with `builder` below),
//! so no timer exists and the clock never moves by itself. Every server here answers
//! at once or refuses, so nothing can hang.
//!
//! C68 (cancellation records nothing) is pinned in `events.rs` and `retained.rs` by dropping
//! the request future. C82 (clock read per candidate) is what C70 and C71 pin.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use failnext::{Cooldown, Failover, RequestBuilderExt, ServedBy};
use futures::future::BoxFuture;
use http::{Extensions, StatusCode};
use reqwest::{Request, Response};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware, Middleware, Next};

use crate::support::events::*;
use crate::support::*;
use failnext_loopback::{Action, Server, refused_url};

const MIN: Duration = Duration::from_secs(60);
const HOUR: Duration = Duration::from_secs(3600);
const MS: Duration = Duration::from_millis(1);

/// `support::builder` without the default attempt timeout, whose timer would let the paused
/// clock move by itself.
fn builder<'a>(endpoints: impl IntoIterator<Item = (&'a str, String)>) -> failnext::FailoverBuilder {
    crate::support::builder(endpoints).no_attempt_timeout()
}

/// A pool-less client (no idle timer), with `failover` and then `per_attempt` middlewares.
fn paused_client(failover: Failover, per_attempt: Option<PerAttempt>) -> ClientWithMiddleware {
    let http = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let builder = ClientBuilder::new(http).with(failover);
    match per_attempt {
        Some(m) => builder.with(m).build(),
        None => builder.build(),
    }
}

type Step = Arc<dyn Fn(String) -> BoxFuture<'static, ()> + Send + Sync>;

/// Runs `before` and `after` around every attempt, with the attempt's URL.
struct PerAttempt {
    before: Step,
    after: Step,
}

impl PerAttempt {
    fn before(step: impl Fn(String) -> BoxFuture<'static, ()> + Send + Sync + 'static) -> PerAttempt {
        PerAttempt { before: Arc::new(step), after: Arc::new(|_| Box::pin(async {})) }
    }

    fn after(step: impl Fn(String) -> BoxFuture<'static, ()> + Send + Sync + 'static) -> PerAttempt {
        PerAttempt { before: Arc::new(|_| Box::pin(async {})), after: Arc::new(step) }
    }
}

#[async_trait::async_trait]
impl Middleware for PerAttempt {
    async fn handle(
        &self,
        req: Request,
        ext: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        let url = req.url().to_string();
        (self.before)(url.clone()).await;
        let result = next.run(req, ext).await;
        (self.after)(url).await;
        result
    }
}

/// A step that runs `action` once, on the first attempt to `url`.
fn once_at(
    url: String,
    action: impl Fn() -> BoxFuture<'static, ()> + Send + Sync + 'static,
) -> impl Fn(String) -> BoxFuture<'static, ()> + Send + Sync + 'static {
    let armed = AtomicBool::new(true);
    move |attempted: String| {
        if attempted == url && armed.swap(false, Ordering::SeqCst) { action() } else { Box::pin(async {}) }
    }
}

fn advance_by(d: Duration) -> impl Fn() -> BoxFuture<'static, ()> + Send + Sync + 'static {
    move || Box::pin(tokio::time::advance(d))
}

fn served_by(resp: &Response) -> Option<&str> {
    resp.extensions().get::<ServedBy>().map(|s| s.0.as_str())
}

/// Puts `id` (whose server answers 503 first) into a threshold-1 cooldown with one request.
async fn trip(client: &ClientWithMiddleware, id: &str) {
    let resp = client.get("http://127.0.0.1:9/").prefer_endpoint(id).deny_failover().send().await.unwrap();
    assert_eq!((resp.status().as_u16(), served_by(&resp)), (503, Some(id)));
}

// C62
#[tokio::test(start_paused = true)]
async fn cooldown_trips_after_threshold_consecutive_failures() {
    let (e1, e2) = (status(503).await, status(200).await);
    let rec = Recorder::new();
    let failover = builder([("e1", e1.url()), ("e2", e2.url())])
        .cooldown(Cooldown::new(2, MIN))
        .on_event(rec.hook())
        .build()
        .unwrap();
    let client = paused_client(failover.clone(), None);
    for expect_cooling in [false, true] {
        let resp = client.post("http://127.0.0.1:9/").body("{}").allow_failover().send().await.unwrap();
        assert_eq!(served_by(&resp), Some("e2"));
        assert_eq!(failover.is_cooling_down("e1"), expect_cooling);
    }
    rec.take();
    let resp = client.post("http://127.0.0.1:9/").body("{}").allow_failover().send().await.unwrap();
    assert_eq!(served_by(&resp), Some("e2"));
    assert_eq!(rec.shapes(), [skip("e1"), attempt("e2", 1, 200), result("e2", 200)]);
    assert_eq!((e1.hits(), e2.hits()), (2, 3));
}

// C63
#[tokio::test(start_paused = true)]
async fn any_non_failure_outcome_resets_the_streak() {
    let (e1, e2) = (Scripted::start(&[503, 200, 503]).await, status(200).await);
    let failover =
        builder([("e1", e1.url()), ("e2", e2.url())]).cooldown(Cooldown::new(2, MIN)).build().unwrap();
    let client = paused_client(failover.clone(), None);
    let mut served = Vec::new();
    for _ in 0..3 {
        let resp = client.get("http://127.0.0.1:9/").send().await.unwrap();
        served.push(served_by(&resp).unwrap().to_owned());
    }
    assert_eq!(served, ["e2", "e1", "e2"]);
    assert!(!failover.is_cooling_down("e1"));
    assert_eq!((e1.hits(), e2.hits()), (3, 2));
}

// C64, §4.4
#[tokio::test(start_paused = true)]
async fn cooldown_failures_do_not_count_added_trigger_codes() {
    for code in [429, 500] {
        let (e1, e2) = (Scripted::start(&[503, code, 503, 200]).await, status(200).await);
        let rec = Recorder::new();
        let failover = builder([("e1", e1.url()), ("e2", e2.url())])
            .cooldown(Cooldown::new(2, HOUR))
            .additional_trigger_status_codes([StatusCode::from_u16(code).unwrap()])
            .on_event(rec.hook())
            .build()
            .unwrap();
        let client = paused_client(failover.clone(), None);
        for _ in 0..4 {
            client.get("http://127.0.0.1:9/").send().await.unwrap();
        }
        assert_eq!((e1.hits(), e2.hits()), (4, 3), "{code}");
        assert!(!rec.take().iter().any(|ev| matches!(ev, Ev::Skip(_))), "{code}");
        assert!(!failover.is_cooling_down("e1"), "{code}");
    }
}

// §4.4: a non-trigger 500 resets the streak too.
#[tokio::test(start_paused = true)]
async fn non_trigger_response_resets_the_streak() {
    let (e1, e2) = (Scripted::start(&[503, 500, 503, 503]).await, status(200).await);
    let failover =
        builder([("e1", e1.url()), ("e2", e2.url())]).cooldown(Cooldown::new(2, HOUR)).build().unwrap();
    let client = paused_client(failover.clone(), None);
    let mut cooling = Vec::new();
    for _ in 0..4 {
        client.get("http://127.0.0.1:9/").send().await.unwrap();
        cooling.push(failover.is_cooling_down("e1"));
    }
    assert_eq!(cooling, [false, false, false, true]);
}

// C65
#[tokio::test(start_paused = true)]
async fn builtin_trigger_is_recorded_even_when_continuation_is_denied() {
    let (e1, e2) = (status(503).await, status(200).await);
    let failover =
        builder([("e1", e1.url()), ("e2", e2.url())]).cooldown(Cooldown::new(1, HOUR)).build().unwrap();
    let client = paused_client(failover, None);
    let resp = client.post("http://127.0.0.1:9/").body("{}").send().await.unwrap();
    assert_eq!((resp.status().as_u16(), served_by(&resp)), (503, Some("e1")));
    let resp = client.get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(served_by(&resp), Some("e2"));
    assert_eq!((e1.hits(), e2.hits()), (1, 1));
}

// C66
#[tokio::test(start_paused = true)]
async fn builtin_trigger_is_recorded_with_no_later_candidate() {
    for code in [502, 503, 504] {
        let only = status(code).await;
        let failover = builder([("only", only.url())]).cooldown(Cooldown::new(1, HOUR)).build().unwrap();
        let resp = paused_client(failover.clone(), None).get("http://127.0.0.1:9/").send().await.unwrap();
        assert_eq!(resp.status().as_u16(), code);
        assert!(failover.is_cooling_down("only"), "{code}");
    }
}

// C67
#[tokio::test(start_paused = true)]
async fn transport_failure_is_recorded_when_continuation_is_denied() {
    let closing = Server::always(Action::Close).await;
    let healthy = status(200).await;
    let failover = builder([("e1", closing.url("/rpc")), ("e2", healthy.url())])
        .cooldown(Cooldown::new(1, HOUR))
        .build()
        .unwrap();
    let client = paused_client(failover, None);
    let err = client.post("http://127.0.0.1:9/").body("{}").send().await.unwrap_err();
    assert_eq!(failnext_error(&err).attempts().len(), 1);
    let resp = client.get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(served_by(&resp), Some("e2"));
    assert_eq!((closing.requests(), healthy.hits()), (1, 1));
}

// C69, §4.3
#[tokio::test(start_paused = true)]
async fn all_cooling_before_the_first_attempt_is_no_usable_endpoint() {
    let (e1, e2) = (status(503).await, status(503).await);
    let rec = Recorder::new();
    let failover = builder([("e1", e1.url()), ("e2", e2.url())])
        .cooldown(Cooldown::new(1, HOUR))
        .on_event(rec.hook())
        .build()
        .unwrap();
    let client = paused_client(failover, None);
    let resp = client.get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!((resp.status().as_u16(), served_by(&resp)), (503, Some("e2")));
    rec.take();
    let err = client.post("http://127.0.0.1:9/").body("one").send().await.unwrap_err();
    let fe = failnext_error(&err);
    assert!(fe.is_no_usable_endpoint() && !fe.is_failover());
    assert_eq!(rec.take(), [skip("e1"), skip("e2"), Ev::Result(None, Res::Error(err.to_string()))]);
    assert_eq!((e1.hits(), e2.hits()), (1, 1));
}

// C70, C82
#[tokio::test(start_paused = true)]
async fn cooldown_is_checked_live_at_each_candidates_turn() {
    let e1 = refused_url("/rpc");
    let (e2, e3) = (Scripted::start(&[503, 200]).await, status(200).await);
    let rec = Recorder::new();
    let failover = builder([("e1", e1.clone()), ("e2", e2.url()), ("e3", e3.url())])
        .cooldown(Cooldown::new(1, HOUR))
        .on_event(rec.hook())
        .build()
        .unwrap();
    // While the request is in its attempt to e1, another request puts e2 into cooldown.
    let other = paused_client(failover.clone(), None);
    let trip_e2 = move || -> BoxFuture<'static, ()> {
        let other = other.clone();
        Box::pin(async move { trip(&other, "e2").await })
    };
    let client = paused_client(failover, Some(PerAttempt::before(once_at(e1, trip_e2))));
    let resp = client.get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(served_by(&resp), Some("e3"));
    assert_eq!(
        rec.shapes(),
        [
            attempt("e2", 1, 503),
            result("e2", 503),
            attempt_err("e1", 1),
            skip("e2"),
            attempt("e3", 2, 200),
            result("e3", 200)
        ]
    );
    assert_eq!(e2.hits(), 1);
}

// C71, C82
#[tokio::test(start_paused = true)]
async fn cooldown_that_expires_before_the_candidates_turn_admits_it() {
    let e1 = refused_url("/rpc");
    let e2 = Scripted::start(&[503, 200]).await;
    let rec = Recorder::new();
    let failover = builder([("e1", e1.clone()), ("e2", e2.url())])
        .cooldown(Cooldown::new(1, HOUR))
        .on_event(rec.hook())
        .build()
        .unwrap();
    let client = paused_client(failover.clone(), Some(PerAttempt::before(once_at(e1, advance_by(2 * HOUR)))));
    trip(&client, "e2").await;
    assert!(failover.is_cooling_down("e2"));
    rec.take();
    let resp = client.get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(served_by(&resp), Some("e2"));
    assert_eq!(rec.shapes(), [attempt_err("e1", 1), attempt("e2", 2, 200), result("e2", 200)]);
}

// C72, §4.10
#[tokio::test(start_paused = true)]
async fn passed_endpoints_are_never_revisited_even_after_expiry() {
    let e2 = Scripted::start(&[503, 200]).await;
    let closing = Server::always(Action::Close).await;
    let rec = Recorder::new();
    let failover = builder([("e1", refused_url("/rpc")), ("e2", e2.url()), ("e3", closing.url("/rpc"))])
        .cooldown(Cooldown::new(1, HOUR))
        .on_event(rec.hook())
        .build()
        .unwrap();
    let at_e3 = once_at(closing.url("/rpc"), advance_by(2 * HOUR));
    let client = paused_client(failover, Some(PerAttempt::before(at_e3)));
    trip(&client, "e2").await;
    rec.take();
    let err = client.get("http://127.0.0.1:9/").send().await.unwrap_err();
    let attempted: Vec<_> =
        failnext_error(&err).attempts().iter().map(|a| a.endpoint().to_string()).collect();
    assert_eq!(attempted, ["e1", "e3"]);
    assert_eq!(rec.shapes(), [attempt_err("e1", 1), skip("e2"), attempt_err("e3", 2), result_err()]);
    assert_eq!(e2.hits(), 1, "e2 is not retried although its cooldown expired mid-request");
}

// C73, §4.2
#[tokio::test(start_paused = true)]
async fn cooling_later_candidates_leave_the_retained_response() {
    let e1 = status(503).await;
    let (e2, e3) = (Scripted::start(&[503, 200]).await, Scripted::start(&[503, 200]).await);
    let rec = Recorder::new();
    let failover = builder([("e1", e1.url()), ("e2", e2.url()), ("e3", e3.url())])
        .cooldown(Cooldown::new(1, HOUR))
        .on_event(rec.hook())
        .build()
        .unwrap();
    let client = paused_client(failover, None);
    trip(&client, "e2").await;
    trip(&client, "e3").await;
    rec.take();
    let resp = client.get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!((resp.status().as_u16(), served_by(&resp)), (503, Some("e1")));
    assert_eq!(resp.text().await.unwrap(), "status 503 from call 0");
    assert_eq!(rec.shapes(), [attempt("e1", 1, 503), skip("e2"), skip("e3"), result("e1", 503)]);
    assert_eq!((e1.hits(), e2.hits(), e3.hits()), (1, 1, 1));
}

// C74, §4.3
#[tokio::test(start_paused = true)]
async fn cooling_later_candidates_without_a_response_give_a_failover_error() {
    let e2 = Scripted::start(&[503, 200]).await;
    let rec = Recorder::new();
    let failover = builder([("e1", refused_url("/rpc")), ("e2", e2.url())])
        .cooldown(Cooldown::new(1, HOUR))
        .on_event(rec.hook())
        .build()
        .unwrap();
    let client = paused_client(failover, None);
    trip(&client, "e2").await;
    rec.take();
    let err = client.get("http://127.0.0.1:9/").send().await.unwrap_err();
    let fe = failnext_error(&err);
    assert!(fe.is_failover() && !fe.is_no_usable_endpoint());
    assert_eq!(fe.attempts().iter().map(|a| a.endpoint().as_str()).collect::<Vec<_>>(), ["e1"]);
    let cause = std::error::Error::source(fe).and_then(|s| s.downcast_ref::<reqwest_middleware::Error>());
    assert!(cause.is_some_and(reqwest_middleware::Error::is_connect), "{fe:?}");
    assert_eq!(rec.shapes(), [attempt_err("e1", 1), skip("e2"), result_err()]);
}

// C75
#[tokio::test(start_paused = true)]
async fn disabled_cooldown_never_skips() {
    let (e1, e2) = (status(503).await, status(200).await);
    let rec = Recorder::new();
    let failover = builder([("e1", e1.url()), ("e2", e2.url())])
        .cooldown(Cooldown::disabled())
        .on_event(rec.hook())
        .build()
        .unwrap();
    let client = paused_client(failover.clone(), None);
    for _ in 0..5 {
        client.get("http://127.0.0.1:9/").send().await.unwrap();
    }
    assert_eq!((e1.hits(), e2.hits()), (5, 5));
    assert!(!rec.take().iter().any(|ev| matches!(ev, Ev::Skip(_))));
    assert!(!failover.is_cooling_down("e1"));
}

// C76, §4.9
#[tokio::test(start_paused = true)]
async fn skip_does_not_consume_an_attempt_number() {
    let (e2, e3) = (Scripted::start(&[503, 200]).await, status(200).await);
    let rec = Recorder::new();
    let failover = builder([("e1", refused_url("/rpc")), ("e2", e2.url()), ("e3", e3.url())])
        .cooldown(Cooldown::new(1, HOUR))
        .on_event(rec.hook())
        .build()
        .unwrap();
    let client = paused_client(failover, None);
    trip(&client, "e2").await;
    rec.take();
    let resp = client.post("http://127.0.0.1:9/").body("{}").allow_failover().send().await.unwrap();
    assert_eq!(served_by(&resp), Some("e3"));
    assert_eq!(rec.shapes(), [attempt_err("e1", 1), skip("e2"), attempt("e3", 2, 200), result("e3", 200)]);
}

// C77, V14: 0.1's default, now the reference rule set explicitly (the 0.2 default is the
// adaptive breaker: `breaker.rs`, `default_cooldown_is_the_adaptive_breaker`).
#[tokio::test(start_paused = true)]
async fn reference_cooldown_is_three_consecutive_failures_for_thirty_seconds() {
    let (e1, e2) = (status(503).await, status(200).await);
    let failover = builder([("e1", e1.url()), ("e2", e2.url())])
        .cooldown(Cooldown::new(3, Duration::from_secs(30)))
        .build()
        .unwrap();
    let client = paused_client(failover.clone(), None);
    let mut cooling = Vec::new();
    for _ in 0..3 {
        client.get("http://127.0.0.1:9/").send().await.unwrap();
        cooling.push(failover.is_cooling_down("e1"));
    }
    assert_eq!(cooling, [false, false, true]);
    client.get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(e1.hits(), 3, "skipped while cooling");
    tokio::time::advance(Duration::from_secs(30) - MS).await;
    assert!(failover.is_cooling_down("e1"));
    tokio::time::advance(MS).await;
    assert!(!failover.is_cooling_down("e1"));
    client.get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(e1.hits(), 4);
}

// C78
#[tokio::test(start_paused = true)]
async fn cooldown_expires_exactly_at_cooling_until_with_a_fresh_streak() {
    let (e1, e2) = (status(503).await, status(200).await);
    let failover =
        builder([("e1", e1.url()), ("e2", e2.url())]).cooldown(Cooldown::new(2, MIN)).build().unwrap();
    let client = paused_client(failover.clone(), None);
    client.get("http://127.0.0.1:9/").send().await.unwrap();
    client.get("http://127.0.0.1:9/").send().await.unwrap();
    assert!(failover.is_cooling_down("e1"));
    tokio::time::advance(MIN - MS).await;
    client.get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(e1.hits(), 2, "still cooling one millisecond before the deadline");
    tokio::time::advance(MS).await;
    client.get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(e1.hits(), 3, "admitted exactly at the deadline");
    assert!(!failover.is_cooling_down("e1"), "one failure after expiry starts a fresh streak");
    client.get("http://127.0.0.1:9/").send().await.unwrap();
    assert!(failover.is_cooling_down("e1"));
}

// C79
#[tokio::test(start_paused = true)]
async fn cooling_until_counts_from_the_failing_attempts_completion() {
    let (e1, e2) = (status(503).await, status(200).await);
    let failover =
        builder([("e1", e1.url()), ("e2", e2.url())]).cooldown(Cooldown::new(1, MIN)).build().unwrap();
    // The attempt to e1 completes 10 s after it was admitted.
    let slow = PerAttempt::after(once_at(e1.url(), advance_by(Duration::from_secs(10))));
    let client = paused_client(failover.clone(), Some(slow));
    client.get("http://127.0.0.1:9/").send().await.unwrap();
    tokio::time::advance(MIN - MS).await;
    assert!(failover.is_cooling_down("e1"), "a deadline from admission would have passed");
    tokio::time::advance(MS).await;
    assert!(!failover.is_cooling_down("e1"));
}

/// A step that sends one request through `client` (without per-attempt steps), then waits.
fn request_then_advance(
    client: ClientWithMiddleware,
    wait: Duration,
) -> impl Fn() -> BoxFuture<'static, ()> + Send + Sync + 'static {
    move || {
        let client = client.clone();
        Box::pin(async move {
            client.get("http://127.0.0.1:9/").send().await.unwrap();
            tokio::time::advance(wait).await;
        })
    }
}

// C80: an attempt admitted before another request tripped the cooldown fails while cooling.
#[tokio::test(start_paused = true)]
async fn failures_while_cooling_never_extend_the_cooldown() {
    let only = status(503).await;
    let failover = builder([("only", only.url())]).cooldown(Cooldown::new(1, MIN)).build().unwrap();
    let other = paused_client(failover.clone(), None);
    let step = once_at(only.url(), request_then_advance(other, Duration::from_secs(30)));
    let client = paused_client(failover.clone(), Some(PerAttempt::before(step)));
    let resp = client.get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(resp.status(), 503);
    assert_eq!(only.hits(), 2);
    tokio::time::advance(Duration::from_secs(30) - MS).await;
    assert!(failover.is_cooling_down("only"));
    tokio::time::advance(MS).await;
    assert!(!failover.is_cooling_down("only"), "cooling ends 60 s after the tripping failure");
}

// C80: failures counted while cooling are discarded when the cooldown expires.
#[tokio::test(start_paused = true)]
async fn failures_while_cooling_are_discarded_at_expiry() {
    let only = status(503).await;
    let failover = builder([("only", only.url())]).cooldown(Cooldown::new(2, MIN)).build().unwrap();
    let plain = paused_client(failover.clone(), None);
    plain.get("http://127.0.0.1:9/").send().await.unwrap();
    let step = once_at(only.url(), request_then_advance(plain.clone(), Duration::from_secs(30)));
    let client = paused_client(failover.clone(), Some(PerAttempt::before(step)));
    client.get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(only.hits(), 3);
    tokio::time::advance(Duration::from_secs(30)).await;
    plain.get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(only.hits(), 4);
    assert!(!failover.is_cooling_down("only"), "the failure counted while cooling was discarded");
    plain.get("http://127.0.0.1:9/").send().await.unwrap();
    assert!(failover.is_cooling_down("only"));
}

// C81
#[tokio::test(start_paused = true)]
async fn success_while_cooling_does_not_end_the_cooldown() {
    let only = Scripted::start(&[503, 200]).await;
    let failover = builder([("only", only.url())]).cooldown(Cooldown::new(1, MIN)).build().unwrap();
    let other = paused_client(failover.clone(), None);
    let step = once_at(only.url(), request_then_advance(other, Duration::ZERO));
    let client = paused_client(failover.clone(), Some(PerAttempt::before(step)));
    let resp = client.get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(resp.status(), 200, "the attempt admitted before the cooldown still answers");
    assert!(failover.is_cooling_down("only"));
    let err = client.get("http://127.0.0.1:9/").send().await.unwrap_err();
    assert!(failnext_error(&err).is_no_usable_endpoint());
    tokio::time::advance(MIN).await;
    assert!(!failover.is_cooling_down("only"));
}

// C145: clones share one cooldown state; `is_cooling_down` is false for unknown ids.
#[tokio::test(start_paused = true)]
async fn clones_share_cooldown_state() {
    let only = status(503).await;
    let failover = builder([("only", only.url())]).cooldown(Cooldown::new(1, MIN)).build().unwrap();
    let clone = failover.clone();
    paused_client(clone, None).get("http://127.0.0.1:9/").send().await.unwrap();
    assert!(failover.is_cooling_down("only"));
    assert!(!failover.is_cooling_down("missing"));
    let err = paused_client(failover, None).get("http://127.0.0.1:9/").send().await.unwrap_err();
    assert!(failnext_error(&err).is_no_usable_endpoint());
}

//! Catalogue §M mapped to Rust: `attempt_timeout` and the request's own timeout; since 0.2,
//! the default attempt timeout (10 s) and `no_attempt_timeout()`.
//!
//! Go's context deadlines (C136-C138) have no counterpart: a Rust deadline is a reqwest
//! timeout, which fails one attempt with a timeout error, and cancellation is dropping the
//! future (pinned in `events.rs`). These tests run under paused tokio time, so a hanging
//! endpoint costs no real time: the runtime jumps to the next timer once it is idle. All
//! servers run on the test's own runtime (the loopback toolkit's servers), so the runtime is
//! never idle while a healthy server is about to answer.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use failnext::{AttemptOutcome, Cooldown, Event, Failover, ServedBy};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use tokio::time::Instant;

use crate::support::*;
use failnext_loopback::{Action, End, Reply, Server};

/// Far beyond every timeout under test, so it only fires if an attempt is never bounded.
const BOUND: Duration = Duration::from_secs(24 * 3600);
const SECOND: Duration = Duration::from_secs(1);

/// A server answering every request with a small 200, then closing.
async fn ok_200() -> Server {
    Server::always(Action::Reply(Reply::new(200).send("ok").closing())).await
}

/// A client without a connection pool (whose idle timer would make paused time jump).
fn paused_client(failover: Failover) -> ClientWithMiddleware {
    let http = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    ClientBuilder::new(http).with(failover).build()
}

/// Records `(endpoint, is_timeout)` for every attempt that ended in an error.
#[derive(Clone, Default)]
struct TimedOut(Arc<Mutex<Vec<(String, bool)>>>);

impl TimedOut {
    fn hook(&self) -> impl Fn(&Event<'_>) + Send + Sync + 'static {
        let seen = self.0.clone();
        move |ev: &Event<'_>| {
            if let Event::Attempt { endpoint, outcome: AttemptOutcome::Error(err), .. } = ev {
                seen.lock().unwrap().push((endpoint.to_string(), err.is_timeout()));
            }
        }
    }

    fn take(&self) -> Vec<(String, bool)> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

fn timed_out(id: &str) -> (String, bool) {
    (id.to_owned(), true)
}

async fn bounded<F: std::future::Future>(fut: F) -> F::Output {
    tokio::time::timeout(BOUND, fut).await.expect("every attempt was bounded")
}

// The hanging primary costs the attempt timeout; the backup then answers.
#[tokio::test(start_paused = true)]
async fn attempt_timeout_moves_a_hanging_endpoint_to_the_next() {
    let hanging = Server::always(Action::Hang).await;
    let healthy = ok_200().await;
    let seen = TimedOut::default();
    let failover = builder([("hang", hanging.url("/rpc")), ("ok", healthy.url("/rpc"))])
        .attempt_timeout(5 * SECOND)
        .on_event(seen.hook())
        .build()
        .unwrap();
    let started = Instant::now();
    let resp = bounded(paused_client(failover).get("http://127.0.0.1:9/").send()).await.unwrap();
    let waited = started.elapsed();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.extensions().get::<ServedBy>().map(|s| s.0.as_str()), Some("ok"));
    assert_eq!(resp.text().await.unwrap(), "ok");
    assert_eq!(seen.take(), [timed_out("hang")]);
    assert!(waited >= 5 * SECOND && waited < 6 * SECOND, "{waited:?}");
    assert_eq!((hanging.requests(), healthy.requests()), (1, 1));
}

// The limit applies to every attempt separately, not to the request as a whole.
#[tokio::test(start_paused = true)]
async fn attempt_timeout_bounds_each_attempt_not_the_whole_request() {
    let (first, second) = (Server::always(Action::Hang).await, Server::always(Action::Hang).await);
    let healthy = ok_200().await;
    let seen = TimedOut::default();
    let failover =
        builder([("h1", first.url("/rpc")), ("h2", second.url("/rpc")), ("ok", healthy.url("/rpc"))])
            .attempt_timeout(5 * SECOND)
            .on_event(seen.hook())
            .build()
            .unwrap();
    let started = Instant::now();
    let resp = bounded(paused_client(failover).get("http://127.0.0.1:9/").send()).await.unwrap();
    let waited = started.elapsed();
    assert_eq!(resp.status(), 200);
    assert_eq!(seen.take(), [timed_out("h1"), timed_out("h2")]);
    assert!(waited >= 10 * SECOND && waited < 11 * SECOND, "{waited:?}");
}

// A lone hanging endpoint ends in a failover error whose attempt (and cause) is a timeout.
#[tokio::test(start_paused = true)]
async fn hanging_single_endpoint_fails_with_a_timeout_attempt() {
    let hanging = Server::always(Action::Hang).await;
    let failover = builder([("hang", hanging.url("/rpc"))]).attempt_timeout(5 * SECOND).build().unwrap();
    let err = bounded(paused_client(failover).get("http://127.0.0.1:9/").send()).await.unwrap_err();
    let fe = failnext_error(&err);
    assert!(fe.is_failover());
    assert_eq!(fe.attempts().len(), 1);
    assert!(fe.attempts()[0].error().is_timeout(), "{fe:?}");
    let cause = std::error::Error::source(fe).and_then(|s| s.downcast_ref::<reqwest_middleware::Error>());
    assert!(cause.is_some_and(reqwest_middleware::Error::is_timeout));
    assert!(!err.is_timeout(), "documented: the outer error is failnext's, look at its attempts");
}

/// How long a lone hanging endpoint takes to fail with these two limits.
async fn time_to_fail(attempt_timeout: Duration, request_timeout: Duration) -> Duration {
    let hanging = Server::always(Action::Hang).await;
    let failover = builder([("hang", hanging.url("/rpc"))]).attempt_timeout(attempt_timeout).build().unwrap();
    let started = Instant::now();
    let req = paused_client(failover).get("http://127.0.0.1:9/").timeout(request_timeout);
    let err = bounded(req.send()).await.unwrap_err();
    assert!(failnext_error(&err).attempts()[0].error().is_timeout());
    started.elapsed()
}

// A request's own shorter timeout wins over the attempt timeout.
#[tokio::test(start_paused = true)]
async fn request_own_shorter_timeout_wins() {
    let waited = time_to_fail(Duration::from_secs(3600), 2 * SECOND).await;
    assert!(waited >= 2 * SECOND && waited < 3 * SECOND, "{waited:?}");
}

// The attempt timeout wins over a longer timeout of the request.
#[tokio::test(start_paused = true)]
async fn attempt_timeout_wins_over_a_longer_request_timeout() {
    let waited = time_to_fail(2 * SECOND, Duration::from_secs(3600)).await;
    assert!(waited >= 2 * SECOND && waited < 3 * SECOND, "{waited:?}");
}

// A timed-out attempt is a transport failure for cooldown like any other.
#[tokio::test(start_paused = true)]
async fn timed_out_attempt_counts_as_a_cooldown_failure() {
    let hanging = Server::always(Action::Hang).await;
    let healthy = ok_200().await;
    let failover = builder([("hang", hanging.url("/rpc")), ("ok", healthy.url("/rpc"))])
        .attempt_timeout(5 * SECOND)
        .cooldown(Cooldown::new(1, Duration::from_secs(3600)))
        .build()
        .unwrap();
    let client = paused_client(failover.clone());
    bounded(client.get("http://127.0.0.1:9/").send()).await.unwrap();
    assert!(failover.is_cooling_down("hang"));
    let started = Instant::now();
    let resp = bounded(client.get("http://127.0.0.1:9/").send()).await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(started.elapsed() < SECOND, "the cooling endpoint is skipped, not waited for");
    assert_eq!(hanging.requests(), 1);
}

/// A server that sends headers promising 100 bytes, then 10 bytes, then never more.
async fn stalling_body() -> Server {
    Server::always(Action::Reply(Reply::new(200).length(100).send("0123456789").end(End::Stall))).await
}

// Documented: like reqwest's own timeout, the attempt timeout also bounds reading the body of
// the response the caller gets.
#[tokio::test(start_paused = true)]
async fn attempt_timeout_also_bounds_reading_the_returned_body() {
    let stalling = stalling_body().await;
    let failover = builder([("stall", stalling.url("/rpc"))]).attempt_timeout(5 * SECOND).build().unwrap();
    let started = Instant::now();
    let resp = bounded(paused_client(failover).get("http://127.0.0.1:9/").send()).await.unwrap();
    assert_eq!(resp.status(), 200);
    let err = bounded(resp.bytes()).await.unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    let waited = started.elapsed();
    assert!(waited >= 5 * SECOND && waited < 6 * SECOND, "{waited:?}");
}

// 0.2: with no attempt timeout configured, a hanging provider still costs only the default
// 10 s before the next is tried.
#[tokio::test(start_paused = true)]
async fn default_attempt_timeout_bounds_a_hanging_endpoint_at_ten_seconds() {
    let hanging = Server::always(Action::Hang).await;
    let healthy = ok_200().await;
    let seen = TimedOut::default();
    let failover = builder([("hang", hanging.url("/rpc")), ("ok", healthy.url("/rpc"))])
        .on_event(seen.hook())
        .build()
        .unwrap();
    let started = Instant::now();
    let resp = bounded(paused_client(failover).get("http://127.0.0.1:9/").send()).await.unwrap();
    let waited = started.elapsed();
    assert_eq!(resp.extensions().get::<ServedBy>().map(|s| s.0.as_str()), Some("ok"));
    assert_eq!(seen.take(), [timed_out("hang")]);
    assert!(waited >= 10 * SECOND && waited < 11 * SECOND, "{waited:?}");
}

// 0.1's behaviour, explicitly: without an attempt timeout a hanging provider holds the
// request for as long as it hangs.
#[tokio::test(start_paused = true)]
async fn no_attempt_timeout_lets_a_hanging_endpoint_hold_the_request() {
    let hanging = Server::always(Action::Hang).await;
    let healthy = ok_200().await;
    let failover = builder([("hang", hanging.url("/rpc")), ("ok", healthy.url("/rpc"))])
        .attempt_timeout(SECOND)
        .no_attempt_timeout()
        .build()
        .unwrap();
    let send = paused_client(failover).get("http://127.0.0.1:9/").send();
    let held = tokio::time::timeout(Duration::from_secs(3600), send).await;
    assert!(held.is_err(), "the request ended: {held:?}");
    assert_eq!((hanging.requests(), healthy.requests()), (1, 0));
}

//! §H replay and request-body ownership (C83-C97).
//!
//! Rust replays with `reqwest::Request::try_clone()`: a body built from bytes or a string is
//! replayable (the clone shares its `Bytes`); a streaming body is not: the first attempt gets
//! it, and when failover would go on, `Event::NotReplayable` names the candidate that could not
//! be tried and the request stops there.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use failnext::{Cooldown, EndpointId, RequestBuilderExt, ServedBy};
use futures::StreamExt;
use http::Extensions;
use reqwest::{Request, Response};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware, Middleware, Next};

use crate::support::events::*;
use crate::support::*;
use failnext_loopback::{Action, Server};

const HOUR: Duration = Duration::from_secs(3600);

fn served_by(resp: &Response) -> Option<&str> {
    resp.extensions().get::<ServedBy>().map(|s| s.0.as_str())
}

fn not_replayable(ep: &str) -> Ev {
    Ev::NotReplayable(ep.into())
}

/// What happened to a streaming body: how many chunks were pulled and whether it was dropped.
struct Tracked {
    polled: Arc<AtomicUsize>,
    dropped: Arc<AtomicBool>,
}

impl Tracked {
    fn polled(&self) -> usize {
        self.polled.load(Ordering::SeqCst)
    }

    fn dropped(&self) -> bool {
        self.dropped.load(Ordering::SeqCst)
    }
}

struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A one-shot streaming body yielding `chunks`, and its tracker.
fn streaming(chunks: &[&'static str]) -> (reqwest::Body, Tracked) {
    let polled = Arc::new(AtomicUsize::new(0));
    let dropped = Arc::new(AtomicBool::new(false));
    let guard = DropFlag(dropped.clone());
    let counter = polled.clone();
    let stream = futures::stream::iter(chunks.to_vec()).map(move |chunk| {
        let _alive = &guard;
        counter.fetch_add(1, Ordering::SeqCst);
        Ok::<_, std::io::Error>(chunk.as_bytes().to_vec())
    });
    (reqwest::Body::wrap_stream(stream), Tracked { polled, dropped })
}

/// The body one attempt carried, as a per-attempt middleware saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Seen {
    Absent,
    /// The bytes and the address of their buffer.
    Bytes(Vec<u8>, usize),
    Stream,
}

/// A per-attempt middleware (added after the failover) recording each attempt's body.
#[derive(Clone, Default)]
struct Probe(Arc<Mutex<Vec<Seen>>>);

impl Probe {
    fn seen(&self) -> Vec<Seen> {
        self.0.lock().unwrap().clone()
    }
}

#[async_trait::async_trait]
impl Middleware for Probe {
    async fn handle(
        &self,
        req: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        let seen = match req.body() {
            None => Seen::Absent,
            Some(body) => match body.as_bytes() {
                Some(bytes) => Seen::Bytes(bytes.to_vec(), bytes.as_ptr() as usize),
                None => Seen::Stream,
            },
        };
        self.0.lock().unwrap().push(seen);
        next.run(req, extensions).await
    }
}

fn probed(failover: failnext::Failover, probe: &Probe) -> ClientWithMiddleware {
    ClientBuilder::new(reqwest::Client::new()).with(failover).with(probe.clone()).build()
}

// C83: a request without a body may fail over.
#[tokio::test]
async fn bodyless_request_may_fail_over() {
    let e1 = Server::always(Action::Close).await;
    let e2 = status(200).await;
    let failover = builder([("e1", e1.url("/rpc")), ("e2", e2.url())]).build().unwrap();
    let resp = client(failover).post("http://127.0.0.1:9/").allow_failover().send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!((e1.requests(), e2.hits()), (1, 1));
    assert!(e2.requests().await[0].body.is_empty());
}

// C84: a streaming (one-shot) body is fine for the first attempt: the endpoint receives
// exactly its bytes, and failnext pulls nothing from it itself.
#[tokio::test]
async fn streaming_body_is_sent_whole_on_the_first_attempt() {
    let e1 = status(200).await;
    let rec = Recorder::new();
    let failover = builder([("e1", e1.url())]).on_event(rec.hook()).build().unwrap();
    let (body, tracked) = streaming(&["one-", "shot"]);
    let resp = client(failover).post("http://127.0.0.1:9/").body(body).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(e1.requests().await[0].body, b"one-shot");
    assert_eq!(tracked.polled(), 2);
    assert_eq!(rec.shapes(), [attempt("e1", 1, 200), result("e1", 200)]);
}

// C84 (Rust): with failover allowed, a streaming body whose first attempt succeeds needs no
// replay and makes no NotReplayable event.
#[tokio::test]
async fn streaming_body_first_attempt_success_needs_no_replay() {
    let e1 = status(200).await;
    let e2 = status(200).await;
    let rec = Recorder::new();
    let failover = builder([("e1", e1.url()), ("e2", e2.url())]).on_event(rec.hook()).build().unwrap();
    let (body, _tracked) = streaming(&["one-", "shot"]);
    let resp = client(failover).post("http://127.0.0.1:9/").body(body).allow_failover().send().await.unwrap();
    assert_eq!(served_by(&resp), Some("e1"));
    assert_eq!(e1.requests().await[0].body, b"one-shot");
    assert_eq!(e2.hits(), 0);
    assert_eq!(rec.shapes(), [attempt("e1", 1, 200), result("e1", 200)]);
}

// C85: later attempts replay a bytes body: every endpoint receives the same bytes.
#[tokio::test]
async fn bytes_body_is_replayed_on_later_attempts() {
    let e1 = status(503).await;
    let e2 = status(200).await;
    let failover = builder([("e1", e1.url()), ("e2", e2.url())]).build().unwrap();
    let resp = client(failover)
        .post("http://127.0.0.1:9/")
        .header("content-type", "application/json")
        .body("original")
        .allow_failover()
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    for server in [&e1, &e2] {
        let received = server.requests().await;
        assert_eq!(received.len(), 1);
        assert_eq!(received[0].body, b"original");
        assert_eq!(received[0].headers.get("content-type").unwrap(), "application/json");
    }
}

// C86: a streaming body cannot be replayed: after the first attempt fails, the request stops
// with a failover error listing that one attempt, and NotReplayable names the candidate.
#[tokio::test]
async fn streaming_body_stops_failover_with_not_replayable_event() {
    let e1 = Server::always(Action::Close).await;
    let e2 = status(200).await;
    let rec = Recorder::new();
    let failover = builder([("e1", e1.url("/rpc")), ("e2", e2.url())]).on_event(rec.hook()).build().unwrap();
    let (body, tracked) = streaming(&["one-shot"]);
    let err =
        client(failover).post("http://127.0.0.1:9/").body(body).allow_failover().send().await.unwrap_err();
    let e = failnext_error(&err);
    assert!(e.is_failover());
    let tried: Vec<&str> = e.attempts().iter().map(|a| a.endpoint().as_str()).collect();
    assert_eq!(tried, ["e1"]);
    assert_eq!((e1.requests(), e2.hits()), (1, 0));
    assert!(tracked.dropped());
    assert_eq!(rec.shapes(), [attempt_err("e1", 1), not_replayable("e2"), result_err()]);
}

// C90: a streaming body after a trigger response: the retained response is returned, readable.
#[tokio::test]
async fn streaming_body_after_trigger_returns_the_retained_response() {
    let e1 = status(503).await;
    let e2 = status(200).await;
    let e3 = status(200).await;
    let rec = Recorder::new();
    let failover =
        builder([("e1", e1.url()), ("e2", e2.url()), ("e3", e3.url())]).on_event(rec.hook()).build().unwrap();
    let (body, _tracked) = streaming(&["one-shot"]);
    let resp = client(failover).post("http://127.0.0.1:9/").body(body).allow_failover().send().await.unwrap();
    assert_eq!(resp.status(), 503);
    assert_eq!(served_by(&resp), Some("e1"));
    assert_eq!(resp.text().await.unwrap(), "status 503 from call 0");
    assert_eq!((e1.hits(), e2.hits(), e3.hits()), (1, 0, 0));
    assert_eq!(rec.shapes(), [attempt("e1", 1, 503), not_replayable("e2"), result("e1", 503)]);
}

// C91: a cooling candidate does not consume the replay: the endpoints actually tried after it
// all receive the whole body.
#[tokio::test]
async fn cooling_candidate_does_not_consume_the_replay() {
    let e1 = Server::always(Action::Close).await;
    let e2 = status(503).await;
    let e3 = status(503).await;
    let e4 = status(200).await;
    let rec = Recorder::new();
    let failover = builder([("e1", e1.url("/rpc")), ("e2", e2.url()), ("e3", e3.url()), ("e4", e4.url())])
        .cooldown(Cooldown::new(1, HOUR))
        .on_event(rec.hook())
        .build()
        .unwrap();
    let client = client(failover);
    // Put E2 alone into cooldown.
    let resp = client.get("http://127.0.0.1:9/").exclude_endpoints(["e1", "e3", "e4"]).send().await.unwrap();
    assert_eq!(resp.status(), 503);
    rec.take();

    let resp = client.post("http://127.0.0.1:9/").body("original").allow_failover().send().await.unwrap();
    assert_eq!(served_by(&resp), Some("e4"));
    assert_eq!(
        rec.shapes(),
        [attempt_err("e1", 1), skip("e2"), attempt("e3", 2, 503), attempt("e4", 3, 200), result("e4", 200)]
    );
    assert_eq!(e2.hits(), 1);
    for server in [&e3, &e4] {
        let received = server.requests().await;
        assert_eq!(received.len(), 1);
        assert_eq!(received[0].body, b"original");
    }
}

// C93: the first attempt carries the caller's own body; later attempts carry clones that
// share its bytes (same buffer, no copy).
#[tokio::test]
async fn first_attempt_gets_callers_body_and_replays_share_its_bytes() {
    let e1 = status(503).await;
    let e2 = status(503).await;
    let e3 = status(200).await;
    let probe = Probe::default();
    let failover = builder([("e1", e1.url()), ("e2", e2.url()), ("e3", e3.url())]).build().unwrap();
    let data = b"original".to_vec();
    let ptr = data.as_ptr() as usize;
    let resp = probed(failover, &probe)
        .post("http://127.0.0.1:9/")
        .body(data)
        .allow_failover()
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let original = Seen::Bytes(b"original".to_vec(), ptr);
    assert_eq!(probe.seen(), [original.clone(), original.clone(), original]);
}

/// A per-attempt middleware recording how many chunks of a tracked stream had been pulled
/// when each attempt started.
struct PolledAtHandoff(Arc<AtomicUsize>, Arc<Mutex<Vec<usize>>>);

#[async_trait::async_trait]
impl Middleware for PolledAtHandoff {
    async fn handle(
        &self,
        req: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        self.1.lock().unwrap().push(self.0.load(Ordering::SeqCst));
        next.run(req, extensions).await
    }
}

// C93 (Rust): a streaming body is handed, unread, to the first attempt, which consumes it.
#[tokio::test]
async fn streaming_body_is_handed_to_the_first_attempt_unread() {
    let e1 = status(200).await;
    let e2 = status(200).await;
    let probe = Probe::default();
    let (body, tracked) = streaming(&["one-", "shot"]);
    let at_handoff = Arc::new(Mutex::new(Vec::new()));
    let failover = builder([("e1", e1.url()), ("e2", e2.url())]).build().unwrap();
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(failover)
        .with(PolledAtHandoff(tracked.polled.clone(), at_handoff.clone()))
        .with(probe.clone())
        .build();
    let resp = client.post("http://127.0.0.1:9/").body(body).allow_failover().send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(probe.seen(), [Seen::Stream]);
    assert_eq!(*at_handoff.lock().unwrap(), [0]);
    assert_eq!(e1.requests().await[0].body, b"one-shot");
    assert_eq!(tracked.polled(), 2);
    assert!(tracked.dropped());
}

// C94: a body failnext never hands to an attempt is dropped by failnext, unread: all
// ineligible, all cooling, unknown preferred or excluded id, everything excluded.
#[tokio::test]
async fn body_never_handed_off_is_dropped_unread() {
    let e1 = status(503).await;
    let e2 = status(503).await;
    let urls = || [("e1", e1.url()), ("e2", e2.url())];

    let check = |what: &str, outcome: reqwest_middleware::Result<Response>, tracked: Tracked| {
        let err = outcome.expect_err(what);
        assert!(failnext::Error::from_middleware(&err).is_some(), "{what}: {err:?}");
        assert_eq!(tracked.polled(), 0, "{what}");
        assert!(tracked.dropped(), "{what}");
    };

    let ineligible = client(builder(urls()).eligible(|_: &EndpointId| false).build().unwrap());
    let (body, tracked) = streaming(&["x"]);
    check("ineligible", ineligible.post("http://127.0.0.1:9/").body(body).send().await, tracked);

    let plain = client(builder(urls()).build().unwrap());
    let (body, tracked) = streaming(&["x"]);
    let outcome = plain.post("http://127.0.0.1:9/").body(body).prefer_endpoint("missing").send().await;
    check("unknown preferred", outcome, tracked);
    let (body, tracked) = streaming(&["x"]);
    let outcome = plain.post("http://127.0.0.1:9/").body(body).exclude_endpoints(["missing"]).send().await;
    check("unknown excluded", outcome, tracked);
    let (body, tracked) = streaming(&["x"]);
    let outcome = plain.post("http://127.0.0.1:9/").body(body).exclude_endpoints(["e1", "e2"]).send().await;
    check("all excluded", outcome, tracked);

    let rec = Recorder::new();
    let cooling =
        client(builder(urls()).cooldown(Cooldown::new(1, HOUR)).on_event(rec.hook()).build().unwrap());
    // Both endpoints answer 503 and start cooling.
    assert_eq!(cooling.get("http://127.0.0.1:9/").send().await.unwrap().status(), 503);
    rec.take();
    let (body, tracked) = streaming(&["x"]);
    check(
        "all cooling",
        cooling.post("http://127.0.0.1:9/").body(body).allow_failover().send().await,
        tracked,
    );
    assert_eq!(rec.shapes(), [skip("e1"), skip("e2"), result_err()]);
    assert_eq!((e1.hits(), e2.hits()), (1, 1));
}

// C95: an absent body stays absent on every attempt (not turned into an empty body).
#[tokio::test]
async fn absent_body_stays_absent_on_every_attempt() {
    let e1 = status(503).await;
    let e2 = status(200).await;
    let probe = Probe::default();
    let failover = builder([("e1", e1.url()), ("e2", e2.url())]).build().unwrap();
    let resp = probed(failover, &probe).post("http://127.0.0.1:9/").allow_failover().send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(probe.seen(), [Seen::Absent, Seen::Absent]);
    assert!(e1.requests().await[0].body.is_empty());
    assert!(e2.requests().await[0].body.is_empty());
}

// C96: an empty in-memory body is replayed as the same empty body on every attempt.
#[tokio::test]
async fn empty_body_is_replayed_as_empty_body() {
    let e1 = status(503).await;
    let e2 = status(200).await;
    let probe = Probe::default();
    let failover = builder([("e1", e1.url()), ("e2", e2.url())]).build().unwrap();
    let resp =
        probed(failover, &probe).post("http://127.0.0.1:9/").body("").allow_failover().send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let seen = probe.seen();
    assert_eq!(seen.len(), 2);
    assert!(seen.iter().all(|s| matches!(s, Seen::Bytes(b, _) if b.is_empty())), "{seen:?}");
    assert!(e2.requests().await[0].body.is_empty());
}

// C97: non-replayability is found only once the next candidate is admitted, so cooldown skips
// come before the NotReplayable event, which names the admitted candidate.
#[tokio::test]
async fn cooldown_skips_precede_not_replayable() {
    let e1 = Server::always(Action::Close).await;
    let e2 = status(503).await;
    let e3 = status(200).await;
    let rec = Recorder::new();
    let failover = builder([("e1", e1.url("/rpc")), ("e2", e2.url()), ("e3", e3.url())])
        .cooldown(Cooldown::new(1, HOUR))
        .on_event(rec.hook())
        .build()
        .unwrap();
    let client = client(failover);
    // Put E2 alone into cooldown.
    let resp = client.get("http://127.0.0.1:9/").exclude_endpoints(["e1", "e3"]).send().await.unwrap();
    assert_eq!(resp.status(), 503);
    rec.take();

    let (body, _tracked) = streaming(&["one-shot"]);
    let err = client.post("http://127.0.0.1:9/").body(body).allow_failover().send().await.unwrap_err();
    let e = failnext_error(&err);
    assert_eq!(e.attempts().len(), 1);
    assert_eq!(e.attempts()[0].endpoint().as_str(), "e1");
    assert_eq!((e1.requests(), e2.hits(), e3.hits()), (1, 1, 0));
    assert_eq!(rec.shapes(), [attempt_err("e1", 1), skip("e2"), not_replayable("e3"), result_err()]);
}

// Rust: NotReplayable is emitted only when failover would really go on to an admitted
// candidate: not when permission is denied, not after a non-trigger response, not when the
// only endpoint failed, and not when every later candidate is cooling.
#[tokio::test]
async fn not_replayable_only_when_a_candidate_is_admitted_for_another_attempt() {
    let closing = Server::always(Action::Close).await;
    let error_500 = status(500).await;
    let unavailable = status(503).await;
    let unavailable_2 = status(503).await;
    let healthy = status(200).await;
    let rec = Recorder::new();
    let failover = builder([
        ("closing", closing.url("/rpc")),
        ("error-500", error_500.url()),
        ("unavailable", unavailable.url()),
        ("unavailable-2", unavailable_2.url()),
        ("healthy", healthy.url()),
    ])
    .cooldown(Cooldown::new(1, HOUR))
    .on_event(rec.hook())
    .build()
    .unwrap();
    let client = client(failover);
    let post = || client.post("http://127.0.0.1:9/");

    // Denied: POST without allow.
    let (body, _t) = streaming(&["x"]);
    let err = post()
        .body(body)
        .exclude_endpoints(["error-500", "unavailable", "unavailable-2"])
        .send()
        .await
        .unwrap_err();
    assert_eq!(failnext_error(&err).attempts().len(), 1);
    assert_eq!(rec.shapes(), [attempt_err("closing", 1), result_err()]);

    // A non-trigger response is returned at once.
    let (body, _t) = streaming(&["x"]);
    let resp = post().body(body).exclude_endpoints(["closing"]).allow_failover().send().await.unwrap();
    assert_eq!(resp.status(), 500);
    assert_eq!(rec.shapes(), [attempt("error-500", 1, 500), result("error-500", 500)]);

    // The only usable endpoint failed: the 503 is returned and "unavailable" starts cooling.
    let (body, _t) = streaming(&["x"]);
    let resp = post()
        .body(body)
        .exclude_endpoints(["closing", "error-500", "unavailable-2", "healthy"])
        .allow_failover()
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 503);
    assert_eq!(rec.shapes(), [attempt("unavailable", 1, 503), result("unavailable", 503)]);

    // Every later candidate is cooling ("closing" since the first request, "unavailable"
    // since the previous one): they are skipped and nothing is admitted.
    let (body, _t) = streaming(&["x"]);
    let resp = post()
        .body(body)
        .prefer_endpoint("unavailable-2")
        .exclude_endpoints(["error-500", "healthy"])
        .allow_failover()
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 503);
    assert_eq!(
        rec.shapes(),
        [
            attempt("unavailable-2", 1, 503),
            skip("closing"),
            skip("unavailable"),
            result("unavailable-2", 503)
        ]
    );
    assert_eq!((closing.requests(), healthy.hits()), (1, 0));
}

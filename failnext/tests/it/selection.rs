//! §A selection order and destination (C1-C7, C139), §B eligibility (C8-C14), §C exclusion
//! (C15-C27) and §D preference (C28-C38).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

use failnext::{Cooldown, EndpointId, ExcludedEndpoints, Failover, RequestBuilderExt, ServedBy};
use http::Extensions;
use http::header::HOST;
use reqwest::{Request, Response};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware, Middleware, Next};
use wiremock::{Mock, MockServer, Respond, ResponseTemplate};

use crate::support::events::*;
use crate::support::*;
use failnext_loopback::{Action, Server};

const HOUR: Duration = Duration::from_secs(3600);

/// An eligibility predicate accepting only `accept`, and the ids it was asked about, in order.
fn eligibility(
    accept: &'static [&'static str],
) -> (impl Fn(&EndpointId) -> bool + Send + Sync + 'static, Arc<Mutex<Vec<String>>>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = asked.clone();
    let predicate = move |id: &EndpointId| {
        log.lock().unwrap().push(id.to_string());
        accept.contains(&id.as_str())
    };
    (predicate, asked)
}

fn asked(log: &Arc<Mutex<Vec<String>>>) -> Vec<String> {
    log.lock().unwrap().clone()
}

fn served_by(resp: &Response) -> Option<&str> {
    resp.extensions().get::<ServedBy>().map(|s| s.0.as_str())
}

/// A server answering `status` that clears `flag` while it handles each request, so the change
/// happens before the client sees the response.
async fn clearing(flag: Arc<AtomicBool>, status: u16) -> MockServer {
    struct Clear(Arc<AtomicBool>, u16);
    impl Respond for Clear {
        fn respond(&self, _req: &wiremock::Request) -> ResponseTemplate {
            self.0.store(false, Ordering::SeqCst);
            ResponseTemplate::new(self.1)
        }
    }
    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::any()).respond_with(Clear(flag, status)).mount(&server).await;
    server
}

/// A per-attempt middleware (added after the failover) that appends one `x-attempt-mark`
/// header to whatever request it is given.
struct Mark;

#[async_trait::async_trait]
impl Middleware for Mark {
    async fn handle(
        &self,
        mut req: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        req.headers_mut().append("x-attempt-mark", http::HeaderValue::from_static("1"));
        next.run(req, extensions).await
    }
}

/// Two callers meet here: each waits (at most `limit`) until `n` have arrived.
#[derive(Default)]
struct Rendezvous {
    arrived: Mutex<usize>,
    cv: Condvar,
}

impl Rendezvous {
    fn meet(&self, n: usize, limit: Duration) -> bool {
        let mut arrived = self.arrived.lock().unwrap();
        *arrived += 1;
        self.cv.notify_all();
        let (_arrived, waited) = self.cv.wait_timeout_while(arrived, limit, |a| *a < n).unwrap();
        !waited.timed_out()
    }
}

// ===== §A selection order and destination =====

// C1: configured order is the priority, whatever the ids sort as and whatever the request URL.
#[tokio::test]
async fn configured_order_is_priority_regardless_of_ids_and_request_url() {
    let z = Server::always(Action::Close).await;
    let a = status(200).await;
    let rec = Recorder::new();
    let failover =
        builder([("z-id", z.url("/rpc")), ("a-id", a.url())]).on_event(rec.hook()).build().unwrap();
    let resp = client(failover).post(a.url()).body("{}").allow_failover().send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!((z.requests(), a.hits()), (1, 1));
    assert_eq!(rec.shapes(), [attempt_err("z-id", 1), attempt("a-id", 2, 200), result("a-id", 200)]);
}

// C2: the first endpoint's success is returned at once, body readable by the caller.
#[tokio::test]
async fn first_attempt_success_is_returned_without_trying_others() {
    let e1 = status(200).await;
    let e2 = status(200).await;
    let rec = Recorder::new();
    let failover = builder([("e1", e1.url()), ("e2", e2.url())]).on_event(rec.hook()).build().unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(served_by(&resp), Some("e1"));
    assert_eq!(resp.text().await.unwrap(), "status 200 from call 0");
    assert_eq!((e1.hits(), e2.hits()), (1, 0));
    assert_eq!(rec.shapes(), [attempt("e1", 1, 200), result("e1", 200)]);
}

// C3: failover walks the whole list in order.
#[tokio::test]
async fn failover_walks_the_whole_list_in_order() {
    let e1 = Server::always(Action::Close).await;
    let e2 = Server::always(Action::Close).await;
    let e3 = status(200).await;
    let rec = Recorder::new();
    let failover = builder([("e1", e1.url("/rpc")), ("e2", e2.url("/rpc")), ("e3", e3.url())])
        .on_event(rec.hook())
        .build()
        .unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!((e1.requests(), e2.requests(), e3.hits()), (1, 1, 1));
    assert_eq!(
        rec.shapes(),
        [attempt_err("e1", 1), attempt_err("e2", 2), attempt("e3", 3, 200), result("e3", 200)]
    );
}

// C4: the endpoint URL is the complete destination: the request's path and query are dropped,
// nothing is joined or merged; a custom Host is kept.
#[tokio::test]
async fn endpoint_url_is_the_complete_destination_and_custom_host_is_kept() {
    let server = status(200).await;
    let url = format!("{}/fixed/rpc?key=abc", server.server.uri());
    let failover = builder([("e1", url)]).build().unwrap();
    let resp = client(failover)
        .post("http://127.0.0.1:9/original/path?old=1")
        .header(HOST, "signed.example")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let received = server.requests().await;
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].url.path(), "/fixed/rpc");
    assert_eq!(received[0].url.query(), Some("key=abc"));
    assert_eq!(received[0].headers.get(HOST).unwrap(), "signed.example");
    assert_eq!(received[0].body, b"{}");
}

// C5: the caller's request is never changed. In Rust it is moved into the client; a copy the
// caller kept still has its URL and Host, and sending it again reaches the same destination.
#[tokio::test]
async fn callers_request_is_not_mutated() {
    let server = status(200).await;
    let url = format!("{}/fixed/rpc?key=abc", server.server.uri());
    let client = client(builder([("e1", url)]).build().unwrap());
    let original = "http://127.0.0.1:9/original/path?old=1";
    let req = client.post(original).header(HOST, "signed.example").body("{}").build().unwrap();
    let kept = req.try_clone().unwrap();
    assert_eq!(client.execute(req).await.unwrap().status(), 200);
    assert_eq!(kept.url().as_str(), original);
    assert_eq!(kept.headers().get(HOST).unwrap(), "signed.example");
    assert_eq!(client.execute(kept).await.unwrap().status(), 200);
    let received = server.requests().await;
    assert_eq!(received.len(), 2);
    for r in &received {
        assert_eq!((r.url.path(), r.url.query()), ("/fixed/rpc", Some("key=abc")));
        assert_eq!(r.headers.get(HOST).unwrap(), "signed.example");
    }
}

// C6: each endpoint is attempted at most once per request; there is no second pass.
#[tokio::test]
async fn each_endpoint_is_attempted_at_most_once_per_request() {
    let e1 = Server::always(Action::Close).await;
    let e2 = Server::always(Action::Close).await;
    let failover = builder([("e1", e1.url("/rpc")), ("e2", e2.url("/rpc"))]).build().unwrap();
    let err = client(failover).get("http://127.0.0.1:9/").send().await.unwrap_err();
    let e = failnext_error(&err);
    assert!(e.is_failover());
    let tried: Vec<&str> = e.attempts().iter().map(|a| a.endpoint().as_str()).collect();
    assert_eq!(tried, ["e1", "e2"]);
    assert_eq!((e1.requests(), e2.requests()), (1, 1));
}

// C7: every attempt starts from a fresh copy of the caller's request: same method, headers and
// body; changes made by per-attempt middleware to one attempt do not leak into the next.
#[tokio::test]
async fn every_attempt_uses_a_fresh_copy_of_the_request() {
    let e1 = status(503).await;
    let e2 = status(200).await;
    let failover = builder([("e1", e1.url()), ("e2", e2.url())]).build().unwrap();
    let client = ClientBuilder::new(reqwest::Client::new()).with(failover).with(Mark).build();
    let resp = client
        .post("http://127.0.0.1:9/")
        .header("x-custom", "keep")
        .body("payload")
        .allow_failover()
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    for server in [&e1, &e2] {
        let received = server.requests().await;
        assert_eq!(received.len(), 1);
        let r = &received[0];
        assert_eq!(r.method.as_str(), "POST");
        assert_eq!(r.headers.get("x-custom").unwrap(), "keep");
        assert_eq!(r.headers.get_all("x-attempt-mark").iter().count(), 1);
        assert_eq!(r.body, b"payload");
    }
}

// C139: one Failover serves many concurrent requests independently.
#[tokio::test]
async fn concurrent_requests_each_fail_over_independently() {
    let e1 = Server::always(Action::Close).await;
    let e2 = status(200).await;
    let failover =
        builder([("e1", e1.url("/rpc")), ("e2", e2.url())]).cooldown(Cooldown::disabled()).build().unwrap();
    let client = client(failover);
    let sends = (0..32).map(|_| client.get("http://127.0.0.1:9/").allow_failover().send());
    let results = tokio::time::timeout(Duration::from_secs(30), futures::future::join_all(sends))
        .await
        .expect("32 concurrent requests finish");
    for result in results {
        assert_eq!(result.unwrap().status(), 200);
    }
    assert_eq!((e1.requests(), e2.hits()), (32, 32));
}

// ===== §B eligibility =====

// C8: filtering by eligibility keeps the configured order; ineligible endpoints make no events.
#[tokio::test]
async fn eligibility_filter_preserves_configured_order() {
    let e1 = status(200).await;
    let e2 = Server::always(Action::Close).await;
    let e3 = status(200).await;
    let e4 = status(200).await;
    let rec = Recorder::new();
    let (predicate, _) = eligibility(&["e2", "e4"]);
    let failover = builder([("e1", e1.url()), ("e2", e2.url("/rpc")), ("e3", e3.url()), ("e4", e4.url())])
        .eligible(predicate)
        .on_event(rec.hook())
        .build()
        .unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!((e1.hits(), e2.requests(), e3.hits(), e4.hits()), (0, 1, 0, 1));
    assert_eq!(rec.shapes(), [attempt_err("e2", 1), attempt("e4", 2, 200), result("e4", 200)]);
}

// C9: eligibility is asked once per endpoint at request start and frozen: E2 turning
// ineligible during E1's attempt does not stop E2 from being tried.
#[tokio::test]
async fn eligibility_is_frozen_at_request_start() {
    let e2_ok = Arc::new(AtomicBool::new(true));
    let e1 = clearing(e2_ok.clone(), 503).await;
    let e2 = status(200).await;
    let asked_ids = Arc::new(Mutex::new(Vec::new()));
    let (flag, log) = (e2_ok.clone(), asked_ids.clone());
    let failover = builder([("e1", format!("{}/rpc", e1.uri())), ("e2", e2.url())])
        .eligible(move |id: &EndpointId| {
            log.lock().unwrap().push(id.to_string());
            id.as_str() != "e2" || flag.load(Ordering::SeqCst)
        })
        .build()
        .unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(!e2_ok.load(Ordering::SeqCst), "E1's attempt made E2 ineligible");
    assert_eq!(e1.received_requests().await.unwrap().len(), 1);
    assert_eq!(e2.hits(), 1);
    assert_eq!(asked(&asked_ids), ["e1", "e2"]);
}

// C10: every non-excluded endpoint is asked exactly once before any attempt, even one that is
// never reached because the first attempt succeeds.
#[tokio::test]
async fn eligibility_asked_for_every_endpoint_even_when_first_succeeds() {
    let e1 = status(200).await;
    let e2 = status(200).await;
    let (predicate, log) = eligibility(&["e1", "e2"]);
    let failover = builder([("e1", e1.url()), ("e2", e2.url())]).eligible(predicate).build().unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(e2.hits(), 0);
    assert_eq!(asked(&log), ["e1", "e2"]);
}

// C11: when every endpoint is ineligible the request fails with the no-usable-endpoint error
// (not a failover error), nothing is sent, and the Result event carries that very error.
#[tokio::test]
async fn all_ineligible_is_no_usable_endpoint_error() {
    let e1 = status(200).await;
    let e2 = status(200).await;
    let rec = Recorder::new();
    let failover = builder([("e1", e1.url()), ("e2", e2.url())])
        .eligible(|_: &EndpointId| false)
        .on_event(rec.hook())
        .build()
        .unwrap();
    let err =
        client(failover).post("http://127.0.0.1:9/").body("{}").allow_failover().send().await.unwrap_err();
    let e = failnext_error(&err);
    assert!(e.is_no_usable_endpoint());
    assert!(!e.is_failover());
    assert!(e.attempts().is_empty());
    assert_eq!((e1.hits(), e2.hits()), (0, 0));
    assert_eq!(rec.take(), [Ev::Result(None, Res::Error(err.to_string()))]);
}

// C12: ineligible endpoints make no event; cooling ones are skipped with an event.
#[tokio::test]
async fn ineligible_endpoints_make_no_event_while_cooling_ones_are_skipped() {
    let e1 = status(200).await;
    let e2 = status(503).await;
    let e3 = status(200).await;
    let rec = Recorder::new();
    let failover = builder([("e1", e1.url()), ("e2", e2.url()), ("e3", e3.url())])
        .eligible(|id: &EndpointId| id.as_str() != "e1")
        .cooldown(Cooldown::new(1, HOUR))
        .on_event(rec.hook())
        .build()
        .unwrap();
    let client = client(failover);
    // Put E2 into cooldown.
    assert_eq!(client.get("http://127.0.0.1:9/").send().await.unwrap().status(), 200);
    assert_eq!(e2.hits(), 1);
    rec.take();

    let resp = client.get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!((e1.hits(), e2.hits(), e3.hits()), (0, 1, 2));
    assert_eq!(rec.shapes(), [skip("e2"), attempt("e3", 1, 200), result("e3", 200)]);
}

// C13: the eligibility hook may run for two requests at the same time; neither is serialised
// behind the other (both are inside the hook at once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eligibility_hook_may_run_concurrently_for_two_requests() {
    let e1 = status(200).await;
    let e2 = status(200).await;
    let meeting = Arc::new(Rendezvous::default());
    let met = Arc::new(AtomicUsize::new(0));
    let (m, count) = (meeting.clone(), met.clone());
    let failover = builder([("e1", e1.url()), ("e2", e2.url())])
        .eligible(move |id: &EndpointId| {
            if id.as_str() == "e1" && m.meet(2, Duration::from_secs(5)) {
                count.fetch_add(1, Ordering::SeqCst);
            }
            true
        })
        .build()
        .unwrap();
    let client = client(failover);
    let run = |client: ClientWithMiddleware| {
        tokio::spawn(async move { client.get("http://127.0.0.1:9/").send().await.map(|r| r.status()) })
    };
    let (a, b) = (run(client.clone()), run(client.clone()));
    let (a, b) = tokio::time::timeout(Duration::from_secs(20), async { (a.await, b.await) })
        .await
        .expect("both requests finish");
    assert_eq!(a.unwrap().unwrap(), 200);
    assert_eq!(b.unwrap().unwrap(), 200);
    assert_eq!(met.load(Ordering::SeqCst), 2, "both requests were inside the hook at once");
}

// C14: the eligibility hook runs outside failnext's locks: it may ask the same Failover about
// cooldown without deadlocking. The request runs on its own thread so a deadlock would fail
// the test instead of hanging it.
#[tokio::test]
async fn eligibility_hook_may_query_cooldown_without_deadlock() {
    let e1 = status(503).await;
    let e2 = status(200).await;
    let (e1_url, e2_url) = (e1.url(), e2.url());
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let outcome = rt.block_on(async move {
            let slot: Arc<OnceLock<Failover>> = Arc::new(OnceLock::new());
            let hook_slot = slot.clone();
            let rec = Recorder::new();
            let failover = builder([("e1", e1_url), ("e2", e2_url)])
                .cooldown(Cooldown::new(1, HOUR))
                .eligible(move |id: &EndpointId| hook_slot.get().is_none_or(|f| !f.is_cooling_down(id)))
                .on_event(rec.hook())
                .build()
                .unwrap();
            slot.set(failover.clone()).unwrap();
            let client = client(failover);
            let first = client.get("http://127.0.0.1:9/").send().await.map(|r| r.status().as_u16());
            rec.take();
            let second = client.get("http://127.0.0.1:9/").send().await.map(|r| r.status().as_u16());
            (first.ok(), second.ok(), rec.shapes())
        });
        let _ = tx.send(outcome);
    });
    let (first, second, events) =
        tokio::time::timeout(Duration::from_secs(10), rx).await.expect("no deadlock").unwrap();
    assert_eq!((first, second), (Some(200), Some(200)));
    // E1 cools after its 503; the hook itself then rules it out, so no skip event.
    assert_eq!(events, [attempt("e2", 1, 200), result("e2", 200)]);
    assert_eq!((e1.hits(), e2.hits()), (1, 2));
}

// ===== §C exclusion =====

// C15: an excluded endpoint is not attempted.
#[tokio::test]
async fn excluded_endpoint_is_not_attempted() {
    let e1 = status(200).await;
    let e2 = status(200).await;
    let failover = builder([("e1", e1.url()), ("e2", e2.url())]).build().unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").exclude_endpoints(["e1"]).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(served_by(&resp), Some("e2"));
    assert_eq!((e1.hits(), e2.hits()), (0, 1));
}

// C16: several exclusions keep the configured order of the rest.
#[tokio::test]
async fn several_exclusions_keep_configured_order() {
    let e1 = status(200).await;
    let e2 = Server::always(Action::Close).await;
    let e3 = status(200).await;
    let e4 = status(200).await;
    let rec = Recorder::new();
    let failover = builder([("e1", e1.url()), ("e2", e2.url("/rpc")), ("e3", e3.url()), ("e4", e4.url())])
        .on_event(rec.hook())
        .build()
        .unwrap();
    let resp =
        client(failover).get("http://127.0.0.1:9/").exclude_endpoints(["e1", "e3"]).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!((e1.hits(), e2.requests(), e3.hits(), e4.hits()), (0, 1, 0, 1));
    assert_eq!(rec.shapes(), [attempt_err("e2", 1), attempt("e4", 2, 200), result("e4", 200)]);
}

// C17: exclusions accumulate across calls of `exclude_endpoints` (the derived-context case).
#[tokio::test]
async fn exclusions_accumulate_across_calls() {
    let e1 = status(200).await;
    let e2 = status(200).await;
    let e3 = status(200).await;
    let failover = builder([("e1", e1.url()), ("e2", e2.url()), ("e3", e3.url())]).build().unwrap();
    let resp = client(failover)
        .get("http://127.0.0.1:9/")
        .exclude_endpoints(["e1"])
        .exclude_endpoints(["e1", "e2"])
        .send()
        .await
        .unwrap();
    assert_eq!(served_by(&resp), Some("e3"));
    assert_eq!((e1.hits(), e2.hits(), e3.hits()), (0, 0, 1));
}

// C17 (Rust): inserting `ExcludedEndpoints` directly replaces earlier exclusions, while
// `exclude_endpoints` adds to them.
#[tokio::test]
async fn inserting_excluded_endpoints_directly_replaces_earlier_exclusions() {
    let e1 = status(200).await;
    let e2 = status(200).await;
    let e3 = status(200).await;
    let failover = builder([("e1", e1.url()), ("e2", e2.url()), ("e3", e3.url())]).build().unwrap();
    let resp = client(failover)
        .get("http://127.0.0.1:9/")
        .exclude_endpoints(["e1", "e2"])
        .with_extension(ExcludedEndpoints(vec!["e1".into()]))
        .send()
        .await
        .unwrap();
    assert_eq!(served_by(&resp), Some("e2"));
    assert_eq!((e1.hits(), e2.hits(), e3.hits()), (0, 1, 0));
}

// C18: exclusions are request-scoped: they do not leak into other requests of the same client.
#[tokio::test]
async fn exclusions_are_request_scoped() {
    let e1 = status(200).await;
    let e2 = status(200).await;
    let client = client(builder([("e1", e1.url()), ("e2", e2.url())]).build().unwrap());
    let first = client.get("http://127.0.0.1:9/").exclude_endpoints(["e1"]).send().await.unwrap();
    let second = client.get("http://127.0.0.1:9/").exclude_endpoints(["e2"]).send().await.unwrap();
    let third = client.get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(served_by(&first), Some("e2"));
    assert_eq!(served_by(&second), Some("e1"));
    assert_eq!(served_by(&third), Some("e1"));
    assert_eq!((e1.hits(), e2.hits()), (2, 1));
}

// C19: an unknown excluded id fails the request before anything is sent or asked: the
// unknown-endpoint error names it, eligibility is called 0 times, one Result event.
#[tokio::test]
async fn unknown_excluded_id_fails_fast_without_asking_eligibility() {
    let e1 = status(200).await;
    let rec = Recorder::new();
    let (predicate, log) = eligibility(&["e1"]);
    let failover = builder([("e1", e1.url())]).eligible(predicate).on_event(rec.hook()).build().unwrap();
    let err = client(failover)
        .post("http://127.0.0.1:9/")
        .body("{}")
        .exclude_endpoints(["missing"])
        .send()
        .await
        .unwrap_err();
    let e = failnext_error(&err);
    assert!(e.is_unknown_endpoint());
    assert!(!e.is_failover() && !e.is_no_usable_endpoint());
    assert_eq!(e.unknown_endpoint().map(|id| id.as_str()), Some("missing"));
    assert!(err.to_string().contains("missing"), "{err}");
    assert!(asked(&log).is_empty());
    assert_eq!(e1.hits(), 0);
    assert_eq!(rec.take(), [Ev::Result(None, Res::Error(err.to_string()))]);
}

// C20: excluding everything is the no-usable-endpoint error, not a failover error.
#[tokio::test]
async fn excluding_every_endpoint_is_no_usable_endpoint_error() {
    let e1 = status(200).await;
    let e2 = status(200).await;
    let failover = builder([("e1", e1.url()), ("e2", e2.url())]).build().unwrap();
    let err =
        client(failover).get("http://127.0.0.1:9/").exclude_endpoints(["e1", "e2"]).send().await.unwrap_err();
    let e = failnext_error(&err);
    assert!(e.is_no_usable_endpoint());
    assert!(!e.is_failover());
    assert!(e.attempts().is_empty());
    assert_eq!((e1.hits(), e2.hits()), (0, 0));
}

// C21: exclusion and eligibility filter independently; eligibility is never asked about an
// excluded endpoint and exactly once about each other one.
#[tokio::test]
async fn exclusion_and_eligibility_filter_independently() {
    let e1 = status(200).await;
    let e2 = Server::always(Action::Close).await;
    let e3 = status(200).await;
    let e4 = status(200).await;
    let (predicate, log) = eligibility(&["e2", "e4"]);
    let failover = builder([("e1", e1.url()), ("e2", e2.url("/rpc")), ("e3", e3.url()), ("e4", e4.url())])
        .eligible(predicate)
        .build()
        .unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").exclude_endpoints(["e1"]).send().await.unwrap();
    assert_eq!(served_by(&resp), Some("e4"));
    assert_eq!((e1.hits(), e2.requests(), e3.hits(), e4.hits()), (0, 1, 0, 1));
    assert_eq!(asked(&log), ["e2", "e3", "e4"]);
}

// C22: a preferred endpoint that is also excluded stays excluded, without an error.
#[tokio::test]
async fn excluded_preferred_endpoint_stays_excluded() {
    let e1 = Server::always(Action::Close).await;
    let e2 = status(200).await;
    let e3 = status(200).await;
    let rec = Recorder::new();
    let failover = builder([("e1", e1.url("/rpc")), ("e2", e2.url()), ("e3", e3.url())])
        .on_event(rec.hook())
        .build()
        .unwrap();
    let resp = client(failover)
        .get("http://127.0.0.1:9/")
        .prefer_endpoint("e2")
        .exclude_endpoints(["e2"])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!((e1.requests(), e2.hits(), e3.hits()), (1, 0, 1));
    assert_eq!(rec.shapes(), [attempt_err("e1", 1), attempt("e3", 2, 200), result("e3", 200)]);
}

// C23: exclusion does not grant permission: a POST without allow stops after the first
// remaining endpoint; with allow it goes on.
#[tokio::test]
async fn exclusion_does_not_grant_permission() {
    let e1 = status(200).await;
    let e2 = Server::always(Action::Close).await;
    let e3 = status(200).await;
    let failover = builder([("e1", e1.url()), ("e2", e2.url("/rpc")), ("e3", e3.url())])
        .cooldown(Cooldown::disabled())
        .build()
        .unwrap();
    let client = client(failover);

    let err = client.post("http://127.0.0.1:9/").exclude_endpoints(["e1"]).send().await.unwrap_err();
    let e = failnext_error(&err);
    assert!(e.is_failover());
    let tried: Vec<&str> = e.attempts().iter().map(|a| a.endpoint().as_str()).collect();
    assert_eq!(tried, ["e2"]);
    assert_eq!((e1.hits(), e2.requests(), e3.hits()), (0, 1, 0));

    let resp =
        client.post("http://127.0.0.1:9/").exclude_endpoints(["e1"]).allow_failover().send().await.unwrap();
    assert_eq!(served_by(&resp), Some("e3"));
    assert_eq!((e1.hits(), e2.requests(), e3.hits()), (0, 2, 1));
}

// C24: exclusion does not make a streaming body replayable: with allow, the request stops
// after the first remaining endpoint, and NotReplayable names the candidate not tried.
#[tokio::test]
async fn exclusion_does_not_grant_replayability() {
    let e1 = status(200).await;
    let e2 = Server::always(Action::Close).await;
    let e3 = status(200).await;
    let rec = Recorder::new();
    let failover = builder([("e1", e1.url()), ("e2", e2.url("/rpc")), ("e3", e3.url())])
        .on_event(rec.hook())
        .build()
        .unwrap();
    let stream = futures::stream::iter([Ok::<_, std::io::Error>(b"one-shot".to_vec())]);
    let err = client(failover)
        .post("http://127.0.0.1:9/")
        .body(reqwest::Body::wrap_stream(stream))
        .allow_failover()
        .exclude_endpoints(["e1"])
        .send()
        .await
        .unwrap_err();
    let e = failnext_error(&err);
    assert!(e.is_failover());
    let tried: Vec<&str> = e.attempts().iter().map(|a| a.endpoint().as_str()).collect();
    assert_eq!(tried, ["e2"]);
    assert_eq!((e1.hits(), e2.requests(), e3.hits()), (0, 1, 0));
    assert_eq!(rec.shapes(), [attempt_err("e2", 1), Ev::NotReplayable("e3".into()), result_err()]);
}

// C25: exclusion does not touch cooldown admission, and an excluded endpoint that is cooling
// makes no skip event.
#[tokio::test]
async fn excluded_cooling_endpoint_makes_no_skip_event() {
    let e1 = status(503).await;
    let e2 = status(503).await;
    let e3 = status(200).await;
    let rec = Recorder::new();
    let failover = builder([("e1", e1.url()), ("e2", e2.url()), ("e3", e3.url())])
        .cooldown(Cooldown::new(1, HOUR))
        .on_event(rec.hook())
        .build()
        .unwrap();
    let client = client(failover);
    // E1 and E2 both start cooling.
    assert_eq!(client.get("http://127.0.0.1:9/").send().await.unwrap().status(), 200);
    rec.take();

    let resp = client.get("http://127.0.0.1:9/").exclude_endpoints(["e1"]).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!((e1.hits(), e2.hits(), e3.hits()), (1, 1, 2));
    assert_eq!(rec.shapes(), [skip("e2"), attempt("e3", 1, 200), result("e3", 200)]);
}

// C26: excluding no ids is a no-op, and a repeated id is fine.
#[tokio::test]
async fn empty_or_repeated_exclusions_are_harmless() {
    let e1 = status(200).await;
    let e2 = status(200).await;
    let client = client(builder([("e1", e1.url()), ("e2", e2.url())]).build().unwrap());
    let resp =
        client.get("http://127.0.0.1:9/").exclude_endpoints(Vec::<String>::new()).send().await.unwrap();
    assert_eq!(served_by(&resp), Some("e1"));
    let resp = client.get("http://127.0.0.1:9/").exclude_endpoints(["e1", "e1"]).send().await.unwrap();
    assert_eq!(served_by(&resp), Some("e2"));
    assert_eq!((e1.hits(), e2.hits()), (1, 1));
}

// C27: with several unknown ids the error names the first unknown excluded id in insertion
// order, and exclusions are checked before the preference.
#[tokio::test]
async fn first_unknown_excluded_id_is_reported_before_an_unknown_preference() {
    let e1 = status(200).await;
    let client = client(builder([("e1", e1.url())]).build().unwrap());
    let unknown = |err: &reqwest_middleware::Error| {
        failnext_error(err).unknown_endpoint().map(|id| id.to_string()).unwrap_or_default()
    };

    let err = client
        .get("http://127.0.0.1:9/")
        .prefer_endpoint("bad-pref")
        .exclude_endpoints(["e1", "bad-1", "bad-2"])
        .exclude_endpoints(["bad-3"])
        .send()
        .await
        .unwrap_err();
    assert_eq!(unknown(&err), "bad-1");

    let err = client
        .get("http://127.0.0.1:9/")
        .exclude_endpoints(["e1"])
        .prefer_endpoint("bad-pref")
        .send()
        .await
        .unwrap_err();
    assert_eq!(unknown(&err), "bad-pref");
    assert_eq!(e1.hits(), 0);
}

// ===== §D preference =====

// C28: the preferred endpoint goes first; the others keep their configured order.
#[tokio::test]
async fn preferred_endpoint_is_tried_first_and_others_keep_order() {
    let e1 = Server::always(Action::Close).await;
    let e2 = status(200).await;
    let e3 = Server::always(Action::Close).await;
    let rec = Recorder::new();
    let failover = builder([("e1", e1.url("/rpc")), ("e2", e2.url()), ("e3", e3.url("/rpc"))])
        .on_event(rec.hook())
        .build()
        .unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").prefer_endpoint("e3").send().await.unwrap();
    assert_eq!(served_by(&resp), Some("e2"));
    assert_eq!((e1.requests(), e2.hits(), e3.requests()), (1, 1, 1));
    assert_eq!(
        rec.shapes(),
        [attempt_err("e3", 1), attempt_err("e1", 2), attempt("e2", 3, 200), result("e2", 200)]
    );
}

// C29: preferring the endpoint that is already first changes nothing.
#[tokio::test]
async fn preferring_the_first_endpoint_keeps_configured_order() {
    let e1 = Server::always(Action::Close).await;
    let e2 = Server::always(Action::Close).await;
    let e3 = status(200).await;
    let rec = Recorder::new();
    let failover = builder([("e1", e1.url("/rpc")), ("e2", e2.url("/rpc")), ("e3", e3.url())])
        .on_event(rec.hook())
        .build()
        .unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").prefer_endpoint("e1").send().await.unwrap();
    assert_eq!(served_by(&resp), Some("e3"));
    assert_eq!(
        rec.shapes(),
        [attempt_err("e1", 1), attempt_err("e2", 2), attempt("e3", 3, 200), result("e3", 200)]
    );
}

// C30: an ineligible preferred endpoint is silently ignored.
#[tokio::test]
async fn ineligible_preferred_endpoint_is_silently_ignored() {
    let e1 = Server::always(Action::Close).await;
    let e2 = status(200).await;
    let e3 = status(200).await;
    let failover = builder([("e1", e1.url("/rpc")), ("e2", e2.url()), ("e3", e3.url())])
        .eligible(|id: &EndpointId| id.as_str() != "e3")
        .build()
        .unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").prefer_endpoint("e3").send().await.unwrap();
    assert_eq!(served_by(&resp), Some("e2"));
    assert_eq!((e1.requests(), e2.hits(), e3.hits()), (1, 1, 0));
}

// C31: an unknown preferred id fails the request before any attempt, with the
// unknown-endpoint error naming it, and exactly one Result event carrying that error.
#[tokio::test]
async fn unknown_preferred_id_fails_before_any_attempt() {
    let e1 = status(200).await;
    let rec = Recorder::new();
    let failover = builder([("e1", e1.url())]).on_event(rec.hook()).build().unwrap();
    let err = client(failover)
        .post("http://127.0.0.1:9/")
        .body("{}")
        .prefer_endpoint("missing")
        .send()
        .await
        .unwrap_err();
    let e = failnext_error(&err);
    assert!(e.is_unknown_endpoint());
    assert_eq!(e.unknown_endpoint().map(|id| id.as_str()), Some("missing"));
    assert!(err.to_string().contains("missing"), "{err}");
    assert_eq!(e1.hits(), 0);
    assert_eq!(rec.take(), [Ev::Result(None, Res::Error(err.to_string()))]);
}

// C32: preference does not grant permission: a POST without allow stops after the preferred.
#[tokio::test]
async fn preference_does_not_grant_permission() {
    let e1 = status(200).await;
    let e2 = status(200).await;
    let e3 = Server::always(Action::Close).await;
    let failover = builder([("e1", e1.url()), ("e2", e2.url()), ("e3", e3.url("/rpc"))]).build().unwrap();
    let err = client(failover).post("http://127.0.0.1:9/").prefer_endpoint("e3").send().await.unwrap_err();
    let e = failnext_error(&err);
    assert!(e.is_failover());
    let tried: Vec<&str> = e.attempts().iter().map(|a| a.endpoint().as_str()).collect();
    assert_eq!(tried, ["e3"]);
    assert_eq!((e1.hits(), e2.hits(), e3.requests()), (0, 0, 1));
}

// C33: preference and eligibility do not make a streaming body replayable.
#[tokio::test]
async fn preference_and_eligibility_do_not_grant_replayability() {
    let e1 = status(200).await;
    let e2 = status(200).await;
    let e3 = Server::always(Action::Close).await;
    let rec = Recorder::new();
    let failover = builder([("e1", e1.url()), ("e2", e2.url()), ("e3", e3.url("/rpc"))])
        .eligible(|id: &EndpointId| id.as_str() != "e1")
        .on_event(rec.hook())
        .build()
        .unwrap();
    let stream = futures::stream::iter([Ok::<_, std::io::Error>(b"one-shot".to_vec())]);
    let err = client(failover)
        .post("http://127.0.0.1:9/")
        .body(reqwest::Body::wrap_stream(stream))
        .prefer_endpoint("e3")
        .allow_failover()
        .send()
        .await
        .unwrap_err();
    let e = failnext_error(&err);
    assert_eq!(e.attempts().len(), 1);
    assert_eq!(e.attempts()[0].endpoint().as_str(), "e3");
    assert_eq!((e1.hits(), e2.hits(), e3.requests()), (0, 0, 1));
    assert_eq!(rec.shapes(), [attempt_err("e3", 1), Ev::NotReplayable("e2".into()), result_err()]);
}

// C34: the preferred order uses the eligibility captured at request start: E3 turning
// ineligible during the preferred E2's attempt does not stop E3 from being tried.
#[tokio::test]
async fn preference_uses_eligibility_captured_at_request_start() {
    let e3_ok = Arc::new(AtomicBool::new(true));
    let e1 = Server::always(Action::Close).await;
    let e2 = clearing(e3_ok.clone(), 503).await;
    let e3 = status(200).await;
    let asked_ids = Arc::new(Mutex::new(Vec::new()));
    let (flag, log) = (e3_ok.clone(), asked_ids.clone());
    let rec = Recorder::new();
    let failover = builder([("e1", e1.url("/rpc")), ("e2", format!("{}/rpc", e2.uri())), ("e3", e3.url())])
        .eligible(move |id: &EndpointId| {
            log.lock().unwrap().push(id.to_string());
            id.as_str() != "e3" || flag.load(Ordering::SeqCst)
        })
        .on_event(rec.hook())
        .build()
        .unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").prefer_endpoint("e2").send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(!e3_ok.load(Ordering::SeqCst));
    assert_eq!(
        rec.shapes(),
        [attempt("e2", 1, 503), attempt_err("e1", 2), attempt("e3", 3, 200), result("e3", 200)]
    );
    assert_eq!(asked(&asked_ids), ["e1", "e2", "e3"]);
}

// C35: preference does not bypass cooldown.
#[tokio::test]
async fn preference_does_not_bypass_cooldown() {
    let e1 = status(200).await;
    let e2 = status(200).await;
    let e3 = Server::always(Action::Close).await;
    let rec = Recorder::new();
    let failover = builder([("e1", e1.url()), ("e2", e2.url()), ("e3", e3.url("/rpc"))])
        .cooldown(Cooldown::new(1, HOUR))
        .on_event(rec.hook())
        .build()
        .unwrap();
    let client = client(failover);
    let resp = client.get("http://127.0.0.1:9/").prefer_endpoint("e3").send().await.unwrap();
    assert_eq!(served_by(&resp), Some("e1"));
    assert_eq!(rec.shapes(), [attempt_err("e3", 1), attempt("e1", 2, 200), result("e1", 200)]);

    let resp = client.get("http://127.0.0.1:9/").prefer_endpoint("e3").send().await.unwrap();
    assert_eq!(served_by(&resp), Some("e1"));
    assert_eq!(rec.shapes(), [skip("e3"), attempt("e1", 1, 200), result("e1", 200)]);
    assert_eq!((e1.hits(), e2.hits(), e3.requests()), (2, 0, 1));
}

// C36: the latest preference wins (a single value, not a list).
#[tokio::test]
async fn latest_preference_wins() {
    let e1 = status(200).await;
    let e2 = status(200).await;
    let e3 = status(200).await;
    let failover = builder([("e1", e1.url()), ("e2", e2.url()), ("e3", e3.url())]).build().unwrap();
    let resp = client(failover)
        .get("http://127.0.0.1:9/")
        .prefer_endpoint("e3")
        .prefer_endpoint("e2")
        .send()
        .await
        .unwrap();
    assert_eq!(served_by(&resp), Some("e2"));
    assert_eq!((e1.hits(), e2.hits(), e3.hits()), (0, 1, 0));
}

// C37: an empty-string id, preferred or excluded, is unknown (ids are never empty).
#[tokio::test]
async fn empty_string_id_is_unknown() {
    let e1 = status(200).await;
    let client = client(builder([("e1", e1.url())]).build().unwrap());
    let err = client.get("http://127.0.0.1:9/").prefer_endpoint("").send().await.unwrap_err();
    let e = failnext_error(&err);
    assert!(e.is_unknown_endpoint());
    assert_eq!(e.unknown_endpoint().map(|id| id.as_str()), Some(""));
    let err = client.get("http://127.0.0.1:9/").exclude_endpoints([""]).send().await.unwrap_err();
    let e = failnext_error(&err);
    assert!(e.is_unknown_endpoint());
    assert_eq!(e.unknown_endpoint().map(|id| id.as_str()), Some(""));
    assert_eq!(e1.hits(), 0);
}

// C38: request-scoped ids are all checked before eligibility is asked anything: an unknown
// preferred id calls the eligibility hook 0 times.
#[tokio::test]
async fn unknown_preferred_id_is_checked_before_eligibility() {
    let e1 = status(200).await;
    let e2 = status(200).await;
    let (predicate, log) = eligibility(&["e1", "e2"]);
    let failover = builder([("e1", e1.url()), ("e2", e2.url())]).eligible(predicate).build().unwrap();
    let err =
        client(failover).get("http://127.0.0.1:9/").prefer_endpoint("missing").send().await.unwrap_err();
    assert!(failnext_error(&err).is_unknown_endpoint());
    assert!(asked(&log).is_empty());
    assert_eq!((e1.hits(), e2.hits()), (0, 0));
}

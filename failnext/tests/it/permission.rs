//! §E permission (C39-C49, C140): who decides whether a request may go to another endpoint.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use failnext::{Cooldown, EndpointId, FailoverBuilder, Permission, RequestBuilderExt, ServedBy};
use http::Method;
use http::header::HOST;
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware, Extension};

use crate::support::events::*;
use crate::support::*;
use failnext_loopback::{Action, Server};

/// E1 fails with a transport error (counting requests), E2 answers 200.
struct Pair {
    e1: Server,
    e2: Scripted,
}

impl Pair {
    async fn start() -> Pair {
        Pair { e1: Server::always(Action::Close).await, e2: status(200).await }
    }

    /// A builder over E1, E2 with cooldown off, so repeated failures never skip E1.
    fn builder(&self) -> FailoverBuilder {
        builder([("e1", self.e1.url("/rpc")), ("e2", self.e2.url())]).cooldown(Cooldown::disabled())
    }

    fn calls(&self) -> (usize, usize) {
        (self.e1.requests(), self.e2.hits())
    }
}

/// A policy that answers `answer` and counts its calls.
fn counting_policy(
    answer: Permission,
) -> (impl Fn(&reqwest::Request) -> Permission + Clone + Send + Sync + 'static, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    (
        move |_: &reqwest::Request| {
            counter.fetch_add(1, Ordering::SeqCst);
            answer
        },
        calls,
    )
}

/// Whether the outcome shows failover went on to E2 (200 from E2) or stopped after E1 (a
/// failover error with exactly E1's attempt).
fn continued(outcome: reqwest_middleware::Result<reqwest::Response>) -> bool {
    match outcome {
        Ok(resp) => {
            assert_eq!(resp.status(), 200);
            assert_eq!(resp.extensions().get::<ServedBy>().map(|s| s.0.as_str()), Some("e2"));
            true
        }
        Err(err) => {
            let e = failnext_error(&err);
            assert!(e.is_failover(), "{err:?}");
            let tried: Vec<&str> = e.attempts().iter().map(|a| a.endpoint().as_str()).collect();
            assert_eq!(tried, ["e1"]);
            false
        }
    }
}

fn count(calls: &Arc<AtomicUsize>) -> usize {
    calls.load(Ordering::SeqCst)
}

// C39: without policy or explicit choice, exactly GET and HEAD may fail over; every other
// method (lower-case `get` included) may not.
#[tokio::test]
async fn method_inference_allows_exactly_get_and_head() {
    let pair = Pair::start().await;
    let client = client(pair.builder().build().unwrap());
    let mut expected_e2 = 0;
    for (method, allowed) in [
        ("GET", true),
        ("HEAD", true),
        ("POST", false),
        ("PUT", false),
        ("DELETE", false),
        ("OPTIONS", false),
        ("PATCH", false),
        ("get", false),
        ("head", false),
    ] {
        let m = Method::from_bytes(method.as_bytes()).unwrap();
        let went_on = continued(client.request(m, "http://127.0.0.1:9/").send().await);
        assert_eq!(went_on, allowed, "{method}");
        expected_e2 += usize::from(allowed);
        assert_eq!(pair.e2.hits(), expected_e2, "{method}");
    }
    assert_eq!(pair.e1.requests(), 9);
}

// C40: an explicit request-scoped choice decides; the last one inserted wins, and an explicit
// `Defer` is no choice at all (the POST then falls back to the method rule and stops).
#[tokio::test]
async fn explicit_request_permission_decides_and_last_inserted_wins() {
    let pair = Pair::start().await;
    let client = client(pair.builder().build().unwrap());
    let post = || client.post("http://127.0.0.1:9/");
    assert!(continued(post().allow_failover().send().await));
    assert!(!continued(post().deny_failover().send().await));
    assert!(!continued(post().allow_failover().deny_failover().send().await));
    assert!(continued(post().deny_failover().allow_failover().send().await));
    assert!(continued(post().with_extension(Permission::Allow).send().await));
    assert!(!continued(post().allow_failover().with_extension(Permission::Defer).send().await));
    assert!(!continued(client.get("http://127.0.0.1:9/").deny_failover().send().await));
    assert_eq!(pair.calls(), (7, 3));
}

// C41: an explicit Allow or Deny bypasses the policy, which is then never called.
#[tokio::test]
async fn explicit_permission_bypasses_policy() {
    let pair = Pair::start().await;
    let (deny, deny_calls) = counting_policy(Permission::Deny);
    let client_deny = client(pair.builder().permission_policy(deny).build().unwrap());
    assert!(continued(client_deny.post("http://127.0.0.1:9/").allow_failover().send().await));

    let (allow, allow_calls) = counting_policy(Permission::Allow);
    let client_allow = client(pair.builder().permission_policy(allow).build().unwrap());
    assert!(!continued(client_allow.get("http://127.0.0.1:9/").deny_failover().send().await));

    assert_eq!((count(&deny_calls), count(&allow_calls)), (0, 0));
    assert_eq!(pair.calls(), (2, 1));
}

// C42: without an explicit choice the policy decides (Allow/Deny), overriding the method rule;
// Defer falls back to the method rule. It is called exactly once each time.
#[tokio::test]
async fn policy_decides_when_request_makes_no_choice() {
    let pair = Pair::start().await;
    for (method, answer, allowed) in [
        (Method::POST, Permission::Allow, true),
        (Method::GET, Permission::Deny, false),
        (Method::GET, Permission::Defer, true),
        (Method::POST, Permission::Defer, false),
    ] {
        let (policy, calls) = counting_policy(answer);
        let client = client(pair.builder().permission_policy(policy).build().unwrap());
        let went_on = continued(client.request(method.clone(), "http://127.0.0.1:9/").send().await);
        assert_eq!(went_on, allowed, "{method} {answer:?}");
        assert_eq!(count(&calls), 1, "{method} {answer:?}");
    }
    // An explicit `Defer` is no choice: the policy is asked.
    let (policy, calls) = counting_policy(Permission::Allow);
    let client = client(pair.builder().permission_policy(policy).build().unwrap());
    assert!(continued(client.post("http://127.0.0.1:9/").with_extension(Permission::Defer).send().await));
    assert_eq!(count(&calls), 1);
    assert_eq!(pair.calls(), (5, 3));
}

// C43: the policy is called at most once per request, however many endpoints are tried.
#[tokio::test]
async fn policy_called_at_most_once_per_request() {
    let e1 = Server::always(Action::Close).await;
    let e2 = Server::always(Action::Close).await;
    let e3 = status(200).await;
    let (policy, calls) = counting_policy(Permission::Allow);
    let failover = builder([("e1", e1.url("/rpc")), ("e2", e2.url("/rpc")), ("e3", e3.url())])
        .permission_policy(policy)
        .build()
        .unwrap();
    let resp = client(failover).post("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!((e1.requests(), e2.requests(), e3.hits()), (1, 1, 1));
    assert_eq!(count(&calls), 1);
}

// C48 (Rust): the policy is consulted only when a second endpoint could be tried: never for a
// single usable endpoint (alone, or after exclusion or eligibility), never when the request
// fails before any attempt (unknown id, no usable endpoint).
#[tokio::test]
async fn policy_not_called_when_no_second_endpoint_could_be_tried() {
    let pair = Pair::start().await;
    let (policy, calls) = counting_policy(Permission::Allow);

    let single = client(
        builder([("e1", pair.e1.url("/rpc"))])
            .cooldown(Cooldown::disabled())
            .permission_policy(policy.clone())
            .build()
            .unwrap(),
    );
    let err = single.post("http://127.0.0.1:9/").send().await.unwrap_err();
    assert_eq!(failnext_error(&err).attempts().len(), 1);

    let two = client(pair.builder().permission_policy(policy.clone()).build().unwrap());
    assert!(!continued(two.post("http://127.0.0.1:9/").exclude_endpoints(["e2"]).send().await));
    let err = two.post("http://127.0.0.1:9/").prefer_endpoint("missing").send().await.unwrap_err();
    assert!(failnext_error(&err).is_unknown_endpoint());
    let err = two.post("http://127.0.0.1:9/").exclude_endpoints(["e1", "e2"]).send().await.unwrap_err();
    assert!(failnext_error(&err).is_no_usable_endpoint());

    let only_e1 = client(
        pair.builder()
            .eligible(|id: &EndpointId| id.as_str() == "e1")
            .permission_policy(policy.clone())
            .build()
            .unwrap(),
    );
    assert!(!continued(only_e1.post("http://127.0.0.1:9/").send().await));

    assert_eq!(count(&calls), 0);
    assert_eq!(pair.calls(), (3, 0));
}

// Issue 28: the last resort (every candidate's breaker open) asks the policy only when a
// second candidate would be left; a single endpoint whose breaker is open never does.
#[tokio::test]
async fn the_last_resort_asks_no_policy_of_a_single_open_endpoint() {
    let (policy, calls) = counting_policy(Permission::Allow);
    let single = client(
        builder([("e1", failnext_loopback::refused_url("/rpc"))])
            .cooldown(Cooldown::adaptive())
            .permission_policy(policy)
            .build()
            .unwrap(),
    );
    // Three failures open its breaker; the requests after meet it open (the last resort).
    for _ in 0..6 {
        let err = single.post("http://127.0.0.1:9/").send().await.unwrap_err();
        assert!(failnext_error(&err).attempts().len() <= 1, "{err}");
    }
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

// C48 (Rust): when the first attempt succeeds the policy is still called at most once (it may
// be consulted before the first attempt, since the request is consumed by it).
#[tokio::test]
async fn policy_called_at_most_once_when_first_attempt_succeeds() {
    let e1 = status(200).await;
    let e2 = status(200).await;
    let (policy, calls) = counting_policy(Permission::Allow);
    let failover = builder([("e1", e1.url()), ("e2", e2.url())]).permission_policy(policy).build().unwrap();
    let resp = client(failover).post("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(count(&calls) <= 1);
    assert_eq!((e1.hits(), e2.hits()), (1, 0));
}

// C44: a denied continuation after a trigger response returns that response itself.
#[tokio::test]
async fn denied_continuation_returns_the_trigger_response() {
    let e1 = status(503).await;
    let e2 = status(200).await;
    let rec = Recorder::new();
    let failover = builder([("e1", e1.url()), ("e2", e2.url())]).on_event(rec.hook()).build().unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").deny_failover().send().await.unwrap();
    assert_eq!(resp.status(), 503);
    assert_eq!(resp.extensions().get::<ServedBy>().map(|s| s.0.as_str()), Some("e1"));
    assert_eq!(resp.text().await.unwrap(), "status 503 from call 0");
    assert_eq!((e1.hits(), e2.hits()), (1, 0));
    assert_eq!(rec.shapes(), [attempt("e1", 1, 503), result("e1", 503)]);
}

// C45: a denied continuation after a transport error is still a failover error with exactly
// one attempt (allow, then deny: the deny wins).
#[tokio::test]
async fn denied_continuation_after_transport_error_is_failover_error_with_one_attempt() {
    let pair = Pair::start().await;
    let rec = Recorder::new();
    let client = client(pair.builder().on_event(rec.hook()).build().unwrap());
    let err = client
        .post("http://127.0.0.1:9/")
        .body("{}")
        .allow_failover()
        .deny_failover()
        .send()
        .await
        .unwrap_err();
    let e = failnext_error(&err);
    assert!(e.is_failover());
    assert_eq!(e.attempts().len(), 1);
    assert_eq!(e.attempts()[0].endpoint().as_str(), "e1");
    assert_eq!(pair.calls(), (1, 0));
    assert_eq!(rec.shapes(), [attempt_err("e1", 1), result_err()]);
}

// C46: a replayable body does not grant permission: a POST with a bytes body and no choice
// stops after the first endpoint.
#[tokio::test]
async fn replayable_body_does_not_grant_permission() {
    let pair = Pair::start().await;
    let client = client(pair.builder().build().unwrap());
    assert!(!continued(client.post("http://127.0.0.1:9/").body("replayable").send().await));
    assert_eq!(pair.calls(), (1, 0));
}

// C47: the payload is never inspected: a write and a read JSON-RPC body behave identically,
// both with allow (fail over) and without (stop).
#[tokio::test]
async fn payload_is_never_inspected_for_permission() {
    let pair = Pair::start().await;
    let client = client(pair.builder().build().unwrap());
    let body = |method: &str| format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":[]}}"#);
    for method in ["eth_sendRawTransaction", "eth_call"] {
        let send = || client.post("http://127.0.0.1:9/").header("content-type", "application/json");
        assert!(continued(send().body(body(method)).allow_failover().send().await), "{method}");
        assert!(!continued(send().body(body(method)).send().await), "{method}");
    }
    assert_eq!(pair.calls(), (4, 2));
    let bodies: Vec<Vec<u8>> = pair.e2.requests().await.into_iter().map(|r| r.body).collect();
    assert_eq!(bodies, [body("eth_sendRawTransaction").into_bytes(), body("eth_call").into_bytes()]);
}

// C49: the policy receives the caller's original request (URL, method, headers, body), not
// an attempt's retargeted copy.
#[tokio::test]
async fn policy_receives_the_callers_original_request() {
    let pair = Pair::start().await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let failover = pair
        .builder()
        .permission_policy(move |req: &reqwest::Request| {
            log.lock().unwrap().push((
                req.method().clone(),
                req.url().to_string(),
                req.headers().get(HOST).cloned(),
                req.body().and_then(|b| b.as_bytes()).map(<[u8]>::to_vec),
            ));
            Permission::Allow
        })
        .build()
        .unwrap();
    let resp = client(failover)
        .post("http://127.0.0.1:9/original?x=1")
        .header(HOST, "signed.example")
        .body("payload")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [(
            Method::POST,
            "http://127.0.0.1:9/original?x=1".to_owned(),
            Some(http::HeaderValue::from_static("signed.example")),
            Some(b"payload".to_vec()),
        )]
    );
}

// Rust: a client-wide default permission goes in with reqwest-middleware's `Extension`
// initialiser; a request-scoped choice still overrides it.
#[tokio::test]
async fn client_wide_permission_applies_and_request_choice_overrides_it() {
    let pair = Pair::start().await;
    let client: ClientWithMiddleware = ClientBuilder::new(reqwest::Client::new())
        .with_init(Extension(Permission::Allow))
        .with(pair.builder().build().unwrap())
        .build();
    assert!(continued(client.post("http://127.0.0.1:9/").send().await));
    assert!(!continued(client.post("http://127.0.0.1:9/").deny_failover().send().await));
    assert_eq!(pair.calls(), (2, 1));
}

/// Callers meet here: each waits (at most `limit`) until `n` have arrived.
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

// C140: the policy may run for two requests at the same time (both inside it at once). E1
// answers 503 so that both requests need a decision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_may_run_concurrently_for_two_requests() {
    let e1 = status(503).await;
    let e2 = status(200).await;
    let meeting = Arc::new(Rendezvous::default());
    let met = Arc::new(AtomicUsize::new(0));
    let (m, counter) = (meeting.clone(), met.clone());
    let failover = builder([("e1", e1.url()), ("e2", e2.url())])
        .permission_policy(move |_: &reqwest::Request| {
            // Generous: on a loaded two-core machine a worker thread can wait seconds for a core.
            if m.meet(2, Duration::from_secs(15)) {
                counter.fetch_add(1, Ordering::SeqCst);
            }
            Permission::Allow
        })
        .build()
        .unwrap();
    let client = client(failover);
    let run = |client: ClientWithMiddleware| {
        tokio::spawn(async move { client.post("http://127.0.0.1:9/").send().await.map(|r| r.status()) })
    };
    let (a, b) = (run(client.clone()), run(client.clone()));
    let (a, b) = tokio::time::timeout(Duration::from_secs(40), async { (a.await, b.await) })
        .await
        .expect("both requests finish");
    assert_eq!(a.unwrap().unwrap(), 200);
    assert_eq!(b.unwrap().unwrap(), 200);
    assert_eq!(count(&met), 2, "both requests were inside the policy at once");
}

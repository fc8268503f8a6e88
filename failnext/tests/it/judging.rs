//! Judging beyond the status rule (0.2): a configured [`Classifier`] sees every response whose
//! status is not a trigger. A response it flags fails over and is retained like a trigger
//! response; a classifier that fails or panics loses no request; writes and streaming bodies
//! are exactly as safe as with the status rule; every attempt's `Judged` event follows its
//! `Attempt` event.
//!
//! The test classifiers are the small named structs at the bottom of this file.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use failnext::{
    Class, Classified, Classifier, Cooldown, EndpointId, Evidence, Judgement, RequestBuilderExt, ServedBy,
    Verdict,
};
use reqwest::Response;

use crate::support::events::*;
use crate::support::*;
use failnext_loopback::{Action, End, Reply, Server, refused_url};

const BOUND: Duration = Duration::from_secs(20);
const HOUR: Duration = Duration::from_secs(3600);

/// A JSON-RPC rate-limit error in an HTTP 200, the answer the test classifiers flag.
const LIMITED: &[u8] = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"limit exceeded"}}"#;
const RESULT: &[u8] = br#"{"jsonrpc":"2.0","id":1,"result":"0x2a"}"#;
const READ: &str = r#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}"#;

async fn bounded<F: std::future::Future>(fut: F) -> F::Output {
    tokio::time::timeout(BOUND, fut).await.expect("the request finished in time")
}

/// Status, `ServedBy` and body of the response the caller got.
async fn received(resp: Response) -> (u16, String, Bytes) {
    let status = resp.status().as_u16();
    let served_by = resp.extensions().get::<ServedBy>().map(|s| s.0.to_string()).unwrap_or_default();
    let body = resp.bytes().await.expect("the returned body is readable");
    (status, served_by, body)
}

fn limited(ep: &str) -> (u16, String, Bytes) {
    (200, ep.into(), Bytes::from_static(LIMITED))
}

fn answer(ep: &str) -> (u16, String, Bytes) {
    (200, ep.into(), Bytes::from_static(RESULT))
}

fn failover_error(err: &reqwest_middleware::Error) -> &failnext::Error {
    let e = failnext_error(err);
    assert!(e.is_failover(), "{e:?}");
    e
}

/// A `Failover` over "e1" then "e2", judged by `classifier`.
fn pair(e1: String, e2: String, classifier: impl Classifier) -> failnext::Failover {
    builder([("e1", e1), ("e2", e2)]).classifier(classifier).build().unwrap()
}

#[tokio::test]
async fn flagged_200_fails_over_to_the_next_endpoint() {
    let (limiting, healthy) = (Server::replying(200, LIMITED).await, Server::replying(200, RESULT).await);
    let failover = pair(limiting.url("/rpc"), healthy.url("/rpc"), FlagBody("-32005"));
    let resp = bounded(client(failover).post("http://127.0.0.1:9/").body(READ).allow_failover().send())
        .await
        .unwrap();
    assert_eq!(received(resp).await, answer("e2"));
    assert_eq!((limiting.requests(), healthy.requests()), (1, 1));
}

#[tokio::test]
async fn flagged_response_is_retained_and_returned_when_the_next_errors() {
    let limiting = Server::replying(200, LIMITED).await;
    let closing = Server::always(Action::Close).await;
    let rec = Recorder::new();
    let failover =
        builder([("e1", limiting.url("/rpc")), ("e2", refused_url("/rpc")), ("e3", closing.url("/rpc"))])
            .classifier(FlagBody("-32005"))
            .on_event(rec.hook())
            .build()
            .unwrap();
    let resp = bounded(client(failover).post("http://127.0.0.1:9/").body(READ).allow_failover().send())
        .await
        .unwrap();
    // The classifier read the body; the caller gets the same bytes, from the endpoint that
    // produced them.
    assert_eq!(received(resp).await, limited("e1"));
    assert_eq!(
        rec.shapes(),
        [attempt("e1", 1, 200), attempt_err("e2", 2), attempt_err("e3", 3), result("e1", 200)]
    );
}

#[tokio::test]
async fn newer_flagged_response_replaces_the_older_one() {
    let (first, second) = (Server::replying(200, LIMITED).await, Server::replying(200, LIMITED).await);
    let failover = pair(first.url("/rpc"), second.url("/rpc"), FlagBody("-32005"));
    let resp = bounded(client(failover).post("http://127.0.0.1:9/").body(READ).allow_failover().send())
        .await
        .unwrap();
    assert_eq!(received(resp).await, limited("e2"));
}

#[tokio::test]
async fn classifier_failed_fails_over_and_is_listed_in_attempts() {
    let (broken, healthy) = (Server::replying(200, LIMITED).await, Server::replying(200, RESULT).await);
    let failover = pair(broken.url("/rpc"), healthy.url("/rpc"), FailOn("e1"));
    let c = client(failover);
    let resp = bounded(c.get("http://127.0.0.1:9/").send()).await.unwrap();
    assert_eq!(received(resp).await, answer("e2"));

    // Nothing else answers: the failed attempt is in the failover error, with the
    // classifier's error, in order with the others.
    let err = bounded(c.get("http://127.0.0.1:9/").exclude_endpoints(["e2"]).send()).await.unwrap_err();
    let e = failover_error(&err);
    assert_eq!(e.attempts().len(), 1);
    assert_eq!(e.attempts()[0].endpoint().as_str(), "e1");
    assert!(e.attempts()[0].to_string().contains(FAILED), "{}", e.attempts()[0]);

    let failover = pair(broken.url("/rpc"), refused_url("/rpc"), FailOn("e1"));
    let err = bounded(client(failover).get("http://127.0.0.1:9/").send()).await.unwrap_err();
    let ids: Vec<&str> = failover_error(&err).attempts().iter().map(|a| a.endpoint().as_str()).collect();
    assert_eq!(ids, ["e1", "e2"]);
}

#[tokio::test]
async fn classifier_read_error_fails_over_without_the_url() {
    // Headers promise 100 bytes; 10 come, then the connection closes.
    let truncated =
        Server::always(Action::Reply(Reply::new(200).length(100).send("0123456789").end(End::Close))).await;
    let healthy = Server::replying(200, RESULT).await;
    let secret_url = truncated.url("/v3/SECRET-KEY?key=SECRET-QUERY");
    let failover = pair(secret_url, healthy.url("/rpc"), FlagBody("-32005"));
    let c = client(failover);
    let resp = bounded(c.get("http://127.0.0.1:9/").send()).await.unwrap();
    assert_eq!(received(resp).await, answer("e2"));

    let err = bounded(c.get("http://127.0.0.1:9/").exclude_endpoints(["e2"]).send()).await.unwrap_err();
    let e = failover_error(&err);
    assert_eq!(e.attempts().len(), 1);
    let attempt = &e.attempts()[0];
    assert!(attempt.error().is_body() || attempt.error().is_decode(), "{attempt}");
    let printed = format!("{attempt} {attempt:?} {err} {err:?}");
    assert!(!printed.contains("SECRET"), "a secret reached the error: {printed}");
}

#[tokio::test]
async fn panicking_classifier_loses_no_request() {
    let (panicking, healthy) = (Server::replying(200, RESULT).await, Server::replying(200, RESULT).await);
    for classifier in [Panics::WhenPolled, Panics::WhenCalled] {
        let failover = pair(panicking.url("/rpc"), healthy.url("/rpc"), PanicOn("e1", classifier));
        let resp = bounded(client(failover).get("http://127.0.0.1:9/").send()).await.unwrap();
        assert_eq!(received(resp).await, answer("e2"), "{classifier:?}");
    }
    assert_eq!((panicking.requests(), healthy.requests()), (2, 2));
}

#[tokio::test]
async fn panicking_classifier_with_one_endpoint_is_a_failover_error_naming_the_panic() {
    let panicking = Server::replying(200, RESULT).await;
    let rec = Recorder::with_judged();
    let failover = builder([("only", panicking.url("/rpc"))])
        .classifier(PanicOn("only", Panics::WhenPolled))
        .cooldown(Cooldown::new(1, HOUR))
        .on_event(rec.hook())
        .build()
        .unwrap();
    let err = bounded(client(failover.clone()).get("http://127.0.0.1:9/").send()).await.unwrap_err();
    let e = failover_error(&err);
    assert_eq!(e.attempts().len(), 1);
    assert!(e.attempts()[0].error().is_middleware());
    assert!(e.attempts()[0].to_string().contains("classifier panicked"), "{}", e.attempts()[0]);
    assert!(!e.attempts()[0].to_string().contains(PANIC), "the panic's message is not kept");
    // A classifier's bug says nothing about the endpoint.
    assert!(!failover.is_cooling_down("only"), "a panic is neutral evidence");
    assert_eq!(
        rec.shapes(),
        [
            attempt("only", 1, 200),
            Ev::Judged("only".into(), 1, Class::Broken, FAIL_OVER, Evidence::Neutral),
            result_err()
        ]
    );
}

#[tokio::test]
async fn denied_request_with_a_flagged_response_reaches_one_provider_and_gets_that_response() {
    let (limiting, healthy) = (Server::replying(200, LIMITED).await, Server::replying(200, RESULT).await);
    let failover = pair(limiting.url("/rpc"), healthy.url("/rpc"), FlagBody("-32005"));
    let c = client(failover);
    let write = r#"{"jsonrpc":"2.0","id":2,"method":"eth_sendRawTransaction","params":["0x00"]}"#;
    // Denied by the method rule (a POST), then explicitly.
    let resp = bounded(c.post("http://127.0.0.1:9/").body(write).send()).await.unwrap();
    assert_eq!(received(resp).await, limited("e1"));
    let resp = bounded(c.post("http://127.0.0.1:9/").body(write).deny_failover().send()).await.unwrap();
    assert_eq!(received(resp).await, limited("e1"));
    assert_eq!((limiting.requests(), healthy.requests()), (2, 0));

    // A failed classification of a write is an error naming its one attempt; nothing else sent.
    let failover = pair(limiting.url("/rpc"), healthy.url("/rpc"), FailOn("e1"));
    let err = bounded(client(failover).post("http://127.0.0.1:9/").body(write).send()).await.unwrap_err();
    assert_eq!(failover_error(&err).attempts().len(), 1);
    assert_eq!((limiting.requests(), healthy.requests()), (3, 0));
}

#[tokio::test]
async fn streaming_body_with_a_flagged_response_is_never_sent_twice() {
    let (limiting, healthy) = (Server::replying(200, LIMITED).await, Server::replying(200, RESULT).await);
    let rec = Recorder::new();
    let failover = builder([("e1", limiting.url("/rpc")), ("e2", healthy.url("/rpc"))])
        .classifier(FlagBody("-32005"))
        .on_event(rec.hook())
        .build()
        .unwrap();
    let chunks = futures::stream::iter([Ok::<_, std::io::Error>(Bytes::from_static(READ.as_bytes()))]);
    let req = client(failover)
        .post("http://127.0.0.1:9/")
        .body(reqwest::Body::wrap_stream(chunks))
        .allow_failover();
    let resp = bounded(req.send()).await.unwrap();
    assert_eq!(received(resp).await, limited("e1"));
    assert_eq!((limiting.requests(), healthy.requests()), (1, 0));
    assert_eq!(rec.shapes(), [attempt("e1", 1, 200), Ev::NotReplayable("e2".into()), result("e1", 200)]);
}

#[tokio::test]
async fn trigger_statuses_never_reach_the_classifier() {
    let (e1, e2, e3, e4) = (status(503).await, status(502).await, status(429).await, status(200).await);
    let seen = Arc::new(AtomicUsize::new(0));
    let failover = builder([("e1", e1.url()), ("e2", e2.url()), ("e3", e3.url()), ("e4", e4.url())])
        .additional_trigger_status_codes([http::StatusCode::TOO_MANY_REQUESTS])
        .classifier(Counting(seen.clone()))
        .build()
        .unwrap();
    let resp = bounded(client(failover).get("http://127.0.0.1:9/").send()).await.unwrap();
    assert_eq!(resp.extensions().get::<ServedBy>().map(|s| s.0.as_str()), Some("e4"));
    assert_eq!(seen.load(Ordering::SeqCst), 1, "only the 200 was classified");
    assert_eq!((e1.hits(), e2.hits(), e3.hits(), e4.hits()), (1, 1, 1, 1));
}

#[tokio::test]
async fn without_a_classifier_a_flaggable_200_is_returned_as_before() {
    let (limiting, healthy) = (Server::replying(200, LIMITED).await, Server::replying(200, RESULT).await);
    let rec = Recorder::with_judged();
    let failover = builder([("e1", limiting.url("/rpc")), ("e2", healthy.url("/rpc"))])
        .on_event(rec.hook())
        .build()
        .unwrap();
    let resp = bounded(client(failover).post("http://127.0.0.1:9/").body(READ).allow_failover().send())
        .await
        .unwrap();
    assert_eq!(received(resp).await, limited("e1"));
    assert_eq!(rec.shapes(), [attempt("e1", 1, 200), answered("e1", 1), result("e1", 200)]);
    assert_eq!(healthy.requests(), 0);
}

#[tokio::test]
async fn judged_events_follow_each_attempt_in_order() {
    let unavailable = status(503).await;
    let (limiting, broken, healthy) = (
        Server::replying(200, LIMITED).await,
        Server::replying(200, RESULT).await,
        Server::replying(200, RESULT).await,
    );
    let rec = Recorder::with_judged();
    let failover = builder([
        ("down", refused_url("/rpc")),
        ("busy", unavailable.url()),
        ("limited", limiting.url("/rpc")),
        ("broken", broken.url("/rpc")),
        ("ok", healthy.url("/rpc")),
    ])
    .classifier(Sequence)
    .cooldown(Cooldown::disabled())
    .on_event(rec.hook())
    .build()
    .unwrap();
    let resp = bounded(client(failover).get("http://127.0.0.1:9/").send()).await.unwrap();
    assert_eq!(received(resp).await, answer("ok"));
    let cool = Verdict::FailOver { cool_for: Some(COOL) };
    assert_eq!(
        rec.shapes(),
        [
            attempt_err("down", 1),
            transport("down", 1),
            attempt("busy", 2, 503),
            trigger("busy", 2),
            attempt("limited", 3, 200),
            Ev::Judged("limited".into(), 3, Class::Capacity, cool, Evidence::Failure),
            attempt("broken", 4, 200),
            Ev::Judged("broken".into(), 4, Class::Broken, FAIL_OVER, Evidence::Failure),
            attempt("ok", 5, 200),
            Ev::Judged("ok".into(), 5, Class::Answer, Verdict::Return, Evidence::Success),
            result("ok", 200),
        ]
    );
}

#[tokio::test]
async fn a_returned_failed_verdict_still_fails_over() {
    let (broken, healthy) = (Server::replying(200, RESULT).await, Server::replying(200, RESULT).await);
    let rec = Recorder::with_judged();
    let failover = builder([("e1", broken.url("/rpc")), ("e2", healthy.url("/rpc"))])
        .classifier(FailReturning)
        .on_event(rec.hook())
        .build()
        .unwrap();
    let err = bounded(client(failover).get("http://127.0.0.1:9/").send()).await.unwrap_err();
    assert_eq!(failover_error(&err).attempts().len(), 2, "Failed has no response: it never returns");
    let judged: Vec<Ev> = rec.shapes().into_iter().filter(|ev| matches!(ev, Ev::Judged(..))).collect();
    assert_eq!(
        judged,
        [
            Ev::Judged("e1".into(), 1, Class::Broken, FAIL_OVER, Evidence::Failure),
            Ev::Judged("e2".into(), 2, Class::Broken, FAIL_OVER, Evidence::Failure),
        ]
    );
}

#[tokio::test]
async fn dropping_the_request_while_the_classifier_reads_records_nothing_for_that_attempt() {
    let (down, answering) = (refused_url("/rpc"), Server::replying(200, RESULT).await);
    let rec = Recorder::with_judged();
    let entered = Arc::new(tokio::sync::Notify::new());
    let failover = builder([("down", down), ("slow", answering.url("/rpc"))])
        .classifier(Hangs(entered.clone()))
        .cooldown(Cooldown::new(1, HOUR))
        .on_event(rec.hook())
        .build()
        .unwrap();
    let send = client(failover.clone()).get("http://127.0.0.1:9/").send();
    bounded(async {
        tokio::select! {
            res = send => panic!("the classifier answered: {res:?}"),
            () = entered.notified() => {}
        }
    })
    .await;
    assert_eq!(
        rec.shapes(),
        [
            attempt_err("down", 1),
            transport("down", 1),
            attempt("slow", 2, 200),
            Ev::Result(None, Res::Cancelled)
        ]
    );
    assert!(failover.is_cooling_down("down"), "the completed attempt was recorded");
    assert!(!failover.is_cooling_down("slow"), "the attempt being judged recorded nothing");
}

// ===== test classifiers =====

const FAIL_OVER: Verdict = Verdict::FailOver { cool_for: None };
const COOL: Duration = Duration::from_secs(5);
const FAILED: &str = "classifier could not read the body";
const PANIC: &str = "test classifier panicked on purpose";

/// Reads the body (a read error is `Failed`) and hands back a response rebuilt from the same
/// bytes: flagged (capacity, fail over) when the body contains the needle, an answer otherwise.
struct FlagBody(&'static str);

#[async_trait::async_trait]
impl Classifier for FlagBody {
    async fn classify(&self, _: &EndpointId, response: Response) -> Classified {
        let (response, body) = match read_and_rebuild(response).await {
            Ok(read) => read,
            Err(err) => {
                let broken = Judgement::new(FAIL_OVER, Evidence::Failure, Class::Broken);
                return Classified::Failed(err.into(), broken);
            }
        };
        let needle = self.0.as_bytes();
        if body.windows(needle.len()).any(|w| w == needle) {
            Classified::Response(response, Judgement::new(FAIL_OVER, Evidence::Failure, Class::Capacity))
        } else {
            Classified::Response(response, Judgement::answer())
        }
    }
}

/// `Failed` (as if reading the body failed) for responses of the named endpoint; other
/// responses are answers.
struct FailOn(&'static str);

#[async_trait::async_trait]
impl Classifier for FailOn {
    async fn classify(&self, endpoint: &EndpointId, response: Response) -> Classified {
        if endpoint.as_str() != self.0 {
            return Classified::Response(response, Judgement::answer());
        }
        let err = reqwest_middleware::Error::middleware(std::io::Error::other(FAILED));
        Classified::Failed(err, Judgement::new(FAIL_OVER, Evidence::Failure, Class::Broken))
    }
}

/// `Failed` for every response, with a (meaningless) `Return` verdict.
struct FailReturning;

#[async_trait::async_trait]
impl Classifier for FailReturning {
    async fn classify(&self, _: &EndpointId, _: Response) -> Classified {
        let err = reqwest_middleware::Error::middleware(std::io::Error::other(FAILED));
        Classified::Failed(err, Judgement::new(Verdict::Return, Evidence::Failure, Class::Broken))
    }
}

/// Where a panicking classifier panics.
#[derive(Clone, Copy, Debug)]
enum Panics {
    /// Inside its future, while failnext polls it.
    WhenPolled,
    /// In the call itself, before any future exists (a hand-written `classify`).
    WhenCalled,
}

/// Panics on responses of the named endpoint; other responses are answers.
struct PanicOn(&'static str, Panics);

impl Classifier for PanicOn {
    fn classify<'a, 'b, 'c>(
        &'a self,
        endpoint: &'b EndpointId,
        response: Response,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Classified> + Send + 'c>>
    where
        'a: 'c,
        'b: 'c,
    {
        let mine = endpoint.as_str() == self.0;
        if mine && matches!(self.1, Panics::WhenCalled) {
            std::panic::panic_any(PANIC);
        }
        Box::pin(async move {
            if mine {
                tokio::task::yield_now().await;
                std::panic::panic_any(PANIC);
            }
            Classified::Response(response, Judgement::answer())
        })
    }
}

/// Never finishes judging; says when it has started.
struct Hangs(Arc<tokio::sync::Notify>);

#[async_trait::async_trait]
impl Classifier for Hangs {
    async fn classify(&self, _: &EndpointId, _: Response) -> Classified {
        self.0.notify_one();
        std::future::pending().await
    }
}

/// Counts the responses it sees; every one is an answer.
struct Counting(Arc<AtomicUsize>);

#[async_trait::async_trait]
impl Classifier for Counting {
    async fn classify(&self, _: &EndpointId, response: Response) -> Classified {
        self.0.fetch_add(1, Ordering::SeqCst);
        Classified::Response(response, Judgement::answer())
    }
}

/// By endpoint id: "limited" is capacity with a cooling hint, "broken" is broken, the rest
/// are answers.
struct Sequence;

#[async_trait::async_trait]
impl Classifier for Sequence {
    async fn classify(&self, endpoint: &EndpointId, response: Response) -> Classified {
        let judgement = match endpoint.as_str() {
            "limited" => {
                Judgement::new(Verdict::FailOver { cool_for: Some(COOL) }, Evidence::Failure, Class::Capacity)
            }
            "broken" => Judgement::new(FAIL_OVER, Evidence::Failure, Class::Broken),
            _ => Judgement::answer(),
        };
        Classified::Response(response, judgement)
    }
}

/// Reads the whole body and rebuilds the response (status, version, headers) around the same
/// bytes: a `Bytes` handed on, not copied.
async fn read_and_rebuild(response: Response) -> Result<(Response, Bytes), reqwest::Error> {
    let mut head = http::Response::builder().status(response.status()).version(response.version());
    if let Some(headers) = head.headers_mut() {
        *headers = response.headers().clone();
    }
    let body = response.bytes().await?;
    let rebuilt = head.body(body.clone()).expect("the parts came from a valid response");
    Ok((Response::from(rebuilt), body))
}

//! §F triggers and outcome classification (C50-C61): which outcomes make failnext try the
//! next endpoint.

use failnext::{Cooldown, RequestBuilderExt, ServedBy};
use http::{Extensions, StatusCode};
use reqwest::{Request, Response};
use reqwest_middleware::{ClientBuilder, Middleware, Next};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::events::*;
use crate::support::*;
use failnext_loopback::{Action, Server, refused_url};

fn served_by(resp: &Response) -> Option<&str> {
    resp.extensions().get::<ServedBy>().map(|s| s.0.as_str())
}

fn code(c: u16) -> StatusCode {
    StatusCode::from_u16(c).unwrap()
}

// C50: 502, 503 and 504 trigger failover by default.
#[tokio::test]
async fn builtin_502_503_504_trigger_failover() {
    for trigger in [502, 503, 504] {
        let e1 = status(trigger).await;
        let e2 = status(200).await;
        let rec = Recorder::new();
        let failover = builder([("e1", e1.url()), ("e2", e2.url())]).on_event(rec.hook()).build().unwrap();
        let resp = client(failover).get("http://127.0.0.1:9/").send().await.unwrap();
        assert_eq!(resp.status(), 200, "{trigger}");
        assert_eq!(served_by(&resp), Some("e2"));
        assert_eq!((e1.hits(), e2.hits()), (1, 1), "{trigger}");
        assert_eq!(rec.shapes(), [attempt("e1", 1, trigger), attempt("e2", 2, 200), result("e2", 200)]);
    }
}

// C51: 500 is not a trigger by default, with or without permission: it is returned unchanged,
// body readable, and nothing else is tried.
#[tokio::test]
async fn status_500_is_not_a_trigger_by_default() {
    let e1 = status(500).await;
    let e2 = status(200).await;
    let client = client(builder([("e1", e1.url()), ("e2", e2.url())]).build().unwrap());
    let resp = client.post("http://127.0.0.1:9/").body("{}").send().await.unwrap();
    assert_eq!(resp.status(), 500);
    assert_eq!(served_by(&resp), Some("e1"));
    assert_eq!(resp.text().await.unwrap(), "status 500 from call 0");
    let resp = client.post("http://127.0.0.1:9/").body("{}").allow_failover().send().await.unwrap();
    assert_eq!(resp.status(), 500);
    assert_eq!(resp.text().await.unwrap(), "status 500 from call 1");
    assert_eq!((e1.hits(), e2.hits()), (2, 0));
}

// C52: 429 is not a built-in trigger.
#[tokio::test]
async fn status_429_is_not_a_builtin_trigger() {
    let e1 = status(429).await;
    let e2 = status(200).await;
    let rec = Recorder::new();
    let failover = builder([("e1", e1.url()), ("e2", e2.url())]).on_event(rec.hook()).build().unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.text().await.unwrap(), "status 429 from call 0");
    assert_eq!((e1.hits(), e2.hits()), (1, 0));
    assert_eq!(rec.shapes(), [attempt("e1", 1, 429), result("e1", 429)]);
}

// C53: additional trigger codes fail over.
#[tokio::test]
async fn additional_trigger_codes_fail_over() {
    for extra in [429, 500] {
        let e1 = status(extra).await;
        let e2 = status(200).await;
        let failover = builder([("e1", e1.url()), ("e2", e2.url())])
            .additional_trigger_status_codes([code(extra)])
            .build()
            .unwrap();
        let resp = client(failover).get("http://127.0.0.1:9/").send().await.unwrap();
        assert_eq!(resp.status(), 200, "{extra}");
        assert_eq!(served_by(&resp), Some("e2"));
        assert_eq!((e1.hits(), e2.hits()), (1, 1), "{extra}");
    }
}

// C53 with V18: even a success status can be added; then every 200 is a trigger, and when
// nothing else is left the latest such response is returned.
#[tokio::test]
async fn additional_success_code_triggers_and_latest_is_returned() {
    let e1 = status(200).await;
    let e2 = status(200).await;
    let rec = Recorder::new();
    let failover = builder([("e1", e1.url()), ("e2", e2.url())])
        .additional_trigger_status_codes([StatusCode::OK])
        .on_event(rec.hook())
        .build()
        .unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(served_by(&resp), Some("e2"));
    assert_eq!((e1.hits(), e2.hits()), (1, 1));
    assert_eq!(rec.shapes(), [attempt("e1", 1, 200), attempt("e2", 2, 200), result("e2", 200)]);
}

// C54: additional codes extend the built-in set, never replace it.
#[tokio::test]
async fn additional_codes_extend_builtin_triggers() {
    let e1 = status(503).await;
    let e2 = status(200).await;
    let failover = builder([("e1", e1.url()), ("e2", e2.url())])
        .additional_trigger_status_codes([StatusCode::INTERNAL_SERVER_ERROR])
        .build()
        .unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!((e1.hits(), e2.hits()), (1, 1));
}

// C55: codes not listed stay terminal.
#[tokio::test]
async fn unlisted_codes_stay_terminal() {
    let e1 = status(501).await;
    let e2 = status(200).await;
    let failover = builder([("e1", e1.url()), ("e2", e2.url())])
        .additional_trigger_status_codes([StatusCode::INTERNAL_SERVER_ERROR])
        .build()
        .unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(resp.status(), 501);
    assert_eq!(resp.text().await.unwrap(), "status 501 from call 0");
    assert_eq!((e1.hits(), e2.hits()), (1, 0));
}

// C56: an HTTP 200 carrying a JSON-RPC error object is a success; the body is not inspected.
#[tokio::test]
async fn http_200_with_jsonrpc_error_is_a_success() {
    let payload = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"header not found"}}"#;
    let e1 = MockServer::start().await;
    Mock::given(wiremock::matchers::any())
        .respond_with(ResponseTemplate::new(200).set_body_string(payload))
        .mount(&e1)
        .await;
    let e2 = status(200).await;
    let failover = builder([("e1", format!("{}/rpc", e1.uri())), ("e2", e2.url())]).build().unwrap();
    let resp = client(failover)
        .post("http://127.0.0.1:9/")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}"#)
        .allow_failover()
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(served_by(&resp), Some("e1"));
    assert_eq!(resp.text().await.unwrap(), payload);
    assert_eq!(e1.received_requests().await.unwrap().len(), 1);
    assert_eq!(e2.hits(), 0);
}

// C57: a transport error (connection closed without an answer, or refused) triggers failover
// when permitted.
#[tokio::test]
async fn transport_error_triggers_failover_when_permitted() {
    let closing = Server::always(Action::Close).await;
    let refused = refused_url("/rpc");
    let e3 = status(200).await;
    let rec = Recorder::new();
    let failover = builder([("closing", closing.url("/rpc")), ("refused", refused), ("e3", e3.url())])
        .on_event(rec.hook())
        .build()
        .unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!((closing.requests(), e3.hits()), (1, 1));
    assert_eq!(
        rec.shapes(),
        [attempt_err("closing", 1), attempt_err("refused", 2), attempt("e3", 3, 200), result("e3", 200)]
    );
}

/// A per-attempt middleware (added after the failover) that fails attempts to `port` with a
/// middleware error instead of sending them.
struct FailPort(u16);

#[async_trait::async_trait]
impl Middleware for FailPort {
    async fn handle(
        &self,
        req: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        if req.url().port() == Some(self.0) {
            return Err(reqwest_middleware::Error::middleware(std::io::Error::other("synthetic failure")));
        }
        next.run(req, extensions).await
    }
}

// C58 (Rust analogue): any error the rest of the chain returns, a later middleware's own error
// included, is an attempt failure like a transport error: it fails over and, when nothing
// else answers, is listed in the failover error.
#[tokio::test]
async fn error_from_a_later_middleware_fails_over_like_a_transport_error() {
    let e1 = status(200).await;
    let e2 = status(200).await;
    let port = e1.server.address().port();
    let rec = Recorder::new();
    let failover = builder([("e1", e1.url()), ("e2", e2.url())]).on_event(rec.hook()).build().unwrap();
    let client = ClientBuilder::new(reqwest::Client::new()).with(failover).with(FailPort(port)).build();
    let resp = client.get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(served_by(&resp), Some("e2"));
    assert_eq!((e1.hits(), e2.hits()), (0, 1));
    let events = rec.take();
    assert!(
        matches!(&events[0], Ev::Attempt(ep, 1, Out::Error(text)) if ep == "e1" && text.contains("synthetic failure")),
        "{events:?}"
    );
    assert_eq!(events[1..], [attempt("e2", 2, 200), result("e2", 200)]);

    let err = client.get("http://127.0.0.1:9/").exclude_endpoints(["e2"]).send().await.unwrap_err();
    let e = failnext_error(&err);
    assert!(e.is_failover());
    assert_eq!(e.attempts().len(), 1);
    assert!(e.attempts()[0].error().is_middleware());
}

// C61: a transport error on a single endpoint is still a failover error with one attempt,
// never the bare error; its source is that attempt's error.
#[tokio::test]
async fn single_endpoint_transport_error_is_failover_error_with_one_attempt() {
    let failover = builder([("only", refused_url("/rpc"))]).cooldown(Cooldown::disabled()).build().unwrap();
    let err = client(failover).get("http://127.0.0.1:9/").send().await.unwrap_err();
    assert!(err.is_middleware(), "{err:?}");
    let e = failnext_error(&err);
    assert!(e.is_failover());
    assert_eq!(e.attempts().len(), 1);
    let attempt = &e.attempts()[0];
    assert_eq!(attempt.endpoint().as_str(), "only");
    assert!(attempt.error().is_connect(), "{:?}", attempt.error());
    let source = std::error::Error::source(e).expect("a failover error has a cause");
    assert_eq!(source.to_string(), attempt.error().to_string());
}

//! The JSON-RPC classifier in the middleware, end to end (feature `jsonrpc`), with the adaptive
//! breaker (the default): the issue's acceptance claims for judging.
//!
//! Paused time: the clients have no attempt timeout and no pool, so the clock moves only when a
//! test advances it.

use std::time::Duration;

use failnext::jsonrpc::JsonRpcClassifier;
use failnext::{Failover, RequestBuilderExt, ServedBy};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use serde_json::json;
use wiremock::matchers::any;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::*;

/// A provider that answers every call with `status` and the JSON `body`, with `headers`.
async fn provider(status: u16, body: serde_json::Value, headers: &[(&str, &str)]) -> MockServer {
    let server = MockServer::start().await;
    let mut template = ResponseTemplate::new(status).set_body_json(body);
    for (name, value) in headers {
        template = template.insert_header(*name, *value);
    }
    Mock::given(any()).respond_with(template).mount(&server).await;
    server
}

fn result() -> serde_json::Value {
    json!({"jsonrpc": "2.0", "id": 1, "result": "0x10"})
}

fn failover(first: &MockServer, second: &MockServer) -> Failover {
    builder([("first", format!("{}/rpc", first.uri())), ("second", format!("{}/rpc", second.uri()))])
        .classifier(JsonRpcClassifier::new())
        .no_attempt_timeout()
        .build()
        .unwrap()
}

fn paused_client(failover: Failover) -> ClientWithMiddleware {
    let http = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    ClientBuilder::new(http).with(failover).build()
}

/// A JSON-RPC read, allowed to fail over.
async fn read(client: &ClientWithMiddleware) -> reqwest::Response {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "eth_call", "params": []});
    post(client, &body).allow_failover().send().await.unwrap()
}

/// A JSON-RPC POST with its content type.
fn post(client: &ClientWithMiddleware, body: &serde_json::Value) -> reqwest_middleware::RequestBuilder {
    client.post("http://127.0.0.1:9/").header("content-type", "application/json").body(body.to_string())
}

async fn json_of(resp: reqwest::Response) -> serde_json::Value {
    serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap()
}

async fn hits(server: &MockServer) -> usize {
    server.received_requests().await.map_or(0, |r| r.len())
}

fn served_by(resp: &reqwest::Response) -> Option<&str> {
    resp.extensions().get::<ServedBy>().map(|s| s.0.as_str())
}

#[tokio::test(start_paused = true)]
async fn rate_limited_200_with_retry_after_gets_one_request_then_none_for_its_hint() {
    let limited = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32005, "message": "rate limited"}});
    let first = provider(200, limited, &[("retry-after", "5")]).await;
    let second = provider(200, result(), &[]).await;
    let failover = failover(&first, &second);
    let client = paused_client(failover.clone());
    for _ in 0..10 {
        let resp = read(&client).await;
        assert_eq!(served_by(&resp), Some("second"), "no error reaches the caller");
        assert_eq!(json_of(resp).await["result"], "0x10");
        tokio::time::advance(Duration::from_millis(400)).await;
    }
    assert_eq!(hits(&first).await, 1, "one request, then none for 5 s");
    assert!(failover.is_cooling_down("first"));
    tokio::time::advance(Duration::from_millis(1000)).await;
    read(&client).await;
    assert_eq!(hits(&first).await, 2, "its trial once the 5 s are over");
}

#[tokio::test(start_paused = true)]
async fn a_revert_is_returned_from_the_first_provider_and_reaches_no_other() {
    let revert = json!({"jsonrpc": "2.0", "id": 1,
        "error": {"code": 3, "message": "execution reverted: too little received", "data": "0x08c379a0"}});
    let first = provider(200, revert, &[]).await;
    let second = provider(200, result(), &[]).await;
    let client = paused_client(failover(&first, &second));
    let resp = read(&client).await;
    assert_eq!(served_by(&resp), Some("first"));
    let body = json_of(resp).await;
    assert_eq!(body["error"]["code"], 3, "the caller gets the revert as the provider sent it");
    assert_eq!(hits(&second).await, 0, "a revert is never rotated");
}

#[tokio::test(start_paused = true)]
async fn internal_error_fails_over_and_a_write_still_reaches_one_provider() {
    let broken = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "internal error"}});
    let first = provider(200, broken, &[]).await;
    let second = provider(200, result(), &[]).await;
    let client = paused_client(failover(&first, &second));
    assert_eq!(served_by(&read(&client).await), Some("second"), "a read fails over");
    let tx = json!({"jsonrpc": "2.0", "id": 2, "method": "eth_sendRawTransaction", "params": ["0x02"]});
    let before = hits(&second).await;
    let resp = post(&client, &tx).prefer_endpoint("first").deny_failover().send().await.unwrap();
    assert_eq!(served_by(&resp), Some("first"), "the write gets the first provider's answer");
    assert_eq!(hits(&second).await, before, "the write reached no second provider");
}

/// A provider answering every call with `status`, the raw `body` and `content_type`.
async fn provider_raw(status: u16, body: &str, content_type: &str) -> MockServer {
    let server = MockServer::start().await;
    let template = ResponseTemplate::new(status).set_body_raw(body.as_bytes().to_vec(), content_type);
    Mock::given(any()).respond_with(template).mount(&server).await;
    server
}

/// `first` refuses the credentials on every call: over ten reads it gets one request, is told
/// as "unauthorized" and paused for a minute; after the minute, one more request (its trial),
/// refused again, pauses it for two.
async fn refused_credentials_cost_one_attempt_and_pause_for_minutes(first: MockServer) {
    let second = provider(200, result(), &[]).await;
    let (seen, hook) = first_events();
    let failover =
        builder([("first", format!("{}/rpc", first.uri())), ("second", format!("{}/rpc", second.uri()))])
            .classifier(JsonRpcClassifier::new())
            .no_attempt_timeout()
            .on_event(hook)
            .build()
            .unwrap();
    let client = paused_client(failover);
    for _ in 0..10 {
        let resp = read(&client).await;
        assert_eq!(served_by(&resp), Some("second"), "the read is answered by the other provider");
        tokio::time::advance(Duration::from_secs(5)).await;
    }
    assert_eq!(hits(&first).await, 1, "one attempt, then none while it is paused");
    assert_eq!(seen.lock().unwrap().0, ["unauthorized"], "told as its own reason");
    tokio::time::advance(Duration::from_secs(11)).await;
    read(&client).await;
    assert_eq!(hits(&first).await, 2, "tried again once the minute is over");
    for _ in 0..20 {
        read(&client).await;
        tokio::time::advance(Duration::from_secs(5)).await;
    }
    assert_eq!(hits(&first).await, 2, "refused again: paused for longer");
    let opened = seen.lock().unwrap().1.clone();
    assert_eq!(opened, [Duration::from_secs(60), Duration::from_secs(120)], "the pause grows while it lasts");
}

/// What was recorded of "first": its judgements' classes, and its breaker's open times.
type FirstEvents = std::sync::Arc<std::sync::Mutex<(Vec<&'static str>, Vec<Duration>)>>;

/// The events of "first", and the hook that records them.
fn first_events() -> (FirstEvents, impl Fn(&failnext::Event<'_>) + Send + Sync + 'static) {
    let seen = FirstEvents::default();
    let kept = seen.clone();
    let hook = move |event: &failnext::Event<'_>| match *event {
        failnext::Event::Judged { endpoint, class, .. } if endpoint.as_str() == "first" => {
            kept.lock().unwrap().0.push(class.as_str());
        }
        failnext::Event::Breaker { endpoint, state: failnext::BreakerState::Open { duration } }
            if endpoint.as_str() == "first" =>
        {
            kept.lock().unwrap().1.push(duration);
        }
        _ => {}
    };
    (seen, hook)
}

#[tokio::test(start_paused = true)]
async fn a_provider_answering_401_costs_each_read_at_most_one_attempt_and_is_told_unauthorized() {
    refused_credentials_cost_one_attempt_and_pause_for_minutes(
        provider_raw(401, "invalid project id\n", "text/plain").await,
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_json_32002_project_id_rejection_is_unauthorized_too() {
    let rejected =
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"rejected due to project ID settings"}}"#;
    refused_credentials_cost_one_attempt_and_pause_for_minutes(
        provider_raw(200, rejected, "application/json").await,
    )
    .await;
}

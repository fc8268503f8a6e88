//! `failnext::alloy::FailoverTransport` against loopback JSON-RPC stubs (the real-node suite
//! is `examples/tests/alloy_nodes.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use alloy_json_rpc::{Id, Request, RequestPacket, ResponsePacket, ResponsePayload, SerializedRequest};
use alloy_primitives::{B256, keccak256};
use failnext::alloy::{CallExt, FailoverTransport, FilterPinned, NeverSent, PossiblySubmitted, ServedByCell};
use failnext::{Endpoint, Failover};
use failnext_loopback::{Action, End, Received, Reply, Server, refused_url};
use serde_json::{Value, json};
use tower_service::Service;

/// A JSON-RPC stub: `answer(method, params)` gives the reply for each call of a single
/// request (a batch is answered call by call, as a JSON array).
async fn node(answer: impl Fn(&str, &Value) -> Answer + Send + Sync + 'static) -> Server {
    let answer = Arc::new(answer);
    Server::start(Arc::new(move |req: &Received| {
        let Ok(body) = serde_json::from_slice::<Value>(&req.body) else { return Action::Close };
        let one = |call: &Value| -> Result<Value, Box<Action>> {
            let method = call["method"].as_str().unwrap_or_default();
            match answer(method, &call["params"]) {
                Answer::Result(r) => Ok(json!({"jsonrpc": "2.0", "id": call["id"], "result": r})),
                Answer::Error(code, message) => Ok(
                    json!({"jsonrpc": "2.0", "id": call["id"], "error": {"code": code, "message": message}}),
                ),
                Answer::Do(action) => Err(Box::new(action)),
            }
        };
        let reply = match &body {
            Value::Array(calls) => calls.iter().map(one).collect::<Result<Vec<_>, _>>().map(Value::Array),
            call => one(call),
        };
        match reply {
            Ok(v) => Action::Reply(Reply::new(200).json(v.to_string())),
            Err(action) => *action,
        }
    }))
    .await
}

enum Answer {
    Result(Value),
    Error(i64, &'static str),
    Do(Action),
}

fn ok(v: Value) -> Answer {
    Answer::Result(v)
}

fn status(code: u16) -> Answer {
    Answer::Do(Action::Reply(Reply::new(code).text("unavailable")))
}

fn transport(urls: &[(&str, String)]) -> FailoverTransport {
    let endpoints = urls.iter().map(|(id, url)| Endpoint::new(*id, url.clone()));
    FailoverTransport::from_builder(Failover::builder(endpoints).attempt_timeout(Duration::from_secs(2)))
        .unwrap()
}

fn call(method: &'static str, params: Value, id: u64) -> SerializedRequest {
    Request::new(method, Id::Number(id), params).serialize().unwrap()
}

fn single(method: &'static str, params: Value) -> RequestPacket {
    RequestPacket::Single(call(method, params, 1))
}

async fn send(
    t: &FailoverTransport,
    packet: RequestPacket,
) -> Result<ResponsePacket, alloy_json_rpc::RpcError<alloy_transport::TransportErrorKind>> {
    t.clone().call(packet).await
}

/// The single response's result, as JSON.
fn result(packet: &ResponsePacket) -> Value {
    match packet {
        ResponsePacket::Single(r) => match &r.payload {
            ResponsePayload::Success(v) => serde_json::from_str(v.get()).unwrap(),
            ResponsePayload::Failure(e) => panic!("error response: {e:?}"),
        },
        ResponsePacket::Batch(_) => panic!("a batch"),
    }
}

fn count(server: &Server, method: &str) -> usize {
    server
        .take_log()
        .iter()
        .filter(|r| String::from_utf8_lossy(&r.body).contains(&format!("\"{method}\"")))
        .count()
}

/// A raw transaction that does not decode: its hash is `keccak256` of its bytes.
const RAW: &str = "0xdeadbeef";

fn raw_hash() -> B256 {
    keccak256([0xde, 0xad, 0xbe, 0xef])
}

#[tokio::test]
async fn a_read_fails_over_and_the_served_by_cell_names_the_backup() {
    let primary = node(|_, _| status(503)).await;
    let backup = node(|_, _| ok(json!("0x10"))).await;
    let t = transport(&[("primary", primary.url("/")), ("backup", backup.url("/"))]);
    let cell = ServedByCell::new();
    let mut req = call("eth_blockNumber", json!([]), 1);
    *req.meta_mut() = req.meta().clone().record_served_by(&cell);
    let answer = send(&t, RequestPacket::Single(req)).await.unwrap();
    assert_eq!(result(&answer), json!("0x10"));
    assert_eq!(cell.get().as_ref().map(|id| id.as_str()), Some("backup"));
}

#[tokio::test]
async fn a_raw_transaction_never_reaches_a_second_provider() {
    let primary = node(|_, _| status(503)).await;
    let backup = node(|_, _| ok(json!("0x01"))).await;
    let t = transport(&[("primary", primary.url("/")), ("backup", backup.url("/"))]);
    let err = send(&t, single("eth_sendRawTransaction", json!([RAW]))).await.unwrap_err();
    let lost = PossiblySubmitted::find(&err).unwrap_or_else(|| panic!("not PossiblySubmitted: {err}"));
    assert_eq!(lost.hash(), Some(raw_hash()), "the hash computed locally from the raw bytes");
    assert_eq!(lost.endpoint().map(|e| e.as_str()), Some("primary"));
    assert_eq!(backup.requests(), 0, "a 503 from a gateway may have forwarded it: never sent elsewhere");
}

#[tokio::test]
async fn a_refused_broadcast_is_never_sent_and_safe_to_resend() {
    let backup = node(|_, _| ok(json!("0x01"))).await;
    let t = transport(&[("primary", refused_url("/")), ("backup", backup.url("/"))]);
    let err = send(&t, single("eth_sendRawTransaction", json!([RAW]))).await.unwrap_err();
    let never = NeverSent::find(&err).unwrap_or_else(|| panic!("not NeverSent: {err}"));
    assert_eq!(never.hash(), Some(raw_hash()));
    assert!(PossiblySubmitted::find(&err).is_none());
    assert_eq!(backup.requests(), 0);
}

#[tokio::test]
async fn a_broadcast_whose_answer_breaks_off_is_possibly_submitted() {
    for action in [
        Action::Reset,
        Action::Close,
        Action::Reply(
            Reply::new(200).json(r#"{"jsonrpc":"2.0","id":1,"result":"0x"#).length(200).end(End::Close),
        ),
    ] {
        let primary = node(move |_, _| Answer::Do(action.clone())).await;
        let backup = node(|_, _| ok(json!("0x01"))).await;
        let t = transport(&[("primary", primary.url("/")), ("backup", backup.url("/"))]);
        let err = send(&t, single("eth_sendRawTransaction", json!([RAW]))).await.unwrap_err();
        let lost = PossiblySubmitted::find(&err).unwrap_or_else(|| panic!("not PossiblySubmitted: {err}"));
        assert_eq!(lost.hash(), Some(raw_hash()));
        assert_eq!(backup.requests(), 0);
    }
}

#[tokio::test(start_paused = true)]
async fn a_hung_broadcast_is_possibly_submitted_after_the_attempt_timeout() {
    let primary = node(|_, _| Answer::Do(Action::Hang)).await;
    let backup = node(|_, _| ok(json!("0x01"))).await;
    let t = transport(&[("primary", primary.url("/")), ("backup", backup.url("/"))]);
    let err = send(&t, single("eth_sendRawTransaction", json!([RAW]))).await.unwrap_err();
    assert!(PossiblySubmitted::find(&err).is_some(), "{err}");
    assert_eq!(backup.requests(), 0);
}

#[tokio::test]
async fn already_known_for_the_same_transaction_is_success_with_its_hash() {
    let primary = node(|_, _| Answer::Error(-32000, "already known")).await;
    let t = transport(&[("primary", primary.url("/"))]);
    let answer = send(&t, single("eth_sendRawTransaction", json!([RAW]))).await.unwrap();
    assert_eq!(result(&answer), json!(raw_hash()));
}

#[tokio::test]
async fn a_revert_is_returned_from_the_first_provider_and_reaches_no_other() {
    let primary = node(|_, _| Answer::Error(3, "execution reverted")).await;
    let backup = node(|_, _| ok(json!("0x"))).await;
    let t = transport(&[("primary", primary.url("/")), ("backup", backup.url("/"))]);
    let answer =
        send(&t, single("eth_call", json!([{"to": "0x0000000000000000000000000000000000000001"}, "latest"])))
            .await
            .unwrap();
    let ResponsePacket::Single(r) = answer else { panic!("a batch") };
    assert!(matches!(r.payload, ResponsePayload::Failure(ref e) if e.code == 3));
    assert_eq!(backup.requests(), 0);
}

#[tokio::test]
async fn filter_calls_stay_on_the_provider_that_created_the_filter() {
    let primary_down = Arc::new(AtomicBool::new(true));
    let down = primary_down.clone();
    let primary = node(move |m, _| match (down.load(Ordering::SeqCst), m) {
        (true, _) => status(503),
        (false, "eth_getFilterChanges") => Answer::Error(-32000, "filter not found"),
        (false, _) => ok(json!("0x1")),
    })
    .await;
    let backup = node(|m, _| match m {
        "eth_newBlockFilter" => ok(json!("0xF1")),
        "eth_getFilterChanges" => ok(json!([])),
        _ => ok(json!("0x2")),
    })
    .await;
    let t = transport(&[("primary", primary.url("/")), ("backup", backup.url("/"))]);
    assert_eq!(result(&send(&t, single("eth_newBlockFilter", json!([]))).await.unwrap()), json!("0xF1"));
    primary_down.store(false, Ordering::SeqCst);
    primary.take_log();
    for _ in 0..3 {
        let changes = send(&t, single("eth_getFilterChanges", json!(["0xf1"]))).await.unwrap();
        assert_eq!(result(&changes), json!([]), "served by the backup, which holds the filter");
        assert_eq!(result(&send(&t, single("eth_blockNumber", json!([]))).await.unwrap()), json!("0x1"));
    }
    assert_eq!(count(&primary, "eth_getFilterChanges"), 0, "never sent to the primary, which is back");
    // The backup is excluded for the call: the filter is out of reach, and the error says so.
    let mut req = call("eth_getFilterChanges", json!(["0xF1"]), 7);
    *req.meta_mut() = req.meta().clone().exclude_endpoints(["backup"]);
    let err = send(&t, RequestPacket::Single(req)).await.unwrap_err();
    let pinned = FilterPinned::find(&err).unwrap_or_else(|| panic!("not FilterPinned: {err}"));
    assert_eq!(pinned.endpoint().as_str(), "backup");
    assert!(err.to_string().contains("create a new filter"), "{err}");
}

#[tokio::test]
async fn a_receipt_is_read_where_its_transaction_was_broadcast() {
    let primary_down = Arc::new(AtomicBool::new(true));
    let down = primary_down.clone();
    let primary =
        node(move |_, _| if down.load(Ordering::SeqCst) { status(503) } else { ok(Value::Null) }).await;
    let backup = node(|m, _| match m {
        "eth_sendRawTransaction" => ok(json!(raw_hash())),
        _ => ok(json!({"status": "0x1"})),
    })
    .await;
    let t = transport(&[("primary", primary.url("/")), ("backup", backup.url("/"))]);
    let mut req = call("eth_sendRawTransaction", json!([RAW]), 1);
    *req.meta_mut() = req.meta().clone().prefer_endpoint("backup");
    send(&t, RequestPacket::Single(req)).await.unwrap();
    primary_down.store(false, Ordering::SeqCst);
    let receipt = send(&t, single("eth_getTransactionReceipt", json!([raw_hash()]))).await.unwrap();
    assert_eq!(result(&receipt), json!({"status": "0x1"}), "from the backup, not the primary's null");
    let other = send(&t, single("eth_getTransactionReceipt", json!([B256::repeat_byte(9)]))).await.unwrap();
    assert_eq!(result(&other), Value::Null, "another hash goes to the primary as usual");
}

#[tokio::test]
async fn a_batch_with_a_write_does_not_fail_over_and_a_batch_of_reads_does() {
    let primary = node(|_, _| status(503)).await;
    let backup = node(|_, _| ok(json!("0x5"))).await;
    let t = transport(&[("primary", primary.url("/")), ("backup", backup.url("/"))]);
    let reads =
        RequestPacket::Batch(vec![call("eth_blockNumber", json!([]), 1), call("eth_chainId", json!([]), 2)]);
    let ResponsePacket::Batch(answers) = send(&t, reads).await.unwrap() else { panic!("not a batch") };
    assert_eq!(answers.len(), 2);
    backup.take_log();
    let mixed = RequestPacket::Batch(vec![
        call("eth_blockNumber", json!([]), 1),
        call("eth_sendRawTransaction", json!([RAW]), 2),
    ]);
    let err = send(&t, mixed).await.unwrap_err();
    assert!(PossiblySubmitted::find(&err).is_some(), "{err}");
    assert_eq!(backup.take_log().len(), 0);
}

#[tokio::test]
async fn like_alloys_http_a_non_2xx_json_rpc_error_is_a_response_and_retry_after_survives() {
    let limited = node(|m, _| match m {
        "eth_blockNumber" => Answer::Do(Action::Reply(
            Reply::new(400)
                .json(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"invalid params"}}"#),
        )),
        _ => Answer::Do(Action::Reply(Reply::new(429).header("retry-after", "7").text("slow down"))),
    })
    .await;
    let t = transport(&[("only", limited.url("/"))]);
    let ResponsePacket::Single(r) = send(&t, single("eth_blockNumber", json!([]))).await.unwrap() else {
        panic!()
    };
    assert!(matches!(r.payload, ResponsePayload::Failure(ref e) if e.code == -32602));
    let err = send(&t, single("eth_chainId", json!([]))).await.unwrap_err();
    let kind = err.as_transport_err().unwrap();
    assert_eq!(kind.retry_after(), Some(Duration::from_secs(7)));
    assert!(kind.is_retry_err(), "alloy's RetryBackoffLayer retries it, as with Http");
}

#[tokio::test]
async fn the_packets_headers_are_sent() {
    let server = node(|_, _| ok(json!("0x1"))).await;
    let t = transport(&[("only", server.url("/"))]);
    let mut req = call("eth_blockNumber", json!([]), 1);
    req.headers_mut()
        .insert("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".parse().unwrap());
    send(&t, RequestPacket::Single(req)).await.unwrap();
    let log = server.take_log();
    assert_eq!(
        log[0].header_values("traceparent"),
        [b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".as_slice()]
    );
    assert_eq!(log[0].header_values("content-type"), [b"application/json".as_slice()]);
}

#[tokio::test]
async fn no_error_holds_an_endpoint_url() {
    let secret = "k3y-s3cr3t";
    let hung = node(|_, _| Answer::Do(Action::Reset)).await;
    let t = transport(&[
        ("primary", format!("{}?apikey={secret}", hung.url(&format!("/v2/{secret}")))),
        ("backup", refused_url("/").replace("http://", &format!("http://user:{secret}@"))),
    ]);
    for packet in [single("eth_blockNumber", json!([])), single("eth_sendRawTransaction", json!([RAW]))] {
        let err = send(&t, packet).await.unwrap_err();
        for text in [err.to_string(), format!("{err:?}")] {
            assert!(!text.contains(secret) && !text.contains("127.0.0.1"), "{text}");
        }
    }
}

#[tokio::test]
async fn per_call_deny_keeps_a_read_on_one_provider_and_allow_lets_an_unknown_method_fail_over() {
    let primary = node(|_, _| status(503)).await;
    let backup = node(|_, _| ok(json!("0x3"))).await;
    let t = transport(&[("primary", primary.url("/")), ("backup", backup.url("/"))]);
    let mut read = call("eth_blockNumber", json!([]), 1);
    *read.meta_mut() = read.meta().clone().deny_failover();
    let err = send(&t, RequestPacket::Single(read)).await.unwrap_err();
    assert_eq!(err.as_transport_err().and_then(|k| k.as_http_error()).map(|h| h.status), Some(503), "{err}");
    assert_eq!(backup.requests(), 0, "denied: the primary's answer, the backup never asked");
    let err = send(&t, single("acme_quote", json!([]))).await.unwrap_err();
    assert!(err.to_string().contains("503"), "an unknown method does not fail over: {err}");
    assert_eq!(backup.requests(), 0);
    let mut custom = call("acme_quote", json!([]), 2);
    *custom.meta_mut() = custom.meta().clone().allow_failover();
    assert_eq!(result(&send(&t, RequestPacket::Single(custom)).await.unwrap()), json!("0x3"));
    assert_eq!(backup.requests(), 1, "allowed for this call");
}

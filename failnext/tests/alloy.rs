//! `failnext::alloy::FailoverTransport` against loopback JSON-RPC stubs (the real-node suite
//! is `examples/tests/alloy_nodes.rs`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alloy_json_rpc::{Id, Request, RequestPacket, ResponsePacket, ResponsePayload, SerializedRequest};
use alloy_primitives::{B256, keccak256};
use failnext::alloy::{
    BlockRef, Bundle, CallExt, Capability, FailoverTransport, FailoverTransportBuilder, Failure,
    ServedByCell, TraceCell,
};
use failnext::{Class, Endpoint, Event, SkipReason, Trace, TraceStep, Unfit};
use failnext_loopback::{Action, End, Received, Reply, Server, refused_url};
use serde_json::{Value, json};
use tower_service::Service;

/// A middleware that only passes the request on: it puts the transport on a client chain.
struct PassThrough;

#[async_trait::async_trait]
impl reqwest_middleware::Middleware for PassThrough {
    async fn handle(
        &self,
        req: reqwest::Request,
        ext: &mut http::Extensions,
        next: reqwest_middleware::Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        next.run(req, ext).await
    }
}

#[path = "shared/stubs.rs"]
mod stubs;

#[path = "alloy/verified.rs"]
mod verified;

#[path = "alloy/consensus.rs"]
mod consensus;
use stubs::{Answer, node, ok, status};

/// A transport over `urls`, each attempt bounded by 2 s, with no request deadline or failover
/// budget (each test shows one rule).
fn configured(urls: &[(&str, String)]) -> FailoverTransportBuilder {
    let endpoints = urls.iter().map(|(id, url)| Endpoint::new(*id, url.clone()));
    plain(endpoints).attempt_timeout(Duration::from_secs(2))
}

fn transport(urls: &[(&str, String)]) -> FailoverTransport {
    configured(urls).build().unwrap()
}

/// The builder with no request deadline or failover budget.
fn plain(endpoints: impl IntoIterator<Item = Endpoint>) -> FailoverTransportBuilder {
    FailoverTransport::builder(endpoints).no_deadline().no_failover_budget()
}

fn call(method: &'static str, params: Value, id: u64) -> SerializedRequest {
    Request::new(method, Id::Number(id), params).serialize().unwrap()
}

fn single(method: &'static str, params: Value) -> RequestPacket {
    RequestPacket::Single(call(method, params, 1))
}

async fn send<T>(
    t: &T,
    packet: RequestPacket,
) -> Result<ResponsePacket, alloy_json_rpc::RpcError<alloy_transport::TransportErrorKind>>
where
    T: Service<RequestPacket, Response = ResponsePacket, Error = alloy_transport::TransportError> + Clone,
{
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
    let lost = Failure::find(&err)
        .filter(Failure::is_possibly_submitted)
        .unwrap_or_else(|| panic!("not PossiblySubmitted: {err}"));
    assert_eq!(lost.hash(), Some(raw_hash()), "the hash computed locally from the raw bytes");
    assert_eq!(lost.endpoint().map(|e| e.as_str()), Some("primary"));
    assert_eq!(backup.requests(), 0, "a 503 from a gateway may have forwarded it: never sent elsewhere");
}

#[tokio::test]
async fn a_refused_broadcast_is_never_sent_and_safe_to_resend() {
    let backup = node(|_, _| ok(json!("0x01"))).await;
    let t = transport(&[("primary", refused_url("/")), ("backup", backup.url("/"))]);
    let err = send(&t, single("eth_sendRawTransaction", json!([RAW]))).await.unwrap_err();
    let never =
        Failure::find(&err).filter(Failure::is_never_sent).unwrap_or_else(|| panic!("not NeverSent: {err}"));
    assert_eq!(never.hash(), Some(raw_hash()));
    assert!(Failure::find(&err).filter(Failure::is_possibly_submitted).is_none());
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
        let lost = Failure::find(&err)
            .filter(Failure::is_possibly_submitted)
            .unwrap_or_else(|| panic!("not PossiblySubmitted: {err}"));
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
    assert!(Failure::find(&err).filter(Failure::is_possibly_submitted).is_some(), "{err}");
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
    let pinned = Failure::find(&err)
        .filter(Failure::is_filter_pinned)
        .unwrap_or_else(|| panic!("not FilterPinned: {err}"));
    assert_eq!(pinned.endpoint().map(|e| e.as_str()), Some("backup"));
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
    assert!(Failure::find(&err).filter(Failure::is_possibly_submitted).is_some(), "{err}");
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

// ===== coherent state: bundles, capabilities, monotonic reads =====

fn id(name: &str) -> failnext::EndpointId {
    failnext::EndpointId::from(name)
}

const ADDR: &str = "0x00000000000000000000000000000000000000aa";

fn reference() -> BlockRef {
    BlockRef::new(100, B256::repeat_byte(0x77))
}

/// The EIP-1898 parameter of the test reference.
fn pinned() -> Value {
    json!({"blockHash": reference().hash, "requireCanonical": true})
}

/// Each call the server received, as (method, params).
fn calls(server: &Server) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for r in server.take_log() {
        let body: Value = serde_json::from_slice(&r.body).unwrap();
        for c in body.as_array().cloned().unwrap_or_else(|| vec![body.clone()]) {
            out.push((c["method"].as_str().unwrap_or_default().to_owned(), c["params"].clone()));
        }
    }
    out
}

/// Whether `params` select a block by the test reference's hash.
fn names_reference(params: &Value) -> bool {
    params.to_string().contains(&reference().hash.to_string())
}

/// A node that does not know the test reference: geth's answer to an EIP-1898 hash it never
/// saw; everything else answers `result`.
async fn not_knowing(message: &'static str, result: Value) -> Server {
    node(
        move |_, params| {
            if names_reference(params) { Answer::Error(-32000, message) } else { ok(result.clone()) }
        },
    )
    .await
}

#[tokio::test]
async fn a_bundles_state_reads_all_carry_its_block_hash() {
    let server = node(|_, _| ok(json!("0x1"))).await;
    let t = transport(&[("only", server.url("/"))]);
    let bundle = t.bundle(reference());
    assert_eq!(bundle.reference(), reference());
    let to = json!({"to": ADDR, "data": "0x"});
    let slot = "0x0000000000000000000000000000000000000000000000000000000000000000";
    let batch = RequestPacket::Batch(vec![
        call("eth_getBalance", json!([ADDR, "latest"]), 1),
        call("eth_getCode", json!([ADDR]), 2),
        call("eth_getStorageAt", json!([ADDR, slot, "latest"]), 3),
        call("eth_getTransactionCount", json!([ADDR, "latest"]), 4),
    ]);
    send(&bundle, batch).await.unwrap();
    for packet in [
        single("eth_call", json!([to])),
        single("eth_call", json!([to, "latest", {ADDR: {"balance": "0x1"}}])),
        single("eth_estimateGas", json!([to])),
        single("eth_createAccessList", json!([to, null])),
        single("eth_getProof", json!([ADDR, [slot], "latest"])),
    ] {
        send(&bundle, packet).await.unwrap();
    }
    let received = calls(&server);
    assert_eq!(received.len(), 9);
    for (method, params) in &received {
        let index = if matches!(method.as_str(), "eth_getStorageAt" | "eth_getProof") { 2 } else { 1 };
        assert_eq!(params[index], pinned(), "{method} {params}");
    }
    assert_eq!(received[5].1[2], json!({ADDR: {"balance": "0x1"}}), "later params are kept");
}

#[tokio::test]
async fn a_bundle_leaves_explicit_blocks_alone_pins_pending_and_refuses_the_pending_nonce_and_writes() {
    let server = node(|_, _| ok(json!("0x1"))).await;
    let t = transport(&[("only", server.url("/"))]);
    let bundle = t.bundle(reference());
    let other = json!({"blockHash": B256::repeat_byte(1)});
    for block in [json!("0x5"), other.clone(), json!("finalized"), json!({"blockNumber": "0x9"})] {
        send(&bundle, single("eth_getBalance", json!([ADDR, block]))).await.unwrap();
        assert_eq!(calls(&server), [("eth_getBalance".to_owned(), json!([ADDR, block]))], "left alone");
    }
    // Not a state read with a block parameter: sent as it is.
    send(&bundle, single("eth_chainId", json!([]))).await.unwrap();
    assert_eq!(calls(&server), [("eth_chainId".to_owned(), json!([]))]);
    // `pending`, alloy's default for `call` and `estimate_gas`: the reference, as `latest`.
    let to = json!({"to": ADDR, "data": "0x"});
    send(&bundle, single("eth_call", json!([to, "pending"]))).await.unwrap();
    assert_eq!(calls(&server), [("eth_call".to_owned(), json!([to, pinned()]))]);

    let err = send(&bundle, single("eth_getTransactionCount", json!([ADDR, "pending"]))).await.unwrap_err();
    let refused = Failure::find(&err)
        .filter(Failure::is_bundle_refused)
        .unwrap_or_else(|| panic!("not BundleRefused: {err}"));
    assert_eq!(refused.method(), Some("eth_getTransactionCount"));
    let err = send(&bundle, single("eth_sendRawTransaction", json!([RAW]))).await.unwrap_err();
    assert!(Failure::find(&err).filter(Failure::is_bundle_refused).is_some(), "{err}");
    assert!(calls(&server).is_empty(), "nothing refused was sent");
}

#[tokio::test]
async fn a_provider_not_knowing_the_hash_is_skipped_and_the_bundle_does_not_ask_it_again() {
    let primary = not_knowing("header for hash not found", json!("0x1")).await;
    let backup = node(|_, _| ok(json!("0x2"))).await;
    let t = transport(&[("primary", primary.url("/")), ("backup", backup.url("/"))]);
    let bundle = t.bundle(reference());
    let cell = ServedByCell::new();
    let mut req = call("eth_getBalance", json!([ADDR, "latest"]), 1);
    *req.meta_mut() = req.meta().clone().record_served_by(&cell);
    assert_eq!(result(&send(&bundle, RequestPacket::Single(req)).await.unwrap()), json!("0x2"));
    assert_eq!(cell.get().map(|id| id.to_string()).as_deref(), Some("backup"));
    assert_eq!(bundle.missed(), [id("primary")]);
    for _ in 0..3 {
        let answer = send(&bundle, single("eth_call", json!([{"to": ADDR}]))).await.unwrap();
        assert_eq!(result(&answer), json!("0x2"));
    }
    assert_eq!(calls(&primary).len(), 1, "asked once, never again in this bundle");
    assert!(calls(&backup).iter().all(|(_, p)| names_reference(p)), "every read at the reference");
    // The transport's own reads, and another bundle, still use the primary.
    assert_eq!(
        result(&send(&t, single("eth_getBalance", json!([ADDR, "latest"]))).await.unwrap()),
        json!("0x1")
    );
    assert!(t.bundle(reference()).missed().is_empty());
}

#[tokio::test]
async fn anvils_resource_not_found_for_the_hash_is_a_miss_too() {
    // anvil 1.7 answers an unknown blockHash with -32001 "Resource not found".
    let primary = node(|_, params| {
        if names_reference(params) { Answer::Error(-32001, "Resource not found") } else { ok(json!("0x1")) }
    })
    .await;
    let backup = node(|_, _| ok(json!("0x2"))).await;
    let t = transport(&[("primary", primary.url("/")), ("backup", backup.url("/"))]);
    let bundle = t.bundle(reference());
    assert_eq!(result(&send(&bundle, single("eth_getCode", json!([ADDR]))).await.unwrap()), json!("0x2"));
    assert_eq!(bundle.missed(), [id("primary")]);
}

#[tokio::test]
async fn no_provider_knowing_the_reference_is_a_typed_error_that_says_restart() {
    let primary = not_knowing("header for hash not found", json!("0x1")).await;
    let backup = not_knowing("block not found", json!("0x2")).await;
    let t = transport(&[("primary", primary.url("/")), ("backup", backup.url("/"))]);
    let bundle = t.bundle(reference());
    let err = send(&bundle, single("eth_getBalance", json!([ADDR]))).await.unwrap_err();
    let unknown = Failure::find(&err)
        .filter(Failure::is_reference_unknown)
        .unwrap_or_else(|| panic!("not ReferenceUnknown: {err}"));
    assert_eq!(unknown.reference(), Some(reference()));
    assert_eq!(unknown.missed(), [id("primary"), id("backup")]);
    assert!(err.to_string().contains("restart the decision at a new reference"), "{err}");
    primary.take_log();
    backup.take_log();
    let err = send(&bundle, single("eth_getBalance", json!([ADDR]))).await.unwrap_err();
    assert!(Failure::find(&err).filter(Failure::is_reference_unknown).is_some(), "{err}");
    assert_eq!(primary.requests() + backup.requests(), 2, "one each for the first read, none for the second");
    assert!(calls(&primary).is_empty() && calls(&backup).is_empty());
}

#[tokio::test]
async fn a_revert_in_a_bundle_is_returned_and_not_rotated() {
    let primary = node(|_, _| Answer::Error(3, "execution reverted")).await;
    let backup = node(|_, _| ok(json!("0x"))).await;
    let t = transport(&[("primary", primary.url("/")), ("backup", backup.url("/"))]);
    let bundle = t.bundle(reference());
    let answer = send(&bundle, single("eth_call", json!([{"to": ADDR}]))).await.unwrap();
    let ResponsePacket::Single(r) = answer else { panic!("a batch") };
    assert!(matches!(r.payload, ResponsePayload::Failure(ref e) if e.code == 3), "the revert itself");
    assert_eq!(backup.requests(), 0, "never sent to another provider");
    assert!(bundle.missed().is_empty() && t.lacking("primary").is_empty(), "says nothing about the provider");
}

#[tokio::test]
async fn a_bundle_through_a_client_chain_skips_the_provider_that_missed() {
    let primary = not_knowing("header for hash not found", json!("0x1")).await;
    let backup = node(|_, _| ok(json!("0x2"))).await;
    let endpoints = [Endpoint::new("primary", primary.url("/")), Endpoint::new("backup", backup.url("/"))];
    let t = plain(endpoints).call_middleware(PassThrough).attempt_middleware(PassThrough).build().unwrap();
    let bundle = t.bundle(reference());
    for _ in 0..2 {
        assert_eq!(
            result(&send(&bundle, single("eth_getBalance", json!([ADDR]))).await.unwrap()),
            json!("0x2")
        );
    }
    assert_eq!(bundle.missed(), [id("primary")]);
    assert_eq!(calls(&primary).len(), 1);
}

/// An archive node and a full node that prunes state older than the archive depth.
async fn archive_and_full(message: &'static str) -> (Server, Server) {
    let full = node(move |m, params| match (m, params[1].as_str()) {
        ("eth_getBalance", Some("0x10")) => Answer::Error(-32000, message),
        _ => ok(json!("0xf")),
    })
    .await;
    let archive = node(|_, _| ok(json!("0xa"))).await;
    (full, archive)
}

#[tokio::test]
async fn a_provider_declared_without_archive_state_serves_current_reads_and_is_skipped_for_old_ones() {
    let (full, archive) = archive_and_full("missing trie node").await;
    let t = configured(&[("full", full.url("/")), ("archive", archive.url("/"))])
        .lacks("full", Capability::Archive)
        .build()
        .unwrap();
    t.observe_head(1000);
    let old = || single("eth_getBalance", json!([ADDR, "0x10"]));
    assert_eq!(result(&send(&t, old()).await.unwrap()), json!("0xa"));
    assert!(calls(&full).is_empty(), "skipped for the historical read, not asked");
    let recent = single("eth_getBalance", json!([ADDR, format!("{:#x}", 1000 - 128)]));
    assert_eq!(result(&send(&t, recent).await.unwrap()), json!("0xf"), "128 behind: not archive");
    assert_eq!(
        result(&send(&t, single("eth_getBalance", json!([ADDR, "latest"]))).await.unwrap()),
        json!("0xf")
    );
    assert_eq!(result(&send(&t, single("eth_blockNumber", json!([]))).await.unwrap()), json!("0xf"));
    assert_eq!(t.lacking("full"), [Capability::Archive]);
}

#[tokio::test(start_paused = true)]
async fn a_missing_trie_node_answer_to_an_old_read_is_found_and_forgotten_after_a_while() {
    let (full, archive) = archive_and_full("missing trie node 0xabc (path )").await;
    let t = configured(&[("full", full.url("/")), ("archive", archive.url("/"))])
        .lack_found_for(Duration::from_secs(60))
        .build()
        .unwrap();
    assert_eq!(result(&send(&t, single("eth_blockNumber", json!([]))).await.unwrap()), json!("0xf"));
    t.observe_head(1000);
    let old = || single("eth_getBalance", json!([ADDR, "0x10"]));
    assert_eq!(result(&send(&t, old()).await.unwrap()), json!("0xa"), "the same read fails over");
    assert_eq!(t.lacking("full"), [Capability::Archive], "found, from its answer");
    full.take_log();
    assert_eq!(result(&send(&t, old()).await.unwrap()), json!("0xa"));
    assert!(calls(&full).is_empty(), "skipped for historical reads now");
    assert_eq!(
        result(&send(&t, single("eth_getBalance", json!([ADDR, "latest"]))).await.unwrap()),
        json!("0xf")
    );
    tokio::time::advance(Duration::from_secs(61)).await;
    assert!(t.lacking("full").is_empty(), "forgotten");
    full.take_log();
    assert_eq!(result(&send(&t, old()).await.unwrap()), json!("0xa"));
    assert_eq!(calls(&full).len(), 1, "asked again, and found again");
    assert_eq!(t.lacking("full"), [Capability::Archive]);
}

#[tokio::test]
async fn method_not_found_excludes_the_provider_from_that_method_only() {
    let primary = node(|m, _| match m {
        "trace_block" => Answer::Error(-32601, "the method trace_block does not exist/is not available"),
        _ => ok(json!("0x1")),
    })
    .await;
    let backup = node(|_, _| ok(json!("0x2"))).await;
    let t = transport(&[("primary", primary.url("/")), ("backup", backup.url("/"))]);
    let mut allowed = call("trace_block", json!(["latest"]), 1);
    *allowed.meta_mut() = allowed.meta().clone().allow_failover();
    let trace = || RequestPacket::Single(allowed.clone());
    assert_eq!(result(&send(&t, trace()).await.unwrap()), json!("0x2"), "fails over");
    assert_eq!(t.lacking("primary"), [Capability::method("trace_block")]);
    primary.take_log();
    assert_eq!(result(&send(&t, trace()).await.unwrap()), json!("0x2"));
    assert!(calls(&primary).is_empty(), "not asked again for that method");
    assert_eq!(result(&send(&t, single("eth_blockNumber", json!([]))).await.unwrap()), json!("0x1"));
    assert_eq!(result(&send(&t, single("trace_filter", json!([{}]))).await.unwrap()), json!("0x1"));
}

#[tokio::test]
async fn a_declared_namespace_lack_skips_every_method_of_it() {
    let primary = node(|_, _| ok(json!("0x1"))).await;
    let backup = node(|_, _| ok(json!("0x2"))).await;
    let t = configured(&[("primary", primary.url("/")), ("backup", backup.url("/"))])
        .lacks("primary", Capability::namespace("debug"))
        .build()
        .unwrap();
    let trace = single("debug_traceTransaction", json!([B256::repeat_byte(3)]));
    assert_eq!(result(&send(&t, trace).await.unwrap()), json!("0x2"));
    assert_eq!(result(&send(&t, single("eth_chainId", json!([]))).await.unwrap()), json!("0x1"));
}

#[tokio::test]
async fn every_provider_lacking_a_capability_does_not_block_the_read() {
    let primary = node(|_, _| ok(json!("0x1"))).await;
    let t = configured(&[("primary", primary.url("/"))]).lacks("primary", Capability::Proof).build().unwrap();
    let proof = single("eth_getProof", json!([ADDR, [], "latest"]));
    assert_eq!(result(&send(&t, proof).await.unwrap()), json!("0x1"), "sent as if none lacked it");
}

#[tokio::test]
async fn monotonic_reads_skip_a_provider_whose_head_is_below_the_highest_observed() {
    // The primary restarted at height 0 while the backup was at 5.
    let primary = node(|m, _| ok(if m == "eth_blockNumber" { json!("0x0") } else { json!("0x1") })).await;
    let backup = node(|m, _| ok(if m == "eth_blockNumber" { json!("0x5") } else { json!("0x2") })).await;
    let heads = Arc::new(std::sync::Mutex::new([Some(5_u64), Some(5)]));
    let seen = heads.clone();
    let t = configured(&[("primary", primary.url("/")), ("backup", backup.url("/"))])
        .monotonic_reads(move |id| {
            let heads = seen.lock().unwrap();
            if id == "primary" { heads[0] } else { heads[1] }
        })
        .build()
        .unwrap();
    t.observe_head(5);
    assert_eq!(t.head(), Some(5));
    assert_eq!(
        result(&send(&t, single("eth_getBalance", json!([ADDR, "latest"]))).await.unwrap()),
        json!("0x1")
    );
    heads.lock().unwrap()[0] = Some(0);
    primary.take_log();
    assert_eq!(
        result(&send(&t, single("eth_getBalance", json!([ADDR, "latest"]))).await.unwrap()),
        json!("0x2")
    );
    assert_eq!(result(&send(&t, single("eth_blockNumber", json!([]))).await.unwrap()), json!("0x5"));
    assert!(calls(&primary).is_empty(), "below the floor: skipped for reads");
    // Writes are not reads: they go where they always go.
    send(&t, single("eth_sendRawTransaction", json!([RAW]))).await.unwrap();
    assert_eq!(calls(&primary).len(), 1);
}

#[tokio::test]
async fn monotonic_reads_go_ahead_when_a_monitors_heads_trail_the_floor_by_the_tolerance_or_leave_none() {
    // The monitor's view trails the chain: it knows both providers a block or two below the
    // head the transport has seen, and one of them far below.
    let primary = node(|m, _| ok(if m == "eth_blockNumber" { json!("0x64") } else { json!("0x1") })).await;
    let backup = node(|m, _| ok(if m == "eth_blockNumber" { json!("0x64") } else { json!("0x2") })).await;
    let heads = Arc::new(std::sync::Mutex::new([Some(98_u64), Some(99)]));
    let seen = heads.clone();
    let t = configured(&[("primary", primary.url("/")), ("backup", backup.url("/"))])
        .monotonic_reads(move |id| {
            let heads = seen.lock().unwrap();
            if id == "primary" { heads[0] } else { heads[1] }
        })
        .build()
        .unwrap();
    t.observe_head(100);
    let balance = || single("eth_getBalance", json!([ADDR, "latest"]));
    assert_eq!(result(&send(&t, balance()).await.unwrap()), json!("0x1"), "within the tolerance");
    // Both known far below: none would be left, so the read goes ahead and answers decide.
    *heads.lock().unwrap() = [Some(10), Some(11)];
    assert_eq!(result(&send(&t, balance()).await.unwrap()), json!("0x1"));
    assert_eq!(result(&send(&t, single("eth_blockNumber", json!([]))).await.unwrap()), json!("0x64"));
}

#[tokio::test]
async fn an_eth_block_number_answer_below_the_floor_fails_over_instead_of_being_returned() {
    let primary = node(|_, _| ok(json!("0x0"))).await;
    let backup = node(|_, _| ok(json!("0x5"))).await;
    let t = configured(&[("primary", primary.url("/")), ("backup", backup.url("/"))])
        .monotonic_reads(|_| None)
        .build()
        .unwrap();
    assert_eq!(
        result(&send(&t, single("eth_blockNumber", json!([]))).await.unwrap()),
        json!("0x0"),
        "no floor yet"
    );
    t.observe_head(5);
    assert_eq!(result(&send(&t, single("eth_blockNumber", json!([]))).await.unwrap()), json!("0x5"));
    assert_eq!(t.head(), Some(5));
    // Nobody at the floor: a typed error, nothing stale returned.
    t.observe_head(9);
    let err = send(&t, single("eth_blockNumber", json!([]))).await.unwrap_err();
    let below = Failure::find(&err)
        .filter(Failure::is_below_floor)
        .unwrap_or_else(|| panic!("not BelowFloor: {err}"));
    assert_eq!(below.floor(), Some(9));
    assert_eq!(below.behind(), [(id("primary"), Some(0)), (id("backup"), Some(5))]);
}

#[tokio::test]
async fn an_eth_block_number_answer_a_block_or_two_below_the_floor_answers_the_floor_without_failing_over() {
    let primary = node(|_, _| ok(json!("0x5"))).await;
    let backup = node(|_, _| ok(json!("0x8"))).await;
    let t = configured(&[("primary", primary.url("/")), ("backup", backup.url("/"))])
        .monotonic_reads(|_| None)
        .build()
        .unwrap();
    // Another provider answered block 8 a moment ago; the primary, three blocks behind it, is
    // within the tolerance: the read answers 8, which the chain has, and never goes back.
    t.observe_head(8);
    assert_eq!(result(&send(&t, single("eth_blockNumber", json!([]))).await.unwrap()), json!("0x8"));
    assert!(calls(&backup).is_empty(), "no failover for a block or two");
    assert_eq!(t.head(), Some(8));
    // Four below is behind: it fails over as before (and the backup's 8 answers 9).
    t.observe_head(9);
    assert_eq!(result(&send(&t, single("eth_blockNumber", json!([]))).await.unwrap()), json!("0x9"));
    assert_eq!(calls(&backup).len(), 1);
}

#[tokio::test]
async fn without_monotonic_reads_a_lower_head_is_returned_as_before() {
    let primary = node(|_, _| ok(json!("0x0"))).await;
    let t = transport(&[("primary", primary.url("/"))]);
    t.observe_head(5);
    assert_eq!(result(&send(&t, single("eth_blockNumber", json!([]))).await.unwrap()), json!("0x0"));
}

#[tokio::test]
async fn a_monotonic_bundle_skips_providers_below_its_reference_without_asking() {
    let primary = node(|_, _| ok(json!("0x1"))).await;
    let backup = node(|_, _| ok(json!("0x2"))).await;
    let t = configured(&[("primary", primary.url("/")), ("backup", backup.url("/"))])
        .monotonic_reads(|id| Some(if id == "primary" { 99 } else { 100 }))
        .build()
        .unwrap();
    let bundle: Bundle = t.bundle(reference());
    assert_eq!(result(&send(&bundle, single("eth_getBalance", json!([ADDR]))).await.unwrap()), json!("0x2"));
    assert!(calls(&primary).is_empty());
}

/// Judges by status only: every answer returns at once, as without the JSON-RPC classifier.
struct StatusOnly;

#[async_trait::async_trait]
impl failnext::Classifier for StatusOnly {
    async fn classify(&self, _: &failnext::EndpointId, response: reqwest::Response) -> failnext::Classified {
        failnext::Classified::Response(response, failnext::Judgement::answer())
    }
}

#[tokio::test]
async fn a_miss_its_classifier_returned_is_still_not_a_bundles_answer() {
    let primary = not_knowing("header for hash not found", json!("0x1")).await;
    let backup = node(|_, _| ok(json!("0x2"))).await;
    let endpoints = [Endpoint::new("primary", primary.url("/")), Endpoint::new("backup", backup.url("/"))];
    let t = plain(endpoints).classifier(StatusOnly).build().unwrap();
    let bundle = t.bundle(reference());
    assert_eq!(result(&send(&bundle, single("eth_getBalance", json!([ADDR]))).await.unwrap()), json!("0x2"));
    assert_eq!(bundle.missed(), [id("primary")], "judged with the request in view, sent again without it");
}

#[tokio::test]
async fn a_provider_declared_without_block_hash_selection_is_skipped_by_bundle_reads_only() {
    let primary = node(|_, _| ok(json!("0x1"))).await;
    let backup = node(|_, _| ok(json!("0x2"))).await;
    let t = configured(&[("primary", primary.url("/")), ("backup", backup.url("/"))])
        .lacks("primary", Capability::BlockHash)
        .build()
        .unwrap();
    let bundle = t.bundle(reference());
    assert_eq!(result(&send(&bundle, single("eth_getBalance", json!([ADDR]))).await.unwrap()), json!("0x2"));
    assert_eq!(result(&send(&t, single("eth_getBalance", json!([ADDR]))).await.unwrap()), json!("0x1"));
}

/// A provider whose proxy refuses bodies over 200 bytes with HTTP 413, and one without limit.
async fn limited_and_unlimited() -> (Server, Server) {
    let limited = Server::start(Arc::new(|req: &Received| {
        if req.body.len() > 200 {
            return Action::Reply(Reply::new(413).text("413 Request Entity Too Large"));
        }
        Action::Reply(req.rpc_result("0x1"))
    }))
    .await;
    let unlimited = Server::start(Arc::new(|req: &Received| Action::Reply(req.rpc_result("0x2")))).await;
    (limited, unlimited)
}

fn call_with_data(bytes: usize) -> RequestPacket {
    let data = format!("0x{}", "ab".repeat(bytes));
    single("eth_call", json!([{ "to": ADDR, "data": data }, "latest"]))
}

#[tokio::test]
async fn an_http_413_to_a_large_read_excludes_the_provider_from_requests_that_large_only() {
    let (limited, unlimited) = limited_and_unlimited().await;
    let t = transport(&[("limited", limited.url("/")), ("unlimited", unlimited.url("/"))]);
    assert_eq!(
        result(&send(&t, call_with_data(8)).await.unwrap()),
        json!("0x1"),
        "small: the first provider"
    );
    assert_eq!(
        result(&send(&t, call_with_data(400)).await.unwrap()),
        json!("0x2"),
        "the large read fails over"
    );
    let found = t.lacking("limited");
    assert!(matches!(found.as_slice(), [Capability::RequestSize(n)] if *n > 200), "{found:?}");
    limited.take_log();
    assert_eq!(result(&send(&t, call_with_data(500)).await.unwrap()), json!("0x2"));
    assert!(limited.take_log().is_empty(), "a request as large is not sent to it again");
    assert_eq!(result(&send(&t, call_with_data(8)).await.unwrap()), json!("0x1"), "small ones still are");
}

#[tokio::test]
async fn a_declared_request_size_limit_skips_larger_requests_without_asking() {
    let (limited, unlimited) = limited_and_unlimited().await;
    let t = configured(&[("limited", limited.url("/")), ("unlimited", unlimited.url("/"))])
        .lacks("limited", Capability::RequestSize(200))
        .build()
        .unwrap();
    assert_eq!(result(&send(&t, call_with_data(400)).await.unwrap()), json!("0x2"));
    assert!(limited.take_log().is_empty(), "declared: not asked");
    assert_eq!(result(&send(&t, call_with_data(8)).await.unwrap()), json!("0x1"));
}

#[tokio::test]
async fn a_413_to_a_write_is_returned_and_the_write_goes_nowhere_else() {
    let (limited, unlimited) = limited_and_unlimited().await;
    let t = transport(&[("limited", limited.url("/")), ("unlimited", unlimited.url("/"))]);
    let raw = format!("0x{}", "ab".repeat(400));
    let write = single("eth_sendRawTransaction", json!([raw]));
    assert!(send(&t, write).await.is_err(), "the 413 is the answer");
    assert_eq!(count(&unlimited, "eth_sendRawTransaction"), 0, "a write reaches at most one provider");
}

#[tokio::test]
async fn declaring_a_lack_for_an_unknown_endpoint_is_a_typed_error_naming_it() {
    let builder = configured(&[("primary", "http://127.0.0.1:9/".to_owned())]);
    let err = builder.lacks("primray", Capability::Archive).build().unwrap_err();
    assert_eq!(err.endpoint_id().map(|id| id.as_str()), Some("primray"));
    assert!(err.to_string().contains("primray"), "{err}");
}

// ===== Every decision of the transport is the loop's: in the trace and the events =====

/// What the scope decided, as the events said it: skips (`Unfit`) and overruled answers.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Decided {
    Skipped(String, Unfit),
    Overruled(String, Class, Unfit),
}

/// `builder` with a hook that keeps the scope's decisions.
fn deciding(builder: FailoverTransportBuilder) -> (FailoverTransportBuilder, Arc<Mutex<Vec<Decided>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let builder = builder.on_event(move |ev: &Event<'_>| {
        let decided = match *ev {
            Event::Skipped { endpoint, reason: SkipReason::Unfit, unfit: Some(why), .. } => {
                Decided::Skipped(endpoint.to_string(), why.clone())
            }
            Event::Judged { endpoint, class, overruled: Some(why), .. } => {
                Decided::Overruled(endpoint.to_string(), class, why.clone())
            }
            _ => return,
        };
        sink.lock().unwrap().push(decided);
    });
    (builder, seen)
}

/// `packet`'s single call, asking for its trace.
fn traced(method: &'static str, params: Value) -> (RequestPacket, TraceCell) {
    let cell = TraceCell::new();
    let mut req = call(method, params, 1);
    *req.meta_mut() = req.meta().clone().record_trace(&cell);
    (RequestPacket::Single(req), cell)
}

fn steps<'a>(trace: &'a Trace, id: &str) -> &'a [TraceStep] {
    trace.entry(id).unwrap_or_else(|| panic!("no {id} in {trace}")).steps()
}

#[tokio::test]
async fn a_bundle_read_skipping_a_provider_that_did_not_know_its_hash_shows_it_in_the_trace_and_an_event() {
    let primary = not_knowing("header for hash not found", json!("0x1")).await;
    let backup = node(|_, _| ok(json!("0x2"))).await;
    let endpoints = [Endpoint::new("primary", primary.url("/")), Endpoint::new("backup", backup.url("/"))];
    let (builder, seen) = deciding(plain(endpoints));
    let t = builder.build().unwrap();
    let bundle = t.bundle(reference());
    assert_eq!(result(&send(&bundle, single("eth_getBalance", json!([ADDR]))).await.unwrap()), json!("0x2"));
    let (packet, cell) = traced("eth_getBalance", json!([ADDR, "latest"]));
    assert_eq!(result(&send(&bundle, packet).await.unwrap()), json!("0x2"));
    let trace = cell.get().expect("the trace was asked for");
    assert_eq!(steps(&trace, "primary"), [TraceStep::Unfit(Unfit::UnknownBlock)], "{trace}");
    assert!(matches!(steps(&trace, "backup"), [TraceStep::Tried { attempt: 1, class: Class::Answer, .. }]));
    assert!(trace.to_string().contains("primary: unfit: does not know the request's block"), "{trace}");
    assert_eq!(*seen.lock().unwrap(), [Decided::Skipped("primary".into(), Unfit::UnknownBlock)]);
    assert_eq!(calls(&primary).len(), 1, "asked once: the second read skipped it");
}

#[tokio::test]
async fn a_read_answered_below_the_floor_is_overruled_in_the_trace_and_its_judged_event() {
    let primary = node(|_, _| ok(json!("0x0"))).await;
    let backup = node(|_, _| ok(json!("0x5"))).await;
    let endpoints = [Endpoint::new("primary", primary.url("/")), Endpoint::new("backup", backup.url("/"))];
    let (builder, seen) = deciding(plain(endpoints));
    let t = builder.monotonic_reads(|_| None).build().unwrap();
    t.observe_head(5);
    let (packet, cell) = traced("eth_blockNumber", json!([]));
    assert_eq!(result(&send(&t, packet).await.unwrap()), json!("0x5"));
    let trace = cell.get().expect("the trace was asked for");
    let below = Unfit::BelowFloor { head: Some(0), floor: 5 };
    assert!(
        matches!(
            steps(&trace, "primary"),
            [TraceStep::Tried { attempt: 1, class: Class::Stale, .. }, TraceStep::Overruled(why)] if *why == below
        ),
        "{trace}"
    );
    assert!(trace.to_string().contains("answer overruled: at block 0, below the floor 5"), "{trace}");
    assert_eq!(*seen.lock().unwrap(), [Decided::Overruled("primary".into(), Class::Stale, below)]);
}

#[tokio::test]
async fn a_read_skipping_a_provider_that_lacks_a_capability_shows_it_in_the_trace_and_an_event() {
    let (full, archive) = archive_and_full("missing trie node").await;
    let endpoints = [Endpoint::new("full", full.url("/")), Endpoint::new("archive", archive.url("/"))];
    let (builder, seen) = deciding(plain(endpoints));
    let t = builder.lacks("full", Capability::Archive).build().unwrap();
    t.observe_head(1000);
    let (packet, cell) = traced("eth_getBalance", json!([ADDR, "0x10"]));
    assert_eq!(result(&send(&t, packet).await.unwrap()), json!("0xa"));
    let trace = cell.get().expect("the trace was asked for");
    let lacks = Unfit::Lacks("archive state".into());
    assert_eq!(steps(&trace, "full"), [TraceStep::Unfit(lacks.clone())], "{trace}");
    assert!(trace.to_string().contains("full: unfit: lacks archive state"), "{trace}");
    assert_eq!(*seen.lock().unwrap(), [Decided::Skipped("full".into(), lacks)]);
    assert!(calls(&full).is_empty(), "not asked");
}

/// A transport over "behind" (head 100) and "current" (head 105), each answering `null` or a
/// block/receipt as `answers` says, heads known through `monotonic_reads`.
async fn behind_and_current(
    behind_has: bool,
    current_has: bool,
) -> (FailoverTransport, failnext_loopback::Server, failnext_loopback::Server) {
    let answer = move |has: bool| {
        move |_: &str, _: &Value| ok(if has { json!({"number": "0x68"}) } else { Value::Null })
    };
    let behind = node(answer(behind_has)).await;
    let current = node(answer(current_has)).await;
    let t = configured(&[("behind", behind.url("/")), ("current", current.url("/"))])
        .monotonic_reads(|id| if id == "behind" { Some(100) } else { Some(105) })
        .build()
        .unwrap();
    (t, behind, current)
}

#[tokio::test]
async fn a_null_block_from_a_provider_below_it_is_no_answer_while_another_has_the_block() {
    let (t, behind, current) = behind_and_current(false, true).await;
    let block = send(&t, single("eth_getBlockByNumber", json!(["0x68", false]))).await.unwrap();
    assert_eq!(result(&block), json!({"number": "0x68"}), "the provider at or above block 104 answers");
    assert_eq!((calls(&behind).len(), calls(&current).len()), (1, 1));
    // A receipt (the block in question: the best head known, 105): the same.
    let receipt = send(&t, single("eth_getTransactionReceipt", json!([raw_hash()]))).await.unwrap();
    assert_eq!(result(&receipt), json!({"number": "0x68"}));
}

#[tokio::test]
async fn a_null_is_returned_when_every_provider_that_has_the_block_says_so() {
    // Both have block 100: the first one's null is the answer, no other provider is asked.
    let (t, behind, current) = behind_and_current(false, false).await;
    let block = send(&t, single("eth_getBlockByNumber", json!(["0x64", false]))).await.unwrap();
    assert_eq!(result(&block), Value::Null);
    assert_eq!((calls(&behind).len(), calls(&current).len()), (1, 0));
    // A receipt nobody has: the provider behind is not believed, the current one is.
    let receipt = send(&t, single("eth_getTransactionReceipt", json!([raw_hash()]))).await.unwrap();
    assert_eq!(result(&receipt), Value::Null);
    assert_eq!((calls(&behind).len(), calls(&current).len()), (1, 1));
}

#[tokio::test]
async fn empty_logs_from_a_provider_below_the_range_go_to_one_that_has_it() {
    let behind = node(|_, _| ok(json!([]))).await;
    let current = node(|_, _| ok(json!([{"blockNumber": "0x68", "logIndex": "0x0"}]))).await;
    let t = configured(&[("behind", behind.url("/")), ("current", current.url("/"))])
        .monotonic_reads(|id| if id == "behind" { Some(100) } else { Some(105) })
        .build()
        .unwrap();
    let logs =
        send(&t, single("eth_getLogs", json!([{"fromBlock": "0x60", "toBlock": "0x68"}]))).await.unwrap();
    assert_eq!(result(&logs).as_array().map(Vec::len), Some(1));
    // Up to block 99, both have it: the first one's empty list is the answer.
    let logs =
        send(&t, single("eth_getLogs", json!([{"fromBlock": "0x60", "toBlock": "0x63"}]))).await.unwrap();
    assert_eq!(result(&logs), json!([]));
}

//! `FailoverTransport::builder` against loopback JSON-RPC stubs: writes reach only the
//! endpoints `writes_to` names, `broadcast_to` fans a raw transaction out and merges the
//! outcome, one `match Failure::find` covers every failure, and the builder's defaults hedge
//! reads and never writes.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use alloy_json_rpc::{
    Id, Request, RequestPacket, ResponsePacket, ResponsePayload, RpcError, SerializedRequest,
};
use alloy_primitives::{B256, keccak256};
use alloy_transport::TransportError;
use failnext::alloy::{
    CallExt, Delivery, FailoverTransport, FailoverTransportBuilder, Failure, FailureKind, ServedByCell, Start,
};
use failnext::{Endpoint, EndpointId};
use failnext_loopback::{Action, Handler, Later, Received, Reply, Server, refused_url};
use serde_json::{Value, json};

#[path = "shared/stubs.rs"]
mod stubs;
use stubs::{Answer, node, ok, status};
use tokio::time::Instant;
use tower_service::Service;

// ===== loopback stubs =====

/// A stub that accepts every transaction (answers its hash) and answers `0x10` to the rest.
async fn accepting() -> Server {
    node(|m, _| if m.starts_with("eth_send") { ok(json!(raw_hash())) } else { ok(json!("0x10")) }).await
}

/// A raw transaction that does not decode: its hash is `keccak256` of its bytes (as for every
/// transaction but a blob one in its network form).
const RAW: &str = "0xdeadbeef";

fn raw_hash() -> B256 {
    keccak256([0xde, 0xad, 0xbe, 0xef])
}

const ADDR: &str = "0x00000000000000000000000000000000000000aa";

// ===== the transport and its calls =====

/// A builder over `urls`, in priority order, with a 2 s attempt timeout.
fn builder(urls: &[(&str, String)]) -> FailoverTransportBuilder {
    let endpoints = urls.iter().map(|(id, url)| Endpoint::new(*id, url.clone()));
    FailoverTransport::builder(endpoints).attempt_timeout(Duration::from_secs(2))
}

fn call(method: &'static str, params: Value) -> SerializedRequest {
    Request::new(method, Id::Number(1), params).serialize().unwrap()
}

fn single(method: &'static str, params: Value) -> RequestPacket {
    RequestPacket::Single(call(method, params))
}

fn raw_tx() -> RequestPacket {
    single("eth_sendRawTransaction", json!([RAW]))
}

fn block_number() -> RequestPacket {
    single("eth_blockNumber", json!([]))
}

/// A single call with per-call options.
fn with_meta(
    method: &'static str,
    params: Value,
    meta: impl FnOnce(alloy_json_rpc::RequestMeta) -> alloy_json_rpc::RequestMeta,
) -> RequestPacket {
    let mut req = call(method, params);
    *req.meta_mut() = meta(req.meta().clone());
    RequestPacket::Single(req)
}

/// The single call's result as alloy's `RpcCall` gives it: a JSON-RPC error answer is
/// `RpcError::ErrorResp`.
async fn rpc<T>(t: &T, packet: RequestPacket) -> Result<Value, TransportError>
where
    T: Service<RequestPacket, Response = ResponsePacket, Error = TransportError> + Clone,
{
    match t.clone().call(packet).await? {
        ResponsePacket::Single(r) => match r.payload {
            ResponsePayload::Success(v) => Ok(serde_json::from_str(v.get()).unwrap()),
            ResponsePayload::Failure(e) => Err(RpcError::ErrorResp(e)),
        },
        ResponsePacket::Batch(_) => panic!("a batch"),
    }
}

/// How many requests the server received since its log was last taken.
fn taken(server: &Server) -> usize {
    server.take_log().len()
}

/// How many calls of `method` the server received since its log was last taken.
fn count(server: &Server, method: &str) -> usize {
    server.take_log().iter().filter(|r| r.json()["method"] == method).count()
}

// ===== writes go where the user says =====

#[tokio::test]
async fn a_write_routed_to_the_relay_never_reaches_another_endpoint_while_the_relay_refuses() {
    let public = accepting().await;
    // The public endpoint first: without the route, a write would go there.
    let t = builder(&[("public", public.url("/")), ("relay", refused_url("/"))])
        .writes_to(["relay"])
        .build()
        .unwrap();
    // Refused connections, then the relay's breaker open: never sent, never elsewhere.
    for _ in 0..5 {
        let err = rpc(&t, raw_tx()).await.unwrap_err();
        match Failure::find(&err) {
            Some(never) if never.is_never_sent() => assert_eq!(never.hash(), Some(raw_hash())),
            other => panic!("not NeverSent: {other:?}"),
        }
    }
    assert_eq!(public.requests(), 0, "the public endpoint received nothing");
    assert_eq!(rpc(&t, block_number()).await.unwrap(), json!("0x10"), "reads still use every endpoint");
    assert_eq!(public.requests(), 1);
}

#[tokio::test]
async fn a_write_routed_to_the_relay_is_never_sent_elsewhere_while_its_breaker_is_open() {
    let relay = node(|_, _| status(503)).await;
    let public = accepting().await;
    let t = builder(&[("relay", relay.url("/")), ("public", public.url("/"))])
        .writes_to(["relay"])
        .build()
        .unwrap();
    // Three failed reads (each failed over to the public endpoint) open the relay's breaker.
    for _ in 0..3 {
        assert_eq!(rpc(&t, block_number()).await.unwrap(), json!("0x10"));
    }
    assert_eq!(relay.requests(), 3);
    assert_eq!(rpc(&t, block_number()).await.unwrap(), json!("0x10"));
    assert_eq!(count(&relay, "eth_blockNumber"), 3, "the breaker is open: the fourth read skipped the relay");
    public.take_log();
    let err = rpc(&t, raw_tx()).await.unwrap_err();
    assert_eq!(count(&public, "eth_sendRawTransaction"), 0, "never sent elsewhere: {err}");
    // At most the relay, as its breaker's trial; the error says which.
    match (count(&relay, "eth_sendRawTransaction"), Failure::find(&err)) {
        (0, Some(never)) if never.is_never_sent() => assert_eq!(never.hash(), Some(raw_hash())),
        (1, Some(lost)) if lost.is_possibly_submitted() => {
            assert_eq!(lost.hash(), Some(raw_hash()));
            assert_eq!(lost.endpoint().map(|e| e.as_str()), Some("relay"));
        }
        (n, other) => panic!("{n} writes to the relay, and {other:?}"),
    }
}

#[tokio::test]
async fn a_per_call_preference_or_permission_does_not_move_a_write_off_its_endpoints() {
    let relay = accepting().await;
    let public = accepting().await;
    let t = builder(&[("public", public.url("/")), ("relay", relay.url("/"))])
        .writes_to(["relay"])
        .build()
        .unwrap();
    let prefer_public = with_meta("eth_sendRawTransaction", json!([RAW]), |m| m.prefer_endpoint("public"));
    assert_eq!(rpc(&t, prefer_public).await.unwrap(), json!(raw_hash()));
    assert_eq!((count(&relay, "eth_sendRawTransaction"), public.requests()), (1, 0), "sent to the relay");
    // Excluding the relay leaves the write nowhere to go: never sent, not sent to public.
    let exclude_relay = with_meta("eth_sendRawTransaction", json!([RAW]), |m| m.exclude_endpoints(["relay"]));
    let err = rpc(&t, exclude_relay).await.unwrap_err();
    assert!(Failure::find(&err).is_some_and(|f| f.is_never_sent()), "{err}");
    assert_eq!((taken(&relay), taken(&public)), (0, 0));
    // Allowed to fail over, a write whose relay answers 503 still does not reach public.
    let unavailable: Handler = Arc::new(|_: &Received| Action::Reply(Reply::new(503).text("unavailable")));
    relay.set_handler(unavailable);
    let allowed =
        with_meta("eth_sendRawTransaction", json!([RAW]), |m| m.allow_failover().prefer_endpoint("public"));
    let err = rpc(&t, allowed).await.unwrap_err();
    assert!(Failure::find(&err).is_some_and(|f| f.is_possibly_submitted()), "{err}");
    assert_eq!((taken(&relay), taken(&public)), (1, 0));
}

#[tokio::test]
async fn the_receipt_of_a_sync_send_makes_its_hash_and_sender_read_where_it_was_sent() {
    let hash = B256::repeat_byte(0x5e);
    let relay = node(move |m, _| match m {
        "eth_sendTransactionSync" | "eth_getTransactionReceipt" => {
            ok(json!({"transactionHash": hash, "status": "0x1"}))
        }
        _ => ok(json!("0x8")),
    })
    .await;
    let public =
        node(|m, _| if m == "eth_getTransactionReceipt" { ok(Value::Null) } else { ok(json!("0x7")) }).await;
    let t = builder(&[("public", public.url("/")), ("relay", relay.url("/"))])
        .writes_to(["relay"])
        .build()
        .unwrap();
    let send = single("eth_sendTransactionSync", json!([{"from": ADDR, "to": ADDR}]));
    assert_eq!(rpc(&t, send).await.unwrap()["transactionHash"], json!(hash));
    let receipt = rpc(&t, single("eth_getTransactionReceipt", json!([hash]))).await.unwrap();
    assert_eq!(receipt["status"], json!("0x1"), "from the relay, not the public endpoint's null");
    let nonce = rpc(&t, single("eth_getTransactionCount", json!([ADDR, "pending"]))).await.unwrap();
    assert_eq!(nonce, json!("0x8"), "the sender's pending nonce from the relay too");
    assert_eq!(rpc(&t, block_number()).await.unwrap(), json!("0x7"), "other reads as usual");
}

#[tokio::test]
async fn a_write_naming_an_unknown_endpoint_per_call_is_never_sent() {
    let relay = accepting().await;
    let t = builder(&[("relay", relay.url("/"))]).build().unwrap();
    let typos: [fn(alloy_json_rpc::RequestMeta) -> alloy_json_rpc::RequestMeta; 2] =
        [|m| m.prefer_endpoint("rleay"), |m| m.exclude_endpoints(["rleay"])];
    for typo in typos {
        let err = rpc(&t, with_meta("eth_sendRawTransaction", json!([RAW]), typo)).await.unwrap_err();
        match Failure::find(&err) {
            Some(failure) if failure.is_never_sent() => {
                assert_eq!(failure.hash(), Some(raw_hash()));
                assert!(failure.is_safe_to_resend());
                let unknown = failure.error().and_then(|e| e.unknown_endpoint()).map(|id| id.as_str());
                assert_eq!(unknown, Some("rleay"), "{err}");
            }
            other => panic!("nothing was sent, yet: {other:?}"),
        }
    }
    assert_eq!(relay.requests(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_write_whose_deadline_passes_while_another_request_holds_the_trial_is_never_sent() {
    let relay = node(|_, _| status(503)).await;
    let t = FailoverTransport::builder([Endpoint::new("relay", relay.url("/"))])
        .no_attempt_timeout()
        .deadline(Duration::from_secs(1))
        .build()
        .unwrap();
    for _ in 0..3 {
        rpc(&t, block_number()).await.unwrap_err();
    }
    // Open for 250 ms; then another request (on the same `Failover`) takes the relay's
    // trial, and the relay never answers it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let hang: Handler = Arc::new(|_: &Received| Action::Hang);
    relay.set_handler(hang);
    let client =
        reqwest_middleware::ClientBuilder::new(reqwest::Client::new()).with(t.failover().clone()).build();
    let trial = tokio::spawn(async move {
        use failnext::RequestBuilderExt;
        client.post("http://127.0.0.1:9/").body("{}").deadline(Duration::from_secs(60)).send().await
    });
    while relay.requests() < 4 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    // The write waits for that trial, and its deadline passes first: nothing was sent.
    let started = Instant::now();
    let err = rpc(&t, raw_tx()).await.unwrap_err();
    assert!(started.elapsed() >= Duration::from_secs(1), "{:?}", started.elapsed());
    assert_eq!(relay.requests(), 4, "the write never reached the relay");
    match Failure::find(&err) {
        Some(failure) if failure.is_never_sent() => {
            assert_eq!(failure.hash(), Some(raw_hash()));
            assert!(failure.is_safe_to_resend());
            assert!(failure.error().is_some_and(|e| e.is_deadline() && e.attempts().is_empty()), "{err}");
        }
        other => panic!("nothing was sent, yet: {other:?}"),
    }
    trial.abort();
}

#[test]
fn broadcast_to_an_endpoint_that_writes_to_leaves_out_fails_build_naming_it() {
    let urls = [("relay", "http://127.0.0.1:9/".to_owned()), ("public", "http://127.0.0.1:10/".to_owned())];
    let err = builder(&urls).writes_to(["relay"]).broadcast_to(["relay", "public"]).build().unwrap_err();
    assert_eq!(err.endpoint_id().map(|id| id.as_str()), Some("public"), "{err}");
    assert!(err.to_string().contains("public"), "{err}");
}

#[test]
fn an_unknown_id_in_writes_to_or_broadcast_to_fails_build_naming_it() {
    let urls = [("relay", "http://127.0.0.1:9/".to_owned()), ("public", "http://127.0.0.1:10/".to_owned())];
    let err = builder(&urls).writes_to(["relay", "rleay"]).build().unwrap_err();
    assert_eq!(err.endpoint_id().map(|id| id.as_str()), Some("rleay"), "{err}");
    assert!(err.to_string().contains("rleay"), "{err}");
    let err = builder(&urls).broadcast_to(["pubic"]).build().unwrap_err();
    assert_eq!(err.endpoint_id().map(|id| id.as_str()), Some("pubic"), "{err}");
}

// ===== fan-out =====

/// Each endpoint of the fan-out of `hash`, with what it did, in order.
fn deliveries(t: &FailoverTransport, hash: &B256) -> Vec<(String, Delivery)> {
    let outcome = t.broadcast_outcome(hash).unwrap_or_else(|| panic!("no outcome remembered for {hash}"));
    assert_eq!(outcome.hash(), *hash);
    outcome.deliveries().iter().map(|(id, d)| (id.to_string(), d.clone())).collect()
}

fn refused(code: i64, message: &str) -> Delivery {
    Delivery::Refused { code, message: message.to_owned() }
}

#[tokio::test]
async fn a_fanout_sends_the_same_signed_bytes_once_to_each_named_endpoint() {
    let (a, b, c) = (accepting().await, accepting().await, accepting().await);
    let t = builder(&[("a", a.url("/")), ("b", b.url("/")), ("c", c.url("/"))])
        .broadcast_to(["c", "a", "b"])
        .build()
        .unwrap();
    assert_eq!(rpc(&t, raw_tx()).await.unwrap(), json!(raw_hash()));
    let bodies: Vec<_> = [&a, &b, &c]
        .into_iter()
        .map(|s| {
            let log = s.take_log();
            assert_eq!(log.len(), 1, "exactly one request to each");
            log[0].body.clone()
        })
        .collect();
    assert!(bodies.iter().all(|body| *body == bodies[0]), "byte-identical bodies: {bodies:?}");
    let params: Value = serde_json::from_slice::<Value>(&bodies[0]).unwrap()["params"].clone();
    assert_eq!(params, json!([RAW]), "the signed bytes as given");
    let accepted = |id: &str| (id.to_owned(), Delivery::Accepted);
    assert_eq!(
        deliveries(&t, &raw_hash()),
        [accepted("c"), accepted("a"), accepted("b")],
        "in broadcast_to's order"
    );
}

#[tokio::test]
async fn a_fanout_counts_already_known_as_accepted_and_succeeds_past_a_refusal() {
    let low = node(|_, _| Answer::Error(-32000, "nonce too low")).await;
    let known = node(|_, _| Answer::Error(-32000, "already known")).await;
    let t = builder(&[("low", low.url("/")), ("known", known.url("/"))])
        .broadcast_to(["low", "known"])
        .build()
        .unwrap();
    assert_eq!(rpc(&t, raw_tx()).await.unwrap(), json!(raw_hash()), "the hash, from the one that knew it");
    assert_eq!(
        deliveries(&t, &raw_hash()),
        [("low".to_owned(), refused(-32000, "nonce too low")), ("known".to_owned(), Delivery::Accepted)]
    );
}

#[tokio::test]
async fn a_fanout_none_accepted_that_may_be_out_fails_typed_and_is_not_safe_to_resend() {
    let gateway = node(|_, _| status(503)).await;
    let t = builder(&[("down", refused_url("/")), ("gateway", gateway.url("/"))])
        .broadcast_to(["down", "gateway"])
        .build()
        .unwrap();
    let err = rpc(&t, raw_tx()).await.unwrap_err();
    let failure = Failure::find(&err);
    let Some(outcome) = failure.and_then(|f| f.broadcast()) else { panic!("not Broadcast: {failure:?}") };
    assert!(outcome.possibly_submitted(), "{outcome}");
    assert_eq!(outcome.hash(), raw_hash());
    assert!(matches!(outcome.delivery("down"), Some(Delivery::NeverSent { .. })), "{outcome}");
    assert!(matches!(outcome.delivery("gateway"), Some(Delivery::PossiblySubmitted { .. })), "{outcome}");
    let failure = failure.unwrap();
    assert!(!failure.is_safe_to_resend());
    assert_eq!(failure.hashes(), [raw_hash()]);
    assert!(err.to_string().contains("do not sign again"), "{err}");
    assert_eq!(t.broadcast_outcome(&raw_hash()).as_ref(), Some(outcome), "remembered as it failed");
}

#[tokio::test]
async fn a_fanout_that_reached_no_endpoint_fails_typed_and_is_safe_to_resend() {
    let t = builder(&[("a", refused_url("/")), ("b", refused_url("/"))])
        .broadcast_to(["a", "b"])
        .build()
        .unwrap();
    let err = rpc(&t, raw_tx()).await.unwrap_err();
    let failure = Failure::find(&err).unwrap_or_else(|| panic!("not the transport's: {err}"));
    let Some(outcome) = failure.broadcast() else { panic!("not Broadcast: {failure:?}") };
    assert!(outcome.deliveries().iter().all(|(_, d)| matches!(d, Delivery::NeverSent { .. })), "{outcome}");
    assert!(!outcome.possibly_submitted() && failure.is_safe_to_resend(), "{outcome}");
}

#[tokio::test]
async fn a_fanout_every_reached_endpoint_refused_fails_with_the_first_refusal() {
    let under = node(|_, _| Answer::Error(-32000, "replacement transaction underpriced")).await;
    let low = node(|_, _| Answer::Error(-32000, "nonce too low")).await;
    let t = builder(&[("low", low.url("/")), ("down", refused_url("/")), ("under", under.url("/"))])
        .broadcast_to(["down", "under", "low"])
        .build()
        .unwrap();
    let err = rpc(&t, raw_tx()).await.unwrap_err();
    match Failure::find(&err) {
        Some(failure) if failure.is_answered() => {
            let payload = failure.payload().unwrap();
            assert_eq!((payload.code, &*payload.message), (-32000, "replacement transaction underpriced"));
        }
        other => panic!("not Answered: {other:?}"),
    }
    let d = deliveries(&t, &raw_hash());
    assert!(matches!(d[0], (ref id, Delivery::NeverSent { .. }) if id == "down"), "{d:?}");
    assert_eq!(
        d[1..],
        [
            ("under".to_owned(), refused(-32000, "replacement transaction underpriced")),
            ("low".to_owned(), refused(-32000, "nonce too low")),
        ]
    );
}

#[tokio::test]
async fn a_private_transaction_whose_answer_is_lost_carries_its_locally_computed_hash() {
    let private = || {
        [
            single("eth_sendPrivateRawTransaction", json!([RAW])),
            single("eth_sendPrivateTransaction", json!([{"tx": RAW, "maxBlockNumber": "0x64"}])),
        ]
    };
    let relay = node(|_, _| status(503)).await;
    // One write endpoint: the lost answer is a PossiblySubmitted.
    let t = builder(&[("relay", relay.url("/"))]).build().unwrap();
    for packet in private() {
        let err = rpc(&t, packet).await.unwrap_err();
        let failure = Failure::find(&err);
        let Some(lost) = failure.filter(Failure::is_possibly_submitted) else {
            panic!("not PossiblySubmitted: {failure:?}")
        };
        assert_eq!(lost.hash(), Some(raw_hash()), "{lost}");
        assert_eq!(lost.endpoint().map(|e| e.as_str()), Some("relay"));
        assert!(!failure.unwrap().is_safe_to_resend());
    }
    // Fanned out to that one endpoint: a Broadcast, whose delivery is possibly submitted.
    let t = builder(&[("relay", relay.url("/"))]).broadcast_to(["relay"]).build().unwrap();
    for packet in private() {
        let err = rpc(&t, packet).await.unwrap_err();
        let failure = Failure::find(&err);
        let Some(outcome) = failure.and_then(|f| f.broadcast()) else { panic!("not Broadcast: {failure:?}") };
        assert_eq!(outcome.hash(), raw_hash(), "{outcome}");
        assert!(matches!(outcome.delivery("relay"), Some(Delivery::PossiblySubmitted { .. })), "{outcome}");
        let failure = failure.unwrap();
        assert_eq!(failure.hashes(), [raw_hash()]);
        assert!(!failure.is_safe_to_resend());
    }
    assert_eq!(relay.requests(), 4, "each sent once");
}

#[tokio::test]
async fn endpoints_not_named_by_broadcast_to_receive_nothing_of_a_fanout() {
    let (a, b, c) = (accepting().await, accepting().await, accepting().await);
    // b first: a raw transaction not fanned out would go there.
    let t = builder(&[("b", b.url("/")), ("a", a.url("/")), ("c", c.url("/"))])
        .broadcast_to(["a", "c"])
        .build()
        .unwrap();
    for packet in [raw_tx(), single("eth_sendRawTransactionConditional", json!([RAW, {}]))] {
        assert_eq!(rpc(&t, packet).await.unwrap(), json!(raw_hash()));
        assert_eq!((taken(&a), taken(&b), taken(&c)), (1, 0, 1));
    }
    // Only raw transactions fan out: another write goes to one endpoint, the first.
    let send = single("eth_sendTransaction", json!([{"from": ADDR}]));
    rpc(&t, send).await.unwrap();
    assert_eq!((taken(&a), taken(&b), taken(&c)), (0, 1, 0));
}

// ===== one match for every failure =====

/// The key in every endpoint URL of the failure tests: no failure may show it.
const SECRET: &str = "s3cr3t-k3y";

fn keyed(server: &Server) -> String {
    server.url(&format!("/rpc?key={SECRET}"))
}

fn keyed_refused() -> String {
    refused_url(&format!("/rpc?key={SECRET}"))
}

/// What an application does with a failure of the transport: one `match`.
fn label(err: &TransportError) -> &'static str {
    let Some(failure) = Failure::find(err) else { return "not the transport's" };
    match failure.kind() {
        FailureKind::Read => "Read",
        FailureKind::Status => "Status",
        FailureKind::Answered => "Answered",
        FailureKind::PossiblySubmitted => "PossiblySubmitted",
        FailureKind::NeverSent => "NeverSent",
        FailureKind::Broadcast => "Broadcast",
        FailureKind::FilterPinned => "FilterPinned",
        FailureKind::BundleRefused => "BundleRefused",
        FailureKind::ReferenceUnknown => "ReferenceUnknown",
        FailureKind::BelowFloor => "BelowFloor",
        FailureKind::StartUnknown => "StartUnknown",
        FailureKind::ReorgTooDeep => "ReorgTooDeep",
        FailureKind::Forged => "Forged",
        FailureKind::NoConsensus => "NoConsensus",
        _ => "a kind added later",
    }
}

/// Every text a failure shows: the error's and the failure's Display and Debug, and each
/// source's down the chain.
fn texts(err: &TransportError) -> Vec<String> {
    let mut out = vec![err.to_string(), format!("{err:?}")];
    if let Some(failure) = Failure::find(err) {
        out.extend([failure.to_string(), format!("{failure:?}")]);
        let mut source = std::error::Error::source(&failure);
        while let Some(s) = source {
            out.extend([s.to_string(), format!("{s:?}")]);
            source = s.source();
        }
    }
    out
}

/// Each failure of the transport, provoked over loopback servers whose URLs hold [`SECRET`]:
/// (the label it must get, the error).
async fn provoke_every_failure() -> Vec<(&'static str, TransportError)> {
    let mut provoked = Vec::new();
    // No endpoint accepts a read's connection.
    let t = builder(&[("a", keyed_refused()), ("b", keyed_refused())]).build().unwrap();
    provoked.push(("Read", rpc(&t, block_number()).await.unwrap_err()));
    // The only endpoint answers 401, not JSON.
    let unauthorized = node(|_, _| Answer::Do(Action::Reply(Reply::new(401).text("unauthorized")))).await;
    let t = builder(&[("only", keyed(&unauthorized))]).build().unwrap();
    provoked.push(("Status", rpc(&t, block_number()).await.unwrap_err()));
    // A revert.
    let reverting = node(|_, _| Answer::Error(3, "execution reverted")).await;
    let t = builder(&[("only", keyed(&reverting))]).build().unwrap();
    provoked
        .push(("Answered", rpc(&t, single("eth_call", json!([{"to": ADDR}, "latest"]))).await.unwrap_err()));
    // A gateway's 503 to a write; a refused write.
    let gateway = node(|_, _| status(503)).await;
    let t = builder(&[("gateway", keyed(&gateway))]).build().unwrap();
    provoked.push(("PossiblySubmitted", rpc(&t, raw_tx()).await.unwrap_err()));
    let t = builder(&[("down", keyed_refused())]).build().unwrap();
    provoked.push(("NeverSent", rpc(&t, raw_tx()).await.unwrap_err()));
    // A fan-out none accepted.
    let t = builder(&[("down", keyed_refused()), ("gateway", keyed(&gateway))])
        .broadcast_to(["down", "gateway"])
        .build()
        .unwrap();
    provoked.push(("Broadcast", rpc(&t, raw_tx()).await.unwrap_err()));
    // A filter created on `holder`, which then goes down. Its refused connection is a failed
    // read (the adaptive breaker still sends its only endpoint a trial, as the last resort);
    // once the application's monitor says it is down, the filter is out of reach.
    let mut holder =
        node(|m, _| if m == "eth_newBlockFilter" { ok(json!("0xf1")) } else { ok(json!([])) }).await;
    let other = accepting().await;
    let down = Arc::new(AtomicBool::new(false));
    let seen = down.clone();
    let t = builder(&[("holder", keyed(&holder)), ("other", keyed(&other))])
        .eligible(move |id: &EndpointId| !(seen.load(Ordering::SeqCst) && id.as_str() == "holder"))
        .build()
        .unwrap();
    assert_eq!(rpc(&t, single("eth_newBlockFilter", json!([]))).await.unwrap(), json!("0xf1"));
    holder.stop().await;
    let changes = || single("eth_getFilterChanges", json!(["0xf1"]));
    let err = rpc(&t, changes()).await.unwrap_err();
    assert_eq!(label(&err), "Read", "the holder's refused connection: {err}");
    down.store(true, Ordering::SeqCst);
    provoked.push(("FilterPinned", rpc(&t, changes()).await.unwrap_err()));
    assert_eq!(count(&other, "eth_getFilterChanges"), 0, "never sent where the filter is not");
    // A write through a bundle; a bundle read no provider knows the reference of.
    let reference = failnext::alloy::BlockRef::new(100, B256::repeat_byte(0x77));
    let t = builder(&[("only", keyed(&other))]).build().unwrap();
    provoked.push(("BundleRefused", rpc(&t.bundle(reference), raw_tx()).await.unwrap_err()));
    let (x, y) = (
        node(|_, _| Answer::Error(-32000, "header not found")).await,
        node(|_, _| Answer::Error(-32000, "header not found")).await,
    );
    let t = builder(&[("x", keyed(&x)), ("y", keyed(&y))]).build().unwrap();
    let read = single("eth_getBalance", json!([ADDR]));
    provoked.push(("ReferenceUnknown", rpc(&t.bundle(reference), read).await.unwrap_err()));
    // Monotonic reads: every provider's head below the floor.
    let behind = node(|_, _| ok(json!("0x0"))).await;
    let t = builder(&[("behind", keyed(&behind))]).monotonic_reads(|_| None).build().unwrap();
    t.observe_head(9);
    provoked.push(("BelowFloor", rpc(&t, block_number()).await.unwrap_err()));
    // A follower: started at a hash no provider knows; after a block a reorg replaced.
    let forgetful =
        node(|m, _| if m == "eth_getBlockByHash" { ok(json!(null)) } else { ok(header(5, 0x55)) }).await;
    let t = builder(&[("only", keyed(&forgetful))]).build().unwrap();
    let unknown = t.follow(Start::Hash(B256::repeat_byte(0x99))).next().await;
    provoked.push(("StartUnknown", unknown.unwrap_err()));
    let had = failnext::alloy::BlockRef::new(5, B256::repeat_byte(0x44));
    provoked.push(("ReorgTooDeep", t.follow(Start::After(had)).next().await.unwrap_err()));
    // The only provider answers another block than the one asked for.
    let liar = node(|_, _| ok(true_block(8))).await;
    let t = builder(&[("liar", keyed(&liar))]).build().unwrap();
    let seven = single("eth_getBlockByNumber", json!(["0x7", false]));
    provoked.push(("Forged", rpc(&t, seven).await.unwrap_err()));
    // A consensus read whose two providers answer differently.
    let (one, two) = (node(|_, _| ok(json!("0x1"))).await, node(|_, _| ok(json!("0x2"))).await);
    let t = builder(&[("one", keyed(&one)), ("two", keyed(&two))])
        .consensus(["eth_getBalance"], failnext::alloy::Quorum::new(2, 2))
        .build()
        .unwrap();
    let balance = single("eth_getBalance", json!([ADDR, "latest"]));
    provoked.push(("NoConsensus", rpc(&t, balance).await.unwrap_err()));
    provoked
}

/// Block `number` as a node answers it: a consensus header hashed by alloy.
fn true_block(number: u64) -> Value {
    let inner = alloy_consensus::Header { number, gas_limit: 30_000_000, ..Default::default() };
    serde_json::to_value(alloy_rpc_types_eth::Header::new(inner)).unwrap_or_default()
}

/// A block header as `eth_getBlockByNumber` answers it, its hash made of `byte`.
fn header(number: u64, byte: u8) -> Value {
    json!({
        "number": format!("{number:#x}"),
        "hash": B256::repeat_byte(byte),
        "parentHash": B256::repeat_byte(byte - 1),
        "timestamp": "0x6553f100",
    })
}

#[tokio::test]
async fn one_match_on_failure_covers_every_failure_of_the_transport_and_the_follower() {
    let provoked = provoke_every_failure().await;
    let labels: Vec<&str> = provoked.iter().map(|(_, err)| label(err)).collect();
    let expected: Vec<&str> = provoked.iter().map(|(l, _)| *l).collect();
    assert_eq!(labels, expected, "{:#?}", provoked.iter().map(|(_, e)| e.to_string()).collect::<Vec<_>>());
    for (kind, err) in &provoked {
        for text in texts(err) {
            // A connect error's Debug names the socket address it could not reach (hyper's
            // `ConnectError`): an address, not the URL, whose path and query hold the key.
            assert!(
                !text.contains(SECRET)
                    && !text.contains("key=")
                    && !text.contains("/rpc")
                    && !text.contains("http://"),
                "{kind} shows an endpoint URL: {text}"
            );
        }
    }
    let find = |kind: &str| {
        provoked.iter().find(|(k, _)| *k == kind).map(|(_, e)| Failure::find(e).unwrap()).unwrap()
    };
    // A failed read: failnext's error, every attempt with its endpoint, its cause as source.
    let read = find("Read");
    let error = read.error().expect("a read's failnext error");
    let tried: Vec<&str> = error.attempts().iter().map(|a| a.endpoint().as_str()).collect();
    assert_eq!(tried, ["a", "b"]);
    assert_eq!(read.attempts().len(), 2);
    assert_eq!(read.endpoint().map(|e| e.as_str()), Some("b"), "the last one tried");
    assert!(std::error::Error::source(&read).is_some(), "the last attempt's error");
    // A refused write: failnext's error with its refused attempt, chained.
    let never = find("NeverSent");
    assert_eq!(never.error().map(|e| e.attempts().len()), Some(1));
    assert!(std::error::Error::source(&never).is_some());
    assert!(never.is_safe_to_resend());
    assert!(!find("PossiblySubmitted").is_safe_to_resend());
    assert_eq!(find("PossiblySubmitted").hashes(), [raw_hash()]);
    assert_eq!(find("PossiblySubmitted").endpoint().map(|e| e.as_str()), Some("gateway"));
    assert_eq!(find("Status").status(), Some(http::StatusCode::UNAUTHORIZED));
    assert_eq!(find("Status").http().map(|h| h.status), Some(401));
    assert_eq!(find("Answered").payload().map(|p| p.code), Some(3));
    assert_eq!(find("FilterPinned").endpoint().map(|e| e.as_str()), Some("holder"));
    assert_eq!(find("ReferenceUnknown").reference().map(|r| r.number), Some(100));
    assert_eq!(find("StartUnknown").hash(), Some(B256::repeat_byte(0x99)));
    assert_eq!(find("ReorgTooDeep").restart_from(), Some(5));
    let forged_by: Vec<&str> = find("Forged").forged_by().iter().map(|e| e.as_str()).collect();
    assert_eq!(forged_by, ["liar"]);
    assert_eq!(find("NoConsensus").ballots().len(), 2);
}

// ===== the builder's defaults =====

/// A stub whose every answer waits `ms` (a tokio timer: no real time under paused time);
/// a raw transaction is answered with its hash.
async fn delayed(ms: u64) -> (Server, Arc<AtomicU64>) {
    let delay = Arc::new(AtomicU64::new(ms));
    let d = delay.clone();
    let server = Server::start_later(Arc::new(move |req: &Received| -> Later {
        let result =
            if req.json()["method"] == "eth_sendRawTransaction" { json!(raw_hash()) } else { json!("0x10") };
        let reply = req.rpc_result(result);
        let wait = Duration::from_millis(d.load(Ordering::SeqCst));
        Box::pin(async move {
            tokio::time::sleep(wait).await;
            Action::Reply(reply)
        })
    }))
    .await;
    (server, delay)
}

/// The builder's defaults but for its timeouts: under paused time a pending timeout would be
/// the next timer the clock jumps to while a loopback answer is still in flight.
fn untimed(urls: &[(&str, String)]) -> FailoverTransportBuilder {
    let endpoints = urls.iter().map(|(id, url)| Endpoint::new(*id, url.clone()));
    FailoverTransport::builder(endpoints).no_attempt_timeout().no_deadline()
}

/// Warms the first endpoint's latency percentile (the default hedge waits for 16 samples).
async fn warm(t: &FailoverTransport) {
    for _ in 0..24 {
        rpc(t, block_number()).await.unwrap();
    }
}

fn served_by(cell: &ServedByCell) -> Option<String> {
    cell.get().map(|id| id.to_string())
}

#[tokio::test(start_paused = true)]
async fn a_paired_transport_hedges_reads_by_default_and_never_writes() {
    let (slow, delay) = delayed(20).await;
    let (backup, _) = delayed(5).await;
    let t = untimed(&[("slow", slow.url("/")), ("backup", backup.url("/"))])
        .monitor(AllFit)
        .no_latency_ordering()
        .build()
        .unwrap();
    warm(&t).await;
    slow.take_log();
    backup.take_log();
    delay.store(2_000, Ordering::SeqCst);
    let cell = ServedByCell::new();
    let started = Instant::now();
    rpc(&t, with_meta("eth_blockNumber", json!([]), |m| m.record_served_by(&cell))).await.unwrap();
    assert_eq!(served_by(&cell).as_deref(), Some("backup"));
    assert!(
        started.elapsed() < Duration::from_millis(100),
        "hedged after about 20 ms: {:?}",
        started.elapsed()
    );
    assert_eq!((taken(&slow), taken(&backup)), (1, 1), "one request each: the read and its hedge");
    // A write waits for the slow endpoint: never hedged.
    let cell = ServedByCell::new();
    let started = Instant::now();
    let write = with_meta("eth_sendRawTransaction", json!([RAW]), |m| m.record_served_by(&cell));
    assert_eq!(rpc(&t, write).await.unwrap(), json!(raw_hash()));
    assert_eq!(served_by(&cell).as_deref(), Some("slow"));
    assert!(started.elapsed() >= Duration::from_secs(2));
    assert_eq!((count(&slow, "eth_sendRawTransaction"), taken(&backup)), (1, 0));
}

#[tokio::test(start_paused = true)]
async fn an_unpaired_transport_does_not_hedge_by_default() {
    let (slow, delay) = delayed(20).await;
    let (backup, _) = delayed(5).await;
    let t = untimed(&[("slow", slow.url("/")), ("backup", backup.url("/"))]).build().unwrap();
    warm(&t).await;
    delay.store(2_000, Ordering::SeqCst);
    let cell = ServedByCell::new();
    let started = Instant::now();
    rpc(&t, with_meta("eth_blockNumber", json!([]), |m| m.record_served_by(&cell))).await.unwrap();
    assert_eq!(served_by(&cell).as_deref(), Some("slow"));
    assert!(started.elapsed() >= Duration::from_secs(2), "waited for the slow endpoint");
    assert_eq!(backup.requests(), 0, "no read was hedged");
}

/// A health source that admits every endpoint (a paired transport without a monitor's view).
struct AllFit;

impl failnext::HealthSource for AllFit {
    fn eligible(&self, _: &failnext::EndpointId) -> bool {
        true
    }
}

#[tokio::test(start_paused = true)]
async fn no_hedge_turns_the_paired_default_hedge_off() {
    let (slow, delay) = delayed(20).await;
    let (backup, _) = delayed(5).await;
    let t = untimed(&[("slow", slow.url("/")), ("backup", backup.url("/"))])
        .monitor(AllFit)
        .no_latency_ordering()
        .no_hedge()
        .build()
        .unwrap();
    warm(&t).await;
    delay.store(2_000, Ordering::SeqCst);
    let cell = ServedByCell::new();
    rpc(&t, with_meta("eth_blockNumber", json!([]), |m| m.record_served_by(&cell))).await.unwrap();
    assert_eq!(served_by(&cell).as_deref(), Some("slow"), "waited for the slow endpoint");
}

#[test]
fn neither_the_transport_nor_its_builder_shows_a_secret_in_debug() {
    let secret = "k3y-s3cr3t";
    let endpoints = [
        Endpoint::new("relay", format!("https://user:{secret}@relay.example/v2/{secret}?key={secret}")),
        Endpoint::new("public", format!("https://public.example/rpc?apikey={secret}")),
    ];
    let builder = FailoverTransport::builder(endpoints).writes_to(["relay"]).broadcast_to(["relay"]);
    let shown = format!("{builder:?}");
    assert!(!shown.contains(secret), "{shown}");
    let transport = builder.build().unwrap();
    let shown = format!("{transport:?}");
    assert!(!shown.contains(secret), "{shown}");
}

/// A relay that accepts the raw transaction and answers lookups of it with `receipt`.
async fn relay_answering(receipt: Value) -> Server {
    node(move |method, _| match method {
        "eth_sendRawTransaction" => ok(json!(raw_hash())),
        _ => ok(receipt.clone()),
    })
    .await
}

#[tokio::test]
async fn after_a_fanout_a_receipt_lookup_asks_every_relay_and_one_relays_null_is_not_final() {
    let mined = json!({"transactionHash": raw_hash(), "status": "0x1", "blockNumber": "0x10"});
    let (pending, mining) = (relay_answering(json!(null)).await, relay_answering(mined.clone()).await);
    let t = builder(&[("pending", pending.url("/")), ("mining", mining.url("/"))])
        .broadcast_to(["pending", "mining"])
        .build()
        .unwrap();
    assert_eq!(rpc(&t, raw_tx()).await.unwrap(), json!(raw_hash()));
    let lookup = single("eth_getTransactionReceipt", json!([raw_hash()]));
    assert_eq!(rpc(&t, lookup).await.unwrap(), mined, "the relay that mined it");
    assert_eq!(count(&pending, "eth_getTransactionReceipt"), 1);
    assert_eq!(count(&mining, "eth_getTransactionReceipt"), 1);
    // Null only when every relay says so.
    let (a, b) = (relay_answering(json!(null)).await, relay_answering(json!(null)).await);
    let t = builder(&[("a", a.url("/")), ("b", b.url("/"))]).broadcast_to(["a", "b"]).build().unwrap();
    rpc(&t, raw_tx()).await.unwrap();
    let lookup = single("eth_getTransactionByHash", json!([raw_hash()]));
    assert_eq!(rpc(&t, lookup).await.unwrap(), json!(null));
    assert_eq!((count(&a, "eth_getTransactionByHash"), count(&b, "eth_getTransactionByHash")), (1, 1));
}

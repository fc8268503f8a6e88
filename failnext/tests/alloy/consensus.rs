//! Consensus reads: an answer only when enough providers gave it; a lying provider outvoted,
//! told, and ruled out when it keeps lying; no agreement a typed failure.

use std::sync::{Arc, Mutex};

use failnext::alloy::{DISSENTS, FailoverTransportBuilder, Failure, FailureKind, Quorum};
use serde_json::json;

use super::stubs::{node, ok};
use super::{configured, result, send, single};

const ADDR: &str = "0x00000000000000000000000000000000000000aa";

fn balance() -> alloy_json_rpc::RequestPacket {
    single("eth_getBalance", json!([ADDR, "latest"]))
}

fn voted(builder: FailoverTransportBuilder) -> FailoverTransportBuilder {
    builder.consensus(["eth_getBalance"], Quorum::new(2, 3))
}

#[tokio::test]
async fn a_consensus_read_returns_what_the_quorum_agrees_on_and_a_provider_off_by_one_wei_is_outvoted() {
    let liar = node(|_, _| ok(json!("0x64"))).await;
    let a = node(|_, _| ok(json!("0x65"))).await;
    let b = node(|_, _| ok(json!("0x65"))).await;
    let disagreed = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&disagreed);
    let t = voted(configured(&[("liar", liar.url("/")), ("a", a.url("/")), ("b", b.url("/"))]))
        .on_event(move |event| {
            if let failnext::Event::Disagreed { endpoint, method } = event {
                seen.lock().unwrap().push(format!("{endpoint} {method}"));
            }
        })
        .build()
        .unwrap();
    let answer = send(&t, balance()).await.unwrap();
    assert_eq!(result(&answer), json!("0x65"));
    assert_eq!(disagreed.lock().unwrap().as_slice(), ["liar eth_getBalance"]);
    let asked = (liar.take_log().len(), a.take_log().len(), b.take_log().len());
    assert_eq!(asked, (1, 1, 1), "two asked at once, the third when they differed");
}

#[tokio::test]
async fn while_providers_agree_a_consensus_read_costs_the_quorum_size_and_other_methods_one_request() {
    let a = node(|_, _| ok(json!("0x65"))).await;
    let b = node(|_, _| ok(json!("0x65"))).await;
    let c = node(|_, _| ok(json!("0x65"))).await;
    let t = voted(configured(&[("a", a.url("/")), ("b", b.url("/")), ("c", c.url("/"))])).build().unwrap();
    for _ in 0..5 {
        assert_eq!(result(&send(&t, balance()).await.unwrap()), json!("0x65"));
    }
    let asked = (a.take_log().len(), b.take_log().len(), c.take_log().len());
    assert_eq!(asked, (5, 5, 0), "2 requests per read");
    send(&t, single("eth_chainId", json!([]))).await.unwrap();
    assert_eq!((a.take_log().len(), b.take_log().len()), (1, 0), "not voted: one request");
}

#[tokio::test]
async fn no_agreement_is_a_typed_failure_listing_each_providers_answer_digest() {
    let a = node(|_, _| ok(json!("0x1"))).await;
    let b = node(|_, _| ok(json!("0x2"))).await;
    let c = node(|_, _| ok(json!("0x3"))).await;
    let t = voted(configured(&[("a", a.url("/")), ("b", b.url("/")), ("c", c.url("/"))])).build().unwrap();
    let err = send(&t, balance()).await.unwrap_err();
    let failure = Failure::find(&err).expect("the transport's failure");
    assert_eq!(failure.kind(), FailureKind::NoConsensus);
    let ballots = failure.ballots();
    let ids: Vec<&str> = ballots.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"]);
    assert!(ballots.iter().all(|(_, d)| d.as_ref().is_some_and(|d| d.len() == 16)), "{ballots:?}");
    assert_ne!(ballots[0].1, ballots[1].1);
    assert!(err.to_string().contains("eth_getBalance"), "{err}");
}

#[tokio::test]
async fn a_provider_disagreeing_three_times_in_a_row_is_ruled_out_for_the_method() {
    let liar =
        node(|method, _| ok(if method == "eth_getBalance" { json!("0x64") } else { json!("0x1") })).await;
    let a = node(|_, _| ok(json!("0x65"))).await;
    let b = node(|_, _| ok(json!("0x65"))).await;
    let t =
        voted(configured(&[("liar", liar.url("/")), ("a", a.url("/")), ("b", b.url("/"))])).build().unwrap();
    for _ in 0..DISSENTS {
        assert_eq!(result(&send(&t, balance()).await.unwrap()), json!("0x65"));
    }
    assert_eq!(liar.take_log().len(), DISSENTS as usize);
    assert_eq!(result(&send(&t, balance()).await.unwrap()), json!("0x65"));
    assert_eq!(liar.take_log().len(), 0, "ruled out for eth_getBalance");
    assert_eq!(result(&send(&t, single("eth_chainId", json!([]))).await.unwrap()), json!("0x1"));
    assert_eq!(liar.take_log().len(), 1, "still first for other methods");
}

#[tokio::test]
async fn a_write_is_never_a_consensus_call() {
    let a = node(|_, _| ok(json!("0xabc"))).await;
    let b = node(|_, _| ok(json!("0xabc"))).await;
    let t = configured(&[("a", a.url("/")), ("b", b.url("/"))])
        .consensus(["eth_sendRawTransaction", "eth_getBalance"], Quorum::new(2, 2))
        .build()
        .unwrap();
    send(&t, single("eth_sendRawTransaction", json!(["0xdeadbeef"]))).await.unwrap();
    assert_eq!((a.take_log().len(), b.take_log().len()), (1, 0), "one provider");
}

#[tokio::test(start_paused = true)]
async fn an_error_answer_votes_by_its_code_and_a_provider_that_does_not_answer_casts_no_vote() {
    let down = failnext_loopback::refused_url("/");
    let a = node(|_, _| super::stubs::Answer::Error(3, "execution reverted: a")).await;
    let b = node(|_, _| super::stubs::Answer::Error(3, "execution reverted: b")).await;
    let t = configured(&[("down", down), ("a", a.url("/")), ("b", b.url("/"))])
        .consensus(["eth_call"], Quorum::new(2, 3))
        .build()
        .unwrap();
    let answer = send(&t, single("eth_call", json!([{"to": ADDR}, "latest"]))).await.unwrap();
    let alloy_json_rpc::ResponsePacket::Single(response) = answer else { panic!("a batch") };
    match response.payload {
        alloy_json_rpc::ResponsePayload::Failure(e) => assert_eq!(e.code, 3, "the revert both gave"),
        other => panic!("not the revert: {other:?}"),
    }
    assert_eq!((a.take_log().len(), b.take_log().len()), (1, 1), "the third asked when one cast no vote");
}

#[tokio::test(start_paused = true)]
async fn two_providers_rate_limited_or_broken_cast_no_vote_and_the_others_quorum_answers() {
    // Real answers: Infura's -32005 "project ID request rate exceeded" (with its backoff), and
    // a bare -32603 "internal error"; the same two from two providers are no agreement.
    let limited = node(|_, _| super::stubs::Answer::Error(-32005, "project ID request rate exceeded")).await;
    let broken = node(|_, _| super::stubs::Answer::Error(-32603, "internal error")).await;
    let (a, b) = (node(|_, _| ok(json!("0x65"))).await, node(|_, _| ok(json!("0x65"))).await);
    let t = configured(&[
        ("limited", limited.url("/")),
        ("broken", broken.url("/")),
        ("a", a.url("/")),
        ("b", b.url("/")),
    ])
    .consensus(["eth_getBalance"], Quorum::new(2, 4))
    .build()
    .unwrap();
    assert_eq!(result(&send(&t, balance()).await.unwrap()), json!("0x65"), "the two that answered agree");
    assert_eq!((a.take_log().len(), b.take_log().len()), (1, 1));

    // Two providers limited alike do not agree on a rate limit: with no other, no consensus.
    let (one, two) = (
        node(|_, _| super::stubs::Answer::Error(-32005, "limit exceeded")).await,
        node(|_, _| super::stubs::Answer::Error(-32005, "limit exceeded")).await,
    );
    let t = configured(&[("one", one.url("/")), ("two", two.url("/"))])
        .consensus(["eth_getBalance"], Quorum::new(2, 2))
        .build()
        .unwrap();
    let err = send(&t, balance()).await.unwrap_err();
    let failure = Failure::find(&err).expect("the transport's failure");
    assert_eq!(failure.kind(), FailureKind::NoConsensus);
    assert!(
        failure.ballots().iter().all(|(_, digest)| digest.is_none()),
        "no votes: {:?}",
        failure.ballots()
    );
}

#[tokio::test]
async fn a_provider_answering_null_for_a_mined_receipt_is_outvoted_when_receipts_are_voted() {
    let mined = mined_receipt();
    let liar = node(|_, _| ok(json!(null))).await;
    let (a, b) = (node(|_, _| ok(mined_receipt())).await, node(|_, _| ok(mined_receipt())).await);
    let t = configured(&[("liar", liar.url("/")), ("a", a.url("/")), ("b", b.url("/"))])
        .consensus(["eth_getTransactionReceipt"], Quorum::new(2, 3))
        .build()
        .unwrap();
    let lookup = single("eth_getTransactionReceipt", json!([format!("0x{}", "ab".repeat(32))]));
    assert_eq!(result(&send(&t, lookup).await.unwrap()), mined, "not the liar's null");
}

fn mined_receipt() -> serde_json::Value {
    json!({"transactionHash": format!("0x{}", "ab".repeat(32)), "status": "0x1", "blockNumber": "0x10"})
}

#[tokio::test(start_paused = true)]
async fn a_hedged_duplicate_never_counts_as_a_vote_each_provider_is_asked_once() {
    // `slow` takes 300 ms to finish its body; the hedge would fire after 10 ms.
    let body = |id: &serde_json::Value, result: &str| {
        json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
    };
    let slow = failnext_loopback::Server::start(Arc::new(move |req: &failnext_loopback::Received| {
        let id = req.json()["id"].clone();
        let reply = failnext_loopback::Reply::new(200).content_type("application/json");
        failnext_loopback::Action::Reply(
            reply.pause(std::time::Duration::from_millis(300)).send(body(&id, "0x2")),
        )
    }))
    .await;
    let b = node(|_, _| ok(json!("0x1"))).await;
    let c = node(|_, _| ok(json!("0x2"))).await;
    let t = voted(configured(&[("slow", slow.url("/")), ("b", b.url("/")), ("c", c.url("/"))]))
        .hedge(failnext::Hedge::after(std::time::Duration::from_millis(10)))
        .build()
        .unwrap();
    assert_eq!(result(&send(&t, balance()).await.unwrap()), json!("0x2"), "slow and c agree");
    let asked = (slow.take_log().len(), b.take_log().len(), c.take_log().len());
    assert_eq!(asked, (1, 1, 1), "each provider asked once: no hedge went out for a vote");
}

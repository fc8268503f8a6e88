//! `eth_getLogs` that no provider serves whole, against a real node: one anvil with more than
//! 10 000 blocks, 150 of them holding a log, behind three loopback proxies that refuse logs
//! ranges wider than 1 000, 2 000 and 5 000 blocks as real providers do, and forward every
//! other request to the node. Through [`FailoverTransport`] the whole range comes back as the
//! node itself answers it; a range refused down to one block comes back as the providers'
//! own error.
//!
//! anvil comes from `cargo xtask anvil` (or `FAILNEXT_ANVIL`); without it every test here
//! fails with a message saying how to get it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use alloy_json_rpc::{Id, Request, RequestPacket, ResponsePacket, ResponsePayload};
use failnext::Endpoint;
use failnext::alloy::FailoverTransport;
use failnext_loopback::anvil::DEV_ADDRESSES;
use failnext_loopback::{Action, Anvil, AnvilOptions, Received, Reply, Server};
use serde_json::{Value, json};
use tower_service::Service;

/// Init code of a contract whose runtime code is `0x60006000a000`: `LOG0` with empty data,
/// on every call.
const EMITTER: &str = "0x6560006000a0006000526006601af3";

/// How many calls emit a log, and how many empty blocks are mined after each.
const CALLS: u64 = 150;
const GAP: u64 = 66;

/// Refusals as providers send them, each for ranges wider than its limit.
const REFUSALS: [(&str, u64, &str); 3] = [
    ("narrow", 1000, r#"{"code":-32005,"message":"query returned more than 10000 results"}"#),
    ("middle", 2000, r#"{"code":-32000,"message":"exceed maximum block range: 2000"}"#),
    ("wide", 5000, r#"{"code":-32602,"message":"query exceeds max block range 5000"}"#),
];

/// One chain for both claims: anvil mines each block in time that grows with the chain, so
/// 10 000 blocks take it a minute.
#[tokio::test]
async fn a_range_every_provider_refuses_whole_returns_what_the_node_returns_and_teaches_the_next_split() {
    let (node, emitter) = chain_with_logs().await;
    let proxies = proxies(&node, |limit| limit).await;
    let transport = transport(&proxies);
    let filter =
        json!({"address": emitter, "fromBlock": "0x0", "toBlock": format!("{:#x}", head(&node).await)});

    let direct = node.rpc("eth_getLogs", json!([filter])).await.unwrap();
    assert!(head(&node).await > 10_000);
    assert_eq!(direct.as_array().map(Vec::len), Some(CALLS as usize), "the node's own answer");
    let answer = logs(&transport, &filter, 7).await;
    assert_eq!(answer.id, Id::Number(7), "the caller's id");
    assert_eq!(result(&answer.payload), direct, "the same logs, in the same order");
    assert!(refusals(&proxies) > 0, "the whole range was refused first");
    for (id, ..) in REFUSALS {
        assert!(!transport.failover().is_cooling_down(id), "{id} is not cooled for a refusal");
    }

    // Learnt: the same query again, and one over every log of the chain (no address, from
    // "earliest"), ask no provider for a range it refused before.
    for proxy in &proxies {
        proxy.refused.store(0, Ordering::Relaxed);
    }
    assert_eq!(result(&logs(&transport, &filter, 8).await.payload), direct);
    let all = json!({"fromBlock": "earliest", "toBlock": format!("{:#x}", head(&node).await)});
    let every = node.rpc("eth_getLogs", json!([all])).await.unwrap();
    assert_eq!(result(&logs(&transport, &all, 9).await.payload), every);
    assert_eq!(refusals(&proxies), 0, "no provider was asked for a range it refused before");
    stop(node, proxies).await;
}

#[tokio::test]
async fn a_one_block_range_refused_everywhere_returns_the_providers_own_error() {
    let node = node().await;
    node.mine(100).await.unwrap();
    let proxies = proxies(&node, |_| 0).await;
    let transport = transport(&proxies);
    let filter = json!({"fromBlock": "0x0", "toBlock": "0x64"});

    let answer = logs(&transport, &filter, 5).await;
    assert_eq!(answer.id, Id::Number(5));
    let ResponsePayload::Failure(error) = &answer.payload else { panic!("logs, not a refusal: {answer:?}") };
    let own =
        REFUSALS.map(|(_, _, refusal)| serde_json::from_str::<Value>(refusal).unwrap()["message"].clone());
    assert!(own.contains(&json!(error.message)), "a provider's own message: {error:?}");
    for (id, ..) in REFUSALS {
        assert!(!transport.failover().is_cooling_down(id), "{id} is not cooled for a refusal");
    }
    stop(node, proxies).await;
}

// ===== the chain =====

async fn node() -> Anvil {
    // No past states are read here; without them anvil mines a long chain twice as fast.
    match Anvil::start(AnvilOptions::new().arg("--prune-history")).await {
        Ok(anvil) => anvil,
        Err(e) => panic!("{e}"),
    }
}

/// A node with [`CALLS`] logs, one in every [`GAP`]` + 1`-th block, over more than 10 000
/// blocks; and the address of the contract that emits them.
async fn chain_with_logs() -> (Anvil, String) {
    let node = node().await;
    let deploy = json!([{"from": DEV_ADDRESSES[0], "data": EMITTER}]);
    let hash = node.rpc("eth_sendTransaction", deploy).await.unwrap();
    let mut receipt = Value::Null;
    for _ in 0..100 {
        receipt = node.rpc("eth_getTransactionReceipt", json!([hash])).await.unwrap();
        if !receipt.is_null() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let emitter = receipt["contractAddress"].as_str().expect("a contract address").to_owned();
    for _ in 0..CALLS {
        node.rpc("eth_sendTransaction", json!([{"from": DEV_ADDRESSES[0], "to": emitter}])).await.unwrap();
        node.rpc("anvil_mine", json!([format!("{GAP:#x}")])).await.unwrap();
    }
    (node, emitter)
}

async fn head(node: &Anvil) -> u64 {
    node.block_number().await.unwrap()
}

// ===== the proxies =====

/// A loopback proxy in front of the node that refuses logs ranges wider than its limit.
struct Proxy {
    id: &'static str,
    server: Server,
    refused: Arc<AtomicUsize>,
}

/// The three proxies of [`REFUSALS`], each refusing ranges wider than `limit(its limit)`.
async fn proxies(node: &Anvil, limit: impl Fn(u64) -> u64) -> Vec<Proxy> {
    let mut proxies = Vec::new();
    for (id, wide, refusal) in REFUSALS {
        proxies.push(proxy(id, node.url(), limit(wide), refusal).await);
    }
    proxies
}

async fn proxy(id: &'static str, upstream: String, limit: u64, refusal: &'static str) -> Proxy {
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let refused = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&refused);
    let server = Server::start_later(Arc::new(move |received: &Received| {
        let (client, upstream, counted) = (client.clone(), upstream.clone(), Arc::clone(&counted));
        let body = received.body.clone();
        Box::pin(async move {
            let call: Value = serde_json::from_slice(&body).unwrap_or_default();
            if call["method"] == "eth_getLogs" && width(&call["params"][0]).is_some_and(|w| w > limit) {
                counted.fetch_add(1, Ordering::Relaxed);
                let id = &call["id"];
                return Action::Reply(
                    Reply::new(200).json(format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{refusal}}}"#)),
                );
            }
            let sent = client.post(&upstream).header("content-type", "application/json").body(body).send();
            match sent.await {
                Ok(response) => {
                    let status = response.status().as_u16();
                    Action::Reply(Reply::new(status).json(response.bytes().await.unwrap_or_default()))
                }
                Err(_) => Action::Close,
            }
        })
    }))
    .await;
    Proxy { id, server, refused }
}

/// How many blocks a logs filter spans; `None` unless both bounds are numbers.
fn width(filter: &Value) -> Option<u64> {
    let number = |key: &str| match filter[key].as_str()? {
        "earliest" => Some(0),
        hex => u64::from_str_radix(hex.strip_prefix("0x")?, 16).ok(),
    };
    Some(number("toBlock")? - number("fromBlock")? + 1)
}

fn refusals(proxies: &[Proxy]) -> usize {
    proxies.iter().map(|p| p.refused.load(Ordering::Relaxed)).sum()
}

async fn stop(mut node: Anvil, proxies: Vec<Proxy>) {
    for mut proxy in proxies {
        proxy.server.stop().await;
    }
    node.kill().unwrap();
}

// ===== the transport =====

fn transport(proxies: &[Proxy]) -> FailoverTransport {
    let endpoints = proxies.iter().map(|p| Endpoint::new(p.id, p.server.url("/")));
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    FailoverTransport::builder(endpoints).client(client).build().unwrap()
}

/// One `eth_getLogs` call with id `id` through the transport: its single response.
async fn logs(transport: &FailoverTransport, filter: &Value, id: u64) -> alloy_json_rpc::Response {
    let call = Request::new("eth_getLogs", Id::Number(id), [filter.clone()]).serialize().unwrap();
    match transport.clone().call(RequestPacket::Single(call)).await {
        Ok(ResponsePacket::Single(response)) => response,
        other => panic!("one response: {other:?}"),
    }
}

fn result(payload: &ResponsePayload) -> Value {
    match payload {
        ResponsePayload::Success(raw) => serde_json::from_str(raw.get()).unwrap(),
        ResponsePayload::Failure(error) => panic!("an error answer: {error:?}"),
    }
}

/// One call through the transport: its result, or the transport's error (an error answer
/// panics).
async fn try_call(
    transport: &FailoverTransport,
    method: &'static str,
    params: Value,
) -> Result<Value, alloy_transport::TransportError> {
    let call = Request::new(method, Id::Number(1), params).serialize().unwrap();
    match transport.clone().call(RequestPacket::Single(call)).await? {
        ResponsePacket::Single(response) => Ok(result(&response.payload)),
        other => panic!("one response: {other:?}"),
    }
}

/// The same, the call answered.
async fn call(transport: &FailoverTransport, method: &'static str, params: Value) -> Value {
    match tokio::time::timeout(std::time::Duration::from_secs(10), try_call(transport, method, params)).await
    {
        Ok(Ok(value)) => value,
        Ok(Err(e)) => panic!("{method}: {e}"),
        Err(_) => panic!("{method}: no answer within 10 s"),
    }
}

#[path = "alloy_logs/trust.rs"]
mod trust;

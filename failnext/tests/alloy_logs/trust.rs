//! Answers you can trust, against real nodes (issue 31): a follower over three anvil forks of
//! one source, the first behind a loopback proxy that lies in well-formed ways, yields only the
//! source's blocks and logs; receipts of mined transactions are found while the liar answers
//! `null`; a consensus `eth_call` over three anvils, one with other storage, returns the
//! majority's answer.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use alloy_primitives::{B256, keccak256};
use alloy_rpc_types_eth::Filter;
use failnext::alloy::{ChainEvent, FailoverTransportBuilder, Failure, FailureKind, Quorum, Start};
use failnext::{Endpoint, Event};
use failnext_loopback::anvil::DEV_ADDRESSES;
use failnext_loopback::{Action, Anvil, AnvilOptions, Received, Reply, Server};
use serde_json::{Value, json};

use super::EMITTER;

/// Blocks the source mines after the emitter's, one log each.
const LOGGED: u64 = 40;

/// The block whose hash the liar rewrites (the next block's parent link kept consistent).
const FORGED: u64 = 20;

/// What the liar does besides forwarding.
#[derive(Clone, Copy)]
struct Lies {
    /// Rewrites block [`FORGED`]'s hash (and the next block's parent link).
    forge: bool,
    /// Drops the log of every tenth block from `eth_getLogs` and the block's receipts (blooms
    /// untouched).
    drop_logs: bool,
    /// Answers `null` for every transaction receipt.
    null_receipts: bool,
}

fn hex(value: &Value) -> Option<u64> {
    u64::from_str_radix(value.as_str()?.strip_prefix("0x")?, 16).ok()
}

/// The hash the liar gives block [`FORGED`].
fn forged_hash() -> B256 {
    keccak256(b"a block that never existed")
}

/// One call's result as the liar tells it.
fn lie(method: &str, mut result: Value, lies: Lies) -> Value {
    let tenth = |n: Option<u64>| n.is_some_and(|n| n % 10 == 0);
    match method {
        "eth_getTransactionReceipt" if lies.null_receipts => Value::Null,
        "eth_getLogs" if lies.drop_logs => {
            if let Some(logs) = result.as_array_mut() {
                logs.retain(|log| !tenth(hex(&log["blockNumber"])));
            }
            result
        }
        "eth_getBlockReceipts" if lies.drop_logs => {
            for receipt in result.as_array_mut().into_iter().flatten() {
                if tenth(hex(&receipt["blockNumber"])) {
                    receipt["logs"] = json!([]);
                }
            }
            result
        }
        "eth_getBlockByNumber" | "eth_getBlockByHash" if lies.forge => {
            match hex(&result["number"]) {
                Some(FORGED) => result["hash"] = json!(forged_hash()),
                Some(n) if n == FORGED + 1 => result["parentHash"] = json!(forged_hash()),
                _ => {}
            }
            result
        }
        _ => result,
    }
}

/// Applies [`lie`] to a single answer or to each answer of a batch (matched to its call by id).
fn lie_in(call: &Value, mut answer: Value, lies: Lies) -> Value {
    let method_of = |id: &Value| -> String {
        let calls = call.as_array().map_or_else(|| std::slice::from_ref(call), Vec::as_slice);
        calls
            .iter()
            .find(|c| c["id"] == *id)
            .and_then(|c| c["method"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    let answers = match answer.as_array_mut() {
        Some(batch) => batch.iter_mut().collect::<Vec<_>>(),
        None => vec![&mut answer],
    };
    for one in answers {
        let method = method_of(&one["id"]);
        if let Some(result) = one.get_mut("result") {
            *result = lie(&method, result.take(), lies);
        }
    }
    answer
}

/// A loopback proxy in front of `upstream` that lies as `lies` says.
async fn liar(upstream: String, lies: Lies) -> Server {
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    Server::start_later(Arc::new(move |received: &Received| {
        let (client, upstream) = (client.clone(), upstream.clone());
        let body = received.body.clone();
        Box::pin(async move {
            let call: Value = serde_json::from_slice(&body).unwrap_or_default();
            let sent = client.post(&upstream).header("content-type", "application/json").body(body).send();
            let Ok(response) = sent.await else { return Action::Close };
            let answer: Value =
                serde_json::from_slice(&response.bytes().await.unwrap_or_default()).unwrap_or_default();
            Action::Reply(Reply::new(200).json(lie_in(&call, answer, lies).to_string()))
        })
    }))
    .await
}

async fn anvil(options: AnvilOptions) -> Anvil {
    match Anvil::start(options).await {
        Ok(anvil) => anvil,
        Err(e) => panic!("{e}"),
    }
}

/// A source with the emitter and [`LOGGED`] blocks of one log each; its address and the
/// hashes of the transactions that logged.
async fn source() -> (Anvil, String, Vec<String>) {
    let node = anvil(AnvilOptions::new()).await;
    let deploy = node.rpc("eth_sendTransaction", json!([{"from": DEV_ADDRESSES[0], "data": EMITTER}])).await;
    let deploy = deploy.unwrap();
    let mut receipt = Value::Null;
    for _ in 0..100 {
        receipt = node.rpc("eth_getTransactionReceipt", json!([deploy])).await.unwrap();
        if !receipt.is_null() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let emitter = receipt["contractAddress"].as_str().expect("a contract address").to_owned();
    let mut txs = Vec::new();
    for _ in 0..LOGGED {
        let tx = node.rpc("eth_sendTransaction", json!([{"from": DEV_ADDRESSES[0], "to": emitter}])).await;
        txs.push(tx.unwrap().as_str().unwrap().to_owned());
    }
    (node, emitter, txs)
}

/// Three forks of the source at its head, the first behind a liar: (forks, liar).
async fn forks(source: &Anvil, lies: Lies) -> (Vec<Anvil>, Server) {
    let mut forks = Vec::new();
    for _ in 0..3 {
        forks.push(anvil(AnvilOptions::new().arg("--fork-url").arg(source.url())).await);
    }
    let proxy = liar(forks[0].url(), lies).await;
    (forks, proxy)
}

fn builder(forks: &[Anvil], proxy: &Server) -> FailoverTransportBuilder {
    let endpoints = [
        Endpoint::new("liar", proxy.url("/")),
        Endpoint::new("fork-b", forks[1].url()),
        Endpoint::new("fork-c", forks[2].url()),
    ];
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    failnext::alloy::FailoverTransport::builder(endpoints).client(client)
}

/// A log by its transaction, log index and block hash.
type LogId = (B256, u64, B256);

/// What the follower yielded: per block, its hash and who served it; per block, its logs as
/// (transaction, log index, block hash).
#[derive(Default)]
struct Yielded {
    blocks: Vec<(u64, B256, Option<String>)>,
    logs: Vec<(u64, Vec<LogId>)>,
}

async fn follow(forks: &[Anvil], proxy: &Server, emitter: &str, prove: bool) -> (Yielded, Vec<String>) {
    let told = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&told);
    let t = builder(forks, proxy)
        .on_event(move |event| {
            if let Event::ForgedBlock { endpoint, number } = event {
                seen.lock().unwrap().push(format!("{endpoint} forged {number:?}"));
            }
        })
        .build()
        .unwrap();
    let filter = Filter::new().address(emitter.parse::<alloy_primitives::Address>().unwrap());
    let mut follower =
        t.follow(Start::Number(1)).logs(filter).prove_logs(prove).poll_every(Duration::from_millis(50));
    let mut yielded = Yielded::default();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(20), follower.next()).await;
        match event.expect("an event within 20 s").expect("no error") {
            ChainEvent::Block { block, served_by } => {
                yielded.blocks.push((block.number, block.hash, served_by.map(|e| e.to_string())));
            }
            ChainEvent::Logs { block, logs, .. } => {
                let logs = logs
                    .iter()
                    .map(|l| {
                        (l.transaction_hash.unwrap(), l.log_index.unwrap(), l.block_hash.unwrap_or_default())
                    })
                    .collect();
                yielded.logs.push((block.number, logs));
                if block.number == LOGGED + 1 {
                    let told = told.lock().unwrap().clone();
                    return (yielded, told);
                }
            }
            other => panic!("no reorg on this chain: {other:?}"),
        }
    }
}

/// The source's block hashes and logs, 1..=head.
async fn truth(source: &Anvil, emitter: &str) -> Yielded {
    let mut truth = Yielded::default();
    for n in 1..=LOGGED + 1 {
        let block = source.rpc("eth_getBlockByNumber", json!([format!("{n:#x}"), false])).await.unwrap();
        let hash: B256 = serde_json::from_value(block["hash"].clone()).unwrap();
        truth.blocks.push((n, hash, None));
        let range =
            json!([{"address": emitter, "fromBlock": format!("{n:#x}"), "toBlock": format!("{n:#x}")}]);
        let logs = source.rpc("eth_getLogs", range).await.unwrap();
        let logs = logs
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                let tx: B256 = serde_json::from_value(l["transactionHash"].clone()).unwrap();
                (tx, hex(&l["logIndex"]).unwrap(), hash)
            })
            .collect();
        truth.logs.push((n, logs));
    }
    truth
}

async fn stop(mut nodes: Vec<Anvil>, mut proxy: Server) {
    proxy.stop().await;
    for node in &mut nodes {
        node.kill().unwrap();
    }
}

#[tokio::test]
async fn a_follower_over_forks_yields_only_the_sources_blocks_and_logs_while_the_first_provider_lies() {
    let (mut source, emitter, _) = source().await;
    let truth = truth(&source, &emitter).await;
    let hashes = |y: &Yielded| y.blocks.iter().map(|(n, h, _)| (*n, *h)).collect::<Vec<_>>();
    let both = Lies { forge: true, drop_logs: true, null_receipts: false };

    // Defaults: the forged block is never yielded, the true one is, its forger is avoided.
    let (nodes, proxy) = forks(&source, both).await;
    let (yielded, told) = follow(&nodes, &proxy, &emitter, false).await;
    assert_eq!(hashes(&yielded), hashes(&truth), "every block once, in order, the source's");
    assert!(told.contains(&format!("liar forged Some({FORGED})")), "{told:?}");
    assert!(told.iter().all(|t| t.starts_with("liar forged")), "only the liar is told as forging: {told:?}");
    let liar_served =
        yielded.blocks.iter().filter(|(n, _, by)| *n >= FORGED && by.as_deref() == Some("liar"));
    assert_eq!(liar_served.count(), 0, "the forger serves no block from the forged one on");
    stop(nodes, proxy).await;

    // With logs proven by the receipts root: every log is the source's too.
    let (nodes, proxy) = forks(&source, both).await;
    let (yielded, _) = follow(&nodes, &proxy, &emitter, true).await;
    assert_eq!(hashes(&yielded), hashes(&truth));
    assert_eq!(yielded.logs, truth.logs, "every log of every block, none dropped");
    stop(nodes, proxy).await;

    // A liar that only drops logs (its blocks true, so it is never found forging): the proof
    // is what catches it; without it the dropped logs go unnoticed (the bloom cannot show an
    // absence).
    let dropping = Lies { forge: false, drop_logs: true, null_receipts: false };
    let (nodes, proxy) = forks(&source, dropping).await;
    let (yielded, _) = follow(&nodes, &proxy, &emitter, true).await;
    assert_eq!(hashes(&yielded), hashes(&truth));
    assert_eq!(yielded.logs, truth.logs, "every log, those the liar dropped read elsewhere");
    stop(nodes, proxy).await;
    let (nodes, proxy) = forks(&source, dropping).await;
    let (yielded, _) = follow(&nodes, &proxy, &emitter, false).await;
    // Block 1 deploys the emitter and has no log.
    let missed = yielded
        .logs
        .iter()
        .filter(|(n, logs)| *n > 1 && logs.is_empty())
        .map(|(n, _)| *n)
        .collect::<Vec<_>>();
    assert_eq!(missed, [10, 20, 30, 40], "without the proof the dropped logs are not noticed");
    stop(nodes, proxy).await;
    source.kill().unwrap();
}

#[tokio::test]
async fn receipts_of_mined_transactions_are_found_by_a_quorum_while_the_first_provider_answers_null() {
    let (mut source, _, txs) = source().await;
    let (nodes, proxy) = forks(&source, Lies { forge: false, drop_logs: false, null_receipts: true }).await;
    let voted =
        builder(&nodes, &proxy).consensus(["eth_getTransactionReceipt"], Quorum::new(2, 3)).build().unwrap();
    let plain = builder(&nodes, &proxy).build().unwrap();
    let mut denied = 0;
    for tx in &txs {
        let truth = source.rpc("eth_getTransactionReceipt", json!([tx])).await.unwrap();
        let receipt = super::call(&voted, "eth_getTransactionReceipt", json!([tx])).await;
        assert_eq!(receipt["blockHash"], truth["blockHash"], "{tx}");
        assert_eq!(receipt["transactionHash"], truth["transactionHash"]);
        denied += u64::from(super::call(&plain, "eth_getTransactionReceipt", json!([tx])).await.is_null());
    }
    assert_eq!(denied, LOGGED, "without consensus the liar's null is taken every time");
    stop(nodes, proxy).await;
    source.kill().unwrap();
}

/// Runtime code returning storage slot 0: `PUSH1 0 SLOAD PUSH1 0 MSTORE PUSH1 32 PUSH1 0 RETURN`.
const READS_SLOT_0: &str = "0x60005460005260206000f3";
const CONTRACT: &str = "0x00000000000000000000000000000000000000c0";

async fn store(node: &Anvil, value: u64) {
    node.rpc("anvil_setCode", json!([CONTRACT, READS_SLOT_0])).await.unwrap();
    let slot = format!("0x{:064x}", 0);
    node.rpc("anvil_setStorageAt", json!([CONTRACT, slot, format!("0x{value:064x}")])).await.unwrap();
}

#[tokio::test]
async fn a_consensus_eth_call_returns_the_majoritys_storage_and_reports_the_dissenter() {
    let nodes = [
        anvil(AnvilOptions::new()).await,
        anvil(AnvilOptions::new()).await,
        anvil(AnvilOptions::new()).await,
    ];
    for (node, value) in nodes.iter().zip([2, 1, 1]) {
        store(node, value).await;
    }
    let disagreed = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&disagreed);
    let ids = ["other-storage", "b", "c"];
    let endpoints = ids.iter().zip(&nodes).map(|(id, n)| Endpoint::new(*id, n.url()));
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let t = failnext::alloy::FailoverTransport::builder(endpoints)
        .client(client)
        .consensus(["eth_call"], Quorum::new(2, 3))
        .on_event(move |event| {
            if let Event::Disagreed { endpoint, method } = event {
                seen.lock().unwrap().push(format!("{endpoint} {method}"));
            }
        })
        .build()
        .unwrap();
    let call = json!([{"to": CONTRACT, "data": "0x"}, "latest"]);
    assert_eq!(super::call(&t, "eth_call", call.clone()).await, json!(format!("0x{:064x}", 1)));
    assert_eq!(disagreed.lock().unwrap().as_slice(), ["other-storage eth_call"]);

    // All three different: no agreement, typed, with each provider's answer digest.
    store(&nodes[2], 3).await;
    let err = super::try_call(&t, "eth_call", call).await.unwrap_err();
    let failure = Failure::find(&err).expect("the transport's failure");
    assert_eq!(failure.kind(), FailureKind::NoConsensus, "{err}");
    let voters: Vec<&str> = failure.ballots().iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(voters, ids);
    for mut node in nodes {
        node.kill().unwrap();
    }
}

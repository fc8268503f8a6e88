//! The follower over providers serving real headers (hashed as alloy hashes them, with real
//! logs blooms and receipts roots): a block whose hash a provider rewrote, a log the bloom does
//! not hold and (with logs proven) a log dropped are never yielded.

use std::sync::{Arc, Mutex};

use alloy_primitives::B256;
use failnext::alloy::{ChainEvent, Start};
use serde_json::{Value, json};

use super::next;
use super::stubs::{node, ok};

/// A transport over the liar, first, and the honest node, each attempt bounded by 2 s.
fn liar_first(
    liar: &failnext_loopback::Server,
    good: &failnext_loopback::Server,
) -> failnext::alloy::FailoverTransportBuilder {
    failnext::alloy::FailoverTransport::builder([
        failnext::Endpoint::new("liar", liar.url("/")),
        failnext::Endpoint::new("honest", good.url("/")),
    ])
    .attempt_timeout(std::time::Duration::from_secs(2))
}

/// The block the call `params` asks for (by number), or the head.
fn answer(blocks: &[Value], method: &str, params: &Value) -> Value {
    let head = blocks.len() as u64 - 1;
    match method {
        "eth_blockNumber" => json!(format!("{head:#x}")),
        "eth_chainId" => json!("0x1"),
        "eth_getBlockByNumber" => {
            let n = params[0].as_str().and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok());
            n.and_then(|n| blocks.get(n as usize).cloned()).unwrap_or(Value::Null)
        }
        _ => json!([]),
    }
}

#[tokio::test]
async fn a_provider_rewriting_a_blocks_hash_has_it_never_yielded_and_the_true_block_is() {
    let (honest, _) = chain_with_receipts(25);
    let mut lies = honest.clone();
    let forged = B256::repeat_byte(0x20);
    lies[20]["hash"] = json!(forged);
    lies[21]["parentHash"] = json!(forged);
    let liar = node(move |method, params| ok(answer(&lies, method, params))).await;
    let truth = honest.clone();
    let good = node(move |method, params| ok(answer(&truth, method, params))).await;
    let forgeries = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&forgeries);
    let t = liar_first(&liar, &good)
        .on_event(move |event| {
            if let failnext::Event::ForgedBlock { endpoint, number } = event {
                seen.lock().unwrap().push((endpoint.to_string(), *number));
            }
        })
        .build()
        .unwrap();
    let mut follower = t.follow(Start::Number(15));
    let mut yielded = Vec::new();
    while yielded.len() < 11 {
        if let ChainEvent::Block { block, .. } = next(&mut follower).await.unwrap() {
            yielded.push(block);
        }
    }
    for block in &yielded {
        let truth: B256 = serde_json::from_value(honest[block.number as usize]["hash"].clone()).unwrap();
        assert_eq!(block.hash, truth, "block {} is the chain's", block.number);
    }
    assert!(yielded.iter().all(|b| b.hash != forged));
    let forgeries = forgeries.lock().unwrap();
    assert!(forgeries.iter().any(|(e, _)| e == "liar"), "{forgeries:?}");
}

const EMITS: alloy_primitives::Address = alloy_primitives::Address::repeat_byte(0xee);

/// Block `number`'s one log, as a node answers it.
fn log_of(number: u64, hash: B256, address: alloy_primitives::Address) -> Value {
    json!({
        "address": address,
        "topics": [B256::with_last_byte(1)],
        "data": format!("0x{number:064x}"),
        "blockHash": hash,
        "blockNumber": format!("{number:#x}"),
        "transactionHash": B256::repeat_byte(0x77),
        "transactionIndex": "0x0",
        "logIndex": "0x0",
        "removed": false,
    })
}

/// `answer`, and logs by block hash: the block's one log, plus `extra`'s at block 20.
fn with_logs(
    blocks: &[Value],
    method: &str,
    params: &Value,
    extra: Option<alloy_primitives::Address>,
) -> Value {
    if method != "eth_getLogs" {
        return answer(blocks, method, params);
    }
    let hash = params[0]["blockHash"].clone();
    let Some(number) = blocks.iter().position(|b| b["hash"] == hash) else { return json!([]) };
    let hash: B256 = serde_json::from_value(hash).unwrap();
    let mut logs = vec![log_of(number as u64, hash, EMITS)];
    if let (20, Some(address)) = (number, extra) {
        let mut added = log_of(20, hash, address);
        added["logIndex"] = json!("0x1");
        logs.push(added);
    }
    json!(logs)
}

#[tokio::test]
async fn a_log_the_blocks_bloom_does_not_hold_is_never_yielded_and_its_provider_is_avoided() {
    let (blocks, _) = chain_with_receipts(25);
    let (lies, truth) = (blocks.clone(), blocks.clone());
    let stranger = alloy_primitives::Address::repeat_byte(0x5a);
    let liar = node(move |method, params| ok(with_logs(&lies, method, params, Some(stranger)))).await;
    let good = node(move |method, params| ok(with_logs(&truth, method, params, None))).await;
    let t = liar_first(&liar, &good).build().unwrap();
    let filter = alloy_rpc_types_eth::Filter::new();
    let mut follower =
        t.follow(Start::Number(15)).logs(filter).poll_every(std::time::Duration::from_millis(50));
    let mut logs_of_20 = None;
    while logs_of_20.is_none() {
        if let ChainEvent::Logs { block, logs, .. } = next(&mut follower).await.unwrap() {
            assert!(logs.iter().all(|log| log.address() == EMITS), "block {}: {logs:?}", block.number);
            if block.number == 20 {
                logs_of_20 = Some(logs);
            }
        }
    }
    assert_eq!(logs_of_20.map(|l| l.len()), Some(1), "the block's one log, not the one added");
    assert!(follower.stats().off_chain >= 1, "the liar was found off the chain");
}

/// A chain whose block `n` holds one transaction with one log (from `EMITS`), its receipt
/// hashed into the header's receipts root: the blocks, and each block's receipts as a node
/// answers `eth_getBlockReceipts`.
fn chain_with_receipts(head: u64) -> (Vec<Value>, Vec<Vec<Value>>) {
    use alloy_consensus::{Receipt, ReceiptEnvelope, ReceiptWithBloom};
    let mut parent = B256::ZERO;
    let mut blocks = Vec::new();
    let mut receipts = Vec::new();
    for number in 0..=head {
        let log = alloy_primitives::Log::new_unchecked(
            EMITS,
            vec![B256::with_last_byte(1)],
            alloy_primitives::Bytes::from(number.to_be_bytes().to_vec()),
        );
        let receipt = Receipt { status: true.into(), cumulative_gas_used: 21_000, logs: vec![log.clone()] };
        let with_bloom = ReceiptWithBloom::from(receipt);
        let bloom = with_bloom.logs_bloom;
        let envelope = ReceiptEnvelope::Eip1559(with_bloom);
        let inner = alloy_consensus::Header {
            number,
            parent_hash: parent,
            logs_bloom: bloom,
            receipts_root: alloy_consensus::proofs::calculate_receipt_root(std::slice::from_ref(&envelope)),
            gas_limit: 30_000_000,
            gas_used: 21_000,
            timestamp: 1_700_000_000 + 12 * number,
            ..Default::default()
        };
        let header = alloy_rpc_types_eth::Header::new(inner);
        parent = header.hash;
        let tx = B256::with_last_byte(number as u8);
        let rpc_log = alloy_rpc_types_eth::Log {
            inner: log,
            block_hash: Some(header.hash),
            block_number: Some(number),
            block_timestamp: None,
            transaction_hash: Some(tx),
            transaction_index: Some(0),
            log_index: Some(0),
            removed: false,
        };
        let rpc = alloy_rpc_types_eth::TransactionReceipt {
            inner: envelope.map_logs(|_| rpc_log.clone()),
            transaction_hash: tx,
            transaction_index: Some(0),
            block_hash: Some(header.hash),
            block_number: Some(number),
            gas_used: 21_000,
            effective_gas_price: 1,
            blob_gas_used: None,
            blob_gas_price: None,
            from: alloy_primitives::Address::repeat_byte(1),
            to: Some(EMITS),
            contract_address: None,
        };
        receipts.push(vec![serde_json::to_value(rpc).unwrap()]);
        let mut block = serde_json::to_value(header).unwrap();
        block["transactions"] = json!([tx]);
        blocks.push(block);
    }
    (blocks, receipts)
}

/// A node of that chain; a liar drops block 20's log from its logs and its receipts.
fn chain_node(blocks: &[Value], receipts: &[Vec<Value>], method: &str, params: &Value, liar: bool) -> Value {
    let at = |hash: &Value| blocks.iter().position(|b| b["hash"] == *hash);
    match method {
        "eth_getBlockReceipts" => {
            let Some(n) = at(&params[0]) else { return Value::Null };
            let mut list = receipts[n].clone();
            if liar && n == 20 {
                list[0]["logs"] = json!([]);
            }
            json!(list)
        }
        "eth_getLogs" => {
            let Some(n) = at(&params[0]["blockHash"]) else { return json!([]) };
            if liar && n == 20 { json!([]) } else { receipts[n][0]["logs"].clone() }
        }
        "eth_getBlockByHash" => at(&params[0]).map_or(Value::Null, |n| blocks[n].clone()),
        "eth_getTransactionReceipt" => {
            let Some(n) = receipts.iter().position(|r| r[0]["transactionHash"] == params[0]) else {
                return Value::Null;
            };
            let mut receipt = receipts[n][0].clone();
            if liar && n == 20 {
                receipt["logs"] = json!([]);
            }
            receipt
        }
        _ => answer(blocks, method, params),
    }
}

/// A node of that chain without `eth_getBlockReceipts` when `whole` is false.
async fn chain_server(
    blocks: Vec<Value>,
    receipts: Vec<Vec<Value>>,
    liar: bool,
    whole: bool,
) -> failnext_loopback::Server {
    node(move |method, params| match method {
        "eth_getBlockReceipts" if !whole => super::stubs::Answer::Error(
            -32601,
            "the method eth_getBlockReceipts does not exist/is not available",
        ),
        _ => ok(chain_node(&blocks, &receipts, method, params, liar)),
    })
    .await
}

/// The logs a follower over the liar (first) and an honest node yields for block 20.
async fn logs_of_block_20(prove: bool) -> Vec<alloy_rpc_types_eth::Log> {
    logs_of_block_20_with(prove, true).await
}

/// The same, the nodes with `eth_getBlockReceipts` or (`whole` false) without it.
async fn logs_of_block_20_with(prove: bool, whole: bool) -> Vec<alloy_rpc_types_eth::Log> {
    let (blocks, receipts) = chain_with_receipts(25);
    let liar = chain_server(blocks.clone(), receipts.clone(), true, whole).await;
    let good = chain_server(blocks, receipts, false, whole).await;
    let t = liar_first(&liar, &good).build().unwrap();
    // Polled every 50 ms: a read retried after the liar is avoided waits one poll.
    let mut follower = t
        .follow(Start::Number(18))
        .logs(alloy_rpc_types_eth::Filter::new())
        .prove_logs(prove)
        .poll_every(std::time::Duration::from_millis(50));
    loop {
        if let ChainEvent::Logs { block, logs, .. } = next(&mut follower).await.unwrap() {
            if block.number == 20 {
                return logs;
            }
        }
    }
}

#[tokio::test]
async fn a_dropped_log_is_caught_only_by_logs_proven_by_the_receipts_root() {
    assert_eq!(logs_of_block_20(false).await.len(), 0, "the bloom check cannot see a log dropped");
}

#[tokio::test]
async fn without_eth_get_block_receipts_logs_are_proven_by_each_transactions_receipt() {
    assert_eq!(logs_of_block_20_with(true, false).await.len(), 1, "the block's one log");
}

#[tokio::test]
async fn a_follower_proving_logs_while_catching_up_reads_each_block_once() {
    let (blocks, receipts) = chain_with_receipts(25);
    let good = chain_server(blocks, receipts, false, true).await;
    let t = failnext::alloy::FailoverTransport::builder([failnext::Endpoint::new("good", good.url("/"))])
        .build()
        .unwrap();
    let mut follower = t
        .follow(Start::Number(2))
        .logs(alloy_rpc_types_eth::Filter::new())
        .prove_logs(true)
        .poll_every(std::time::Duration::from_millis(50));
    loop {
        if let ChainEvent::Logs { block, logs, .. } = next(&mut follower).await.unwrap() {
            assert_eq!(logs.len(), 1, "block {}", block.number);
            if block.number == 25 {
                break;
            }
        }
    }
    let calls: Vec<Value> = good
        .take_log()
        .iter()
        .flat_map(|r| match r.json() {
            Value::Array(calls) => calls,
            call => vec![call],
        })
        .collect();
    let count = |method: &str| calls.iter().filter(|c| c["method"] == method).count();
    assert_eq!(count("eth_getBlockReceipts"), 24, "each block's receipts once");
    assert!(
        count("eth_getBlockByNumber") <= 24 + 2,
        "each block read about once: {}",
        count("eth_getBlockByNumber")
    );
}

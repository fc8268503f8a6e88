//! The follower over providers serving real headers (hashed as alloy hashes them): a provider
//! that rewrites a block's hash, keeping the parent link of the next block consistent, has
//! neither block yielded; the honest provider's are.

use std::sync::{Arc, Mutex};

use alloy_primitives::B256;
use failnext::alloy::{ChainEvent, Start};
use serde_json::{Value, json};

use super::next;
use super::stubs::{node, ok};

/// Blocks 0..=`head` of one chain, each header hashed by alloy, each linked to its parent.
fn chain(head: u64) -> Vec<Value> {
    let mut parent = B256::ZERO;
    (0..=head)
        .map(|number| {
            let inner = alloy_consensus::Header {
                number,
                parent_hash: parent,
                gas_limit: 30_000_000,
                timestamp: 1_700_000_000 + 12 * number,
                ..Default::default()
            };
            let header = alloy_rpc_types_eth::Header::new(inner);
            parent = header.hash;
            let mut block = serde_json::to_value(header).unwrap();
            block["transactions"] = json!([]);
            block
        })
        .collect()
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
    let honest = chain(25);
    let mut lies = honest.clone();
    let forged = B256::repeat_byte(0x20);
    lies[20]["hash"] = json!(forged);
    lies[21]["parentHash"] = json!(forged);
    let liar = node(move |method, params| ok(answer(&lies, method, params))).await;
    let truth = honest.clone();
    let good = node(move |method, params| ok(answer(&truth, method, params))).await;
    let forgeries = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&forgeries);
    let endpoints = [("liar", liar.url("/")), ("honest", good.url("/"))];
    let t = failnext::alloy::FailoverTransport::builder(
        endpoints.iter().map(|(id, url)| failnext::Endpoint::new(*id, url.clone())),
    )
    .attempt_timeout(std::time::Duration::from_secs(2))
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

/// Blocks 0..=`head` whose headers carry the logs bloom of one log each (from `EMITS`).
fn chain_with_logs(head: u64) -> Vec<Value> {
    let mut parent = B256::ZERO;
    (0..=head)
        .map(|number| {
            let log = alloy_primitives::Log::new_unchecked(
                EMITS,
                vec![B256::with_last_byte(1)],
                alloy_primitives::Bytes::from(number.to_be_bytes().to_vec()),
            );
            let mut bloom = alloy_primitives::Bloom::default();
            bloom.accrue_log(&log);
            let inner = alloy_consensus::Header {
                number,
                parent_hash: parent,
                logs_bloom: bloom,
                gas_limit: 30_000_000,
                timestamp: 1_700_000_000 + 12 * number,
                ..Default::default()
            };
            let header = alloy_rpc_types_eth::Header::new(inner);
            parent = header.hash;
            let mut block = serde_json::to_value(header).unwrap();
            block["transactions"] = json!([]);
            block
        })
        .collect()
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
    let blocks = chain_with_logs(25);
    let (lies, truth) = (blocks.clone(), blocks.clone());
    let stranger = alloy_primitives::Address::repeat_byte(0x5a);
    let liar = node(move |method, params| ok(with_logs(&lies, method, params, Some(stranger)))).await;
    let good = node(move |method, params| ok(with_logs(&truth, method, params, None))).await;
    let t = failnext::alloy::FailoverTransport::builder([
        failnext::Endpoint::new("liar", liar.url("/")),
        failnext::Endpoint::new("honest", good.url("/")),
    ])
    .attempt_timeout(std::time::Duration::from_secs(2))
    .build()
    .unwrap();
    let filter = alloy_rpc_types_eth::Filter::new();
    let mut follower = t.follow(Start::Number(15)).logs(filter);
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

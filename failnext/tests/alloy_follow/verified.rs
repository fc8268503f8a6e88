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

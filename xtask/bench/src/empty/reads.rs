//! The reads: which block each asks of, how its answer is judged, and one task's reads.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Instant;

use alloy::rpc::client::RpcClient;
use serde_json::{Value, json};

use super::chain::{Chain, hex, quantity, tx_hash};
use super::scenario::{CALL_LIMIT, GAP};

/// How one read went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    Correct,
    Empty,
    Failed,
}

/// Read `i` at true head `head`: its method, its parameters, and the block it asks of.
pub(super) fn read(i: usize, head: u64) -> (&'static str, Value, u64) {
    let n = head - (i / 3 % 3) as u64;
    match i % 3 {
        0 => ("eth_getTransactionReceipt", json!([tx_hash(n)]), n),
        1 => ("eth_getBlockByNumber", json!([hex(n), false]), n),
        _ => ("eth_getLogs", json!([{"fromBlock": hex(n), "toBlock": hex(n)}]), n),
    }
}

/// What an answer to a read of block `n` is.
pub(super) fn judge(answer: &Value, n: u64) -> Verdict {
    let number = |v: &Value, key: &str| quantity(v.get(key));
    let right = match answer {
        Value::Null => return Verdict::Empty,
        Value::Array(logs) if logs.is_empty() => return Verdict::Empty,
        Value::Array(logs) => logs.len() == 1 && number(&logs[0], "blockNumber") == Some(n),
        block if block.get("number").is_some() => number(block, "number") == Some(n),
        receipt => number(receipt, "blockNumber") == Some(n),
    };
    if right { Verdict::Correct } else { Verdict::Failed }
}

/// One task's reads: `(latency ns, verdict)`.
pub(super) async fn lane(
    client: RpcClient,
    chain: Chain,
    next: Arc<AtomicUsize>,
    total: usize,
    until: Instant,
) -> Vec<(u64, Verdict)> {
    let mut out = Vec::new();
    let mut tick = tokio::time::interval(GAP);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let i = next.fetch_add(1, Relaxed);
        if i >= total || Instant::now() >= until {
            break;
        }
        let started = Instant::now();
        let (method, params, n) = read(i, chain.head_at(started));
        let call = client.request::<Value, Value>(method, params);
        let verdict = match tokio::time::timeout(CALL_LIMIT, call).await {
            Ok(Ok(answer)) => judge(&answer, n),
            _ => Verdict::Failed,
        };
        out.push((started.elapsed().as_nanos() as u64, verdict));
    }
    out
}

//! The chain every provider of one contender serves, and what a provider some blocks behind
//! answers of it: its own head, `null` or `[]` for what it has not got yet.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use failnext_loopback::Received;
use serde_json::{Value, json};

use super::scenario::{BASE, BLOCK_TIME};

/// The chain every provider of one contender serves: its head advances from [`BASE`] by one
/// block every [`BLOCK_TIME`] from `started`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Chain {
    started: Instant,
    /// The wall clock at `started` (block timestamps).
    unix: Duration,
}

impl Chain {
    pub(super) fn new() -> Chain {
        Chain {
            started: Instant::now(),
            unix: SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default(),
        }
    }

    /// The true head at `at`.
    pub(super) fn head_at(&self, at: Instant) -> u64 {
        let blocks = at.saturating_duration_since(self.started).as_nanos() / BLOCK_TIME.as_nanos();
        BASE + blocks as u64
    }

    pub(super) fn head(&self) -> u64 {
        self.head_at(Instant::now())
    }

    /// Block `n` as `eth_getBlockByNumber` answers it; its timestamp when it was made.
    pub(super) fn block(&self, n: u64) -> Value {
        let made = self.unix + BLOCK_TIME * (n.saturating_sub(BASE) as u32);
        json!({
            "number": hex(n),
            "hash": block_hash(n),
            "parentHash": block_hash(n.saturating_sub(1)),
            "timestamp": hex(made.as_secs()),
            "transactions": [tx_hash(n)],
        })
    }
}

pub(super) fn hex(n: u64) -> String {
    format!("0x{n:x}")
}

/// The hash of block `n`'s one transaction: `n`, 32 bytes big-endian.
pub(super) fn tx_hash(n: u64) -> String {
    format!("0x{n:064x}")
}

/// The hash of block `n`: `0xbb` and `n` (unlike any transaction's).
pub(super) fn block_hash(n: u64) -> String {
    format!("0xbb{n:062x}")
}

pub(super) fn receipt(n: u64) -> Value {
    json!({
        "transactionHash": tx_hash(n),
        "transactionIndex": "0x0",
        "blockNumber": hex(n),
        "blockHash": block_hash(n),
        "status": "0x1",
        "gasUsed": "0x5208",
        "logs": [],
    })
}

fn transaction(n: u64) -> Value {
    json!({ "hash": tx_hash(n), "blockNumber": hex(n), "blockHash": block_hash(n), "transactionIndex": "0x0" })
}

pub(super) fn log(n: u64) -> Value {
    json!({
        "address": format!("0x{:040x}", 0xe117u64),
        "topics": [],
        "data": "0x",
        "blockNumber": hex(n),
        "blockHash": block_hash(n),
        "transactionHash": tx_hash(n),
        "transactionIndex": "0x0",
        "logIndex": "0x0",
        "removed": false,
    })
}

/// A quantity (`0x..`), or `None`.
pub(super) fn quantity(v: Option<&Value>) -> Option<u64> {
    u64::from_str_radix(v?.as_str()?.strip_prefix("0x")?, 16).ok()
}

/// A block parameter: a number, or the head for a tag (and when absent).
fn block_param(v: Option<&Value>, head: u64) -> Option<u64> {
    match v.and_then(Value::as_str) {
        None | Some("latest" | "pending" | "safe" | "finalized") => Some(head),
        Some("earliest") => Some(0),
        Some(_) => quantity(v),
    }
}

/// The block a hash names: a transaction's (`n`) or a block's (`0xbb` and `n`).
fn hashed(v: Option<&Value>, prefix: &str) -> Option<u64> {
    let text = v?.as_str()?.strip_prefix(prefix)?;
    u64::from_str_radix(text, 16).ok()
}

/// The result of one call to a provider at `head`: `Ok(result)` or `Err(message)` (an unknown
/// method or bad parameters).
fn result(method: &str, params: &[Value], chain: &Chain, head: u64) -> Result<Value, String> {
    let have = |n: u64| n <= head;
    let bad = || format!("invalid params for {method}");
    Ok(match method {
        "eth_chainId" => Value::from("0x1"),
        "eth_blockNumber" => Value::from(hex(head)),
        "eth_getBlockByNumber" => {
            let n = block_param(params.first(), head).ok_or_else(bad)?;
            if have(n) { chain.block(n) } else { Value::Null }
        }
        "eth_getBlockByHash" => {
            let n = hashed(params.first(), "0xbb").ok_or_else(bad)?;
            if have(n) { chain.block(n) } else { Value::Null }
        }
        "eth_getBlockReceipts" => {
            let n = block_param(params.first(), head).ok_or_else(bad)?;
            if have(n) { json!([receipt(n)]) } else { Value::Null }
        }
        "eth_getTransactionReceipt" | "eth_getTransactionByHash" => {
            let n = hashed(params.first(), "0x").ok_or_else(bad)?;
            match (have(n), method) {
                (false, _) => Value::Null,
                (true, "eth_getTransactionReceipt") => receipt(n),
                (true, _) => transaction(n),
            }
        }
        "eth_getLogs" => {
            let filter = params.first().ok_or_else(bad)?;
            let to = block_param(filter.get("toBlock"), head).ok_or_else(bad)?;
            let from = block_param(filter.get("fromBlock"), head).ok_or_else(bad)?;
            if !have(to) || from > to {
                json!([])
            } else {
                Value::Array((from.max(to.saturating_sub(1000))..=to).map(log).collect())
            }
        }
        _ => return Err(format!("the method {method} does not exist/is not available")),
    })
}

/// The JSON-RPC answer to one call by a provider at `head`, and whether it is empty.
fn one(call: &Value, chain: &Chain, head: u64) -> (Value, bool) {
    let id = call.get("id").cloned().unwrap_or_default();
    let method = call.get("method").and_then(Value::as_str).unwrap_or_default();
    let params = call.get("params").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    match result(method, params, chain, head) {
        Ok(result) => {
            let empty = result.is_null() || result.as_array().is_some_and(Vec::is_empty);
            (json!({"jsonrpc": "2.0", "id": id, "result": result}), empty)
        }
        Err(message) => {
            (json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": message}}), false)
        }
    }
}

/// The answer to a request (a call or a batch) by a provider `behind` blocks behind, and
/// whether any of its results is empty.
pub(super) fn answer(req: &Received, chain: &Chain, behind: u64) -> (Value, bool) {
    let head = chain.head().saturating_sub(behind);
    match req.json() {
        Value::Array(calls) => {
            let answers: Vec<(Value, bool)> = calls.iter().map(|c| one(c, chain, head)).collect();
            let empty = answers.iter().any(|a| a.1);
            (Value::Array(answers.into_iter().map(|a| a.0).collect()), empty)
        }
        call => one(&call, chain, head),
    }
}

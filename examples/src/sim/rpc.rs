//! JSON-RPC 2.0: parse a request body (one call or a batch), answer each call from the chain
//! as one provider shows it. No I/O here.

use serde_json::{Value, json};

use crate::sim::chain::Chain;
use crate::sim::hash::{HASH_MARK, block_hash};

/// The chain as one provider shows it: possibly behind, frozen, or under another id.
#[derive(Debug)]
pub(crate) struct View<'a> {
    pub(crate) chain: &'a Chain,
    pub(crate) head: u64,
    /// What `eth_blockNumber` answers: `head`, unless the provider reports a head ahead.
    pub(crate) reported: u64,
    pub(crate) chain_id: u64,
    /// The fork whose hashes it serves: 0 for the chain's own.
    pub(crate) fork: u64,
    /// How many blocks below its head it keeps state for; `None`: all (an archive node).
    pub(crate) archive: Option<u64>,
}

/// The methods whose last (or given) parameter is a block, and that read state at it.
const STATE_READS: [(&str, usize); 6] = [
    ("eth_call", 1),
    ("eth_getBalance", 1),
    ("eth_getStorageAt", 2),
    ("eth_getCode", 1),
    ("eth_getTransactionCount", 1),
    ("eth_getProof", 2),
];

/// The selector of `getReserves()`: an `eth_call` with this data returns the hash of the block
/// it ran against, so that a caller can tell which state answered.
pub const GET_RESERVES: &str = "0x0902f1ac";

impl View<'_> {
    /// The hash this view gives block `number`: the chain id, the fork, a mark and the number,
    /// so that it can be read back ([`View::number_of`]).
    pub(crate) fn hash(&self, number: u64) -> String {
        block_hash(self.chain_id, self.fork, number)
    }

    /// The block this view has under `hash`: one of its own hashes, at or below its head.
    fn number_of(&self, hash: &str) -> Option<u64> {
        let digits = hash.strip_prefix("0x").filter(|d| d.len() == 64)?;
        let word = |i: usize| u64::from_str_radix(&digits[16 * i..16 * (i + 1)], 16).ok();
        let number = word(3)?;
        let ours = word(0)? == self.chain_id && word(1)? == self.fork && word(2)? == HASH_MARK;
        (ours && number <= self.head).then_some(number)
    }

    fn block(&self, number: u64) -> Value {
        json!({
            "number": quantity(number),
            "hash": self.hash(number),
            "parentHash": self.hash(number.saturating_sub(1)),
            "timestamp": quantity(self.chain.timestamp(number)),
            "gasLimit": "0x1c9c380",
            "transactions": [],
            "uncles": [],
        })
    }
}

/// A parsed request body.
#[derive(Debug)]
pub(crate) enum Payload {
    Single(Value),
    Batch(Vec<Value>),
    NotJson,
}

/// A JSON-RPC error: code and message.
type Failure = (i64, String);

/// One valid call that expects a reply.
struct Call<'a> {
    id: &'a Value,
    method: &'a str,
    params: &'a [Value],
}

/// One ether, in wei: every account's balance.
const BALANCE: &str = "0xde0b6b3a7640000";

// ===== impl Payload =====

impl Payload {
    pub(crate) fn parse(body: &[u8]) -> Payload {
        match serde_json::from_slice(body) {
            Ok(Value::Array(calls)) => Payload::Batch(calls),
            Ok(call) => Payload::Single(call),
            Err(_) => Payload::NotJson,
        }
    }

    /// How many of its calls are state reads whose block is not named by hash (EIP-1898).
    pub(crate) fn unpinned_state_reads(&self) -> u64 {
        let calls: &[Value] = match self {
            Payload::Single(call) => std::slice::from_ref(call),
            Payload::Batch(calls) => calls,
            Payload::NotJson => &[],
        };
        let unpinned = |call: &&Value| {
            let method = call.get("method").and_then(Value::as_str).unwrap_or_default();
            let Some((_, at)) = STATE_READS.iter().find(|(m, _)| *m == method) else { return false };
            let block = call.get("params").and_then(|p| p.get(*at));
            block.is_none_or(|b| b.get("blockHash").is_none())
        };
        calls.iter().filter(unpinned).count() as u64
    }

    /// The method of each call that names one, in order.
    pub(crate) fn methods(&self) -> impl Iterator<Item = &str> + '_ {
        let calls: &[Value] = match self {
            Payload::Single(call) => std::slice::from_ref(call),
            Payload::Batch(calls) => calls,
            Payload::NotJson => &[],
        };
        calls.iter().filter_map(|call| call.get("method").and_then(Value::as_str))
    }

    /// The reply body, answering each call with `answer`. `None` when nothing is to be sent
    /// back, because every call was a notification.
    pub(crate) fn reply(&self, answer: impl Fn(&Value) -> Option<Value>) -> Option<Value> {
        match self {
            Payload::NotJson => Some(error(&Value::Null, -32700, "parse error")),
            Payload::Single(call) => answer(call),
            Payload::Batch(calls) if calls.is_empty() => {
                Some(error(&Value::Null, -32600, "invalid request: empty batch"))
            }
            Payload::Batch(calls) => {
                let replies: Vec<Value> = calls.iter().filter_map(answer).collect();
                (!replies.is_empty()).then_some(Value::Array(replies))
            }
        }
    }
}

/// Answers one call from `view`; `None` for a notification (a call without an id).
pub(crate) fn serve(call: &Value, view: &View<'_>) -> Option<Value> {
    let call = match parse_call(call) {
        Ok(Some(call)) => call,
        Ok(None) => return None,
        Err(reply) => return Some(reply),
    };
    Some(match dispatch(call.method, call.params, view) {
        Ok(result) => json!({ "jsonrpc": "2.0", "id": call.id, "result": result }),
        Err((code, message)) => error(call.id, code, &message),
    })
}

/// Answers one call with the given error, whatever it asked; `None` for a notification.
pub(crate) fn fail(call: &Value, code: i64, message: &str) -> Option<Value> {
    match parse_call(call) {
        Ok(Some(call)) => Some(error(call.id, code, message)),
        Ok(None) => None,
        Err(reply) => Some(reply),
    }
}

/// Splits a call into id, method and positional params. `Ok(None)` for a notification,
/// `Err` with the error reply for an invalid request.
fn parse_call(call: &Value) -> Result<Option<Call<'_>>, Value> {
    let id = call.get("id");
    let invalid = |why: &str| error(id.unwrap_or(&Value::Null), -32600, &format!("invalid request: {why}"));
    if !call.is_object() {
        return Err(invalid("not an object"));
    }
    if call.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid("jsonrpc must be \"2.0\""));
    }
    let Some(method) = call.get("method").and_then(Value::as_str) else {
        return Err(invalid("method must be a string"));
    };
    let params: &[Value] = match call.get("params") {
        None | Some(Value::Null) => &[],
        Some(Value::Array(params)) => params,
        Some(_) => return Err(error(id.unwrap_or(&Value::Null), -32602, "params must be an array")),
    };
    Ok(id.map(|id| Call { id, method, params }))
}

fn dispatch(method: &str, params: &[Value], view: &View<'_>) -> Result<Value, Failure> {
    match method {
        "eth_blockNumber" => Ok(quantity(view.reported)),
        "eth_chainId" => Ok(quantity(view.chain_id)),
        "eth_getBalance" => {
            address(params.first())?;
            state(params.get(1), view)?;
            Ok(Value::from(BALANCE))
        }
        "eth_call" => {
            let Some(call) = params.first().filter(|c| c.is_object()) else {
                return Err(invalid_params("missing call object"));
            };
            let number = state(params.get(1), view)?;
            // The simulated contract returns the number of the block it ran against, or, asked
            // for `getReserves()`, that block's hash.
            if call.get("data").and_then(Value::as_str) == Some(GET_RESERVES) {
                return Ok(Value::from(view.hash(number)));
            }
            Ok(Value::from(format!("0x{number:064x}")))
        }
        "eth_getBlockByNumber" => {
            let number = block(params.first(), view)?;
            Ok(view.block(number))
        }
        "eth_getBlockByHash" => {
            let hash = hex_string(params.first()).ok_or_else(|| invalid_params("missing block hash"))?;
            Ok(view.number_of(hash).map_or(Value::Null, |number| view.block(number)))
        }
        "eth_sendRawTransaction" => {
            let raw = hex_string(params.first()).ok_or_else(|| invalid_params("missing raw transaction"))?;
            view.chain.submit(raw).map(Value::from).map_err(|why| (-32000, why.to_owned()))
        }
        "eth_getTransactionReceipt" => {
            let hash = hex_string(params.first())
                .filter(|h| h.len() == 66)
                .ok_or_else(|| invalid_params("missing transaction hash"))?;
            Ok(match view.chain.included_in(hash) {
                Some(number) if number <= view.head => receipt(hash, number),
                _ => Value::Null,
            })
        }
        other => Err((-32601, format!("the method {other} does not exist/is not available"))),
    }
}

/// A state read's block: [`block`], then whether this view still has state there (a node
/// that is not an archive keeps only its newest blocks').
fn state(param: Option<&Value>, view: &View<'_>) -> Result<u64, Failure> {
    let number = block(param, view)?;
    match view.archive {
        Some(depth) if number < view.head.saturating_sub(depth) => {
            Err((-32000, format!("missing trie node {} (path ) state is not available", view.hash(number))))
        }
        _ => Ok(number),
    }
}

/// Resolves a block parameter against the provider's head: absent means `latest`; a tag, a
/// number, or the EIP-1898 object (`{"blockHash": ..., "requireCanonical": ...}` or
/// `{"blockNumber": ...}`). A hash this provider does not have is geth's `header for hash not
/// found`.
fn block(param: Option<&Value>, view: &View<'_>) -> Result<u64, Failure> {
    if let Some(object) = param.filter(|p| p.is_object()) {
        if let Some(hash) = object.get("blockHash") {
            let hash = hash.as_str().ok_or_else(|| invalid_params("blockHash must be a string"))?;
            return view.number_of(hash).ok_or_else(|| (-32000, "header for hash not found".to_owned()));
        }
        return block(object.get("blockNumber"), view);
    }
    let tag = match param {
        None => "latest",
        Some(p) => p.as_str().ok_or_else(|| invalid_params("block must be a string"))?,
    };
    let number = match tag {
        "latest" | "pending" | "safe" | "finalized" => view.head,
        "earliest" => 0,
        _ => tag
            .strip_prefix("0x")
            .and_then(|digits| u64::from_str_radix(digits, 16).ok())
            .ok_or_else(|| invalid_params("bad block number"))?,
    };
    if number > view.head {
        return Err((-32000, "header not found".to_owned()));
    }
    Ok(number)
}

fn address(param: Option<&Value>) -> Result<(), Failure> {
    match hex_string(param) {
        Some(a) if a.len() == 42 => Ok(()),
        _ => Err(invalid_params("bad address")),
    }
}

/// A `0x`-prefixed, non-empty string of hex digits.
fn hex_string(param: Option<&Value>) -> Option<&str> {
    let s = param?.as_str()?;
    let digits = s.strip_prefix("0x")?;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_hexdigit())).then_some(s)
}

fn receipt(hash: &str, number: u64) -> Value {
    json!({
        "transactionHash": hash,
        "transactionIndex": "0x0",
        "blockNumber": quantity(number),
        "blockHash": format!("0x{number:064x}"),
        "status": "0x1",
        "type": "0x2",
        "gasUsed": "0x5208",
        "cumulativeGasUsed": "0x5208",
        "logs": [],
    })
}

fn quantity(n: u64) -> Value {
    Value::from(format!("{n:#x}"))
}

fn invalid_params(why: &str) -> Failure {
    (-32602, format!("invalid params: {why}"))
}

fn error(id: &Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

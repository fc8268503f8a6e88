//! JSON-RPC 2.0: parse a request body (one call or a batch), answer each call from the chain
//! as one provider shows it. No I/O here.

use serde_json::{Value, json};

use crate::sim::chain::Chain;

/// The chain as one provider shows it: possibly behind, frozen, or under another id.
#[derive(Debug)]
pub(crate) struct View<'a> {
    pub(crate) chain: &'a Chain,
    pub(crate) head: u64,
    /// What `eth_blockNumber` answers: `head`, unless the provider reports a head ahead.
    pub(crate) reported: u64,
    pub(crate) chain_id: u64,
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
            block(params.get(1), view)?;
            Ok(Value::from(BALANCE))
        }
        "eth_call" => {
            if !params.first().is_some_and(Value::is_object) {
                return Err(invalid_params("missing call object"));
            }
            // The simulated contract returns the number of the block it ran against.
            let number = block(params.get(1), view)?;
            Ok(Value::from(format!("0x{number:064x}")))
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

/// Resolves a block parameter (absent means `latest`) against the provider's head.
fn block(param: Option<&Value>, view: &View<'_>) -> Result<u64, Failure> {
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

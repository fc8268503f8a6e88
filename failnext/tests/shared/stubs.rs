//! A JSON-RPC stub on the loopback toolkit, shared by the alloy transport suites: each call
//! of a request (a batch call by call) answered as a closure says. Included by path from
//! `failnext/tests/alloy.rs` and `failnext/tests/alloy_routes.rs`.
#![allow(dead_code, reason = "each suite that includes this file uses part of it")]

use std::sync::Arc;

use failnext_loopback::{Action, Received, Reply, Server};
use serde_json::{Value, json};

/// A JSON-RPC stub: `answer(method, params)` gives the reply for each call of a single
/// request (a batch is answered call by call, as a JSON array).
pub(crate) async fn node(answer: impl Fn(&str, &Value) -> Answer + Send + Sync + 'static) -> Server {
    let answer = Arc::new(answer);
    Server::start(Arc::new(move |req: &Received| {
        let Ok(body) = serde_json::from_slice::<Value>(&req.body) else { return Action::Close };
        let one = |call: &Value| -> Result<Value, Box<Action>> {
            let method = call["method"].as_str().unwrap_or_default();
            match answer(method, &call["params"]) {
                Answer::Result(r) => Ok(json!({"jsonrpc": "2.0", "id": call["id"], "result": r})),
                Answer::Error(code, message) => Ok(
                    json!({"jsonrpc": "2.0", "id": call["id"], "error": {"code": code, "message": message}}),
                ),
                Answer::Do(action) => Err(Box::new(action)),
            }
        };
        let reply = match &body {
            Value::Array(calls) => calls.iter().map(one).collect::<Result<Vec<_>, _>>().map(Value::Array),
            call => one(call),
        };
        match reply {
            Ok(v) => Action::Reply(Reply::new(200).json(v.to_string())),
            Err(action) => *action,
        }
    }))
    .await
}

/// What a stub does with one call: a result, a JSON-RPC error, or an action of its own.
pub(crate) enum Answer {
    Result(Value),
    Error(i64, &'static str),
    Do(Action),
}

/// A result.
pub(crate) fn ok(v: Value) -> Answer {
    Answer::Result(v)
}

/// A plain-text answer with HTTP status `code`.
pub(crate) fn status(code: u16) -> Answer {
    Answer::Do(Action::Reply(Reply::new(code).text("unavailable")))
}

//! A tiny JSON-RPC client over a failnext client: build a call, send it, read the reply.

use std::fmt;

use failnext::{EndpointId, ServedBy};
use reqwest::StatusCode;
use reqwest_middleware::{ClientWithMiddleware, RequestBuilder};
use serde_json::{Value, json};

/// A raw transaction no node accepts (it does not decode), so the write examples are
/// harmless against real providers: they answer it with a JSON-RPC error.
pub const DUMMY_RAW_TX: &str = "0xdeadbeef";

/// Builds the JSON-RPC 2.0 call `method(params)` as a POST to `url`, ready for failnext's
/// request options (`allow_failover()`, `prefer_endpoint(..)`, ...) and for [`send`].
pub fn call(client: &ClientWithMiddleware, url: &str, method: &str, params: Value) -> RequestBuilder {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    client.post(url).header("content-type", "application/json").body(body.to_string())
}

/// Sends a call built by [`call`] and reads the whole reply.
///
/// # Errors
///
/// When no HTTP response came back (failnext's error, or reqwest's while reading the body).
/// An HTTP error status or a JSON-RPC error is a [`Reply`], not an error.
pub async fn send(request: RequestBuilder) -> Result<Reply, reqwest_middleware::Error> {
    let resp = request.send().await?;
    let status = resp.status();
    let served_by = resp.extensions().get::<ServedBy>().map(|ServedBy(id)| id.clone());
    let bytes = resp.bytes().await?;
    Ok(Reply { status, served_by, body: serde_json::from_slice(&bytes).ok() })
}

/// The reply to one call: its HTTP status, the endpoint that served it and its JSON body.
#[derive(Debug, Clone)]
pub struct Reply {
    status: StatusCode,
    served_by: Option<EndpointId>,
    body: Option<Value>,
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcError {
    /// The error code.
    pub code: i64,
    /// The error message.
    pub message: String,
}

impl Reply {
    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The id of the endpoint that produced the response, from failnext's [`ServedBy`];
    /// empty if the response did not come through failnext.
    pub fn served_by(&self) -> &str {
        self.served_by.as_ref().map_or("", EndpointId::as_str)
    }

    /// The `result` member: `None` for an error reply, or a body that is not a JSON-RPC reply.
    pub fn result(&self) -> Option<&Value> {
        self.body.as_ref()?.get("result")
    }

    /// The `result` member read as a hex quantity, such as a block number.
    pub fn quantity(&self) -> Option<u64> {
        quantity(self.result()?)
    }

    /// The `error` member.
    pub fn error(&self) -> Option<RpcError> {
        let error = self.body.as_ref()?.get("error")?;
        Some(RpcError {
            code: error.get("code").and_then(Value::as_i64).unwrap_or_default(),
            message: error.get("message").and_then(Value::as_str).unwrap_or_default().to_owned(),
        })
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JSON-RPC error {}: {}", self.code, self.message)
    }
}

/// Reads a JSON-RPC hex quantity (`"0x1b4"`) as a number.
pub fn quantity(value: &Value) -> Option<u64> {
    u64::from_str_radix(value.as_str()?.strip_prefix("0x")?, 16).ok()
}

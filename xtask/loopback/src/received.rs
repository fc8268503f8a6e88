//! [`Received`]: one request as a loopback server read it.

use bytes::Bytes;
use http::{HeaderMap, Method};

/// One request as the server read it: head and whole body (de-chunked by hyper).
#[derive(Clone, Debug, Default)]
pub struct Received {
    /// The request line's method.
    pub method: Method,
    /// The request line's target, as sent (origin form: path and query).
    pub target: String,
    /// The headers, as hyper parsed them (values without surrounding whitespace).
    pub headers: HeaderMap,
    /// The whole body.
    pub body: Bytes,
}

impl Received {
    /// Every value of header `name`, in order.
    pub fn header_values(&self, name: &str) -> Vec<&[u8]> {
        self.headers.get_all(name).iter().map(|v| v.as_bytes()).collect()
    }

    /// The body parsed as JSON, `null` when it is not JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_default()
    }

    /// The JSON-RPC reply to this request (one call) carrying `result` and echoing the call's
    /// `id` (`null` when there is none): HTTP 200, JSON.
    pub fn rpc_result(&self, result: impl Into<serde_json::Value>) -> crate::Reply {
        let id = self.json().get("id").cloned().unwrap_or_default();
        let result = result.into();
        crate::Reply::new(200).json(format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#))
    }
}

//! The simulator's providers really behave as their `Behaviour` says, seen from a real HTTP
//! client (reqwest) and from raw TCP.

mod blocks;
mod faults;
mod keep_alive;
mod methods;
mod views;

use std::time::Duration;

use failnext_examples::sim::{Chain, Provider};
use serde_json::{Value, json};

/// The client every test uses: no proxy, and a timeout so a hanging provider fails the call.
fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().timeout(Duration::from_millis(300)).build().unwrap()
}

/// A manual chain (its head moves only when a test says) with one provider.
async fn one_provider() -> (Chain, Provider) {
    let chain = Chain::manual(31337);
    let provider = chain.provider("p").await.unwrap();
    (chain, provider)
}

fn call_body(method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params })
}

/// Posts a JSON-RPC body and returns the response.
async fn post(provider: &Provider, body: &Value) -> reqwest::Result<reqwest::Response> {
    client().post(provider.url()).json_body(body).send().await
}

/// Calls `method` and returns the parsed reply.
async fn rpc(provider: &Provider, method: &str, params: Value) -> Value {
    let resp = post(provider, &call_body(method, params)).await.unwrap();
    assert_eq!(resp.status(), 200);
    serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap()
}

/// Calls `method` and returns its result, failing the test on a JSON-RPC error.
async fn result(provider: &Provider, method: &str, params: Value) -> Value {
    let reply = rpc(provider, method, params).await;
    assert!(reply.get("error").is_none(), "{method}: {reply}");
    reply["result"].clone()
}

async fn block_number(provider: &Provider) -> u64 {
    let hex = result(provider, "eth_blockNumber", json!([])).await;
    u64::from_str_radix(hex.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

/// `RequestBuilder::json` needs reqwest's `json` feature; this is all the tests need of it.
trait JsonBody {
    fn json_body(self, body: &Value) -> Self;
}

impl JsonBody for reqwest::RequestBuilder {
    fn json_body(self, body: &Value) -> Self {
        self.header("content-type", "application/json").body(body.to_string())
    }
}

//! What the real-node suites share: nodes, endpoints, a client without proxy, a read.
//! Included by path from `failnext/tests/real_nodes.rs` and `examples/tests/real_nodes.rs`
//! (each uses part of it).
#![allow(dead_code, reason = "each suite that includes this file uses part of it")]

use std::time::Duration;

use failnext::{Cooldown, Endpoint, Failover, FailoverBuilder, RequestBuilderExt, ResponseExt};
use failnext_loopback::{Anvil, AnvilOptions};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use serde_json::Value;

pub(crate) const BLOCK_NUMBER: &str = r#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}"#;

/// Every request of a test ends within this, or the test fails.
pub(crate) const BOUND: Duration = Duration::from_secs(10);

pub(crate) async fn node(options: AnvilOptions) -> Anvil {
    match Anvil::start(options).await {
        Ok(anvil) => anvil,
        Err(e) => panic!("{e}"),
    }
}

/// Endpoints named after the nodes, in the given order.
pub(crate) fn endpoints(nodes: &[(&str, &Anvil)]) -> Vec<Endpoint> {
    nodes.iter().map(|(id, node)| Endpoint::new(*id, node.url())).collect()
}

/// A failover over `nodes` whose cooldown is off, so each request shows the rule it tests.
pub(crate) fn failover(nodes: &[(&str, &Anvil)]) -> FailoverBuilder {
    Failover::builder(endpoints(nodes)).cooldown(Cooldown::disabled())
}

pub(crate) fn http() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

pub(crate) fn client(failover: Failover) -> ClientWithMiddleware {
    ClientBuilder::new(http()).with(failover).build()
}

/// A JSON-RPC POST through failnext, allowed to fail over; returns who served it and its result.
pub(crate) async fn read(client: &ClientWithMiddleware, url: &str, body: &'static str) -> (String, Value) {
    let send = client.post(url).header("content-type", "application/json").body(body).allow_failover().send();
    let resp =
        tokio::time::timeout(BOUND, send).await.expect("the read ended").expect("the read was answered");
    assert_eq!(resp.status(), 200);
    let served_by = resp.served_by().expect("failnext names who served").to_string();
    let answer: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
    (served_by, answer["result"].clone())
}

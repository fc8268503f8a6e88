//! Basic failover: a JSON-RPC read goes to the backup while the primary is down.
//!
//! JSON-RPC sends every call as a POST, and failnext never fails a POST over on its own:
//! the read says it is safe to repeat with `allow_failover()`.
//!
//! Run it with `cargo run -p failnext-examples --example basic-failover`.
#![allow(clippy::print_stdout, reason = "an example shows what happened on stdout")]

use std::error::Error;

use failnext::{Failover, RequestBuilderExt};
// Unpublished helpers (simulator, call/send/ensure): see "Copying an example" in examples/README.md.
use failnext_examples::sim::Behaviour;
use failnext_examples::{Network, call, ensure, send};
use reqwest_middleware::ClientBuilder;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    // Simulator set-up: replace `net` with your providers (see examples/README.md).
    let net = Network::from_env().await?;
    println!("{net}");
    // Simulator only: the primary goes down: connecting to it is refused.
    if let Some(sim) = net.sim() {
        sim.primary.set(Behaviour::Down).await?;
    }

    // The endpoints are tried in the order given: primary first, then backup.
    let failover = Failover::builder(net.endpoints()).build()?;
    let client = ClientBuilder::new(net.http_client()?).with(failover).build();

    // Reading the block number is safe to repeat on another provider, so it may fail over.
    let reply = send(call(&client, net.url(), "eth_blockNumber", json!([])).allow_failover()).await?;
    let block = reply.quantity().ok_or("the reply carries no block number")?;
    println!("block number: {block}");
    println!("served by: {}", reply.served_by());

    // Simulator only: checks what happened.
    if let Some(sim) = net.sim() {
        ensure(reply.served_by() == "backup", "the backup served the read")?;
        ensure(sim.primary.total() == 0, "the primary, being down, received nothing")?;
    }
    Ok(())
}

//! Preferred endpoint: look for a transaction's receipt first where the transaction went.
//!
//! This application sends its transactions through the backup (say, a private transaction
//! relay). The primary lags a few blocks, so it learns of the receipt later. The receipt
//! read prefers the endpoint that served the write; preference is not a pin, so the read
//! may still fail over.
//!
//! Run it with `cargo run -p failnext-examples --example preferred-endpoint`.
#![allow(clippy::print_stdout, reason = "an example shows what happened on stdout")]

use std::error::Error;

use failnext::{Failover, RequestBuilderExt};
// Unpublished helpers (simulator, call/send/ensure): see "Copying an example" in examples/README.md.
use failnext_examples::sim::Behaviour;
use failnext_examples::{DUMMY_RAW_TX, Network, call, ensure, send};
use reqwest_middleware::ClientBuilder;
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    // Simulator set-up: replace `net` with your providers (see examples/README.md).
    let net = Network::from_env().await?;
    println!("{net}");
    // Simulator only: injects the fault.
    if let Some(sim) = net.sim() {
        sim.primary.set(Behaviour::Lagging(3)).await?;
    }

    let failover = Failover::builder(net.endpoints()).build()?;
    let client = ClientBuilder::new(net.http_client()?).with(failover).build();

    // The write goes to the backup, and only there.
    let send_tx = call(&client, net.url(), "eth_sendRawTransaction", json!([DUMMY_RAW_TX]));
    let write = send(send_tx.prefer_endpoint("backup").deny_failover()).await?;
    println!("write served by: {}", write.served_by());
    // Real providers reject the dummy transaction; the read then asks for a hash no one has.
    let zero_hash = format!("0x{}", "0".repeat(64));
    let hash = write.result().cloned().unwrap_or(Value::from(zero_hash));

    // Simulator only: a block is mined: the transaction is in it.
    if let Some(sim) = net.sim() {
        sim.chain.advance(1);
    }

    // The receipt read tries the endpoint that served the write first, then the others.
    let receipt = || call(&client, net.url(), "eth_getTransactionReceipt", json!([hash])).allow_failover();
    let read = send(receipt().prefer_endpoint(write.served_by())).await?;
    println!("receipt read served by: {}", read.served_by());
    let found = read.result().is_some_and(|r| !r.is_null());
    println!("receipt found: {found}");

    ensure(write.served_by() == "backup", "the backup served the write")?;
    ensure(read.served_by() == write.served_by(), "the receipt read went where the write went")?;
    // Simulator only: the same read without the preference, for comparison.
    if net.sim().is_some() {
        // Without the preference the lagging primary answers first, and has no receipt yet.
        let plain = send(receipt()).await?;
        let plain_found = plain.result().is_some_and(|r| !r.is_null());
        println!("without preference: served by {}, receipt found: {plain_found}", plain.served_by());
        ensure(found && !plain_found, "only the preferred endpoint had the receipt")?;
    }
    Ok(())
}

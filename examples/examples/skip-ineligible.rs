//! Skip ineligible endpoints: the application rules a provider out, and requests skip it.
//!
//! The `eligible` closure is asked about each endpoint at the start of every request. Here
//! it reads a flag the application sets when it finds the primary unsuitable, for example
//! too far behind the chain (`failnext-blocklag` makes that decision for you).
//!
//! Run it with `cargo run -p failnext-examples --example skip-ineligible`.
#![allow(clippy::print_stdout, reason = "an example shows what happened on stdout")]

use std::error::Error;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use failnext::{EndpointId, Failover, RequestBuilderExt};
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
    // Simulator only: the primary falls 50 blocks behind. It still answers, with old data.
    if let Some(sim) = net.sim() {
        sim.primary.set(Behaviour::Lagging(50)).await?;
    }

    let primary_suitable = Arc::new(AtomicBool::new(true));
    let flag = primary_suitable.clone();
    let failover = Failover::builder(net.endpoints())
        // A closure needs its argument type written out.
        .eligible(move |id: &EndpointId| id != "primary" || flag.load(Ordering::Relaxed))
        .build()?;
    let client = ClientBuilder::new(net.http_client()?).with(failover).build();

    // The application finds the primary unsuitable.
    primary_suitable.store(false, Ordering::Relaxed);
    println!("primary marked ineligible");

    let reply = send(call(&client, net.url(), "eth_blockNumber", json!([])).allow_failover()).await?;
    println!("block number: {}", reply.quantity().ok_or("the reply carries no block number")?);
    println!("served by: {}", reply.served_by());

    ensure(reply.served_by() == "backup", "the ineligible primary was skipped")?;
    // Simulator only: checks what happened.
    if let Some(sim) = net.sim() {
        println!("primary received: {} requests", sim.primary.total());
        ensure(sim.primary.total() == 0, "the primary received nothing")?;
    }
    Ok(())
}

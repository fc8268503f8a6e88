//! Conservative write: a transaction is never sent to a second provider.
//!
//! The primary answers 503. Had it received the transaction before failing, sending it to
//! the backup too could broadcast it twice, so the write denies failover: the caller gets
//! the primary's 503 and decides what to do.
//!
//! Run it with `cargo run -p failnext-examples --example conservative-write`.
#![allow(clippy::print_stdout, reason = "an example shows what happened on stdout")]

use std::error::Error;

use failnext::{Failover, RequestBuilderExt};
// Unpublished helpers (simulator, call/send/ensure): see "Copying an example" in examples/README.md.
use failnext_examples::sim::Behaviour;
use failnext_examples::{DUMMY_RAW_TX, Network, call, ensure, send};
use reqwest_middleware::ClientBuilder;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    // Simulator set-up: replace `net` with your providers (see examples/README.md).
    let net = Network::from_env().await?;
    println!("{net}");
    // Simulator only: the primary's load balancer answers 503 Service Unavailable.
    if let Some(sim) = net.sim() {
        sim.primary.set(Behaviour::Status(503)).await?;
    }

    let failover = Failover::builder(net.endpoints()).build()?;
    let client = ClientBuilder::new(net.http_client()?).with(failover).build();

    // A POST is denied failover by default already; saying so keeps the write safe even if
    // the client later gets a policy that allows POSTs. The dummy transaction is one that
    // real providers reject, so running this against them broadcasts nothing.
    let send_tx = call(&client, net.url(), "eth_sendRawTransaction", json!([DUMMY_RAW_TX]));
    let reply = send(send_tx.deny_failover()).await?;
    println!("status: {}", reply.status());
    println!("served by: {}", reply.served_by());
    if let Some(error) = reply.error() {
        println!("provider answered: {error}");
    }

    ensure(reply.served_by() == "primary", "only the primary handled the write")?;
    // Simulator only: checks what happened.
    if let Some(sim) = net.sim() {
        let at_backup = sim.backup.count("eth_sendRawTransaction");
        println!("backup received eth_sendRawTransaction: {at_backup} times");
        ensure(reply.status() == 503, "the caller got the primary's 503")?;
        ensure(at_backup == 0, "the backup never received the write")?;
    }
    Ok(())
}

//! Exclude an endpoint: retry a read without the provider whose answer was a JSON-RPC error.
//!
//! A JSON-RPC error comes back inside an HTTP 200, which failnext returns as it is: it does
//! not read JSON-RPC. The application does, and asks again, excluding the endpoint named
//! by `ServedBy`.
//!
//! Run it with `cargo run -p failnext-examples --example exclude-endpoint`.
#![allow(clippy::print_stdout, reason = "an example shows what happened on stdout")]

use std::error::Error;

use failnext::{Failover, RequestBuilderExt};
// Unpublished helpers (simulator, call/send/ensure): see "Copying an example" in examples/README.md.
use failnext_examples::sim::Behaviour;
use failnext_examples::{Network, call, ensure, send};
use reqwest_middleware::ClientBuilder;
use serde_json::json;

const ACCOUNT: &str = "0x0000000000000000000000000000000000000001";

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    // Simulator set-up: replace `net` with your providers (see examples/README.md).
    let net = Network::from_env().await?;
    println!("{net}");
    // Simulator only: the primary's node answers as a node that lost its state does.
    if let Some(sim) = net.sim() {
        let error = Behaviour::JsonRpcError { code: -32000, message: "header not found".to_owned() };
        sim.primary.set(error).await?;
    }

    let failover = Failover::builder(net.endpoints()).build()?;
    let client = ClientBuilder::new(net.http_client()?).with(failover).build();

    let balance = || call(&client, net.url(), "eth_getBalance", json!([ACCOUNT, "latest"])).allow_failover();
    let first = send(balance()).await?;
    match first.error() {
        Some(error) => println!("{} answered: {error}", first.served_by()),
        None => println!("{} answered without error", first.served_by()),
    }

    // Ask again, excluding the endpoint that answered first.
    let retry = send(balance().exclude_endpoints([first.served_by()])).await?;
    println!("retried without: {}", first.served_by());
    println!("served by: {}", retry.served_by());
    if let Some(result) = retry.result() {
        println!("balance: {result}");
    }

    ensure(retry.served_by() != first.served_by(), "the retry went to another provider")?;
    // Simulator only: checks what happened.
    if net.sim().is_some() {
        ensure(first.error().is_some(), "the primary answered with a JSON-RPC error")?;
        ensure(retry.served_by() == "backup" && retry.result().is_some(), "the backup answered")?;
    }
    Ok(())
}

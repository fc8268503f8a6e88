//! The blocklag pairing: a lag monitor decides which providers failnext may use.
//!
//! The primary falls 10 blocks behind the backup. It still answers `200 OK`, so failnext on
//! its own would keep using it. A `failnext_blocklag::Monitor` compares the providers' block
//! heights; given to failnext as its eligibility, it makes reads skip the laggard. The
//! monitor checks when you call `check()`: here once, in a bot on an interval (see the
//! `blocklag-continuous` example).
//!
//! Run it with `cargo run -p failnext-examples --example blocklag-pairing`.
#![allow(clippy::print_stdout, reason = "an example shows what happened on stdout")]

use std::error::Error;
use std::time::Duration;

use failnext::{Failover, RequestBuilderExt};
use failnext_blocklag::Monitor;
// Unpublished helpers (simulator, call/send/ensure): see "Copying an example" in examples/README.md.
use failnext_examples::monitoring::probe_client;
use failnext_examples::sim::Behaviour;
use failnext_examples::{Network, call, ensure, send};
use reqwest_middleware::ClientBuilder;
use serde_json::json;

/// A provider more than this many blocks behind the highest one is not used.
const MAX_LAG: u64 = 3;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    // Simulator set-up: replace `net` with your providers (see examples/README.md).
    let net = Network::from_env().await?;
    println!("{net}");
    // Simulator only: the primary falls 10 blocks behind. It still answers, with old data.
    if let Some(sim) = net.sim() {
        sim.primary.set(Behaviour::Lagging(10)).await?;
    }

    // The monitor probes each provider directly with its own plain client, never through
    // failnext (which would reroute a lagging provider's probe to another one).
    let monitor = Monitor::builder(net.endpoints())
        .max_lag(MAX_LAG)
        .probe_timeout(Duration::from_secs(5))
        // Simulator set-up: no proxy on loopback; for your providers the default client will do.
        .client(probe_client(net.sim().is_some())?)
        .build()?;

    // One check: every provider's eth_blockNumber at once, compared with the highest.
    if let Err(e) = monitor.check().await {
        // Some probes failed; if none succeeded, nothing was published.
        println!("check: {e}");
        if !e.published() {
            return Err(e.into());
        }
    }
    if let Some(snapshot) = monitor.snapshot() {
        for entry in snapshot.entries() {
            match (entry.height(), entry.lag()) {
                (Some(height), Some(lag)) => println!("{}: block {height}, {lag} behind", entry.endpoint()),
                _ => println!("{}: no height", entry.endpoint()),
            }
        }
    }
    let primary_eligible = monitor.eligible("primary");
    let backup_eligible = monitor.eligible("backup");
    println!("primary eligible: {primary_eligible}");
    println!("backup eligible: {backup_eligible}");

    // The monitor is failnext's eligibility: requests skip what it rules out.
    let failover = Failover::builder(net.endpoints()).eligible(monitor.clone()).build()?;
    let client = ClientBuilder::new(net.http_client()?).with(failover).build();

    // Eligibility says which providers may serve; a balance read also says it may be
    // repeated on another provider.
    let address = "0x0000000000000000000000000000000000000000";
    let read = call(&client, net.url(), "eth_getBalance", json!([address, "latest"]));
    let reply = send(read.allow_failover()).await?;
    let balance = reply.quantity().ok_or("the reply carries no balance")?;
    println!("balance: {balance} wei");
    println!("served by: {}", reply.served_by());

    // Simulator only: checks what happened.
    if let Some(sim) = net.sim() {
        ensure(!primary_eligible, "the lagging primary is ineligible")?;
        ensure(backup_eligible, "the backup is eligible")?;
        ensure(reply.served_by() == "backup", "the backup served the read")?;
        ensure(sim.primary.count("eth_getBalance") == 0, "the primary never saw the read")?;
    }
    Ok(())
}

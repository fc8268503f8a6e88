//! The paired transport in the fewest lines: a failnext-blocklag `Monitor` on its own
//! schedule, given to `FailoverTransport::builder(..).monitor(..)`.
//!
//! `monitor.spawn(interval)` starts the monitor's probes and returns its `MonitorHandle`, a
//! `HealthSource`: the transport owns it, so the probes run as long as the transport lives.
//! Paired, reads skip the providers the monitor rules out, go to the fastest fit one, and never
//! go back below a head already returned. Here the primary falls 10 blocks behind: it still
//! answers `200 OK`, with old data, and the reads go to the backup; then it goes down, and they
//! still do.
//!
//! Run it with `cargo run -p failnext-examples --features alloy --example alloy-paired`.
#![allow(clippy::print_stdout, reason = "an example shows what happened on stdout")]

use std::error::Error;
use std::time::Duration;

use alloy::providers::{Provider, ProviderBuilder};
use alloy::rpc::client::RpcClient;
use failnext::alloy::{CallExt, FailoverTransport, ServedByCell};
use failnext_blocklag::Monitor;
// Unpublished helpers (simulator, ensure): see "Copying an example" in examples/README.md.
use failnext_examples::sim::Behaviour;
use failnext_examples::{Network, ensure};

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    // Simulator set-up: replace `net` with your providers (see examples/README.md).
    let net = Network::from_env().await?;
    println!("{net}");
    // Simulator only: the primary serves the chain as it was 10 blocks ago.
    if let Some(sim) = net.sim() {
        sim.primary.set(Behaviour::Lagging(10)).await?;
    }

    let endpoints = net.endpoints();
    let monitor = Monitor::builder(endpoints.clone()).max_lag(3).build()?;
    let transport =
        FailoverTransport::builder(endpoints).monitor(monitor.spawn(Duration::from_millis(200))).build()?;
    let provider = ProviderBuilder::new().connect_client(RpcClient::new(transport, false));

    // Until its first probes the monitor admits every provider (it fails open): wait until
    // it has every provider's height.
    wait_until(|| monitor.snapshot().is_some_and(|s| s.entries().iter().all(|e| e.height().is_some()))).await;
    println!("primary eligible: {}", monitor.eligible("primary"));
    let (block, served) = block_number(&provider).await?;
    println!("lagging primary: block number {block}, served by: {served}");

    // Simulator only: checks what happened, then the primary goes down.
    if let Some(sim) = net.sim() {
        ensure(!monitor.eligible("primary"), "the lagging primary is ineligible")?;
        ensure(served == "backup", "the backup served the read")?;
        ensure(block + 3 >= sim.chain.head(), "the read is at the chain's head")?;
        sim.primary.set(Behaviour::Down).await?;
    }
    let (later, served) = block_number(&provider).await?;
    println!("primary down: block number {later}, served by: {served}");
    // Simulator only: checks what happened.
    if net.sim().is_some() {
        ensure(served == "backup", "the backup served the read")?;
        ensure(later >= block, "a read never goes back below a head already returned")?;
    }
    Ok(())
}

/// `eth_blockNumber` through `provider`, with the endpoint that answered it.
async fn block_number(provider: &impl Provider) -> Result<(u64, String), Box<dyn Error>> {
    let served = ServedByCell::new();
    let block = provider
        .get_block_number()
        .map_meta(|meta| meta.record_served_by(&served))
        .unwrap_or_else(|call| call)
        .await?;
    Ok((block, served.get().map_or_else(|| "?".to_owned(), |id| id.to_string())))
}

/// Waits (at most 5 s) until `done` holds.
async fn wait_until(done: impl Fn() -> bool) {
    for _ in 0..100 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

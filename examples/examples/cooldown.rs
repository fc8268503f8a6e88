//! Cooldown: after three failures in a row, the primary is skipped for a while.
//!
//! The primary answers 503. The first three reads try it and fail over to the backup; the
//! third failure starts its cooldown, so the next reads go straight to the backup. The
//! `on_event` hook shows each skip.
//!
//! Run it with `cargo run -p failnext-examples --example cooldown`.
#![allow(clippy::print_stdout, reason = "an example shows what happened on stdout")]

use std::error::Error;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use failnext::{Cooldown, Event, Failover, RequestBuilderExt};
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
    // Simulator only: injects the fault.
    if let Some(sim) = net.sim() {
        sim.primary.set(Behaviour::Status(503)).await?;
    }

    let skips = Arc::new(AtomicUsize::new(0));
    let counted = skips.clone();
    let failover = Failover::builder(net.endpoints())
        // The reference rule (the default of 0.1): 3 failures in a row, then 30 s of cooldown.
        // The default since 0.2, `Cooldown::adaptive()`, also opens after 3 failures but for
        // 250 ms at first, then lets one trial request through (see "The breaker" in the docs).
        .cooldown(Cooldown::new(3, Duration::from_secs(30)))
        .on_event(move |event| {
            if let Event::CooldownSkip { endpoint } = event {
                println!("  skipped {endpoint}: cooling down");
                counted.fetch_add(1, Ordering::Relaxed);
            }
        })
        .build()?;
    // The client gets a clone; clones share the cooldown state.
    let client = ClientBuilder::new(net.http_client()?).with(failover.clone()).build();

    for n in 1..=5 {
        let reply = send(call(&client, net.url(), "eth_blockNumber", json!([])).allow_failover()).await?;
        let cooling = failover.is_cooling_down("primary");
        println!("read {n}: served by: {}, primary cooling down: {cooling}", reply.served_by());
    }

    // Simulator only: checks what happened.
    if let Some(sim) = net.sim() {
        let tried = sim.primary.count("eth_blockNumber");
        println!("primary received {tried} of 5 reads");
        ensure(tried == 3, "the primary got three reads, then cooled down")?;
        ensure(skips.load(Ordering::Relaxed) == 2, "the last two reads skipped the primary")?;
    }
    Ok(())
}

//! A slow primary under the transport's three bounds, each set explicitly: a hedge, a
//! failover budget and a deadline.
//!
//! `FailoverTransport::builder` hedges, budgets and bounds every request by default (the p95
//! hedge, one failover per request plus 10 a second, 30 s); here each is set by hand, small
//! enough to watch:
//!
//! - `.hedge(Hedge::percentile(0.95).fallback(50 ms))`: a read whose first attempt has not
//!   answered after the p95 of the primary's recent latencies (50 ms until it has 16 of them)
//!   is raced by the backup; the first answer wins. Each hedge is an `Event::Hedge`, printed by
//!   the event hook.
//! - `.failover_budget(Budget::new(0.1).min_per_sec(0).max_balance(2))`: a hedge is a failover
//!   attempt and takes a token; the budget starts with 2 and each request adds a tenth of one.
//!   Two reads are hedged, the next ones wait for the slow primary.
//! - `.deadline(500 ms)`: the primary then hangs; with the budget spent nothing else is tried,
//!   and the read fails when its deadline passes, not after the 10 s attempt timeout.
//!
//! Run it with `cargo run -p failnext-examples --features alloy --example alloy-hedge-budget-deadline`.
#![allow(clippy::print_stdout, reason = "an example shows what happened on stdout")]

use std::error::Error;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use alloy::providers::{Provider, ProviderBuilder};
use alloy::rpc::client::RpcClient;
use failnext::alloy::{CallExt, FailoverTransport, Failure, ServedByCell};
use failnext::{Budget, Event, Hedge};
// Unpublished helpers (simulator, ensure): see "Copying an example" in examples/README.md.
use failnext_examples::sim::Behaviour;
use failnext_examples::{Network, ensure};

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    // Simulator set-up: replace `net` with your providers (see examples/README.md).
    let net = Network::from_env().await?;
    println!("{net}");
    // Simulator only: the primary answers correctly, 300 ms late.
    if let Some(sim) = net.sim() {
        sim.primary.set(Behaviour::Slow(Duration::from_millis(300))).await?;
    }

    let hedges = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&hedges);
    let transport = FailoverTransport::builder(net.endpoints())
        .hedge(Hedge::percentile(0.95).fallback(Duration::from_millis(50)))
        .failover_budget(Budget::new(0.1).min_per_sec(0).max_balance(2))
        .deadline(Duration::from_millis(500))
        .on_event(move |event| {
            // The hook runs on the request's task, synchronously: keep it short.
            if let Event::Hedge { endpoint, first, after, .. } = event {
                counted.fetch_add(1, Ordering::Relaxed);
                println!("  hedge: {first} had not answered after {after:?}, {endpoint} asked too");
            }
        })
        .build()?;
    let provider = ProviderBuilder::new().connect_client(RpcClient::new(transport, false));

    let mut served_by = Vec::new();
    for read in 1..=4 {
        let served = ServedByCell::new();
        let started = Instant::now();
        let block = provider
            .get_block_number()
            .map_meta(|meta| meta.record_served_by(&served))
            .unwrap_or_else(|call| call)
            .await?;
        let served = served.get().map_or_else(|| "?".to_owned(), |id| id.to_string());
        println!("read {read}: block {block}, served by {served} in {:.0?}", started.elapsed());
        served_by.push(served);
    }
    println!("hedges: {}", hedges.load(Ordering::Relaxed));

    // Simulator only: checks what happened, then the primary hangs.
    if let Some(sim) = net.sim() {
        ensure(hedges.load(Ordering::Relaxed) == 2, "two hedges, as the budget allowed")?;
        ensure(
            served_by == ["backup", "backup", "primary", "primary"],
            "the hedges won, then the primary answered",
        )?;
        sim.primary.set(Behaviour::Hang).await?;
    }
    let started = Instant::now();
    let hung = provider.get_block_number().await;
    let elapsed = started.elapsed();
    match &hung {
        Ok(block) => println!("read 5: block {block} in {elapsed:.0?}"),
        Err(err) => match Failure::find(err).filter(Failure::is_read).and_then(|f| f.error()) {
            Some(e) => println!(
                "read 5: failed after {elapsed:.0?}: deadline passed: {}, budget spent: {}",
                e.is_deadline(),
                e.is_budget_spent()
            ),
            _ => println!("read 5: {err}"),
        },
    }
    // Simulator only: checks what happened.
    if net.sim().is_some() {
        let deadline = hung
            .as_ref()
            .err()
            .and_then(Failure::find)
            .and_then(|f| f.error())
            .is_some_and(|e| e.is_deadline());
        ensure(deadline, "the hung read ended at its deadline")?;
        ensure(elapsed < Duration::from_secs(2), "within the deadline, not the attempt timeout")?;
    }
    Ok(())
}

//! An alloy `Provider` on failnext's `FailoverTransport`: reads fail over, a raw transaction
//! never reaches a second provider, and one call can be steered.
//!
//! `failnext::alloy::FailoverTransport` (feature `alloy` of failnext) is an alloy transport:
//! two lines give a `Provider` that sends every JSON-RPC call through failnext. It decides
//! from each call's method whether it may fail over (`MethodTable`: reads may, writes and
//! signing never do). The primary answers 503 to everything here, and:
//!
//! - `eth_blockNumber` is served by the backup; a `ServedByCell` in the call's metadata says so;
//! - `eth_sendRawTransaction` goes to the primary only. A 503 may come from a gateway that
//!   forwarded the transaction already, so the transport returns `PossiblySubmitted` with the
//!   hash computed from the raw bytes: reconcile by that hash (the example `alloy-write`),
//!   never sign again. The backup never sees the transaction;
//! - per call, `CallExt` on the call's metadata (`map_meta`): `exclude_endpoints(["primary"])`
//!   sends a read straight to the backup, `deny_failover()` keeps a read on the primary, so
//!   its 503 comes back as alloy's HTTP error.
//!
//! Run it with `cargo run -p failnext-examples --features alloy --example alloy-provider`.
#![allow(clippy::print_stdout, reason = "an example shows what happened on stdout")]

use std::error::Error;

use alloy::providers::{Provider, ProviderBuilder};
use alloy::rpc::client::RpcClient;
use failnext::alloy::{CallExt, FailoverTransport, Failure, FailureKind, ServedByCell};
// Unpublished helpers (simulator, ensure): see "Copying an example" in examples/README.md.
use failnext_examples::sim::Behaviour;
use failnext_examples::{Network, ensure};

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    // Simulator set-up: replace `net` with your providers (see examples/README.md).
    let net = Network::from_env().await?;
    println!("{net}");
    // Simulator only: the primary answers 503 Service Unavailable to everything.
    if let Some(sim) = net.sim() {
        sim.primary.set(Behaviour::Status(503)).await?;
    }

    let transport = FailoverTransport::new(net.endpoints())?;
    let provider = ProviderBuilder::new().connect_client(RpcClient::new(transport, false));

    // A read may fail over: the backup answers while the primary is down.
    let served = ServedByCell::new();
    let block = provider
        .get_block_number()
        .map_meta(|meta| meta.record_served_by(&served))
        .unwrap_or_else(|call| call) // `Err` gives back a call whose metadata cannot be set
        .await?;
    println!("block number: {block}, served by: {}", name(&served));
    ensure(
        net.sim().is_none() || served.get().is_some_and(|id| id == "backup"),
        "the backup served the read",
    )?;

    // A raw transaction never fails over: it reaches the primary only. These bytes do not
    // decode, so a real node rejects them and nothing is broadcast.
    let raw = [0xde, 0xad, 0xbe, 0xef];
    let sent = provider.send_raw_transaction(&raw).await;
    match &sent {
        Ok(pending) => println!("write: accepted, transaction {}", pending.tx_hash()),
        Err(err) => match Failure::find(err).map(|f| (f.kind(), f)) {
            // The answer was lost (here a 503 that a gateway may have sent after forwarding
            // the transaction): reconcile by this hash, do not sign again.
            Some((FailureKind::PossiblySubmitted, lost)) => println!(
                "write: possibly submitted to {}, reconcile by hash {}",
                lost.endpoint().map_or("?", |id| id.as_str()),
                lost.hash().map(|h| h.to_string()).unwrap_or_default()
            ),
            // Provably never left (connection refused): safe to send again.
            Some((FailureKind::NeverSent, never)) => println!("write: never sent ({never})"),
            // The node answered with a JSON-RPC error: it refused the transaction.
            _ => println!("write: refused by the node: {err}"),
        },
    }
    // Simulator only: checks what happened.
    if let Some(sim) = net.sim() {
        let lost = sent.as_ref().err().and_then(Failure::find).filter(Failure::is_possibly_submitted);
        ensure(
            lost.is_some_and(|l| l.hash().is_some()),
            "the lost write is PossiblySubmitted, with its hash",
        )?;
        let at_backup = sim.backup.count("eth_sendRawTransaction");
        println!("backup received eth_sendRawTransaction: {at_backup} times");
        ensure(at_backup == 0, "the write never reached the backup")?;
    }

    // Per call: never ask the primary for this read.
    let served = ServedByCell::new();
    let chain_id = provider
        .get_chain_id()
        .map_meta(|meta| meta.exclude_endpoints(["primary"]).record_served_by(&served))
        .unwrap_or_else(|call| call)
        .await?;
    println!("chain id: {chain_id}, primary excluded, served by: {}", name(&served));

    // Per call: this read must not fail over, so the primary's answer comes back.
    let denied =
        provider.get_block_number().map_meta(|meta| meta.deny_failover()).unwrap_or_else(|call| call).await;
    match &denied {
        Ok(block) => println!("read with failover denied: block number {block}"),
        Err(err) => println!("read with failover denied: {err}"),
    }
    // Simulator only: checks what happened.
    if let Some(sim) = net.sim() {
        ensure(served.get().is_some_and(|id| id == "backup"), "the excluded primary did not serve")?;
        ensure(sim.primary.count("eth_chainId") == 0, "the excluded primary was not asked")?;
        ensure(denied.is_err(), "the denied read got the primary's 503")?;
        ensure(sim.backup.count("eth_blockNumber") == 1, "the denied read never reached the backup")?;
    }
    Ok(())
}

/// The endpoint a [`ServedByCell`] holds, for printing.
fn name(cell: &ServedByCell) -> String {
    cell.get().map_or_else(|| "?".to_owned(), |id| id.to_string())
}

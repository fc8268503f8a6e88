//! A read bundle at the head: every state read of one decision answered at one block, pinned
//! by its hash, whichever provider answers and however far the chain has moved on.
//!
//! `transport.bundle_at_head().await?` reads the head block through the transport (with a
//! paired monitor: the highest block every admitted provider has; here, without one, the
//! `latest` block of the provider that answers) and returns a `Bundle`, itself an alloy
//! transport. A provider on it sends `eth_call`, `eth_getBalance` and the other state reads
//! with the reference's hash as their block (EIP-1898), even when alloy asks for `latest` or
//! `pending`. The simulated contract answers an `eth_call` with the number of the block it ran
//! against, which shows the pin:
//!
//! 1. the chain moves 5 blocks on: through the bundle the call still runs at the reference,
//!    through the plain provider at the new head;
//! 2. the primary goes down: the bundle's read fails over to the backup and is still answered
//!    at the reference.
//!
//! Run it with `cargo run -p failnext-examples --features alloy --example alloy-bundle`.
#![allow(clippy::print_stdout, reason = "an example shows what happened on stdout")]

use std::error::Error;

use alloy::network::TransactionBuilder;
use alloy::primitives::{Address, Bytes, U256};
use alloy::providers::{Provider, ProviderBuilder};
use alloy::rpc::client::RpcClient;
use alloy::rpc::types::TransactionRequest;
use failnext::alloy::{CallExt, FailoverTransport, ServedByCell};
// Unpublished helpers (simulator, ensure): see "Copying an example" in examples/README.md.
use failnext_examples::sim::Behaviour;
use failnext_examples::{Network, ensure};

/// The contract the decision reads (the simulator answers any address).
const POOL: Address = Address::repeat_byte(0x11);

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    // Simulator set-up: replace `net` with your providers (see examples/README.md).
    let net = Network::from_env().await?;
    println!("{net}");

    let transport = FailoverTransport::builder(net.endpoints()).build()?;
    let plain = ProviderBuilder::new().connect_client(RpcClient::new(transport.clone(), false));

    let bundle = transport.bundle_at_head().await?;
    let reference = bundle.reference();
    println!("bundle at {reference}");
    let pinned = ProviderBuilder::new().connect_client(RpcClient::new(bundle.clone(), false));

    // Simulator only: the chain moves on by 5 blocks.
    if let Some(sim) = net.sim() {
        sim.chain.advance(5);
    }
    let call = TransactionRequest::default().with_to(POOL);
    let balance = pinned.get_balance(POOL).await?;
    let at_reference = ran_at(&pinned.call(call.clone()).await?);
    let at_head = ran_at(&plain.call(call.clone()).await?);
    println!("balance at the reference: {balance} wei");
    println!(
        "eth_call through the bundle ran at block {at_reference}, through the plain provider at {at_head}"
    );

    // Simulator only: checks what happened, then the primary goes down.
    if let Some(sim) = net.sim() {
        ensure(at_reference == reference.number, "the bundle's call ran at the reference")?;
        ensure(at_head >= reference.number + 5, "the plain call ran at the new head")?;
        sim.primary.set(Behaviour::Down).await?;
    }
    let served = ServedByCell::new();
    // The same call by its JSON-RPC name, to set its metadata (`Provider::call` has none).
    let answer: Bytes = pinned
        .client()
        .request("eth_call", (call, "latest"))
        .map_meta(|meta| meta.record_served_by(&served))
        .await?;
    let failed_over = ran_at(&answer);
    let served = served.get().map_or_else(|| "?".to_owned(), |id| id.to_string());
    println!("primary down: eth_call through the bundle ran at block {failed_over}, served by: {served}");
    println!("missed the reference: {:?}", bundle.missed());
    // Simulator only: checks what happened.
    if net.sim().is_some() {
        ensure(served == "backup", "the backup answered")?;
        ensure(failed_over == reference.number, "still at the reference")?;
    }
    Ok(())
}

/// The block number the simulated contract answers with (against a real node: the low 8
/// bytes of whatever the call returned).
fn ran_at(answer: &[u8]) -> u64 {
    U256::from_be_slice(answer).saturating_to()
}

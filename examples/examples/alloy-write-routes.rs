//! Where writes go: only to the endpoints named by `writes_to`, or, for a signed raw
//! transaction, to every endpoint named by `broadcast_to` at once, with one outcome per
//! endpoint.
//!
//! Three simulated providers of one chain: `public` (first: reads go there), `relay` and
//! `backup`.
//!
//! 1. `FailoverTransport::builder(..).writes_to(["relay"])`: reads still use every endpoint
//!    (served by `public`), a raw transaction reaches the relay only. With the relay down the
//!    write is `NeverSent`: it is not moved to another endpoint, whatever their health.
//! 2. `.broadcast_to(["relay", "public", "backup"])`: the same bytes go to all three at once;
//!    the backup answers HTTP 503 (a gateway that may have forwarded it). The call succeeds,
//!    because at least one accepted it, and `transport.broadcast_outcome(&hash)` says what
//!    each endpoint did: accepted (the second node of the chain answers "already known",
//!    which is an acceptance of this very transaction), possibly submitted, refused or never
//!    sent.
//!
//! It needs three providers, so it runs on the simulator only (`ETH_RPC_*` are not read).
//! The simulator takes any bytes as a transaction; the dummy ones here are not signed.
//!
//! Run it with `cargo run -p failnext-examples --features alloy --example alloy-write-routes`.
#![allow(clippy::print_stdout, reason = "an example shows what happened on stdout")]

use std::error::Error;
use std::time::Duration;

use alloy::primitives::keccak256;
use alloy::providers::{Provider, ProviderBuilder};
use alloy::rpc::client::RpcClient;
use failnext::alloy::{CallExt, Delivery, FailoverTransport, Failure, ServedByCell};
// Unpublished helpers (simulator, ensure): see "Copying an example" in examples/README.md.
use failnext_examples::sim::{Behaviour, Chain};
use failnext_examples::{SIM_CHAIN_ID, ensure};

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    // Simulator set-up: three providers of one chain.
    let chain = Chain::start(SIM_CHAIN_ID, Duration::from_secs(1));
    let (public, relay, backup) =
        (chain.provider("public").await?, chain.provider("relay").await?, chain.provider("backup").await?);
    println!(
        "simulated providers: public at {}, relay at {}, backup at {}",
        public.url(),
        relay.url(),
        backup.url()
    );
    let endpoints = [public.endpoint(), relay.endpoint(), backup.endpoint()];

    // 1. Writes to the relay only.
    let transport = FailoverTransport::builder(endpoints.clone()).writes_to(["relay"]).build()?;
    let provider = ProviderBuilder::new().connect_client(RpcClient::new(transport, false));
    let served = ServedByCell::new();
    let block = provider
        .get_block_number()
        .map_meta(|meta| meta.record_served_by(&served))
        .unwrap_or_else(|call| call)
        .await?;
    println!("read: block {block}, served by: {}", served.get().map_or("?".into(), |id| id.to_string()));
    let _pending = provider.send_raw_transaction(&[0xde, 0xad, 0xbe, 0xef]).await?;
    println!("write: accepted");
    // Simulator only: the relay goes down.
    relay.set(Behaviour::Down).await?;
    let refused = provider.send_raw_transaction(&[0xc0, 0xff, 0xee]).await;
    match refused.as_ref().err().and_then(Failure::find) {
        Some(never) if never.is_never_sent() => println!("write with the relay down: NeverSent: {never}"),
        _ => println!("write with the relay down: {refused:?}"),
    }
    let sent = |p: &failnext_examples::sim::Provider| p.count("eth_sendRawTransaction");
    println!(
        "eth_sendRawTransaction received: relay {}, public {}, backup {}",
        sent(&relay),
        sent(&public),
        sent(&backup)
    );
    // Simulator only: checks what happened, and the relay is back.
    ensure(served.get().is_some_and(|id| id == "public"), "the read was served by public")?;
    ensure(refused.as_ref().err().and_then(Failure::find).is_some_and(|f| f.is_never_sent()), "NeverSent")?;
    ensure((sent(&relay), sent(&public), sent(&backup)) == (1, 0, 0), "writes reached the relay only")?;
    relay.set(Behaviour::Healthy).await?;

    // 2. A fan-out to all three.
    let transport =
        FailoverTransport::builder(endpoints).broadcast_to(["relay", "public", "backup"]).build()?;
    let provider = ProviderBuilder::new().connect_client(RpcClient::new(transport.clone(), false));
    // Simulator only: the backup's gateway answers 503.
    backup.set(Behaviour::Status(503)).await?;
    let raw = [0xfa, 0x11, 0xed];
    let _pending = provider.send_raw_transaction(&raw).await?;
    // The transaction's hash: keccak256 of its signed bytes, computed locally by the transport.
    let hash = keccak256(raw);
    let outcome = transport.broadcast_outcome(&hash).ok_or("the fan-out is remembered")?;
    println!("fan-out of {}:", outcome.hash());
    for (endpoint, delivery) in outcome.deliveries() {
        println!("  {endpoint}: {delivery}");
    }
    println!("{outcome}");
    // Simulator only: checks what happened.
    ensure(outcome.delivery("relay") == Some(&Delivery::Accepted), "the relay accepted it")?;
    ensure(outcome.delivery("public") == Some(&Delivery::Accepted), "public accepted it")?;
    let lost = outcome.delivery("backup").is_some_and(|d| matches!(d, Delivery::PossiblySubmitted { .. }));
    ensure(lost, "the backup's 503 is possibly submitted")?;
    ensure((sent(&relay), sent(&public), sent(&backup)) == (2, 1, 1), "each endpoint was sent it once")?;
    Ok(())
}

//! A broadcast whose answer is lost, reconciled by its hash instead of signing again; and a
//! broadcast that provably never left.
//!
//! 1. The primary takes `eth_sendRawTransaction` and resets the connection half-way through
//!    its answer: the transaction reached the node, its answer never reached the caller.
//!    `failnext::alloy::FailoverTransport` returns `PossiblySubmitted`, carrying the hash it
//!    computed from the raw bytes; the transaction is not sent to the backup.
//! 2. Reconcile by that hash: look up its receipt (mined already?), and if there is none yet,
//!    send the very same bytes again. Same bytes, same hash: a node that has the transaction
//!    answers "already known", which the transport returns as success with that hash, and a
//!    node that lost it takes it now. One transaction either way; signing again would make a
//!    second one (same nonce: a race; new nonce: paid twice).
//! 3. The primary refuses connections: `NeverSent`. Nothing left the process, so the same
//!    bytes are sent again once the primary is back.
//!
//! The simulator's faults used: `Behaviour::ResetMidBody` for the lost answer (the simulated
//! chain accepts the transaction, then the body is cut and the connection reset; a node that
//! hangs after reading the request, `Behaviour::Hang`, gives `PossiblySubmitted` as well, after
//! the attempt timeout, 10 s by default) and `Behaviour::Down` for the refused connection. The
//! simulator names transactions by hashes of its own, not keccak256, so looking up the receipt
//! of the real hash finds nothing there and step 2 goes on to "already known"; against a node
//! the receipt is found once the transaction is mined.
//!
//! Against real providers (`ETH_RPC_PRIMARY_URL`, `ETH_RPC_BACKUP_URL`) no fault is injected:
//! the dummy bytes do not decode, the node refuses them with a JSON-RPC error, and nothing is
//! broadcast.
//!
//! Run it with `cargo run -p failnext-examples --features alloy --example alloy-write`.
#![allow(clippy::print_stdout, reason = "an example shows what happened on stdout")]

use std::error::Error;

use alloy::primitives::B256;
use alloy::providers::{Provider, ProviderBuilder};
use alloy::rpc::client::RpcClient;
use failnext::alloy::{FailoverTransport, Failure};
// Unpublished helpers (simulator, ensure): see "Copying an example" in examples/README.md.
use failnext_examples::sim::Behaviour;
use failnext_examples::{Network, ensure};

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    // Simulator set-up: replace `net` with your providers (see examples/README.md).
    let net = Network::from_env().await?;
    println!("{net}");

    let transport = FailoverTransport::new(net.endpoints())?;
    let provider = ProviderBuilder::new().connect_client(RpcClient::new(transport, false));

    // A signed transaction, as your signer encodes it. These dummy bytes do not decode: a real
    // node rejects them, the simulator takes anything.
    let raw = [0xde, 0xad, 0xbe, 0xef];

    // Simulator only: the primary accepts the transaction, then resets the connection while
    // it sends the answer.
    if let Some(sim) = net.sim() {
        sim.primary.set(Behaviour::ResetMidBody).await?;
    }
    let sent = provider.send_raw_transaction(&raw).await;
    let lost_hash = match &sent {
        Ok(pending) => {
            println!("broadcast: accepted, transaction {}", pending.tx_hash());
            None
        }
        Err(err) => match Failure::find(err).filter(Failure::is_possibly_submitted) {
            Some(lost) => {
                println!("broadcast: PossiblySubmitted: {lost}");
                lost.hash()
            }
            None => {
                println!("broadcast: refused by the node: {err}");
                None
            }
        },
    };
    // Simulator only: checks what happened, and the primary's trouble is over.
    if let Some(sim) = net.sim() {
        ensure(lost_hash.is_some(), "the lost answer is PossiblySubmitted, with the hash")?;
        ensure(sim.backup.count("eth_sendRawTransaction") == 0, "the backup never received it")?;
        sim.primary.set(Behaviour::Healthy).await?;
    }

    if let Some(hash) = lost_hash {
        let outcome = reconcile(&provider, &raw, hash).await?;
        println!("reconciled by hash {hash}: {outcome}; not signed again");
    }

    // Simulator only: the primary refuses connections.
    if let Some(sim) = net.sim() {
        sim.primary.set(Behaviour::Down).await?;
    }
    let other = [0xc0, 0xff, 0xee];
    match provider.send_raw_transaction(&other).await {
        Ok(pending) => println!("broadcast: accepted, transaction {}", pending.tx_hash()),
        Err(err) => match Failure::find(&err).filter(Failure::is_never_sent) {
            Some(never) => {
                println!("broadcast: NeverSent: {never}");
                // Simulator only: the primary is back.
                if let Some(sim) = net.sim() {
                    sim.primary.set(Behaviour::Healthy).await?;
                }
                // Nothing left the process: the same bytes may go again.
                // (A real application then waits for its receipt: `get_receipt()`.)
                let _pending = provider.send_raw_transaction(&other).await?;
                println!("sent again: accepted");
            }
            None => println!("broadcast: {err}"),
        },
    }

    // Simulator only: checks what happened.
    if let Some(sim) = net.sim() {
        let at_primary = sim.primary.count("eth_sendRawTransaction");
        let at_backup = sim.backup.count("eth_sendRawTransaction");
        println!("primary received eth_sendRawTransaction: {at_primary} times");
        println!("backup received eth_sendRawTransaction: {at_backup} times");
        // The lost one and its same-bytes resend, then the refused one's resend (the refused
        // attempt never connected, so the simulator did not see it).
        ensure(at_primary == 3, "the primary received the lost broadcast, its resend and the retry")?;
        ensure(at_backup == 0, "no broadcast reached the backup")?;
    }
    Ok(())
}

/// Finds out what became of a broadcast whose answer was lost, by its hash; never signs.
async fn reconcile(provider: &impl Provider, raw: &[u8], hash: B256) -> Result<String, Box<dyn Error>> {
    // Mined already? (The lookup prefers no endpoint: the lost broadcast taught the transport
    // nothing. It may fail over, like any read.)
    if let Some(receipt) = provider.get_transaction_receipt(hash).await? {
        return Ok(format!("mined in block {:?}", receipt.block_number));
    }
    // Not mined (yet, or it never arrived): the same bytes again. A node that has it answers
    // "already known", which the transport turns into success with this very hash.
    let pending = provider.send_raw_transaction(raw).await?;
    ensure(*pending.tx_hash() == hash, "the same bytes have the same hash")?;
    // A real application now waits for the receipt of `hash` (`pending.get_receipt()`), or
    // until another transaction takes its nonce.
    Ok("the node has it (already known, or taken now)".to_owned())
}

//! The chain followed through the failover transport: every block once, in order, each one's
//! parent link checked, while the primary goes down in the middle, then comes back on
//! another chain.
//!
//! `transport.follow(Start::Number(n))` makes a `Follower`; `next().await` yields a
//! `ChainEvent`: a block, its logs (with a filter), or a reorg with what it dropped. Its reads
//! go through the transport, so the primary going down costs no block; a block that breaks
//! the parent link is believed only when a second provider shows it, so a provider on
//! another chain is avoided, not followed.
//!
//! Run it with `cargo run -p failnext-examples --features alloy --example alloy-follow`.
#![allow(clippy::print_stdout, reason = "an example shows what happened on stdout")]

use std::error::Error;
use std::time::Duration;

use failnext::alloy::{ChainEvent, FailoverTransport, Start};
// Unpublished helpers (simulator, ensure): see "Copying an example" in examples/README.md.
use failnext_examples::sim::Behaviour;
use failnext_examples::{Network, ensure};

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    // Simulator set-up: replace `net` with your providers (see examples/README.md).
    let net = Network::from_env().await?;
    println!("{net}");
    let transport = FailoverTransport::builder(net.endpoints()).build()?;
    // Simulator only: ten blocks to catch up on.
    let from = net.sim().map_or(0, |sim| sim.chain.advance(10) - 9);

    let mut follower = transport.follow(Start::Number(from)).poll_every(Duration::from_millis(50));
    let (mut numbers, mut parent) = (Vec::new(), None);
    while numbers.len() < 30 {
        if let Some(sim) = net.sim() {
            // Simulator only: the primary goes down, and the chain moves on; then it comes
            // back on another chain (its blocks have other hashes), and the chain moves on.
            if numbers.len() == 10 && sim.primary.behaviour() == Behaviour::Healthy {
                sim.primary.set(Behaviour::Down).await?;
                sim.chain.advance(10);
            }
            if numbers.len() == 20 && sim.primary.behaviour() == Behaviour::Down {
                sim.primary.set(Behaviour::WrongChain(5)).await?;
                sim.chain.advance(10);
            }
        }
        match follower.next().await? {
            ChainEvent::Block { block, .. } => {
                if let Some(parent) = parent {
                    ensure(block.parent_hash == parent, "each block's parent is the block before it")?;
                }
                parent = Some(block.hash);
                numbers.push(block.number);
            }
            ChainEvent::Reorg { depth, .. } => println!("reorg of {depth} blocks"),
            _ => {}
        }
    }
    let in_order = numbers.windows(2).all(|w| w[1] == w[0] + 1);
    println!(
        "followed {} blocks, {} to {}: in order and each once: {in_order}, {} requests, {} blocks off the chain refused",
        numbers.len(),
        numbers[0],
        numbers[numbers.len() - 1],
        follower.stats().requests,
        follower.stats().off_chain,
    );
    ensure(in_order, "every block once, in order, through the primary's outage and its wrong chain")?;
    Ok(())
}

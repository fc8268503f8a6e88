//! The chain follower in the measure: one `failnext::alloy::Follower` per transport
//! configuration, over the same providers and the same faults as the reads, judged block by
//! block against the simulated chain (which never reorgs): every block once, in order, each
//! one the chain's own and linked to the one before.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use failnext::alloy::{ChainEvent, Follower};
use failnext_examples::sim::Chain;
use tokio::sync::watch;

use super::display::ms;
use super::judge::quantile;

/// The instant each block was first seen made, by block number.
pub(crate) type Made = Arc<Mutex<Vec<(u64, Instant)>>>;

/// What one follower did during a measure.
#[derive(Debug, Clone)]
pub(crate) struct Followed {
    /// The first block it was asked for.
    pub(crate) from: u64,
    /// Blocks made from `from` until the measure ended.
    pub(crate) made: u64,
    /// Blocks it yielded.
    pub(crate) yielded: u64,
    /// What was wrong: a gap, a duplicate, a block off the chain, a broken link, a reorg (the
    /// simulated chain has none), an error. Each is a violation.
    pub(crate) problems: Vec<String>,
    /// From a block's making to its yield, sorted.
    pub(crate) delays: Vec<Duration>,
    /// JSON-RPC requests it sent.
    pub(crate) requests: u64,
    /// Times it found a provider off the chain.
    pub(crate) off_chain: u64,
}

impl fmt::Display for Followed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} of {} blocks made from {}, each once, in order, on the chain: {}; {:.2} requests per block; delay p50 {} ms, p99 {} ms; {} providers found off the chain",
            self.yielded,
            self.made,
            self.from,
            if self.problems.is_empty() { "held" } else { "BROKEN" },
            self.requests as f64 / self.yielded.max(1) as f64,
            ms(quantile(&self.delays, 0.5)),
            ms(quantile(&self.delays, 0.99)),
            self.off_chain,
        )
    }
}

/// Records when each block is first seen made, until `stopped`.
pub(crate) async fn watch_made(chain: Chain, made: Made, mut stopped: watch::Receiver<bool>) {
    let mut seen = chain.head();
    while !crate::soak::watch::stopped_or(&mut stopped, Duration::from_millis(1)).await {
        let head = chain.head();
        if head > seen {
            let now = Instant::now();
            made.lock().unwrap_or_else(|p| p.into_inner()).extend((seen + 1..=head).map(|n| (n, now)));
            seen = head;
        }
    }
}

/// Follows from `from` until `stopped`, and judges what was yielded.
pub(crate) async fn follow(
    mut follower: Follower,
    from: u64,
    chain: Chain,
    made: Made,
    mut stopped: watch::Receiver<bool>,
) -> Followed {
    let mut blocks = Vec::new();
    let mut problems = Vec::new();
    loop {
        let event = tokio::select! {
            _ = stopped.wait_for(|stop| *stop) => break,
            event = follower.next() => event,
        };
        match event {
            Ok(ChainEvent::Block { block, .. }) => blocks.push((block, Instant::now())),
            Ok(ChainEvent::Reorg { depth, .. }) => {
                problems.push(format!("a reorg of {depth} blocks on a chain that has none"));
            }
            Ok(_) => {}
            Err(err) => {
                problems.push(format!("the follower stopped: {err}"));
                break;
            }
        }
    }
    let made = made.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let mut delays = Vec::new();
    let mut parent = None;
    for (i, (block, at)) in blocks.iter().enumerate() {
        let expected = from + i as u64;
        if block.number != expected {
            problems.push(format!("block {} yielded where block {expected} was due", block.number));
            break;
        }
        if block.hash.to_string() != chain.block_hash(block.number) {
            problems.push(format!("block {} is not the chain's: {}", block.number, block.hash));
        }
        if parent.is_some_and(|p| p != block.parent_hash) {
            problems.push(format!("block {} does not link to the block before it", block.number));
        }
        parent = Some(block.hash);
        if let Some((_, when)) = made.iter().find(|(n, _)| *n == block.number) {
            delays.push(at.saturating_duration_since(*when));
        }
    }
    delays.sort_unstable();
    let stats = follower.stats();
    Followed {
        from,
        made: chain.head().saturating_add(1).saturating_sub(from),
        yielded: blocks.len() as u64,
        problems,
        delays,
        requests: stats.requests,
        off_chain: stats.off_chain,
    }
}

//! The demo's last part (feature `alloy`): a chain follower through the failover transport,
//! over the simulator, while the primary goes down and comes back; its one-line summary.

use std::fmt;
use std::time::{Duration, Instant};

use failnext::alloy::{ChainEvent, FailoverTransport, Start};

use crate::SIM_CHAIN_ID;
use crate::sim::{Behaviour, Chain};

/// What the follower did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Followed {
    /// Blocks made while it followed.
    pub made: u64,
    /// Blocks it yielded.
    pub yielded: u64,
    /// Whether they were every block made, each once, in order, each one's parent the block
    /// before it.
    pub in_order: bool,
    /// Times the primary went down meanwhile.
    pub outages: u32,
    /// JSON-RPC requests the follower sent.
    pub requests: u64,
    /// How long it took.
    pub took: Duration,
}

impl Followed {
    /// Whether every block made was yielded, once, in order.
    pub fn holds(&self) -> bool {
        self.in_order && self.yielded == self.made
    }
}

impl fmt::Display for Followed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "follower: {} of {} blocks, each once and in order: {}, through {} outages of the primary, {} requests ({:.2} per block), {:.2?}: {}",
            self.yielded,
            self.made,
            self.in_order,
            self.outages,
            self.requests,
            self.requests as f64 / self.made.max(1) as f64,
            self.took,
            if self.holds() { "held" } else { "BROKEN" },
        )
    }
}

/// Follows `blocks` blocks made 5 at a time, the primary down for every third burst.
///
/// # Errors
///
/// When a simulated provider cannot start, or the follower stops.
pub async fn follow(blocks: u64) -> Result<Followed, Box<dyn std::error::Error>> {
    let started = Instant::now();
    let chain = Chain::start(SIM_CHAIN_ID, Duration::from_secs(3600));
    let primary = chain.provider("primary").await?;
    let backup = chain.provider("backup").await?;
    let transport = FailoverTransport::builder([primary.endpoint(), backup.endpoint()])
        .attempt_timeout(Duration::from_millis(500))
        .build()?;
    let first = chain.head() + 1;
    let mut follower = transport.follow(Start::Number(first)).poll_every(Duration::from_millis(5));
    let (mut yielded, mut in_order, mut outages, mut parent) = (0_u64, true, 0_u32, None);
    let mut burst = 0_u64;
    while yielded < blocks {
        if chain.head() < first + yielded && chain.head() + 1 < first + blocks {
            burst += 1;
            let down = burst % 3 == 0;
            if down != (primary.behaviour() == Behaviour::Down) {
                primary.set(if down { Behaviour::Down } else { Behaviour::Healthy }).await?;
                outages += u32::from(down);
            }
            chain.advance(5.min(first + blocks - 1 - chain.head()));
        }
        let event = tokio::time::timeout(Duration::from_secs(10), follower.next())
            .await
            .map_err(|_| "the follower yielded nothing for 10 s")?
            .map_err(|e: alloy::transports::TransportError| e.to_string())?;
        if let ChainEvent::Block { block, .. } = event {
            in_order &= block.number == first + yielded && parent.is_none_or(|p| p == block.parent_hash);
            parent = Some(block.hash);
            yielded += 1;
        }
    }
    Ok(Followed {
        made: chain.head() + 1 - first,
        yielded,
        in_order,
        outages,
        requests: follower.stats().requests,
        took: started.elapsed(),
    })
}

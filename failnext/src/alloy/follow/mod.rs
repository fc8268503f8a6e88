//! [`Follower`]: the chain followed block by block through the transport, each block's parent
//! link verified, its logs fetched by its hash, and a reorg reported with what it dropped.

use std::collections::VecDeque;
use std::time::Duration;

use alloy_eips::BlockNumberOrTag;
use alloy_primitives::B256;
use alloy_rpc_types_eth::{Filter, Log};
use alloy_transport::TransportError;

use super::block::BlockRef;
use super::transport::FailoverTransport;
use crate::EndpointId;

mod chain;
mod opinions;
mod pacing;
mod proof;
mod reads;

pub(crate) use reads::Header;

/// The most blocks read in one request while catching up.
const BACKFILL: u64 = 32;

/// How many blocks a follower remembers, by default: the deepest reorg it can repair.
pub const DEFAULT_FOLLOW_DEPTH: usize = 64;

/// The parameters of `eth_getBlockByNumber` for block `number`, without its transactions.
fn by_number(number: u64) -> (BlockNumberOrTag, bool) {
    (BlockNumberOrTag::Number(number), false)
}

/// Where a [`Follower`] starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Start {
    /// At this block number: it is the first block yielded.
    Number(u64),
    /// At the block with this hash (read once to learn its number): it is the first block
    /// yielded. A block no provider knows, or no longer on the chain (a reorg replaced it),
    /// is a [`FailureKind::StartUnknown`](crate::alloy::FailureKind::StartUnknown).
    Hash(B256),
    /// After this block, which the caller already had (the last one it handled before a
    /// restart, say): the first block yielded is the next one, and it must chain on from this
    /// one. When a reorg replaced it meanwhile, [`Follower::next`] returns
    /// [`FailureKind::ReorgTooDeep`](crate::alloy::FailureKind::ReorgTooDeep) with
    /// [`restart_from`](crate::alloy::Failure::restart_from) its number: what the caller handled from
    /// there (or earlier, where it cannot tell) is no longer the chain.
    After(BlockRef),
    /// At the head: with a monitor paired, the highest block every provider it admits has;
    /// without one, the `eth_blockNumber` the transport answers.
    Head,
}

/// A block as the follower yields it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FollowedBlock {
    /// Its number.
    pub number: u64,
    /// Its hash.
    pub hash: B256,
    /// Its parent's hash: the hash of the block yielded just before it.
    pub parent_hash: B256,
    /// Its timestamp (Unix seconds).
    pub timestamp: u64,
}

impl FollowedBlock {
    /// The block as a [`BlockRef`] (to pin a [`Bundle`](super::Bundle) to it, say).
    pub fn block_ref(&self) -> BlockRef {
        BlockRef::new(self.number, self.hash)
    }
}

/// What a [`Follower`] yields.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ChainEvent {
    /// The next canonical block: each exactly once, in order, its parent the block yielded
    /// before it.
    Block {
        /// The block.
        block: FollowedBlock,
        /// The endpoint that answered it.
        served_by: Option<EndpointId>,
    },
    /// The logs of the block just yielded that match the follower's filter, fetched by its
    /// hash (EIP-234), so every one belongs to that block; only with a
    /// [filter](Follower::logs), after each block (an empty list included).
    Logs {
        /// The block they belong to.
        block: BlockRef,
        /// Its logs, in log-index order.
        logs: Vec<Log>,
        /// The endpoint that answered them.
        served_by: Option<EndpointId>,
    },
    /// Blocks already yielded were replaced: these, newest first, with their logs marked
    /// `removed`; the blocks of the new branch follow as [`ChainEvent::Block`]s.
    Reorg {
        /// How many blocks were dropped.
        depth: u64,
        /// The dropped blocks, newest first, each with the logs it had yielded (now removed).
        dropped: Vec<(FollowedBlock, Vec<Log>)>,
        /// The endpoint whose answer showed the new branch.
        served_by: Option<EndpointId>,
    },
}

/// What a follower did that a reader of its stream does not see: reads that failed (and were
/// retried), polls that found nothing new.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FollowStats {
    /// Blocks yielded.
    pub blocks: u64,
    /// Reorgs reported.
    pub reorgs: u64,
    /// Reads that failed on every provider and were retried after the poll interval.
    pub retried: u64,
    /// Times a provider was found off the chain followed (on another chain, or a branch of
    /// its own): its block outvoted by the other providers', or its logs naming another
    /// block. What it showed was never yielded, and the follower's reads avoid it for 5 s.
    pub off_chain: u64,
    /// JSON-RPC requests sent.
    pub requests: u64,
    /// Waits ended early by a provider announcing a new head (feature `ws`).
    pub woken: u64,
}

/// The chain, followed through a [`FailoverTransport`]: every canonical block exactly once,
/// in order, each one's parent link verified against the block before it, its logs (for a
/// filter) fetched by its hash, and a reorg reported with the blocks and logs it dropped
/// before the new branch is yielded. Made by [`FailoverTransport::follow`]; pull it with
/// [`next`](Follower::next) (nothing is buffered: a slow consumer slows the polling).
///
/// Reads go through the transport, so a provider dying, lagging or rate-limited costs no
/// block: a read no provider answers is retried after the poll interval, and a block a
/// provider does not have yet (`null`) is asked again later. With a monitor paired the
/// follower goes no further than the highest block every admitted provider has, so one
/// provider running ahead does not pull it onto a branch nobody else has; that head is the
/// monitor's, so a block waits up to one probe interval for it. A block that does
/// not chain on from the last one yielded is believed (a reorg) only when a second provider
/// shows the same block; when another shows the chain followed instead, the provider that
/// answered it is on another chain or a branch of its own, and the follower's reads avoid it
/// for a while. With one endpoint, its word is taken.
///
/// ```no_run
/// # async fn demo(transport: failnext::alloy::FailoverTransport) -> Result<(), alloy_transport::TransportError> {
/// use failnext::alloy::{ChainEvent, Start};
///
/// let mut follower = transport.follow(Start::Head);
/// loop {
///     match follower.next().await? {
///         ChainEvent::Block { block, served_by } => println!("block {} from {served_by:?}", block.number),
///         ChainEvent::Reorg { depth, .. } => println!("reorg of {depth} blocks"),
///         _ => {}
///     }
/// }
/// # }
/// ```
#[derive(Debug)]
pub struct Follower {
    transport: FailoverTransport,
    start: Option<Start>,
    /// The next block number to yield.
    next: u64,
    /// The blocks yielded, oldest first, with the logs each yielded; at most `depth`.
    ring: VecDeque<(FollowedBlock, Vec<Log>)>,
    depth: usize,
    filter: Option<Filter>,
    /// The chain id every provider whose word sets the chain must serve.
    chain_id: Option<u64>,
    poll: Option<Duration>,
    /// The block time learnt from the timestamps of the blocks yielded.
    block_time: Option<Duration>,
    /// Events found, not yet handed out.
    pending: VecDeque<ChainEvent>,
    /// The highest block known to exist (the head last read).
    head: u64,
    /// The endpoint that answered the latest read.
    served: Option<EndpointId>,
    /// Providers whose blocks were off the chain followed, avoided until then.
    off_chain: Vec<(EndpointId, tokio::time::Instant)>,
    /// What the check of their logs needs of the blocks read last.
    kept: VecDeque<reads::Kept>,
    /// Logs are proven complete by the block's receipts.
    prove: bool,
    /// No provider answered `eth_getBlockReceipts`: receipts are read per transaction.
    receipts_by_transaction: bool,
    /// Times in a row no other provider answered about a block off the chain followed (or the
    /// first one): after [`UNCONFIRMED_TRIES`], the one answering is believed.
    unconfirmed: u32,
    /// New-head subscriptions that end a wait early.
    #[cfg(feature = "ws")]
    wake: Option<super::wake::Wake>,
    stats: FollowStats,
}

impl FailoverTransport {
    /// A [`Follower`] of the chain from `start`, through this transport.
    pub fn follow(&self, start: Start) -> Follower {
        Follower {
            transport: self.clone(),
            start: Some(start),
            next: 0,
            ring: VecDeque::new(),
            depth: DEFAULT_FOLLOW_DEPTH,
            filter: None,
            chain_id: None,
            poll: None,
            block_time: None,
            pending: VecDeque::new(),
            head: 0,
            served: None,
            off_chain: Vec::new(),
            kept: VecDeque::new(),
            prove: false,
            receipts_by_transaction: false,
            unconfirmed: 0,
            #[cfg(feature = "ws")]
            wake: None,
            stats: FollowStats::default(),
        }
    }
}

impl Follower {
    /// Yields, with each block, the logs matching `filter` (its block range is ignored: each
    /// block's logs are read by the block's hash).
    ///
    /// Each block's logs are checked before they are yielded: every log names the block (its
    /// hash and number), log indexes strictly increase, and the block's logs bloom (from its
    /// header) holds every log's address and topics. Logs that fail were not the block's: the
    /// provider that answered them is put off the chain (its reads avoided for a while,
    /// counted in [`FollowStats::off_chain`]) and the logs are read again elsewhere. This
    /// catches a log added or taken from another block; a log dropped needs the block's
    /// receipts, which this check does not read.
    #[must_use]
    pub fn logs(mut self, filter: Filter) -> Follower {
        self.filter = Some(filter);
        self
    }

    /// Remembers the last `blocks` blocks (at least 1): the deepest reorg it repairs. Default
    /// [`DEFAULT_FOLLOW_DEPTH`].
    #[must_use]
    pub fn depth(mut self, blocks: usize) -> Follower {
        self.depth = blocks.max(1);
        self
    }

    /// Logs proven complete: each block's logs are taken from its receipts
    /// (`eth_getBlockReceipts`), which must hash to the receipts root of the block's header,
    /// so that a provider can neither drop a log nor add one. A provider whose receipts do not
    /// is put off the chain and the receipts are read elsewhere. The blocks' logs then come
    /// one block at a time, one request each (instead of one `eth_getLogs`, batched while
    /// catching up). When no provider answers `eth_getBlockReceipts`, the receipts are read
    /// one per transaction from then on (the block's transaction hashes, then one batch of
    /// `eth_getTransactionReceipt`). Where the receipts cannot be read or hashed (a chain
    /// whose receipts are not Ethereum's), that block's logs are read as without it (checked
    /// against its bloom). Needs a [filter](Self::logs). Default: off.
    #[must_use]
    pub fn prove_logs(mut self, on: bool) -> Follower {
        self.prove = on;
        self
    }

    /// The chain id the providers must serve. The first block is then taken only from a
    /// provider that answers `eth_chainId` with it, and so is the new branch of a reorg, so
    /// that two providers moved onto the same other chain cannot set or replace the chain
    /// followed (without it, the follower goes by which providers agree). Default: none.
    #[must_use]
    pub fn chain_id(mut self, id: u64) -> Follower {
        self.chain_id = Some(id);
        self
    }

    /// Polls for a new head this often. Default: half the block time (at least 50 ms), learnt
    /// from the timestamps of the last 32 blocks (their span over their count, so blocks
    /// faster than a second are learnt too), at the start from the blocks before the first
    /// one (one request); 1 s until one is learnt.
    #[must_use]
    pub fn poll_every(mut self, interval: Duration) -> Follower {
        self.poll = Some(interval);
        self
    }

    /// Also polls as soon as one of these providers announces a new head: a WebSocket
    /// `eth_subscribe("newHeads")` subscription at each URL (`ws://`, or `wss://` with a TLS
    /// feature of `tokio-tungstenite` enabled in the application), kept for as long as the
    /// follower lives and made again when lost. A notification is only a reason to poll now:
    /// blocks and logs are still read through the transport and verified as without it, so
    /// a subscription that lies, lags or drops costs latency, never a block. Feature `ws`.
    ///
    /// ```no_run
    /// # async fn demo(transport: failnext::alloy::FailoverTransport) -> Result<(), Box<dyn std::error::Error>> {
    /// use failnext::alloy::Start;
    ///
    /// let mut follower = transport
    ///     .follow(Start::Head)
    ///     .wake_on_new_heads([url::Url::parse("ws://127.0.0.1:8546")?]);
    /// println!("{:?}", follower.next().await?);
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "ws")]
    #[must_use]
    pub fn wake_on_new_heads(mut self, urls: impl IntoIterator<Item = url::Url>) -> Follower {
        self.wake = Some(super::wake::Wake::new(urls.into_iter().collect()));
        self
    }

    /// The follower as a `Stream` of its events, for alloy's and `futures`' stream
    /// combinators. It ends after the first error (an error ends a follower).
    ///
    /// ```no_run
    /// # async fn demo(transport: failnext::alloy::FailoverTransport) {
    /// use failnext::alloy::{ChainEvent, Start};
    /// use futures_util::StreamExt;
    ///
    /// let mut blocks = Box::pin(transport.follow(Start::Head).into_stream().filter_map(|event| async move {
    ///     match event {
    ///         Ok(ChainEvent::Block { block, .. }) => Some(block.number),
    ///         _ => None,
    ///     }
    /// }));
    /// while let Some(number) = blocks.next().await {
    ///     println!("block {number}");
    /// }
    /// # }
    /// ```
    pub fn into_stream(self) -> impl futures_util::Stream<Item = Result<ChainEvent, TransportError>> + Send {
        futures_util::stream::unfold(Some(self), |follower| async move {
            let mut follower = follower?;
            match follower.next().await {
                Ok(event) => Some((Ok(event), Some(follower))),
                Err(err) => Some((Err(err), None)),
            }
        })
    }

    /// What the follower did so far.
    pub fn stats(&self) -> FollowStats {
        self.stats
    }

    /// The next event: waits (polling) until there is one.
    ///
    /// # Errors
    ///
    /// A `TransportError` that [`Failure::find`](crate::alloy::Failure::find) reads: the
    /// start block's read when it fails ([`FailureKind::Read`](crate::alloy::FailureKind::Read)
    /// and the like), [`FailureKind::StartUnknown`](crate::alloy::FailureKind::StartUnknown)
    /// for a hash no provider knows or a reorg replaced,
    /// [`FailureKind::ReorgTooDeep`](crate::alloy::FailureKind::ReorgTooDeep) when a reorg is
    /// deeper than the blocks remembered. Reads that fail on every provider once started are
    /// retried, never returned.
    pub async fn next(&mut self) -> Result<ChainEvent, TransportError> {
        if let Some(start) = self.start {
            self.next = self.start_number(start).await?;
            self.start = None;
            if self.poll.is_none() && self.block_time.is_none() {
                self.learn_from_history().await;
            }
        }
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Ok(event);
            }
            if self.next > self.head {
                match self.poll_head().await {
                    (Some(head), _) if head >= self.next => self.head = head,
                    (Some(_), Some(other)) => {
                        // A reorg at the same height (or lower): no new block to show it.
                        self.disputed(other).await?;
                        continue;
                    }
                    _ => {
                        self.pause().await;
                        continue;
                    }
                }
            }
            self.step().await?;
        }
    }

    /// Reads block `self.next`, and queues what it says: the block (and its logs), or a reorg.
    async fn step(&mut self) -> Result<(), TransportError> {
        let from = self.next;
        let count = self.head.saturating_sub(from).saturating_add(1).min(BACKFILL);
        let mut headers = self.blocks_from(from, count).await;
        if count > 1 && headers.iter().all(Option::is_none) {
            // No answer to the batch (a provider that refuses batches, say): this block alone.
            headers = vec![self.block_by_number(from, &[]).await];
        }
        // The blocks that chain on from the last one yielded, in order: the first that does
        // not (a reorg, or a provider on another branch) or is missing ends the run.
        let mut run: Vec<FollowedBlock> = Vec::with_capacity(headers.len());
        for header in headers {
            let Some(header) = header else { break };
            self.keep(&header);
            let block = header.block();
            let parent = run.last().copied().or_else(|| self.ring.back().map(|(b, _)| *b));
            let links = parent.is_none_or(|p| p.hash == block.parent_hash);
            if block.number != from + run.len() as u64 || !links {
                if run.is_empty() && !links {
                    return self.disputed(block).await;
                }
                break;
            }
            run.push(block);
        }
        let blocks_served = self.served.clone();
        if run.is_empty() || !self.anchored(&run[0], blocks_served.as_ref()).await {
            // Not there yet at the provider that answered, or no provider answered.
            self.pause().await;
            return Ok(());
        }
        let Some(logs) = self.logs_for(&mut run).await else {
            self.pause().await;
            return Ok(());
        };
        let logs_served = self.served.clone();
        if run.len() > 1 {
            let (first, blocks) = (run[0].number, run.len() as u64);
            self.transport.failover().shared.emit(|| crate::Event::Backfilled {
                from: first,
                blocks,
                endpoint: blocks_served.as_ref(),
            });
        }
        for (block, logs) in run.into_iter().zip(logs) {
            self.pending.push_back(ChainEvent::Block { block, served_by: blocks_served.clone() });
            if self.filter.is_some() {
                let (of, served_by) = (block.block_ref(), logs_served.clone());
                self.pending.push_back(ChainEvent::Logs { block: of, logs: logs.clone(), served_by });
            }
            self.ring.push_back((block, logs));
            while self.ring.len() > self.depth {
                self.ring.pop_front();
            }
            self.next = block.number + 1;
            self.stats.blocks += 1;
        }
        self.learn_block_time();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::opinions::OFF_CHAIN_FOR;
    use super::*;
    use crate::Endpoint;

    fn follower() -> Follower {
        FailoverTransport::new([Endpoint::new("a", "http://127.0.0.1:1/")]).unwrap().follow(Start::Number(1))
    }

    fn block(number: u64, timestamp: u64) -> FollowedBlock {
        FollowedBlock { number, hash: B256::with_last_byte(number as u8), parent_hash: B256::ZERO, timestamp }
    }

    /// Yields blocks at these timestamps, as `step` does.
    fn yielded(follower: &mut Follower, timestamps: &[u64]) {
        let first = follower.ring.back().map_or(1, |(b, _)| b.number + 1);
        for (i, t) in timestamps.iter().enumerate() {
            follower.ring.push_back((block(first + i as u64, *t), Vec::new()));
            follower.learn_block_time();
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_provider_found_off_the_chain_is_avoided_for_five_seconds_then_heard_again() {
        let mut f = follower();
        let (a, b) = (EndpointId::from("a"), EndpointId::from("b"));
        f.avoid_off_chain(a.clone());
        assert_eq!(f.avoiding(std::slice::from_ref(&b)), [b.clone(), a.clone()]);
        tokio::time::advance(OFF_CHAIN_FOR - Duration::from_millis(1)).await;
        assert_eq!(f.avoiding(&[]), std::slice::from_ref(&a), "still avoided just before");
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(f.avoiding(&[]).is_empty(), "heard again after {OFF_CHAIN_FOR:?}");
        assert_eq!(f.stats().off_chain, 1);
    }

    #[test]
    fn a_read_no_provider_answers_while_avoiding_some_hears_them_again() {
        let mut f = follower();
        f.avoid_off_chain(EndpointId::from("a"));
        let avoided = f.avoiding(&[]);
        f.failed(!avoided.is_empty());
        assert!(f.avoiding(&[]).is_empty());
        assert_eq!(f.stats().retried, 1);
    }

    #[test]
    fn the_poll_interval_is_one_second_until_a_block_time_is_learnt() {
        let mut f = follower();
        assert_eq!(f.interval(), Duration::from_secs(1));
        yielded(&mut f, &[100]);
        assert_eq!(f.interval(), Duration::from_secs(1), "one block shows no block time");
    }

    #[test]
    fn the_poll_interval_is_half_the_learnt_block_time() {
        let mut f = follower();
        yielded(&mut f, &[0, 12, 24, 36]);
        assert_eq!(f.interval(), Duration::from_secs(6));
    }

    #[test]
    fn the_learnt_block_time_follows_a_change_within_32_blocks() {
        let mut f = follower();
        yielded(&mut f, &[0, 12, 24]);
        let last = f.ring.back().unwrap().0.timestamp;
        yielded(&mut f, &(1..=32).map(|i| last + 2 * i).collect::<Vec<_>>());
        assert_eq!(f.interval(), Duration::from_secs(1), "2 s blocks now");
    }

    #[test]
    fn blocks_faster_than_a_second_are_learnt_from_the_span_of_their_timestamps() {
        let mut f = follower();
        // Four blocks a second: timestamps in whole seconds repeat.
        yielded(&mut f, &(0..33).map(|i| 1_000 + i / 4).collect::<Vec<_>>());
        assert_eq!(f.interval(), Duration::from_millis(125));
        let before = f.block_time;
        let mut g = follower();
        yielded(&mut g, &[5, 5, 5]);
        assert_eq!(g.block_time, None, "blocks of one second teach nothing");
        assert!(before.is_some());
    }

    #[test]
    fn the_poll_interval_is_never_under_50_ms_and_poll_every_overrides_it() {
        let mut f = follower();
        yielded(&mut f, &[0, 0, 0]);
        f.block_time = Some(Duration::from_millis(20));
        assert_eq!(f.interval(), Duration::from_millis(50));
        let f = f.poll_every(Duration::from_millis(7));
        assert_eq!(f.interval(), Duration::from_millis(7));
    }
}

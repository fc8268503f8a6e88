//! [`Follower`]: the chain followed block by block through the transport, each block's parent
//! link verified, its logs fetched by its hash, and a reorg reported with what it dropped.

use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

use alloy_eips::BlockNumberOrTag;
use alloy_primitives::B256;
use alloy_rpc_types_eth::{Filter, Log};
use alloy_transport::{TransportError, TransportErrorKind, TransportResult};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::reference::BlockRef;
use super::transport::FailoverTransport;
use crate::EndpointId;

/// The most blocks read in one request while catching up.
const BACKFILL: u64 = 32;

/// How many blocks a follower remembers, by default: the deepest reorg it can repair.
pub const DEFAULT_FOLLOW_DEPTH: usize = 64;

/// How many blocks back the block time is learnt over.
const LEARN_WINDOW: usize = 32;

/// How many times in a row a block off the chain followed is asked of the other providers
/// while none of them answers (all down), before the one provider answering is believed.
const UNCONFIRMED_TRIES: u32 = 3;

/// How long the follower's reads avoid a provider that showed a block off the chain it
/// follows (another chain, a branch of its own) while another provider showed the chain.
const OFF_CHAIN_FOR: Duration = Duration::from_secs(5);

/// The mean time between `older` and `newer`, from their timestamps; `None` when they share a
/// second (or are out of order).
fn block_time(older: &FollowedBlock, newer: &FollowedBlock) -> Option<Duration> {
    let blocks = newer.number.checked_sub(older.number).filter(|n| *n > 0)?;
    let seconds = newer.timestamp.checked_sub(older.timestamp).filter(|s| *s > 0)?;
    Some(Duration::from_millis(seconds.saturating_mul(1000) / blocks))
}

/// The parameters of `eth_getBlockByNumber` for block `number`, without its transactions.
fn by_number(number: u64) -> (BlockNumberOrTag, bool) {
    (BlockNumberOrTag::Number(number), false)
}

/// What the other providers said of a block off the chain followed.
enum Verdict {
    /// Two providers showed the block with this hash, `on` among them.
    Agreed { hash: B256, on: EndpointId },
    /// A provider showed the chain followed.
    Ours,
    /// No two answers agreed; whether any other provider answered.
    Unsettled { answered: bool },
}

/// Where a [`Follower`] starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Start {
    /// At this block number: it is the first block yielded.
    Number(u64),
    /// At the block with this hash (read once to learn its number): it is the first block
    /// yielded. A block no longer on the chain (a reorg replaced it) is a
    /// [`FollowError::Start`].
    Hash(B256),
    /// After this block, which the caller already had (the last one it handled before a
    /// restart, say): the first block yielded is the next one, and it must chain on from this
    /// one. When a reorg replaced it meanwhile, [`Follower::next`] returns
    /// [`FollowError::TooDeep`] with `restart_from` its number: what the caller handled from
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

/// Why a [`Follower`] stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum FollowError {
    /// A reorg replaced every block the follower remembers (see
    /// [`depth`](Follower::depth)): the fork point is older. Start a new follower at
    /// `restart_from` (the oldest block it remembered, now replaced) or earlier.
    TooDeep {
        /// The oldest block remembered: every block from here on was replaced.
        restart_from: u64,
    },
    /// The block to start at could not be read.
    Start(TransportError),
}

impl fmt::Display for FollowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FollowError::TooDeep { restart_from } => write!(
                f,
                "a reorg replaced every remembered block: the fork is before block {restart_from}; follow again from there or earlier"
            ),
            FollowError::Start(err) => write!(f, "the start block could not be read: {err}"),
        }
    }
}

impl std::error::Error for FollowError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FollowError::Start(err) => Some(err),
            FollowError::TooDeep { .. } => None,
        }
    }
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
/// # async fn demo(transport: failnext::alloy::FailoverTransport) -> Result<(), failnext::alloy::FollowError> {
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
            unconfirmed: 0,
            #[cfg(feature = "ws")]
            wake: None,
            stats: FollowStats::default(),
        }
    }
}

/// The fields of a block header the follower (and a bundle at the head) reads.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Header {
    number: alloy_primitives::U64,
    hash: B256,
    parent_hash: B256,
    timestamp: alloy_primitives::U64,
}

impl Header {
    pub(crate) fn block(&self) -> FollowedBlock {
        FollowedBlock {
            number: self.number.to::<u64>(),
            hash: self.hash,
            parent_hash: self.parent_hash,
            timestamp: self.timestamp.to::<u64>(),
        }
    }
}

impl Follower {
    /// Yields, with each block, the logs matching `filter` (its block range is ignored: each
    /// block's logs are read by the block's hash).
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
    /// combinators. It ends after the first error (a [`FollowError`] ends a follower).
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
    pub fn into_stream(self) -> impl futures_util::Stream<Item = Result<ChainEvent, FollowError>> + Send {
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
    /// [`FollowError::Start`] when the start block cannot be read (a hash no provider knows,
    /// or the block of a hash a reorg replaced);
    /// [`FollowError::TooDeep`] when a reorg is deeper than the blocks remembered. Reads that
    /// fail on every provider are retried, never returned.
    pub async fn next(&mut self) -> Result<ChainEvent, FollowError> {
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
    async fn step(&mut self) -> Result<(), FollowError> {
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

    /// The logs of `run`'s blocks, a list per block (empty lists without a filter), read in
    /// one request; when that batch is not answered, the first block's alone (`run` cut to
    /// it). `None` when they could not be read, or when a provider answered with logs of
    /// another block (that provider is then put off the chain).
    async fn logs_for(&mut self, run: &mut Vec<FollowedBlock>) -> Option<Vec<Vec<Log>>> {
        let Some(filter) = self.filter.clone() else { return Some(vec![Vec::new(); run.len()]) };
        let logs = match self.logs_of(filter.clone(), run).await {
            None if run.len() > 1 => {
                run.truncate(1);
                self.logs_of(filter, run).await?
            }
            logs => logs?,
        };
        let foreign = run.iter().zip(&logs).any(|(block, logs)| {
            logs.iter().any(|log| log.block_hash.is_some_and(|hash| hash != block.hash))
        });
        if foreign {
            if let Some(by) = self.served.clone().filter(|_| self.has_others()) {
                self.avoid_off_chain(by);
            }
            return None;
        }
        Some(logs)
    }

    /// Whether the transport has other endpoints than one: whose answers can be checked
    /// against each other.
    fn has_others(&self) -> bool {
        self.transport.endpoint_ids().len() > 1
    }

    /// Whether the first block to yield may be: nothing was yielded yet, so no parent link
    /// vouches for it, and the other providers are asked for the block at its height (see
    /// [`opinions`](Follower::opinions)). A second provider showing it settles it; two showing
    /// another block outvote it; when no other answers, its word is taken only the third time
    /// in a row. Otherwise it is asked for again: one provider off the chain at the start does
    /// not set the chain followed.
    async fn anchored(&mut self, first: &FollowedBlock, by: Option<&EndpointId>) -> bool {
        let (true, Some(by)) = (self.ring.is_empty() && self.has_others(), by) else {
            return true;
        };
        if !self.on_expected_chain(by).await {
            return false;
        }
        match self.opinions(first, by.clone()).await {
            Verdict::Agreed { hash, .. } => hash == first.hash,
            Verdict::Ours => true,
            Verdict::Unsettled { answered } => self.lone_word(answered),
        }
    }

    /// Whether `endpoint` serves the [chain id](Follower::chain_id) set (always, without
    /// one), asked of it alone. A provider that answers another is put off the chain; one
    /// that does not answer is not believed this time.
    async fn on_expected_chain(&mut self, endpoint: &EndpointId) -> bool {
        let Some(expected) = self.chain_id else { return true };
        let others: Vec<EndpointId> =
            self.transport.endpoint_ids().iter().filter(|id| *id != endpoint).cloned().collect();
        let answer: Option<alloy_primitives::U64> = self.read("eth_chainId", (), &others).await;
        let on = answer.is_some_and(|id| id.to::<u64>() == expected);
        if answer.is_some() && !on {
            self.avoid_off_chain(endpoint.clone());
        }
        on
    }

    /// After asking the others in vain: whether the one provider's word is taken now, which
    /// it is when none of the others has answered three times in a row (they are down), as
    /// with one endpoint. A disagreement (`answered`) starts the count again.
    fn lone_word(&mut self, answered: bool) -> bool {
        self.unconfirmed = if answered { 0 } else { self.unconfirmed + 1 };
        let taken = self.unconfirmed >= UNCONFIRMED_TRIES;
        if taken {
            self.unconfirmed = 0;
        }
        taken
    }

    /// A block (`claimed`, answered by `self.served`) that does not chain on from the blocks
    /// yielded: a reorg, or a provider off the chain (on another chain, on a branch of its
    /// own). The other providers are asked (see [`opinions`](Follower::opinions)): one showing
    /// the chain followed puts the block's provider off it; two showing the same new block
    /// confirm the reorg; with no agreement the block is asked for again after the poll
    /// interval. With one endpoint, or when no other provider has answered three times in a
    /// row, its word is taken.
    async fn disputed(&mut self, claimed: FollowedBlock) -> Result<(), FollowError> {
        let Some(by) = self.served.clone().filter(|_| self.has_others()) else {
            return self.reorg(None).await;
        };
        match self.opinions(&claimed, by.clone()).await {
            Verdict::Agreed { on, .. } => {
                self.unconfirmed = 0;
                self.reorg(Some(&on)).await
            }
            Verdict::Ours => {
                self.unconfirmed = 0;
                Ok(())
            }
            Verdict::Unsettled { answered } => {
                if self.lone_word(answered) {
                    return self.reorg(Some(&by)).await;
                }
                self.pause().await;
                Ok(())
            }
        }
    }

    /// What the other providers show at the height of `claimed` (shown by `by`), asked one
    /// by one until two answers agree. Every provider whose block lost (to the chain followed,
    /// or to two that agree) is put off the chain for a while.
    async fn opinions(&mut self, claimed: &FollowedBlock, by: EndpointId) -> Verdict {
        let mut shown: Vec<(B256, EndpointId)> = vec![(claimed.hash, by.clone())];
        let mut asked = vec![by];
        let mut answered = false;
        while let Some((answer, from)) = self.ask_next(claimed.number, &mut asked).await {
            answered = true;
            let Some(other) = answer else { continue };
            let verdict = if self.on_chain(&other) {
                Verdict::Ours
            } else if let Some(i) = shown.iter().position(|(hash, _)| *hash == other.hash) {
                let (hash, on) = shown.swap_remove(i);
                Verdict::Agreed { hash, on }
            } else {
                shown.push((other.hash, from));
                continue;
            };
            for (_, id) in shown {
                self.avoid_off_chain(id);
            }
            return verdict;
        }
        Verdict::Unsettled { answered }
    }

    /// Block `number` from a provider not yet `asked` (nor off the chain), which is added to
    /// `asked`: `Some((None, id))` when it does not have the block. `None` once every
    /// provider was asked, or when none of the others answered.
    async fn ask_next(
        &mut self,
        number: u64,
        asked: &mut Vec<EndpointId>,
    ) -> Option<(Option<FollowedBlock>, EndpointId)> {
        if asked.len() >= self.transport.endpoint_ids().len() {
            return None;
        }
        let answer = self.read::<Option<Header>>("eth_getBlockByNumber", by_number(number), asked).await?;
        let from = self.served.clone().filter(|id| !asked.contains(id))?;
        asked.push(from.clone());
        Some((answer.map(|h| h.block()), from))
    }

    /// `endpoint`'s blocks were off the chain followed: reads avoid it for a while.
    fn avoid_off_chain(&mut self, endpoint: EndpointId) {
        self.stats.off_chain += 1;
        self.off_chain.retain(|(id, _)| *id != endpoint);
        self.off_chain.push((endpoint, tokio::time::Instant::now() + OFF_CHAIN_FOR));
    }

    /// Whether `block` is one of the blocks yielded, or the next one after the last.
    fn on_chain(&self, block: &FollowedBlock) -> bool {
        self.ring.iter().any(|(b, _)| b.hash == block.hash)
            || self
                .ring
                .back()
                .is_some_and(|(last, _)| last.number + 1 == block.number && last.hash == block.parent_hash)
    }

    /// The block at `self.next` does not extend the last one yielded: finds the newest block
    /// remembered that is still canonical and queues the reorg of those after it.
    /// The fork point is searched at `on`, the provider that showed the new branch (when
    /// there are others): another one, on a chain of its own, would show no fork point.
    async fn reorg(&mut self, on: Option<&EndpointId>) -> Result<(), FollowError> {
        let others: Vec<EndpointId> = match on {
            Some(on) => {
                // Its new branch was confirmed: it is not off the chain, unless it serves
                // another chain id than the one set.
                self.off_chain.retain(|(id, _)| id != on);
                if !self.on_expected_chain(on).await {
                    self.pause().await;
                    return Ok(());
                }
                self.transport.endpoint_ids().iter().filter(|id| *id != on).cloned().collect()
            }
            None => Vec::new(),
        };
        let mut keep = None;
        for i in (0..self.ring.len()).rev() {
            let (block, _) = self.ring[i];
            let Some(now) = self.block_by_number(block.number, &others).await else {
                // Unknown now: try again later rather than guess.
                self.pause().await;
                return Ok(());
            };
            if now.hash == block.hash {
                keep = Some(i);
                break;
            }
        }
        let Some(keep) = keep else {
            if let Some(on) = on {
                if self.kept_elsewhere(on).await {
                    // Providers that agree on a chain of their own, not a reorg of this one.
                    self.avoid_off_chain(on.clone());
                    return Ok(());
                }
            }
            let restart_from = self.ring.front().map_or(self.next, |(b, _)| b.number);
            return Err(FollowError::TooDeep { restart_from });
        };
        let mut dropped: Vec<(FollowedBlock, Vec<Log>)> = self.ring.drain(keep + 1..).collect();
        dropped.reverse();
        for (_, logs) in &mut dropped {
            logs.iter_mut().for_each(|log| log.removed = true);
        }
        self.next = self.ring.back().map_or(self.next, |(b, _)| b.number + 1);
        self.stats.reorgs += 1;
        let served_by = self.served.clone();
        let kept = self.ring.back().map_or(0, |(b, _)| b.number);
        self.transport.failover().shared.emit(|| crate::Event::Reorged {
            depth: dropped.len() as u64,
            kept,
            endpoint: served_by.as_ref(),
        });
        self.pending.push_back(ChainEvent::Reorg { depth: dropped.len() as u64, dropped, served_by });
        Ok(())
    }

    /// Whether a provider other than `on` still has the last block yielded: then the branch
    /// `on` showed shares no remembered block with a chain that still exists, and is another
    /// chain (two providers on the same wrong one), not a reorg deeper than the ring.
    async fn kept_elsewhere(&mut self, on: &EndpointId) -> bool {
        let Some(last) = self.ring.back().map(|(b, _)| *b) else { return false };
        let mut asked = vec![on.clone()];
        while let Some((answer, _)) = self.ask_next(last.number, &mut asked).await {
            match answer {
                Some(block) if block.hash == last.hash => return true,
                Some(_) => {}
                // A provider without the block says nothing either way.
                None => return false,
            }
        }
        false
    }

    /// The block now at the height of the last one yielded, when it is another one.
    async fn tip_replaced(&mut self) -> Option<FollowedBlock> {
        let last = self.ring.back().map(|(b, _)| *b)?;
        self.block_by_number(last.number, &[])
            .await
            .map(|now| now.block())
            .filter(|now| now.hash != last.hash)
    }

    async fn start_number(&mut self, start: Start) -> Result<u64, FollowError> {
        match start {
            Start::Number(n) => Ok(n),
            Start::Hash(hash) => {
                let header: Option<Header> = self
                    .transport
                    .call("eth_getBlockByHash", (hash, false))
                    .await
                    .map_err(FollowError::Start)?;
                let header = header.ok_or_else(|| {
                    FollowError::Start(TransportErrorKind::custom_str(&format!(
                        "no provider knows block {hash}"
                    )))
                })?;
                let number = header.number.to::<u64>();
                // A block a reorg replaced may still be known by its hash: the chain is not there.
                if let Some(now) = self.block_by_number(number, &[]).await.filter(|now| now.hash != hash) {
                    return Err(FollowError::Start(TransportErrorKind::custom_str(&format!(
                        "block {hash} is not on the chain: block {number} is {} now",
                        now.hash
                    ))));
                }
                Ok(number)
            }
            Start::Head => loop {
                if let Some(head) = self.read_head().await {
                    break Ok(head);
                }
                self.pause().await;
            },
            Start::After(last) => loop {
                match self.block_by_number(last.number, &[]).await.map(|h| h.block()) {
                    Some(now) if now.hash == last.hash => {
                        // The block the caller had: the next one must chain on from it.
                        self.ring.push_back((now, Vec::new()));
                        break Ok(last.number + 1);
                    }
                    Some(_) => break Err(FollowError::TooDeep { restart_from: last.number }),
                    None => self.pause().await,
                }
            },
        }
    }

    /// The head to follow up to, and, when it shows no new block, the block now at the height
    /// of the last one yielded if that is another block (a reorg at the same height).
    /// Unpaired, both are read in one batch (one provider's view of both); paired, the head
    /// is the agreed one and the last block is read alone, when needed.
    async fn poll_head(&mut self) -> (Option<u64>, Option<FollowedBlock>) {
        let last = self.ring.back().map(|(b, _)| *b);
        if let Some(last) = last.filter(|_| self.transport.agreed_head().is_none()) {
            let (avoid, forgive) = self.asking(&[]);
            let head = ("eth_blockNumber", ());
            let tip = ("eth_getBlockByNumber", by_number(last.number));
            let answer =
                self.transport.call_pair::<alloy_primitives::U64, Option<Header>>(head, tip, &avoid).await;
            match self.settled(answer, forgive) {
                Some((Some(head), tip)) => {
                    let head = head.to::<u64>();
                    let tip = tip.flatten().map(|h| h.block());
                    return (Some(head), tip.filter(|t| t.hash != last.hash && head < self.next));
                }
                // The batch was not answered as one (a provider that refuses batches): the
                // calls one by one, below.
                Some(_) => {}
                None => return (None, None),
            }
        }
        let head = self.read_head().await;
        let tip = match head {
            Some(head) if head < self.next => self.tip_replaced().await,
            _ => None,
        };
        (head, tip)
    }

    /// The head to follow up to: with a monitor paired, the highest block every admitted
    /// provider has; else `eth_blockNumber`. `None` when no provider answered.
    async fn read_head(&mut self) -> Option<u64> {
        if let Some(agreed) = self.transport.agreed_head() {
            return Some(agreed);
        }
        let head: alloy_primitives::U64 = self.read("eth_blockNumber", (), &[]).await?;
        Some(head.to::<u64>())
    }

    /// Block `number`, read from none of `avoid`.
    async fn block_by_number(&mut self, number: u64, avoid: &[EndpointId]) -> Option<Header> {
        self.read::<Option<Header>>("eth_getBlockByNumber", by_number(number), avoid).await.flatten()
    }

    /// Blocks `from` to `from + count - 1`, in one request (a batch when more than one);
    /// `None` for a block the provider does not have, and all `None` when no provider
    /// answered.
    async fn blocks_from(&mut self, from: u64, count: u64) -> Vec<Option<Header>> {
        if count <= 1 {
            return vec![self.block_by_number(from, &[]).await];
        }
        let params = (from..from + count).map(by_number).collect();
        self.read_batch::<Option<Header>, _>("eth_getBlockByNumber", params)
            .await
            .into_iter()
            .map(Option::flatten)
            .collect()
    }

    /// The logs matching `filter` of each block of `blocks`, each read by the block's hash, in
    /// one request; `None` unless every block's answer came.
    async fn logs_of(&mut self, filter: Filter, blocks: &[FollowedBlock]) -> Option<Vec<Vec<Log>>> {
        if let [block] = blocks {
            let logs = self.read("eth_getLogs", [filter.at_block_hash(block.hash)], &[]).await?;
            return Some(vec![logs]);
        }
        let params = blocks.iter().map(|b| [filter.clone().at_block_hash(b.hash)]).collect();
        self.read_batch::<Vec<Log>, _>("eth_getLogs", params).await.into_iter().collect()
    }

    /// One batch of `method` calls through the transport, one per entry of `params`, to no
    /// provider found off the chain: each call's result, `None` where it failed (every one
    /// when no provider answered).
    async fn read_batch<R: DeserializeOwned, P: alloy_json_rpc::RpcSend>(
        &mut self,
        method: &'static str,
        params: Vec<P>,
    ) -> Vec<Option<R>> {
        let n = params.len();
        let (avoid, forgive) = self.asking(&[]);
        let answer = self.transport.call_batch(method, params, &avoid).await;
        self.settled(answer, forgive).unwrap_or_else(|| (0..n).map(|_| None).collect())
    }

    /// One read through the transport, to none of `avoid` (nor a provider found off the
    /// chain); `None` (counted) when no provider answered it.
    async fn read<R: DeserializeOwned>(
        &mut self,
        method: &'static str,
        params: impl alloy_json_rpc::RpcSend,
        avoid: &[EndpointId],
    ) -> Option<R> {
        let (avoid, forgive) = self.asking(avoid);
        let answer = self.transport.call_served(method, params, &avoid).await;
        self.settled(answer, forgive)
    }

    /// Before a request (counted): the endpoints it avoids (`avoid` and those off the chain),
    /// and whether its failure forgives those off the chain, which it does when they were
    /// all it avoided (a second opinion, asked of the others, failing says nothing of them).
    fn asking(&mut self, avoid: &[EndpointId]) -> (Vec<EndpointId>, bool) {
        self.stats.requests += 1;
        let all = self.avoiding(avoid);
        let forgive = avoid.is_empty() && !all.is_empty();
        (all, forgive)
    }

    /// After a request: its answer, the endpoint that gave it kept in `served`; `None` when
    /// no provider answered (see [`failed`](Follower::failed)).
    fn settled<T>(&mut self, answer: TransportResult<(T, Option<EndpointId>)>, forgive: bool) -> Option<T> {
        match answer {
            Ok((value, served)) => {
                self.served = served;
                Some(value)
            }
            Err(_) => {
                self.failed(forgive);
                None
            }
        }
    }

    /// `avoid`, and the providers still avoided for being off the chain.
    fn avoiding(&mut self, avoid: &[EndpointId]) -> Vec<EndpointId> {
        let now = tokio::time::Instant::now();
        self.off_chain.retain(|(_, until)| *until > now);
        let mut all = avoid.to_vec();
        all.extend(self.off_chain.iter().map(|(id, _)| id.clone()).filter(|id| !avoid.contains(id)));
        all
    }

    /// A read no provider answered: counted, and when it avoided providers only for being
    /// off the chain (`forgive`), they are heard again (each of their blocks is still checked
    /// against the chain).
    fn failed(&mut self, forgive: bool) {
        self.stats.retried += 1;
        if forgive {
            self.off_chain.clear();
        }
    }

    /// The block time, from the last (up to [`LEARN_WINDOW`]) blocks yielded: the span of
    /// their timestamps over their count, so that blocks faster than a second (whose
    /// timestamps, in whole seconds, repeat) are learnt too. Kept while the span is 0.
    fn learn_block_time(&mut self) {
        let (Some((newer, _)), Some((older, _))) = (
            self.ring.back(),
            self.ring.iter().rev().nth(LEARN_WINDOW.min(self.ring.len().saturating_sub(1))),
        ) else {
            return;
        };
        if let Some(learnt) = block_time(older, newer) {
            self.block_time = Some(learnt);
        }
    }

    /// Before the first block, when no poll interval was set: the block time from two blocks
    /// before the start ([`LEARN_WINDOW`] apart), in one request, so that the first polls
    /// already follow it. Nothing is learnt when the request fails.
    async fn learn_from_history(&mut self) {
        let Some(older) = self.next.checked_sub(1 + LEARN_WINDOW as u64) else { return };
        let params = vec![by_number(older), by_number(self.next - 1)];
        let headers = self.read_batch::<Option<Header>, _>("eth_getBlockByNumber", params).await;
        if let [Some(Some(older)), Some(Some(newer))] = headers.as_slice() {
            self.block_time = block_time(&older.block(), &newer.block()).or(self.block_time);
        }
    }

    /// Waits the poll interval, or less when a subscribed provider announces a new head.
    async fn pause(&mut self) {
        let interval = self.interval();
        #[cfg(feature = "ws")]
        if let Some(wake) = &mut self.wake {
            if wake.wait(interval).await {
                self.stats.woken += 1;
            }
            return;
        }
        tokio::time::sleep(interval).await;
    }

    fn interval(&self) -> Duration {
        self.poll.unwrap_or_else(|| {
            self.block_time.map_or(Duration::from_secs(1), |t| (t / 2).max(Duration::from_millis(50)))
        })
    }
}

#[cfg(test)]
mod tests {
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

//! Reads and batches: the head, blocks and logs read through the transport, each answer
//! settled (who served it, which providers to avoid).

use alloy_primitives::B256;
use alloy_rpc_types_eth::{Filter, Log};
use alloy_transport::TransportResult;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::{FollowedBlock, Follower, by_number};
use crate::EndpointId;

/// The fields of a block header the follower (and a bundle at the head) reads.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Header {
    pub(super) number: alloy_primitives::U64,
    pub(super) hash: B256,
    parent_hash: B256,
    timestamp: alloy_primitives::U64,
    /// The block's logs bloom, when the provider gave it: every log's address and topics are
    /// in it.
    #[serde(default)]
    logs_bloom: Option<alloy_primitives::Bloom>,
    /// The root of the block's receipts trie, when the provider gave it.
    #[serde(default)]
    receipts_root: Option<B256>,
}

/// What the follower keeps of a block it read, for the check of its logs.
#[derive(Clone, Copy, Debug)]
pub(super) struct Kept {
    pub(super) hash: B256,
    pub(super) bloom: Option<alloy_primitives::Bloom>,
    pub(super) receipts_root: Option<B256>,
}

/// Whether `log` names `block` where it names one (its hash, its number).
pub(super) fn names(log: &Log, block: &FollowedBlock) -> bool {
    log.block_hash.is_none_or(|hash| hash == block.hash) && log.block_number.is_none_or(|n| n == block.number)
}

impl Header {
    /// What the follower keeps of it for the check of its logs.
    pub(super) fn kept(&self) -> Kept {
        Kept { hash: self.hash, bloom: self.logs_bloom, receipts_root: self.receipts_root }
    }

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
    /// The logs of `run`'s blocks, a list per block (empty lists without a filter), read in
    /// one request; when that batch is not answered, the first block's alone (`run` cut to
    /// it). `None` when they could not be read, or when a provider answered with logs of
    /// another block (that provider is then put off the chain).
    pub(super) async fn logs_for(&mut self, run: &mut Vec<FollowedBlock>) -> Option<Vec<Vec<Log>>> {
        let Some(filter) = self.filter.clone() else { return Some(vec![Vec::new(); run.len()]) };
        if self.prove {
            // Each block of the run proven in turn; the run cut before the first that could
            // not be (so the blocks read ahead are not read again for each block).
            let mut proven = Vec::with_capacity(run.len());
            for (at, block) in run.clone().into_iter().enumerate() {
                match self.proven_logs(&filter, block).await {
                    Some(Some(logs)) => proven.push(logs),
                    Some(None) if at == 0 => return None,
                    None if at == 0 => break,
                    Some(None) | None => {
                        run.truncate(at);
                        return Some(proven);
                    }
                }
            }
            if !proven.is_empty() {
                return Some(proven);
            }
            run.truncate(1);
        }
        let logs = match self.logs_of(filter.clone(), run).await {
            None if run.len() > 1 => {
                run.truncate(1);
                self.logs_of(filter, run).await?
            }
            logs => logs?,
        };
        let unfit = run.iter().zip(&logs).any(|(block, logs)| !self.logs_fit(block, logs));
        if unfit {
            if let Some(by) = self.served.clone().filter(|_| self.has_others()) {
                self.avoid_off_chain(by);
            }
            return None;
        }
        Some(logs)
    }

    /// Whether `logs` can be `block`'s: each names the block (its hash and number, where the
    /// log gives them), their indexes strictly increase, and the block's logs bloom (when its
    /// header gave one) holds each log's address and topics. A provider that adds a log, or
    /// hands over another block's, fails this; one that drops a log does not (see
    /// [`Follower::logs`]).
    fn logs_fit(&self, block: &FollowedBlock, logs: &[Log]) -> bool {
        use alloy_primitives::BloomInput;
        let bloom = self.kept(block).and_then(|kept| kept.bloom);
        let mut last = None;
        for log in logs {
            let names_it = names(log, block);
            let ordered = match (last, log.log_index) {
                (Some(previous), Some(index)) => index > previous,
                _ => true,
            };
            last = log.log_index.or(last);
            let in_bloom = bloom.is_none_or(|bloom| {
                bloom.contains_input(BloomInput::Raw(log.address().as_slice()))
                    && log
                        .topics()
                        .iter()
                        .all(|topic| bloom.contains_input(BloomInput::Raw(topic.as_slice())))
            });
            if !(names_it && ordered && in_bloom) {
                return false;
            }
        }
        true
    }

    /// Keeps what the check of `header`'s logs needs (the latest few blocks').
    pub(super) fn keep(&mut self, header: &Header) {
        if self.kept.len() >= 2 * super::BACKFILL as usize {
            self.kept.pop_front();
        }
        self.kept.push_back(header.kept());
    }

    /// What was kept of `block`, if it was read lately.
    pub(super) fn kept(&self, block: &FollowedBlock) -> Option<Kept> {
        self.kept.iter().find(|kept| kept.hash == block.hash).copied()
    }

    /// The head to follow up to, and, when it shows no new block, the block now at the height
    /// of the last one yielded if that is another block (a reorg at the same height).
    /// Unpaired, both are read in one batch (one provider's view of both); paired, the head
    /// is the agreed one and the last block is read alone, when needed.
    pub(super) async fn poll_head(&mut self) -> (Option<u64>, Option<FollowedBlock>) {
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
    pub(super) async fn read_head(&mut self) -> Option<u64> {
        if let Some(agreed) = self.transport.agreed_head() {
            return Some(agreed);
        }
        let head: alloy_primitives::U64 = self.read("eth_blockNumber", (), &[]).await?;
        Some(head.to::<u64>())
    }

    /// Block `number`, read from none of `avoid`.
    pub(super) async fn block_by_number(&mut self, number: u64, avoid: &[EndpointId]) -> Option<Header> {
        self.read::<Option<Header>>("eth_getBlockByNumber", by_number(number), avoid).await.flatten()
    }

    /// Blocks `from` to `from + count - 1`, in one request (a batch when more than one);
    /// `None` for a block the provider does not have, and all `None` when no provider
    /// answered.
    pub(super) async fn blocks_from(&mut self, from: u64, count: u64) -> Vec<Option<Header>> {
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
    pub(super) async fn logs_of(
        &mut self,
        filter: Filter,
        blocks: &[FollowedBlock],
    ) -> Option<Vec<Vec<Log>>> {
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
    pub(super) async fn read_batch<R: DeserializeOwned, P: alloy_json_rpc::RpcSend>(
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
    pub(super) async fn read<R: DeserializeOwned>(
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
    pub(super) fn asking(&mut self, avoid: &[EndpointId]) -> (Vec<EndpointId>, bool) {
        self.stats.requests += 1;
        let all = self.avoiding(avoid);
        let forgive = avoid.is_empty() && !all.is_empty();
        (all, forgive)
    }

    /// After a request: its answer, the endpoint that gave it kept in `served`; `None` when
    /// no provider answered (see [`failed`](Follower::failed)).
    pub(super) fn settled<T>(
        &mut self,
        answer: TransportResult<(T, Option<EndpointId>)>,
        forgive: bool,
    ) -> Option<T> {
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
    pub(super) fn avoiding(&mut self, avoid: &[EndpointId]) -> Vec<EndpointId> {
        let now = tokio::time::Instant::now();
        self.off_chain.retain(|(_, until)| *until > now);
        let mut all = avoid.to_vec();
        all.extend(self.off_chain.iter().map(|(id, _)| id.clone()).filter(|id| !avoid.contains(id)));
        all
    }

    /// A read no provider answered: counted, and when it avoided providers only for being
    /// off the chain (`forgive`), they are heard again (each of their blocks is still checked
    /// against the chain).
    pub(super) fn failed(&mut self, forgive: bool) {
        self.stats.retried += 1;
        if forgive {
            self.off_chain.clear();
        }
    }
}

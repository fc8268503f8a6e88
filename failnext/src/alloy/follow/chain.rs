//! The chain ring and its reorgs: where a follower starts, whether a block is on the chain
//! it follows, and a reorg repaired from the blocks it remembers.

use alloy_rpc_types_eth::Log;
use alloy_transport::TransportError;

use super::opinions::Verdict;
use super::reads::Header;
use super::{ChainEvent, FollowedBlock, Follower, Start};
use crate::EndpointId;
use crate::alloy::failure::raised::{Detail, Raised};

impl Follower {
    /// Whether the first block to yield may be: nothing was yielded yet, so no parent link
    /// vouches for it, and the other providers are asked for the block at its height (see
    /// [`opinions`](Follower::opinions)). A second provider showing it settles it; two showing
    /// another block outvote it; when no other answers, its word is taken only the third time
    /// in a row. Otherwise it is asked for again: one provider off the chain at the start does
    /// not set the chain followed.
    pub(super) async fn anchored(&mut self, first: &FollowedBlock, by: Option<&EndpointId>) -> bool {
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

    /// Whether `block` is one of the blocks yielded, or the next one after the last.
    pub(super) fn on_chain(&self, block: &FollowedBlock) -> bool {
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
    pub(super) async fn reorg(&mut self, on: Option<&EndpointId>) -> Result<(), TransportError> {
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
            return Err(Raised::new(Detail::ReorgTooDeep { restart_from }).into_transport());
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
    pub(super) async fn kept_elsewhere(&mut self, on: &EndpointId) -> bool {
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
    pub(super) async fn tip_replaced(&mut self) -> Option<FollowedBlock> {
        let last = self.ring.back().map(|(b, _)| *b)?;
        self.block_by_number(last.number, &[])
            .await
            .map(|now| now.block())
            .filter(|now| now.hash != last.hash)
    }

    pub(super) async fn start_number(&mut self, start: Start) -> Result<u64, TransportError> {
        match start {
            Start::Number(n) => Ok(n),
            Start::Hash(hash) => {
                let header: Option<Header> = self.transport.call("eth_getBlockByHash", (hash, false)).await?;
                let header = header.ok_or_else(|| {
                    Raised::new(Detail::StartUnknown { hash, replaced_by: None }).into_transport()
                })?;
                let number = header.number.to::<u64>();
                // A block a reorg replaced may still be known by its hash: the chain is not there.
                if let Some(now) = self.block_by_number(number, &[]).await.filter(|now| now.hash != hash) {
                    let replaced_by = Some(now.hash);
                    return Err(Raised::new(Detail::StartUnknown { hash, replaced_by }).into_transport());
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
                    Some(_) => {
                        break Err(
                            Raised::new(Detail::ReorgTooDeep { restart_from: last.number }).into_transport()
                        );
                    }
                    None => self.pause().await,
                }
            },
        }
    }
}

//! The opinions of other providers: when one provider shows a block off the chain followed,
//! the others are asked, and a provider shown off the chain is avoided for a while.

use std::time::Duration;

use alloy_primitives::B256;

use super::reads::Header;
use super::{FollowedBlock, Follower, by_number};
use crate::EndpointId;

/// How many times in a row a block off the chain followed is asked of the other providers
/// while none of them answers (all down), before the one provider answering is believed.
const UNCONFIRMED_TRIES: u32 = 3;

/// How long the follower's reads avoid a provider that showed a block off the chain it
/// follows (another chain, a branch of its own) while another provider showed the chain.
pub(super) const OFF_CHAIN_FOR: Duration = Duration::from_secs(5);

/// What the other providers said of a block off the chain followed.
pub(super) enum Verdict {
    /// Two providers showed the block with this hash, `on` among them.
    Agreed { hash: B256, on: EndpointId },
    /// A provider showed the chain followed.
    Ours,
    /// No two answers agreed; whether any other provider answered.
    Unsettled { answered: bool },
}

impl Follower {
    /// Whether the transport has other endpoints than one: whose answers can be checked
    /// against each other.
    pub(super) fn has_others(&self) -> bool {
        self.transport.endpoint_ids().len() > 1
    }

    /// Whether `endpoint` serves the [chain id](Follower::chain_id) set (always, without
    /// one), asked of it alone. A provider that answers another is put off the chain; one
    /// that does not answer is not believed this time.
    pub(super) async fn on_expected_chain(&mut self, endpoint: &EndpointId) -> bool {
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
    pub(super) fn lone_word(&mut self, answered: bool) -> bool {
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
    pub(super) async fn disputed(
        &mut self,
        claimed: FollowedBlock,
    ) -> Result<(), alloy_transport::TransportError> {
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
    pub(super) async fn opinions(&mut self, claimed: &FollowedBlock, by: EndpointId) -> Verdict {
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
    pub(super) async fn ask_next(
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
    pub(super) fn avoid_off_chain(&mut self, endpoint: EndpointId) {
        self.stats.off_chain += 1;
        self.off_chain.retain(|(id, _)| *id != endpoint);
        self.off_chain.push((endpoint, tokio::time::Instant::now() + OFF_CHAIN_FOR));
    }
}

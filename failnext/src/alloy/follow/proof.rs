//! Logs proven complete: a block's logs taken from its receipts, which must hash to the
//! receipts root of its header (see [`Follower::prove_logs`]).

use alloy_consensus::ReceiptEnvelope;
use alloy_primitives::B256;
use alloy_rpc_types_eth::{Filter, Log, TransactionReceipt};

use super::{FollowedBlock, Follower};

impl Follower {
    /// `block`'s logs matching `filter`, from its receipts: `Some(Some(logs))` when they hash
    /// to its receipts root; `Some(None)` when they do not (the provider is put off the chain;
    /// read again later); `None` when they cannot be proven (no receipts root known, no
    /// provider gave the receipts, or receipts that are not Ethereum's): the caller reads the
    /// logs as without proof.
    pub(super) async fn proven_logs(
        &mut self,
        filter: &Filter,
        block: FollowedBlock,
    ) -> Option<Option<Vec<Log>>> {
        let root = self.kept(&block)?.receipts_root?;
        let receipts: Vec<TransactionReceipt> =
            self.read::<Option<Vec<TransactionReceipt>>>("eth_getBlockReceipts", [block.hash], &[]).await??;
        let envelopes: Vec<ReceiptEnvelope> =
            receipts.iter().map(|r| r.inner.clone().map_logs(|log: Log| log.inner)).collect();
        if alloy_consensus::proofs::calculate_receipt_root(&envelopes) != root {
            if let Some(by) = self.served.clone().filter(|_| self.has_others()) {
                self.avoid_off_chain(by);
            }
            return Some(None);
        }
        let logs = receipts
            .into_iter()
            .flat_map(|receipt| receipt.inner.logs().to_vec())
            .filter(|log| filter.matches(&log.inner) && names(log, &block))
            .collect();
        Some(Some(logs))
    }
}

/// Whether `log` (from a receipt) names `block` where it names one.
fn names(log: &Log, block: &FollowedBlock) -> bool {
    log.block_hash.is_none_or(|hash: B256| hash == block.hash)
        && log.block_number.is_none_or(|n| n == block.number)
}

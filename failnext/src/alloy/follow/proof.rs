//! Logs proven complete: a block's logs taken from its receipts, which must hash to the
//! receipts root of its header (see [`Follower::prove_logs`]).

use alloy_consensus::ReceiptEnvelope;
use alloy_primitives::B256;
use alloy_rpc_types_eth::{Filter, Log, TransactionReceipt};

use super::reads::names;
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
        let whole = match self.receipts_by_transaction {
            false => {
                self.read::<Option<Vec<TransactionReceipt>>>("eth_getBlockReceipts", [block.hash], &[]).await
            }
            true => None,
        };
        let receipts = match whole {
            Some(Some(receipts)) => receipts,
            Some(None) => return None,
            None => {
                // No provider gave the block's receipts in one call (a node without
                // `eth_getBlockReceipts`): from now on, one receipt per transaction.
                self.receipts_by_transaction = true;
                self.receipts_of_each(block.hash).await?
            }
        };
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

impl Follower {
    /// The receipts of block `hash`, one `eth_getTransactionReceipt` per transaction (in one
    /// batch), in the block's order; `None` unless every one came.
    async fn receipts_of_each(&mut self, hash: B256) -> Option<Vec<TransactionReceipt>> {
        #[derive(serde::Deserialize)]
        struct Hashes {
            transactions: Vec<B256>,
        }
        let block: Hashes = self.read::<Option<Hashes>>("eth_getBlockByHash", (hash, false), &[]).await??;
        if block.transactions.is_empty() {
            return Some(Vec::new());
        }
        let params: Vec<[B256; 1]> = block.transactions.iter().map(|tx| [*tx]).collect();
        let receipts =
            self.read_batch::<Option<TransactionReceipt>, _>("eth_getTransactionReceipt", params).await;
        receipts.into_iter().map(Option::flatten).collect()
    }
}

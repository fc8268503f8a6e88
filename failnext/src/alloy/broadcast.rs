//! Broadcasts: the hash and sender of a raw transaction, computed locally, and the words a
//! node uses for a transaction it already has.

use alloy_consensus::transaction::SignerRecoverable;
use alloy_eips::eip2718::Decodable2718;
use alloy_primitives::{Address, B256, keccak256};

/// A raw transaction as the transport sees it: its hash and, when recoverable, its sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RawTx {
    pub(crate) hash: B256,
    pub(crate) sender: Option<Address>,
}

impl RawTx {
    /// Decodes `raw` (EIP-2718: legacy, typed, or an EIP-4844 transaction in its network form
    /// with blobs). Bytes that do not decode still get a hash, `keccak256(raw)`, which is the
    /// transaction hash of every form but the blob network form.
    pub(crate) fn of(raw: &[u8]) -> RawTx {
        let mut buf = raw;
        if let Ok(tx) = alloy_consensus::transaction::PooledTransaction::decode_2718(&mut buf) {
            return RawTx { hash: *tx.hash(), sender: tx.recover_signer().ok() };
        }
        let mut buf = raw;
        if let Ok(tx) = alloy_consensus::TxEnvelope::decode_2718(&mut buf) {
            return RawTx { hash: *tx.hash(), sender: tx.recover_signer().ok() };
        }
        RawTx { hash: keccak256(raw), sender: None }
    }
}

/// Whether a JSON-RPC error message says the node already has this very transaction (geth
/// "already known", Nethermind "AlreadyKnown", Besu "Known transaction", Erigon/Reth
/// "already imported", OpenEthereum "Transaction with the same hash was already imported").
pub(crate) fn is_already_known(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("already known")
        || m.contains("alreadyknown")
        || m.contains("known transaction")
        || m.contains("already imported")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undecodable_bytes_still_get_their_keccak_as_hash() {
        let tx = RawTx::of(&[0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(tx.hash, keccak256([0xde, 0xad, 0xbe, 0xef]));
        assert_eq!(tx.sender, None);
    }

    #[test]
    fn already_known_in_the_words_of_each_client() {
        for m in ["already known", "AlreadyKnown", "Known transaction (0x12)", "transaction already imported"]
        {
            assert!(is_already_known(m), "{m}");
        }
        assert!(!is_already_known("nonce too low"));
        assert!(!is_already_known("replacement transaction underpriced"));
    }
}

//! `AgreedHead`: the head that enough eligible providers of one check report with the same
//! hash. Data only, so a [`Snapshot`](crate::Snapshot) can hold one; the rule that finds it
//! is in `agreement.rs`.

use failnext::EndpointId;

use crate::probe::block_hash::BlockHash;

/// A block that enough eligible providers of one check reported as their head, with the same
/// hash: [`Snapshot::agreed`](crate::Snapshot::agreed).
///
/// A block that several independent providers report, by hash, is one a read can be pinned to
/// (an EIP-1898 block parameter, `{"blockHash": "0x…"}`) and expected to find on any of them.
/// It is corroborated, not final: a reorg can still replace it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgreedHead {
    number: u64,
    hash: BlockHash,
    providers: Vec<EndpointId>,
}

impl AgreedHead {
    /// The head `(number, hash)` that `providers` reported (not empty, configured order).
    pub(crate) fn new(number: u64, hash: BlockHash, providers: Vec<EndpointId>) -> Self {
        AgreedHead { number, hash, providers }
    }

    /// The block's number.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// The block's hash.
    pub fn hash(&self) -> BlockHash {
        self.hash
    }

    /// The eligible providers that reported this block as their head, in configured order:
    /// at least as many as the [agreement](crate::MonitorBuilder::agreement) asks for (as
    /// clipped), never empty. Other providers may serve the block too (one a block ahead has
    /// it as well); these are the ones that said so.
    pub fn providers(&self) -> &[EndpointId] {
        &self.providers
    }
}

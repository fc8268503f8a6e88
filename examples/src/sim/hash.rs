//! The simulated block hashes: the chain id, the fork, a mark and the block number, so that
//! a hash can be read back.

/// The third word of every simulated block hash.
pub(crate) const HASH_MARK: u64 = 0xb10c_b10c_b10c_b10c;

/// The hash of block `number` on chain `chain_id`, on fork `fork` (0: the chain itself).
pub(crate) fn block_hash(chain_id: u64, fork: u64, number: u64) -> String {
    format!("0x{chain_id:016x}{fork:016x}{HASH_MARK:016x}{number:016x}")
}

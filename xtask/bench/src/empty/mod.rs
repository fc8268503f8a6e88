//! The `empty-behind` scenario: the empty answers of a provider a few blocks behind.
//!
//! Three loopback providers on one chain whose head advances by one block every
//! [`BLOCK_TIME`](scenario::BLOCK_TIME) from the contender's start. `primary` is [`BEHIND`](scenario::BEHIND) blocks behind: it answers
//! `eth_blockNumber` and `eth_getBlockByNumber("latest")` with its own head, `null` for a block,
//! transaction or receipt above it and `[]` for logs whose `toBlock` is above it (what a real
//! provider answers for what it has not got yet). `secondary` and `backup` are current.
//! Transaction hash `n` (32-byte big-endian) belongs to block `n`, one log per block.
//!
//! Every contender is an alloy `RpcClient`; [`LANES`](scenario::LANES) tasks each start a read every [`GAP`](scenario::GAP)
//! (open loop), rotating among `eth_getTransactionReceipt(tx of block head−k)`,
//! `eth_getBlockByNumber(head−k)` and `eth_getLogs(head−k..=head−k)` for `k` in `0..=2`, `head`
//! being the true head at the read's start: blocks the current providers have and the
//! primary has not. A read is correct when it returns that block's object (receipt, block, its
//! one log); an empty answer is wrong (a current provider had the block), and so is an error or
//! no answer within [`CALL_LIMIT`](scenario::CALL_LIMIT).
//!
//! Measured per contender: reads, the correct share, empty answers returned, other wrong
//! answers, requests per read (counted at the three servers, the failnext-blocklag monitor's
//! probes apart by their User-Agent), the monitor's probes per provider per second (from its
//! spawn to the last read), the primary's lag as the monitor last saw it, p50 and p99.

mod chain;
mod provider;
mod reads;
mod run;
mod scenario;
mod table;

pub(crate) use run::run;
pub(crate) use scenario::Row;
pub(crate) use table::{json, markdown};

#[cfg(test)]
mod tests;

//! The rules a round judges by, as configured, and what a probe measured besides its height.

use std::time::Duration;

use crate::judging::agreement;
use crate::judging::reference::Reference;
use crate::probe::block_hash::BlockHash;

/// The default of [`MonitorBuilder::stall_after`](crate::MonitorBuilder::stall_after).
pub(crate) const DEFAULT_STALL_AFTER: u32 = 3;

/// The rules of a round beyond the lag threshold, as configured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rules {
    /// Good checks in a row that re-admit an ineligible endpoint (at least 1).
    pub(crate) readmit_after: u32,
    /// Which height the others are compared with.
    pub(crate) reference: Reference,
    /// Also fit when at most this many seconds behind (blocks behind × block time).
    pub(crate) max_lag_secs: Option<u64>,
    /// The head is stalled when unchanged for more than this many block times.
    pub(crate) stall_after: u32,
    /// Matching `(number, hash)` reports that make an agreed head (at least 1; clipped).
    pub(crate) agreement: u32,
    /// A head older than this is stale (configured; `None`: [`clock::max_head_age`]'s
    /// default, under [`Reference::Plausible`] only).
    pub(crate) max_head_age: Option<Duration>,
}

/// What a check's probe of one endpoint measured besides its height.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Measured {
    /// How long its head call took, when it succeeded.
    pub(crate) latency: Option<Duration>,
    /// The hash of the head it reported, with the head-with-hash probe.
    pub(crate) hash: Option<BlockHash>,
    /// Its head block's timestamp (Unix seconds), when the probe read the block.
    pub(crate) timestamp: Option<u64>,
}

impl Default for Rules {
    /// The 0.1 rules.
    fn default() -> Self {
        Rules {
            readmit_after: 1,
            reference: Reference::Highest,
            max_lag_secs: None,
            stall_after: DEFAULT_STALL_AFTER,
            agreement: agreement::DEFAULT_AGREEMENT,
            max_head_age: None,
        }
    }
}

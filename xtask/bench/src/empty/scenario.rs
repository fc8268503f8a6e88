//! The `empty-behind` scenario's settings, its contenders, and one contender's figures.

use std::time::Duration;

/// The chain's head at the contender's start.
pub(super) const BASE: u64 = 0x1000;

/// One block every this long.
pub(super) const BLOCK_TIME: Duration = Duration::from_millis(50);

/// How many blocks the primary is behind.
pub(super) const BEHIND: u64 = 5;

/// Tasks sending reads.
pub(super) const LANES: usize = 4;

/// Each task starts a read this often (when the previous one has returned): ~500 reads/s.
pub(super) const GAP: Duration = Duration::from_millis(8);

/// Reads per contender (quick: a smoke run).
pub(super) const READS: usize = 2000;
pub(super) const QUICK_READS: usize = 60;

/// A contender starts no read after this long.
pub(super) const RUN_LIMIT: Duration = Duration::from_secs(20);

/// A read not answered within this counts as wrong and is abandoned.
pub(super) const CALL_LIMIT: Duration = Duration::from_secs(5);

/// The User-Agent of the monitor's probes (so the servers count them apart).
pub(super) const PROBE_AGENT: &str = "failnext-bench-empty-probe";

/// The contenders.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Peer {
    /// alloy's `Http` to the primary alone.
    AlloyHttp,
    /// `FallbackLayer::default()` over the three (`FallbackService::new(.., 3)`: every read to
    /// all three at once, the first `Ok` wins).
    Fallback,
    /// `FailoverTransport::builder(..).build()`: no monitor, so no per-provider heads.
    Failnext,
    /// The defaults paired with a monitor, `spawn(2 s)` as the README pastes it.
    Paired2s,
    /// The same, `spawn(5 s)`.
    Paired5s,
}

pub(super) const PEERS: [Peer; 5] =
    [Peer::AlloyHttp, Peer::Fallback, Peer::Failnext, Peer::Paired2s, Peer::Paired5s];

impl Peer {
    pub(super) fn name(self) -> &'static str {
        match self {
            Peer::AlloyHttp => "alloy Http (primary only)",
            Peer::Fallback => "alloy FallbackLayer (default: 3 at once)",
            Peer::Failnext => "failnext (defaults, no monitor)",
            Peer::Paired2s => "failnext (paired, spawn 2 s)",
            Peer::Paired5s => "failnext (paired, spawn 5 s)",
        }
    }

    pub(super) fn every(self) -> Option<Duration> {
        match self {
            Peer::Paired2s => Some(Duration::from_secs(2)),
            Peer::Paired5s => Some(Duration::from_secs(5)),
            _ => None,
        }
    }
}

/// One contender's figures.
#[derive(Debug)]
pub(crate) struct Row {
    pub(crate) peer: Peer,
    pub(crate) reads: u64,
    pub(crate) correct: u64,
    /// `null` / `[]` returned for a block the current providers had.
    pub(crate) empty: u64,
    /// Errors, timeouts and answers for another block.
    pub(crate) failed: u64,
    /// Requests the three servers received, probes excluded, per read.
    pub(crate) requests_per_read: f64,
    /// The monitor's probes per provider per second, from its spawn (the paired rows).
    pub(crate) probes_per_provider_s: Option<f64>,
    /// How many blocks behind the monitor last saw the primary (the paired rows).
    pub(crate) seen_lag: Option<u64>,
    pub(crate) p50_ms: f64,
    pub(crate) p99_ms: f64,
}

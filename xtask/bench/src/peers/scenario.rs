//! The peer table's scenarios (what the first provider does), its contenders, the settings of
//! a run, and one contender's figures in one scenario.

use std::time::Duration;

/// The good providers' head.
pub(crate) const HEAD: u64 = 0x1000;

/// How far behind the lagging primary is.
pub(super) const LAG: u64 = 20;

/// Tasks sending reads.
pub(super) const LANES: usize = 4;

/// Each task starts a read this often (when the previous one has returned).
pub(super) const GAP: Duration = Duration::from_millis(6);

/// A contender starts no read after this long (alloy's retry layer over a rate-limited
/// provider takes a second per read); the table shows how many it sent.
pub(super) const RUN_LIMIT: Duration = Duration::from_secs(15);

/// A read not answered within this counts as wrong and is abandoned.
pub(super) const CALL_LIMIT: Duration = Duration::from_secs(5);

/// The `slow` scenario: the good providers' latency, and the primary's.
pub(super) const SLOW_BASE: Duration = Duration::from_millis(100);
pub(super) const SLOW_PRIMARY: Duration = Duration::from_millis(300);

/// The hedge delay of `failnext + hedge 20 ms`.
pub(crate) const HEDGE_DELAY: Duration = Duration::from_millis(20);

/// The `flapping` primary is up, then down (503), for this long each, from its start.
pub(super) const FLAP: Duration = Duration::from_millis(150);

/// The `Retry-After` of the rate-limited primary, seconds.
pub(super) const RETRY_AFTER: u64 = 5;

/// The User-Agent of the failnext monitor's probes (so the server can count them apart).
pub(super) const PROBE_AGENT: &str = "failnext-bench-probe";

/// How often the paired rows' monitors probe each provider: the README's `spawn(2 s)`, and
/// `spawn(5 s)`.
pub(super) const CHECK_EVERY: Duration = Duration::from_secs(2);
pub(super) const CHECK_EVERY_SLOW: Duration = Duration::from_secs(5);

/// What the first provider does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    Healthy,
    Refused,
    Unavailable,
    RateLimited,
    Slow,
    Lagging,
    Flapping,
}

/// Every scenario, in run order.
pub(crate) const FAULTS: [Fault; 7] = [
    Fault::Healthy,
    Fault::Refused,
    Fault::Unavailable,
    Fault::RateLimited,
    Fault::Slow,
    Fault::Lagging,
    Fault::Flapping,
];

/// The contenders.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Peer {
    /// alloy's `Http` to the primary alone: what one provider gives.
    AlloyHttp,
    /// alloy's `Http` to a good provider alone (the `slow` scenario only: the backup's own
    /// latency, which hedging is measured against).
    AlloyHttpBackup,
    /// `FallbackLayer::default()` over three `Http`s: every read to the three best-ranked
    /// transports at once (its default `active_transport_count` is 3), the first `Ok` wins.
    Fallback,
    /// `FallbackLayer` with `active_transport_count` 1: each read to the best-ranked one only.
    FallbackOne,
    /// `RetryBackoffLayer::new(10, 100, 10_000)` over `FallbackLayer::default()`: rate-limit
    /// errors (429, -32005, ...) retried after their hint or 100 ms, up to 10 times.
    FallbackRetry,
    /// `FailoverTransport::builder(..).build()` (what `FailoverTransport::new` builds), on the
    /// same client as alloy's `Http` rows: the transport's defaults (adaptive breaker, JSON-RPC
    /// classifier, p95 hedge, failover budget, 30 s deadline).
    Failnext,
    /// failnext's defaults plus `Hedge::after(20 ms)` (the `slow` scenario only).
    FailnextHedge,
    /// The defaults paired with a failnext-blocklag monitor in one call:
    /// `FailoverTransport::builder(..).monitor(monitor.spawn(100 ms))`, the monitor with its
    /// own defaults, the first read once every provider's first probe has published.
    FailnextPaired,
    /// The same, with the monitor probing every 5 s (`spawn(5 s)`).
    FailnextPaired5s,
}

impl Peer {
    pub(super) fn name(self) -> &'static str {
        match self {
            Peer::AlloyHttp => "alloy Http (primary only)",
            Peer::AlloyHttpBackup => "alloy Http (backup only)",
            Peer::Fallback => "alloy FallbackLayer (default: 3 at once)",
            Peer::FallbackOne => "alloy FallbackLayer (1 at a time)",
            Peer::FallbackRetry => "alloy RetryBackoffLayer + FallbackLayer",
            Peer::Failnext => "failnext (defaults)",
            Peer::FailnextHedge => "failnext + hedge 20 ms",
            Peer::FailnextPaired => "failnext (paired, spawn 2 s)",
            Peer::FailnextPaired5s => "failnext (paired, spawn 5 s)",
        }
    }

    pub(super) fn is_failnext(self) -> bool {
        matches!(self, Peer::Failnext | Peer::FailnextHedge | Peer::FailnextPaired | Peer::FailnextPaired5s)
    }

    pub(super) fn is_fallback(self) -> bool {
        matches!(self, Peer::Fallback | Peer::FallbackOne | Peer::FallbackRetry)
    }
}

impl Fault {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Fault::Healthy => "healthy",
            Fault::Refused => "primary refused",
            Fault::Unavailable => "primary 503",
            Fault::RateLimited => "primary 200 + -32005, Retry-After: 5",
            Fault::Slow => "primary 200 ms slower (good ones 100 ms)",
            Fault::Lagging => "primary 20 blocks behind",
            Fault::Flapping => "primary flapping (150 ms up, 150 ms 503)",
        }
    }

    /// The contenders, in table order: the backup alone and the fixed hedge only where the
    /// hedge's claim is measured (the `slow` scenario).
    pub(super) fn peers(self) -> impl Iterator<Item = Peer> {
        const PEERS: [Peer; 9] = [
            Peer::AlloyHttp,
            Peer::AlloyHttpBackup,
            Peer::Fallback,
            Peer::FallbackOne,
            Peer::FallbackRetry,
            Peer::Failnext,
            Peer::FailnextHedge,
            Peer::FailnextPaired,
            Peer::FailnextPaired5s,
        ];
        let slow_only = |p: &Peer| matches!(p, Peer::AlloyHttpBackup | Peer::FailnextHedge);
        PEERS.into_iter().filter(move |p| self == Fault::Slow || !slow_only(p))
    }

    /// Reads per contender.
    pub(super) fn reads(self, quick: bool) -> usize {
        match (self, quick) {
            (Fault::Slow, false) => 120,
            (_, false) => 800,
            (Fault::Slow, true) => 8,
            (_, true) => 24,
        }
    }
}

/// One contender's figures in one scenario.
#[derive(Debug)]
pub(crate) struct Row {
    pub(crate) fault: Fault,
    pub(crate) peer: Peer,
    pub(crate) reads: u64,
    pub(crate) correct: u64,
    pub(crate) p50_ms: f64,
    pub(crate) p99_ms: f64,
    /// Requests that reached the bad provider (none in `healthy`): the client's own, without
    /// probes.
    pub(crate) to_bad: u64,
    /// The monitor's probes that reached the bad provider (the paired row only).
    pub(crate) probes: Option<u64>,
    /// The bad provider's breaker trials (failnext's rows; 0 for the others).
    pub(crate) trials: u64,
    /// Requests the three providers received in all, probes included.
    pub(crate) total_requests: u64,
    pub(crate) cpu_us: f64,
}

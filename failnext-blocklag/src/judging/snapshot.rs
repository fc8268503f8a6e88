//! `Snapshot`: one published comparison of block heights, and the [`Fitness`] of each
//! endpoint in it.

use std::fmt;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use crate::judging::agreed::AgreedHead;
use crate::judging::fitness::Fitness;
use crate::judging::head_timing::{self, HeadTiming};

use crate::judging::entry::SnapshotEntry;

/// The outcome of one check, immutable once published.
///
/// A [`Monitor`](crate::Monitor) answers every eligibility question from the latest published
/// snapshot; [`Monitor::snapshot`](crate::Monitor::snapshot) hands out the same `Arc`, for
/// logs and dashboards. Hold one `Arc<Snapshot>` for all the questions of one decision:
/// two separate loads may see two different checks.
///
/// Every configured endpoint has an entry, in configured order. An endpoint is eligible when
/// its probe succeeded and `highest - height <= max_lag` (or, with
/// [`max_lag_secs`](crate::MonitorBuilder::max_lag_secs), its [lag in time](Snapshot::lag_time)
/// is within that many seconds), where `highest` is the check's
/// [reference height](Snapshot::highest), and, if it was ineligible in the previous snapshot,
/// this is its [`readmit_after`](crate::MonitorBuilder::readmit_after)-th good check in a row;
/// an endpoint whose probe failed has no height and is not eligible.
///
/// A snapshot does not expire: it stays in force until a later check publishes another,
/// unless the monitor has a [`max_age`](crate::MonitorBuilder::max_age) or a
/// [`grace`](crate::MonitorBuilder::grace), which [`Monitor::eligible`](crate::Monitor::eligible)
/// applies at the time of asking ([`Snapshot::is_eligible`] does not: it reads no clock).
#[derive(Clone)]
pub struct Snapshot {
    entries: Vec<SnapshotEntry>,
    highest: u64,
    max_lag: u64,
    taken_at: SystemTime,
    /// When the check finished probing, on the Tokio clock: the origin of [`Snapshot::age`].
    checked_at: Instant,
    // The reference head over time (block time, stall).
    head: Option<HeadTiming>,
    /// The head enough eligible providers reported with the same hash, found at assembly.
    agreed: Option<AgreedHead>,
    /// The latest probe time at which a provider reported the reference height (or above).
    reference_seen: Instant,
}

// ===== impl Snapshot =====

impl Snapshot {
    /// A snapshot of `entries`, one per configured endpoint in configured order.
    pub(crate) fn new(entries: Vec<SnapshotEntry>, highest: u64, max_lag: u64, taken_at: SystemTime) -> Self {
        let now = Instant::now();
        Snapshot {
            entries,
            highest,
            max_lag,
            taken_at,
            checked_at: now,
            head: None,
            agreed: None,
            reference_seen: now,
        }
    }

    /// This snapshot with each entry passed through `f` (with its position).
    pub(crate) fn map_entries(mut self, mut f: impl FnMut(usize, SnapshotEntry) -> SnapshotEntry) -> Self {
        let entries = std::mem::take(&mut self.entries);
        self.entries = entries.into_iter().enumerate().map(|(i, e)| f(i, e)).collect();
        self
    }

    /// This snapshot, its reference height last reported at `seen`.
    pub(crate) fn with_reference_seen(mut self, seen: Instant) -> Self {
        self.reference_seen = seen;
        self
    }

    /// When (Tokio clock) a provider last showed the chain at the
    /// [reference height](Snapshot::highest) or a higher one: the end of the check for
    /// [`Monitor::check`](crate::Monitor::check); for the spawned schedule, the newest such
    /// entry's first sighting of its head (a provider that shows the same block again says
    /// nothing newer: a stalled provider's repeated head keeps the time it was first shown),
    /// or its [`checked`](SnapshotEntry::checked) time when its probe read no block timestamp.
    pub fn reference_seen(&self) -> Instant {
        self.reference_seen
    }

    /// This snapshot, with the head its eligible providers agree on.
    pub(crate) fn with_agreed(mut self, agreed: Option<AgreedHead>) -> Self {
        self.agreed = agreed;
        self
    }

    /// The head that enough of this check's eligible providers reported with the same hash:
    /// among the providers [eligible](Snapshot::is_eligible) in this snapshot that reported a
    /// hash ([`SnapshotEntry::head_hash`], so only with
    /// [`head_with_hash`](crate::MonitorBuilder::head_with_hash)), the highest block
    /// `(number, hash)` that at least `k` of them reported, `k` being the
    /// [`agreement`](crate::MonitorBuilder::agreement) (2 by default).
    ///
    /// - `k` is clipped to the number of those providers: a single eligible provider with a
    ///   hash agrees with itself, and so does every one of a monitor of one provider. Ask for
    ///   [`providers()`](AgreedHead::providers) when the count matters to you.
    /// - Providers at the same height with different hashes (a fork, a reorg in progress, a
    ///   provider on another chain) do not agree. At one height the hash with the most reports
    ///   wins if it has at least `k`; a tie between the most reported hashes is no agreement at
    ///   that height. Without agreement at the highest height, the next lower height that has
    ///   one wins (its providers are a block or more behind, but agree); else `None`.
    /// - Ineligible providers (failed, lagging, still being
    ///   [re-admitted](crate::MonitorBuilder::readmit_after)) do not count, whatever they
    ///   report. Eligibility is this snapshot's: [`grace`](crate::MonitorBuilder::grace) and
    ///   [`max_age`](crate::MonitorBuilder::max_age) are not applied.
    ///
    /// `None` with the default `eth_blockNumber` probe (no hashes), after
    /// [`restore_health`](crate::Monitor::restore_health) until the next check publishes, and
    /// when no height has enough matching reports. Computed once when the check publishes:
    /// this is a field read.
    ///
    /// # Example
    ///
    /// Three local providers: two report block 100 with one hash, the third block 100 with
    /// another (it is on a fork).
    ///
    /// ```
    /// use failnext::Endpoint;
    /// use failnext_blocklag::Monitor;
    /// use serde_json::json;
    /// use wiremock::{Mock, MockServer, ResponseTemplate};
    ///
    /// /// A provider whose latest block is 100 (`0x64`), with a hash of 32 `byte`s.
    /// async fn provider(byte: &str) -> MockServer {
    ///     let block = json!({ "hash": format!("0x{}", byte.repeat(32)), "number": "0x64", "transactions": [] });
    ///     let server = MockServer::start().await;
    ///     Mock::given(wiremock::matchers::body_partial_json(json!({ "method": "eth_getBlockByNumber" })))
    ///         .respond_with(ResponseTemplate::new(200).set_body_json(json!({ "jsonrpc": "2.0", "id": 1, "result": block })))
    ///         .mount(&server)
    ///         .await;
    ///     server
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (a, b, fork) = (provider("aa").await, provider("aa").await, provider("ff").await);
    /// let endpoints = [Endpoint::new("a", a.uri()), Endpoint::new("b", b.uri()), Endpoint::new("fork", fork.uri())];
    /// let monitor = Monitor::builder(endpoints).head_with_hash().build()?;
    /// monitor.check().await?;
    ///
    /// let snapshot = monitor.snapshot().ok_or("published")?;
    /// let agreed = snapshot.agreed().ok_or("two providers agree")?;
    /// assert_eq!(agreed.number(), 100);
    /// assert_eq!(agreed.hash().to_string(), format!("0x{}", "aa".repeat(32)));
    /// assert_eq!(agreed.providers(), ["a", "b"]);
    /// // Pin a read to it: {"blockHash": agreed.hash().to_string()} (EIP-1898).
    /// # Ok(())
    /// # }
    /// ```
    pub fn agreed(&self) -> Option<&AgreedHead> {
        self.agreed.as_ref()
    }

    /// Sets the Tokio-clock time of the check (`new` takes the current one), which is also
    /// when the reference height was seen.
    pub(crate) fn checked_at(mut self, checked_at: Instant) -> Self {
        self.checked_at = checked_at;
        self.reference_seen = checked_at;
        self
    }

    /// When the check finished probing, on the Tokio clock.
    pub(crate) fn checked(&self) -> Instant {
        self.checked_at
    }

    /// How long ago the check that produced this snapshot finished probing, on the Tokio clock
    /// (paused in tests; the system's monotonic clock otherwise). Reads the clock. Under the
    /// [spawned schedule](crate::Monitor::spawn), which publishes each provider's entry when
    /// its own probe ends, this is the age of the newest entry; each entry has its own
    /// [`SnapshotEntry::age`].
    pub fn age(&self) -> Duration {
        Instant::now().saturating_duration_since(self.checked_at)
    }

    /// This snapshot, with the reference head's timing.
    pub(crate) fn with_head(mut self, head: Option<HeadTiming>) -> Self {
        self.head = head;
        self
    }

    /// The reference head's timing.
    pub(crate) fn head(&self) -> Option<HeadTiming> {
        self.head
    }

    /// The observed block time: an exponentially weighted moving average (weight 1/4 for the
    /// newest sample) of the time the [reference height](Snapshot::highest) took per block,
    /// sampled at each check where it advanced (the time since it last changed, over the
    /// blocks it advanced; measured between checks, so checks much further apart than one
    /// block still average out). `None` until the reference advanced once.
    pub fn block_time(&self) -> Option<Duration> {
        self.head.and_then(|head| head.block_time)
    }

    /// How long the [reference height](Snapshot::highest) had been unchanged when this check
    /// ran (zero when it changed in this check), by the checks' monotonic clock.
    pub fn head_unchanged_for(&self) -> Duration {
        self.head.map_or(Duration::ZERO, |head| head.checked_at.saturating_duration_since(head.head_since))
    }

    /// Whether the reference head is stalled: unchanged for more than
    /// [`stall_after`](crate::MonitorBuilder::stall_after) [block times](Snapshot::block_time).
    /// A report only: a stall makes no provider ineligible (they all agree, or the reference
    /// would have moved). Never true before a block time is known.
    pub fn stalled(&self) -> bool {
        self.head.is_some_and(|head| head.stalled) || self.chain_stalled()
    }

    /// Whether every provider that answered had a [stale](SnapshotEntry::is_stale) head: the
    /// chain itself looks stalled (or the monitor's clock is wrong), not one provider.
    pub fn chain_stalled(&self) -> bool {
        let mut answered = self.entries.iter().filter(|e| e.height().is_some()).peekable();
        answered.peek().is_some() && answered.all(SnapshotEntry::is_stale)
    }

    /// How far behind the reference `id` was in time: its [`lag`](Snapshot::lag) in blocks
    /// times the [`block_time`](Snapshot::block_time). `None` when either is unknown.
    pub fn lag_time(&self, id: &str) -> Option<Duration> {
        let behind = self.lag(id)?;
        Some(head_timing::lag_time(behind, self.block_time()?))
    }

    /// The reference height of this check, the one the others are compared with: the highest
    /// height any provider reported under [`Reference::Highest`](crate::Reference::Highest),
    /// the highest plausible one under [`Reference::Plausible`](crate::Reference::Plausible)
    /// (the default; the highest one when the probe reads no timestamps, as `check()`'s
    /// `eth_blockNumber` probe), the highest height at least `k` providers reached under
    /// [`Reference::Corroborated(k)`](crate::Reference::Corroborated), so a provider may be
    /// above it. It is relative, not canonical: nothing checks it against the chain.
    pub fn highest(&self) -> u64 {
        self.highest
    }

    /// The height `id` reported, or `None` when its probe failed or `id` is not configured.
    pub fn height(&self, id: &str) -> Option<u64> {
        self.entry(id).and_then(SnapshotEntry::height)
    }

    /// How many blocks `id` was behind [`highest`](Snapshot::highest) (0 when at or above it),
    /// or `None` when its probe failed or `id` is not configured.
    pub fn lag(&self, id: &str) -> Option<u64> {
        self.entry(id).and_then(SnapshotEntry::lag)
    }

    /// Whether `id` is eligible in this snapshot: configured, probed successfully, at most
    /// [`max_lag`](Snapshot::max_lag) blocks (or `max_lag_secs`) behind, and not still being re-admitted
    /// ([`readmit_after`](crate::MonitorBuilder::readmit_after)). Unknown ids are never
    /// eligible.
    pub fn is_eligible(&self, id: &str) -> bool {
        self.fitness(id).is_eligible()
    }

    /// Why `id` is eligible or not in this snapshot; [`Fitness::Unknown`] when it is not
    /// configured.
    pub(crate) fn fitness(&self, id: &str) -> Fitness {
        self.entry(id).map_or(Fitness::Unknown, SnapshotEntry::fitness)
    }

    /// The fitness of the endpoint at `position` in configured order; [`Fitness::Unknown`]
    /// beyond the configured ones.
    pub(crate) fn fitness_at(&self, position: usize) -> Fitness {
        self.entries.get(position).map_or(Fitness::Unknown, SnapshotEntry::fitness)
    }

    /// The monitor's inclusive lag threshold, in blocks, when this snapshot was taken.
    pub fn max_lag(&self) -> u64 {
        self.max_lag
    }

    /// When the check that produced this snapshot finished probing (wall-clock time).
    pub fn taken_at(&self) -> SystemTime {
        self.taken_at
    }

    /// One entry per configured endpoint, in configured order.
    pub fn entries(&self) -> &[SnapshotEntry] {
        &self.entries
    }

    /// The entry of `id`, if it is configured.
    pub fn entry(&self, id: &str) -> Option<&SnapshotEntry> {
        // A handful of endpoints: a scan is as fast as hashing the id.
        self.entries.iter().find(|e| e.endpoint().as_str() == id)
    }
}

impl fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("failnext_blocklag::Snapshot")
            .field("highest", &self.highest)
            .field("max_lag", &self.max_lag)
            .field("taken_at", &self.taken_at)
            .field("block_time", &self.block_time())
            .field("stalled", &self.stalled())
            .field("agreed", &self.agreed)
            .field("entries", &self.entries)
            .finish()
    }
}

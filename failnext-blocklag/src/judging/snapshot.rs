//! `Snapshot`: one published comparison of block heights, and the [`Fitness`] of each
//! endpoint in it.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use failnext::EndpointId;

use crate::judging::agreed::AgreedHead;
use crate::judging::clock::Stamped;
use crate::judging::fitness::Fitness;
use crate::judging::head_timing::{self, HeadTiming};
use crate::probe::block_hash::BlockHash;
use crate::probe::probe_error::{ProbeError, ProbeErrorKind};
use crate::probe::rpc::Method;

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

/// One endpoint's line in a [`Snapshot`].
#[derive(Clone)]
pub struct SnapshotEntry {
    endpoint: EndpointId,
    state: EntryState,
    /// The hash of the head it reported, with the head-with-hash probe.
    head_hash: Option<BlockHash>,
    /// When its probe last succeeded, in this check or carried from an earlier snapshot.
    last_good: Option<Instant>,
    // Rules carried across checks (re-admission), from the previous snapshot's entry.
    /// Consecutive good checks (probe succeeded within `max_lag`), this one included.
    good_checks: u32,
    // Probe health carried across checks.
    /// EWMA of the successful head calls' durations.
    latency: Option<Duration>,
    /// The call and kind of the latest failed probe, this check's or an earlier one's.
    last_failure: Option<(Method, ProbeErrorKind)>,
    /// Its head with the block's timestamp, when the probe read one.
    stamped: Option<Stamped>,
    /// When its latest probe ended (Tokio clock); `None` before this process probed it.
    checked: Option<Instant>,
    /// The bad share of its recent evidence when its latest probe was judged.
    bad_share: Option<f64>,
}

#[derive(Clone)]
enum EntryState {
    /// The probe succeeded; `fitness` is [`Fitness::Fit`] or [`Fitness::Lagging`].
    Probed {
        height: u64,
        fitness: Fitness,
    },
    Failed(Arc<ProbeError>),
    /// Not probed yet by the spawned schedule, whose other providers already published:
    /// [`Fitness::Unchecked`] (fail-open) or [`Fitness::Closed`] (fail-closed).
    Waiting(Fitness),
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
        self.entries.iter().find(|e| e.endpoint.as_str() == id)
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

// ===== impl SnapshotEntry =====

impl SnapshotEntry {
    /// The entry of an endpoint whose probe succeeded, judged by [`Fitness::of_height`].
    pub(crate) fn probed(endpoint: EndpointId, height: u64, fitness: Fitness) -> Self {
        SnapshotEntry::of(endpoint, EntryState::Probed { height, fitness })
    }

    /// A new entry of `endpoint` in `state`, with nothing carried yet.
    fn of(endpoint: EndpointId, state: EntryState) -> Self {
        SnapshotEntry {
            endpoint,
            state,
            head_hash: None,
            good_checks: 0,
            latency: None,
            last_failure: None,
            last_good: None,
            stamped: None,
            checked: None,
            bad_share: None,
        }
    }

    /// The entry of an endpoint whose probe failed with `error`.
    pub(crate) fn failed(endpoint: EndpointId, error: Arc<ProbeError>) -> Self {
        SnapshotEntry::of(endpoint, EntryState::Failed(error))
    }

    /// The entry of an endpoint the spawned schedule has not probed yet: `fitness` is
    /// [`Fitness::Unchecked`] or [`Fitness::Closed`].
    pub(crate) fn waiting(endpoint: EndpointId, fitness: Fitness) -> Self {
        SnapshotEntry::of(endpoint, EntryState::Waiting(fitness))
    }

    /// Whether the spawned schedule has not probed it yet.
    pub(crate) fn is_waiting(&self) -> bool {
        matches!(self.state, EntryState::Waiting(_))
    }

    /// This entry, its probe ended at `at`.
    pub(crate) fn checked_at(mut self, at: Instant) -> Self {
        self.checked = Some(at);
        self
    }

    /// When this endpoint's latest probe ended, on the Tokio clock: the end of the
    /// [`check`](crate::Monitor::check) for a check's snapshot, the end of its own probe under
    /// the [spawned schedule](crate::Monitor::spawn) (where each provider publishes on its
    /// own, so entries of one snapshot have different times). `None` when this process has
    /// not probed it yet (a snapshot restored by
    /// [`restore_health`](crate::Monitor::restore_health), or a provider whose first spawned
    /// probe is still running).
    pub fn checked(&self) -> Option<Instant> {
        self.checked
    }

    /// How long ago [`checked`](SnapshotEntry::checked) was, on the Tokio clock (reads it).
    pub fn age(&self) -> Option<Duration> {
        self.checked.map(|at| Instant::now().saturating_duration_since(at))
    }

    /// This entry with `fitness` in place of the one it has (kept as is when its probe failed
    /// or it was not probed).
    pub(crate) fn with_fitness(mut self, fitness: Fitness) -> Self {
        if let EntryState::Probed { fitness: ref mut f, .. } = self.state {
            *f = fitness;
        }
        self
    }

    /// This entry, the bad share of its evidence at its probe being `share`.
    pub(crate) fn with_bad_share(mut self, share: Option<f64>) -> Self {
        self.bad_share = share;
        self
    }

    /// The share of bad outcomes in the provider's recent evidence (its probes and the
    /// real-traffic answers failnext [observed](failnext::HealthSource::observe), decayed as
    /// the [crate documentation](crate#paired-with-failnext) says) when its latest probe was
    /// judged by the [spawned schedule](crate::Monitor::spawn); `None` for entries of
    /// [`check`](crate::Monitor::check), which does not weigh evidence.
    pub fn bad_share(&self) -> Option<f64> {
        self.bad_share
    }

    /// Whether its latest probe was good, but the provider stays ineligible because it was
    /// ineligible before and its recent evidence was bad too often ([`bad_share`] above the
    /// re-admission limit): one good probe does not re-admit a provider that fails half its
    /// answers. Only under the [spawned schedule](crate::Monitor::spawn).
    ///
    /// [`bad_share`]: SnapshotEntry::bad_share
    pub fn is_doubted(&self) -> bool {
        matches!(self.fitness(), Fitness::Doubted { .. })
    }

    /// The real-traffic answer that contradicted this view of the provider since its latest
    /// probe: failnext [observed](failnext::HealthSource::observe) it
    /// [`Behind`](failnext::Observation::Behind) or
    /// [`Implausible`](failnext::Observation::Implausible) while the monitor admitted it,
    /// which makes it ineligible at once, until its next probe.
    pub fn contradiction(&self) -> Option<failnext::Observation> {
        match self.fitness() {
            Fitness::Contradicted(observation) => Some(observation),
            _ => None,
        }
    }

    /// Sets the hash of the head it reported (only for a successful probe).
    pub(crate) fn with_head_hash(mut self, hash: Option<BlockHash>) -> Self {
        self.head_hash = hash.filter(|_| self.height().is_some());
        self
    }

    /// The hash of the block it reported as its head in this check, read by the
    /// [`head_with_hash`](crate::MonitorBuilder::head_with_hash) probe together with the
    /// [height](SnapshotEntry::height): the block numbered `height()` as this provider has it.
    /// `None` with the default `eth_blockNumber` probe, when the probe failed, and in a snapshot
    /// restored by [`restore_health`](crate::Monitor::restore_health) (hashes are not kept).
    /// Whatever it is, it does not affect eligibility; it counts towards
    /// [`Snapshot::agreed`].
    pub fn head_hash(&self) -> Option<BlockHash> {
        self.head_hash
    }

    /// Sets its head's timestamp reading (only for a successful probe).
    pub(crate) fn with_stamped(mut self, stamped: Option<Stamped>) -> Self {
        self.stamped = stamped.filter(|_| self.height().is_some());
        self
    }

    /// Its head with its timestamp, when the probe read one.
    pub(crate) fn stamped(&self) -> Option<Stamped> {
        self.stamped
    }

    /// The timestamp (Unix seconds) of the block it reported as its head, when the probe read
    /// one (the spawned monitor's head probe and [`head_with_hash`](crate::MonitorBuilder::head_with_hash)
    /// read the block; `eth_blockNumber` does not).
    pub fn head_timestamp(&self) -> Option<u64> {
        self.stamped.map(|s| s.timestamp)
    }

    /// How old its head is now: how far the wall clock was past the block's timestamp when
    /// the provider first showed that head, plus the time since on the monitor's (Tokio)
    /// clock. `None` without a timestamp. Reads the clock.
    pub fn head_age(&self) -> Option<Duration> {
        self.stamped.map(|s| s.age(Instant::now()))
    }

    /// Whether its head was stale in this snapshot: older than the
    /// [maximum head age](crate::MonitorBuilder::max_head_age). Stale is ineligible.
    pub fn is_stale(&self) -> bool {
        matches!(self.fitness(), Fitness::Stale { .. })
    }

    /// Whether its head was implausible in this snapshot: stamped in the future beyond the
    /// tolerance, or higher than the chain could have made
    /// ([`Reference::Plausible`](crate::Reference::Plausible)). Implausible is ineligible.
    pub fn is_implausible(&self) -> bool {
        self.fitness() == Fitness::Implausible
    }

    /// Sets when its probe last succeeded.
    pub(crate) fn last_good_at(mut self, last_good: Option<Instant>) -> Self {
        self.last_good = last_good;
        self
    }

    /// When its probe last succeeded (Tokio clock), in this check or an earlier one.
    pub(crate) fn last_good(&self) -> Option<Instant> {
        self.last_good
    }

    /// How long ago its probe last succeeded (in this check, or in an earlier one when it
    /// failed in this one), or `None` when it never has since the monitor was built. Reads the
    /// (Tokio) clock.
    pub fn last_good_age(&self) -> Option<Duration> {
        self.last_good.map(|at| Instant::now().saturating_duration_since(at))
    }

    /// This entry, having had `good_checks` consecutive good checks.
    pub(crate) fn with_good_checks(mut self, good_checks: u32) -> Self {
        self.good_checks = good_checks;
        self
    }

    /// How many consecutive published checks, up to and including this one, found the
    /// endpoint good: its probe succeeded within the lag threshold
    /// ([`max_lag`](crate::MonitorBuilder::max_lag) blocks, or
    /// [`max_lag_secs`](crate::MonitorBuilder::max_lag_secs)) of the reference height. 0 when
    /// this check did not. An endpoint that was ineligible becomes eligible again when this
    /// reaches
    /// [`readmit_after`](crate::MonitorBuilder::readmit_after). Saturates at `u32::MAX`.
    pub fn consecutive_good_checks(&self) -> u32 {
        self.good_checks
    }

    /// This entry, with its probe latency EWMA and last failure.
    pub(crate) fn with_probe_health(
        mut self,
        latency: Option<Duration>,
        last_failure: Option<(Method, ProbeErrorKind)>,
    ) -> Self {
        self.latency = latency;
        self.last_failure = last_failure;
        self
    }

    /// The provider's probe latency: an exponentially weighted moving average (weight 1/4
    /// for the newest sample) of the durations of its successful head calls (`eth_blockNumber`,
    /// or `eth_getBlockByNumber` with [`head_with_hash`](crate::MonitorBuilder::head_with_hash)),
    /// over the published checks so far. Failed probes add no sample and keep the average.
    /// `None` until one succeeded.
    pub fn probe_latency(&self) -> Option<Duration> {
        self.latency
    }

    /// The kind of the provider's most recent probe failure, in this check or an earlier
    /// published one (it stays after the provider recovers); `None` if it never failed.
    pub fn last_error_kind(&self) -> Option<ProbeErrorKind> {
        self.last_failure.map(|(_, kind)| kind)
    }

    /// The JSON-RPC method (`"eth_blockNumber"`, `"eth_getBlockByNumber"` or `"eth_chainId"`)
    /// of the call that failed in the provider's most recent probe failure, as
    /// [`last_error_kind`](Self::last_error_kind).
    pub fn last_failed_call(&self) -> Option<&'static str> {
        self.last_failure.map(|(method, _)| method.name())
    }

    /// The call and kind of the most recent failure.
    pub(crate) fn last_failure(&self) -> Option<(Method, ProbeErrorKind)> {
        self.last_failure
    }

    /// The endpoint this entry is about.
    pub fn endpoint(&self) -> &EndpointId {
        &self.endpoint
    }

    /// The height the endpoint reported, or `None` when its probe failed.
    pub fn height(&self) -> Option<u64> {
        match self.state {
            EntryState::Probed { height, .. } => Some(height),
            EntryState::Failed(_) | EntryState::Waiting(_) => None,
        }
    }

    /// Blocks behind the snapshot's highest height, or `None` when the probe failed.
    pub fn lag(&self) -> Option<u64> {
        self.fitness().behind()
    }

    /// Whether the endpoint is eligible in this snapshot.
    pub fn is_eligible(&self) -> bool {
        self.fitness().is_eligible()
    }

    /// Why the endpoint's probe failed, when it did (the same error the check returned).
    pub fn error(&self) -> Option<&ProbeError> {
        match &self.state {
            EntryState::Probed { .. } | EntryState::Waiting(_) => None,
            EntryState::Failed(error) => Some(error),
        }
    }

    /// Why the endpoint is eligible or not in this snapshot.
    pub(crate) fn fitness(&self) -> Fitness {
        match self.state {
            EntryState::Probed { fitness, .. } | EntryState::Waiting(fitness) => fitness,
            EntryState::Failed(_) => Fitness::ProbeFailed,
        }
    }
}

impl fmt::Debug for SnapshotEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("SnapshotEntry");
        d.field("endpoint", &self.endpoint);
        match &self.state {
            EntryState::Probed { height, fitness } => d
                .field("height", height)
                .field("head_hash", &self.head_hash)
                .field("lag", &fitness.behind().unwrap_or_default())
                .field("eligible", &fitness.is_eligible()),
            EntryState::Failed(error) => d.field("eligible", &false).field("error", error),
            EntryState::Waiting(fitness) => {
                d.field("eligible", &fitness.is_eligible()).field("probed", &false)
            }
        };
        if let Fitness::Doubted { .. } | Fitness::Contradicted(_) = self.fitness() {
            d.field("held_out", &self.fitness());
        }
        d.field("checked", &self.checked);
        d.field("bad_share", &self.bad_share);
        d.field("consecutive_good_checks", &self.good_checks);
        d.field("probe_latency", &self.latency);
        d.field("last_failure", &self.last_failure.map(|(method, kind)| (method.name(), kind)));
        d.finish()
    }
}

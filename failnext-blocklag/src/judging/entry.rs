//! [`SnapshotEntry`]: one endpoint in a [`Snapshot`](crate::Snapshot): its height or its
//! failure, its fitness, and the probe health carried across checks.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use failnext::EndpointId;

use crate::judging::clock::Stamped;
use crate::judging::fitness::Fitness;
use crate::probe::block_hash::BlockHash;
use crate::probe::probe_error::{ProbeError, ProbeErrorKind};
use crate::probe::rpc::Method;

/// One endpoint's line in a [`Snapshot`](crate::Snapshot).
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
    /// [`Snapshot::agreed`](crate::Snapshot::agreed).
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

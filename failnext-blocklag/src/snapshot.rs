//! `Snapshot`: one published comparison of block heights, and the pure rule that builds it.

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use failnext::EndpointId;

use crate::check_error::ProbeFailure;
use crate::probe_error::ProbeError;

/// The outcome of one check, immutable once published.
///
/// A [`Monitor`](crate::Monitor) answers every eligibility question from the latest published
/// snapshot; [`Monitor::snapshot`](crate::Monitor::snapshot) hands out the same `Arc`, for
/// logs and dashboards. Hold one `Arc<Snapshot>` for all the questions of one decision:
/// two separate loads may see two different checks.
///
/// Every configured endpoint has an entry, in configured order. An endpoint is eligible when
/// its probe succeeded and `highest - height <= max_lag`, where `highest` is the highest height
/// observed in this check; an endpoint whose probe failed has no height and is not eligible.
///
/// A snapshot does not expire: it stays in force until a later check publishes another.
pub struct Snapshot {
    entries: Vec<SnapshotEntry>,
    highest: u64,
    max_lag: u64,
    taken_at: SystemTime,
}

/// One endpoint's line in a [`Snapshot`].
#[derive(Clone)]
pub struct SnapshotEntry {
    endpoint: EndpointId,
    state: EntryState,
}

#[derive(Clone)]
enum EntryState {
    Height { height: u64, lag: u64, eligible: bool },
    Failed(Arc<ProbeError>),
}

/// What one check produced: a snapshot to publish (when at least one probe succeeded) and the
/// failures, in configured order.
#[derive(Debug)]
pub(crate) struct Round {
    pub(crate) snapshot: Option<Snapshot>,
    pub(crate) failures: Vec<ProbeFailure>,
}

/// Compares the heights of one check. Pure: the caller publishes.
///
/// `outcomes` holds one result per configured endpoint, in configured order. Without any
/// success there is nothing to compare, so no snapshot.
pub(crate) fn assemble(
    outcomes: Vec<(EndpointId, Result<u64, ProbeFailure>)>,
    max_lag: u64,
    taken_at: SystemTime,
) -> Round {
    let highest = outcomes.iter().filter_map(|(_, outcome)| outcome.as_ref().ok().copied()).max();
    let mut entries = Vec::with_capacity(outcomes.len());
    let mut failures = Vec::new();
    for (endpoint, outcome) in outcomes {
        let state = match outcome {
            Ok(height) => {
                // `highest` is the maximum of the successes, this one included.
                let lag = highest.unwrap_or(height).saturating_sub(height);
                EntryState::Height { height, lag, eligible: lag <= max_lag }
            }
            Err(failure) => {
                let state = EntryState::Failed(failure.shared_error());
                failures.push(failure);
                state
            }
        };
        entries.push(SnapshotEntry { endpoint, state });
    }
    let snapshot = highest.map(|highest| Snapshot { entries, highest, max_lag, taken_at });
    Round { snapshot, failures }
}

// ===== impl Snapshot =====

impl Snapshot {
    /// The highest block height any provider reported in this check: the reference the others
    /// are compared with. It is relative, not canonical: nothing checks it against the chain.
    pub fn highest(&self) -> u64 {
        self.highest
    }

    /// The height `id` reported, or `None` when its probe failed or `id` is not configured.
    pub fn height(&self, id: &str) -> Option<u64> {
        self.entry(id).and_then(SnapshotEntry::height)
    }

    /// How many blocks `id` was behind [`highest`](Snapshot::highest), or `None` when its probe
    /// failed or `id` is not configured.
    pub fn lag(&self, id: &str) -> Option<u64> {
        self.entry(id).and_then(SnapshotEntry::lag)
    }

    /// Whether `id` is eligible in this snapshot: configured, probed successfully, and at most
    /// [`max_lag`](Snapshot::max_lag) blocks behind. Unknown ids are never eligible.
    pub fn is_eligible(&self, id: &str) -> bool {
        self.entry(id).is_some_and(SnapshotEntry::is_eligible)
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
            .field("entries", &self.entries)
            .finish()
    }
}

// ===== impl SnapshotEntry =====

impl SnapshotEntry {
    /// The endpoint this entry is about.
    pub fn endpoint(&self) -> &EndpointId {
        &self.endpoint
    }

    /// The height the endpoint reported, or `None` when its probe failed.
    pub fn height(&self) -> Option<u64> {
        match self.state {
            EntryState::Height { height, .. } => Some(height),
            EntryState::Failed(_) => None,
        }
    }

    /// Blocks behind the snapshot's highest height, or `None` when the probe failed.
    pub fn lag(&self) -> Option<u64> {
        match self.state {
            EntryState::Height { lag, .. } => Some(lag),
            EntryState::Failed(_) => None,
        }
    }

    /// Whether the endpoint is eligible in this snapshot.
    pub fn is_eligible(&self) -> bool {
        matches!(self.state, EntryState::Height { eligible: true, .. })
    }

    /// Why the endpoint's probe failed, when it did (the same error the check returned).
    pub fn error(&self) -> Option<&ProbeError> {
        match &self.state {
            EntryState::Height { .. } => None,
            EntryState::Failed(error) => Some(error),
        }
    }
}

impl fmt::Debug for SnapshotEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("SnapshotEntry");
        d.field("endpoint", &self.endpoint);
        match &self.state {
            EntryState::Height { height, lag, eligible } => {
                d.field("height", height).field("lag", lag).field("eligible", eligible)
            }
            EntryState::Failed(error) => d.field("eligible", &false).field("error", error),
        };
        d.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::Method;

    fn ok(id: &str, height: u64) -> (EndpointId, Result<u64, ProbeFailure>) {
        (id.into(), Ok(height))
    }

    fn failed(id: &str) -> (EndpointId, Result<u64, ProbeFailure>) {
        (id.into(), Err(ProbeFailure::new(id.into(), Method::BlockNumber, ProbeError::Timeout)))
    }

    fn round(outcomes: Vec<(EndpointId, Result<u64, ProbeFailure>)>, max_lag: u64) -> Round {
        assemble(outcomes, max_lag, SystemTime::UNIX_EPOCH)
    }

    #[test]
    fn lag_threshold_is_inclusive() {
        let snap = round(vec![ok("a", 100), ok("b", 97), ok("c", 96)], 3).snapshot.unwrap();
        assert_eq!(snap.highest(), 100);
        assert!(snap.is_eligible("a"));
        assert!(snap.is_eligible("b"));
        assert!(!snap.is_eligible("c"));
        assert_eq!(snap.lag("c"), Some(4));
    }

    #[test]
    fn zero_lag_accepts_only_the_highest() {
        let snap = round(vec![ok("a", 7), ok("b", 6), ok("c", 7)], 0).snapshot.unwrap();
        let eligible: Vec<_> =
            snap.entries().iter().filter(|e| e.is_eligible()).map(|e| e.endpoint().as_str()).collect();
        assert_eq!(eligible, ["a", "c"]);
    }

    #[test]
    fn extreme_heights_do_not_overflow() {
        let snap = round(vec![ok("a", u64::MAX), ok("b", 0)], u64::MAX).snapshot.unwrap();
        assert!(snap.is_eligible("b"));
        assert_eq!(snap.lag("b"), Some(u64::MAX));
        let snap = round(vec![ok("a", u64::MAX), ok("b", 0)], u64::MAX - 1).snapshot.unwrap();
        assert!(!snap.is_eligible("b"));
    }

    #[test]
    fn failed_probes_are_ineligible_and_listed_in_order() {
        let round = round(vec![failed("a"), ok("b", 5), failed("c")], 10);
        let ids: Vec<_> = round.failures.iter().map(|f| f.endpoint().as_str()).collect();
        assert_eq!(ids, ["a", "c"]);
        let snap = round.snapshot.unwrap();
        assert_eq!(snap.highest(), 5);
        assert!(!snap.is_eligible("a"));
        assert_eq!(snap.height("a"), None);
        assert!(matches!(snap.entry("c").and_then(SnapshotEntry::error), Some(ProbeError::Timeout)));
        assert!(snap.is_eligible("b"));
    }

    #[test]
    fn nothing_to_compare_without_a_success() {
        let round = round(vec![failed("a"), failed("b")], 10);
        assert!(round.snapshot.is_none());
        assert_eq!(round.failures.len(), 2);
    }

    #[test]
    fn unknown_ids_are_not_eligible() {
        let snap = round(vec![ok("a", 1)], 10).snapshot.unwrap();
        assert!(!snap.is_eligible("z"));
        assert!(!snap.is_eligible(""));
        assert!(!snap.is_eligible("A"));
        assert_eq!(snap.height("z"), None);
    }
}

//! `Round`: one check's heights compared, as a snapshot to publish and the failures.

use std::time::SystemTime;

use failnext::EndpointId;
use tokio::time::Instant;

use crate::check_error::ProbeFailure;
use crate::fitness::Fitness;
use crate::snapshot::{Snapshot, SnapshotEntry};

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
/// success there is nothing to compare, so no snapshot. `previous` is the latest published
/// snapshot, whose history the new one carries forward (same endpoints, same order);
/// `checked_at` is when probing ended, on the Tokio clock.
pub(crate) fn assemble(
    outcomes: Vec<(EndpointId, Result<u64, ProbeFailure>)>,
    max_lag: u64,
    taken_at: SystemTime,
    previous: Option<&Snapshot>,
    checked_at: Instant,
) -> Round {
    let highest = outcomes.iter().filter_map(|(_, outcome)| outcome.as_ref().ok().copied()).max();
    let mut entries = Vec::with_capacity(outcomes.len());
    let mut failures = Vec::new();
    for (i, (endpoint, outcome)) in outcomes.into_iter().enumerate() {
        // The last good probe: this one if it succeeded, else the previous snapshot's.
        let last_good = match outcome {
            Ok(_) => Some(checked_at),
            Err(_) => previous.and_then(|p| p.entries().get(i)).and_then(SnapshotEntry::last_good),
        };
        let entry = match outcome {
            Ok(height) => {
                // `highest` is the maximum of the successes, this one included.
                let fitness = Fitness::of_height(height, highest.unwrap_or(height), max_lag);
                SnapshotEntry::probed(endpoint, height, fitness)
            }
            Err(failure) => {
                let entry = SnapshotEntry::failed(endpoint, failure.shared_error());
                failures.push(failure);
                entry
            }
        };
        entries.push(entry.last_good_at(last_good));
    }
    let snapshot =
        highest.map(|highest| Snapshot::new(entries, highest, max_lag, taken_at).checked_at(checked_at));
    Round { snapshot, failures }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe_error::ProbeError;
    use crate::rpc::Method;

    fn ok(id: &str, height: u64) -> (EndpointId, Result<u64, ProbeFailure>) {
        (id.into(), Ok(height))
    }

    fn failed(id: &str) -> (EndpointId, Result<u64, ProbeFailure>) {
        (id.into(), Err(ProbeFailure::new(id.into(), Method::BlockNumber, ProbeError::Timeout)))
    }

    fn round(outcomes: Vec<(EndpointId, Result<u64, ProbeFailure>)>, max_lag: u64) -> Round {
        assemble(outcomes, max_lag, SystemTime::UNIX_EPOCH, None, Instant::now())
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

    #[tokio::test(start_paused = true)]
    async fn the_last_good_probe_is_carried_through_failed_checks() {
        let first = round(vec![ok("a", 1), failed("b")], 10).snapshot.unwrap();
        let heard = first.entry("a").unwrap().last_good();
        assert_eq!(heard, Some(first.checked()));
        assert_eq!(first.entry("b").unwrap().last_good(), None, "never answered");

        tokio::time::advance(std::time::Duration::from_secs(7)).await;
        let second =
            assemble(vec![failed("a"), ok("b", 2)], 10, SystemTime::UNIX_EPOCH, Some(&first), Instant::now());
        let second = second.snapshot.unwrap();
        assert_eq!(second.entry("a").unwrap().last_good(), heard, "carried from the first");
        assert_eq!(second.entry("b").unwrap().last_good(), Some(second.checked()));
        assert_eq!(second.entry("a").unwrap().last_good_age(), Some(std::time::Duration::from_secs(7)));
        assert_eq!(second.age(), std::time::Duration::ZERO);
    }
}

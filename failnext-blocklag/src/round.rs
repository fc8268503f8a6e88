//! `Round`: one check's heights compared, as a snapshot to publish and the failures.

use std::time::{Duration, SystemTime};

use failnext::EndpointId;

use crate::check_error::ProbeFailure;
use crate::fitness::Fitness;
use crate::probe_error::ProbeErrorKind;
use crate::reference::Reference;
use crate::rpc::Method;
use crate::snapshot::{Snapshot, SnapshotEntry};

/// What one check produced: a snapshot to publish (when at least one probe succeeded) and the
/// failures, in configured order.
#[derive(Debug)]
pub(crate) struct Round {
    pub(crate) snapshot: Option<Snapshot>,
    pub(crate) failures: Vec<ProbeFailure>,
}

/// The rules of a round beyond the lag threshold, as configured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rules {
    /// Good checks in a row that re-admit an ineligible endpoint (at least 1).
    pub(crate) readmit_after: u32,
    /// Which height the others are compared with.
    pub(crate) reference: Reference,
}

impl Default for Rules {
    /// The 0.1 rules.
    fn default() -> Self {
        Rules { readmit_after: 1, reference: Reference::Highest }
    }
}

/// Compares the heights of one check. Pure: the caller publishes.
///
/// `outcomes` holds one result per configured endpoint, in configured order. Without any
/// success there is nothing to compare, so no snapshot. `previous` is the snapshot in force
/// (the history the rules carry forward, matched by position); `None` before the first
/// publication, when every endpoint counts as eligible (fail-open).
pub(crate) fn assemble(
    outcomes: Vec<(EndpointId, Result<u64, ProbeFailure>)>,
    max_lag: u64,
    taken_at: SystemTime,
    previous: Option<&Snapshot>,
    rules: Rules,
    latencies: &[Option<Duration>],
) -> Round {
    let highest =
        rules.reference.of(outcomes.iter().filter_map(|(_, outcome)| outcome.as_ref().ok().copied()));
    let mut entries = Vec::with_capacity(outcomes.len());
    let mut failures = Vec::new();
    for (i, (endpoint, outcome)) in outcomes.into_iter().enumerate() {
        let before = previous.and_then(|p| p.entries().get(i));
        let failed_now = outcome.as_ref().err().map(|f| (f.call(), f.error().kind()));
        let entry = match outcome {
            Ok(height) => {
                // `highest` is the reference of the successes; one ahead of it is 0 behind.
                let fitness = Fitness::of_height(height, highest.unwrap_or(height), max_lag);
                let (fitness, good) = readmission(fitness, before, rules.readmit_after);
                SnapshotEntry::probed(endpoint, height, fitness).with_good_checks(good)
            }
            Err(failure) => {
                let entry = SnapshotEntry::failed(endpoint, failure.shared_error());
                failures.push(failure);
                entry
            }
        };
        let entry = carry_probe_health(entry, before, latencies.get(i).copied().flatten(), failed_now);
        entries.push(entry);
    }
    let snapshot = highest.map(|highest| Snapshot::new(entries, highest, max_lag, taken_at));
    Round { snapshot, failures }
}

/// Hysteresis: a good check (`fitness` is [`Fitness::Fit`]) of an endpoint that was
/// ineligible in the snapshot `before` re-admits it only as the `readmit_after`-th good check
/// in a row; until then it is [`Fitness::Readmitting`]. An endpoint eligible before (or
/// without a previous snapshot: fail-open) stays eligible at its first good check. Returns the
/// fitness and the count of good checks in a row.
fn readmission(fitness: Fitness, before: Option<&SnapshotEntry>, readmit_after: u32) -> (Fitness, u32) {
    let Fitness::Fit { behind } = fitness else { return (fitness, 0) };
    let good = before.map_or(0, SnapshotEntry::consecutive_good_checks).saturating_add(1);
    let was_eligible = before.is_none_or(SnapshotEntry::is_eligible);
    if was_eligible || good >= readmit_after {
        (fitness, good)
    } else {
        (Fitness::Readmitting { behind, good }, good)
    }
}

/// The weight of a new latency sample in the EWMA.
const LATENCY_WEIGHT: f64 = 0.25;

/// Carries the probe latency EWMA (fed by `sample`, the duration of this check's successful
/// `eth_blockNumber` call) and the last failure (`failed_now`, or the one of the previous
/// entry `before`).
fn carry_probe_health(
    entry: SnapshotEntry,
    before: Option<&SnapshotEntry>,
    sample: Option<Duration>,
    failed_now: Option<(Method, ProbeErrorKind)>,
) -> SnapshotEntry {
    let previous = before.and_then(SnapshotEntry::probe_latency);
    let latency = match (previous, sample) {
        (Some(old), Some(new)) => {
            Some(old.mul_f64(1.0 - LATENCY_WEIGHT).saturating_add(new.mul_f64(LATENCY_WEIGHT)))
        }
        (old, new) => new.or(old),
    };
    let last_failure = failed_now.or_else(|| before.and_then(SnapshotEntry::last_failure));
    entry.with_probe_health(latency, last_failure)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe_error::ProbeError;

    fn ok(id: &str, height: u64) -> (EndpointId, Result<u64, ProbeFailure>) {
        (id.into(), Ok(height))
    }

    fn failed(id: &str) -> (EndpointId, Result<u64, ProbeFailure>) {
        (id.into(), Err(ProbeFailure::new(id.into(), Method::BlockNumber, ProbeError::Timeout)))
    }

    fn round(outcomes: Vec<(EndpointId, Result<u64, ProbeFailure>)>, max_lag: u64) -> Round {
        assemble(outcomes, max_lag, SystemTime::UNIX_EPOCH, None, Rules::default(), &[])
    }

    #[test]
    fn under_corroborated_2_an_outlier_ahead_is_not_the_reference_and_counts_as_0_behind() {
        let rules = Rules { reference: Reference::Corroborated(2), ..Rules::default() };
        let outcomes = vec![ok("a", 100), ok("b", 99), ok("liar", 1100), failed("c")];
        let snap = assemble(outcomes, 2, SystemTime::UNIX_EPOCH, None, rules, &[]).snapshot.unwrap();
        assert_eq!(snap.highest(), 100);
        assert_eq!(snap.lag("b"), Some(1));
        assert_eq!(snap.lag("liar"), Some(0));
        assert!(snap.is_eligible("a") && snap.is_eligible("b") && snap.is_eligible("liar"));
    }

    #[test]
    fn an_ineligible_endpoint_is_readmitted_after_k_good_checks_in_a_row() {
        let rules = Rules { readmit_after: 3, ..Rules::default() };
        let next = |prev: Option<&Snapshot>, b: Option<u64>| {
            let b = b.map_or_else(|| failed("b").1, Ok);
            assemble(vec![ok("a", 10), ("b".into(), b)], 0, SystemTime::UNIX_EPOCH, prev, rules, &[])
                .snapshot
                .unwrap()
        };
        // Eligible before (fail-open): its first good check keeps it eligible.
        let s1 = next(None, Some(10));
        assert!(s1.is_eligible("b"));
        let s2 = next(Some(&s1), None);
        assert!(!s2.is_eligible("b"));
        assert_eq!(s2.entry("b").unwrap().consecutive_good_checks(), 0);
        let s3 = next(Some(&s2), Some(10));
        assert_eq!(s3.fitness("b"), Fitness::Readmitting { behind: 0, good: 1 });
        let s4 = next(Some(&s3), Some(9));
        assert_eq!(s4.fitness("b"), Fitness::Lagging { behind: 1 });
        let s5 = next(Some(&s4), Some(10));
        let s6 = next(Some(&s5), Some(10));
        assert_eq!(s6.fitness("b"), Fitness::Readmitting { behind: 0, good: 2 });
        let s7 = next(Some(&s6), Some(10));
        assert_eq!(s7.fitness("b"), Fitness::Fit { behind: 0 });
        assert_eq!(s7.entry("b").unwrap().consecutive_good_checks(), 3);
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

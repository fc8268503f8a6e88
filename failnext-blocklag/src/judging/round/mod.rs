//! `Round`: one check's heights compared, as a snapshot to publish and the failures.
//!
//! [`assemble`] applies the rules of one check in order: the reference height, each
//! endpoint's fitness (blocks, then seconds, then re-admission), the head's timing
//! ([`HeadTiming::after`]) and the agreed head ([`agreement::agree`]).

use std::time::SystemTime;

use tokio::time::Instant;

use failnext::EndpointId;

use crate::judging::agreement;
use crate::judging::clock::{self, Stamped};
use crate::judging::entry::SnapshotEntry;
use crate::judging::fitness::Fitness;
use crate::judging::head_timing::HeadTiming;
use crate::judging::reference::Reference;
use crate::judging::snapshot::Snapshot;
use crate::probe::check_error::ProbeFailure;

mod amend;
mod judge;
mod rules;

pub(crate) use amend::{Amending, Probed, amend};
use judge::{carry_probe_health, readmission, within_seconds};
pub(crate) use rules::{DEFAULT_STALL_AFTER, Measured, Rules};

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
/// snapshot, whose history the new one carries forward (matched by position, same endpoints in
/// the same order); `None` before the first publication, when every endpoint counts as
/// eligible (fail-open). `measured` holds what else each probe measured, same order (missing
/// entries count as nothing measured). `checked_at` is when probing ended, on the Tokio clock.
///
/// The snapshot's [agreed head](Snapshot::agreed) is found here, once, from the entries'
/// eligibility and hashes.
pub(crate) fn assemble(
    outcomes: Vec<(EndpointId, Result<u64, ProbeFailure>)>,
    max_lag: u64,
    taken_at: SystemTime,
    previous: Option<&Snapshot>,
    rules: Rules,
    measured: &[Measured],
    checked_at: Instant,
) -> Round {
    // Heads by the clock: each timestamped head's age, and which are implausible (under
    // `Reference::Plausible`), before the reference is taken.
    let stamped: Vec<Option<Stamped>> = outcomes
        .iter()
        .enumerate()
        .map(|(i, (_, outcome))| {
            let height = *outcome.as_ref().ok()?;
            let timestamp = measured.get(i)?.timestamp?;
            let before = previous.and_then(|p| p.entries().get(i)).and_then(SnapshotEntry::stamped);
            Some(Stamped::after(before, height, timestamp, checked_at, taken_at))
        })
        .collect();
    let learned = previous.and_then(Snapshot::block_time);
    let plausible_rule = rules.reference == Reference::Plausible;
    let implausible = clock::implausible_entries(&stamped, plausible_rule, taken_at, learned, max_lag);
    let heights = |all: bool| {
        outcomes
            .iter()
            .zip(&implausible)
            .filter(move |(_, out)| all || !**out)
            .filter_map(|((_, outcome), _)| outcome.as_ref().ok().copied())
    };
    // Every head implausible (the monitor's clock is wrong, or every provider lies): they are
    // all ineligible, and the reference is taken from all of them, so that the check publishes.
    let highest = rules.reference.of(heights(false)).or_else(|| rules.reference.of(heights(true)));
    // The reference head's timing, carried from the previous snapshot's head.
    let previous_head = previous.and_then(|p| p.head().map(|head| (p.highest(), head)));
    let head = highest
        .map(|reference| HeadTiming::after(previous_head, reference, checked_at, rules.stall_after, true));
    let max_head_age = (plausible_rule || rules.max_head_age.is_some())
        .then(|| clock::max_head_age(rules.max_head_age, head.and_then(|h| h.block_time).or(learned)));
    let mut entries = Vec::with_capacity(outcomes.len());
    let mut failures = Vec::new();
    for (i, (endpoint, outcome)) in outcomes.into_iter().enumerate() {
        // The last good probe: this one if it succeeded, else the previous snapshot's.
        let last_good = match outcome {
            Ok(_) => Some(checked_at),
            Err(_) => previous.and_then(|p| p.entries().get(i)).and_then(SnapshotEntry::last_good),
        };
        let before = previous.and_then(|p| p.entries().get(i));
        let failed_now = outcome.as_ref().err().map(|f| (f.call(), f.error().kind()));
        let measured = measured.get(i).copied().unwrap_or_default();
        let entry = match outcome {
            Ok(height) => {
                let age = stamped[i].map(|s| s.age(checked_at));
                let fitness = if implausible[i] {
                    Fitness::Implausible
                } else if let Some(age) = age.filter(|a| max_head_age.is_some_and(|max| *a > max)) {
                    Fitness::Stale { age }
                } else {
                    // `highest` is the reference of the successes; one ahead of it is 0 behind.
                    let fitness = Fitness::of_height(height, highest.unwrap_or(height), max_lag);
                    within_seconds(fitness, head.and_then(|h| h.block_time), rules.max_lag_secs)
                };
                let (fitness, good) = readmission(fitness, before, rules.readmit_after);
                SnapshotEntry::probed(endpoint, height, fitness)
                    .with_good_checks(good)
                    .with_head_hash(measured.hash)
                    .with_stamped(stamped[i])
            }
            Err(failure) => {
                let entry = SnapshotEntry::failed(endpoint, failure.shared_error());
                failures.push(failure);
                entry
            }
        };
        let entry = carry_probe_health(entry, before, measured.latency, failed_now);
        entries.push(entry.last_good_at(last_good).checked_at(checked_at));
    }
    let agreed = agreement::agree(&entries, rules.agreement);
    let snapshot = highest.map(|highest| {
        Snapshot::new(entries, highest, max_lag, taken_at)
            .with_head(head)
            .with_agreed(agreed)
            .checked_at(checked_at)
    });
    Round { snapshot, failures }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::amend::Amended;
    use super::*;
    use crate::judging::agreed::AgreedHead;
    use crate::judging::evidence::Counts;
    use crate::probe::block_hash::BlockHash;
    use crate::probe::probe_error::ProbeError;
    use crate::probe::rpc::Method;

    fn ok(id: &str, height: u64) -> (EndpointId, Result<u64, ProbeFailure>) {
        (id.into(), Ok(height))
    }

    fn failed(id: &str) -> (EndpointId, Result<u64, ProbeFailure>) {
        (id.into(), Err(ProbeFailure::new(id.into(), Method::BlockNumber, ProbeError::Timeout)))
    }

    fn round(outcomes: Vec<(EndpointId, Result<u64, ProbeFailure>)>, max_lag: u64) -> Round {
        assemble(outcomes, max_lag, SystemTime::UNIX_EPOCH, None, Rules::default(), &[], Instant::now())
    }

    #[test]
    fn under_corroborated_2_an_outlier_ahead_is_not_the_reference_and_counts_as_0_behind() {
        let rules = Rules { reference: Reference::Corroborated(2), ..Rules::default() };
        let outcomes = vec![ok("a", 100), ok("b", 99), ok("liar", 1100), failed("c")];
        let snap =
            assemble(outcomes, 2, SystemTime::UNIX_EPOCH, None, rules, &[], Instant::now()).snapshot.unwrap();
        assert_eq!(snap.highest(), 100);
        assert_eq!(snap.lag("b"), Some(1));
        assert_eq!(snap.lag("liar"), Some(0));
        assert!(snap.is_eligible("a") && snap.is_eligible("b") && snap.is_eligible("liar"));
    }

    /// A check at `secs` seconds after `t0`, with `heights` for endpoints "a", "b", ...
    fn timed(
        prev: Option<&Snapshot>,
        t0: Instant,
        secs: u64,
        heights: &[u64],
        rules: Rules,
        max_lag: u64,
    ) -> Snapshot {
        let outcomes = heights.iter().zip(["a", "b", "c"]).map(|(h, id)| ok(id, *h)).collect();
        let at = t0 + Duration::from_secs(secs);
        assemble(outcomes, max_lag, SystemTime::UNIX_EPOCH, prev, rules, &[], at).snapshot.unwrap()
    }

    #[test]
    fn the_block_time_is_an_ewma_of_the_reference_heads_advance_between_checks() {
        let (t0, rules) = (Instant::now(), Rules::default());
        let s0 = timed(None, t0, 0, &[100], rules, 0);
        assert_eq!(s0.block_time(), None);
        // Checks every 5 s, a block every 12 s: the head moves at 12 (seen at 15) and 24 (25).
        let s1 = timed(Some(&s0), t0, 5, &[100], rules, 0);
        let s2 = timed(Some(&s1), t0, 10, &[100], rules, 0);
        let s3 = timed(Some(&s2), t0, 15, &[101], rules, 0);
        assert_eq!(s3.block_time(), Some(Duration::from_secs(15)));
        assert_eq!(s3.head_unchanged_for(), Duration::ZERO);
        let s4 = timed(Some(&s3), t0, 20, &[101], rules, 0);
        assert_eq!(s4.head_unchanged_for(), Duration::from_secs(5));
        let s5 = timed(Some(&s4), t0, 25, &[102], rules, 0);
        // 15 × 3/4 + 10 × 1/4.
        assert_eq!(s5.block_time(), Some(Duration::from_millis(13_750)));
        // Two blocks at once: one sample of half the time each.
        let s6 = timed(Some(&s5), t0, 49, &[104], rules, 0);
        assert_eq!(s6.block_time(), Some(Duration::from_micros(13_312_500)));
    }

    #[test]
    fn a_stalled_head_is_reported_without_evicting_every_provider() {
        let (t0, rules) = (Instant::now(), Rules { stall_after: 3, ..Rules::default() });
        let mut snap = timed(None, t0, 0, &[100, 100, 99], rules, 1);
        for (i, secs) in [12, 24, 36].into_iter().enumerate() {
            let h = 101 + i as u64;
            snap = timed(Some(&snap), t0, secs, &[h, h, h - 1], rules, 1);
        }
        assert_eq!(snap.block_time(), Some(Duration::from_secs(12)));
        // The head stops at 103: stalled once unchanged for more than 3 × 12 s.
        snap = timed(Some(&snap), t0, 72, &[103, 103, 102], rules, 1);
        assert!(!snap.stalled());
        snap = timed(Some(&snap), t0, 73, &[103, 103, 102], rules, 1);
        assert!(snap.stalled());
        assert_eq!(snap.head_unchanged_for(), Duration::from_secs(37));
        assert!(snap.entries().iter().all(SnapshotEntry::is_eligible), "{snap:?}");
        // Moving again ends the stall.
        snap = timed(Some(&snap), t0, 80, &[104, 104, 103], rules, 1);
        assert!(!snap.stalled());
    }

    #[test]
    fn lag_in_seconds_makes_a_provider_eligible_within_either_threshold() {
        let t0 = Instant::now();
        let rules = Rules { max_lag_secs: Some(30), ..Rules::default() };
        // Without a block time yet, only the blocks count.
        let s0 = timed(None, t0, 0, &[100, 98, 100], rules, 1);
        assert!(!s0.is_eligible("b"));
        assert_eq!(s0.lag_time("b"), None);
        let s1 = timed(Some(&s0), t0, 12, &[101, 99, 101], rules, 1);
        assert_eq!(s1.block_time(), Some(Duration::from_secs(12)));
        // 2 blocks × 12 s = 24 s <= 30 s: eligible by time, though not by blocks.
        assert_eq!(s1.lag_time("b"), Some(Duration::from_secs(24)));
        assert!(s1.is_eligible("b"));
        let s2 = timed(Some(&s1), t0, 24, &[102, 99, 102], rules, 1);
        assert_eq!(s2.lag_time("b"), Some(Duration::from_secs(36)));
        assert!(!s2.is_eligible("b"));
        // Within the blocks threshold, eligible whatever the time.
        let strict = Rules { max_lag_secs: Some(0), ..Rules::default() };
        let s3 = timed(Some(&s2), t0, 36, &[103, 102, 103], strict, 1);
        assert!(s3.is_eligible("b"));
    }

    #[test]
    fn an_ineligible_endpoint_is_readmitted_after_k_good_checks_in_a_row() {
        let rules = Rules { readmit_after: 3, ..Rules::default() };
        let next = |prev: Option<&Snapshot>, b: Option<u64>| {
            let b = b.map_or_else(|| failed("b").1, Ok);
            assemble(
                vec![ok("a", 10), ("b".into(), b)],
                0,
                SystemTime::UNIX_EPOCH,
                prev,
                rules,
                &[],
                Instant::now(),
            )
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

    /// The spawned schedule's probe of endpoint `i` of "a", "b", "c", with `counts` of evidence.
    fn amended(
        prev: Option<&Snapshot>,
        i: usize,
        outcome: Result<u64, ProbeFailure>,
        counts: Counts,
    ) -> Amended {
        let ids: Vec<EndpointId> = ["a", "b", "c"].into_iter().map(EndpointId::from).collect();
        let ids: Vec<&EndpointId> = ids.iter().collect();
        let probed =
            Probed { position: i, outcome, measured: Measured::default(), at: Instant::now(), counts };
        let config =
            Amending { max_lag: 1, rules: Rules::default(), waiting: Fitness::Unchecked, vouched: &[] };
        amend(prev, &ids, probed, config)
    }

    #[test]
    fn one_probe_replaces_its_entry_and_the_others_wait_fail_open() {
        let s1 = amended(None, 1, Ok(100), Counts::default()).snapshot.unwrap();
        assert_eq!(s1.fitness("a"), Fitness::Unchecked);
        assert!(s1.entry("a").unwrap().checked().is_none() && s1.entry("b").unwrap().checked().is_some());
        assert_eq!((s1.highest(), s1.fitness("b")), (100, Fitness::Fit { behind: 0 }));
        // A failure with no height anywhere publishes nothing; the provider was admitted
        // (fail-open), so it is bad evidence.
        let failed = amended(None, 0, failed("a").1, Counts::default());
        assert!(failed.snapshot.is_none());
        assert_eq!(failed.evidence, Some(false));
    }

    #[test]
    fn a_higher_reference_demotes_the_others_at_once_but_only_their_own_probe_promotes_them() {
        let s1 = amended(None, 0, Ok(100), Counts::default()).snapshot.unwrap();
        let s2 = amended(Some(&s1), 1, Ok(100), Counts::default()).snapshot.unwrap();
        let s3 = amended(Some(&s2), 2, Ok(105), Counts::default()).snapshot.unwrap();
        assert_eq!(s3.highest(), 105);
        assert_eq!(s3.fitness("a"), Fitness::Lagging { behind: 5 });
        assert_eq!(s3.fitness("b"), Fitness::Lagging { behind: 5 });
        // c fails: the reference falls back to 100, but a and b wait for their own probes.
        let s4 = amended(Some(&s3), 2, failed("c").1, Counts::default()).snapshot.unwrap();
        assert_eq!(s4.highest(), 100);
        assert_eq!(s4.fitness("a"), Fitness::Lagging { behind: 5 });
        let s5 = amended(Some(&s4), 0, Ok(100), Counts::default()).snapshot.unwrap();
        assert_eq!(s5.fitness("a"), Fitness::Fit { behind: 0 });
    }

    #[test]
    fn a_fit_provider_one_block_past_the_threshold_behind_a_later_probe_stays_fit_until_its_own() {
        // max_lag 1: a probe of c one block past it (2 behind) is the phase between two
        // probes, not a lag; two blocks past it (3 behind) is.
        let s1 = amended(None, 0, Ok(100), Counts::default()).snapshot.unwrap();
        let s2 = amended(Some(&s1), 2, Ok(102), Counts::default()).snapshot.unwrap();
        assert_eq!(s2.fitness("a"), Fitness::Fit { behind: 0 });
        let s3 = amended(Some(&s2), 2, Ok(103), Counts::default()).snapshot.unwrap();
        assert_eq!(s3.fitness("a"), Fitness::Lagging { behind: 3 });
        // Its own probe judges it exactly.
        let s4 = amended(Some(&s2), 0, Ok(100), Counts::default()).snapshot.unwrap();
        assert_eq!(s4.fitness("a"), Fitness::Lagging { behind: 2 });
    }

    #[test]
    fn a_held_out_provider_is_readmitted_by_a_good_probe_only_when_its_evidence_allows() {
        let s1 = amended(None, 0, Ok(100), Counts::default()).snapshot.unwrap();
        let out = amended(Some(&s1), 1, failed("b").1, Counts::default()).snapshot.unwrap();
        assert_eq!(out.fitness("b"), Fitness::ProbeFailed);
        // Half bad: 3 good, 3 bad, plus this probe's good: 3/7 > 1/4.
        let doubted = amended(Some(&out), 1, Ok(100), Counts { good: 3.0, bad: 3.0 });
        // Held out, its probes (on a backoff, many a fault) record no evidence of their own.
        assert_eq!(doubted.evidence, None);
        let entry = doubted.snapshot.as_ref().unwrap().entry("b").unwrap().clone();
        assert_eq!(entry.fitness(), Fitness::Doubted { behind: 0 });
        assert_eq!(entry.bad_share(), Some(3.0 / 7.0));
        // 1 bad against 2 good and this probe: exactly 1/4, re-admitted.
        let back = amended(Some(&out), 1, Ok(100), Counts { good: 2.0, bad: 1.0 }).snapshot.unwrap();
        assert_eq!(back.fitness("b"), Fitness::Fit { behind: 0 });
        // A failed probe of a provider already out adds no evidence.
        assert_eq!(amended(Some(&out), 1, failed("b").1, Counts::default()).evidence, None);
    }

    /// [`amended`] with a head hash (the block number's).
    fn amended_with_hash(prev: Option<&Snapshot>, i: usize, height: u64) -> Snapshot {
        let ids: Vec<EndpointId> = ["a", "b", "c"].into_iter().map(EndpointId::from).collect();
        let ids: Vec<&EndpointId> = ids.iter().collect();
        let mut bytes = [0u8; 32];
        bytes[24..].copy_from_slice(&height.to_be_bytes());
        let measured = Measured { hash: Some(BlockHash::new(bytes)), ..Measured::default() };
        let probed = Probed {
            position: i,
            outcome: Ok(height),
            measured,
            at: Instant::now(),
            counts: Counts::default(),
        };
        let rules = Rules { agreement: 2, ..Rules::default() };
        let config = Amending { max_lag: 1, rules, waiting: Fitness::Unchecked, vouched: &[] };
        amend(prev, &ids, probed, config).snapshot.unwrap()
    }

    #[test]
    fn the_agreed_head_is_carried_until_a_newer_one_is_agreed_while_its_providers_have_it() {
        let s1 = amended_with_hash(None, 0, 100);
        let s2 = amended_with_hash(Some(&s1), 1, 100);
        assert_eq!(s2.agreed().map(AgreedHead::number), Some(100));
        // a moves on alone: 101 is not agreed yet, 100 still is (b has it, a is past it).
        let s3 = amended_with_hash(Some(&s2), 0, 101);
        assert_eq!(s3.agreed().map(AgreedHead::number), Some(100));
        // b reaches 101 too: the newer head is agreed.
        let s4 = amended_with_hash(Some(&s3), 1, 101);
        assert_eq!(s4.agreed().map(AgreedHead::number), Some(101));
        // A provider that reported the carried head falls behind it: not carried any more.
        let s5 = amended_with_hash(Some(&s3), 1, 99);
        assert_ne!(s5.agreed().map(AgreedHead::number), Some(100));
    }

    #[tokio::test(start_paused = true)]
    async fn an_entry_probed_earlier_is_credited_with_the_blocks_made_since_but_its_own_probe_judges_it() {
        let second = || tokio::time::advance(std::time::Duration::from_secs(1));
        let s1 = amended(None, 0, Ok(100), Counts::default()).snapshot.unwrap();
        let mut s = amended(Some(&s1), 1, Ok(100), Counts::default()).snapshot.unwrap();
        // a moves a block a second; b is not probed again for 3 s.
        for height in 101..=103 {
            second().await;
            s = amended(Some(&s), 0, Ok(height), Counts::default()).snapshot.unwrap();
        }
        assert_eq!(s.block_time(), Some(std::time::Duration::from_secs(1)));
        assert_eq!(s.fitness("b"), Fitness::Fit { behind: 0 }, "100, probed 3 s (3 blocks) ago");
        // Its own probe still at 100: 3 behind, beyond max_lag 1.
        let s = amended(Some(&s), 1, Ok(100), Counts::default()).snapshot.unwrap();
        assert_eq!(s.fitness("b"), Fitness::Lagging { behind: 3 });
    }

    #[tokio::test(start_paused = true)]
    async fn a_head_shown_again_counts_from_when_it_was_first_shown_not_from_its_latest_probe() {
        let ids: Vec<EndpointId> = ["a", "b", "c"].into_iter().map(EndpointId::from).collect();
        let ids: Vec<&EndpointId> = ids.iter().collect();
        let probe = |prev: Option<&Snapshot>, height: u64, timestamp: u64| {
            let measured = Measured { timestamp: Some(timestamp), ..Measured::default() };
            let probed = Probed {
                position: 0,
                outcome: Ok(height),
                measured,
                at: Instant::now(),
                counts: Counts::default(),
            };
            let config =
                Amending { max_lag: 1, rules: Rules::default(), waiting: Fitness::Unchecked, vouched: &[] };
            amend(prev, &ids, probed, config).snapshot.unwrap()
        };
        let first = Instant::now();
        let s1 = probe(None, 100, 1_000);
        assert_eq!(s1.reference_seen(), first);
        tokio::time::advance(std::time::Duration::from_secs(2)).await;
        // The same block again: a stalled provider. Its head is as old as its first sighting.
        let s2 = probe(Some(&s1), 100, 1_000);
        assert_eq!(s2.reference_seen(), first);
        // A new head is seen now.
        tokio::time::advance(std::time::Duration::from_secs(1)).await;
        let s3 = probe(Some(&s2), 101, 1_012);
        assert_eq!(s3.reference_seen(), Instant::now());
    }

    #[tokio::test(start_paused = true)]
    async fn a_provider_probed_now_below_the_others_heads_credited_with_the_blocks_made_since_is_behind() {
        let second = || tokio::time::advance(std::time::Duration::from_secs(1));
        let mut s = amended(None, 0, Ok(100), Counts::default()).snapshot.unwrap();
        // a moves a block a second: the block time is learnt.
        for height in 101..=103 {
            second().await;
            s = amended(Some(&s), 0, Ok(height), Counts::default()).snapshot.unwrap();
        }
        // Ten seconds later, c shows 104: the highest head probed, but the chain has made ten
        // blocks since a showed 103. Credited conservatively (10 less 1 less 3), a's head is
        // 109: c is 5 behind, and not the reference: a's 103 is, as seen 10 s ago.
        let a_seen = Instant::now();
        tokio::time::advance(std::time::Duration::from_secs(10)).await;
        let s = amended(Some(&s), 2, Ok(104), Counts::default()).snapshot.unwrap();
        assert_eq!(s.fitness("c"), Fitness::Lagging { behind: 5 });
        assert_eq!((s.highest(), s.reference_seen()), (103, a_seen));
        assert_eq!(s.fitness("a"), Fitness::Fit { behind: 0 }, "a's own head, credited in full, is current");
    }

    /// The spawned schedule's probe of endpoint `i` of "a", "b", "c", now, with the heads
    /// traffic showed (`vouched`); the snapshot it publishes.
    fn probe(
        prev: Option<&Snapshot>,
        i: usize,
        outcome: Result<u64, ProbeFailure>,
        vouched: &[Option<(u64, Instant)>],
    ) -> Snapshot {
        let ids: Vec<EndpointId> = ["a", "b", "c"].into_iter().map(EndpointId::from).collect();
        let ids: Vec<&EndpointId> = ids.iter().collect();
        let probed = Probed {
            position: i,
            outcome,
            measured: Measured::default(),
            at: Instant::now(),
            counts: Counts::default(),
        };
        let config = Amending { max_lag: 1, rules: Rules::default(), waiting: Fitness::Unchecked, vouched };
        amend(prev, &ids, probed, config).snapshot.unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn a_head_traffic_showed_is_a_reference_from_when_it_was_first_shown_but_not_for_a_provider_whose_probe_failed()
     {
        let s = probe(None, 0, Ok(100), &[]);
        let s = probe(Some(&s), 1, Ok(100), &[]);
        // a serves the reads and is probed no more: its answers showed 110, first 500 ms ago.
        tokio::time::advance(std::time::Duration::from_millis(500)).await;
        let shown = Instant::now();
        tokio::time::advance(std::time::Duration::from_millis(500)).await;
        let vouched = [Some((110, shown)), None, None];
        let s = probe(Some(&s), 2, Ok(105), &vouched);
        assert_eq!((s.highest(), s.reference_seen()), (110, shown), "the head a showed, when it showed it");
        assert_eq!(s.fitness("c"), Fitness::Lagging { behind: 5 }, "c's probe, below a's answers");
        // c's next probe fails: what its answers showed a moment ago is no reference (its
        // probe says nothing of it), and the reference is not made any newer by it.
        let failed = Err(ProbeFailure::new("c".into(), Method::BlockNumber, ProbeError::Timeout));
        let vouched = [Some((110, shown)), None, Some((130, Instant::now()))];
        let s = probe(Some(&s), 2, failed, &vouched);
        assert_eq!((s.highest(), s.reference_seen()), (110, shown));
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_probe_of_the_provider_at_the_reference_measures_no_block_time() {
        let ids = ["a", "b", "c"];
        let mut s = probe(None, 1, Ok(99), &[]);
        s = probe(Some(&s), 0, Ok(100), &[]);
        // a moves a block a second: the block time is learnt.
        for height in 101..=103 {
            tokio::time::advance(std::time::Duration::from_secs(1)).await;
            s = probe(Some(&s), 0, Ok(height), &[]);
        }
        assert_eq!(s.block_time(), Some(std::time::Duration::from_secs(1)));
        // Twice, the probe of a provider at the reference (a, then c) fails three seconds on,
        // while b's answers showed one block more than the reference: the reference moved
        // after three seconds of hearing nothing fresher, which says nothing of how fast the
        // chain goes.
        s = probe(Some(&s), 2, Ok(103), &[]);
        for (at_reference, height) in [(0, 104), (2, 105)] {
            tokio::time::advance(std::time::Duration::from_secs(3)).await;
            let failed =
                Err(ProbeFailure::new(ids[at_reference].into(), Method::BlockNumber, ProbeError::Timeout));
            let vouched = [None, Some((height, Instant::now())), None];
            s = probe(Some(&s), at_reference, failed, &vouched);
            assert_eq!(s.highest(), height);
            if at_reference == 0 {
                // c catches up with the reference b's answers showed.
                s = probe(Some(&s), 2, Ok(height), &vouched);
            }
        }
        assert_eq!(s.block_time(), Some(std::time::Duration::from_secs(1)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_provider_reaching_the_reference_later_does_not_make_it_newer() {
        let first = Instant::now();
        let s = amended(None, 0, Ok(100), Counts::default()).snapshot.unwrap();
        tokio::time::advance(std::time::Duration::from_secs(1)).await;
        // b shows 100 a second after a did: later news of a head the chain already had.
        let s = amended(Some(&s), 1, Ok(100), Counts::default()).snapshot.unwrap();
        assert_eq!((s.highest(), s.reference_seen()), (100, first));
        // A new head is news.
        let s = amended(Some(&s), 2, Ok(101), Counts::default()).snapshot.unwrap();
        assert_eq!((s.highest(), s.reference_seen()), (101, Instant::now()));
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
        let second = assemble(
            vec![failed("a"), ok("b", 2)],
            10,
            SystemTime::UNIX_EPOCH,
            Some(&first),
            Rules::default(),
            &[],
            Instant::now(),
        );
        let second = second.snapshot.unwrap();
        assert_eq!(second.entry("a").unwrap().last_good(), heard, "carried from the first");
        assert_eq!(second.entry("b").unwrap().last_good(), Some(second.checked()));
        assert_eq!(second.entry("a").unwrap().last_good_age(), Some(std::time::Duration::from_secs(7)));
        assert_eq!(second.age(), std::time::Duration::ZERO);
    }
}

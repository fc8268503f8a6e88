//! `Evidence`: one endpoint's recent good and bad outcomes (its probes and the real-traffic
//! answers failnext [observes](failnext::HealthSource::observe)), as two counters that halve
//! every half-life, kept in one atomic word so that recording is lock-free.
//!
//! The word packs, from the top: the time of the last update (36 bits of milliseconds since
//! the monitor was built, about 2 years before it wraps), then the good and the bad count
//! (14 bits each, fixed point with 4 fractional bits: up to 1023.9375, in steps of 1/16).
//! A count that would overflow halves both counts first, which keeps their ratio. Recording
//! is a compare-and-swap loop; reading is one load.

use std::sync::atomic::{AtomicU64, Ordering};

/// Bits of the update time.
const STAMP_BITS: u32 = 36;
/// Bits of each count.
const COUNT_BITS: u32 = 14;
/// The largest count, in sixteenths.
const COUNT_MAX: u64 = (1 << COUNT_BITS) - 1;
/// One outcome, in sixteenths.
const ONE: u64 = 16;
const STAMP_MASK: u64 = (1 << STAMP_BITS) - 1;

/// The half-life of the evidence before a schedule is spawned (a monitor checked by hand).
pub(crate) const DEFAULT_HALF_LIFE_MS: u64 = 1_000;

/// One endpoint's recent outcomes, decayed by a half-life given at each use.
#[derive(Debug, Default)]
pub(crate) struct Evidence(AtomicU64);

/// The decayed counts at one time.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Counts {
    /// Good outcomes (a probe within the lag threshold, an answer judged good).
    pub(crate) good: f64,
    /// Bad outcomes (a failed or lagging probe, an answer failed, behind or implausible).
    pub(crate) bad: f64,
}

impl Counts {
    /// The share of bad outcomes, `bad / (good + bad)`; 0 without any evidence.
    pub(crate) fn bad_share(self) -> f64 {
        let total = self.good + self.bad;
        if total > 0.0 { self.bad / total } else { 0.0 }
    }
}

impl Evidence {
    /// Records one outcome (`good` or not) at `now_ms` (milliseconds since the monitor's
    /// origin), the older ones decayed by `half_life_ms`.
    pub(crate) fn record(&self, good: bool, now_ms: u64, half_life_ms: u64) {
        let _ = self.0.fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| {
            let (stamp, mut g, mut b) = decayed(word, now_ms, half_life_ms);
            let counter = if good { &mut g } else { &mut b };
            if *counter + ONE > COUNT_MAX {
                (g, b) = (g / 2, b / 2);
            }
            if good {
                g += ONE
            } else {
                b += ONE
            }
            Some(pack(stamp, g, b))
        });
    }

    /// The counts at `now_ms`, decayed by `half_life_ms`.
    pub(crate) fn counts(&self, now_ms: u64, half_life_ms: u64) -> Counts {
        let (_, g, b) = decayed(self.0.load(Ordering::Acquire), now_ms, half_life_ms);
        Counts { good: g as f64 / ONE as f64, bad: b as f64 / ONE as f64 }
    }
}

fn pack(stamp: u64, good: u64, bad: u64) -> u64 {
    (stamp & STAMP_MASK) << (2 * COUNT_BITS) | (good & COUNT_MAX) << COUNT_BITS | (bad & COUNT_MAX)
}

/// The word's stamp and counts brought forward to `now_ms`. A `now_ms` before the stamp (two
/// recorders that read the clock in one order and update in the other) decays nothing.
fn decayed(word: u64, now_ms: u64, half_life_ms: u64) -> (u64, u64, u64) {
    let stamp = word >> (2 * COUNT_BITS);
    let (good, bad) = (word >> COUNT_BITS & COUNT_MAX, word & COUNT_MAX);
    let now = now_ms & STAMP_MASK;
    let elapsed = now.wrapping_sub(stamp) & STAMP_MASK;
    if elapsed == 0 || elapsed > STAMP_MASK / 2 {
        return (stamp, good, bad);
    }
    let factor = (-(elapsed as f64) / half_life_ms.max(1) as f64).exp2();
    let scale = |count: u64| (count as f64 * factor).round() as u64;
    (now, scale(good), scale(bad))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_halve_every_half_life_and_keep_their_ratio() {
        let evidence = Evidence::default();
        for _ in 0..4 {
            evidence.record(true, 0, 100);
        }
        evidence.record(false, 0, 100);
        assert_eq!(evidence.counts(0, 100), Counts { good: 4.0, bad: 1.0 });
        assert_eq!(evidence.counts(100, 100), Counts { good: 2.0, bad: 0.5 });
        assert_eq!(evidence.counts(200, 100).bad_share(), 0.2);
        // Far later, nothing is left.
        assert_eq!(evidence.counts(100_000, 100), Counts::default());
        assert_eq!(Counts::default().bad_share(), 0.0);
    }

    #[test]
    fn a_clock_read_before_the_last_update_decays_nothing() {
        let evidence = Evidence::default();
        evidence.record(true, 1_000, 100);
        evidence.record(false, 999, 100);
        assert_eq!(evidence.counts(1_000, 100), Counts { good: 1.0, bad: 1.0 });
    }

    #[test]
    fn a_count_at_its_limit_halves_both_and_keeps_counting() {
        let evidence = Evidence::default();
        for _ in 0..3_000 {
            evidence.record(true, 0, 100);
        }
        for _ in 0..1_000 {
            evidence.record(false, 0, 100);
        }
        let counts = evidence.counts(0, 100);
        assert!(counts.good <= 1024.0 && counts.bad > 0.0, "{counts:?}");
        assert!(counts.bad_share() > 0.2 && counts.bad_share() < 0.6, "{counts:?}");
    }
}

//! `Recent`: one endpoint's latest attempt latencies, for a percentile hedge. Kept only when a
//! [`Hedge::percentile`](crate::Hedge::percentile) is configured.

use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// How many latencies an endpoint keeps: the latest ones, the older overwritten.
pub(crate) const KEPT: usize = 64;

/// How many latencies an endpoint needs before a quantile of them is used.
pub(crate) const MIN_SAMPLES: usize = 16;

/// The latest [`KEPT`] latencies of one endpoint, in microseconds (at least 1; 0 is an empty
/// place), in a ring of atomics: recording is two relaxed atomic operations and takes no lock;
/// reading copies the ring to the stack.
///
/// A reader racing writers may see a place being overwritten with either value, which a
/// quantile over 64 samples does not notice.
pub(crate) struct Recent {
    micros: [AtomicU32; KEPT],
    /// The place the next sample takes, modulo [`KEPT`] (which divides 2³², so the wrap of the
    /// counter is seamless).
    next: AtomicU32,
}

impl Recent {
    pub(crate) fn new() -> Recent {
        Recent { micros: [const { AtomicU32::new(0) }; KEPT], next: AtomicU32::new(0) }
    }

    /// Adds a sample, replacing the oldest once the ring is full (saturating at about 71
    /// minutes).
    pub(crate) fn record(&self, latency: Duration) {
        let us = u32::try_from(latency.as_micros()).unwrap_or(u32::MAX).max(1);
        let at = self.next.fetch_add(1, Ordering::Relaxed) as usize % KEPT;
        self.micros[at].store(us, Ordering::Relaxed);
    }

    /// The `q`-quantile (nearest rank) of the samples kept, once there are at least
    /// [`MIN_SAMPLES`]; allocates nothing.
    pub(crate) fn quantile(&self, q: f64) -> Option<Duration> {
        let mut copy = [0u32; KEPT];
        let mut n = 0;
        for place in &self.micros {
            let us = place.load(Ordering::Relaxed);
            if us != 0 {
                copy[n] = us;
                n += 1;
            }
        }
        if n < MIN_SAMPLES {
            return None;
        }
        Some(Duration::from_micros(u64::from(nearest_rank(&mut copy[..n], q))))
    }

    /// How many samples are kept.
    fn len(&self) -> usize {
        self.micros.iter().filter(|p| p.load(Ordering::Relaxed) != 0).count()
    }
}

impl fmt::Debug for Recent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recent").field("samples", &self.len()).finish()
    }
}

/// The `q`-quantile of `values` by nearest rank: the smallest value with at least `q` of them
/// at or below it. `values` is reordered; it must not be empty. A `q` outside (0, 1) (which
/// the builder rejects) gives the smallest or the largest value; NaN gives the smallest.
fn nearest_rank(values: &mut [u32], q: f64) -> u32 {
    let n = values.len();
    // `as` saturates: NaN and negatives become 0.
    let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
    *values.select_nth_unstable(rank - 1).1
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn nearest_rank_takes_the_smallest_value_with_q_of_them_at_or_below_it() {
        let mut v: Vec<u32> = (1..=20).rev().collect();
        assert_eq!(nearest_rank(&mut v, 0.9), 18);
        assert_eq!(nearest_rank(&mut v, 0.5), 10);
        assert_eq!(nearest_rank(&mut v, 0.01), 1);
        assert_eq!(nearest_rank(&mut v, 0.99), 20);
        assert_eq!(nearest_rank(&mut [7], 0.9), 7);
    }

    #[test]
    fn nearest_rank_never_panics_on_a_q_outside_the_open_unit_interval() {
        let mut v = [3, 1, 2];
        for q in [f64::NAN, -1.0, 0.0, 1.0, 2.0, f64::INFINITY, f64::NEG_INFINITY] {
            let got = nearest_rank(&mut v, q);
            assert!((1..=3).contains(&got), "{q}: {got}");
        }
    }

    #[test]
    fn no_quantile_before_min_samples() {
        let recent = Recent::new();
        for _ in 0..MIN_SAMPLES - 1 {
            recent.record(100 * MS);
        }
        assert_eq!(recent.quantile(0.9), None);
        recent.record(100 * MS);
        assert_eq!(recent.quantile(0.9), Some(100 * MS));
    }

    #[test]
    fn only_the_latest_64_samples_count() {
        let recent = Recent::new();
        for _ in 0..KEPT {
            recent.record(500 * MS);
        }
        for _ in 0..KEPT {
            recent.record(10 * MS);
        }
        assert_eq!(recent.quantile(0.99), Some(10 * MS), "the older samples are overwritten");
        assert_eq!(recent.len(), KEPT);
    }

    #[test]
    fn a_zero_sample_still_counts_and_a_huge_one_saturates() {
        let recent = Recent::new();
        for _ in 0..MIN_SAMPLES {
            recent.record(Duration::ZERO);
        }
        assert_eq!(recent.quantile(0.5), Some(Duration::from_micros(1)));
        recent.record(Duration::from_secs(u64::MAX));
        assert_eq!(recent.quantile(0.99), Some(Duration::from_micros(u64::from(u32::MAX))));
    }
}

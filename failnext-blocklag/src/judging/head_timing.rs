//! `HeadTiming`: the reference head over time as one check sees it (when it last moved, the
//! observed block time, whether it stalled), the rule that carries it from one check to the
//! next ([`HeadTiming::after`]), and the lag in time a number of blocks makes ([`lag_time`]).
//!
//! Data and arithmetic only, below both the [`Snapshot`](crate::Snapshot) that keeps a timing
//! and the round that computes the next one.

use std::time::Duration;

use tokio::time::Instant;

/// The reference head's timing as of one check, carried from the previous snapshot.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HeadTiming {
    /// When this check ran (monotonic, tokio's clock).
    pub(crate) checked_at: Instant,
    /// The check at which the reference height became what it is now.
    pub(crate) head_since: Instant,
    /// EWMA of the time per block, once the reference advanced.
    pub(crate) block_time: Option<Duration>,
    /// The latest raw samples, newest first: the EWMA takes the median of the three, so one
    /// advance that is no measure of the chain (a provider at the reference that was itself
    /// behind, catching up 49 blocks in 47 ms) moves nothing.
    recent: [Option<Duration>; 3],
    /// Unchanged for more than `stall_after` block times.
    pub(crate) stalled: bool,
}

/// The weight of a new block-time sample in the EWMA.
const BLOCK_TIME_WEIGHT: f64 = 0.25;

impl HeadTiming {
    /// The reference head's timing at `checked_at`, when the reference height is `reference`
    /// and `before` is the previous snapshot's reference height and timing (`None` before the
    /// first publication): when it last changed, the block-time EWMA (sampled when it
    /// advances: the time since it last changed over the blocks it advanced), and whether it
    /// is stalled (unchanged for more than `stall_after` block times).
    ///
    /// `sampled`: whether an advance of the reference measures the chain (a provider that was
    /// at the reference moved on), or only that another provider was ahead (one catching up,
    /// or providers first probed at different heights): then it is a new head, but no sample.
    pub(crate) fn after(
        before: Option<(u64, HeadTiming)>,
        reference: u64,
        checked_at: Instant,
        stall_after: u32,
        sampled: bool,
    ) -> HeadTiming {
        let (head_since, block_time, recent) = match before {
            None => (checked_at, None, [None; 3]),
            Some((old, head)) if reference == old => (head.head_since, head.block_time, head.recent),
            Some((old, head)) if reference > old && sampled => {
                let blocks = u32::try_from(reference - old).unwrap_or(u32::MAX);
                let sample = checked_at.saturating_duration_since(head.head_since) / blocks;
                let recent = [Some(sample), head.recent[0], head.recent[1]];
                let sample = median(&recent).unwrap_or(sample);
                let block_time = match head.block_time {
                    Some(old) => {
                        old.mul_f64(1.0 - BLOCK_TIME_WEIGHT).saturating_add(sample.mul_f64(BLOCK_TIME_WEIGHT))
                    }
                    None => sample,
                };
                (checked_at, Some(block_time), recent)
            }
            // The reference went back (a provider left, a reorg), or moved by a provider that
            // was not at it: a new head, no sample.
            Some((_, head)) => (checked_at, head.block_time, head.recent),
        };
        let stalled = block_time.is_some_and(|block_time| {
            checked_at.saturating_duration_since(head_since) > block_time.saturating_mul(stall_after)
        });
        HeadTiming { checked_at, head_since, block_time, stalled, recent }
    }
}

/// The median of the samples there are (the lower of two; the one of one).
fn median(samples: &[Option<Duration>; 3]) -> Option<Duration> {
    let mut known: Vec<Duration> = samples.iter().flatten().copied().collect();
    known.sort_unstable();
    match known.len() {
        0 => None,
        n => Some(known[(n - 1) / 2]),
    }
}

/// `behind` blocks of `block_time` each, saturating.
pub(crate) fn lag_time(behind: u64, block_time: Duration) -> Duration {
    block_time.saturating_mul(u32::try_from(behind).unwrap_or(u32::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECS: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn a_reference_that_goes_back_is_a_new_head_that_keeps_the_block_time_without_a_sample() {
        let t0 = Instant::now();
        let first = HeadTiming::after(None, 100, t0, 3, true);
        let second = HeadTiming::after(Some((100, first)), 101, t0 + SECS(12), 3, true);
        assert_eq!(second.block_time, Some(SECS(12)));
        let back = HeadTiming::after(Some((101, second)), 99, t0 + SECS(20), 3, true);
        assert_eq!((back.head_since, back.block_time), (t0 + SECS(20), Some(SECS(12))));
        assert!(!back.stalled);
    }

    #[test]
    fn one_advance_far_faster_than_the_chain_moves_the_block_time_by_nothing() {
        let ms = Duration::from_millis;
        let t0 = Instant::now();
        // Two seconds a probe, 40 blocks of 50 ms each time.
        let mut timing = HeadTiming::after(None, 1000, t0, 3, true);
        let mut head = 1000;
        for i in 1..=4u32 {
            head += 40;
            timing = HeadTiming::after(Some((head - 40, timing)), head, t0 + ms(2000) * i, 3, true);
        }
        assert_eq!(timing.block_time, Some(ms(50)));
        // A provider at the reference that was behind catches up: 49 blocks in 47 ms.
        let caught_up = HeadTiming::after(Some((head, timing)), head + 49, t0 + ms(8047), 3, true);
        assert_eq!(caught_up.block_time, Some(ms(50)), "the median of 50, 50 and 0.96 ms");
        // A chain that really is faster moves it from the second such advance on.
        let next = HeadTiming::after(Some((head + 49, caught_up)), head + 89, t0 + ms(9047), 3, true);
        assert!(next.block_time.unwrap() < ms(50), "{:?}", next.block_time);
    }

    #[test]
    fn the_lag_in_time_is_blocks_times_block_time_saturating() {
        assert_eq!(lag_time(3, SECS(12)), SECS(36));
        assert_eq!(lag_time(0, SECS(12)), Duration::ZERO);
        assert_eq!(lag_time(u64::MAX, SECS(1)), SECS(u64::from(u32::MAX)));
        assert_eq!(lag_time(u64::from(u32::MAX), Duration::MAX), Duration::MAX);
    }
}

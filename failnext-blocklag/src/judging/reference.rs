//! `Reference`: which height of a check the others are compared with.

/// The rule that picks a check's reference height, the one every provider's lag is measured
/// from ([`Snapshot::highest`](crate::Snapshot::highest)). Set with
/// [`MonitorBuilder::reference`](crate::MonitorBuilder::reference).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Reference {
    /// The highest height any provider reported (the 0.1 rule). One provider far ahead (a
    /// fork, a bug, a lie) makes every other one lag.
    Highest,
    /// The highest *plausible* height (the default): the highest of the heads that the clock
    /// does not rule out. Where the probe reads the head block's timestamp (a spawned
    /// monitor, or [`head_with_hash`](crate::MonitorBuilder::head_with_hash)), a head stamped
    /// more than 15 s ahead of the monitor's clock, or higher than the chain could have made
    /// since the other providers' heads (more than twice the blocks of the learned block time,
    /// or of 100 ms before one is learned, in the time between the timestamps, plus a second,
    /// plus `max_lag` blocks, above the lower median of the heads), is
    /// [implausible](crate::SnapshotEntry::is_implausible): ineligible, and it never sets the
    /// reference. A provider alone far ahead with a current timestamp evicts no one. Under
    /// this rule a head older than the
    /// [maximum head age](crate::MonitorBuilder::max_head_age) is also stale. Without
    /// timestamps (the `eth_blockNumber` probe of [`check`](crate::Monitor::check)) nothing
    /// is ruled out and it is [`Highest`](Reference::Highest) exactly.
    #[default]
    Plausible,
    /// The highest height that at least `k` providers have reached: the `k`-th highest of the
    /// reported heights, counting equal heights separately. A provider alone ahead of the
    /// others is not corroborated and cannot make them lag; it is itself 0 blocks behind, so
    /// it stays eligible.
    ///
    /// When fewer than `k` providers answered, the reference is the lowest of the heights that
    /// were reported (every answer has reached it), so that an outlier still cannot evict the
    /// others. `k` must be at least 1 ([`MonitorBuilder::build`](crate::MonitorBuilder::build)
    /// rejects 0); `Corroborated(1)` is [`Highest`](Reference::Highest).
    Corroborated(u32),
}

impl Reference {
    /// The reference height of the successful `heights` of one check; `None` without any.
    pub(crate) fn of(self, heights: impl Iterator<Item = u64>) -> Option<u64> {
        match self {
            Reference::Highest | Reference::Plausible => heights.max(),
            Reference::Corroborated(k) => {
                let mut heights: Vec<u64> = heights.collect();
                heights.sort_unstable_by(|a, b| b.cmp(a));
                let k = usize::try_from(k.max(1)).unwrap_or(usize::MAX);
                heights.get(k - 1).or(heights.last()).copied()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corroborated_is_the_kth_highest_or_the_lowest_when_fewer_answered() {
        let of = |r: Reference, h: &[u64]| r.of(h.iter().copied());
        assert_eq!(of(Reference::Highest, &[100, 1100, 99]), Some(1100));
        assert_eq!(of(Reference::Corroborated(2), &[100, 1100, 99]), Some(100));
        assert_eq!(of(Reference::Corroborated(2), &[100, 100, 1100]), Some(100));
        assert_eq!(of(Reference::Corroborated(1), &[100, 1100]), Some(1100));
        assert_eq!(of(Reference::Corroborated(3), &[100, 1100]), Some(100));
        assert_eq!(of(Reference::Corroborated(2), &[]), None);
        assert_eq!(of(Reference::Highest, &[]), None);
    }
}

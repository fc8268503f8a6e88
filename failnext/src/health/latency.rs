//! Latency-aware ordering (opt-in): a per-endpoint latency EWMA, fed by failnext's own
//! attempts (and by the application, e.g. from a monitor's probes), and the rule that moves a
//! faster endpoint ahead of a slower higher-priority one.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

/// Latency-aware ordering, for [`FailoverBuilder::latency_ordering`](crate::FailoverBuilder::latency_ordering).
///
/// Priority order stays the default and the reference. With this set, each endpoint keeps an
/// exponentially weighted moving average of its latency (weight 1/5 for each new sample),
/// fed by the attempts failnext makes that come back with a response it does not fail over
/// from (a failure says nothing about how fast a provider answers) and by
/// [`Failover::observe_latency`](crate::Failover::observe_latency). Among the endpoints a
/// request may use, the first in configured order (or the request's preferred one) is
/// replaced as the first to try by the fastest one, only when that one is faster by more than
/// the margin; the rest keep their order. An endpoint with no sample yet is never moved ahead,
/// and never displaced.
///
/// An endpoint that gets no traffic (displaced, or never tried yet) would never be measured:
/// one request in [`explore_every`](LatencyOrdering::explore_every) (default 16) is sent
/// first to each usable endpoint in turn, which refreshes every average. Paired with a
/// monitor ([`FailoverBuilder::monitor`](crate::FailoverBuilder::monitor)), its probes
/// measure every endpoint, so the ordering does not explore unless `explore_every` is set:
/// no read is sent first to a slower endpoint just to measure it, and the primary gets its
/// reads back as soon as its probes are fast again. The ordering applies to every request, a write
/// included: a write still reaches at most one provider, the first of its order.
///
/// ```
/// use std::time::Duration;
/// use failnext::{Endpoint, Failover, LatencyOrdering};
///
/// let failover = Failover::builder([
///     Endpoint::new("primary", "http://127.0.0.1:8545"),
///     Endpoint::new("backup", "http://127.0.0.1:8546"),
/// ])
/// .latency_ordering(LatencyOrdering::new(Duration::from_millis(50)))
/// .build()?;
/// # drop(failover);
/// # Ok::<(), failnext::ConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LatencyOrdering {
    pub(crate) margin: Duration,
    /// `None`: the default, 16, or 0 when a monitor is paired.
    pub(crate) explore_every: Option<u32>,
}

impl LatencyOrdering {
    /// Moves an endpoint ahead only when its average is lower by more than `margin`.
    pub fn new(margin: Duration) -> LatencyOrdering {
        LatencyOrdering { margin, explore_every: None }
    }

    /// One request in `n` explores: it is sent first to the next usable endpoint in turn, so
    /// that every average is refreshed by real requests (default 16, or 0 with a paired
    /// monitor). `0` never explores: then only
    /// [`Failover::observe_latency`](crate::Failover::observe_latency) (and a paired monitor's
    /// probes) refresh them.
    #[must_use]
    pub fn explore_every(mut self, n: u32) -> LatencyOrdering {
        self.explore_every = Some(n);
        self
    }
}

/// The ordering of one `Failover`, with its exploration counter.
#[derive(Debug)]
pub(crate) struct Ordered {
    pub(crate) rule: LatencyOrdering,
    /// One request in this many explores (0: none).
    explore_every: u32,
    requests: AtomicU32,
}

/// The default of [`LatencyOrdering::explore_every`] without a paired monitor.
const EXPLORE_EVERY: u32 = 16;

impl Ordered {
    /// `paired`: a monitor measures every endpoint, so by default nothing explores.
    pub(crate) fn new(rule: LatencyOrdering, paired: bool) -> Ordered {
        let explore_every = rule.explore_every.unwrap_or(if paired { 0 } else { EXPLORE_EVERY });
        Ordered { rule, explore_every, requests: AtomicU32::new(0) }
    }

    /// When this request explores: which of the usable endpoints (by rank) it tries first, in
    /// turn, so that every endpoint's average is refreshed by real requests.
    pub(crate) fn explores(&self) -> Option<u32> {
        let n = self.explore_every;
        let k = self.requests.fetch_add(1, Ordering::Relaxed);
        (n != 0 && k % n == 0).then(|| k / n)
    }
}

/// One endpoint's latency average, in microseconds; 0 is "no sample yet".
#[derive(Debug, Default)]
pub(crate) struct Latency(AtomicU64);

impl Latency {
    /// Adds a sample (at least 1 µs, so that it counts as known).
    pub(crate) fn observe(&self, sample: Duration) {
        let sample = u64::try_from(sample.as_micros()).unwrap_or(u64::MAX).max(1);
        let _ = self.0.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
            Some(if old == 0 { sample } else { old - old / 5 + sample / 5 })
        });
    }

    /// The average, if there is one.
    pub(crate) fn get(&self) -> Option<Duration> {
        match self.0.load(Ordering::Relaxed) {
            0 => None,
            us => Some(Duration::from_micros(us)),
        }
    }
}

/// The endpoint to try first instead of `first`, when one of `candidates` is faster than it by
/// more than `margin`: the fastest such one. `latency(i)` is endpoint `i`'s average.
pub(crate) fn faster_than(
    first: usize,
    candidates: impl Iterator<Item = usize>,
    margin: Duration,
    latency: impl Fn(usize) -> Option<Duration>,
) -> Option<usize> {
    let slow = latency(first)?;
    let (best, fastest) = candidates
        .filter(|&i| i != first)
        .filter_map(|i| latency(i).map(|l| (i, l)))
        .min_by_key(|&(_, l)| l)?;
    (fastest + margin < slow).then_some(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn the_average_starts_at_the_first_sample_and_moves_by_a_fifth() {
        let l = Latency::default();
        assert_eq!(l.get(), None);
        l.observe(100 * MS);
        assert_eq!(l.get(), Some(100 * MS));
        l.observe(200 * MS);
        assert_eq!(l.get(), Some(120 * MS));
        l.observe(Duration::ZERO);
        assert!(l.get().is_some(), "a zero sample still counts as known");
    }

    #[test]
    fn only_a_margin_beyond_the_first_moves_an_endpoint_ahead() {
        let lat = [Some(250 * MS), Some(40 * MS), Some(30 * MS), None];
        let pick = |margin| faster_than(0, 0..4, margin, |i| lat[i]);
        assert_eq!(pick(50 * MS), Some(2), "the fastest");
        assert_eq!(pick(220 * MS), None, "not faster by more than the margin");
        assert_eq!(faster_than(3, 0..4, MS, |i| lat[i]), None, "an unmeasured first is not displaced");
        assert_eq!(faster_than(2, 0..4, MS, |i| lat[i]), None, "the first is the fastest");
    }
}

//! `Link`: how failnext's `check_now` (and a contradiction) reaches the probe of one provider
//! in a spawned schedule: a wake-up per provider and a rate limit of one per interval.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// The first re-check of a provider found unfit: about one attempt's latency at a hosted
/// provider. The schedule doubles it at each unfit check in a row, up to the interval.
pub(crate) const FIRST_RECHECK: Duration = Duration::from_millis(50);

/// How failnext reaches a spawned schedule: per provider, a wake-up for its task and when its
/// latest `check_now` was honoured.
#[derive(Debug)]
pub(crate) struct Link {
    /// The schedule's interval, in milliseconds (at least 1).
    interval_ms: u64,
    /// Per provider: wakes its sleeping task (one stored permit at most: never a queue).
    pub(crate) wakes: Vec<Notify>,
    /// Per provider: 1 + the millisecond time of its latest honoured request; 0 for never.
    honoured: Vec<AtomicU64>,
}

impl Link {
    pub(crate) fn new(interval: Duration, n: usize) -> Self {
        Link {
            interval_ms: u64::try_from(interval.as_millis()).unwrap_or(u64::MAX).max(1),
            wakes: (0..n).map(|_| Notify::new()).collect(),
            honoured: (0..n).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Wakes provider `i`'s task for a probe now, at `now_ms`, unless a request was honoured
    /// for it within `gap` ([`Gap::Interval`] for failnext's `check_now`, [`Gap::Recheck`]
    /// for evidence that contradicts the view). A probe in flight is not cut short: the next
    /// sleep ends at once instead.
    pub(crate) fn wake(&self, i: usize, now_ms: u64, gap: Gap) {
        let (Some(wake), Some(honoured)) = (self.wakes.get(i), self.honoured.get(i)) else { return };
        let now = now_ms.saturating_add(1);
        let last = honoured.load(Ordering::Acquire);
        let gap_ms = match gap {
            Gap::Interval => self.interval_ms,
            Gap::Recheck => u64::try_from(FIRST_RECHECK.as_millis()).unwrap_or(u64::MAX),
        };
        if last != 0 && now.saturating_sub(last) < gap_ms {
            return;
        }
        if honoured.compare_exchange(last, now, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            wake.notify_one();
        }
    }
}

/// How soon after the last honoured wake-up of a provider another one is honoured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Gap {
    /// Once per interval: failnext's `check_now`, a request without new evidence.
    Interval,
    /// Once per [`FIRST_RECHECK`](FIRST_RECHECK): evidence that contradicts
    /// the view (a failure of an admitted provider, a good answer of a held-out one).
    Recheck,
}

//! Snapshot observers: an async task on the runtime and a plain thread hammering
//! `eligible()`, each checking the snapshot never goes back in time.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use failnext_blocklag::{Monitor, Snapshot};
use tokio::sync::watch;

use super::{Observed, same, stopped_or, taken};
use crate::soak::checks::{Check, Violations};

/// A call of `Monitor::eligible` slower than this is counted as slow.
pub(crate) const SLOW_ELIGIBLE: Duration = Duration::from_millis(50);
/// More slow calls than this in a phase is blocking, not scheduling noise.
const MAX_SLOW_ELIGIBLE: u64 = 10;

/// An async observer on the runtime: the snapshot it loads never goes back in time.
pub(super) async fn observe(monitor: Monitor, mut stop: watch::Receiver<bool>) -> (u64, u64, Violations) {
    let mut v = Violations::default();
    let mut last: Option<Arc<Snapshot>> = None;
    let (mut reads, mut distinct) = (0, 0);
    loop {
        if stopped_or(&mut stop, Duration::from_millis(1)).await {
            break;
        }
        let now = monitor.snapshot();
        reads += 1;
        if !same(&now, &last) {
            distinct += 1;
        }
        v.expect(Check::SnapshotMonotonic, taken(&now) >= taken(&last), || {
            "async observer saw the snapshot go back in time".to_owned()
        });
        last = now;
    }
    (reads, distinct, v)
}

/// A plain thread hammering `eligible()` and `snapshot()`: every call is timed, and the
/// snapshot it sees never goes back in time.
pub(super) fn read_eligibility(
    monitor: &Monitor,
    stop: &AtomicBool,
    probe_timeout: Duration,
) -> (Observed, Violations) {
    let mut seen = Observed::default();
    let mut v = Violations::default();
    let ids: Vec<String> = monitor.endpoints().iter().map(|e| e.id().as_str().to_owned()).collect();
    let mut last: Option<Arc<Snapshot>> = None;
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..16 {
            for id in &ids {
                let started = Instant::now();
                std::hint::black_box(monitor.eligible(id));
                let took = started.elapsed();
                seen.eligible_calls += 1;
                seen.eligible_max = seen.eligible_max.max(took);
                if took > SLOW_ELIGIBLE {
                    seen.eligible_slow += 1;
                }
            }
        }
        let now = monitor.snapshot();
        seen.snapshot_reads += 1;
        v.expect(Check::SnapshotMonotonic, taken(&now) >= taken(&last), || {
            "reader thread saw the snapshot go back in time".to_owned()
        });
        last = now;
        thread::sleep(Duration::from_micros(500));
    }
    // A reader that waited for checks would be slow once per slow check, hundreds of times a
    // run, and as long as a probe timeout; a thread preempted on a loaded machine is late
    // rarely, and briefly.
    let blocked = seen.eligible_max >= probe_timeout.max(Duration::from_secs(1))
        || seen.eligible_slow > MAX_SLOW_ELIGIBLE;
    v.expect(Check::EligibleBlocking, !blocked, || {
        format!(
            "eligible(): max {:?}, {} of {} calls over {SLOW_ELIGIBLE:?}",
            seen.eligible_max, seen.eligible_slow, seen.eligible_calls
        )
    });
    (seen, v)
}

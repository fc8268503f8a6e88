//! How one probe's height is judged, in a whole check or on its own: re-admission, the lag
//! in seconds, and the probe's health carried forward.

use std::time::Duration;

use crate::judging::entry::SnapshotEntry;
use crate::judging::fitness::Fitness;
use crate::judging::head_timing::{self};
use crate::probe::probe_error::ProbeErrorKind;
use crate::probe::rpc::Method;

/// The largest bad share of a provider's recent evidence ([`Counts::bad_share`], this probe
/// counted) at which a good probe of the spawned schedule re-admits it when it was ineligible:
/// above it the provider is [`Fitness::Doubted`].
pub(crate) const READMIT_BAD_SHARE: f64 = 0.25;

/// Hysteresis: a good check (`fitness` is [`Fitness::Fit`]) of an endpoint that was
/// ineligible in the snapshot `before` re-admits it only as the `readmit_after`-th good check
/// in a row; until then it is [`Fitness::Readmitting`]. An endpoint eligible before (or
/// without a previous snapshot: fail-open) stays eligible at its first good check. Returns the
/// fitness and the count of good checks in a row.
pub(super) fn readmission(
    fitness: Fitness,
    before: Option<&SnapshotEntry>,
    readmit_after: u32,
) -> (Fitness, u32) {
    let Fitness::Fit { behind } = fitness else { return (fitness, 0) };
    let good = before.map_or(0, SnapshotEntry::consecutive_good_checks).saturating_add(1);
    let was_eligible = before.is_none_or(SnapshotEntry::is_eligible);
    if was_eligible || good >= readmit_after {
        (fitness, good)
    } else {
        (Fitness::Readmitting { behind, good }, good)
    }
}

/// The lag rule in seconds: a provider lagging in blocks is fit when `behind × block_time`
/// is at most `max_lag_secs`. Without a block time yet, only the blocks count.
pub(super) fn within_seconds(
    fitness: Fitness,
    block_time: Option<Duration>,
    max_lag_secs: Option<u64>,
) -> Fitness {
    match (fitness, block_time, max_lag_secs) {
        (Fitness::Lagging { behind }, Some(block_time), Some(secs))
            if head_timing::lag_time(behind, block_time) <= Duration::from_secs(secs) =>
        {
            Fitness::Fit { behind }
        }
        _ => fitness,
    }
}

/// The weight of a new latency sample in the EWMA.
pub(super) const LATENCY_WEIGHT: f64 = 0.25;

/// Carries the probe latency EWMA (fed by `sample`, the duration of this check's successful
/// head call) and the last failure (`failed_now`, or the one of the previous
/// entry `before`).
pub(super) fn carry_probe_health(
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

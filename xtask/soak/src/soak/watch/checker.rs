//! The monitor's check loop, judged against the failure table of `Monitor::check`.

use std::time::{Duration, Instant};

use failnext_blocklag::{Monitor, ProbeError};
use tokio::sync::watch;

use super::{Observed, same, stopped_or, taken};
use crate::soak::checks::{Check, Violations};
use crate::soak::schedule::Rng;

fn probe_error_label(e: &ProbeError) -> &'static str {
    match e {
        ProbeError::Transport(_) => "transport",
        ProbeError::Timeout => "timeout",
        ProbeError::Status(_) => "http status",
        ProbeError::BodyTooLarge => "body too large",
        ProbeError::InvalidJson => "invalid json",
        ProbeError::NotJsonRpc => "not json-rpc",
        ProbeError::IdMismatch => "id mismatch",
        ProbeError::JsonRpc { .. } => "json-rpc error",
        ProbeError::InvalidQuantity(_) => "invalid quantity",
        ProbeError::WrongChain { .. } => "wrong chain",
        _ => "other",
    }
}

/// The monitor's check loop. Checks the failure table of `Monitor::check`: a published check
/// leaves a newer snapshot, an unpublished or dropped one leaves the previous one; and a check
/// that runs to the end is bounded by the probe timeout.
pub(super) async fn run(
    monitor: Monitor,
    mut rng: Rng,
    interval: Duration,
    (probe_timeout, slack): (Duration, Duration),
    mut stop: watch::Receiver<bool>,
) -> (Observed, Violations) {
    let mut seen = Observed::default();
    let mut v = Violations::default();
    // Probes run concurrently, each bounded by the probe timeout.
    let bound = probe_timeout + slack;
    let window = u64::try_from(probe_timeout.as_millis()).unwrap_or(1);
    loop {
        if stopped_or(&mut stop, interval).await {
            break;
        }
        let before = monitor.snapshot();
        // One check in ten is dropped at a random point.
        let cancel = rng.chance(100).then(|| rng.millis(0, window));
        let started = Instant::now();
        let result = match cancel {
            Some(deadline) => tokio::time::timeout(deadline, monitor.check()).await.ok(),
            None => Some(monitor.check().await),
        };
        let elapsed = started.elapsed();
        let after = monitor.snapshot();
        let published = match &result {
            None => {
                seen.checks_cancelled += 1;
                false
            }
            Some(Ok(())) => {
                seen.checks_ok += 1;
                true
            }
            Some(Err(e)) => {
                for failure in e.failures() {
                    *seen.probe_errors.entry(probe_error_label(failure.error())).or_default() += 1;
                }
                if e.published() {
                    seen.checks_partial += 1;
                } else {
                    seen.checks_unpublished += 1;
                }
                e.published()
            }
        };
        if result.is_some() {
            seen.check_max = seen.check_max.max(elapsed);
            v.expect(Check::MonitorChecks, elapsed <= bound, || {
                format!("a check took {elapsed:?}, beyond probe timeout + slack ({bound:?})")
            });
        }
        if published {
            let newer = !same(&before, &after) && taken(&after) >= taken(&before);
            v.expect(Check::MonitorChecks, newer, || {
                "a published check did not leave a newer snapshot".to_owned()
            });
        } else {
            v.expect(Check::MonitorChecks, same(&before, &after), || {
                format!("an unpublished check ({result:?}) replaced the snapshot")
            });
        }
        v.expect(Check::SnapshotMonotonic, taken(&after) >= taken(&before), || {
            "check loop saw the snapshot go back in time".to_owned()
        });
    }
    (seen, v)
}

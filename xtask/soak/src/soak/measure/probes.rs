//! The monitors' probes during a measure, counted from their published views (and, with
//! `SOAK_DEBUG`, each new view traced).

use std::time::Duration;

use failnext_blocklag::Monitor;
use tokio::sync::watch;

use super::trace::{DEBUGGING, debug};

/// Counts the probes of each monitor until `stopped`: a probe of the spawned schedule
/// publishes its provider's entry with a new `checked` instant, sampled every 5 ms (the
/// shortest re-check is 45 ms). A probe that publishes nothing (every provider failed) is
/// not counted.
pub(super) async fn count_probes(monitors: Vec<Monitor>, mut stopped: watch::Receiver<bool>) -> Vec<u64> {
    let mut counts = vec![0u64; monitors.len()];
    let mut last: Vec<Vec<Option<tokio::time::Instant>>> = vec![Vec::new(); monitors.len()];
    // Per monitor, per provider: for the debug output's breakdown.
    let mut each: Vec<Vec<u64>> = vec![Vec::new(); monitors.len()];
    while !crate::soak::watch::stopped_or(&mut stopped, Duration::from_millis(5)).await {
        for (((monitor, count), last), each) in monitors.iter().zip(&mut counts).zip(&mut last).zip(&mut each)
        {
            let Some(snapshot) = monitor.snapshot() else { continue };
            let checked: Vec<_> = snapshot.entries().iter().map(|e| e.checked()).collect();
            if last.len() == checked.len() {
                each.resize(checked.len(), 0);
                for (i, (now, before)) in checked.iter().zip(last.iter()).enumerate() {
                    if now != before {
                        *count += 1;
                        each[i] += 1;
                    }
                }
            }
            if DEBUGGING.load(std::sync::atomic::Ordering::Relaxed) && *last != checked {
                trace_view(monitor, &snapshot);
            }
            *last = checked;
        }
    }
    for (monitor, each) in monitors.iter().zip(&each) {
        debug(|| format!("probes of monitor {monitor:p}, per provider: {each:?}"));
    }
    counts
}

/// Traces a monitor's newly published view: per provider, whether it is eligible, its height,
/// lag, error, contradiction and doubt.
fn trace_view(monitor: &Monitor, snapshot: &failnext_blocklag::Snapshot) {
    let entries: Vec<String> = snapshot
        .entries()
        .iter()
        .map(|e| {
            let fit = if monitor.eligible(e.endpoint().as_str()) { "in" } else { "OUT" };
            let why = e.error().map(|e| format!(" {e}")).unwrap_or_default();
            let contra = e.contradiction().map(|c| format!(" {c:?}")).unwrap_or_default();
            let doubted = if e.is_doubted() { " doubted" } else { "" };
            format!("{}:{fit} h={:?} lag={:?}{why}{contra}{doubted}", e.endpoint(), e.height(), e.lag())
        })
        .collect();
    debug(|| {
        format!(
            "view {:p} ref={} bt={:?}: {}",
            monitor,
            snapshot.highest(),
            snapshot.block_time(),
            entries.join(" | ")
        )
    });
}

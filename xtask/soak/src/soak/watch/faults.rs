//! The fault schedule, applied: every few milliseconds a random provider switches behaviour.

use std::collections::BTreeMap;

use failnext_examples::sim::Provider;
use tokio::sync::watch;

use super::stopped_or;
use crate::soak::schedule::{FaultKind, FaultSchedule};

/// Applies `schedule` to `providers` until the phase stops; returns the switches by kind and
/// the port rebinds that failed.
pub(super) async fn run(
    mut schedule: FaultSchedule,
    providers: Vec<Provider>,
    mut stop: watch::Receiver<bool>,
) -> (BTreeMap<FaultKind, u64>, u64) {
    let mut counts = BTreeMap::new();
    let mut rebind_failures = 0;
    loop {
        let step = schedule.next_step();
        if stopped_or(&mut stop, step.wait).await {
            break;
        }
        let Some(provider) = providers.get(step.provider) else { continue };
        if provider.set(step.behaviour).await.is_err() {
            rebind_failures += 1;
        }
        *counts.entry(step.kind).or_default() += 1;
    }
    (counts, rebind_failures)
}

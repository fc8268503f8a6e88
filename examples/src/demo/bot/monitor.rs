//! The monitor's task: a check of every provider on the configured interval, and the
//! eligibility it leaves, logged when it changes.

use std::sync::Arc;

use failnext::EndpointId;
use tokio::sync::watch;

use super::output::{timing, why};
use super::{Bot, every, next};
use crate::monitoring::eligible_now;

impl Bot {
    /// Polls every provider's height with `Monitor::spawn` (checks never overlap; faster while
    /// a provider is unfit), logs eligibility when it changes, and at the end stops the handle
    /// and counts, at the simulated providers, the probes that still arrive (must be none).
    pub(super) async fn checker(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let handle = self.monitor.spawn(self.config.check_interval);
        let mut tick = every(self.config.check_interval);
        let mut shown: Option<Vec<EndpointId>> = None;
        while next(&mut tick, &mut stop).await {
            // A failed probe is reported through eligibility below, with its reason.
            let eligible = eligible_now(&self.monitor);
            if shown.as_ref() != Some(&eligible) {
                self.log(&self.eligibility_line(&eligible));
                shown = Some(eligible);
            }
        }
        handle.stop().await;
    }

    /// Once every task has stopped (the polling handle with them): the `eth_blockNumber` calls
    /// the simulated providers still receive over two check intervals. Nothing else sends any
    /// then, so each would be a probe after the stop.
    pub(super) async fn count_probes_after_stop(&self) {
        let Some(sim) = &self.sim else { return };
        let probes = || sim.providers.iter().map(|p| p.count("eth_blockNumber")).sum::<u64>();
        let before = probes();
        tokio::time::sleep(self.config.check_interval * 2).await;
        self.stats().probes_after_stop = Some(probes() - before);
    }

    fn eligibility_line(&self, eligible: &[EndpointId]) -> String {
        let names: Vec<&str> = eligible.iter().map(EndpointId::as_str).collect();
        let snapshot = self.monitor.snapshot();
        let out: Vec<String> = self
            .ids
            .iter()
            .filter(|id| !eligible.contains(id))
            .map(|id| {
                let mut why = why(snapshot.as_deref(), id);
                if let Some(timing) = snapshot.as_deref().and_then(|s| timing(s, id)) {
                    why.push_str(&format!(", {timing}"));
                }
                format!("{id} ({why})")
            })
            .collect();
        let mut line = format!(
            "monitor: eligible: {}",
            if names.is_empty() { "none".to_owned() } else { names.join(", ") }
        );
        if !out.is_empty() {
            line.push_str(&format!("; ineligible: {}", out.join(", ")));
        }
        line
    }
}

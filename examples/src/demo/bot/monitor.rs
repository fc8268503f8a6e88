//! The monitor's task: a check of every provider on the configured interval, and the
//! eligibility it leaves, logged when it changes.

use std::sync::Arc;
use std::time::Duration;

use failnext::EndpointId;
use tokio::sync::watch;

use super::output::{timing, why};
use super::{Bot, every, next};
use crate::monitoring::eligible_now;

impl Bot {
    /// Checks every provider's height on the configured interval.
    pub(super) async fn checker(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let mut tick = every(self.config.check_interval);
        // Each probe is bounded by the probe timeout and they run at once: this bounds the check.
        let bound = self.config.probe_timeout + Duration::from_secs(1);
        let mut shown: Option<Vec<EndpointId>> = None;
        while next(&mut tick, &mut stop).await {
            if tokio::time::timeout(bound, self.monitor.check()).await.is_err() {
                self.log("monitor: check timed out, previous eligibility kept");
            }
            // A failed probe is reported through eligibility below, with its reason.
            let eligible = eligible_now(&self.monitor);
            if shown.as_ref() != Some(&eligible) {
                self.log(&self.eligibility_line(&eligible));
                shown = Some(eligible);
            }
        }
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
                if let Some(timing) = snapshot.as_ref().and_then(|s| s.entry(id)).and_then(timing) {
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

//! The fault timeline of a simulated run, applied to the providers at its scripted times.

use std::sync::Arc;
use tokio::sync::watch;

use super::Bot;
use crate::demo::timeline;

impl Bot {
    /// Waits until `at`, then for the polling monitor's next publication, then a quarter of
    /// the check interval: each fault lands just after a check, so it lasts most of an interval
    /// before the monitor notices it, and failnext's own failover shows first (the polling
    /// monitor's checks are jittered, so a fixed grid cannot be assumed).
    async fn after_a_check(&self, at: tokio::time::Instant) {
        tokio::time::sleep_until(at).await;
        let taken = |bot: &Bot| bot.monitor.snapshot().map(|s| s.taken_at());
        let before = taken(self);
        let bound = tokio::time::Instant::now() + self.config.check_interval * 2;
        while taken(self) == before && tokio::time::Instant::now() < bound {
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        tokio::time::sleep(self.config.check_interval / 4).await;
    }

    /// Switches the simulated providers' behaviours on the scripted timeline.
    pub(super) async fn scenario(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let Some(sim) = &self.sim else { return };
        for step in timeline::script(self.config.lag_blocks, self.config.block_time) {
            let at = self.started + timeline::when(step.at, self.config.duration, self.config.check_interval);
            tokio::select! {
                biased;
                _ = stop.changed() => return,
                () = self.after_a_check(at) => {}
            }
            let Some(provider) = sim.providers.get(step.provider) else { continue };
            match provider.set(step.behaviour).await {
                Ok(()) => {
                    self.step_done(&step.note);
                    self.log(&format!(">> {}", step.note));
                }
                Err(e) => self.log(&format!(">> {} failed: {e}", step.note)),
            }
        }
    }
}

//! The fault timeline of a simulated run, applied to the providers at its scripted times.

use std::sync::Arc;
use tokio::sync::watch;

use super::Bot;
use crate::demo::timeline;

impl Bot {
    /// Switches the simulated providers' behaviours on the scripted timeline.
    pub(super) async fn scenario(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let Some(sim) = &self.sim else { return };
        for step in timeline::script(self.config.lag_blocks, self.config.block_time) {
            let at = self.started + timeline::when(step.at, self.config.duration, self.config.check_interval);
            tokio::select! {
                biased;
                _ = stop.changed() => return,
                () = tokio::time::sleep_until(at) => {}
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

//! The picture's recording: a sampler of every provider's state on a short period, and the
//! picture written at the end of the run.

use std::path::PathBuf;
use std::sync::{Arc, MutexGuard};
use std::time::Duration;

use tokio::sync::watch;

use super::{Bot, every, next};
use crate::demo::picture::{self, Kind, LaneState, Mark, Recording, Sample};
use crate::monitoring::describe;

/// Samples per run, about: enough for the picture's bands, cheap for the bot.
const SAMPLES: u32 = 250;

impl Bot {
    pub(super) fn recording(&self) -> MutexGuard<'_, Recording> {
        // Nothing panics while holding the lock; a poisoned recording is still a recording.
        self.recording.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Samples every provider's state on a short period, for the picture.
    pub(super) async fn sampler(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let period =
            (self.config.duration / SAMPLES).clamp(Duration::from_millis(20), Duration::from_millis(200));
        let mut tick = every(period);
        while next(&mut tick, &mut stop).await {
            self.sample();
        }
    }

    /// One look at every provider: its behaviour (simulator), eligibility and breaker. Counts
    /// each breaker opening it sees.
    pub(super) fn sample(&self) {
        let snapshot = self.monitor.snapshot();
        let lanes: Vec<LaneState> = self
            .ids
            .iter()
            .enumerate()
            .map(|(i, id)| LaneState {
                behaviour: self
                    .sim
                    .as_ref()
                    .and_then(|sim| sim.providers.get(i))
                    .map(|p| describe(&p.behaviour())),
                eligible: snapshot.as_ref().is_none_or(|s| s.is_eligible(id)),
                cooling: self.failover.is_cooling_down(id),
            })
            .collect();
        let at = self.started.elapsed();
        let mut recording = self.recording();
        let before: Vec<bool> = match recording.samples.last() {
            Some(last) => last.lanes.iter().map(|l| l.cooling).collect(),
            None => vec![false; lanes.len()],
        };
        for (i, lane) in lanes.iter().enumerate() {
            if lane.cooling && !before.get(i).copied().unwrap_or(false) {
                if let Some(n) = recording.openings.get_mut(i) {
                    *n += 1;
                }
            }
        }
        recording.samples.push(Sample { at, lanes });
    }

    /// Records that provider `i` answered a read or a write now.
    pub(super) fn mark(&self, provider: usize, kind: Kind) {
        let at = self.started.elapsed();
        self.recording().marks.push(Mark { at, provider, kind });
    }

    /// Records a timeline step that just happened.
    pub(super) fn step_done(&self, note: &str) {
        let at = self.started.elapsed();
        self.recording().steps.push((at, note.to_owned()));
    }

    /// How many times provider `i`'s breaker was seen opening: by its `Event::Breaker`
    /// events (the adaptive breaker) or, under the reference rule which emits none, by the
    /// sampler seeing it start cooling down.
    pub(super) fn openings(&self, i: usize) -> u64 {
        let seen = self.recording().openings.get(i).copied().unwrap_or(0);
        let told = self.ids.get(i).and_then(|id| self.counters.breaker(id)).map_or(0, |b| b.opened);
        seen.max(told)
    }

    /// Draws the picture of the run and writes it where the config says; the path written.
    pub(super) fn picture(&self) -> Option<PathBuf> {
        let path = self.config.picture.clone()?;
        let ids: Vec<String> = self.ids.iter().map(ToString::to_string).collect();
        let svg = picture::svg(&ids, self.started.elapsed(), &self.recording());
        match picture::write(&path, &svg) {
            Ok(()) => Some(path),
            Err(e) => {
                self.log(&format!("picture: could not write {}: {e}", path.display()));
                None
            }
        }
    }
}

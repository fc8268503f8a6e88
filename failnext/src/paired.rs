//! `Paired`: what a `Failover` keeps of its [`HealthSource`]: the source itself and the
//! highest plausible head seen in answers, and the one rule that judges a head-bearing answer
//! against the best known head.

use std::sync::{Arc, Mutex};

use tokio::time::Instant;

use crate::endpoint::EndpointId;
use crate::scope::Unfit;
use crate::source::{Head, HealthSource, Observation};

/// A `Failover`'s paired source, and what its answers taught it about the head.
pub(crate) struct Paired {
    pub(crate) source: Arc<dyn HealthSource>,
    /// The highest plausible head seen in an answer, and when: `None` until one is seen.
    seen: Mutex<Option<(u64, Instant)>>,
}

impl Paired {
    pub(crate) fn new(source: Arc<dyn HealthSource>) -> Paired {
        Paired { source, seen: Mutex::new(None) }
    }

    /// The best known head at `now`: the source's, or the highest plausible one seen in
    /// answers when that is higher (with the source's block time and tolerance).
    pub(crate) fn best(&self, now: Instant) -> Option<Head> {
        let source = self.source.head();
        let seen = *self.seen.lock().unwrap_or_else(|p| p.into_inner());
        match (source, seen) {
            (None, None) => None,
            (Some(head), None) => Some(head),
            (None, Some((number, at))) => Some(Head::new(number, at)),
            (Some(head), Some((number, at))) => {
                // A head seen is used only while the source's head makes it plausible.
                let plausible = head.plausible_limit(now).is_none_or(|limit| number <= limit);
                if plausible && number > head.number() {
                    let mut best = Head::new(number, at).tolerance(head.blocks_of_tolerance());
                    if let Some(block_time) = head.known_block_time() {
                        best = best.block_time(block_time);
                    }
                    Some(best)
                } else {
                    Some(head)
                }
            }
        }
    }

    /// Judges the head `head` an answer of `endpoint` reported: `Some(why)` when it is far
    /// below the best known head or above the plausible limit (then the source is asked to
    /// check the endpoint); otherwise the head counts as seen. The observation to tell.
    pub(crate) fn judge_head(&self, endpoint: &EndpointId, head: u64) -> (Observation, Option<Unfit>) {
        let now = Instant::now();
        let best = self.best(now);
        if let Some(best) = best {
            let tolerance = best.blocks_of_tolerance();
            if head.saturating_add(tolerance) < best.number() {
                self.source.check_now(endpoint);
                let floor = best.number() - tolerance;
                return (
                    Observation::Behind { head, best: best.number() },
                    Some(Unfit::BelowFloor { head: Some(head), floor }),
                );
            }
            if let Some(limit) = best.plausible_limit(now) {
                if head > limit {
                    self.source.check_now(endpoint);
                    return (Observation::Implausible { head, limit }, Some(Unfit::Implausible { head, limit }));
                }
            }
        }
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if seen.is_none_or(|(number, _)| head > number) {
            *seen = Some((head, now));
        }
        (Observation::Answered { head: Some(head) }, None)
    }
}

//! `Shared`: what every request of one `Failover` (and its clones) reads and updates.

use std::sync::Arc;
use std::time::Duration;

use crate::events::event::{Emitter, Event};
use crate::flow::slot::Slot;
use crate::health::cooldown::Cooldown;
use crate::health::eligibility::Eligibility;
use crate::judging::classify::Classifier;
use crate::judging::judge::Triggers;
use crate::request::endpoint::Endpoint;
use crate::request::permission::PolicyFn;

/// The validated configuration and the per-endpoint state, built once by the builder.
pub(crate) struct Shared {
    /// The endpoints as configured (the one copy of each, URL included), for
    /// [`Failover::endpoints`](crate::Failover::endpoints); `slots` hold each one's state, in
    /// the same order.
    pub(crate) endpoints: Vec<Endpoint>,
    pub(crate) slots: Vec<Slot>,
    pub(crate) eligible: Option<Arc<dyn Eligibility>>,
    pub(crate) policy: Option<PolicyFn>,
    pub(crate) triggers: Triggers,
    /// Judges responses no status settles; `None` is 0.1's rule (return them).
    pub(crate) classifier: Option<Box<dyn Classifier>>,
    /// The rule each slot's health applies; kept here only to be shown by `Debug`.
    pub(crate) cooldown: Cooldown,
    /// `None` only after `no_attempt_timeout()`.
    pub(crate) attempt_timeout: Option<Duration>,
    /// Every request's deadline, unless it sets its own.
    pub(crate) deadline: Option<Duration>,
    /// Hedged reads, when opted in.
    pub(crate) hedge: Option<crate::flow::hedge::Hedge>,
    /// Every request keeps a trace.
    pub(crate) trace_all: bool,
    /// The failover budget, when opted in.
    pub(crate) budget: Option<crate::flow::budget::Tokens>,
    /// Latency-aware ordering, when opted in.
    pub(crate) ordering: Option<crate::health::latency::Ordered>,
    pub(crate) events: Emitter,
    /// The paired health source ([`FailoverBuilder::monitor`](crate::FailoverBuilder::monitor)).
    pub(crate) paired: Option<crate::health::paired::Paired>,
    /// The fleet, when the process is one of many ([`FailoverBuilder::fleet`](crate::FailoverBuilder::fleet)).
    #[cfg(feature = "redis")]
    pub(crate) fleet: Option<Tie>,
}

impl Shared {
    /// The paired health source, whose eligibility is advice.
    pub(crate) fn advice(&self) -> Option<&dyn crate::health::source::HealthSource> {
        self.paired.as_ref().map(|p| &*p.source)
    }

    /// Emits the event `event` builds, building it only when someone listens: the metrics
    /// (feature `metrics`), `tracing` (feature `tracing`) and the application's hook, in that
    /// order. The one place every decision of a request is told.
    pub(crate) fn emit<'a>(&self, event: impl FnOnce() -> Event<'a>) {
        if self.events.is_active() {
            let event = event();
            #[cfg(feature = "metrics")]
            crate::events::metrics::record(&event, |id| {
                // Events borrow the slot's own id: found by address first.
                let slot = self.slots.iter().find(|s| std::ptr::eq(s.id(), id));
                slot.or_else(|| self.slots.iter().find(|s| s.id() == id)).map(|s| &s.keys)
            });
            self.events.emit(&event);
        }
    }
}

impl crate::health::feed::LatencySink for Shared {
    /// Adds a latency sample to endpoint `id`'s average, with latency-aware ordering only.
    fn observe_latency(&self, id: &str, latency: Duration) {
        if let (Some(_), Some(i)) = (&self.ordering, crate::flow::slot::position(&self.slots, id)) {
            self.slots[i].latency.observe(latency);
        }
    }
}

/// A failover's tie to its fleet (feature `redis`): the fleet, the failover itself (read for
/// in the background by [`refresh`](crate::flow::fleet::refresh)), and whether that read runs.
#[cfg(feature = "redis")]
pub(crate) struct Tie {
    pub(crate) fleet: crate::fleet::Fleet,
    pub(crate) me: std::sync::OnceLock<std::sync::Weak<Shared>>,
    pub(crate) watching: std::sync::atomic::AtomicBool,
}

#[cfg(feature = "redis")]
impl Tie {
    pub(crate) fn new(fleet: crate::fleet::Fleet) -> Tie {
        Tie { fleet, me: std::sync::OnceLock::new(), watching: std::sync::atomic::AtomicBool::new(false) }
    }
}

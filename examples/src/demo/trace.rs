//! What failnext did for each request, from its events and eligibility questions.
//!
//! failnext delivers events, and asks for eligibility, synchronously on the task that runs the
//! request. A task-local set around one request therefore collects exactly that request's
//! attempts and the eligibility failnext saw when it started, while process-wide counters
//! collect the totals.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use failnext::{BreakerState, Eligibility, EndpointId, Event};
use failnext_blocklag::Monitor;

tokio::task_local! {
    static TRACE: RefCell<Trace>;
}

/// One request, as failnext handled it.
#[derive(Debug, Default, Clone)]
pub(crate) struct Trace {
    /// The eligibility answers failnext got when the request started, in configured order.
    pub(crate) eligible: Vec<(EndpointId, bool)>,
    /// The endpoints attempted, in order.
    pub(crate) attempts: Vec<EndpointId>,
}

impl Trace {
    /// Whether `id` was eligible when the request started (false if failnext did not ask).
    pub(crate) fn was_eligible(&self, id: &str) -> bool {
        self.eligible.iter().any(|(e, eligible)| *eligible && e == id)
    }
}

/// Runs `request` and returns its output with its trace.
pub(crate) async fn traced<F: Future>(request: F) -> (F::Output, Trace) {
    TRACE
        .scope(RefCell::new(Trace::default()), async move {
            let output = request.await;
            (output, TRACE.with(RefCell::take))
        })
        .await
}

fn record(f: impl FnOnce(&mut Trace)) {
    // Outside a traced request (the monitor's probes never go through failnext) nothing is kept.
    let _ = TRACE.try_with(|trace| f(&mut trace.borrow_mut()));
}

/// Event totals over the whole run.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) attempts: AtomicU64,
    /// Attempts after the first of a request: each one a move to the next provider.
    pub(crate) failovers: AtomicU64,
    pub(crate) cooldown_skips: AtomicU64,
    /// Per endpoint, from failnext's `Event::Breaker` (only the adaptive breaker emits them).
    breakers: Mutex<HashMap<EndpointId, Breaker>>,
}

/// One endpoint's breaker, as its `Event::Breaker` events told it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Breaker {
    /// The state the last event reported.
    pub(crate) last: BreakerState,
    /// How many times it opened.
    pub(crate) opened: u64,
}

impl Counters {
    pub(crate) fn attempts(&self) -> u64 {
        self.attempts.load(Ordering::Relaxed)
    }

    pub(crate) fn failovers(&self) -> u64 {
        self.failovers.load(Ordering::Relaxed)
    }

    pub(crate) fn cooldown_skips(&self) -> u64 {
        self.cooldown_skips.load(Ordering::Relaxed)
    }

    /// What `Event::Breaker` told of `id`'s breaker; `None` before its first event.
    pub(crate) fn breaker(&self, id: &str) -> Option<Breaker> {
        self.breakers().iter().find(|(e, _)| e.as_str() == id).map(|(_, b)| *b)
    }

    fn breakers(&self) -> MutexGuard<'_, HashMap<EndpointId, Breaker>> {
        // Nothing panics while holding the lock; a poisoned map is still a valid map.
        self.breakers.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The `on_event` hook: counts attempts, failovers, cooldown skips and breaker openings, and
/// records each attempt in the request's trace.
pub(crate) fn hook(counters: Arc<Counters>) -> impl Fn(&Event<'_>) + Send + Sync + 'static {
    move |event| match event {
        Event::Attempt { endpoint, attempt, .. } => {
            counters.attempts.fetch_add(1, Ordering::Relaxed);
            if *attempt > 1 {
                counters.failovers.fetch_add(1, Ordering::Relaxed);
            }
            record(|trace| trace.attempts.push((*endpoint).clone()));
        }
        Event::CooldownSkip { .. } => {
            counters.cooldown_skips.fetch_add(1, Ordering::Relaxed);
        }
        Event::Breaker { endpoint, state } => {
            let mut breakers = counters.breakers();
            let breaker = breakers.entry((*endpoint).clone()).or_insert(Breaker { last: *state, opened: 0 });
            breaker.last = *state;
            if matches!(state, BreakerState::Open { .. }) {
                breaker.opened += 1;
            }
        }
        _ => {}
    }
}

/// The monitor as failnext's eligibility, recording each answer in the request's trace.
///
/// A bot passes `monitor.clone()` to `eligible` directly; the demo wraps it only to know
/// exactly what failnext saw when it checks its invariant.
#[derive(Debug, Clone)]
pub(crate) struct Recorded(pub(crate) Monitor);

impl Eligibility for Recorded {
    fn is_eligible(&self, id: &EndpointId) -> bool {
        let eligible = self.0.eligible(id);
        record(|trace| trace.eligible.push((id.clone(), eligible)));
        eligible
    }
}

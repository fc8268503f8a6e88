//! Metrics (feature `metrics`): what failnext does, through the `metrics` facade, labelled by
//! endpoint id (never a URL). The application installs the recorder (a Prometheus exporter,
//! say); without one, every call is a no-op.
//!
//! | metric | kind | labels |
//! | --- | --- | --- |
//! | `failnext_attempts_total` | counter | `endpoint`, `class` (how the outcome was judged) |
//! | `failnext_attempt_seconds` | histogram | `endpoint` |
//! | `failnext_failovers_total` | counter | `endpoint` (the one a request moved on from) |
//! | `failnext_hedges_total` | counter | `endpoint` (the one whose first attempt was hedged) |
//! | `failnext_skips_total` | counter | `endpoint`, `reason` (`excluded`, `ineligible`, `cooling`, `open`, `trial_busy`) |
//! | `failnext_breaker_transitions_total` | counter | `endpoint`, `state` (`open`, `half_open`, `closed`) |

use std::time::Duration;

use crate::classify::Class;
use crate::endpoint::EndpointId;
use crate::health::BreakerState;
use crate::skip::Skip;

fn label(id: &EndpointId) -> String {
    id.as_str().to_owned()
}

/// One attempt's outcome, as judged, and how long it took (when timed).
pub(crate) fn attempt(id: &EndpointId, class: Class, elapsed: Option<Duration>) {
    let class = format!("{class:?}").to_ascii_lowercase();
    metrics::counter!("failnext_attempts_total", "endpoint" => label(id), "class" => class).increment(1);
    if let Some(elapsed) = elapsed {
        metrics::histogram!("failnext_attempt_seconds", "endpoint" => label(id))
            .record(elapsed.as_secs_f64());
    }
}

/// A request moved on from endpoint `id`.
pub(crate) fn failover(id: &EndpointId) {
    metrics::counter!("failnext_failovers_total", "endpoint" => label(id)).increment(1);
}

/// A request's first attempt, to endpoint `id`, was hedged.
pub(crate) fn hedge(id: &EndpointId) {
    metrics::counter!("failnext_hedges_total", "endpoint" => label(id)).increment(1);
}

/// Endpoint `id` was passed over.
pub(crate) fn skip(id: &EndpointId, skip: Skip) {
    let reason = match skip {
        Skip::Excluded => "excluded",
        Skip::Ineligible => "ineligible",
        Skip::CoolingUntil(_) => "cooling",
        Skip::Open { .. } => "open",
        Skip::HalfOpenBusy => "trial_busy",
    };
    metrics::counter!("failnext_skips_total", "endpoint" => label(id), "reason" => reason).increment(1);
}

/// Endpoint `id`'s breaker changed state.
pub(crate) fn breaker(id: &EndpointId, state: BreakerState) {
    let state = match state {
        BreakerState::Open { .. } => "open",
        BreakerState::HalfOpen => "half_open",
        BreakerState::Closed => "closed",
    };
    metrics::counter!("failnext_breaker_transitions_total", "endpoint" => label(id), "state" => state)
        .increment(1);
}

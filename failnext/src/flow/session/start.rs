//! How a request's session starts: what its scope rules out, and who is passed over from the
//! start, told as events and the trace's first steps.

use crate::events::event::{Event, SkipReason};
use crate::events::trace::{TraceStep, Tracer};
use crate::flow::select::Plan;
use crate::flow::shared::Shared;
use crate::health::skip::Skip;
use crate::judging::scope::{Scope, Unfit};
use crate::request::options::RequestOptions;

/// Asks `scope` about every endpoint still usable, in configured order, and takes the ones it
/// rules out out of `plan`: each with why.
pub(super) fn rule_out(shared: &Shared, scope: &dyn Scope, plan: &mut Plan) -> Vec<(usize, Unfit)> {
    let mut unfit = Vec::new();
    for (i, slot) in shared.slots.iter().enumerate() {
        if plan.is_usable(i) {
            if let Some(why) = scope.unfit(slot.id()) {
                // A head known below the floor may be old news: the endpoint goes behind the
                // others, and its answer is judged if its turn comes. Anything else it lacks
                // rules it out.
                match why {
                    Unfit::BelowFloor { .. } => plan.demote(i),
                    _ => plan.remove(i),
                }
                unfit.push((i, why));
            }
        }
    }
    unfit
}

/// The endpoints out of the request from its start, told: an event each (excluded,
/// ineligible, unfit, and why) and the trace's first steps.
pub(super) fn passed_over_at_start(
    shared: &Shared,
    opts: &RequestOptions<'_>,
    plan: &Plan,
    unfit: &[(usize, Unfit)],
    mut tracer: Option<&mut Tracer>,
) {
    for (i, slot) in shared.slots.iter().enumerate().filter(|(i, _)| !plan.is_usable(*i)) {
        let endpoint = slot.id();
        let why = unfit.iter().find(|(j, _)| *j == i).map(|(_, why)| why);
        let (reason, step) = if opts.excluded.iter().any(|e| e == endpoint) {
            (SkipReason::Excluded, TraceStep::Excluded)
        } else if let Some(why) = why {
            (SkipReason::Unfit, TraceStep::Unfit(why.clone()))
        } else {
            (SkipReason::Ineligible, TraceStep::Ineligible)
        };
        shared.emit(|| Event::Skipped { endpoint, reason, unfit: why });
        if let Some(tracer) = tracer.as_deref_mut() {
            tracer.add(i, step);
        }
    }
}

/// A skip, as its event says it.
pub(super) fn skip_reason(skip: Skip) -> SkipReason {
    match skip {
        Skip::Excluded => SkipReason::Excluded,
        Skip::Ineligible | Skip::Reserve => SkipReason::Ineligible,
        Skip::CoolingUntil(_) => SkipReason::Cooling,
        Skip::Open { .. } => SkipReason::BreakerOpen,
        Skip::HalfOpenBusy => SkipReason::TrialBusy,
    }
}

/// A skip, as the trace says it.
pub(super) fn traced_skip(skip: Skip) -> TraceStep {
    let left = |until: tokio::time::Instant| until.saturating_duration_since(tokio::time::Instant::now());
    match skip {
        Skip::Excluded => TraceStep::Excluded,
        Skip::Ineligible | Skip::Reserve => TraceStep::Ineligible,
        Skip::CoolingUntil(until) => TraceStep::Cooling(left(until)),
        Skip::Open { until } => TraceStep::BreakerOpen(left(until)),
        Skip::HalfOpenBusy => TraceStep::TrialBusy,
    }
}

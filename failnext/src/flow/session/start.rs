//! How a request's session starts: what its scope rules out, and who is passed over from the
//! start, told as events and the trace's first steps.

use std::time::Duration;

use tokio::time::Instant;

use super::Session;
use crate::events::event::{Event, SkipReason};
use crate::events::trace::{TraceStep, Tracer};
use crate::flow::replay::Replay;
use crate::flow::select;
use crate::flow::select::Plan;
use crate::flow::shared::Shared;
use crate::health::skip::Skip;
use crate::judging::scope::{Scope, Unfit};
use crate::request::destination::HostRule;
use crate::request::endpoint::EndpointId;
use crate::request::permission::{Permission, Settled};

/// Where a request stands after its first attempt went out without a session (the fast path,
/// [`crate::flow::fast`]): what the session would have settled before sending it.
pub(crate) struct Begun<'a> {
    /// The endpoint the first attempt went to (the first configured).
    pub(crate) first: usize,
    pub(crate) explicit: Option<Permission>,
    /// Settled when another endpoint was configured to fail over to.
    pub(crate) permission: Option<Settled>,
    pub(crate) replay: Option<Replay>,
    pub(crate) scope: Option<&'a dyn Scope>,
    pub(crate) host: HostRule,
    pub(crate) deadline: Option<(Instant, Duration)>,
}

impl<'a> Session<'a> {
    /// The session of a request whose first attempt, to `begun.first`, went out on the fast
    /// path and did not settle it: as [`Session::start`] would have left it after sending that
    /// attempt. What the scope rules out is asked now (of the other endpoints), so its events
    /// come after the first attempt's.
    pub(crate) fn resume(shared: &'a Shared, begun: Begun<'a>) -> Session<'a> {
        super::built();
        let mut plan = select::plain(shared.slots.len());
        let _first = plan.next();
        debug_assert_eq!(_first, Some(begun.first));
        let unfit = begun
            .scope
            .map(|scope| rule_out(shared, scope, &mut plan, Some(begun.first)))
            .unwrap_or_default();
        if shared.events.is_active() {
            // A request on the fast path excludes no endpoint.
            passed_over_at_start(shared, &[], &plan, &unfit, None);
        }
        // As `settle` leaves them: permission and the copy only when another candidate is left.
        let (permission, replay) = match plan.has_more() {
            true => (begun.permission, begun.replay),
            false => (None, None),
        };
        Session {
            shared,
            plan,
            first: None,
            explicit: begun.explicit,
            permission,
            replay,
            scope: begun.scope,
            heads: false,
            host: begun.host,
            sent: 1,
            trial: None,
            tally: None,
            deadline: begun.deadline,
            tracer: None,
            admitted: None,
        }
    }
}

/// Asks `scope` about every endpoint still usable, in configured order, and takes the ones it
/// rules out out of `plan`: each with why.
pub(super) fn rule_out(
    shared: &Shared,
    scope: &dyn Scope,
    plan: &mut Plan,
    tried: Option<usize>,
) -> Vec<(usize, Unfit)> {
    let mut unfit = Vec::new();
    for (i, slot) in shared.slots.iter().enumerate() {
        if plan.is_usable(i) && tried != Some(i) {
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
    excluded: &[EndpointId],
    plan: &Plan,
    unfit: &[(usize, Unfit)],
    mut tracer: Option<&mut Tracer>,
) {
    for (i, slot) in shared.slots.iter().enumerate().filter(|(i, _)| !plan.is_usable(*i)) {
        let endpoint = slot.id();
        let why = unfit.iter().find(|(j, _)| *j == i).map(|(_, why)| why);
        let (reason, step) = if excluded.iter().any(|e| e == endpoint) {
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

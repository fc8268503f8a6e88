//! How a request's session ends: what the attempts that did not return left behind (failed
//! attempts, the retained response), the trace's last word, and the outcome.

use reqwest::Response;

use super::{Outcome, Session, Stop, Tally, mw};
use crate::events::error::{Attempt, Error, PassedOver};
use crate::events::trace::{NotTried, Trace, TraceStep};
use crate::flow::drain::discard;
use crate::flow::select::Fate;
use crate::judging::classify::Class;
use crate::judging::scope::Unfit;

impl Session<'_> {
    /// A response from endpoint `i` judged `FailOver` (a trigger status, or flagged by the
    /// classifier): it replaces (and drops) any older one.
    pub(crate) fn retain(&mut self, i: usize, resp: Response) {
        if let Some((old, _)) = self.tally().retained.replace((resp, i)) {
            discard(old);
        }
    }

    /// An attempt to endpoint `i` that ended in `error` (without its URL): a transport error,
    /// or a response the classifier could not judge.
    pub(crate) fn fail(&mut self, i: usize, error: reqwest_middleware::Error) {
        let attempt = Attempt::new(self.shared.slots[i].id().clone(), error);
        self.tally().failed.push(attempt);
    }

    fn tally(&mut self) -> &mut Tally {
        self.tally.get_or_insert_default()
    }

    /// Attempt `number` to endpoint `i` ended with `outcome`, judged `class` (for the trace).
    pub(crate) fn traced(
        &mut self,
        i: usize,
        number: u32,
        outcome: impl FnOnce() -> String,
        class: Class,
        overruled: Option<Unfit>,
    ) {
        if let Some(tracer) = &mut self.tracer {
            tracer.add(i, TraceStep::Tried { attempt: number, outcome: outcome(), class });
            if let Some(why) = overruled {
                tracer.add(i, TraceStep::Overruled(why));
            }
        }
    }

    fn finish_trace(&mut self, why: NotTried) -> Option<Trace> {
        let tracer = self.tracer.take()?;
        let trace = tracer.finish(self.shared.slots.iter().map(|s| s.id().clone()), why);
        #[cfg(feature = "tracing")]
        tracing::debug!(target: "failnext", "{trace}");
        Some(trace)
    }

    /// The request returns `resp`, from endpoint `i`.
    pub(crate) fn returned_in_place(&mut self, i: usize, mut resp: Response) -> (Response, usize) {
        if let Some(trace) = self.finish_trace(NotTried::AnswerCameFirst) {
            resp.extensions_mut().insert(trace);
        }
        if let Some((old, _)) = self.tally.as_mut().and_then(|t| t.retained.take()) {
            discard(old);
        }
        (resp, i)
    }

    /// The request stops: with the retained response, else with the failed attempts, else
    /// (nothing was sent) with no usable endpoint.
    pub(crate) fn stop(mut self, reason: Stop) -> Outcome {
        let trace = self.finish_trace(reason.why());
        let with_trace = |err: Error| mw(err.with_trace(trace.clone()));
        let mut outcome = self.stopped(reason, with_trace);
        if let (Ok((resp, _)), Some(trace)) = (&mut outcome, trace) {
            resp.extensions_mut().insert(trace);
        }
        outcome
    }

    /// Every endpoint this request sent nothing to, in configured order, and why: asked only
    /// when the request fails (`stop` is why it sent nothing more). What the plan recorded at
    /// each one's turn says which rule passed it over; the time left on a breaker or cooldown
    /// is read now.
    fn passed_over(&self, tried: &[Attempt], stop: Stop) -> Vec<PassedOver> {
        let now = tokio::time::Instant::now();
        let left = |until: tokio::time::Instant| until.saturating_duration_since(now);
        let slots = &self.shared.slots;
        let not_tried = |id: &crate::request::endpoint::EndpointId| !tried.iter().any(|a| a.endpoint() == id);
        (0..slots.len())
            .filter(|&i| not_tried(slots[i].id()))
            .map(|i| {
                let slot = &slots[i];
                let why = match self.plan.fate(i) {
                    Fate::Excluded => TraceStep::Excluded,
                    Fate::RuledOut => match self.scope.and_then(|scope| scope.unfit(slot.id())) {
                        Some(unfit) => TraceStep::Unfit(unfit),
                        None => TraceStep::Ineligible,
                    },
                    Fate::PassedByHealth => match (slot.health.open_until(), slot.health.cooling_until()) {
                        (Some(until), _) if until > now => TraceStep::BreakerOpen(left(until)),
                        (Some(_), _) => TraceStep::TrialBusy,
                        (None, until) => TraceStep::Cooling(until.map_or_else(Default::default, left)),
                    },
                    Fate::NotReached => TraceStep::NotTried(stop.why()),
                };
                PassedOver::new(slot.id().clone(), why)
            })
            .collect()
    }

    fn stopped(self, reason: Stop, mw: impl Fn(Error) -> reqwest_middleware::Error) -> Outcome {
        let deadline = self.deadline.map(|(_, d)| d);
        // A retained response is returned: nothing to explain.
        let fails = self.tally.as_ref().is_none_or(|t| t.retained.is_none());
        let tried = self.tally.as_ref().map_or(&[][..], |t| &t.failed[..]);
        let passed = if fails { self.passed_over(tried, reason) } else { Vec::new() };
        let mw = |err: Error| mw(err.with_passed_over(passed.clone()));
        let untried = |tried: &[Attempt]| -> Vec<crate::request::endpoint::EndpointId> {
            let slots = &self.shared.slots;
            slots
                .iter()
                .map(|s| s.id())
                .filter(|id| !tried.iter().any(|a| a.endpoint() == *id))
                .cloned()
                .collect()
        };
        let Some(tally) = self.tally else {
            // Every attempt that does not return leaves a tally: nothing was sent.
            if let (Stop::DeadlinePassed, Some(d)) = (reason, deadline) {
                return Err(mw(Error::deadline(d, Vec::new(), untried(&[]))));
            }
            debug_assert_eq!(reason, Stop::NoCandidate);
            return Err(mw(Error::no_usable_endpoint()));
        };
        match (tally.retained, reason, deadline) {
            (Some(retained), _, _) => Ok(retained),
            (None, Stop::BudgetSpent, _) => Err(mw(Error::budget_spent(tally.failed))),
            (None, Stop::DeadlinePassed, Some(d)) => {
                let untried = untried(&tally.failed);
                Err(mw(Error::deadline(d, tally.failed, untried)))
            }
            (None, _, _) => Err(mw(Error::exhausted(tally.failed))),
        }
    }
}

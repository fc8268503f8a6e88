//! `Session`: one request's state across its attempts, and the one place that decides what
//! the request does next.

use reqwest::{Request, Response};

use crate::classify::Class;
use crate::destination::HostRule;
use crate::drain::discard;
use crate::error::{Attempt, Error};
use crate::event::{Event, SkipReason};
use crate::health::{Admit, BreakerState, Permit};
use crate::options::RequestOptions;
use crate::permission::{self, Permission, Settled};
use crate::replay::Replay;
use crate::select::{self, LastResort, Plan};
use crate::shared::Shared;
use crate::skip::Skip;
use crate::trace::{NotTried, Trace, TraceStep, Tracer};

/// What a request ends with: a response and the index of the endpoint that produced it.
pub(crate) type Outcome = Result<(Response, usize), reqwest_middleware::Error>;

/// A caller that can make a later attempt's request itself (its body is never a stream), so
/// that nothing is copied before the first attempt.
pub(crate) trait Rebuild: Sync {
    /// The request for an attempt to `url`.
    fn request(&self, url: &url::Url) -> Request;
}

/// Told about every response of one request that was judged `FailOver` (a trigger status, or
/// flagged by the classifier), before it is retained: how the alloy transport learns which
/// endpoint lacked what. Called only on that path, never for a response that returns at once.
#[cfg_attr(not(feature = "alloy"), allow(dead_code, reason = "used by the alloy transport"))]
pub(crate) trait Observe: Send + Sync {
    /// Endpoint `endpoint` answered `response`, and the request fails over from it.
    fn flagged(&self, endpoint: &crate::EndpointId, response: &Response);
}

/// An [`Observe`] for a request sent down a middleware chain, in its extensions.
#[cfg(feature = "alloy")]
#[derive(Clone)]
pub(crate) struct Observer(pub(crate) std::sync::Arc<dyn Observe>);

/// What the request does next.
#[derive(Debug)]
#[allow(
    clippy::large_enum_variant,
    reason = "moved once per attempt; a box would allocate on the healthy path"
)]
pub(crate) enum Step {
    /// Send this request to the endpoint at this index.
    Send(usize, Request),
    /// Send this request (the first attempt) to the endpoint at this index, and if it has not
    /// finished after this long, ask [`Session::partner`] for a hedge to race it with.
    Hedge(usize, Request, std::time::Duration),
    /// Wait (bounded by the attempt timeout) for the trial in flight at the endpoint at this
    /// index to end, then ask again: the last resort found nothing else.
    Wait(usize),
    /// Send nothing more.
    Stop(Stop),
}

/// The hedge for a first attempt that ran past its delay: a request to race it with, or why
/// there is none (then the first attempt goes on alone, and nothing of the plan was used up).
#[derive(Debug)]
#[allow(clippy::large_enum_variant, reason = "made once per hedged request, moved at once")]
pub(crate) enum Partner {
    /// Send this request to the endpoint at this index, beside the first attempt.
    Send(usize, Request),
    /// No hedge (the trace says why).
    None,
}

/// What selection chose: an endpoint to send to, or one whose trial to wait for.
#[derive(Clone, Copy, Debug)]
enum Choice {
    Send(usize),
    Wait(usize),
}

/// Why a request sends nothing more.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// Every endpoint of the plan has been tried or skipped.
    NoCandidate,
    /// An attempt failed, and the request may not fail over.
    MayNotFailOver,
    /// Failover wanted another endpoint, but the body is a stream that cannot be sent twice.
    NotReplayable,
    /// The request's deadline passed.
    DeadlinePassed,
    /// The failover budget had no token for another attempt.
    BudgetSpent,
}

impl Stop {
    /// The reason, as the trace says it.
    fn why(self) -> NotTried {
        match self {
            Stop::NoCandidate => NotTried::NotReached,
            Stop::MayNotFailOver => NotTried::MayNotFailOver,
            Stop::NotReplayable => NotTried::NotReplayable,
            Stop::DeadlinePassed => NotTried::DeadlinePassed,
            Stop::BudgetSpent => NotTried::BudgetSpent,
        }
    }
}

/// One request's state: plan, permission, replay copy and the tally of its attempts.
///
/// The session itself allocates nothing until an attempt does not return: the plan is inline
/// for up to 64 endpoints, and the tally is made only then.
pub(crate) struct Session<'a> {
    shared: &'a Shared,
    plan: Plan,
    /// The caller's request, until the first attempt takes it.
    first: Option<Request>,
    /// The request's own choice, read from its options.
    explicit: Option<Permission>,
    /// Settled once, before the first attempt, and only when another endpoint could be tried.
    permission: Option<Settled>,
    /// What later attempts are made from; `None` when not needed or the body is a stream.
    replay: Option<Replay>,
    /// The caller's own way to make later attempts (the alloy transport rebuilds them from its
    /// packet), used instead of copying the request up front.
    rebuild: Option<&'a dyn Rebuild>,
    /// Told about each response the request fails over from.
    observer: Option<&'a dyn Observe>,
    pub(crate) host: HostRule,
    /// Attempts sent so far; the last one's number.
    pub(crate) sent: u32,
    /// The trial permit of the attempt in flight, when it is its breaker's trial; dropped when
    /// the next step is decided, or with the session (a dropped request frees it).
    trial: Option<Permit<'a>>,
    /// Made when the first attempt does not return, so that the healthy path's future stays
    /// small (the handle future is boxed by `async_trait`, and moved).
    tally: Option<Box<Tally>>,
    /// When the request must end, and its length, if it has a deadline.
    deadline: Option<(tokio::time::Instant, std::time::Duration)>,
    /// The request's trace, when it asked for one.
    tracer: Option<Box<Tracer>>,
}

/// What the attempts that did not return left behind.
#[derive(Default)]
struct Tally {
    /// Attempts that ended in an error, in order.
    failed: Vec<Attempt>,
    /// The latest response judged `FailOver` (a trigger status, or flagged by the classifier)
    /// and its endpoint, returned if nothing better comes.
    retained: Option<(Response, usize)>,
}

impl<'a> Session<'a> {
    /// Starts a request: reads its options and makes its plan. Fails, before anything is sent
    /// or asked, when the request names an endpoint that is not configured.
    pub(crate) fn start(
        shared: &'a Shared,
        req: Request,
        opts: &RequestOptions<'_>,
    ) -> Result<Self, reqwest_middleware::Error> {
        let plan = select::plan(&shared.slots, opts, shared.eligible.as_deref(), shared.ordering.as_ref())
            .map_err(|unknown| mw(Error::unknown(unknown)))?;
        if let Some(budget) = &shared.budget {
            budget.deposit();
        }
        if shared.events.is_active() {
            for (_, slot) in shared.slots.iter().enumerate().filter(|(i, _)| !plan.is_usable(*i)) {
                let endpoint = slot.id();
                let excluded = opts.excluded.iter().any(|e| e == endpoint);
                let reason = if excluded { SkipReason::Excluded } else { SkipReason::Ineligible };
                shared.emit(|| Event::Skipped { endpoint, reason });
            }
        }
        let tracer = (opts.trace || shared.trace_all).then(|| Box::new(start_trace(shared, opts, &plan)));
        Ok(Session {
            shared,
            plan,
            host: HostRule::of(&req),
            first: Some(req),
            explicit: opts.permission,
            permission: None,
            replay: None,
            rebuild: None,
            observer: None,
            sent: 0,
            trial: None,
            tally: None,
            deadline: opts.deadline.or(shared.deadline).map(|d| (tokio::time::Instant::now() + d, d)),
            tracer,
        })
    }

    /// Later attempts are made by `rebuild` instead of a copy of the request.
    #[cfg_attr(not(feature = "alloy"), allow(dead_code, reason = "used by the alloy transport"))]
    pub(crate) fn rebuild_with(mut self, rebuild: &'a dyn Rebuild) -> Self {
        self.rebuild = Some(rebuild);
        self
    }

    /// `observer` is told about each response the request fails over from.
    #[cfg_attr(not(feature = "alloy"), allow(dead_code, reason = "used by the alloy transport"))]
    pub(crate) fn observe_with(mut self, observer: Option<&'a dyn Observe>) -> Self {
        self.observer = observer;
        self
    }

    /// The one decision point: send to the next usable endpoint (the first attempt with a
    /// hedge, when one is due), wait for a trial, or stop, and why.
    pub(crate) fn next(&mut self) -> Step {
        // The previous attempt's outcome is recorded: its trial, if it was one, is over.
        self.trial = None;
        if self.sent > 0 && self.permission.is_some_and(|p| !p.allowed) {
            return Step::Stop(Stop::MayNotFailOver);
        }
        if self.left().is_some_and(|left| left.is_zero()) {
            return Step::Stop(Stop::DeadlinePassed);
        }
        let i = match self.select(true) {
            Some(Choice::Send(i)) => i,
            Some(Choice::Wait(i)) => {
                if let Some(tracer) = &mut self.tracer {
                    tracer.add(i, TraceStep::WaitedForTrial);
                }
                return Step::Wait(i);
            }
            None => return Step::Stop(Stop::NoCandidate),
        };
        if self.sent > 0 && !self.withdraw() {
            return Step::Stop(Stop::BudgetSpent);
        }
        let req = match self.request_for(i) {
            Ok(req) => req,
            Err(stop) => return Step::Stop(stop),
        };
        match self.may_hedge(i) {
            Some(after) => Step::Hedge(i, req, after),
            None => Step::Send(i, req),
        }
    }

    /// The hedge of the first attempt (to `first`, still in flight after its delay): the
    /// fastest candidate left (with latency ordering) or the next one, admitted now and paid
    /// for from the budget. The last resort is not asked and nothing is waited for; a
    /// candidate the budget refuses is put back. The first attempt's trial permit, if it holds
    /// one, must have been taken with [`hold_trial`](Session::hold_trial).
    pub(crate) fn partner(&mut self, first: usize, after: std::time::Duration) -> Partner {
        let shared = self.shared;
        if let Some(ordered) = &shared.ordering {
            self.plan.hedge_to_fastest(ordered, |i| shared.slots[i].latency.get());
        }
        let stop = if self.left().is_some_and(|left| left.is_zero()) {
            Stop::DeadlinePassed
        } else {
            match self.select(false) {
                None => Stop::NoCandidate,
                Some(Choice::Wait(_)) => Stop::NoCandidate,
                Some(Choice::Send(j)) if !self.withdraw() => {
                    self.plan.put_back(j);
                    Stop::BudgetSpent
                }
                Some(Choice::Send(j)) => match self.request_for(j) {
                    Ok(req) => {
                        self.hedging(j, first, after);
                        return Partner::Send(j, req);
                    }
                    Err(stop) => stop,
                },
            }
        };
        // Not sent: a trial permit taken for it is freed at once.
        self.trial = None;
        if let Some(tracer) = &mut self.tracer {
            tracer.add(first, TraceStep::NotHedged(stop.why()));
        }
        Partner::None
    }

    /// A failover attempt's token from the budget (always granted without one). Refused, a
    /// trial permit taken for the candidate is freed at once.
    fn withdraw(&mut self) -> bool {
        let granted = self.shared.budget.as_ref().is_none_or(|b| b.withdraw());
        if !granted {
            self.trial = None;
        }
        granted
    }

    /// The request for an attempt to endpoint `i`, now chosen and paid for: the caller's
    /// own for the first attempt, else a copy; counts it as sent.
    fn request_for(&mut self, i: usize) -> Result<Request, Stop> {
        let req = match self.first.take() {
            Some(req) => self.settle(req),
            None => match self.replay(i) {
                Some(req) => req,
                None => {
                    // Not sent: a trial permit taken for it is freed at once.
                    self.trial = None;
                    let endpoint = self.shared.slots[i].id();
                    self.shared.emit(|| Event::NotReplayable { endpoint });
                    return Err(Stop::NotReplayable);
                }
            },
        };
        if self.trial.is_some() {
            let endpoint = self.shared.slots[i].id();
            self.shared.emit(|| Event::Breaker { endpoint, state: BreakerState::HalfOpen });
        }
        self.sent += 1;
        Ok(req)
    }

    /// The next candidate of the plan not skipped now; skipped ones are never revisited, except
    /// by the last resort.
    fn select(&mut self, last_resort: bool) -> Option<Choice> {
        let shared = self.shared;
        while let Some(i) = self.plan.next() {
            let slot = &shared.slots[i];
            match select::admit(slot) {
                Ok(admit) => return Some(Choice::Send(self.admitted(i, admit))),
                Err(skip) => {
                    let endpoint = slot.id();
                    shared.emit(|| Event::Skipped { endpoint, reason: skip_reason(skip) });
                    if let Some(tracer) = &mut self.tracer {
                        tracer.add(i, traced_skip(skip));
                    }
                    if let Skip::Open { .. } | Skip::HalfOpenBusy = skip {
                        self.plan.pass_open(i);
                    }
                    shared.emit(|| Event::CooldownSkip { endpoint });
                }
            }
        }
        if last_resort { self.last_resort() } else { None }
    }

    /// The last resort, when the plan's order is exhausted: the candidate passed over as open
    /// whose open time ends soonest gets its trial now, unless another request holds that
    /// trial's permit (then the next soonest). When every such candidate's permit is held, the
    /// request waits for the soonest one's trial to end and asks again (at most twice per
    /// candidate, and only with an attempt timeout to bound the wait; a candidate it may not
    /// wait for is dropped). Only the adaptive breaker passes candidates over as open; under
    /// the reference rule there is no last resort. It only chooses where the next attempt
    /// goes: `next` has already stopped a request that may not fail over.
    fn last_resort(&mut self) -> Option<Choice> {
        let slots = &self.shared.slots;
        let may_wait = self.shared.attempt_timeout.is_some() || self.deadline.is_some();
        let choice = self.plan.last_resort(
            |i| slots[i].health.open_until(),
            |i| slots[i].health.force_trial(),
            may_wait,
        )?;
        Some(match choice {
            LastResort::Take(i, admit) => Choice::Send(self.admitted(i, admit)),
            LastResort::Wait(i) => Choice::Wait(i),
        })
    }

    /// Whether the first attempt, just chosen for endpoint `first`, may be hedged, and after
    /// how long: a hedge is configured, the request may fail over, its body can be sent again,
    /// another candidate is left, and the hedge has a delay for `first` (a percentile hedge
    /// may have none yet).
    fn may_hedge(&self, first: usize) -> Option<std::time::Duration> {
        let hedge = self.shared.hedge.as_ref()?;
        let allowed = self.sent == 1 && self.permission.is_some_and(|p| p.allowed);
        if !(allowed && (self.replay.is_some() || self.rebuild.is_some()) && self.plan.has_more()) {
            return None;
        }
        hedge.delay(self.shared.slots[first].recent.as_deref())
    }

    /// The first attempt's trial permit, kept by the caller while a hedge is chosen (the
    /// hedge's own admission would replace it).
    pub(crate) fn hold_trial(&mut self) -> Option<Permit<'a>> {
        self.trial.take()
    }

    /// Endpoint `i` is about to be sent a hedge of the first attempt, to endpoint `first`:
    /// the trace and the event say so.
    fn hedging(&mut self, i: usize, first: usize, after: std::time::Duration) {
        if let Some(tracer) = &mut self.tracer {
            tracer.add(i, TraceStep::Hedged);
        }
        let (endpoint, first) = (self.shared.slots[i].id(), self.shared.slots[first].id());
        self.shared.emit(|| Event::Hedge { endpoint, attempt: self.sent, first, after });
    }

    /// Attempt `number` to endpoint `i` was cancelled: the other attempt of the hedge won (for
    /// the trace).
    pub(crate) fn cancelled(&mut self, i: usize, number: u32) {
        if let Some(tracer) = &mut self.tracer {
            tracer.add(i, TraceStep::Cancelled { attempt: number });
        }
    }

    /// The time left before the deadline (zero once it passed), if the request has one.
    pub(crate) fn left(&self) -> Option<std::time::Duration> {
        self.deadline.map(|(at, _)| at.saturating_duration_since(tokio::time::Instant::now()))
    }

    /// How long the next attempt (or wait) may take: the attempt timeout, or what is left of
    /// the deadline if that is shorter; and whether the deadline is what bounds it.
    pub(crate) fn limit(&self) -> (Option<std::time::Duration>, bool) {
        let timeout = self.shared.attempt_timeout;
        match (timeout, self.left()) {
            (Some(t), Some(left)) if left < t => (Some(left), true),
            (None, Some(left)) => (Some(left), true),
            (t, _) => (t, false),
        }
    }

    /// The epoch of the trial permit the attempt in flight holds, if it is its breaker's trial.
    pub(crate) fn trial(&self) -> Option<u64> {
        self.trial.as_ref().map(Permit::epoch)
    }

    /// The wait for candidate `i`'s trial outlasted its bound: the request waits for it no more.
    pub(crate) fn wait_timed_out(&mut self, i: usize) {
        self.plan.wait_no_more(i);
    }

    /// Candidate `i` is chosen; a trial keeps its permit for the attempt.
    fn admitted(&mut self, i: usize, admit: Admit<'a>) -> usize {
        if let Admit::Trial(permit) = admit {
            self.trial = Some(permit);
        }
        i
    }

    /// Before the first attempt: permission is settled once, and only when another endpoint
    /// could be tried; only then is the request copied for later attempts (the body is shared,
    /// not copied).
    fn settle(&mut self, mut req: Request) -> Request {
        if self.plan.has_more() {
            let settled = permission::resolve(self.explicit, self.shared.policy.as_ref(), &req);
            if settled.allowed && self.rebuild.is_none() {
                self.replay = Replay::prepare(&mut req);
            }
            self.permission = Some(settled);
        }
        req
    }

    /// A later attempt's request to endpoint `i`, or `None` when the body is a stream. The
    /// last possible attempt takes the copy's headers instead of copying them.
    fn replay(&mut self, i: usize) -> Option<Request> {
        let url = self.shared.slots[i].destination.url();
        if let (Some(rebuild), Some(true)) = (self.rebuild, self.permission.map(|p| p.allowed)) {
            return Some(rebuild.request(url));
        }
        let copy = self.replay.take()?;
        if self.plan.has_more() {
            let req = copy.request(url);
            self.replay = Some(copy);
            Some(req)
        } else {
            Some(copy.into_request(url))
        }
    }

    /// A response from endpoint `i` judged `FailOver` (a trigger status, or flagged by the
    /// classifier): it replaces (and drops) any older one.
    pub(crate) fn retain(&mut self, i: usize, resp: Response) {
        if let Some(observer) = self.observer {
            observer.flagged(self.shared.slots[i].id(), &resp);
        }
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
    pub(crate) fn traced(&mut self, i: usize, number: u32, outcome: impl FnOnce() -> String, class: Class) {
        if let Some(tracer) = &mut self.tracer {
            tracer.add(i, TraceStep::Tried { attempt: number, outcome: outcome(), class });
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

    fn stopped(self, reason: Stop, mw: impl Fn(Error) -> reqwest_middleware::Error) -> Outcome {
        let deadline = self.deadline.map(|(_, d)| d);
        let untried = |tried: &[Attempt]| -> Vec<crate::EndpointId> {
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

/// A trace's start: who the request excluded, who was ineligible.
fn start_trace(shared: &Shared, opts: &RequestOptions<'_>, plan: &Plan) -> Tracer {
    let mut tracer = Tracer::new(shared.slots.len());
    for (i, slot) in shared.slots.iter().enumerate() {
        if !plan.is_usable(i) {
            let excluded = opts.excluded.iter().any(|e| e == slot.id());
            tracer.add(i, if excluded { TraceStep::Excluded } else { TraceStep::Ineligible });
        }
    }
    tracer
}

/// A skip, as its event says it.
fn skip_reason(skip: Skip) -> SkipReason {
    match skip {
        Skip::Excluded => SkipReason::Excluded,
        Skip::Ineligible => SkipReason::Ineligible,
        Skip::CoolingUntil(_) => SkipReason::Cooling,
        Skip::Open { .. } => SkipReason::BreakerOpen,
        Skip::HalfOpenBusy => SkipReason::TrialBusy,
    }
}

/// A skip, as the trace says it.
fn traced_skip(skip: Skip) -> TraceStep {
    let left = |until: tokio::time::Instant| until.saturating_duration_since(tokio::time::Instant::now());
    match skip {
        Skip::Excluded => TraceStep::Excluded,
        Skip::Ineligible => TraceStep::Ineligible,
        Skip::CoolingUntil(until) => TraceStep::Cooling(left(until)),
        Skip::Open { until } => TraceStep::BreakerOpen(left(until)),
        Skip::HalfOpenBusy => TraceStep::TrialBusy,
    }
}

fn mw(err: Error) -> reqwest_middleware::Error {
    reqwest_middleware::Error::middleware(err)
}

#[cfg(test)]
#[allow(unused_must_use, reason = "tests drive Health::record without emitting")]
mod tests {
    use http::Extensions;

    use super::*;
    use crate::{Endpoint, ExcludedEndpoints, Failover};

    fn failover(n: u16) -> Failover {
        let eps = (1..=n).map(|i| Endpoint::new(format!("e{i}"), format!("http://127.0.0.1:{i}/")));
        Failover::builder(eps).build().unwrap()
    }

    fn request(method: reqwest::Method, body: Option<reqwest::Body>) -> Request {
        let mut req = Request::new(method, "http://127.0.0.1:1/".parse().unwrap());
        *req.body_mut() = body;
        req
    }

    fn sent_to(step: Step) -> usize {
        match step {
            Step::Send(i, _) => i,
            Step::Hedge(i, _, after) => panic!("sent to {i}, hedged after {after:?}"),
            Step::Wait(i) => panic!("waits for {i}"),
            Step::Stop(reason) => panic!("stopped: {reason:?}"),
        }
    }

    fn stopped(step: Step) -> Stop {
        match step {
            Step::Send(i, _) | Step::Hedge(i, _, _) => panic!("sent to {i}"),
            Step::Wait(i) => panic!("waits for {i}"),
            Step::Stop(reason) => reason,
        }
    }

    fn error() -> reqwest_middleware::Error {
        reqwest_middleware::Error::middleware(std::io::Error::other("refused"))
    }

    #[test]
    fn nothing_usable_stops_before_sending_with_no_usable_endpoint() {
        let fo = failover(2);
        let mut ext = Extensions::new();
        ext.insert(ExcludedEndpoints(vec!["e1".into(), "e2".into()]));
        let mut session =
            Session::start(fo.shared(), request(reqwest::Method::GET, None), &RequestOptions::read(&ext))
                .unwrap();
        assert_eq!(stopped(session.next()), Stop::NoCandidate);
        let err = session.stop(Stop::NoCandidate).unwrap_err();
        assert!(Error::from_middleware(&err).is_some_and(Error::is_no_usable_endpoint));
    }

    #[test]
    fn a_denied_request_stops_after_its_first_attempt() {
        let fo = failover(2);
        let mut session =
            Session::start(fo.shared(), request(reqwest::Method::POST, None), &RequestOptions::default())
                .unwrap();
        assert_eq!(sent_to(session.next()), 0);
        assert!(session.tally.is_none(), "nothing is made for the failover before it is needed");
        let by_default = Settled { allowed: false, by: permission::Decided::ByDefault };
        assert_eq!(session.permission, Some(by_default));
        session.fail(0, error());
        assert_eq!(stopped(session.next()), Stop::MayNotFailOver);
        let err = session.stop(Stop::MayNotFailOver).unwrap_err();
        assert_eq!(Error::from_middleware(&err).map(|e| e.attempts().len()), Some(1));
    }

    #[test]
    fn an_allowed_request_goes_on_until_no_candidate_is_left() {
        let fo = failover(2);
        let mut session =
            Session::start(fo.shared(), request(reqwest::Method::GET, None), &RequestOptions::default())
                .unwrap();
        assert_eq!(sent_to(session.next()), 0);
        session.fail(0, error());
        assert_eq!(sent_to(session.next()), 1);
        assert_eq!(session.sent, 2);
        session.fail(1, error());
        assert_eq!(stopped(session.next()), Stop::NoCandidate);
        let err = session.stop(Stop::NoCandidate).unwrap_err();
        assert_eq!(Error::from_middleware(&err).map(|e| e.attempts().len()), Some(2));
    }

    #[test]
    fn a_single_endpoint_settles_no_permission_and_stops_for_want_of_candidates() {
        let fo = failover(1);
        let mut session =
            Session::start(fo.shared(), request(reqwest::Method::GET, None), &RequestOptions::default())
                .unwrap();
        assert_eq!(sent_to(session.next()), 0);
        assert_eq!(session.permission, None, "permission is settled only when another endpoint exists");
        session.fail(0, error());
        assert_eq!(stopped(session.next()), Stop::NoCandidate);
    }

    #[tokio::test(start_paused = true)]
    async fn a_trial_permit_is_held_for_the_attempt_and_dropped_at_the_next_step() {
        let fo = failover(2);
        let get = || request(reqwest::Method::GET, None);
        let start = |req| Session::start(fo.shared(), req, &RequestOptions::default()).unwrap();
        fo.shared().slots[0].health.record(
            crate::Evidence::Failure,
            Some(std::time::Duration::from_millis(1)),
            None,
        );
        tokio::time::advance(std::time::Duration::from_millis(1)).await;
        let mut trial = start(get());
        assert_eq!(sent_to(trial.next()), 0);
        assert!(trial.trial.is_some(), "the session holds the trial permit");
        let mut other = start(get());
        assert_eq!(sent_to(other.next()), 1, "half-open with its trial taken: skipped");
        assert!(other.trial.is_none());
        trial.fail(0, error());
        assert_eq!(sent_to(trial.next()), 1);
        assert!(trial.trial.is_none(), "dropped when the next step is decided");
        let mut third = start(get());
        assert_eq!(sent_to(third.next()), 0, "the permit is free again: the next request is the trial");
        drop(third);
        assert_eq!(sent_to(start(get()).next()), 0, "a dropped session frees it too");
    }

    #[tokio::test(start_paused = true)]
    async fn the_last_resort_settles_permission_for_an_open_candidate_left_behind() {
        let fo = failover(2);
        fo.shared().slots[0].health.record(
            crate::Evidence::Failure,
            Some(std::time::Duration::from_secs(60)),
            None,
        );
        let mut session =
            Session::start(fo.shared(), request(reqwest::Method::POST, None), &RequestOptions::default())
                .unwrap();
        assert_eq!(sent_to(session.next()), 1, "e1 is open: passed over, remembered");
        assert!(session.permission.is_some_and(|p| !p.allowed), "settled: e1 could still be tried");
        session.fail(1, error());
        assert_eq!(
            stopped(session.next()),
            Stop::MayNotFailOver,
            "the last resort never sends a denied request on"
        );
        let mut read =
            Session::start(fo.shared(), request(reqwest::Method::GET, None), &RequestOptions::default())
                .unwrap();
        assert_eq!(sent_to(read.next()), 1);
        read.fail(1, error());
        assert_eq!(sent_to(read.next()), 0, "a read that may fail over gets the open e1 as its last resort");
        assert!(read.trial.is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn a_trial_that_cannot_be_sent_frees_its_permit_at_once() {
        let fo = failover(2);
        let stream = futures::stream::iter([Ok::<_, std::io::Error>(bytes::Bytes::from_static(b"x"))]);
        let req = request(reqwest::Method::GET, Some(reqwest::Body::wrap_stream(stream)));
        let mut session = Session::start(fo.shared(), req, &RequestOptions::default()).unwrap();
        assert_eq!(sent_to(session.next()), 0);
        fo.shared().slots[1].health.record(crate::Evidence::Failure, Some(std::time::Duration::ZERO), None);
        session.fail(0, error());
        assert_eq!(stopped(session.next()), Stop::NotReplayable);
        assert!(session.trial.is_none());
        let mut other =
            Session::start(fo.shared(), request(reqwest::Method::GET, None), &RequestOptions::default())
                .unwrap();
        other.plan.next();
        assert_eq!(sent_to(other.next()), 1, "e2's trial is free");
        assert!(other.trial.is_some());
    }

    #[test]
    fn a_streaming_body_stops_as_not_replayable() {
        let fo = failover(2);
        let stream = futures::stream::iter([Ok::<_, std::io::Error>(bytes::Bytes::from_static(b"x"))]);
        let req = request(reqwest::Method::GET, Some(reqwest::Body::wrap_stream(stream)));
        let mut session = Session::start(fo.shared(), req, &RequestOptions::default()).unwrap();
        assert_eq!(sent_to(session.next()), 0);
        session.fail(0, error());
        assert_eq!(stopped(session.next()), Stop::NotReplayable);
    }
}

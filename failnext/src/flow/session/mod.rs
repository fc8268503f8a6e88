//! `Session`: one request's state across its attempts, and the one place that decides what
//! the request does next.

use reqwest::{Request, Response};

use crate::events::error::{Attempt, Error};
use crate::events::event::{Event, SkipReason};
use crate::events::trace::{NotTried, TraceStep, Tracer};
use crate::flow::replay::Replay;
use crate::flow::select::{self, LastResort, Plan};
use crate::flow::shared::Shared;
use crate::health::skip::Skip;
use crate::health::{Admit, BreakerState, Permit};
use crate::judging::scope::Scope;
use crate::request::destination::HostRule;
use crate::request::options::RequestOptions;
use crate::request::permission::{self, Permission, Settled};

/// What a request ends with: a response and the index of the endpoint that produced it.
pub(crate) type Outcome = Result<(Response, usize), reqwest_middleware::Error>;

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
    /// Ask the fleet (feature `redis`) whether an attempt may go to the endpoint at this
    /// index, then tell the session with [`Session::admission`].
    #[cfg_attr(not(feature = "redis"), allow(dead_code, reason = "only a fleet admits"))]
    Admit(usize),
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
    /// No admitted endpoint is free to race the first attempt, but the reserve or the last
    /// resort (breakers open, trials taken) is left: ask again with them allowed if it is
    /// still out after [`reserve_hedge_after`] (it may be hung, not merely slow).
    Later,
}

/// How long an admitted first attempt, hedged after `after`, is waited for before the reserve
/// races it: four times the hedge's delay, at least 250 ms. A slow answer is a provider's to
/// give; an attempt still out that long is one the reads should not wait out (the attempt
/// timeout is 10 s by default).
/// The bound of an attempt: the attempt timeout, or what is left of the deadline when that is
/// sooner (then `true`: a timeout is the deadline's, not the endpoint's fault).
#[inline]
pub(crate) fn limit_of(
    timeout: Option<std::time::Duration>,
    left: Option<std::time::Duration>,
) -> (Option<std::time::Duration>, bool) {
    match (timeout, left) {
        (Some(t), Some(left)) if left < t => (Some(left), true),
        (None, Some(left)) => (Some(left), true),
        (t, _) => (t, false),
    }
}

pub(crate) fn reserve_hedge_after(after: std::time::Duration) -> std::time::Duration {
    after.saturating_mul(4).max(std::time::Duration::from_millis(250))
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
    /// What the request knows about itself (the alloy transport's packet scope, say): it rules
    /// endpoints out, reviews answers and may make later attempts itself.
    /// packet), used instead of copying the request up front.
    pub(crate) scope: Option<&'a dyn Scope>,
    /// The request is one `eth_blockNumber` call and a paired source knows heads: each
    /// answer's head is judged ([`Paired::judge_head`](crate::health::paired::Paired::judge_head)).
    pub(crate) heads: bool,
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
    /// The endpoint the fleet admitted for the next attempt (feature `redis`).
    #[cfg_attr(not(feature = "redis"), allow(dead_code, reason = "only a fleet admits"))]
    admitted: Option<usize>,
}

mod end;
mod start;

pub(crate) use self::start::Begun;

#[cfg(test)]
thread_local! {
    /// Sessions built on this thread (started or resumed): the fast path's tests count them.
    pub(crate) static BUILT: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Counts a session built (tests only).
#[inline]
fn built() {
    #[cfg(test)]
    BUILT.with(|n| n.set(n.get() + 1));
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

fn mw(err: Error) -> reqwest_middleware::Error {
    reqwest_middleware::Error::middleware(err)
}

use self::start::{passed_over_at_start, rule_out, skip_reason, traced_skip};

impl<'a> Session<'a> {
    /// Starts a request: reads its options and makes its plan, with what its `scope` rules
    /// out. Fails, before anything is sent or asked, when the request names an endpoint that is
    /// not configured.
    pub(crate) fn start(
        shared: &'a Shared,
        req: Request,
        opts: &RequestOptions<'_>,
        scope: Option<&'a dyn Scope>,
    ) -> Result<Self, reqwest_middleware::Error> {
        let mut plan = select::plan(
            &shared.slots,
            opts,
            shared.eligible.as_deref(),
            shared.advice(),
            shared.ordering.as_ref(),
        )
        .map_err(|unknown| mw(Error::unknown(unknown)))?;
        // What the request's scope rules out: allocation-free when it rules out nothing.
        let unfit = scope.map(|scope| rule_out(shared, scope, &mut plan, None)).unwrap_or_default();
        if let Some(budget) = &shared.budget {
            budget.deposit();
        }
        let mut tracer = (opts.trace || shared.trace_all).then(|| Box::new(Tracer::new(shared.slots.len())));
        if shared.events.is_active() || tracer.is_some() {
            passed_over_at_start(shared, opts.excluded, &plan, &unfit, tracer.as_deref_mut());
        }
        built();
        let heads = shared.paired.is_some() && crate::health::paired::asks_block_number(&req);
        Ok(Session {
            shared,
            plan,
            heads,
            host: HostRule::of(&req),
            first: Some(req),
            explicit: opts.permission,
            permission: None,
            replay: None,
            scope,
            sent: 0,
            trial: None,
            tally: None,
            deadline: opts.deadline.or(shared.deadline).map(|d| (tokio::time::Instant::now() + d, d)),
            tracer,
            admitted: None,
        })
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
        if self.needs_admission(i) {
            // Asked first; the plan gives it again once admitted.
            self.trial = None;
            return Step::Admit(i);
        }
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
    /// for from the budget. The last resort is asked only with `reserve`; nothing is waited for; a
    /// candidate the budget refuses is put back. The first attempt's trial permit, if it holds
    /// one, must have been taken with [`hold_trial`](Session::hold_trial). `reserve`: the
    /// reserve may race an admitted first attempt (it has been out for
    /// [`reserve_hedge_after`], or another attempt has failed beside it); otherwise only
    /// another admitted endpoint does, and [`Partner::Later`] says none is left.
    pub(crate) fn partner(&mut self, first: usize, after: std::time::Duration, reserve: bool) -> Partner {
        let shared = self.shared;
        if let Some(ordered) = &shared.ordering {
            self.plan.hedge_to_fastest(ordered, |i| shared.slots[i].latency.get());
        }
        let stop = if self.left().is_some_and(|left| left.is_zero()) {
            Stop::DeadlinePassed
        } else if !reserve && self.plan.is_usable(first) && !self.plan.usable_left() {
            // A reserve is for when the admitted endpoints have failed, not for racing one
            // that is merely slow: an admitted first attempt is hedged only by another, and
            // by the reserve only once it is out long enough to look hung.
            if self.plan.has_more() {
                return Partner::Later;
            }
            Stop::NoCandidate
        } else {
            // Once the first attempt looks hung, the last resort too (a read sends beside a
            // breaker's trial rather than wait for it).
            match self.select(reserve) {
                None if !reserve && self.plan.has_more() => return Partner::Later,
                None => Stop::NoCandidate,
                Some(Choice::Wait(_)) => Stop::NoCandidate,
                Some(Choice::Send(j)) if self.needs_admission(j) => {
                    // A hedge would spend the fleet's budget twice for one read.
                    self.plan.put_back(j);
                    Stop::NoCandidate
                }
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

    /// Whether an attempt to `i` must be admitted by the fleet first (and has not been).
    #[inline]
    fn needs_admission(&mut self, i: usize) -> bool {
        #[cfg(feature = "redis")]
        if let Some(link) = &self.shared.fleet {
            let admitted = self.admitted.take() == Some(i);
            return !admitted && link.fleet.budgets(self.shared.slots[i].id());
        }
        let _ = i;
        false
    }

    /// What the fleet said of an attempt to `i` ([`Step::Admit`]): admitted, `i` is the next
    /// candidate again; refused, it is passed over as if cooling.
    #[cfg(feature = "redis")]
    pub(crate) fn admission(
        &mut self,
        i: usize,
        admission: crate::fleet::Admission,
        state: Option<crate::FleetState>,
    ) {
        if let Some(state) = state {
            self.shared.emit(|| Event::Fleet { state });
        }
        if admission == crate::fleet::Admission::Admitted {
            self.plan.put_back(i);
            self.admitted = Some(i);
            return;
        }
        self.plan.pass_cooling(i);
        let endpoint = self.shared.slots[i].id();
        self.shared.emit(|| Event::Skipped { endpoint, reason: crate::SkipReason::FleetBudget, unfit: None });
        if let Some(tracer) = &mut self.tracer {
            tracer.add(i, TraceStep::FleetBudget);
        }
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
            // A turn after the first attempt comes later than the plan: a provider the health
            // source has since proven unable (on another chain) is never sent to.
            if self.sent > 0 && shared.advice().is_some_and(|advice| advice.never(slot.id())) {
                self.plan.proven_unable(i);
                let endpoint = slot.id();
                shared.emit(|| Event::Skipped { endpoint, reason: SkipReason::Ineligible, unfit: None });
                if let Some(tracer) = &mut self.tracer {
                    tracer.add(i, TraceStep::Ineligible);
                }
                continue;
            }
            match select::admit(slot) {
                Ok(admit) => return Some(Choice::Send(self.admitted(i, admit))),
                Err(skip) => {
                    let endpoint = slot.id();
                    shared.emit(|| Event::Skipped { endpoint, reason: skip_reason(skip), unfit: None });
                    if let Some(tracer) = &mut self.tracer {
                        tracer.add(i, traced_skip(skip));
                    }
                    match skip {
                        Skip::Open { .. } | Skip::HalfOpenBusy => self.plan.pass_open(i),
                        Skip::CoolingUntil(_) => self.plan.pass_cooling(i),
                        _ => {}
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
    /// wait for is dropped). A read (a request that may fail over), or a request with nothing
    /// to bound a wait (no attempt timeout, no deadline), does not wait for a permit: it
    /// sends to the soonest such candidate beside its trial, as an ordinary attempt (an open
    /// breaker is no proof that a provider cannot answer, nothing else is left, and a trial
    /// to a provider that hangs would hold every read up to the attempt timeout). Only the
    /// adaptive breaker passes candidates over as open; under the reference rule there is no
    /// last resort. It only chooses where the next attempt goes: `next` has already stopped
    /// a request that may not fail over.
    fn last_resort(&mut self) -> Option<Choice> {
        let open_left = self.plan.passed_open_left();
        if open_left == 0 {
            return None;
        }
        let bounded = self.shared.attempt_timeout.is_some() || self.deadline.is_some();
        let read = match self.permission {
            Some(settled) => settled.allowed,
            // Before the first attempt, permission is settled (the policy asked) only when
            // another candidate would be left to fail over to, as ever (the plan's order is
            // exhausted here: only the last resort's candidates are left); with one, the
            // request's own choice or its method says whether it is a read.
            None if open_left > 1 => self.may_fail_over(),
            None => {
                self.first.as_ref().is_some_and(|req| permission::resolve(self.explicit, None, req).allowed)
            }
        };
        let may_wait = bounded && !read;
        let slots = &self.shared.slots;
        let choice = self.plan.last_resort(
            |i| slots[i].health.open_until(),
            |i| slots[i].health.force_trial().or(if may_wait { None } else { Some(Admit::Closed) }),
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
        if !(allowed && (self.replay.is_some() || self.rebuilds()) && self.plan.has_more()) {
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
        limit_of(self.shared.attempt_timeout, self.left())
    }

    /// The epoch of the trial permit the attempt in flight holds, if it is its breaker's trial.
    pub(crate) fn trial(&self) -> Option<u64> {
        self.trial.as_ref().map(Permit::epoch)
    }

    /// The wait for candidate `i`'s trial outlasted its bound: the request waits for it no more.
    pub(crate) fn wait_timed_out(&mut self, i: usize) {
        self.plan.wait_no_more(i);
    }

    /// Whether the request's scope makes later attempts itself.
    fn rebuilds(&self) -> bool {
        self.scope.is_some_and(|scope| scope.rebuilds())
    }

    /// Candidate `i` is chosen; a trial keeps its permit for the attempt.
    fn admitted(&mut self, i: usize, admit: Admit<'a>) -> usize {
        if let Admit::Trial(permit) = admit {
            self.trial = Some(permit);
        }
        i
    }

    /// Whether the request may fail over: its permission, settled now if it was not yet
    /// (the last resort asks before the first attempt; it is still settled once).
    fn may_fail_over(&mut self) -> bool {
        if let (None, Some(req)) = (self.permission, &self.first) {
            self.permission = Some(permission::resolve(self.explicit, self.shared.policy.as_ref(), req));
        }
        self.permission.is_some_and(|p| p.allowed)
    }

    /// Before the first attempt: permission is settled once (unless the last resort already
    /// did), and only when another endpoint could be tried; only then is the request copied
    /// for later attempts (the body is shared, not copied).
    fn settle(&mut self, mut req: Request) -> Request {
        if self.plan.has_more() {
            let settled = match self.permission {
                Some(settled) => settled,
                None => permission::resolve(self.explicit, self.shared.policy.as_ref(), &req),
            };
            if settled.allowed && !self.rebuilds() {
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
        if let (Some(scope), true, Some(true)) =
            (self.scope, self.rebuilds(), self.permission.map(|p| p.allowed))
        {
            return scope.rebuild(url);
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
}

#[cfg(test)]
mod tests;

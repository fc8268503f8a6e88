//! The request loop: the session says where to send, each attempt is sent and judged, and
//! the loop runs what the session decided (a send, a hedge's race, a wait, a stop).
//!
//! The first attempt runs inline in [`run`]: a request its first attempt settles builds
//! nothing more. Only when it does not is the rest of the loop ([`rest`]) made, and boxed, so
//! that the future every request carries (boxed by `async_trait` in `Middleware::handle`)
//! holds the first attempt's state and a pointer, not the whole loop's.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use futures_util::FutureExt as _;
use futures_util::future::{Either, select};
use http::Extensions;
use reqwest::Response;
use tokio::time::Instant;

use crate::events::event::{Emitter, Event, ResultOutcome};
use crate::flow::attempt::{self, Attempted, Judged, Sender, Turn, dispatch, judged_attempt};
use crate::flow::drain::discard;
use crate::flow::session::{Outcome, Partner, Session, Step};
use crate::flow::shared::Shared;
use crate::health::Permit;
use crate::judging::scope::Scope;
use crate::request::options::{RequestOptions, ServedBy};

/// One request, from its first step to its outcome.
pub(crate) async fn run<S: Sender>(
    shared: &Shared,
    mut session: Session<'_>,
    ext: &mut Extensions,
    sender: &S,
) -> Outcome {
    let (i, req) = match session.next() {
        Step::Send(i, req) => (i, req),
        Step::Stop(reason) => return session.stop(reason),
        step => return Box::pin(rest(shared, session, step, ext, sender)).await,
    };
    // The same send as `rest`'s `Step::Send`, written out rather than a shared async helper:
    // a helper taking the request would keep a second 264-byte copy of it in this future.
    let turn = turn_of(shared, &session, i);
    let judged = {
        let sending = std::pin::pin!(dispatch(shared, turn, req, session.host, ext, sender));
        attempt::judged(shared, &turn, sending).await
    };
    let class = judged.1;
    if let Some(outcome) = settle(&mut session, turn, judged) {
        return outcome;
    }
    published(shared, i, class);
    // Not settled by the first attempt: the rest of the loop, boxed.
    let step = session.next();
    Box::pin(rest(shared, session, step, ext, sender)).await
}

/// The loop after the first step: runs `step`, then whatever the session decides next.
pub(crate) async fn rest<S: Sender>(
    shared: &Shared,
    mut session: Session<'_>,
    mut step: Step,
    ext: &mut Extensions,
    sender: &S,
) -> Outcome {
    loop {
        match step {
            Step::Send(i, req) => {
                let turn = turn_of(shared, &session, i);
                let judged = {
                    let sending = std::pin::pin!(dispatch(shared, turn, req, session.host, ext, sender));
                    attempt::judged(shared, &turn, sending).await
                };
                let class = judged.1;
                if let Some(outcome) = settle(&mut session, turn, judged) {
                    return outcome;
                }
                published(shared, i, class);
            }
            #[cfg(feature = "redis")]
            Step::Admit(i) => {
                if let Some(link) = &shared.fleet {
                    let (admission, state) = link.fleet.admit(shared.slots[i].id()).await;
                    session.admission(i, admission, state);
                }
            }
            #[cfg(not(feature = "redis"))]
            Step::Admit(_) => {}
            Step::Hedge(i, req, after) => {
                let race = Race { shared, first: i, after };
                if let Some(outcome) = race.run(&mut session, req, ext, sender).await {
                    return outcome;
                }
            }
            Step::Wait(i) => {
                if !wait_for_trial(shared, i, session.limit().0).await {
                    session.wait_timed_out(i);
                }
            }
            Step::Stop(reason) => return session.stop(reason),
        }
        step = session.next();
    }
}

/// After an attempt to endpoint `i` that did not settle the request, judged `class`: a
/// cooldown it started is published to the fleet (feature `redis`) with that reason, so that
/// no process of the fleet meets it.
#[inline]
fn published(shared: &Shared, i: usize, class: crate::Class) {
    #[cfg(feature = "redis")]
    if let Some(link) = &shared.fleet {
        let slot = &shared.slots[i];
        if let Some(until) = slot.health.cooling_until() {
            link.fleet.cooling(slot.id(), until, class);
        }
    }
    let _ = (shared, i, class);
}

/// The attempt `session` is about to send to endpoint `i`.
#[inline]
fn turn_of<'s>(shared: &Shared, session: &Session<'s>, i: usize) -> Turn<'s> {
    let (limit, by_deadline) = session.limit();
    Turn {
        i,
        number: session.sent,
        trial: session.trial(),
        started: timed(shared, i).then(Instant::now),
        limit,
        by_deadline,
        scope: session.scope,
        heads: session.heads,
    }
}

/// Whether an attempt to endpoint `i` is timed. Only when someone looks: an event hook,
/// latency-aware ordering, metrics, a paired monitor, a percentile hedge (which keeps the
/// endpoint's recent latencies).
#[inline]
pub(crate) fn timed(shared: &Shared, i: usize) -> bool {
    shared.events.is_active()
        || shared.ordering.is_some()
        || cfg!(feature = "metrics")
        || shared.paired.is_some()
        || shared.slots[i].recent.is_some()
}

/// What a judged attempt leaves: the request's outcome if it returns, else `None` (retained or
/// failed, recorded in the session).
#[inline]
pub(crate) fn settle(session: &mut Session<'_>, turn: Turn<'_>, judged: Judged) -> Option<Outcome> {
    let (attempted, class, overruled) = judged;
    let i = turn.i;
    session.traced(i, turn.number, || attempted.outcome(), class, overruled);
    match attempted {
        Attempted::Return(resp) => Some(Ok(session.returned_in_place(i, resp))),
        Attempted::Retain(resp) => {
            session.retain(i, resp);
            None
        }
        Attempted::Failed(err) => {
            session.fail(i, err);
            None
        }
    }
}

/// A hedged first attempt, to endpoint `first`: if it has not finished after `after`, the
/// session's [partner](Session::partner) is started too; the first answer to return wins and
/// the other is [abandoned](abandon).
struct Race<'s> {
    shared: &'s Shared,
    first: usize,
    after: Duration,
}

impl Race<'_> {
    async fn run<S: Sender>(
        self,
        session: &mut Session<'_>,
        req: reqwest::Request,
        ext: &mut Extensions,
        sender: &S,
    ) -> Option<Outcome> {
        let shared = self.shared;
        let (host, turn) = (session.host, turn_of(shared, session, self.first));
        let first = Box::pin(judged_attempt(shared, turn, req, host, ext, sender));
        let mut first = match select(first, Box::pin(tokio::time::sleep(self.after))).await {
            Either::Left((out, _)) => return settle(session, turn, out),
            Either::Right(((), first)) => first,
        };
        // The first attempt keeps its trial permit while the hedge is chosen and runs.
        let held = session.hold_trial();
        let mut partner = session.partner(self.first, self.after, false);
        if let Partner::Later = partner {
            let wait = crate::flow::session::reserve_hedge_after(self.after).saturating_sub(self.after);
            first = match select(first, Box::pin(tokio::time::sleep(wait))).await {
                Either::Left((out, _)) => {
                    drop(held);
                    return settle(session, turn, out);
                }
                Either::Right(((), first)) => first,
            };
            partner = session.partner(self.first, self.after, true);
        }
        let (j, req) = match partner {
            Partner::Send(j, req) => (j, req),
            Partner::None | Partner::Later => {
                let out = first.await;
                drop(held);
                return settle(session, turn, out);
            }
        };
        let hedge_turn = turn_of(shared, session, j);
        let mut hedge_ext = Extensions::new();
        let second = Box::pin(judged_attempt(shared, hedge_turn, req, host, &mut hedge_ext, sender));
        let racing = Racing { host, sender, held };
        match select(first, second).await {
            Either::Left((won, second)) => {
                self.settle_race(session, (turn, won), (hedge_turn, second), false, racing).await
            }
            Either::Right((won, first)) => {
                self.settle_race(session, (hedge_turn, won), (turn, first), true, racing).await
            }
        }
    }

    /// After the race: an answer to return abandons the other attempt. Anything else (the
    /// winner failed, or was kept for want of better) does not wait the other attempt out:
    /// the next candidate is sent at once beside it, a hedge of its own, and so on while the
    /// session has candidates (and the budget tokens); only then is the attempt still in
    /// flight awaited. So a hung attempt is never waited out while another endpoint could
    /// answer. `other_is_first`: the attempt still in flight is the first one.
    async fn settle_race<'f, F, S: Sender>(
        &self,
        session: &mut Session<'_>,
        won: (Turn<'f>, Judged),
        other: (Turn<'f>, Pin<Box<F>>),
        other_is_first: bool,
        racing: Racing<'_, '_, S>,
    ) -> Option<Outcome>
    where
        F: Future<Output = Judged> + Send + 'f,
    {
        let shared = self.shared;
        let ((won_turn, won), (mut other_turn, other)) = (won, other);
        let Racing { host, sender, held } = racing;
        if matches!(won.0, Attempted::Return(_)) {
            abandon(shared, session, other_turn, other, other_is_first);
            drop(held);
            return settle(session, won_turn, won);
        }
        let _ = settle(session, won_turn, won);
        // The extensions of the racers sent from here on, one each (made on this path only).
        let mut spare: Vec<Extensions> = (0..shared.slots.len()).map(|_| Extensions::new()).collect();
        let mut spare = spare.iter_mut();
        let mut other: Pin<Box<dyn Future<Output = Judged> + Send + '_>> = other;
        let mut other_is_first = other_is_first;
        loop {
            let next = match spare.len() {
                0 => Partner::None,
                // Beside an attempt that failed, the reserve may race the one in flight.
                _ => session.partner(self.first, self.after, true),
            };
            let (j, req, ext) = match (next, spare.next()) {
                (Partner::Send(j, req), Some(ext)) => (j, req, ext),
                _ => {
                    let out = other.await;
                    drop(held);
                    return settle(session, other_turn, out);
                }
            };
            let next_turn = turn_of(shared, session, j);
            let next = Box::pin(judged_attempt(shared, next_turn, req, host, ext, sender));
            let (won_turn, won, rest_turn, rest, rest_is_first): (
                _,
                _,
                _,
                Pin<Box<dyn Future<Output = Judged> + Send + '_>>,
                _,
            ) = match select(other, next).await {
                Either::Left((won, next)) => (other_turn, won, next_turn, next, false),
                Either::Right((won, other)) => (next_turn, won, other_turn, other, other_is_first),
            };
            if matches!(won.0, Attempted::Return(_)) {
                abandon(shared, session, rest_turn, rest, rest_is_first);
                drop(held);
                return settle(session, won_turn, won);
            }
            let _ = settle(session, won_turn, won);
            (other, other_turn, other_is_first) = (rest, rest_turn, rest_is_first);
        }
    }
}

/// What a race's later racers are sent with: the request's host rule, the sender, and the
/// first attempt's trial permit, held until the race ends.
struct Racing<'p, 's, S> {
    host: crate::request::destination::HostRule,
    sender: &'s S,
    held: Option<Permit<'p>>,
}

/// Gives up the attempt `turn` that lost a hedge's race (its future `loser`), once the other
/// has an answer to return, keeping its connection where that is cheap.
///
/// It is polled once more (no waiting): if it has just completed (both answered at once), its
/// outcome goes to the trace and the metrics as any attempt's, and its response is
/// [discarded](discard), which reads a small body of known length to its end so that the
/// connection goes back to the pool. Otherwise it is still waiting for its response's headers
/// (or its classifier is reading the body), and dropping it, which closes its connection, is
/// the only cheap choice: the future borrows the request, so finishing it would mean a task
/// per hedge and load on the provider for an answer nobody reads. A cancelled first attempt
/// (`first`) leaves the time it had run as a sample of its endpoint's recent latencies and of
/// its latency average (a lower bound), so that the slow tail a hedge cuts off is not
/// forgotten.
fn abandon<F>(shared: &Shared, session: &mut Session<'_>, turn: Turn<'_>, mut loser: Pin<Box<F>>, first: bool)
where
    F: Future<Output = Judged> + ?Sized,
{
    match (&mut loser).now_or_never() {
        Some((attempted, class, overruled)) => {
            session.traced(turn.i, turn.number, || attempted.outcome(), class, overruled);
            if let Attempted::Return(resp) | Attempted::Retain(resp) = attempted {
                discard(resp);
            }
        }
        None => {
            drop(loser);
            session.cancelled(turn.i, turn.number);
            if let (true, Some(paired), Some(started)) = (first, &shared.paired, turn.started) {
                // Evidence for the paired source: it did not answer while a later attempt did.
                // (A hedge that lost to an attempt started before it shows nothing: it ran for
                // less time than the answer that came first.) The source decides whether it is
                // a fault (a provider that hangs) or a slow answer (the tail a hedge cuts off).
                let endpoint = shared.slots[turn.i].id();
                let after = started.elapsed();
                paired.source.observe(endpoint, crate::health::source::Observation::Outrun { after });
            }
            if let (true, Some(started)) = (first, turn.started) {
                let slot = &shared.slots[turn.i];
                if let Some(recent) = &slot.recent {
                    recent.record(started.elapsed());
                }
                // Also a sample of its latency average: an endpoint whose every first attempt
                // is outrun would otherwise never be measured and stay first in the order.
                if shared.ordering.is_some() {
                    slot.latency.observe(started.elapsed());
                }
            }
        }
    }
}

/// Waits until the trial in flight at endpoint `i` ends, for at most the attempt timeout (the
/// session waits only when there is one); `false` when the bound passed first. Boxed: the
/// healthy path's future stays as small as before.
async fn wait_for_trial(shared: &Shared, i: usize, bound: Option<Duration>) -> bool {
    let Some(bound) = bound else { return false };
    Box::pin(tokio::time::timeout(bound, shared.slots[i].health.trial_ended())).await.is_ok()
}

/// Starts a request, as every caller of the loop does: the guard that tells a cancellation,
/// then the session. A request naming an endpoint that is not configured ends here: its error
/// comes back, already told as the request's `Result`.
pub(crate) fn begin<'a>(
    shared: &'a Shared,
    req: reqwest::Request,
    opts: &RequestOptions<'_>,
    scope: Option<&'a dyn Scope>,
) -> Result<(Session<'a>, CancelGuard<'a>), reqwest_middleware::Error> {
    let mut guard = guard(shared);
    #[cfg(feature = "redis")]
    if let Some(link) = &shared.fleet {
        crate::flow::fleet::refresh(link);
    }
    match Session::start(shared, req, opts, scope) {
        Ok(session) => Ok((session, guard)),
        Err(err) => {
            guard.armed = false;
            shared.emit(|| Event::Result { endpoint: None, outcome: ResultOutcome::Error(&err) });
            Err(err)
        }
    }
}

/// The guard that tells a request's cancellation (armed only when someone listens).
pub(crate) fn guard(shared: &Shared) -> CancelGuard<'_> {
    CancelGuard { events: &shared.events, armed: shared.events.is_active() }
}

/// Ends a request begun with [`begin`]: its `Result` event, and no `Cancelled` after it.
pub(crate) fn ended(shared: &Shared, mut guard: CancelGuard<'_>, outcome: Outcome) -> Outcome {
    guard.armed = false;
    emit_result(shared, &outcome);
    outcome
}

/// Marks a returned response with the endpoint that produced it.
pub(crate) fn served(shared: &Shared, outcome: Outcome) -> reqwest_middleware::Result<Response> {
    outcome.map(|(mut resp, i)| {
        resp.extensions_mut().insert(ServedBy(shared.slots[i].id().clone()));
        resp
    })
}

/// Emits the request's `Result` event.
fn emit_result(shared: &Shared, outcome: &Outcome) {
    match outcome {
        Ok((resp, i)) => {
            let (endpoint, outcome) = (shared.slots[*i].id(), ResultOutcome::Status(resp.status()));
            shared.emit(|| Event::Result { endpoint: Some(endpoint), outcome });
        }
        Err(err) => shared.emit(|| Event::Result { endpoint: None, outcome: ResultOutcome::Error(err) }),
    }
}

/// Emits `Result { Cancelled }` if the request's future is dropped before it finishes.
pub(crate) struct CancelGuard<'a> {
    events: &'a Emitter,
    armed: bool,
}

impl Drop for CancelGuard<'_> {
    fn drop(&mut self) {
        if self.armed && !std::thread::panicking() {
            self.events.emit(&Event::Result { endpoint: None, outcome: ResultOutcome::Cancelled });
        }
    }
}

#[cfg(test)]
mod size {
    use super::*;

    /// A plain client as the sender, as a caller that owns one sends.
    #[derive(Clone, Copy)]
    struct Direct<'c>(&'c reqwest::Client);

    impl Sender for Direct<'_> {
        async fn send(
            &self,
            req: reqwest::Request,
            _: &mut Extensions,
        ) -> reqwest_middleware::Result<Response> {
            self.0.execute(req).await.map_err(reqwest_middleware::Error::Reqwest)
        }
    }

    /// The future every request carries (moved into the box `async_trait` makes for `handle`):
    /// the session and the first attempt, not the rest of the loop, which is boxed on its own
    /// only when the first attempt does not settle the request. Measured with the direct
    /// sender (reqwest's own 304-byte future inline; down a middleware chain it is a 16-byte
    /// box): 2168 B when it was boxed apart, 2312 B since (the plan's reserve order, the
    /// paired heads); the whole loop inline was 3464 B (2592 B before hedging became a
    /// step). A regression guard with some room.
    #[test]
    fn the_first_attempts_future_stays_small_and_the_rest_is_boxed_apart() {
        let failover =
            crate::Failover::builder([crate::Endpoint::new("a", "http://127.0.0.1:1/")]).build().unwrap();
        let client = reqwest::Client::new();
        let req = client.get("http://127.0.0.1:1/").build().unwrap();
        let none = Extensions::new();
        let opts = RequestOptions::read(&none);
        let shared = failover.shared();
        let session = Session::start(shared, req, &opts, None).unwrap();
        let mut ext = Extensions::new();
        let direct = Direct(&client);
        let fut = run(shared, session, &mut ext, &direct);
        let size = std::mem::size_of_val(&fut);
        assert!(size <= 2368, "run's future grew to {size} B");
        assert!(std::mem::size_of::<Session<'_>>() <= 800, "{} B", std::mem::size_of::<Session<'_>>());
    }
}

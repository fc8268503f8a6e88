//! `Failover` and its attempt loop. The decisions live in `session` (what next), `select`,
//! `permission`, `replay` and `judge`.

use std::fmt;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::time::Instant;

use http::Extensions;
use reqwest::{Request, Response};
use reqwest_middleware::{Middleware, Next};

use crate::classify::{Class, Classified, Classifier, Evidence, Judgement, Verdict};
use crate::destination::HostRule;
use crate::drain::discard;
use crate::endpoint::{Endpoint, EndpointId};
use crate::error::ClassifierPanicked;
use crate::event::{AttemptOutcome, Emitter, Event, ResultOutcome};
use crate::judge;
use crate::options::{RequestOptions, ServedBy};
use crate::session::{Outcome, Rebuild, Session, Step};
use crate::shared::Shared;
use crate::slot::position;

/// The failover middleware: sends each request to the first usable endpoint of an ordered
/// set, and to the next one only when that is safe.
///
/// Add it to a `reqwest_middleware::ClientBuilder`. Middlewares added before it run once per
/// request; those added after it run once per attempt. Cloning is cheap and clones share
/// cooldown state. See the [crate documentation](crate) for the rules.
///
/// ```
/// use failnext::{Endpoint, Failover};
///
/// let failover = Failover::builder([
///     Endpoint::new("primary", "http://127.0.0.1:8545/rpc"),
///     Endpoint::new("backup", "http://127.0.0.1:8546/rpc"),
/// ])
/// .build()?;
/// let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
///     .with(failover)
///     .build();
/// # drop(client);
/// # Ok::<(), failnext::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct Failover {
    shared: Arc<Shared>,
}

/// What one attempt produced, as judged.
enum Attempted {
    /// Judged `Return`: the response to return.
    Return(Response),
    /// Judged `FailOver` (a trigger status, or flagged by the classifier): kept while the next
    /// endpoint is tried.
    Retain(Response),
    /// No response (a transport error, a classifier's `Failed`, a classifier panic); the error
    /// has no URL.
    Failed(reqwest_middleware::Error),
}

impl Attempted {
    /// How it ended, for a trace: the status, or the error (it has no URL).
    fn outcome(&self) -> String {
        match self {
            Attempted::Return(resp) | Attempted::Retain(resp) => resp.status().to_string(),
            Attempted::Failed(err) => err.to_string(),
        }
    }

    /// A response, returned or retained as the verdict says.
    fn response(resp: Response, verdict: Verdict) -> Attempted {
        match verdict {
            Verdict::Return => Attempted::Return(resp),
            Verdict::FailOver { .. } => Attempted::Retain(resp),
        }
    }
}

/// One attempt: to endpoint `i`, the request's attempt `number`, holding the trial permit of
/// epoch `trial` when it is its breaker's trial, sent at `started`.
#[derive(Clone, Copy, Debug)]
struct Turn {
    i: usize,
    number: u32,
    trial: Option<u64>,
    /// When it was sent, if anyone needs to know (events, latency-aware ordering).
    started: Option<Instant>,
    /// How long it may take: the attempt timeout, or what is left of the deadline.
    limit: Option<Duration>,
    /// The deadline, not the attempt timeout, bounds it.
    by_deadline: bool,
}

/// What sending an attempt produced: settled already, or a response the classifier is now
/// judging (its future, `None` when the call itself panicked, and the response's
/// `Retry-After`). `run` awaits the classifier, so that no future holds a response across an
/// await.
enum Sent<'a> {
    Settled(Attempted, Class),
    Judging(Option<Judging<'a>>, Option<Duration>),
}

// ===== impl Failover =====

impl Failover {
    pub(crate) fn from_shared(shared: Shared) -> Failover {
        Failover { shared: Arc::new(shared) }
    }

    #[cfg(test)]
    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    /// The configured endpoints, in priority order.
    pub fn endpoints(&self) -> &[Endpoint] {
        &self.shared.endpoints
    }

    /// Whether the endpoint `id` is cooling down now (its breaker is open), so requests skip
    /// it, except the breaker's last resort. `false` when half-open, for an unknown id and when
    /// cooldown is disabled. Takes a short internal lock; safe to call from hooks.
    pub fn is_cooling_down(&self, id: &str) -> bool {
        let slots = &self.shared.slots;
        position(slots, id).is_some_and(|i| slots[i].health.cooling_until().is_some())
    }
}

impl fmt::Debug for Failover {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shared = &*self.shared;
        f.debug_struct("Failover")
            .field("endpoints", &shared.endpoints)
            .field("eligible", &shared.eligible.as_ref().map(|_| "<fn>"))
            .field("permission_policy", &shared.policy.as_ref().map(|_| "<fn>"))
            .field("additional_trigger_status_codes", &shared.triggers)
            .field("classifier", &shared.classifier.as_ref().map(|_| "<classifier>"))
            .field("cooldown", &shared.cooldown)
            .field("attempt_timeout", &shared.attempt_timeout)
            .field("on_event", &shared.events.has_hook().then_some("<fn>"))
            .finish()
    }
}

#[async_trait::async_trait]
impl Middleware for Failover {
    async fn handle(
        &self,
        req: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        let shared = &*self.shared;
        let mut guard = CancelGuard { events: &shared.events, armed: shared.events.is_active() };
        #[cfg(feature = "alloy")]
        let observer = extensions.get::<crate::session::Observer>().cloned();
        let started = Session::start(shared, req, &RequestOptions::read(extensions));
        #[cfg(feature = "alloy")]
        let started = started.map(|s| s.observe_with(observer.as_ref().map(|o| &*o.0)));
        let outcome = match started {
            Ok(session) => run(shared, session, extensions, &next).await,
            Err(err) => Err(err),
        };
        guard.armed = false;
        finish(shared, outcome)
    }
}

/// How an attempt is sent: down the rest of the middleware chain ([`Next`]), or, for a caller
/// that owns a plain client (the alloy transport), straight to it.
pub(crate) trait Sender: Clone + Send + Sync {
    /// Sends one attempt.
    fn send<'s>(
        &'s self,
        req: Request,
        ext: &'s mut Extensions,
    ) -> impl Future<Output = reqwest_middleware::Result<Response>> + Send + 's;
}

impl Sender for Next<'_> {
    fn send<'s>(
        &'s self,
        req: Request,
        ext: &'s mut Extensions,
    ) -> impl Future<Output = reqwest_middleware::Result<Response>> + Send + 's {
        self.clone().run(req, ext)
    }
}

/// A plain `reqwest::Client` as the sender: no middleware chain.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(not(feature = "alloy"), allow(dead_code, reason = "used by the alloy transport"))]
pub(crate) struct Direct<'c>(pub(crate) &'c reqwest::Client);

impl Sender for Direct<'_> {
    async fn send(&self, req: Request, _ext: &mut Extensions) -> reqwest_middleware::Result<Response> {
        self.0.execute(req).await.map_err(reqwest_middleware::Error::Reqwest)
    }
}

impl Failover {
    /// One request sent through this `Failover` on `client` directly, without a middleware
    /// chain and without options in extensions: what the alloy transport does when it owns its
    /// client. The response is not marked with `ServedBy`; the endpoint's index comes back.
    /// `observer` is told about each response the request fails over from.
    #[cfg_attr(not(feature = "alloy"), allow(dead_code, reason = "used by the alloy transport"))]
    pub(crate) async fn execute_direct(
        &self,
        client: &reqwest::Client,
        req: Request,
        opts: &RequestOptions<'_>,
        rebuild: &(dyn Rebuild + '_),
        observer: Option<&(dyn crate::session::Observe + '_)>,
    ) -> Outcome {
        let shared = &*self.shared;
        let mut guard = CancelGuard { events: &shared.events, armed: shared.events.is_active() };
        let mut ext = Extensions::new();
        let outcome = match Session::start(shared, req, opts) {
            Ok(session) => {
                let session = session.rebuild_with(rebuild).observe_with(observer);
                run(shared, session, &mut ext, &Direct(client)).await
            }
            Err(err) => Err(err),
        };
        guard.armed = false;
        emit_result(shared, &outcome);
        outcome
    }

    /// Every endpoint's health now (breaker state, open-until as a wall-clock deadline, latency
    /// average), to restore after a restart; see [`HealthSnapshot`](crate::HealthSnapshot).
    pub fn health(&self) -> crate::HealthSnapshot {
        let now = std::time::SystemTime::now();
        let endpoints = self
            .shared
            .slots
            .iter()
            .map(|slot| {
                crate::persist::EndpointHealth::of(slot.id(), slot.health.export(), slot.latency.get(), now)
            })
            .collect();
        crate::HealthSnapshot { taken_at: now, endpoints }
    }

    /// Takes over `snapshot` (from [`health`](Failover::health), before a restart), endpoint by
    /// endpoint, by id: open times continue until their deadline (one that passed meanwhile
    /// leaves the breaker half-open), failed trials keep growing the next open time, latency
    /// averages are kept. Ids not configured here are ignored. Returns how many endpoints took
    /// their state over. Meant for a fresh `Failover`: it replaces what this one has learnt.
    pub fn restore_health(&self, snapshot: &crate::HealthSnapshot) -> usize {
        let now = std::time::SystemTime::now();
        let slots = &self.shared.slots;
        let mut restored = 0;
        for kept in snapshot.endpoints() {
            if let Some(i) = position(slots, kept.id()) {
                slots[i].health.import(&kept.kept(now));
                if let Some(latency) = kept.latency() {
                    slots[i].latency.observe(latency);
                }
                restored += 1;
            }
        }
        restored
    }

    /// A handle that feeds latency samples into this `Failover` without keeping it alive (a
    /// weak reference): what a monitor holds when it passes its probe latencies on, so that
    /// the `Failover` (which holds the monitor as its eligibility) and the monitor do not keep
    /// each other forever. See [`LatencyFeed`](crate::LatencyFeed).
    pub fn latency_feed(&self) -> crate::LatencyFeed {
        crate::LatencyFeed(Arc::downgrade(&self.shared))
    }

    /// Adds a latency sample for endpoint `id` to its average (see [`LatencyOrdering`]): a
    /// monitor's probe latency, say. Does nothing for an unknown id or without latency-aware
    /// ordering.
    ///
    /// [`LatencyOrdering`]: crate::LatencyOrdering
    pub fn observe_latency(&self, id: &str, latency: Duration) {
        self.shared.observe_latency(id, latency);
    }

    /// The id of endpoint `i`.
    #[cfg_attr(not(feature = "alloy"), allow(dead_code, reason = "used by the alloy transport"))]
    pub(crate) fn endpoint_id(&self, i: usize) -> &EndpointId {
        self.shared.slots[i].id()
    }

    /// The URL attempts to the first endpoint are sent to: a request addressed there is not
    /// re-addressed for that attempt (one URL copy less).
    #[cfg_attr(not(feature = "alloy"), allow(dead_code, reason = "used by the alloy transport"))]
    pub(crate) fn first_url(&self) -> Option<&url::Url> {
        self.shared.slots.first().map(|slot| slot.destination.url())
    }
}

/// The attempt loop: the session says where to send, the judge what the outcome means.
async fn run<S: Sender>(
    shared: &Shared,
    mut session: Session<'_>,
    ext: &mut Extensions,
    sender: &S,
) -> Outcome {
    loop {
        let (i, req) = match session.next() {
            Step::Send(i, req) => (i, req),
            Step::Wait(i) => {
                if !wait_for_trial(shared, i, session.limit().0).await {
                    session.wait_timed_out(i);
                }
                continue;
            }
            Step::Stop(reason) => return session.stop(reason),
        };
        let turn = turn_of(shared, &session, i);
        if let Some(delay) = session.may_hedge(i) {
            // Boxed: the loop's future stays as small as without hedging.
            if let Some(outcome) = Box::pin(hedged(shared, &mut session, turn, req, ext, sender, delay)).await
            {
                return outcome;
            }
            continue;
        }
        let attempted = 'judged: {
            // A statement of its own: the sent value is gone before the classifier is awaited.
            let (judging, retry_after) = match attempt(shared, turn, req, session.host, ext, sender).await {
                Sent::Settled(attempted, class) => break 'judged (attempted, class),
                Sent::Judging(judging, retry_after) => (judging, retry_after),
            };
            classified_attempt(shared, turn, classify(judging).await, retry_after)
        };
        if let Some(outcome) = settle(shared, &mut session, turn, attempted) {
            return outcome;
        }
    }
}

/// The attempt `session` is about to send to endpoint `i`.
#[inline]
fn turn_of(shared: &Shared, session: &Session<'_>, i: usize) -> Turn {
    // Timed only when someone looks: an event hook, latency-aware ordering, metrics, a
    // percentile hedge (which keeps the endpoint's recent latencies).
    let timed = shared.events.is_active()
        || shared.ordering.is_some()
        || cfg!(feature = "metrics")
        || shared.slots[i].recent.is_some();
    let (limit, by_deadline) = session.limit();
    Turn {
        i,
        number: session.sent,
        trial: session.trial(),
        started: timed.then(Instant::now),
        limit,
        by_deadline,
    }
}

/// What a judged attempt leaves: the request's outcome if it returns, else `None` (retained or
/// failed, recorded in the session).
#[inline]
fn settle(
    shared: &Shared,
    session: &mut Session<'_>,
    turn: Turn,
    judged: (Attempted, Class),
) -> Option<Outcome> {
    let (attempted, class) = judged;
    let i = turn.i;
    session.traced(i, turn.number, || attempted.outcome(), class);
    #[cfg(feature = "metrics")]
    {
        let endpoint = shared.slots[i].id();
        crate::metrics::attempt(endpoint, class, turn.started.map(|s| s.elapsed()));
        if !matches!(attempted, Attempted::Return(_)) {
            crate::metrics::failover(endpoint);
        }
    }
    #[cfg(not(feature = "metrics"))]
    let _ = shared;
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

/// One of two outcomes.
enum Either<A, B> {
    Left(A),
    Right(B),
}

/// Whichever of `a` and `b` finishes first (`a` when both are ready); the other stays pending
/// for the caller to await or drop.
async fn race<A, B>(a: &mut A, b: &mut B) -> Either<A::Output, B::Output>
where
    A: Future + Unpin,
    B: Future + Unpin,
{
    std::future::poll_fn(|cx| {
        if let Poll::Ready(out) = Pin::new(&mut *a).poll(cx) {
            return Poll::Ready(Either::Left(out));
        }
        if let Poll::Ready(out) = Pin::new(&mut *b).poll(cx) {
            return Poll::Ready(Either::Right(out));
        }
        Poll::Pending
    })
    .await
}

/// One attempt, sent and judged.
async fn judged_attempt<S: Sender>(
    shared: &Shared,
    turn: Turn,
    req: Request,
    host: HostRule,
    ext: &mut Extensions,
    sender: &S,
) -> (Attempted, Class) {
    match attempt(shared, turn, req, host, ext, sender).await {
        Sent::Settled(attempted, class) => (attempted, class),
        Sent::Judging(judging, retry_after) => {
            classified_attempt(shared, turn, classify(judging).await, retry_after)
        }
    }
}

/// The first attempt, hedged after `delay`: if it has not finished then, the next candidate
/// is started too; the first answer to return wins and the other is [abandoned](abandon).
/// Boxed where it starts, so that the healthy path without a hedge keeps its size.
#[allow(clippy::too_many_arguments, reason = "the loop's own state, passed through")]
async fn hedged<S: Sender>(
    shared: &Shared,
    session: &mut Session<'_>,
    turn: Turn,
    req: Request,
    ext: &mut Extensions,
    sender: &S,
    delay: Duration,
) -> Option<Outcome> {
    let host = session.host;
    let mut first = Box::pin(judged_attempt(shared, turn, req, host, ext, sender));
    let mut timer = Box::pin(tokio::time::sleep(delay));
    let early = match race(&mut first, &mut timer).await {
        Either::Left(out) => Some(out),
        Either::Right(()) => None,
    };
    if let Some(out) = early {
        return settle(shared, session, turn, out);
    }
    // The first attempt keeps its trial permit while the next step is decided.
    let held = session.hold_trial();
    session.hedge_to_fastest();
    let (j, req) = match session.next() {
        Step::Send(j, req) => (j, req),
        // Nothing to hedge with: wait for the first attempt alone.
        Step::Wait(_) | Step::Stop(_) => {
            let out = first.await;
            drop(held);
            return settle(shared, session, turn, out);
        }
    };
    session.hedging(j, turn.i, delay);
    let hedge_turn = turn_of(shared, session, j);
    let mut hedge_ext = Extensions::new();
    let mut second = Box::pin(judged_attempt(shared, hedge_turn, req, host, &mut hedge_ext, sender));
    let (first_won, won) = match race(&mut first, &mut second).await {
        Either::Left(out) => (true, out),
        Either::Right(out) => (false, out),
    };
    let won_turn = if first_won { turn } else { hedge_turn };
    if matches!(won.0, Attempted::Return(_)) {
        if first_won {
            abandon(shared, session, hedge_turn, second, false);
        } else {
            abandon(shared, session, turn, first, true);
        }
        drop(held);
        return settle(shared, session, won_turn, won);
    }
    let _ = settle(shared, session, won_turn, won);
    let (rest_turn, rest) = if first_won { (hedge_turn, second.await) } else { (turn, first.await) };
    drop(held);
    settle(shared, session, rest_turn, rest)
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
fn abandon<F>(shared: &Shared, session: &mut Session<'_>, turn: Turn, mut loser: Pin<Box<F>>, first: bool)
where
    F: Future<Output = (Attempted, Class)>,
{
    match loser.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready((attempted, class)) => {
            session.traced(turn.i, turn.number, || attempted.outcome(), class);
            #[cfg(feature = "metrics")]
            crate::metrics::attempt(shared.slots[turn.i].id(), class, turn.started.map(|s| s.elapsed()));
            if let Attempted::Return(resp) | Attempted::Retain(resp) = attempted {
                discard(resp);
            }
        }
        Poll::Pending => {
            drop(loser);
            session.cancelled(turn.i, turn.number);
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

/// Sends attempt `number` to endpoint `i` and learns from its outcome: the events, the
/// judgement and the health evidence. A response that goes on to the classifier comes back as
/// [`Sent::Judging`]; `run` awaits the classifier and [`classified_attempt`] finishes the job.
///
/// With no classifier configured nothing here is boxed or allocated: the classifier's future
/// (boxed by `async_trait`) exists only for a response that reaches a configured classifier.
async fn attempt<'a, S: Sender>(
    shared: &'a Shared,
    turn: Turn,
    mut req: Request,
    host: HostRule,
    ext: &mut Extensions,
    sender: &S,
) -> Sent<'a> {
    let Turn { i, number, .. } = turn;
    let slot = &shared.slots[i];
    slot.destination.retarget(&mut req, host, turn.limit);
    let started = turn.started;
    // Matched in place, not mapped: the healthy path moves the response no further.
    match sender.send(req, ext).await {
        Ok(resp) => {
            let status = resp.status();
            emit_attempt(shared, i, number, AttemptOutcome::Status(status), started);
            // Read before a classifier takes the response; one comparison for other statuses.
            let retry_after = judge::retry_after(status, resp.headers());
            let judgement = match (judge::by_status(&shared.triggers, status), &shared.classifier) {
                (Some(judgement), _) => judgement,
                (None, None) => Judgement::answer(),
                (None, Some(classifier)) => {
                    return Sent::Judging(start_classifying(&**classifier, slot.id(), resp), retry_after);
                }
            };
            // Without a classifier the response stays where it is until it is handed on.
            conclude(shared, turn, judgement, retry_after);
            Sent::Settled(Attempted::response(resp, judgement.verdict), judgement.class)
        }
        Err(err) => {
            let err = err.without_url();
            emit_attempt(shared, i, number, AttemptOutcome::Error(&err), started);
            // An error has no response to return: it always fails over. Cut short by the
            // request's deadline, it says nothing about the endpoint.
            let judged = if turn.by_deadline && err.is_timeout() {
                Judgement { evidence: Evidence::Neutral, ..judge::TRANSPORT }
            } else {
                judge::TRANSPORT
            };
            conclude(shared, turn, judged, None);
            Sent::Settled(Attempted::Failed(err), judged.class)
        }
    }
}

/// What the classifier's answer on attempt `number` to endpoint `i` makes of the attempt.
fn classified_attempt(
    shared: &Shared,
    turn: Turn,
    classified: Classified,
    retry_after: Option<Duration>,
) -> (Attempted, Class) {
    match classified {
        Classified::Response(resp, judgement) => {
            conclude(shared, turn, judgement, retry_after);
            (Attempted::response(resp, judgement.verdict), judgement.class)
        }
        Classified::Failed(err, judgement) => {
            // No response is left to return: the attempt fails over, whatever the verdict.
            let verdict = match judgement.verdict {
                Verdict::FailOver { cool_for } => Verdict::FailOver { cool_for },
                Verdict::Return => Verdict::FailOver { cool_for: None },
            };
            conclude(shared, turn, Judgement { verdict, ..judgement }, retry_after);
            (Attempted::Failed(err.without_url()), judgement.class)
        }
    }
}

/// Emits the `Attempt` event of attempt `number` to endpoint `i`.
fn emit_attempt(
    shared: &Shared,
    i: usize,
    number: u32,
    outcome: AttemptOutcome<'_>,
    started: Option<Instant>,
) {
    let elapsed = started.map(|s| s.elapsed()).unwrap_or_default();
    let endpoint = shared.slots[i].id();
    shared.emit(|| Event::Attempt { endpoint, attempt: number, outcome, elapsed });
}

/// After the judgement: emits its `Judged` event, then tells endpoint `i`'s health the
/// evidence, with the hint (the verdict's `cool_for`, else the `Retry-After` read).
fn conclude(shared: &Shared, turn: Turn, judgement: Judgement, retry_after: Option<Duration>) {
    let Turn { i, number, trial, started, .. } = turn;
    let slot = &shared.slots[i];
    let keeps = shared.ordering.is_some() || slot.recent.is_some();
    if let (true, Some(started), Evidence::Success) = (keeps, started, judgement.evidence) {
        let elapsed = started.elapsed();
        if shared.ordering.is_some() {
            slot.latency.observe(elapsed);
        }
        if let Some(recent) = &slot.recent {
            recent.record(elapsed);
        }
    }
    let endpoint = slot.id();
    let Judgement { verdict, evidence, class } = judgement;
    shared.emit(|| Event::Judged { endpoint, attempt: number, class, verdict, evidence });
    if let Some(state) = slot.health.record(evidence, judge::hint(verdict, retry_after), trial) {
        shared.emit(|| Event::Breaker { endpoint, state });
        #[cfg(feature = "metrics")]
        crate::metrics::breaker(endpoint, state);
    }
}

/// What a classifier that panicked is judged: the response is gone with the panic, so the
/// attempt failed; a classifier's bug says nothing about the endpoint.
const PANICKED: Judgement =
    Judgement::new(Verdict::FailOver { cool_for: None }, Evidence::Neutral, Class::Broken);

/// The classifier's future on one response, boxed by `async_trait`.
type Judging<'a> = Pin<Box<dyn Future<Output = Classified> + Send + 'a>>;

/// Calls the classifier on `resp`; `None` when the call itself panicked (a panic while its
/// future runs is caught by [`CatchUnwind`]).
fn start_classifying<'a>(
    classifier: &'a dyn Classifier,
    endpoint: &'a EndpointId,
    resp: Response,
) -> Option<Judging<'a>> {
    catch_unwind(AssertUnwindSafe(|| classifier.classify(endpoint, resp))).ok()
}

/// The classifier's answer; a panic while its future runs (or, `None`, in the call) becomes
/// [`panicked`].
async fn classify(judging: Option<Judging<'_>>) -> Classified {
    match judging {
        Some(judging) => CatchUnwind(judging).await.unwrap_or_else(|_payload| panicked()),
        None => panicked(),
    }
}

/// What an attempt whose classifier panicked ends with: an error saying so, judged
/// [`PANICKED`]. The panic's message is not kept: it could carry the response's URL.
fn panicked() -> Classified {
    Classified::Failed(reqwest_middleware::Error::middleware(ClassifierPanicked), PANICKED)
}

/// A future that turns a panic while polling `F` into `Err` (failnext has no `futures`
/// dependency for `FutureExt::catch_unwind`). After a panic the inner future is not polled
/// again; the caller drops it.
struct CatchUnwind<F>(F);

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = std::thread::Result<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = Pin::new(&mut self.0);
        match catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(out)) => Poll::Ready(Ok(out)),
            Err(payload) => Poll::Ready(Err(payload)),
        }
    }
}

/// Marks the response with the endpoint that produced it and emits the request's `Result`.
fn finish(shared: &Shared, outcome: Outcome) -> reqwest_middleware::Result<Response> {
    emit_result(shared, &outcome);
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
struct CancelGuard<'a> {
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

    /// The attempt loop's future is moved into the box `async_trait` makes for `handle` on
    /// every request (and copied in its moves): measured 2592 B (Session 720 B, of which the
    /// request 264 B) when this was written. A regression guard, with some room.
    #[test]
    fn the_attempt_loops_future_stays_under_3_kib() {
        let failover =
            crate::Failover::builder([crate::Endpoint::new("a", "http://127.0.0.1:1/")]).build().unwrap();
        let client = reqwest::Client::new();
        let req = client.get("http://127.0.0.1:1/").build().unwrap();
        let none = Extensions::new();
        let opts = RequestOptions::read(&none);
        let shared = failover.shared();
        let session = Session::start(shared, req, &opts).unwrap();
        let mut ext = Extensions::new();
        let direct = Direct(&client);
        let fut = run(shared, session, &mut ext, &direct);
        let size = std::mem::size_of_val(&fut);
        assert!(size <= 3072, "run's future grew to {size} B");
        assert!(std::mem::size_of::<Session<'_>>() <= 800, "{} B", std::mem::size_of::<Session<'_>>());
    }
}

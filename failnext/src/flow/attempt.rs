//! One attempt: sent to one endpoint, then judged (status, then the classifier), and what
//! the endpoint's health learns from it. No decision about the request is made here: the
//! request's loop (`run`) and its `Session` decide what comes next.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::time::Duration;

use futures_util::FutureExt as _;
use http::Extensions;
use reqwest::{Request, Response};
use reqwest_middleware::Next;
use tokio::time::Instant;

use crate::events::error::ClassifierPanicked;
use crate::events::event::{AttemptOutcome, Event};
use crate::flow::shared::Shared;
use crate::judging::classify::{Class, Classified, Classifier, Evidence, Judgement, Verdict};
use crate::judging::judge;
use crate::judging::scope::{Scope, Unfit};
use crate::request::destination::HostRule;
use crate::request::endpoint::EndpointId;

/// What one attempt produced, as judged.
pub(crate) enum Attempted {
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
    pub(crate) fn outcome(&self) -> String {
        match self {
            Attempted::Return(resp) | Attempted::Retain(resp) => resp.status().to_string(),
            // With its causes: "error sending request" alone says neither "refused" nor
            // "timed out".
            Attempted::Failed(err) => crate::events::error::WithCauses(err).to_string(),
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
#[derive(Clone, Copy)]
pub(crate) struct Turn<'a> {
    pub(crate) i: usize,
    pub(crate) number: u32,
    pub(crate) trial: Option<u64>,
    /// When it was sent, if anyone needs to know (events, latency-aware ordering).
    pub(crate) started: Option<Instant>,
    /// How long it may take: the attempt timeout, or what is left of the deadline.
    pub(crate) limit: Option<Duration>,
    /// The deadline, not the attempt timeout, bounds it.
    pub(crate) by_deadline: bool,
    /// The request's scope, which reviews each judgement.
    pub(crate) scope: Option<&'a dyn Scope>,
    /// Its answer's head is judged against the best known head (a paired `eth_blockNumber`).
    pub(crate) heads: bool,
}

/// A judged attempt: what it produced, how it was judged, and why the request's scope
/// overruled it, if it did.
pub(crate) type Judged = (Attempted, Class, Option<Unfit>);

/// What sending an attempt produced: settled already, or a response the classifier is now
/// judging (its future, `None` when the call itself panicked, and the response's
/// `Retry-After`). `run` awaits the classifier, so that no future holds a response across an
/// await.
pub(crate) enum Sent<'a> {
    Settled(Attempted, Class, Option<Unfit>),
    Judging(Option<Judging<'a>>, Option<Duration>),
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

/// One attempt, sent and judged: [`dispatch`], then [`judged`] (for a future of its own,
/// such as a hedge's race).
pub(crate) async fn judged_attempt<S: Sender>(
    shared: &Shared,
    turn: Turn<'_>,
    req: Request,
    host: HostRule,
    ext: &mut Extensions,
    sender: &S,
) -> Judged {
    let sending = std::pin::pin!(dispatch(shared, turn, req, host, ext, sender));
    judged(shared, &turn, sending).await
}

/// Sends attempt `turn`: points the request at its endpoint and hands it to `sender`. The
/// future returned holds the request, once (the loop pins it where it awaits it, and
/// [`judged`] borrows it): nothing on the way copies the request again.
pub(crate) fn dispatch<'s, S: Sender>(
    shared: &Shared,
    turn: Turn<'_>,
    mut req: Request,
    host: HostRule,
    ext: &'s mut Extensions,
    sender: &'s S,
) -> impl Future<Output = reqwest_middleware::Result<Response>> + Send + 's {
    shared.slots[turn.i].destination.retarget(&mut req, host, turn.limit);
    sender.send(req, ext)
}

/// Awaits the attempt `sending` (from [`dispatch`]) and judges it: the events, the
/// judgement and the health evidence. A response a classifier judges is handed to it; its
/// answer is finished by [`classified_attempt`].
///
/// With no classifier configured nothing here is boxed or allocated: the classifier's future
/// (boxed by `async_trait`) exists only for a response that reaches a configured classifier.
pub(crate) async fn judged<F>(shared: &Shared, turn: &Turn<'_>, sending: Pin<&mut F>) -> Judged
where
    F: Future<Output = reqwest_middleware::Result<Response>>,
{
    let sent = sending.await;
    let (judging, retry_after) = match on_sent(shared, *turn, sent) {
        Sent::Settled(attempted, class, overruled) => return (attempted, class, overruled),
        Sent::Judging(judging, retry_after) => (judging, retry_after),
    };
    classified_attempt(shared, *turn, classify(judging).await, retry_after)
}

/// What attempt `turn`'s result is, as far as its status (or error) says; a response left to
/// the classifier comes back as [`Sent::Judging`].
fn on_sent<'a>(shared: &'a Shared, turn: Turn<'_>, sent: reqwest_middleware::Result<Response>) -> Sent<'a> {
    let Turn { i, number, .. } = turn;
    let slot = &shared.slots[i];
    let started = turn.started;
    // Matched in place, not mapped: the healthy path moves the response no further.
    match sent {
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
            let (judgement, overruled) = review(shared, &turn, Some(&resp), judgement);
            // Without a classifier the response stays where it is until it is handed on.
            conclude(shared, turn, judgement, retry_after, overruled.as_ref());
            Sent::Settled(Attempted::response(resp, judgement.verdict), judgement.class, overruled)
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
            let _ = review(shared, &turn, None, judged);
            conclude(shared, turn, judged, None, None);
            Sent::Settled(Attempted::Failed(err), judged.class, None)
        }
    }
}

/// What the classifier's answer on attempt `number` to endpoint `i` makes of the attempt.
fn classified_attempt(
    shared: &Shared,
    turn: Turn<'_>,
    classified: Classified,
    retry_after: Option<Duration>,
) -> Judged {
    match classified {
        Classified::Response(resp, judgement) => {
            let (judgement, overruled) = review(shared, &turn, Some(&resp), judgement);
            conclude(shared, turn, judgement, retry_after, overruled.as_ref());
            (Attempted::response(resp, judgement.verdict), judgement.class, overruled)
        }
        Classified::Failed(err, judgement) => {
            // No response is left to return: the attempt fails over, whatever the verdict.
            let verdict = match judgement.verdict {
                Verdict::FailOver { cool_for } => Verdict::FailOver { cool_for },
                Verdict::Return => Verdict::FailOver { cool_for: None },
            };
            let judgement = Judgement { verdict, ..judgement };
            let _ = review(shared, &turn, None, judgement);
            conclude(shared, turn, judgement, retry_after, None);
            (Attempted::Failed(err.without_url()), judgement.class, None)
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
fn conclude(
    shared: &Shared,
    turn: Turn<'_>,
    judgement: Judgement,
    retry_after: Option<Duration>,
    overruled: Option<&Unfit>,
) {
    observe(shared, &turn, &judgement, overruled);
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
    let Judgement { verdict, evidence, class, .. } = judgement;
    shared.emit(|| Event::Judged { endpoint, attempt: number, class, verdict, evidence, overruled });
    // Credentials or payment refused: the endpoint pauses for minutes, growing while it lasts.
    let hint = match class {
        Class::Unauthorized | Class::Payment => Some(slot.account_refused()),
        _ if evidence == Evidence::Success => {
            slot.account_answered();
            judge::hint(verdict, retry_after)
        }
        _ => judge::hint(verdict, retry_after),
    };
    if let Some(state) = slot.health.record(evidence, hint, trial) {
        shared.emit(|| Event::Breaker { endpoint, state });
    }
}

/// The request's scope reviews attempt `turn`'s judgement (and learns from it): an answer to
/// return that is no answer for this request is overruled, `FailOver` and `Neutral`, as
/// [`Class::Stale`], with why. A judgement that fails over already stands (a 503 stays a
/// failure of its endpoint); so does every judgement without a scope.
///
/// Before the scope, a paired `eth_blockNumber`'s head is judged against the best known head
/// ([`Paired::judge_head`](crate::health::paired::Paired::judge_head)): one far behind or implausible
/// is overruled the same way, but as a failure of its endpoint (`Evidence::Failure`).
fn review(
    shared: &Shared,
    turn: &Turn<'_>,
    response: Option<&Response>,
    judgement: Judgement,
) -> (Judgement, Option<Unfit>) {
    let overrule = |evidence| Judgement {
        verdict: Verdict::FailOver { cool_for: None },
        evidence,
        class: Class::Stale,
        ..judgement
    };
    if let (true, Some(paired), Verdict::Return, Some(head)) =
        (turn.heads, &shared.paired, judgement.verdict, judgement.findings().quantity())
    {
        if let Some(why) = paired.judge_head(head, turn.started) {
            return (overrule(Evidence::Failure), Some(why));
        }
    }
    let Some(scope) = turn.scope else { return (judgement, None) };
    match (scope.review(shared.slots[turn.i].id(), response, &judgement), judgement.verdict) {
        (Some(why), Verdict::Return) => (overrule(Evidence::Neutral), Some(why)),
        _ => (judgement, None),
    }
}

/// Tells the paired source what attempt `turn` showed: a good answer (with its head, for a
/// judged `eth_blockNumber`), a failure, or a head behind or implausible; a failure also asks
/// for a check of its endpoint. Neutral judgements (a deadline's cut, an answer no endpoint
/// could give) tell nothing.
fn observe(shared: &Shared, turn: &Turn<'_>, judgement: &Judgement, overruled: Option<&Unfit>) {
    use crate::health::source::Observation;
    let Some(paired) = &shared.paired else { return };
    let head = if turn.heads { judgement.findings().quantity() } else { None };
    let observation = match (judgement.evidence, overruled) {
        (Evidence::Success, _) => Observation::Answered { head },
        (Evidence::Failure, Some(Unfit::BelowFloor { head: Some(head), floor })) if turn.heads => {
            Observation::Behind { head: *head, floor: *floor }
        }
        (Evidence::Failure, Some(Unfit::Implausible { head, limit })) => {
            Observation::Implausible { head: *head, limit: *limit }
        }
        (Evidence::Failure, _) => Observation::Failed,
        (Evidence::Neutral, _) => return,
    };
    let endpoint = shared.slots[turn.i].id();
    paired.source.observe(endpoint, observation);
    if observation.is_bad() {
        paired.source.check_now(endpoint);
    }
}

/// What a classifier that panicked is judged: the response is gone with the panic, so the
/// attempt failed; a classifier's bug says nothing about the endpoint.
const PANICKED: Judgement =
    Judgement::new(Verdict::FailOver { cool_for: None }, Evidence::Neutral, Class::Broken);

/// The classifier's future on one response, boxed by `async_trait`.
type Judging<'a> = Pin<Box<dyn Future<Output = Classified> + Send + 'a>>;

/// Calls the classifier on `resp`; `None` when the call itself panicked (a panic while its
/// future runs is caught by [`classify`]).
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
        Some(judging) => AssertUnwindSafe(judging).catch_unwind().await.unwrap_or_else(|_payload| panicked()),
        None => panicked(),
    }
}

/// What an attempt whose classifier panicked ends with: an error saying so, judged
/// [`PANICKED`]. The panic's message is not kept: it could carry the response's URL.
fn panicked() -> Classified {
    Classified::Failed(reqwest_middleware::Error::middleware(ClassifierPanicked), PANICKED)
}

//! `Failover` and its attempt loop. The decisions live in `session` (what next), `select`,
//! `permission`, `replay` and `judge`.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use http::Extensions;
use reqwest::{Request, Response};
use reqwest_middleware::{Middleware, Next};

use crate::destination::HostRule;
use crate::endpoint::Endpoint;
use crate::event::{AttemptOutcome, Emitter, Event, ResultOutcome};
use crate::judge::{Verdict, judge};
use crate::options::ServedBy;
use crate::session::{Outcome, Session, Step};
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
    /// Not a trigger: the response to return.
    Return(Response),
    /// A trigger response, kept while the next endpoint is tried.
    Retain(Response),
    /// No response; the error has no URL.
    Failed(reqwest_middleware::Error),
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
        let outcome = run(shared, req, extensions, next).await;
        guard.armed = false;
        finish(shared, outcome)
    }
}

/// The attempt loop: the session says where to send, the judge what the outcome means.
async fn run(shared: &Shared, req: Request, ext: &mut Extensions, next: Next<'_>) -> Outcome {
    let mut session = Session::start(shared, req, ext)?;
    loop {
        let (i, req) = match session.next() {
            Step::Send(i, req) => (i, req),
            Step::Stop(reason) => return session.stop(reason),
        };
        match attempt(shared, i, session.sent, req, session.host, ext, next.clone()).await {
            Attempted::Return(resp) => return Ok(session.returned(i, resp)),
            Attempted::Retain(resp) => session.retain(i, resp),
            Attempted::Failed(err) => session.fail(i, err),
        }
    }
}

/// Sends attempt `number` to endpoint `i` and learns from its outcome: the event, the
/// health evidence and the verdict.
async fn attempt(
    shared: &Shared,
    i: usize,
    number: u32,
    mut req: Request,
    host: HostRule,
    ext: &mut Extensions,
    next: Next<'_>,
) -> Attempted {
    let slot = &shared.slots[i];
    slot.destination.retarget(&mut req, host, shared.attempt_timeout);
    let started = shared.events.is_active().then(Instant::now);
    // Matched in place, not mapped: the healthy path moves the response no further.
    match next.run(req, ext).await {
        Ok(resp) => match observe(shared, i, number, AttemptOutcome::Status(resp.status()), started) {
            Verdict::Return => Attempted::Return(resp),
            Verdict::FailOver => Attempted::Retain(resp),
        },
        Err(err) => {
            let err = err.without_url();
            // An error has no response to return: it always fails over.
            observe(shared, i, number, AttemptOutcome::Error(&err), started);
            Attempted::Failed(err)
        }
    }
}

/// What an attempt's outcome means: emits its `Attempt` event, judges it, and tells the
/// endpoint's health what the judge found.
fn observe(
    shared: &Shared,
    i: usize,
    number: u32,
    outcome: AttemptOutcome<'_>,
    started: Option<Instant>,
) -> Verdict {
    let slot = &shared.slots[i];
    let elapsed = started.map(|s| s.elapsed()).unwrap_or_default();
    let endpoint = slot.id();
    shared.emit(|| Event::Attempt { endpoint, attempt: number, outcome, elapsed });
    let judgement = judge(&shared.triggers, outcome);
    if let Some(state) = slot.health.record(judgement.evidence, None) {
        shared.emit(|| Event::Breaker { endpoint, state });
    }
    judgement.verdict
}

/// Marks the response with the endpoint that produced it and emits the request's `Result`.
fn finish(shared: &Shared, outcome: Outcome) -> reqwest_middleware::Result<Response> {
    match outcome {
        Ok((mut resp, i)) => {
            let endpoint = shared.slots[i].id();
            resp.extensions_mut().insert(ServedBy(endpoint.clone()));
            let outcome = ResultOutcome::Status(resp.status());
            shared.emit(|| Event::Result { endpoint: Some(endpoint), outcome });
            Ok(resp)
        }
        Err(err) => {
            shared.emit(|| Event::Result { endpoint: None, outcome: ResultOutcome::Error(&err) });
            Err(err)
        }
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

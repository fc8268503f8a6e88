//! `Failover`: the attempt loop. Decisions live in `select`, `permission` and `trigger`.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Waker};
use std::time::{Duration, Instant};

use http::Extensions;
use reqwest::{Request, Response};
use reqwest_middleware::{Middleware, Next};

use crate::builder::FailoverBuilder;
use crate::eligibility::Eligibility;
use crate::endpoint::{Endpoint, EndpointId};
use crate::error::{Attempt, Error};
use crate::event::{AttemptOutcome, Emitter, Event, ResultOutcome};
use crate::options::{RequestOptions, ServedBy};
use crate::permission::{self, PolicyFn};
use crate::replay::Replay;
use crate::select::Plan;
use crate::target::{HostRule, Target};
use crate::trigger::{Triggers, Verdict, is_cooldown_failure};

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
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) endpoints: Vec<Endpoint>,
    pub(crate) targets: Vec<Target>,
    pub(crate) eligible: Option<Arc<dyn Eligibility>>,
    pub(crate) policy: Option<PolicyFn>,
    pub(crate) triggers: Triggers,
    pub(crate) cooldown: Option<(u32, Duration)>,
    pub(crate) attempt_timeout: Option<Duration>,
    pub(crate) events: Emitter,
}

type Outcome = Result<(Response, usize), reqwest_middleware::Error>;

/// What one attempt produced, judged by the trigger rules.
enum Attempted {
    /// Not a trigger: the response to return.
    Return(Response),
    /// A trigger response, kept while the next endpoint is tried.
    Retain(Response),
    /// No response; the error has no URL.
    Failed(reqwest_middleware::Error),
}

/// The request's state once its first attempt did not end it.
struct Rest {
    plan: Plan,
    replay: Option<Replay>,
    host: HostRule,
    may_continue: bool,
}

// ===== impl Failover =====

impl Failover {
    /// Starts configuring a `Failover` over `endpoints`, in priority order. The endpoints are
    /// copied; they are validated by [`FailoverBuilder::build`].
    pub fn builder(endpoints: impl IntoIterator<Item = Endpoint>) -> FailoverBuilder {
        FailoverBuilder::new(endpoints)
    }

    pub(crate) fn from_inner(inner: Inner) -> Failover {
        Failover { inner: Arc::new(inner) }
    }

    /// The configured endpoints, in priority order.
    pub fn endpoints(&self) -> &[Endpoint] {
        &self.inner.endpoints
    }

    /// Whether the endpoint `id` is cooling down now, so requests skip it. `false` for an
    /// unknown id and when cooldown is disabled. Takes a short internal lock; safe to call from
    /// hooks.
    pub fn is_cooling_down(&self, id: &str) -> bool {
        let inner = &*self.inner;
        inner.cooldown.is_some() && inner.index_of(id).is_some_and(|i| inner.targets[i].health.is_cooling())
    }
}

impl fmt::Debug for Failover {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = &*self.inner;
        f.debug_struct("Failover")
            .field("endpoints", &inner.endpoints)
            .field("eligible", &inner.eligible.as_ref().map(|_| "<fn>"))
            .field("permission_policy", &inner.policy.as_ref().map(|_| "<fn>"))
            .field("additional_trigger_status_codes", &inner.triggers)
            .field("cooldown", &inner.cooldown)
            .field("attempt_timeout", &inner.attempt_timeout)
            .field("on_event", &inner.events.has_hook().then_some("<fn>"))
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
        let inner = &*self.inner;
        let mut guard = CancelGuard { events: &inner.events, armed: inner.events.is_active() };
        let outcome = inner.run(req, extensions, next).await;
        guard.armed = false;
        inner.finish(outcome)
    }
}

// ===== impl Inner =====

impl Inner {
    async fn run(&self, mut req: Request, ext: &mut Extensions, next: Next<'_>) -> Outcome {
        let (mut plan, explicit) = {
            let opts = RequestOptions::read(ext);
            (self.plan(&opts)?, opts.permission)
        };
        let Some(first) = self.admit(&mut plan) else {
            return Err(mw(Error::no_usable_endpoint()));
        };
        let host = HostRule::of(&req);
        // Permission is settled once, and only when another endpoint could be tried; only
        // then is the request copied for later attempts (the body is shared, not copied).
        let may_continue = plan.has_more() && permission::resolve(explicit, self.policy.as_ref(), &req);
        let replay = if may_continue { Replay::prepare(&mut req) } else { None };
        // The healthy path ends after this attempt and never builds the failover state, which
        // lives in its own (boxed) future so that this one stays small.
        let outcome = self.attempt(first, 1, req, host, ext, next.clone()).await;
        if let Attempted::Return(resp) = outcome {
            return Ok((resp, first));
        }
        let rest = Rest { plan, replay, host, may_continue };
        Box::pin(self.fail_over(rest, first, outcome, ext, next)).await
    }

    /// Sends one attempt to endpoint `i` and learns from its outcome: the event, cooldown
    /// evidence, and the trigger verdict.
    async fn attempt(
        &self,
        i: usize,
        number: u32,
        mut req: Request,
        host: HostRule,
        ext: &mut Extensions,
        next: Next<'_>,
    ) -> Attempted {
        let target = &self.targets[i];
        target.retarget(&mut req, host, self.attempt_timeout);
        let started = self.events.is_active().then(Instant::now);
        let result = next.run(req, ext).await;
        let elapsed = started.map(|s| s.elapsed()).unwrap_or_default();
        let endpoint = self.endpoints[i].id();
        match result {
            Ok(resp) => {
                let status = resp.status();
                self.emit_attempt(endpoint, number, AttemptOutcome::Status(status), elapsed);
                self.record(target, is_cooldown_failure(status));
                match self.triggers.classify(status) {
                    Verdict::Return => Attempted::Return(resp),
                    Verdict::Failover => Attempted::Retain(resp),
                }
            }
            Err(err) => {
                let err = err.without_url();
                self.emit_attempt(endpoint, number, AttemptOutcome::Error(&err), elapsed);
                self.record(target, true);
                Attempted::Failed(err)
            }
        }
    }

    /// Goes on after an attempt that failed or triggered failover, while failover may go on.
    async fn fail_over(
        &self,
        mut rest: Rest,
        mut current: usize,
        mut outcome: Attempted,
        ext: &mut Extensions,
        next: Next<'_>,
    ) -> Outcome {
        let mut attempts = Vec::new();
        let mut retained: Option<(Response, usize)> = None;
        let mut number = 1;
        loop {
            match outcome {
                Attempted::Return(resp) => {
                    if let Some((old, _)) = retained.take() {
                        discard(old);
                    }
                    return Ok((resp, current));
                }
                // A newer trigger response replaces (and drops) the older one.
                Attempted::Retain(resp) => {
                    if let Some((old, _)) = retained.replace((resp, current)) {
                        discard(old);
                    }
                }
                Attempted::Failed(err) => {
                    attempts.push(Attempt::new(self.endpoints[current].id().clone(), err))
                }
            }
            if !rest.may_continue {
                break;
            }
            let Some(candidate) = self.admit(&mut rest.plan) else { break };
            let url = self.targets[candidate].url();
            let req = match rest.replay.take() {
                Some(copy) if rest.plan.has_more() => {
                    let req = copy.request(url);
                    rest.replay = Some(copy);
                    req
                }
                Some(copy) => copy.into_request(url),
                None => {
                    let endpoint = self.endpoints[candidate].id();
                    self.emit(|| Event::NotReplayable { endpoint });
                    break;
                }
            };
            current = candidate;
            number += 1;
            outcome = self.attempt(current, number, req, rest.host, ext, next.clone()).await;
        }
        match retained {
            Some(retained) => Ok(retained),
            None => Err(mw(Error::exhausted(attempts))),
        }
    }

    /// The request's consideration order. Every request-scoped id is checked before
    /// eligibility is asked anything: exclusions first, in order, then the preference.
    fn plan(&self, opts: &RequestOptions<'_>) -> Result<Plan, reqwest_middleware::Error> {
        if let Some(unknown) = opts.excluded.iter().find(|id| self.index_of(id).is_none()) {
            return Err(mw(Error::unknown(unknown.clone())));
        }
        let preferred = match opts.preferred {
            None => None,
            Some(id) => match self.index_of(id) {
                Some(i) => Some(i),
                None => return Err(mw(Error::unknown(id.clone()))),
            },
        };
        let id = |i: usize| self.endpoints[i].id();
        Ok(Plan::new(
            self.endpoints.len(),
            |i| opts.excluded.iter().any(|e| e == id(i)),
            preferred,
            |i| self.eligible.as_ref().is_none_or(|e| e.is_eligible(id(i))),
        ))
    }

    /// The next candidate not cooling down now; cooling ones are skipped for good.
    fn admit(&self, plan: &mut Plan) -> Option<usize> {
        for i in plan.by_ref() {
            if self.cooldown.is_some() && self.targets[i].health.is_cooling() {
                let endpoint = self.endpoints[i].id();
                self.emit(|| Event::CooldownSkip { endpoint });
                continue;
            }
            return Some(i);
        }
        None
    }

    fn record(&self, target: &Target, failure: bool) {
        match self.cooldown {
            Some((threshold, duration)) if failure => target.health.record_failure(threshold, duration),
            Some(_) => target.health.record_success(),
            None => {}
        }
    }

    fn finish(&self, outcome: Outcome) -> reqwest_middleware::Result<Response> {
        match outcome {
            Ok((mut resp, i)) => {
                let endpoint = self.endpoints[i].id();
                resp.extensions_mut().insert(ServedBy(endpoint.clone()));
                let outcome = ResultOutcome::Status(resp.status());
                self.emit(|| Event::Result { endpoint: Some(endpoint), outcome });
                Ok(resp)
            }
            Err(err) => {
                self.emit(|| Event::Result { endpoint: None, outcome: ResultOutcome::Error(&err) });
                Err(err)
            }
        }
    }

    fn emit_attempt(
        &self,
        endpoint: &EndpointId,
        attempt: u32,
        outcome: AttemptOutcome<'_>,
        elapsed: Duration,
    ) {
        self.emit(|| Event::Attempt { endpoint, attempt, outcome, elapsed });
    }

    fn emit<'a>(&self, event: impl FnOnce() -> Event<'a>) {
        if self.events.is_active() {
            self.events.emit(&event());
        }
    }

    pub(crate) fn index_of(&self, id: &str) -> Option<usize> {
        self.endpoints.iter().position(|ep| ep.id().as_str() == id)
    }
}

/// Largest body of a superseded trigger response that is read to keep its connection.
const DRAIN_LIMIT: u64 = 64 * 1024;

/// How long reading such a body may take before the connection is given up.
const DRAIN_TIME: Duration = Duration::from_secs(1);

/// Drops a superseded trigger response, keeping its connection when that is cheap.
///
/// A response dropped with its body unread closes its connection, and the next request to that
/// provider pays for a new one. A body of known length up to [`DRAIN_LIMIT`] is read to its
/// end instead, which returns the connection to the pool: at once when it has already arrived,
/// otherwise on a spawned task bounded by [`DRAIN_TIME`], so the caller never waits for it.
/// Larger or unknown-length bodies are dropped unread. Nothing is copied: chunks are discarded.
fn discard(resp: Response) {
    if resp.content_length().is_none_or(|len| len > DRAIN_LIMIT) {
        return;
    }
    let mut drain = Box::pin(async move {
        let mut resp = resp;
        let read_all = async { while let Ok(Some(_)) = resp.chunk().await {} };
        let _ = tokio::time::timeout(DRAIN_TIME, read_all).await;
    });
    if drain.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_pending() {
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(drain);
        }
    }
}

fn mw(err: Error) -> reqwest_middleware::Error {
    reqwest_middleware::Error::middleware(err)
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

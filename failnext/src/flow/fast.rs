//! The fast path: a request whose first endpoint is usable, and which asks nothing only a
//! session can answer, is sent there at once, without a session. The session
//! ([`Session::resume`]) is built only when that attempt does not settle the request: a
//! second decision is needed.
//!
//! What the fast path asks, in order: the builder has no eligibility predicate, paired health
//! source, latency ordering, hedge or trace-all (those decide at every request); the request
//! names no endpoint to exclude or prefer and asks for no trace; the first endpoint's health
//! admits it without a trial; its scope, if any, does not rule it out. Everything else the
//! session would have done before the first attempt is done here the same way: the budget's
//! deposit, the deadline, the permission and the copy for a later attempt (only when another
//! endpoint is configured), the `Host` rule, the cancellation guard and the events.
//!
//! The request's future stays small on this path (the session and the rest of the loop are
//! boxed apart), so that the future every request carries is cheap to move.

use std::future::Future;
use std::time::Duration;

use http::Extensions;
use reqwest::Request;
use tokio::time::Instant;

use crate::flow::attempt::{self, Attempted, Sender, Turn, dispatch};
use crate::flow::replay::Replay;
use crate::flow::run::{ended, guard, rest, settle, timed};
use crate::flow::session::{Begun, Outcome, Session, limit_of};
use crate::flow::shared::Shared;
use crate::judging::scope::Scope;
use crate::request::destination::HostRule;
use crate::request::options::RequestOptions;
use crate::request::permission::{self, Permission};

/// What a request that may take the fast path asks of it: its options, all of which are
/// plain here (no endpoint excluded or preferred, no trace), owned.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plain {
    permission: Option<Permission>,
    deadline: Option<Duration>,
}

/// Whether the request may take the fast path (see the module's docs), and with what.
#[inline]
pub(crate) fn plain(shared: &Shared, opts: &RequestOptions<'_>, scope: Option<&dyn Scope>) -> Option<Plain> {
    let first = shared.slots.first()?;
    let applies = shared.eligible.is_none()
        && shared.paired.is_none()
        && shared.ordering.is_none()
        && shared.hedge.is_none()
        && !shared.trace_all
        && opts.excluded.is_empty()
        && opts.preferred.is_none()
        && !opts.trace
        && first.health.admits_freely()
        && no_fleet(shared)
        && scope.is_none_or(|scope| scope.unfit(first.id()).is_none());
    applies.then_some(Plain { permission: opts.permission, deadline: opts.deadline })
}

/// Whether no fleet (feature `redis`) admits attempts: a fleet's request goes the whole way.
#[inline]
fn no_fleet(shared: &Shared) -> bool {
    #[cfg(feature = "redis")]
    return shared.fleet.is_none();
    #[cfg(not(feature = "redis"))]
    {
        let _ = shared;
        true
    }
}

/// One request on the fast path ([`plain`] said it may take it), from its first attempt to its
/// outcome. What the session would settle before sending is settled here, before the future
/// is made, so that the future holds the request once and little else: the first attempt and,
/// boxed, the rest of the loop when the first attempt does not settle the request.
///
/// `finish` makes the caller's answer of the outcome (the middleware marks the response with
/// the endpoint that served it), inside this future rather than in one wrapped around it.
pub(crate) fn request<'a, S: Sender + 'a, T: 'a>(
    shared: &'a Shared,
    mut req: Request,
    plain: Plain,
    scope: Option<&'a dyn Scope>,
    (ext, sender): (&'a mut Extensions, S),
    finish: fn(&Shared, Outcome) -> T,
) -> impl Future<Output = T> + Send + 'a {
    let guard = guard(shared);
    if let Some(budget) = &shared.budget {
        budget.deposit();
    }
    let deadline = plain.deadline.or(shared.deadline).map(|d| (Instant::now() + d, d));
    let host = HostRule::of(&req);
    let (permission, replay) = settle_first(shared, plain.permission, scope, &mut req);
    let (limit, by_deadline) = limit_of(shared.attempt_timeout, deadline.map(|(_, d)| d));
    let turn = Turn {
        i: FIRST,
        number: 1,
        trial: None,
        started: timed(shared, FIRST).then(Instant::now),
        limit,
        by_deadline,
        scope,
        heads: false,
    };
    async move {
        let judged = {
            let sending = std::pin::pin!(dispatch(shared, turn, req, host, ext, &sender));
            attempt::judged(shared, &turn, sending).await
        };
        let outcome = match judged {
            (Attempted::Return(resp), ..) => Ok((resp, FIRST)),
            judged => {
                let explicit = plain.permission;
                let begun = Begun { first: FIRST, explicit, permission, replay, scope, host, deadline };
                Box::pin(resume(shared, begun, (turn, judged), ext, &sender)).await
            }
        };
        finish(shared, ended(shared, guard, outcome))
    }
}

/// After a first attempt that did not settle the request: its session, from where the fast
/// path left it. Boxed by the caller, so that the fast path's future holds none of it.
async fn resume<S: Sender>(
    shared: &Shared,
    begun: Begun<'_>,
    (turn, judged): (Turn<'_>, crate::flow::attempt::Judged),
    ext: &mut Extensions,
    sender: &S,
) -> Outcome {
    let mut session = Session::resume(shared, begun);
    if let Some(outcome) = settle(&mut session, turn, judged) {
        return outcome;
    }
    let step = session.next();
    rest(shared, session, step, ext, sender).await
}

/// The endpoint the fast path sends to: the first configured.
const FIRST: usize = 0;

/// What the session settles as it sends the first attempt: whether the request may fail over
/// and, if so, its copy for later attempts; only when another endpoint is configured (the
/// session asks whether one is left in its plan: here every configured endpoint is).
fn settle_first(
    shared: &Shared,
    explicit: Option<Permission>,
    scope: Option<&dyn Scope>,
    req: &mut Request,
) -> (Option<permission::Settled>, Option<Replay>) {
    if shared.slots.len() < 2 {
        return (None, None);
    }
    let settled = permission::resolve(explicit, shared.policy.as_ref(), req);
    let rebuilds = scope.is_some_and(|scope| scope.rebuilds());
    let replay = if settled.allowed && !rebuilds { Replay::prepare(req) } else { None };
    (Some(settled), replay)
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::Pin;

    use super::*;
    use crate::flow::session::BUILT;
    use crate::request::options::ExcludedEndpoints;
    use crate::{Endpoint, Failover};

    /// Answers each attempt with the status its endpoint's port names (`http://127.0.0.1:503/`
    /// answers 503), as a middleware chain does: in a box of its own.
    #[derive(Clone, Copy)]
    struct ByPort;

    impl Sender for ByPort {
        fn send<'s>(
            &'s self,
            req: Request,
            _ext: &'s mut Extensions,
        ) -> impl Future<Output = reqwest_middleware::Result<reqwest::Response>> + Send + 's {
            let status = req.url().port().unwrap_or(200);
            let fut: Pin<Box<dyn Future<Output = _> + Send>> = Box::pin(async move {
                let mut resp = http::Response::new(Vec::<u8>::new());
                *resp.status_mut() = http::StatusCode::from_u16(status).unwrap_or_default();
                Ok(reqwest::Response::from(resp))
            });
            fut
        }
    }

    fn failover(ports: &[u16]) -> Failover {
        let eps = ports.iter().map(|p| Endpoint::new(format!("e{p}"), format!("http://127.0.0.1:{p}/")));
        Failover::builder(eps).build().unwrap()
    }

    /// Sends a GET (a read: it may fail over) with `ext`'s options, counting the sessions built.
    async fn send(failover: &Failover, ext: &Extensions) -> (Outcome, u32) {
        let shared = failover.shared();
        let req = reqwest::Client::new().get("http://127.0.0.1:200/").build().unwrap();
        let before = BUILT.with(std::cell::Cell::get);
        let opts = RequestOptions::read(ext);
        let outcome = match plain(shared, &opts, None) {
            Some(plain) => {
                request(shared, req, plain, None, (&mut Extensions::new(), ByPort), |_, o| o).await
            }
            None => {
                let (session, guard) = crate::flow::run::begin(shared, req, &opts, None).unwrap();
                let outcome = crate::flow::run::run(shared, session, &mut Extensions::new(), &ByPort).await;
                ended(shared, guard, outcome)
            }
        };
        (outcome, BUILT.with(std::cell::Cell::get) - before)
    }

    fn status(outcome: &Outcome) -> (u16, usize) {
        match outcome {
            Ok((resp, i)) => (resp.status().as_u16(), *i),
            Err(err) => panic!("failed: {err}"),
        }
    }

    #[tokio::test]
    async fn a_request_its_first_endpoint_answers_builds_no_session() {
        let failover = failover(&[200, 201]);
        let (outcome, sessions) = send(&failover, &Extensions::new()).await;
        assert_eq!(status(&outcome), (200, 0));
        assert_eq!(sessions, 0);
    }

    #[tokio::test]
    async fn a_first_attempt_that_fails_over_builds_the_session_then_and_the_next_endpoint_answers() {
        let failover = failover(&[503, 201]);
        let (outcome, sessions) = send(&failover, &Extensions::new()).await;
        assert_eq!(status(&outcome), (201, 1));
        assert_eq!(sessions, 1);
    }

    #[tokio::test]
    async fn a_first_attempt_kept_for_want_of_another_endpoint_is_returned_through_the_session() {
        // One endpoint: its 503 is a failover trigger, kept and returned when nothing else is
        // left, as the session decides it.
        let failover = failover(&[503]);
        let (outcome, sessions) = send(&failover, &Extensions::new()).await;
        assert_eq!(status(&outcome), (503, 0));
        assert_eq!(sessions, 1);
    }

    #[tokio::test]
    async fn a_request_naming_endpoints_is_planned_by_a_session_from_the_start() {
        let failover = failover(&[200, 201]);
        let mut ext = Extensions::new();
        ext.insert(ExcludedEndpoints(vec!["e200".into()]));
        let (outcome, sessions) = send(&failover, &ext).await;
        assert_eq!(status(&outcome), (201, 1));
        assert_eq!(sessions, 1);
    }

    /// The future a request on the fast path carries: the request once, the first attempt,
    /// and a pointer to the rest (measured 856 B with a boxed sender, under the 1 KiB beyond
    /// which the allocator's per-thread cache takes no boxes). A regression guard.
    #[test]
    fn the_fast_paths_future_holds_the_first_attempt_and_little_else() {
        let failover = failover(&[200, 201]);
        let req = reqwest::Client::new().get("http://127.0.0.1:200/").build().unwrap();
        let mut ext = Extensions::new();
        let plain = Plain { permission: None, deadline: None };
        let fut = request(failover.shared(), req, plain, None, (&mut ext, ByPort), |_, o| o);
        let size = std::mem::size_of_val(&fut);
        assert!(size <= 900, "the fast path's future grew to {size} B");
    }
}

//! The error failnext returns through reqwest-middleware, and the failed attempts it records.

use std::error::Error as StdError;
use std::fmt;

use crate::request::endpoint::EndpointId;

/// Why a request through [`Failover`](crate::Failover) ended without a response.
///
/// failnext returns it as `reqwest_middleware::Error::Middleware`; reach it with
/// [`Error::from_middleware`], which also finds it under middlewares that wrap errors.
/// Three cases, told apart by predicates:
///
/// - [`is_no_usable_endpoint`](Error::is_no_usable_endpoint): nothing was attempted, because
///   every endpoint was excluded, ineligible or cooling down;
/// - [`is_unknown_endpoint`](Error::is_unknown_endpoint): the request excluded or preferred
///   an id that is not configured; nothing was attempted;
/// - otherwise a failover error: at least one attempt was made, none produced an HTTP
///   response to return, and [`attempts`](Error::attempts) lists the failed attempts in order.
///   Even a single failed attempt is reported this way, so the failed endpoint is always named.
///   [`source`](StdError::source) is the terminal cause, the last attempt's error. An attempt
///   whose response the [classifier](crate::Classifier) could not judge (it handed back
///   [`Classified::Failed`](crate::Classified::Failed), or panicked) is a failed attempt too:
///   its error is the classifier's, or says "the classifier panicked".
///
/// An HTTP response is never turned into an error: a 503 that could not be failed over is
/// returned as a response.
///
/// ```no_run
/// # async fn demo(client: reqwest_middleware::ClientWithMiddleware) {
/// match client.get("http://127.0.0.1:8545/").send().await {
///     Ok(resp) => println!("status {}", resp.status()),
///     Err(err) => match failnext::Error::from_middleware(&err) {
///         Some(e) if e.is_no_usable_endpoint() => println!("no provider could be tried"),
///         Some(e) => {
///             for attempt in e.attempts() {
///                 println!("endpoint={} err={}", attempt.endpoint(), attempt.error());
///             }
///         }
///         None => println!("not a failnext error: {err}"),
///     },
/// }
/// # }
/// ```
pub struct Error {
    inner: Box<Inner>,
}

struct Inner {
    kind: Kind,
    trace: Option<crate::events::trace::Trace>,
    /// Every configured endpoint the request sent nothing to, and why, in configured order.
    passed: Vec<PassedOver>,
}

#[derive(Debug, thiserror::Error)]
enum Kind {
    #[error("no usable endpoint: every endpoint is excluded, ineligible or cooling down")]
    NoUsableEndpoint,
    #[error("request names unknown endpoint {0:?}")]
    UnknownEndpoint(EndpointId),
    #[error(
        "failover ended without an http response after {n} failed attempt{plural}, last to {last:?}",
        n = .0.len(),
        plural = if .0.len() == 1 { "" } else { "s" },
        last = .0.last().map(|a| a.endpoint.as_str()).unwrap_or_default(),
    )]
    Exhausted(Vec<Attempt>),
    #[error("deadline of {deadline:?} passed after {}", attempts_text(attempts))]
    Deadline { deadline: std::time::Duration, attempts: Vec<Attempt>, untried: Vec<EndpointId> },
    #[error("failover budget spent: {} failed, no token for another attempt", attempts_text(.0))]
    BudgetSpent(Vec<Attempt>),
}

/// "N failed attempt(s), last to "id"" for a deadline error.
fn attempts_text(attempts: &[Attempt]) -> String {
    let n = attempts.len();
    let plural = if n == 1 { "" } else { "s" };
    match attempts.last() {
        Some(last) => format!("{n} failed attempt{plural}, last to {:?}", last.endpoint.as_str()),
        None => "no attempt".to_owned(),
    }
}

/// An endpoint a failed request sent nothing to, and why it was passed over
/// ([`Error::passed_over`]).
///
/// `Display` prints the endpoint and the reason: `"backup": breaker open for 1.2s`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassedOver {
    endpoint: EndpointId,
    why: crate::events::trace::TraceStep,
}

impl PassedOver {
    pub(crate) fn new(endpoint: EndpointId, why: crate::events::trace::TraceStep) -> PassedOver {
        PassedOver { endpoint, why }
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &EndpointId {
        &self.endpoint
    }

    /// Why the request sent nothing to it, in the [`Trace`](crate::Trace)'s words: excluded,
    /// ineligible, unfit (and why), cooling down, breaker open, its trial taken by another
    /// request, or not tried (and why: the deadline passed, the budget was spent, the request
    /// may not fail over, ...).
    pub fn why(&self) -> &crate::events::trace::TraceStep {
        &self.why
    }
}

impl fmt::Display for PassedOver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.endpoint.as_str(), self.why)
    }
}

/// One attempt that ended without an HTTP response (or whose response the classifier could
/// not judge).
///
/// The error has had its URL removed, so printing it reveals no key. `Display` prints the
/// endpoint and the error's whole source chain:
/// `primary: error sending request: client error (Connect): tcp connect error: Connection refused`.
pub struct Attempt {
    endpoint: EndpointId,
    error: reqwest_middleware::Error,
}

/// The error of an attempt whose response the configured classifier panicked on: the
/// response went with the panic.
#[derive(Debug, thiserror::Error)]
#[error("the classifier panicked while judging the response; the response was dropped")]
pub(crate) struct ClassifierPanicked;

// ===== impl Error =====

impl Error {
    // constructors

    pub(crate) fn no_usable_endpoint() -> Error {
        Error::new(Kind::NoUsableEndpoint)
    }

    pub(crate) fn unknown(id: EndpointId) -> Error {
        Error::new(Kind::UnknownEndpoint(id))
    }

    /// `attempts` is never empty: a failover error only exists after an attempt.
    pub(crate) fn exhausted(attempts: Vec<Attempt>) -> Error {
        Error::new(Kind::Exhausted(attempts))
    }

    pub(crate) fn budget_spent(attempts: Vec<Attempt>) -> Error {
        Error::new(Kind::BudgetSpent(attempts))
    }

    pub(crate) fn deadline(
        deadline: std::time::Duration,
        attempts: Vec<Attempt>,
        untried: Vec<EndpointId>,
    ) -> Error {
        Error::new(Kind::Deadline { deadline, attempts, untried })
    }

    fn new(kind: Kind) -> Error {
        Error { inner: Box::new(Inner { kind, trace: None, passed: Vec::new() }) }
    }

    pub(crate) fn with_passed_over(mut self, passed: Vec<PassedOver>) -> Error {
        self.inner.passed = passed;
        self
    }

    // accessors

    /// Finds the failnext error in a `reqwest_middleware::Error`, searching the whole source
    /// chain, so it still works when another middleware wrapped the error.
    pub fn from_middleware(err: &reqwest_middleware::Error) -> Option<&Error> {
        match err {
            reqwest_middleware::Error::Middleware(e) => e.chain().find_map(find),
            reqwest_middleware::Error::Reqwest(e) => {
                let mut next: Option<&(dyn StdError + 'static)> = Some(e);
                while let Some(e) = next {
                    if let Some(found) = find(e) {
                        return Some(found);
                    }
                    next = e.source();
                }
                None
            }
        }
    }

    /// Nothing was attempted: every endpoint was excluded, ineligible or cooling down.
    pub fn is_no_usable_endpoint(&self) -> bool {
        matches!(self.inner.kind, Kind::NoUsableEndpoint)
    }

    /// The request named an endpoint id that is not configured. Nothing was attempted.
    pub fn is_unknown_endpoint(&self) -> bool {
        matches!(self.inner.kind, Kind::UnknownEndpoint(_))
    }

    /// The unknown id the request named, for an unknown-endpoint error.
    pub fn unknown_endpoint(&self) -> Option<&EndpointId> {
        match &self.inner.kind {
            Kind::UnknownEndpoint(id) => Some(id),
            _ => None,
        }
    }

    /// Attempts were made and none produced an HTTP response to return.
    pub fn is_failover(&self) -> bool {
        matches!(self.inner.kind, Kind::Exhausted(_))
    }

    /// The request's deadline passed before any attempt produced an HTTP response to return
    /// ([`FailoverBuilder::deadline`](crate::FailoverBuilder::deadline)).
    pub fn is_deadline(&self) -> bool {
        matches!(self.inner.kind, Kind::Deadline { .. })
    }

    /// The request's [`Trace`](crate::Trace), when it asked for one.
    pub fn trace(&self) -> Option<&crate::events::trace::Trace> {
        self.inner.trace.as_ref()
    }

    pub(crate) fn with_trace(mut self, trace: Option<crate::events::trace::Trace>) -> Error {
        self.inner.trace = trace;
        self
    }

    /// The request's attempts failed and the [failover budget](crate::Budget) had no token for
    /// another one.
    pub fn is_budget_spent(&self) -> bool {
        matches!(self.inner.kind, Kind::BudgetSpent(_))
    }

    /// The endpoints a request whose deadline passed did not try, in configured order.
    pub fn untried(&self) -> &[EndpointId] {
        match &self.inner.kind {
            Kind::Deadline { untried, .. } => untried,
            _ => &[],
        }
    }

    /// Every configured endpoint the request sent nothing to, in configured order, with why
    /// it was passed over: what, beside the [`attempts`](Error::attempts), a read that failed
    /// did with each provider. Found when the request ended (a cold path: a request that
    /// answers pays nothing for it); empty for an unknown-endpoint error. `Display` lists them
    /// after the attempts. Beyond the 64th configured endpoint the plan keeps no record of
    /// exclusions and health skips (to keep every request's plan one word per set): such an
    /// endpoint reads as ineligible, or not tried.
    ///
    /// ```
    /// # fn show(err: &failnext::Error) {
    /// for passed in err.passed_over() {
    ///     println!("{} was passed over: {}", passed.endpoint(), passed.why());
    /// }
    /// # }
    /// ```
    pub fn passed_over(&self) -> &[PassedOver] {
        &self.inner.passed
    }

    /// The failed attempts, in the order they were made. Empty unless
    /// [`is_failover`](Error::is_failover) or [`is_deadline`](Error::is_deadline).
    pub fn attempts(&self) -> &[Attempt] {
        match &self.inner.kind {
            Kind::Exhausted(attempts) | Kind::Deadline { attempts, .. } | Kind::BudgetSpent(attempts) => {
                attempts
            }
            _ => &[],
        }
    }
}

fn find<'a>(e: &'a (dyn StdError + 'static)) -> Option<&'a Error> {
    if let Some(found) = e.downcast_ref::<Error>() {
        return Some(found);
    }
    // A wrapping middleware may keep the whole reqwest_middleware::Error as its source.
    e.downcast_ref::<reqwest_middleware::Error>().and_then(Error::from_middleware)
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.inner.kind, f)?;
        for (k, passed) in self.inner.passed.iter().enumerate() {
            f.write_str(if k == 0 { "; passed over: " } else { ", " })?;
            fmt::Display::fmt(passed, f)?;
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("failnext::Error");
        match &self.inner.kind {
            Kind::NoUsableEndpoint => d.field("kind", &format_args!("NoUsableEndpoint")),
            Kind::UnknownEndpoint(id) => d.field("kind", &format_args!("UnknownEndpoint")).field("id", id),
            Kind::Exhausted(attempts) => {
                d.field("kind", &format_args!("Failover")).field("attempts", attempts)
            }
            Kind::BudgetSpent(attempts) => {
                d.field("kind", &format_args!("BudgetSpent")).field("attempts", attempts)
            }
            Kind::Deadline { deadline, attempts, untried } => d
                .field("kind", &format_args!("Deadline"))
                .field("deadline", deadline)
                .field("attempts", attempts)
                .field("untried", untried),
        };
        if !self.inner.passed.is_empty() {
            d.field("passed_over", &self.inner.passed);
        }
        d.finish()
    }
}

impl StdError for Error {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match &self.inner.kind {
            Kind::Exhausted(attempts) | Kind::Deadline { attempts, .. } | Kind::BudgetSpent(attempts) => {
                attempts.last().map(|a| &a.error as &(dyn StdError + 'static))
            }
            _ => None,
        }
    }
}

// ===== impl Attempt =====

impl Attempt {
    pub(crate) fn new(endpoint: EndpointId, error: reqwest_middleware::Error) -> Attempt {
        Attempt { endpoint, error }
    }

    /// The endpoint that was attempted.
    pub fn endpoint(&self) -> &EndpointId {
        &self.endpoint
    }

    /// What went wrong, as the rest of the middleware chain returned it, without its URL.
    pub fn error(&self) -> &reqwest_middleware::Error {
        &self.error
    }
}

/// `endpoint: error: cause: cause ...`, the whole source chain on one line, which reqwest's
/// own `Display` leaves out (it prints "error sending request" without saying why).
impl fmt::Display for Attempt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.endpoint, WithCauses(&self.error))
    }
}

/// An error and its whole source chain on one line: `error: cause: cause ...`.
pub(crate) struct WithCauses<'a>(pub(crate) &'a (dyn StdError + 'static));

impl fmt::Display for WithCauses<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut cause = self.0.source();
        while let Some(e) = cause {
            write!(f, ": {e}")?;
            cause = e.source();
        }
        Ok(())
    }
}

impl fmt::Debug for Attempt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Attempt").field("endpoint", &self.endpoint).field("error", &self.error).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_is_one_pointer_and_thread_safe() {
        fn assert_send_sync<T: Send + Sync + 'static>() {}
        assert_send_sync::<Error>();
        assert_eq!(std::mem::size_of::<Error>(), std::mem::size_of::<usize>());
    }

    #[test]
    fn found_through_wrapping() {
        let err = reqwest_middleware::Error::middleware(Error::no_usable_endpoint());
        assert!(Error::from_middleware(&err).is_some_and(Error::is_no_usable_endpoint));

        #[derive(Debug)]
        struct Wrap(reqwest_middleware::Error);
        impl fmt::Display for Wrap {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("wrapped")
            }
        }
        impl StdError for Wrap {
            fn source(&self) -> Option<&(dyn StdError + 'static)> {
                Some(&self.0)
            }
        }
        let wrapped = reqwest_middleware::Error::middleware(Wrap(err));
        assert!(Error::from_middleware(&wrapped).is_some_and(Error::is_no_usable_endpoint));
        let ctx = reqwest_middleware::Error::Middleware(
            anyhow::Error::new(Error::unknown("x".into())).context("outer"),
        );
        assert!(Error::from_middleware(&ctx).is_some_and(Error::is_unknown_endpoint));
    }
}

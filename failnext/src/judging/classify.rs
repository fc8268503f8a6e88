//! Judging, public side: the [`Classifier`] trait and what a judgement says.
//!
//! Every attempt's outcome is judged in one place (`judge.rs`): a transport error always fails
//! over; a response whose status is a trigger (502, 503, 504 and the added codes) fails over
//! without its body being read; any other response goes to the configured classifier, if one
//! is set, and is otherwise returned (the 0.1 rule).

use std::time::Duration;

use reqwest::Response;

use crate::judging::findings::Findings;

/// What to do with an attempt's outcome.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Return this response to the caller: no other endpoint is tried.
    Return,
    /// Try the next endpoint, if the request may fail over. The response is kept meanwhile: if
    /// every later attempt errors, the caller gets it. `cool_for` asks the endpoint's health to
    /// keep the endpoint out of rotation for that long (a provider's hint such as a rate
    /// limit's back-off); `None` leaves the open time to the breaker.
    FailOver {
        /// How long the endpoint should take no traffic, when the answer said so.
        cool_for: Option<Duration>,
    },
}

/// What an attempt's outcome tells the endpoint's health.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Evidence {
    /// The endpoint failed: counts towards opening its breaker (or cooldown).
    Failure,
    /// The endpoint answered well: closes a half-open breaker, resets a failure streak.
    Success,
    /// Says nothing about the endpoint (for example a revert: the chain answered, correctly).
    Neutral,
}

/// How an outcome was judged, for events, traces and metrics.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    /// An answer to return: a success, or any response no rule flags.
    Answer,
    /// A definitive error answer (a revert, invalid params, nonce too low, ...): returned at
    /// once, never sent elsewhere.
    Definitive,
    /// A status the configuration makes a trigger (502, 503, 504 and the added codes).
    Trigger,
    /// The provider is out of capacity (HTTP 429, a JSON-RPC rate-limit error).
    Capacity,
    /// The provider lacks the data asked for (unknown block, missing trie node).
    Stale,
    /// The provider is broken: an internal error, a malformed or truncated body, a wrong id.
    Broken,
    /// The attempt ended without an HTTP response (connect, timeout, reset, ...).
    Transport,
    /// The provider refused the credentials: a key or project id that is invalid, missing,
    /// revoked or not allowed from here (HTTP 401, 403, 407; an inactive app; an endpoint
    /// retired with HTTP 410). An operator's problem: cooled for long, growing while it lasts.
    Unauthorized,
    /// The account is out of paid capacity: HTTP 402, a monthly quota, credits used up. Cooled
    /// like [`Unauthorized`](Class::Unauthorized).
    Payment,
    /// The request is too large for this provider (a logs range or result count over its
    /// limit, a batch too long, a response too large; HTTP 413, 414, 431): another provider may
    /// serve it, and this one is not cooled.
    Limit,
}

impl Class {
    /// Every class, in declaration order (the metrics' keys, the fleet's reasons).
    #[cfg_attr(
        not(any(feature = "metrics", feature = "redis")),
        allow(dead_code, reason = "the metrics' keys and the fleet's reasons")
    )]
    pub(crate) const ALL: [Class; 10] = [
        Class::Answer,
        Class::Definitive,
        Class::Trigger,
        Class::Capacity,
        Class::Stale,
        Class::Broken,
        Class::Transport,
        Class::Unauthorized,
        Class::Payment,
        Class::Limit,
    ];

    /// Its name in lower case, as traces and metrics labels print it (`"transport"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Answer => "answer",
            Class::Definitive => "definitive",
            Class::Trigger => "trigger",
            Class::Capacity => "capacity",
            Class::Stale => "stale",
            Class::Broken => "broken",
            Class::Transport => "transport",
            Class::Unauthorized => "unauthorized",
            Class::Payment => "payment",
            Class::Limit => "limit",
        }
    }
}

/// The verdict on an attempt, what it tells the endpoint's health, and its class.
#[non_exhaustive]
#[derive(Clone, Copy, Debug)]
pub struct Judgement {
    /// Return it, or fail over.
    pub verdict: Verdict,
    /// What it tells the endpoint's health.
    pub evidence: Evidence,
    /// How it was judged.
    pub class: Class,
    /// What the JSON-RPC classifier found beside it, for the request's scope (not compared).
    pub(crate) findings: Findings,
}

impl PartialEq for Judgement {
    fn eq(&self, other: &Judgement) -> bool {
        (self.verdict, self.evidence, self.class) == (other.verdict, other.evidence, other.class)
    }
}

impl Eq for Judgement {}

impl Judgement {
    /// A judgement from its three parts.
    pub const fn new(verdict: Verdict, evidence: Evidence, class: Class) -> Judgement {
        Judgement { verdict, evidence, class, findings: Findings::NONE }
    }

    /// Return the response; the endpoint answered well.
    pub const fn answer() -> Judgement {
        Judgement::new(Verdict::Return, Evidence::Success, Class::Answer)
    }

    /// What the classifier found beside the judgement (the JSON-RPC classifier's findings; none
    /// from other judges): for a request's [`Scope`](crate::Scope).
    pub const fn findings(&self) -> Findings {
        self.findings
    }
}

/// What a classifier hands back: the response (rebuilt from the same bytes when it read the
/// body) or, when reading the body failed, the error; and the judgement.
#[derive(Debug)]
pub enum Classified {
    /// The response to return or retain, with its judgement.
    Response(Response, Judgement),
    /// Reading the body failed (it ended early, the connection reset, ...): there is no
    /// response left to return. The attempt counts as a failed one and fails over.
    Failed(reqwest_middleware::Error, Judgement),
}

/// Judges a response that no status rule settled.
///
/// Called for every response whose status is not a trigger, when one is configured with
/// [`FailoverBuilder::classifier`](crate::FailoverBuilder::classifier). It may read the body
/// (up to a cap it chooses) and must then hand back a response rebuilt from the same bytes,
/// without copying them. Transport errors and trigger statuses never reach it.
///
/// A classifier that panics loses no request (unless panics abort the process): the panic is
/// caught (around the call and while its future runs; the panic hook still runs and, by
/// default, prints it), the response is gone with it, the attempt counts as failed (its error
/// says the classifier panicked, without the panic's message), the endpoint's health is told
/// nothing ([`Evidence::Neutral`]), and failover goes on as for any error. With no endpoint
/// left, the caller gets a failover error listing that attempt. A
/// [`Classified::Failed`] is a failed attempt likewise, which always fails over (a `Return`
/// verdict in it is read as `FailOver`), with the judgement's evidence and class.
///
/// ```
/// use failnext::{Class, Classified, Classifier, EndpointId, Evidence, Judgement, Verdict};
///
/// /// Fails over from any response that says it is rate limited, without reading the body.
/// struct RateLimitHeader;
///
/// #[async_trait::async_trait]
/// impl Classifier for RateLimitHeader {
///     async fn classify(&self, _: &EndpointId, response: reqwest::Response) -> Classified {
///         if response.headers().contains_key("x-ratelimit-exceeded") {
///             let flagged = Judgement::new(Verdict::FailOver { cool_for: None }, Evidence::Failure, Class::Capacity);
///             return Classified::Response(response, flagged);
///         }
///         Classified::Response(response, Judgement::answer())
///     }
/// }
///
/// let failover = failnext::Failover::builder([failnext::Endpoint::new("a", "http://127.0.0.1:1")])
///     .classifier(RateLimitHeader)
///     .build()?;
/// # drop(failover);
/// # Ok::<(), failnext::ConfigError>(())
/// ```
#[async_trait::async_trait]
pub trait Classifier: Send + Sync + 'static {
    /// Judges `response`, an answer of the endpoint `endpoint`.
    async fn classify(
        &self,
        endpoint: &crate::request::endpoint::EndpointId,
        response: Response,
    ) -> Classified;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn _object_safe(_: Box<dyn Classifier>) {}
}

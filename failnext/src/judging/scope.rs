//! [`Scope`]: what one request knows about itself, so that the loop's decisions (which
//! endpoint, what an answer means) can take the request into account.
//!
//! The reference rules see a request as HTTP: a method, a body that may or may not be sent
//! twice. A JSON-RPC read knows more: the methods it calls, the block it is pinned to, the
//! floor its answer must not go below, the capabilities it needs (archive state, a method, a
//! request size). A scope carries that knowledge to the one request loop, for any HTTP API:
//! put a [`RequestScope`] in the request's extensions (the alloy transport makes one for every
//! packet). Every decision a scope makes is the loop's own: a skip is an
//! [`Event::Skipped`](crate::Event::Skipped) with [`SkipReason::Unfit`](crate::SkipReason::Unfit)
//! and a [`TraceStep::Unfit`](crate::TraceStep::Unfit); an overruled answer is judged
//! `FailOver` in [`Event::Judged`](crate::Event::Judged) and shown as
//! [`TraceStep::Overruled`](crate::TraceStep::Overruled).

use std::fmt;
use std::sync::Arc;

use reqwest::Response;

use crate::judging::classify::Judgement;
use crate::request::endpoint::EndpointId;

/// What one request knows about itself, asked by the request's loop. Every method has a
/// default that changes nothing, so a scope implements only what it knows.
///
/// ```
/// use failnext::{EndpointId, RequestScope, Scope, Unfit};
///
/// /// Only "archive" keeps old state: a historical read skips the others.
/// struct Historical;
///
/// impl Scope for Historical {
///     fn unfit(&self, endpoint: &EndpointId) -> Option<Unfit> {
///         (endpoint.as_str() != "archive").then(|| Unfit::Lacks("archive state".into()))
///     }
/// }
///
/// # fn demo(client: reqwest_middleware::ClientWithMiddleware) {
/// let read = client.post("http://127.0.0.1:8545/").with_extension(RequestScope::new(Historical));
/// # drop(read); }
/// ```
pub trait Scope: Send + Sync {
    /// Whether `endpoint` cannot serve this request, and why: asked once per endpoint still
    /// usable at the request's start (after exclusions and eligibility), in configured order.
    /// An endpoint it rules out is passed over like an ineligible one. Default: every
    /// endpoint can.
    fn unfit(&self, endpoint: &EndpointId) -> Option<Unfit> {
        let _ = endpoint;
        None
    }

    /// The judgement of an attempt at `endpoint` (its response, `None` when the attempt ended
    /// in an error), before the loop acts on it: `Some(why)` overrules an answer that is no
    /// answer for this request (below its floor, refused as too large): it is judged
    /// `FailOver { cool_for: None }`, `Neutral`, [`Class::Stale`](crate::Class::Stale), and the
    /// request goes on as for any flagged answer (kept while the next endpoint is tried,
    /// returned if nothing better comes). Called for every judged attempt, so it is also where
    /// a scope learns what an answer says of its endpoint. Default: the judgement stands.
    fn review(
        &self,
        endpoint: &EndpointId,
        response: Option<&Response>,
        judgement: &Judgement,
    ) -> Option<Unfit> {
        let _ = (endpoint, response, judgement);
        None
    }

    /// Whether this scope makes later attempts' requests itself ([`rebuild`](Scope::rebuild)):
    /// then nothing of the request is copied before the first attempt. Default: `false` (the
    /// loop shares the body and copies the headers before the first attempt, as without a
    /// scope).
    fn rebuilds(&self) -> bool {
        false
    }

    /// A later attempt's request to `url`, made by the scope itself (it knows how to make the
    /// request again), when [`rebuilds`](Scope::rebuilds) says so. `None` is a request that
    /// cannot be sent again: the request stops there, as for a streaming body. Default: `None`.
    fn rebuild(&self, url: &url::Url) -> Option<reqwest::Request> {
        let _ = url;
        None
    }
}

/// A request's [`Scope`], in its extensions (`with_extension`). Cheap to clone.
#[derive(Clone)]
pub struct RequestScope(pub Arc<dyn Scope>);

impl RequestScope {
    /// `scope`, ready for a request's extensions.
    pub fn new(scope: impl Scope + 'static) -> RequestScope {
        RequestScope(Arc::new(scope))
    }
}

impl fmt::Debug for RequestScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RequestScope(<scope>)")
    }
}

/// Why an endpoint cannot serve one request (a [`Scope`]'s answer): passed over before its
/// turn, or its answer overruled.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Unfit {
    /// It lacks something the request needs: archive state, a method, a namespace, selection
    /// by block hash, requests this large (the named capability).
    Lacks(String),
    /// It did not know the block the request is pinned to.
    UnknownBlock,
    /// Its head is below the floor the request must not go below: known to be (`head` when
    /// known), or its answer said so.
    BelowFloor {
        /// Its head, when known.
        head: Option<u64>,
        /// The floor.
        floor: u64,
    },
    /// It refused the request as too large (HTTP 413).
    TooLarge,
    /// Its answer reported a head above anything plausible: higher than the best known head
    /// plus the blocks the chain can have made since, plus the tolerance (`limit`).
    Implausible {
        /// The head it reported.
        head: u64,
        /// The highest plausible head.
        limit: u64,
    },
}

impl fmt::Display for Unfit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unfit::Lacks(what) => write!(f, "lacks {what}"),
            Unfit::UnknownBlock => f.write_str("does not know the request's block"),
            Unfit::BelowFloor { head: Some(head), floor } => {
                write!(f, "at block {head}, below the floor {floor}")
            }
            Unfit::BelowFloor { head: None, floor } => write!(f, "below the floor {floor}"),
            Unfit::TooLarge => f.write_str("refused the request as too large (HTTP 413)"),
            Unfit::Implausible { head, limit } => {
                write!(f, "at block {head}, above the highest plausible head {limit}")
            }
        }
    }
}

//! [`Failure`]: every way a call through the transport, a bundle or the follower can fail,
//! found by one [`Failure::find`] and told apart by one [`FailureKind`].

use std::fmt;

use alloy_json_rpc::{ErrorPayload, RpcError};
use alloy_primitives::B256;
use alloy_transport::HttpError;
use alloy_transport::{TransportError, TransportErrorKind};
use http::StatusCode;

use super::block::BlockRef;
use super::fanout::{Broadcast, Fault};
use crate::{Attempt, EndpointId, Error};

pub(crate) mod raised;

use raised::{Detail, Raised};

/// Why a call through a [`FailoverTransport`](super::FailoverTransport), one of its
/// [`Bundle`](super::Bundle)s or a [`Follower`](super::Follower) failed: one type for every
/// failure, found in alloy's `TransportError` by [`Failure::find`], told apart by its
/// [`kind`](Failure::kind) (or an `is_*` predicate), and read through its accessors, which
/// give what the failure is about when it is about it (the hashes of a write, its attempts,
/// the endpoint, a bundle's reference, the floor).
///
/// It borrows the error it was found in, so it costs nothing to find and can be matched in
/// place:
///
/// ```
/// use failnext::alloy::{Failure, FailureKind};
///
/// fn explain(err: &alloy_transport::TransportError) -> String {
///     let Some(failure) = Failure::find(err) else {
///         // Not the transport's: serialization, a body alloy could not parse.
///         return err.to_string();
///     };
///     match failure.kind() {
///         // No provider answered a read: every attempt, with its endpoint and error.
///         FailureKind::Read => format!("{} attempts failed: {failure}", failure.attempts().len()),
///         // The last provider asked answered this HTTP status (every other one failed).
///         FailureKind::Status => format!("HTTP {:?}", failure.status()),
///         // A node answered with a JSON-RPC error (a revert, "nonce too low"): not an outage.
///         FailureKind::Answered => format!("refused: {}", failure.payload().unwrap().message),
///         // A write whose answer was lost: reconcile by hash, never sign again.
///         FailureKind::PossiblySubmitted => format!("reconcile {:?}", failure.hash()),
///         // A write that provably never left: safe to send again.
///         FailureKind::NeverSent => format!("resend {:?}", failure.hash()),
///         // A fan-out no endpoint accepted, endpoint by endpoint.
///         FailureKind::Broadcast => format!("{}", failure.broadcast().unwrap()),
///         FailureKind::FilterPinned => format!("new filter, {:?} is gone", failure.endpoint()),
///         FailureKind::BundleRefused => format!("{:?} is not a bundle read", failure.method()),
///         FailureKind::ReferenceUnknown => format!("restart after {:?}", failure.reference()),
///         FailureKind::BelowFloor => format!("wait for block {:?}", failure.floor()),
///         FailureKind::StartUnknown => format!("start elsewhere than {:?}", failure.hash()),
///         FailureKind::ReorgTooDeep => format!("follow again from {:?}", failure.restart_from()),
///         // A failure of a kind added later.
///         _ => failure.to_string(),
///     }
/// }
/// ```
///
/// Whatever the kind, [`error`](Failure::error) gives failnext's own [`Error`] of a failed
/// read or a lost write (with its [attempts](Error::attempts) and its
/// [trace](Error::trace)), [`hashes`](Failure::hashes) the transactions concerned,
/// [`endpoint`](Failure::endpoint) the endpoint it names, and `source()` the cause.
#[derive(Clone, Copy, Debug)]
pub struct Failure<'a>(Found<'a>);

/// Where a failure was found.
#[derive(Clone, Copy, Debug)]
enum Found<'a> {
    Read(&'a Error),
    Status(&'a HttpError),
    Answered(&'a ErrorPayload),
    Raised(&'a Raised),
}

/// What kind of [`Failure`] it is: match it, then ask the failure for what that kind is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FailureKind {
    /// No provider answered a call that may fail over (a read): every attempt failed, none
    /// was usable, the deadline passed or the failover budget was spent.
    /// [`attempts`](Failure::attempts) lists every attempt.
    Read,
    /// The provider tried last answered a non-2xx HTTP status that is not a JSON-RPC answer
    /// (every other one failed before it, or the call may not fail over): alloy's own HTTP
    /// error, as its `Http` transport gives it, so that its retry layers see it.
    /// [`status`](Failure::status), [`http`](Failure::http).
    Status,
    /// A node answered with a JSON-RPC error: a revert, "nonce too low", an invalid
    /// parameter. An answer, not an outage: it is not tried elsewhere (a rate limit or an
    /// internal error is, and comes back only when no provider did better).
    /// [`payload`](Failure::payload).
    Answered,
    /// A write whose answer was lost after it was (or may have been) sent. **Do not sign
    /// again**: reconcile by [`hash`](Failure::hash) (or the sender's nonce when the node
    /// signs). [`fault`](Failure::fault) says how it was lost, [`endpoint`](Failure::endpoint)
    /// where it went.
    PossiblySubmitted,
    /// A write that provably never left: safe to send again, as it is.
    /// [`fault`](Failure::fault) says why.
    NeverSent,
    /// A [fan-out](super::FailoverTransportBuilder::broadcast_to) that no endpoint accepted;
    /// [`broadcast`](Failure::broadcast) says what each endpoint did.
    Broadcast,
    /// A filter call that cannot reach the provider holding its filter: create a new filter.
    /// [`filter`](Failure::filter), [`endpoint`](Failure::endpoint).
    FilterPinned,
    /// A call a bundle does not send (a write, the pending nonce); nothing was sent.
    /// [`method`](Failure::method).
    BundleRefused,
    /// A bundle read no provider could answer at the bundle's reference: restart the decision
    /// at a new one. [`reference`](Failure::reference), [`missed`](Failure::missed).
    ReferenceUnknown,
    /// A read no provider could answer at or above the floor of
    /// [monotonic reads](super::FailoverTransportBuilder::monotonic_reads): read again once
    /// they catch up; nothing stale was returned. [`floor`](Failure::floor),
    /// [`behind`](Failure::behind).
    BelowFloor,
    /// A follower's start block (by hash) is unknown to every provider, or no longer on the
    /// chain. [`hash`](Failure::hash).
    StartUnknown,
    /// A reorg replaced every block a follower remembers: the fork is older. Follow again from
    /// [`restart_from`](Failure::restart_from) or earlier.
    ReorgTooDeep,
    /// Every provider asked answered a block that failed its check (its header does not hash
    /// to its hash, or it is not the block asked for): no block was returned, and each is off
    /// the chain for the transport's lack period. [`forged_by`](Failure::forged_by).
    Forged,
    /// A [consensus read](super::FailoverTransportBuilder::consensus) whose providers did not
    /// agree: no answer reached the quorum. [`ballots`](Failure::ballots) give each
    /// provider's answer digest.
    NoConsensus,
}

impl<'a> Failure<'a> {
    /// The failure inside `err`, if it is one of the transport's (or its bundles' or a
    /// follower's).
    pub fn find(err: &'a TransportError) -> Option<Failure<'a>> {
        let kind = match err {
            RpcError::ErrorResp(payload) => return Some(Failure(Found::Answered(payload))),
            RpcError::Transport(kind) => kind,
            _ => return None,
        };
        let custom = match kind {
            TransportErrorKind::HttpError(http) => return Some(Failure(Found::Status(http))),
            TransportErrorKind::Custom(custom) => &**custom,
            _ => return None,
        };
        if let Some(raised) = custom.downcast_ref::<Raised>() {
            return Some(Failure(Found::Raised(raised)));
        }
        if let Some(err) = custom.downcast_ref::<reqwest_middleware::Error>() {
            return Error::from_middleware(err).map(|e| Failure(Found::Read(e)));
        }
        custom.downcast_ref::<Error>().map(|e| Failure(Found::Read(e)))
    }

    /// What kind of failure it is.
    pub fn kind(&self) -> FailureKind {
        match self.0 {
            Found::Read(_) => FailureKind::Read,
            Found::Status(_) => FailureKind::Status,
            Found::Answered(_) => FailureKind::Answered,
            Found::Raised(raised) => match raised.detail {
                Detail::PossiblySubmitted { .. } => FailureKind::PossiblySubmitted,
                Detail::NeverSent { .. } => FailureKind::NeverSent,
                Detail::Broadcast(_) => FailureKind::Broadcast,
                Detail::FilterPinned { .. } => FailureKind::FilterPinned,
                Detail::BundleRefused { .. } => FailureKind::BundleRefused,
                Detail::ReferenceUnknown { .. } => FailureKind::ReferenceUnknown,
                Detail::BelowFloor { .. } => FailureKind::BelowFloor,
                Detail::StartUnknown { .. } => FailureKind::StartUnknown,
                Detail::ReorgTooDeep { .. } => FailureKind::ReorgTooDeep,
                Detail::Forged { .. } => FailureKind::Forged,
                Detail::NoConsensus { .. } => FailureKind::NoConsensus,
            },
        }
    }

    fn detail(&self) -> Option<&'a Detail> {
        match self.0 {
            Found::Raised(raised) => Some(&raised.detail),
            _ => None,
        }
    }

    /// The providers whose blocks failed their check ([`FailureKind::Forged`]; empty for
    /// other kinds).
    pub fn forged_by(&self) -> &'a [EndpointId] {
        match self.detail() {
            Some(Detail::Forged { by, .. }) => by,
            _ => &[],
        }
    }

    /// Each provider a consensus read asked, with a digest of its answer (the first 8 bytes
    /// of the Keccak-256 of the normalised answer, in hex; `None` when it did not answer):
    /// [`FailureKind::NoConsensus`]; empty for other kinds.
    pub fn ballots(&self) -> &'a [(EndpointId, Option<String>)] {
        match self.detail() {
            Some(Detail::NoConsensus { ballots, .. }) => ballots,
            _ => &[],
        }
    }

    /// failnext's own error of a failed read or a lost write (its attempts, its trace), when
    /// there is one.
    pub fn error(&self) -> Option<&'a Error> {
        match self.0 {
            Found::Read(e) => Some(e),
            Found::Raised(raised) => raised.error(),
            _ => None,
        }
    }

    /// Every attempt the request made, each with its endpoint and error (empty when the
    /// failure is not one of failnext's request loop).
    pub fn attempts(&self) -> &'a [Attempt] {
        self.error().map_or(&[], Error::attempts)
    }

    /// The transactions concerned: a lost or unsent broadcast's hashes, computed locally from
    /// the signed bytes (empty for `eth_sendTransaction`, which the node signs).
    pub fn hashes(&self) -> &'a [B256] {
        match self.detail() {
            Some(Detail::PossiblySubmitted { hashes, .. } | Detail::NeverSent { hashes, .. }) => hashes,
            Some(Detail::Broadcast(outcome)) => std::slice::from_ref(outcome.hash_ref()),
            Some(Detail::StartUnknown { hash, .. }) => std::slice::from_ref(hash),
            _ => &[],
        }
    }

    /// The first of [`hashes`](Failure::hashes): a broadcast's transaction, a follower's start
    /// block.
    pub fn hash(&self) -> Option<B256> {
        self.hashes().first().copied()
    }

    /// The endpoint the failure names: the one a lost write went to, the one holding a
    /// filter, the last one a read tried.
    pub fn endpoint(&self) -> Option<&'a EndpointId> {
        match (self.0, self.detail()) {
            (_, Some(Detail::PossiblySubmitted { endpoint, .. })) => endpoint.as_ref(),
            (_, Some(Detail::FilterPinned { endpoint, .. })) => Some(endpoint),
            (Found::Read(e), _) => e.attempts().last().map(Attempt::endpoint),
            _ => None,
        }
    }

    /// How a write was lost, or why it never left.
    pub fn fault(&self) -> Option<Fault> {
        match self.detail()? {
            Detail::PossiblySubmitted { fault, .. } | Detail::NeverSent { fault, .. } => Some(*fault),
            _ => None,
        }
    }

    /// The outcome of a fan-out no endpoint accepted, endpoint by endpoint.
    pub fn broadcast(&self) -> Option<&'a Broadcast> {
        match self.detail()? {
            Detail::Broadcast(outcome) => Some(outcome),
            _ => None,
        }
    }

    /// The filter a pinned filter call used.
    pub fn filter(&self) -> Option<&'a str> {
        match self.detail()? {
            Detail::FilterPinned { filter, .. } => Some(filter),
            _ => None,
        }
    }

    /// The method of a call a bundle refused.
    pub fn method(&self) -> Option<&'a str> {
        match self.detail()? {
            Detail::BundleRefused { method, .. } => Some(method),
            _ => None,
        }
    }

    /// The block a bundle's failure is about: its reference.
    pub fn reference(&self) -> Option<BlockRef> {
        match self.detail()? {
            Detail::ReferenceUnknown { reference, .. } => Some(*reference),
            _ => None,
        }
    }

    /// The endpoints that did not know a bundle's reference (or had no state at it), in the
    /// order they said so.
    pub fn missed(&self) -> &'a [EndpointId] {
        match self.detail() {
            Some(Detail::ReferenceUnknown { missed, .. }) => missed,
            _ => &[],
        }
    }

    /// The floor of monotonic reads no provider reached: the highest head already observed
    /// (or a bundle's reference number).
    pub fn floor(&self) -> Option<u64> {
        match self.detail()? {
            Detail::BelowFloor { floor, .. } => Some(*floor),
            _ => None,
        }
    }

    /// The providers left out for being below the floor, with their head when known.
    pub fn behind(&self) -> &'a [(EndpointId, Option<u64>)] {
        match self.detail() {
            Some(Detail::BelowFloor { behind, .. }) => behind,
            _ => &[],
        }
    }

    /// Where to follow again from after a reorg deeper than a follower remembers: the oldest
    /// block it remembered, now replaced.
    pub fn restart_from(&self) -> Option<u64> {
        match self.detail()? {
            Detail::ReorgTooDeep { restart_from } => Some(*restart_from),
            _ => None,
        }
    }

    /// The HTTP status the provider tried last answered.
    pub fn status(&self) -> Option<StatusCode> {
        match self.0 {
            Found::Status(http) => StatusCode::from_u16(http.status).ok(),
            _ => None,
        }
    }

    /// alloy's own HTTP error (status and body), as its `Http` transport gives it.
    pub fn http(&self) -> Option<&'a HttpError> {
        match self.0 {
            Found::Status(http) => Some(http),
            _ => None,
        }
    }

    /// The JSON-RPC error a node answered with.
    pub fn payload(&self) -> Option<&'a ErrorPayload> {
        match self.0 {
            Found::Answered(payload) => Some(payload),
            _ => None,
        }
    }

    /// Whether sending the same call again cannot do twice what it did once: nothing was
    /// sent (never sent, a refused bundle call, a pinned filter) or the call is a read.
    /// `false` for a write that may have been submitted.
    pub fn is_safe_to_resend(&self) -> bool {
        match self.detail() {
            Some(Detail::PossiblySubmitted { .. }) => false,
            Some(Detail::Broadcast(outcome)) => !outcome.possibly_submitted(),
            _ => true,
        }
    }

    /// Whether no provider answered a read ([`FailureKind::Read`]).
    pub fn is_read(&self) -> bool {
        self.kind() == FailureKind::Read
    }

    /// Whether it is an HTTP status ([`FailureKind::Status`]).
    pub fn is_status(&self) -> bool {
        self.kind() == FailureKind::Status
    }

    /// Whether a node answered with a JSON-RPC error ([`FailureKind::Answered`]).
    pub fn is_answered(&self) -> bool {
        self.kind() == FailureKind::Answered
    }

    /// Whether a write may have been submitted ([`FailureKind::PossiblySubmitted`]).
    pub fn is_possibly_submitted(&self) -> bool {
        self.kind() == FailureKind::PossiblySubmitted
    }

    /// Whether a write provably never left ([`FailureKind::NeverSent`]).
    pub fn is_never_sent(&self) -> bool {
        self.kind() == FailureKind::NeverSent
    }

    /// Whether a fan-out found no taker ([`FailureKind::Broadcast`]).
    pub fn is_broadcast(&self) -> bool {
        self.kind() == FailureKind::Broadcast
    }

    /// Whether a filter call could not reach its filter ([`FailureKind::FilterPinned`]).
    pub fn is_filter_pinned(&self) -> bool {
        self.kind() == FailureKind::FilterPinned
    }

    /// Whether a bundle refused the call ([`FailureKind::BundleRefused`]).
    pub fn is_bundle_refused(&self) -> bool {
        self.kind() == FailureKind::BundleRefused
    }

    /// Whether no provider knew a bundle's reference ([`FailureKind::ReferenceUnknown`]).
    pub fn is_reference_unknown(&self) -> bool {
        self.kind() == FailureKind::ReferenceUnknown
    }

    /// Whether no provider reached the floor of monotonic reads ([`FailureKind::BelowFloor`]).
    pub fn is_below_floor(&self) -> bool {
        self.kind() == FailureKind::BelowFloor
    }

    /// Whether a follower's start block is unknown ([`FailureKind::StartUnknown`]).
    pub fn is_start_unknown(&self) -> bool {
        self.kind() == FailureKind::StartUnknown
    }

    /// Whether a reorg went deeper than a follower remembers ([`FailureKind::ReorgTooDeep`]).
    pub fn is_reorg_too_deep(&self) -> bool {
        self.kind() == FailureKind::ReorgTooDeep
    }

    /// The typed error as an error (not a JSON-RPC error answer, which is not one).
    fn as_dyn(&self) -> Option<&'a (dyn std::error::Error + 'static)> {
        Some(match self.0 {
            Found::Answered(_) => return None,
            Found::Read(e) => e,
            Found::Status(e) => e,
            Found::Raised(e) => e,
        })
    }
}

impl fmt::Display for Failure<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.0, self.as_dyn()) {
            (Found::Answered(payload), _) => {
                write!(f, "the node answered with error {}: {}", payload.code, payload.message)
            }
            (_, Some(err)) => fmt::Display::fmt(err, f),
            (_, None) => Ok(()),
        }
    }
}

/// Its source is the failure's own cause (a read's last attempt, a lost write's error).
impl std::error::Error for Failure<'_> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.as_dyn()?.source()
    }
}

//! [`Failure`]: every way a call through the transport can fail, found by one
//! [`Failure::find`].

use std::fmt;

use alloy_json_rpc::{ErrorPayload, RpcError};
use alloy_primitives::B256;
use alloy_transport::HttpError;
use alloy_transport::{TransportError, TransportErrorKind};

use super::broadcast::{NeverSent, PossiblySubmitted};
use super::fanout::Broadcast;
use super::monotonic::BelowFloor;
use super::plan::FilterPinned;
use super::reference::{BlockRef, ReferenceUnknown};
use super::refused::BundleRefused;
use crate::{Attempt, EndpointId, Error};

/// Why a call through a [`FailoverTransport`](super::FailoverTransport) (or one of its
/// [`Bundle`](super::Bundle)s) failed: one `match` for every failure, found in alloy's
/// `TransportError` by [`Failure::find`].
///
/// It borrows the error it was found in (each variant is the typed error the transport
/// returned), so it costs nothing to find and can be matched in place:
///
/// ```
/// use failnext::alloy::Failure;
///
/// fn explain(err: &alloy_transport::TransportError) -> String {
///     match Failure::find(err) {
///         // No provider answered a read: every attempt, with its endpoint and error.
///         Some(Failure::Read(e)) => format!("{} attempts failed: {e}", e.attempts().len()),
///         // The last provider asked answered this HTTP status (every other one failed).
///         Some(Failure::Status(http)) => format!("HTTP {}", http.status),
///         // A node answered with a JSON-RPC error (a revert, "nonce too low"): not an outage.
///         Some(Failure::Answered(payload)) => format!("refused: {}", payload.message),
///         // A write whose answer was lost: reconcile by hash, never sign again.
///         Some(Failure::PossiblySubmitted(lost)) => format!("reconcile {:?}", lost.hash()),
///         // A write that provably never left: safe to send again.
///         Some(Failure::NeverSent(never)) => format!("resend {:?}", never.hash()),
///         // A fan-out no endpoint accepted, endpoint by endpoint.
///         Some(Failure::Broadcast(outcome)) => format!("{outcome}"),
///         Some(Failure::FilterPinned(f)) => format!("new filter, {} is gone", f.endpoint()),
///         Some(Failure::BundleRefused(r)) => format!("{} is not a bundle read", r.method()),
///         Some(Failure::ReferenceUnknown(r)) => format!("restart at a new block than {}", r.reference()),
///         Some(Failure::BelowFloor(b)) => format!("wait for block {}", b.floor()),
///         // A failure of a kind added later.
///         Some(other) => other.to_string(),
///         // Not the transport's: serialization, a body alloy could not parse.
///         None => err.to_string(),
///     }
/// }
/// ```
///
/// Whatever the variant, [`error`](Failure::error) gives failnext's own [`Error`] of a failed
/// read or a lost write (with its [attempts](Error::attempts) and its
/// [trace](Error::trace)), [`hashes`](Failure::hashes) the transactions concerned,
/// [`endpoint`](Failure::endpoint) the endpoint it names, and `source()` the cause.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum Failure<'a> {
    /// No provider answered a call that may fail over (a read): every attempt failed, none
    /// was usable, the deadline passed or the failover budget was spent. The error lists
    /// every attempt.
    Read(&'a Error),
    /// The provider tried last answered a non-2xx HTTP status that is not a JSON-RPC answer
    /// (every other one failed before it, or the call may not fail over): alloy's own HTTP
    /// error, as its `Http` transport gives it, so that its retry layers see it.
    Status(&'a HttpError),
    /// A node answered with a JSON-RPC error: a revert, "nonce too low", an invalid
    /// parameter. An answer, not an outage: it is not tried elsewhere (a rate limit or an
    /// internal error is, and comes back only when no provider did better).
    Answered(&'a ErrorPayload),
    /// A write whose answer was lost after it was (or may have been) sent.
    PossiblySubmitted(&'a PossiblySubmitted),
    /// A write that provably never left.
    NeverSent(&'a NeverSent),
    /// A [fan-out](super::FailoverTransportBuilder::broadcast_to) that no endpoint accepted.
    Broadcast(&'a Broadcast),
    /// A filter call that cannot reach the provider holding its filter.
    FilterPinned(&'a FilterPinned),
    /// A call a bundle does not send.
    BundleRefused(&'a BundleRefused),
    /// A bundle read no provider could answer at the bundle's reference.
    ReferenceUnknown(&'a ReferenceUnknown),
    /// A read no provider could answer at or above the floor of monotonic reads.
    BelowFloor(&'a BelowFloor),
}

impl<'a> Failure<'a> {
    /// The failure inside `err`, if it is one of the transport's.
    pub fn find(err: &'a TransportError) -> Option<Failure<'a>> {
        let kind = match err {
            RpcError::ErrorResp(payload) => return Some(Failure::Answered(payload)),
            RpcError::Transport(kind) => kind,
            _ => return None,
        };
        let custom = match kind {
            TransportErrorKind::HttpError(http) => return Some(Failure::Status(http)),
            TransportErrorKind::Custom(custom) => &**custom,
            _ => return None,
        };
        if let Some(err) = custom.downcast_ref::<reqwest_middleware::Error>() {
            return Error::from_middleware(err).map(Failure::Read);
        }
        if let Some(err) = custom.downcast_ref::<Error>() {
            return Some(Failure::Read(err));
        }
        macro_rules! typed {
            ($($variant:ident),*) => {
                $(if let Some(e) = custom.downcast_ref::<$variant>() {
                    return Some(Failure::$variant(e));
                })*
            };
        }
        typed!(
            PossiblySubmitted,
            NeverSent,
            Broadcast,
            FilterPinned,
            BundleRefused,
            ReferenceUnknown,
            BelowFloor
        );
        None
    }

    /// failnext's own error of a failed read or a lost write (its attempts, its trace), when
    /// there is one.
    pub fn error(&self) -> Option<&'a Error> {
        match *self {
            Failure::Read(e) => Some(e),
            Failure::PossiblySubmitted(lost) => lost.error(),
            Failure::NeverSent(never) => never.error(),
            _ => None,
        }
    }

    /// Every attempt the request made, each with its endpoint and error (empty when the
    /// failure is not one of failnext's request loop).
    pub fn attempts(&self) -> &'a [Attempt] {
        self.error().map_or(&[], Error::attempts)
    }

    /// The transactions concerned: a lost or unsent broadcast's hashes, computed locally.
    pub fn hashes(&self) -> &'a [B256] {
        match *self {
            Failure::PossiblySubmitted(lost) => lost.hashes(),
            Failure::NeverSent(never) => never.hashes(),
            Failure::Broadcast(outcome) => std::slice::from_ref(outcome.hash_ref()),
            _ => &[],
        }
    }

    /// The endpoint the failure names: the one a lost write went to, the one holding a
    /// filter, the last one a read tried.
    pub fn endpoint(&self) -> Option<&'a EndpointId> {
        match *self {
            Failure::PossiblySubmitted(lost) => lost.endpoint(),
            Failure::FilterPinned(f) => Some(f.endpoint()),
            Failure::Read(e) => e.attempts().last().map(Attempt::endpoint),
            _ => None,
        }
    }

    /// The block a bundle's failure is about.
    pub fn reference(&self) -> Option<BlockRef> {
        match *self {
            Failure::ReferenceUnknown(r) => Some(r.reference()),
            _ => None,
        }
    }

    /// Whether sending the same call again cannot do twice what it did once: nothing was
    /// sent ([`NeverSent`], a refused bundle call, a pinned filter) or the call is a read.
    /// `false` for a write that may have been submitted.
    pub fn is_safe_to_resend(&self) -> bool {
        match *self {
            Failure::PossiblySubmitted(_) => false,
            Failure::Broadcast(outcome) => !outcome.possibly_submitted(),
            _ => true,
        }
    }

    /// The typed error as an error (not a JSON-RPC error answer, which is not one).
    fn as_dyn(&self) -> Option<&'a (dyn std::error::Error + 'static)> {
        Some(match *self {
            Failure::Answered(_) => return None,
            Failure::Read(e) => e,
            Failure::Status(e) => e,
            Failure::PossiblySubmitted(e) => e,
            Failure::NeverSent(e) => e,
            Failure::Broadcast(e) => e,
            Failure::FilterPinned(e) => e,
            Failure::BundleRefused(e) => e,
            Failure::ReferenceUnknown(e) => e,
            Failure::BelowFloor(e) => e,
        })
    }
}

impl fmt::Display for Failure<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self, self.as_dyn()) {
            (Failure::Answered(payload), _) => {
                write!(f, "the node answered with error {}: {}", payload.code, payload.message)
            }
            (_, Some(err)) => fmt::Display::fmt(err, f),
            (_, None) => Ok(()),
        }
    }
}

/// Its source is the typed error's own cause (a read's last attempt, a lost write's error).
impl std::error::Error for Failure<'_> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.as_dyn()?.source()
    }
}

//! [`Raised`]: the transport's and the follower's own failures, as the one custom error they
//! put into alloy's `TransportError`, with a typed reason each ([`Fault`], [`Refusal`],
//! [`Pin`]), never a sentence built for the occasion.

use std::fmt;
use std::sync::Arc;

use alloy_primitives::B256;
use alloy_transport::{TransportError, TransportErrorKind};

use crate::EndpointId;
use crate::alloy::block::BlockRef;
use crate::alloy::fanout::{Broadcast, Fault};

/// What lost or stopped a write: the request's error (failnext's, with its attempts, or the
/// transport's own), shared so that the failure stays cheap to clone.
pub(crate) type Cause = Arc<reqwest_middleware::Error>;

/// Why a bundle does not send a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// A write: a bundle only reads.
    Write,
    /// The pending nonce: it counts transactions no block holds.
    PendingNonce,
    /// A read whose block parameter could not be rewritten to the reference.
    Unwritable,
}

/// Why a filter call cannot reach the provider holding its filter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Pin {
    /// That endpoint is not usable now (cooling, ineligible or excluded).
    Unusable,
    /// The same batch uses `filter` of another endpoint.
    Batched { filter: String, endpoint: EndpointId },
}

/// A failure of the transport's or the follower's own, with what it is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Detail {
    PossiblySubmitted { hashes: Vec<B256>, endpoint: Option<EndpointId>, fault: Fault },
    NeverSent { hashes: Vec<B256>, fault: Fault },
    Broadcast(Broadcast),
    FilterPinned { filter: String, endpoint: EndpointId, pin: Pin },
    BundleRefused { method: String, refusal: Refusal },
    ReferenceUnknown { reference: BlockRef, missed: Vec<EndpointId> },
    BelowFloor { floor: u64, behind: Vec<(EndpointId, Option<u64>)> },
    StartUnknown { hash: B256, replaced_by: Option<B256> },
    ReorgTooDeep { restart_from: u64 },
    Forged { number: Option<u64>, by: Vec<EndpointId> },
    NoConsensus { method: String, agree: usize, ballots: Vec<(EndpointId, Option<String>)> },
}

/// The one custom error the transport and the follower raise (a read no provider answered is
/// failnext's own [`Error`](crate::Error), an HTTP status and a node's JSON-RPC error are
/// alloy's own): found and read through [`Failure`](super::Failure).
#[derive(Clone, Debug)]
pub(crate) struct Raised {
    pub(crate) detail: Detail,
    /// The error that lost or stopped a write, when there was one.
    pub(crate) cause: Option<Cause>,
}

impl Raised {
    pub(crate) fn new(detail: Detail) -> Raised {
        Raised { detail, cause: None }
    }

    pub(crate) fn into_transport(self) -> TransportError {
        TransportErrorKind::custom(self)
    }

    /// The cause in parentheses, when there is one and the fault does not say it all.
    fn cause_text(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(cause) = &self.cause else { return Ok(()) };
        match self.error() {
            Some(e) if e.is_no_usable_endpoint() => Ok(()),
            Some(e) => write!(f, " ({e})"),
            None => write!(f, " ({cause})"),
        }
    }

    /// failnext's own error inside the cause.
    pub(crate) fn error(&self) -> Option<&crate::Error> {
        crate::Error::from_middleware(self.cause.as_deref()?)
    }
}

/// Equal when they say the same (the cause is not compared).
impl PartialEq for Raised {
    fn eq(&self, other: &Self) -> bool {
        self.detail == other.detail
    }
}

impl fmt::Display for Raised {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.detail {
            Detail::PossiblySubmitted { hashes, endpoint, fault } => {
                f.write_str("broadcast possibly submitted, its answer lost")?;
                if let Some(e) = endpoint {
                    write!(f, " (endpoint {e})")?;
                }
                write!(f, ": {fault}")?;
                self.cause_text(f)?;
                match hashes.as_slice() {
                    [] => f.write_str(
                        "; the node signs, so the hash is unknown: reconcile by the sender's nonce",
                    ),
                    [h] => write!(f, "; reconcile by hash {h}, do not sign again"),
                    hs => write!(f, "; reconcile by hashes {}, do not sign again", join(hs)),
                }
            }
            Detail::NeverSent { hashes, fault } => {
                write!(f, "broadcast never sent: {fault}")?;
                self.cause_text(f)?;
                if !hashes.is_empty() {
                    write!(f, " (transaction {}); safe to send again", join(hashes))?;
                }
                Ok(())
            }
            Detail::Broadcast(outcome) => fmt::Display::fmt(outcome, f),
            other => describe(other, f),
        }
    }
}

/// What a failure of a read, a bundle, a filter or the follower says.
fn describe(detail: &Detail, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match detail {
        Detail::FilterPinned { filter, endpoint, pin } => {
            write!(f, "filter {filter} was created on endpoint {endpoint} and cannot be used elsewhere: ")?;
            match pin {
                Pin::Unusable => f.write_str(
                    "that endpoint is not usable now (cooling, ineligible or excluded); the filter lives only there",
                )?,
                Pin::Batched { filter, endpoint } => {
                    write!(f, "the same batch uses filter {filter} of endpoint {endpoint}")?
                }
            }
            f.write_str("; create a new filter")
        }
        Detail::BundleRefused { method, refusal } => {
            write!(f, "{method} is not sent through a bundle: ")?;
            f.write_str(match refusal {
                Refusal::Write => "a bundle only reads; send writes through the transport",
                Refusal::PendingNonce => "the pending nonce counts transactions no block holds yet",
                Refusal::Unwritable => "its block parameter could not be written",
            })
        }
        Detail::ReferenceUnknown { reference, missed } => {
            write!(f, "no usable provider knows the reference block {reference}")?;
            if !missed.is_empty() {
                let ids: Vec<&str> = missed.iter().map(EndpointId::as_str).collect();
                write!(f, " (unknown to {})", ids.join(", "))?;
            }
            f.write_str("; restart the decision at a new reference")
        }
        Detail::BelowFloor { floor, behind } => {
            write!(f, "no provider is at or above block {floor} (the highest head already observed)")?;
            for (k, (endpoint, head)) in behind.iter().enumerate() {
                f.write_str(if k == 0 { ": " } else { ", " })?;
                match head {
                    Some(h) => write!(f, "{endpoint} at {h}")?,
                    None => write!(f, "{endpoint} at an unknown head")?,
                }
            }
            f.write_str("; read again once they catch up")
        }
        Detail::StartUnknown { hash, replaced_by: None } => {
            write!(f, "the follower cannot start: no provider knows block {hash}")
        }
        Detail::StartUnknown { hash, replaced_by: Some(now) } => {
            write!(
                f,
                "the follower cannot start: block {hash} is not on the chain, its height holds {now} now"
            )
        }
        Detail::ReorgTooDeep { restart_from } => write!(
            f,
            "a reorg replaced every remembered block: the fork is before block {restart_from}; follow again from there or earlier"
        ),
        Detail::NoConsensus { method, agree, ballots } => {
            write!(f, "no {agree} providers gave the same answer to {method}")?;
            for (k, (endpoint, said)) in ballots.iter().enumerate() {
                f.write_str(if k == 0 { ": " } else { ", " })?;
                match said {
                    Some(digest) => write!(f, "{endpoint} answered {digest}")?,
                    None => write!(f, "{endpoint} did not answer")?,
                }
            }
            Ok(())
        }
        Detail::Forged { number, by } => {
            f.write_str("every provider asked answered a block that is not the chain's")?;
            if let Some(n) = number {
                write!(f, " (block {n})")?;
            }
            let ids: Vec<&str> = by.iter().map(EndpointId::as_str).collect();
            write!(f, ": {}; they are off the chain for a while", ids.join(", "))
        }
        Detail::PossiblySubmitted { .. } | Detail::NeverSent { .. } | Detail::Broadcast(_) => Ok(()),
    }
}

/// Its source is the error that lost or stopped a write: failnext's, with its attempts, when
/// there is one, else the transport's.
impl std::error::Error for Raised {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self.error() {
            Some(e) => Some(e),
            None => self.cause.as_deref().map(|c| c as &(dyn std::error::Error + 'static)),
        }
    }
}

fn join(hashes: &[B256]) -> String {
    hashes.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloy::{Failure, FailureKind};

    #[test]
    fn each_failure_says_what_to_do_and_is_found_as_its_kind() {
        let h = B256::repeat_byte(0xab);
        let lost = Raised::new(Detail::PossiblySubmitted {
            hashes: vec![h],
            endpoint: Some("primary".into()),
            fault: Fault::AnswerLost,
        });
        let text = lost.to_string();
        assert!(
            text.contains("primary") && text.contains(&h.to_string()) && text.contains("do not sign again")
        );
        let err = lost.into_transport();
        let found = Failure::find(&err).expect("found");
        assert_eq!(found.kind(), FailureKind::PossiblySubmitted);
        assert!(found.is_possibly_submitted() && !found.is_safe_to_resend());
        assert_eq!((found.hash(), found.fault()), (Some(h), Some(Fault::AnswerLost)));
        assert_eq!(found.endpoint().map(EndpointId::as_str), Some("primary"));
        let kind = err.as_transport_err().expect("a transport error");
        assert!(!kind.is_retry_err(), "alloy's retry layers leave it alone");

        let never = Raised::new(Detail::NeverSent { hashes: vec![h], fault: Fault::ConnectionRefused });
        assert!(never.to_string().contains("safe to send again"));
        let err = never.into_transport();
        assert!(Failure::find(&err).is_some_and(|f| f.is_never_sent() && f.is_safe_to_resend()));

        let behind = vec![("primary".into(), Some(0)), ("backup".into(), None)];
        let below = Raised::new(Detail::BelowFloor { floor: 5, behind });
        let text = below.to_string();
        assert!(
            text.contains("block 5") && text.contains("primary at 0") && text.contains("read again"),
            "{text}"
        );
        let err = below.into_transport();
        let found = Failure::find(&err).expect("found");
        assert_eq!(
            (found.kind(), found.floor(), found.behind().len()),
            (FailureKind::BelowFloor, Some(5), 2)
        );

        let deep = Raised::new(Detail::ReorgTooDeep { restart_from: 7 }).into_transport();
        assert_eq!(Failure::find(&deep).and_then(|f| f.restart_from()), Some(7));
    }

    #[test]
    fn a_write_that_never_left_is_told_from_one_that_may_have() {
        for fault in [Fault::NoUsableEndpoint, Fault::NotAttempted, Fault::ConnectionRefused] {
            assert!(fault.never_sent(), "{fault}");
        }
        for fault in [Fault::AnswerLost, Fault::BodyBrokeOff, Fault::Status(502)] {
            assert!(!fault.never_sent(), "{fault}");
        }
    }
}

//! Fan-out: one signed raw transaction sent, as the same bytes, to every endpoint the user
//! named with [`broadcast_to`](super::FailoverTransportBuilder::broadcast_to), and the one
//! merged outcome ([`Broadcast`]) that says what each endpoint did with it.

use std::fmt;

use alloy_primitives::B256;

use crate::EndpointId;

/// What one endpoint of a fan-out did with the transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Delivery {
    /// The endpoint answered with the transaction's hash (or said it already knew it).
    Accepted,
    /// The request was, or may have been, written and its answer was lost (timeout, reset,
    /// a body that broke off, a gateway's 5xx): it may be in that endpoint's mempool.
    PossiblySubmitted {
        /// What lost the answer.
        fault: Fault,
    },
    /// The endpoint answered with a JSON-RPC error: it refused the transaction ("nonce too
    /// low", "underpriced", an invalid signature).
    Refused {
        /// The JSON-RPC error code.
        code: i64,
        /// The node's message.
        message: String,
    },
    /// Nothing reached the endpoint: its connection was refused, or it was not usable (its
    /// breaker open and its trial held, or ineligible).
    NeverSent {
        /// Why not.
        fault: Fault,
    },
}

impl Delivery {
    /// Whether the endpoint may have the transaction (accepted, or possibly submitted).
    pub fn may_have_it(&self) -> bool {
        matches!(self, Delivery::Accepted | Delivery::PossiblySubmitted { .. })
    }
}

impl fmt::Display for Delivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Delivery::Accepted => f.write_str("accepted"),
            Delivery::PossiblySubmitted { fault } => write!(f, "possibly submitted ({fault})"),
            Delivery::Refused { code, message } => write!(f, "refused ({code}: {message})"),
            Delivery::NeverSent { fault } => write!(f, "never sent ({fault})"),
        }
    }
}

/// What happened to a write that was not accepted: why it never left, or why its answer is
/// lost. A [`Delivery`] of a fan-out and
/// [`Failure::fault`](super::Failure::fault) say it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Fault {
    /// Never sent: no endpoint was usable (breakers open with their trials held, ineligible,
    /// excluded).
    NoUsableEndpoint,
    /// Never sent: no attempt was made (an unknown endpoint named by the call, a deadline that
    /// passed while waiting for a breaker's trial).
    NotAttempted,
    /// Never sent: no provider accepted the connection.
    ConnectionRefused,
    /// Possibly submitted: the request may have been written and its answer was lost (a
    /// timeout, a reset connection); the failure's source says how.
    AnswerLost,
    /// Possibly submitted: the answer's body broke off.
    BodyBrokeOff,
    /// Possibly submitted: the provider (or a gateway before it) answered this HTTP status
    /// without a JSON-RPC answer.
    Status(u16),
}

impl Fault {
    /// Whether the write provably never left (safe to send again as it is).
    pub fn never_sent(self) -> bool {
        matches!(self, Fault::NoUsableEndpoint | Fault::NotAttempted | Fault::ConnectionRefused)
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::NoUsableEndpoint => f.write_str("no endpoint was usable, nothing was sent"),
            Fault::NotAttempted => f.write_str("no attempt was made, nothing was sent"),
            Fault::ConnectionRefused => f.write_str("no provider accepted the connection"),
            Fault::AnswerLost => f.write_str("the answer was lost"),
            Fault::BodyBrokeOff => f.write_str("the answer's body broke off"),
            Fault::Status(status) => write!(f, "the provider answered HTTP {status}"),
        }
    }
}

/// The merged outcome of one fan-out: the transaction's hash (computed locally from the
/// signed bytes) and, for each endpoint it was sent to, in the order
/// [`broadcast_to`](super::FailoverTransportBuilder::broadcast_to) named them, what that
/// endpoint did with it.
///
/// When at least one endpoint accepted the transaction the call succeeds with its hash, and
/// [`FailoverTransport::broadcast_outcome`](super::FailoverTransport::broadcast_outcome)
/// gives this outcome; when none did, and none refused it with an answer, the call fails with
/// it ([`FailureKind::Broadcast`](super::FailureKind::Broadcast)). When every endpoint that was
/// reached refused it, the call fails with the first refusal, as a single write would.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Broadcast {
    pub(crate) hash: B256,
    pub(crate) deliveries: Vec<(EndpointId, Delivery)>,
}

impl Broadcast {
    /// The transaction's hash, computed locally: the same at every endpoint.
    pub fn hash(&self) -> B256 {
        self.hash
    }

    pub(crate) fn hash_ref(&self) -> &B256 {
        &self.hash
    }

    /// Each endpoint, with what it did.
    pub fn deliveries(&self) -> &[(EndpointId, Delivery)] {
        &self.deliveries
    }

    /// What endpoint `id` did, if the transaction was sent there.
    pub fn delivery(&self, id: &str) -> Option<&Delivery> {
        self.deliveries.iter().find(|(e, _)| e.as_str() == id).map(|(_, d)| d)
    }

    /// The endpoints that accepted it.
    pub fn accepted(&self) -> impl Iterator<Item = &EndpointId> {
        self.deliveries.iter().filter(|(_, d)| *d == Delivery::Accepted).map(|(e, _)| e)
    }

    /// Whether some endpoint may have it without having said so: then the transaction may be
    /// out; reconcile by [`hash`](Broadcast::hash), never sign again.
    pub fn possibly_submitted(&self) -> bool {
        self.deliveries.iter().any(|(_, d)| matches!(d, Delivery::PossiblySubmitted { .. }))
    }
}

impl fmt::Display for Broadcast {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "broadcast of {}:", self.hash)?;
        for (i, (endpoint, delivery)) in self.deliveries.iter().enumerate() {
            let sep = if i == 0 { " " } else { ", " };
            write!(f, "{sep}{endpoint} {delivery}")?;
        }
        if self.accepted().next().is_none() {
            if self.possibly_submitted() {
                f.write_str("; it may be out: reconcile by hash, do not sign again")?;
            } else {
                f.write_str("; no endpoint has it: safe to send again")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fanout_outcome_says_per_endpoint_what_happened_and_what_to_do() {
        let outcome = Broadcast {
            hash: B256::repeat_byte(7),
            deliveries: vec![
                ("relay".into(), Delivery::NeverSent { fault: Fault::ConnectionRefused }),
                ("public".into(), Delivery::PossiblySubmitted { fault: Fault::AnswerLost }),
            ],
        };
        let text = outcome.to_string();
        assert!(text.contains("relay never sent") && text.contains("public possibly submitted"), "{text}");
        assert!(text.contains("do not sign again"), "{text}");
        assert!(outcome.possibly_submitted());
        assert_eq!(outcome.accepted().count(), 0);
        assert!(outcome.delivery("public").is_some_and(Delivery::may_have_it));
    }
}

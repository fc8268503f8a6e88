//! Broadcasts: the hash and sender of a raw transaction, computed locally, and the two typed
//! ways a broadcast can end without an answer.

use std::fmt;
use std::sync::Arc;

use alloy_consensus::transaction::SignerRecoverable;
use alloy_eips::eip2718::Decodable2718;
use alloy_primitives::{Address, B256, keccak256};
use alloy_transport::{TransportError, TransportErrorKind};

use crate::EndpointId;

/// A raw transaction as the transport sees it: its hash and, when recoverable, its sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RawTx {
    pub(crate) hash: B256,
    pub(crate) sender: Option<Address>,
}

impl RawTx {
    /// Decodes `raw` (EIP-2718: legacy, typed, or an EIP-4844 transaction in its network form
    /// with blobs). Bytes that do not decode still get a hash, `keccak256(raw)`, which is the
    /// transaction hash of every form but the blob network form.
    pub(crate) fn of(raw: &[u8]) -> RawTx {
        let mut buf = raw;
        if let Ok(tx) = alloy_consensus::transaction::PooledTransaction::decode_2718(&mut buf) {
            return RawTx { hash: *tx.hash(), sender: tx.recover_signer().ok() };
        }
        let mut buf = raw;
        if let Ok(tx) = alloy_consensus::TxEnvelope::decode_2718(&mut buf) {
            return RawTx { hash: *tx.hash(), sender: tx.recover_signer().ok() };
        }
        RawTx { hash: keccak256(raw), sender: None }
    }
}

/// A broadcast that may have reached a provider, but whose answer was lost: the request was
/// written (or may have been), and then the connection timed out, was reset or closed before
/// the answer, the answer's body broke off, or a gateway answered 5xx.
///
/// **Do not sign again.** The transaction may be in a mempool already; a new signature with
/// the same nonce races it, a new nonce pays twice. Reconcile by hash instead: look the hash
/// up ([`hash`](PossiblySubmitted::hash)) until it is mined, or until its nonce is taken by
/// another transaction.
///
/// ```ignore
/// // with an alloy `provider` on a `FailoverTransport` (runs as the example `alloy-write`)
/// match provider.send_raw_transaction(&raw).await {
///     Ok(pending) => println!("sent: {}", pending.tx_hash()),
///     Err(err) => match PossiblySubmitted::find(&err) {
///         // Not "sign again": wait for this hash, or for its nonce to be taken.
///         Some(lost) => reconcile(&provider, lost.hash().unwrap()).await?,
///         None if NeverSent::find(&err).is_some() => retry_later(raw),
///         None => return Err(err.into()), // a JSON-RPC error: the node refused it
///     },
/// }
/// ```
///
/// The transport returns it as the custom error of alloy's `TransportErrorKind`, so alloy's
/// retry layers do not retry it; find it with [`PossiblySubmitted::find`].
#[derive(Clone, Debug)]
pub struct PossiblySubmitted {
    pub(crate) hashes: Vec<B256>,
    pub(crate) endpoint: Option<EndpointId>,
    pub(crate) why: String,
    /// The error that lost the answer, when there was one (a body that broke off has none).
    pub(crate) cause: Option<Cause>,
}

/// What lost or stopped a broadcast: the request's error (failnext's, with its attempts, or
/// the transport's own), shared so that the typed errors stay cheap to clone.
pub(crate) type Cause = Arc<reqwest_middleware::Error>;

/// failnext's own error inside a cause.
fn failnext_error(cause: Option<&Cause>) -> Option<&crate::Error> {
    crate::Error::from_middleware(cause?)
}

/// A cause as an error source: failnext's error when there is one, else the transport's.
fn source_of(cause: Option<&Cause>) -> Option<&(dyn std::error::Error + 'static)> {
    match failnext_error(cause) {
        Some(e) => Some(e),
        None => cause.map(|c| &**c as &(dyn std::error::Error + 'static)),
    }
}

/// Equal when they say the same (the cause is not compared).
impl PartialEq for PossiblySubmitted {
    fn eq(&self, other: &Self) -> bool {
        (&self.hashes, &self.endpoint, &self.why) == (&other.hashes, &other.endpoint, &other.why)
    }
}

impl Eq for PossiblySubmitted {}

impl PossiblySubmitted {
    /// The hash of the broadcast transaction, computed locally from the raw bytes; `None` for
    /// `eth_sendTransaction` (the node signs, so only it knows the hash).
    pub fn hash(&self) -> Option<B256> {
        self.hashes.first().copied()
    }

    /// Every raw transaction's hash, for a batch of broadcasts.
    pub fn hashes(&self) -> &[B256] {
        &self.hashes
    }

    /// The endpoint the broadcast went to, when known.
    pub fn endpoint(&self) -> Option<&EndpointId> {
        self.endpoint.as_ref()
    }

    /// failnext's error of the request, with every attempt (the one whose answer was lost
    /// last), when the request loop ended with one.
    pub fn error(&self) -> Option<&crate::Error> {
        failnext_error(self.cause.as_ref())
    }

    /// This error inside an alloy `TransportError`, if it is one.
    pub fn find(err: &TransportError) -> Option<&PossiblySubmitted> {
        custom(err)?.downcast_ref()
    }

    pub(crate) fn into_transport(self) -> TransportError {
        TransportErrorKind::custom(self)
    }
}

impl fmt::Display for PossiblySubmitted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("broadcast possibly submitted, its answer lost")?;
        if let Some(e) = &self.endpoint {
            write!(f, " (endpoint {e})")?;
        }
        write!(f, ": {}", self.why)?;
        match self.hashes.as_slice() {
            [] => f.write_str("; the node signs, so the hash is unknown: reconcile by the sender's nonce"),
            [h] => write!(f, "; reconcile by hash {h}, do not sign again"),
            hs => write!(f, "; reconcile by hashes {}, do not sign again", join(hs)),
        }
    }
}

impl std::error::Error for PossiblySubmitted {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        source_of(self.cause.as_ref())
    }
}

/// A broadcast that provably never left: no provider accepted a connection for it (every
/// attempt was refused, no endpoint was usable, or no attempt was made at all: an unknown
/// endpoint named by the call, a deadline that passed while waiting for a breaker's trial).
/// Safe to send again, as it is.
#[derive(Clone, Debug)]
pub struct NeverSent {
    pub(crate) hashes: Vec<B256>,
    pub(crate) why: String,
    /// The error that stopped it (refused connections, no usable endpoint), when there was one.
    pub(crate) cause: Option<Cause>,
}

/// Equal when they say the same (the cause is not compared).
impl PartialEq for NeverSent {
    fn eq(&self, other: &Self) -> bool {
        (&self.hashes, &self.why) == (&other.hashes, &other.why)
    }
}

impl Eq for NeverSent {}

impl NeverSent {
    /// The hash of the transaction that was not sent (see [`PossiblySubmitted::hash`]).
    pub fn hash(&self) -> Option<B256> {
        self.hashes.first().copied()
    }

    /// Every raw transaction's hash, for a batch of broadcasts.
    pub fn hashes(&self) -> &[B256] {
        &self.hashes
    }

    /// failnext's error of the request (its attempts, each refused), when the request loop
    /// ended with one.
    pub fn error(&self) -> Option<&crate::Error> {
        failnext_error(self.cause.as_ref())
    }

    /// This error inside an alloy `TransportError`, if it is one.
    pub fn find(err: &TransportError) -> Option<&NeverSent> {
        custom(err)?.downcast_ref()
    }

    pub(crate) fn into_transport(self) -> TransportError {
        TransportErrorKind::custom(self)
    }
}

impl fmt::Display for NeverSent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "broadcast never sent: {}", self.why)?;
        if !self.hashes.is_empty() {
            write!(f, " (transaction {}); safe to send again", join(&self.hashes))?;
        }
        Ok(())
    }
}

impl std::error::Error for NeverSent {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        source_of(self.cause.as_ref())
    }
}

fn custom(err: &TransportError) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
    err.as_transport_err()?.as_custom()
}

fn join(hashes: &[B256]) -> String {
    hashes.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

/// Whether a JSON-RPC error message says the node already has this very transaction (geth
/// "already known", Nethermind "AlreadyKnown", Besu "Known transaction", Erigon/Reth
/// "already imported", OpenEthereum "Transaction with the same hash was already imported").
pub(crate) fn is_already_known(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("already known")
        || m.contains("alreadyknown")
        || m.contains("known transaction")
        || m.contains("already imported")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undecodable_bytes_still_get_their_keccak_as_hash() {
        let tx = RawTx::of(&[0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(tx.hash, keccak256([0xde, 0xad, 0xbe, 0xef]));
        assert_eq!(tx.sender, None);
    }

    #[test]
    fn already_known_in_the_words_of_each_client() {
        for m in ["already known", "AlreadyKnown", "Known transaction (0x12)", "transaction already imported"]
        {
            assert!(is_already_known(m), "{m}");
        }
        assert!(!is_already_known("nonce too low"));
        assert!(!is_already_known("replacement transaction underpriced"));
    }

    #[test]
    fn the_errors_say_what_to_do() {
        let h = B256::repeat_byte(0xab);
        let lost = PossiblySubmitted {
            hashes: vec![h],
            endpoint: Some("primary".into()),
            why: "timed out".into(),
            cause: None,
        };
        let text = lost.to_string();
        assert!(
            text.contains("primary") && text.contains(&h.to_string()) && text.contains("do not sign again")
        );
        let err = lost.clone().into_transport();
        assert_eq!(PossiblySubmitted::find(&err), Some(&lost));
        let kind = err.as_transport_err().expect("a transport error");
        assert!(!kind.is_retry_err(), "alloy's retry layers leave it alone");
        let never = NeverSent { hashes: vec![h], why: "connection refused".into(), cause: None };
        assert!(never.to_string().contains("safe to send again"));
        assert_eq!(NeverSent::find(&never.clone().into_transport()), Some(&never));
    }
}

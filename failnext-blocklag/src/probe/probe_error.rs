//! `ProbeError`: every way one probe of one provider fails.

use std::error::Error as StdError;
use std::fmt;

use http::StatusCode;

use crate::probe::rpc::MAX_BODY;

/// Why one probe of one provider failed.
///
/// A failed probe makes its provider ineligible in the snapshot the check publishes (if it
/// publishes one). Every variant is a property of this one answer: none is retried, and none
/// affects the provider in a later check.
///
/// No variant carries a URL: [`Transport`](ProbeError::Transport) errors have theirs removed
/// with [`reqwest::Error::without_url`], and the provider is named by its id in the
/// [`ProbeFailure`](crate::ProbeFailure) that holds this error.
#[non_exhaustive]
pub enum ProbeError {
    /// The request could not be sent or the response not received: connection refused or
    /// reset, DNS failure, a body cut short. The reqwest error has no URL and is also the
    /// [`source`](StdError::source).
    Transport(reqwest::Error),
    /// No complete answer within the monitor's
    /// [`probe_timeout`](crate::MonitorBuilder::probe_timeout) (or a timeout of the probe
    /// client itself).
    Timeout,
    /// An HTTP status other than 200. Redirects are statuses too: they are not followed.
    Status(StatusCode),
    /// The response body is larger than 4096 bytes; the rest of it was not read. Never the
    /// error of the [head-with-hash](crate::MonitorBuilder::head_with_hash) probe, which reads
    /// the first 4096 bytes of any body.
    BodyTooLarge,
    /// The response body is not JSON.
    InvalidJson,
    /// JSON, but not a JSON-RPC 2.0 response: not an object, `jsonrpc` is not `"2.0"`, no
    /// `result`, or an `error` member without an integer `code`.
    NotJsonRpc,
    /// The response's `id` is not the number the probe sent.
    IdMismatch,
    /// The provider answered with a JSON-RPC error object.
    JsonRpc {
        /// The error's `code`.
        code: i64,
        /// The error's `message`, empty when there was none. Written by the provider: treat
        /// it as untrusted text.
        message: String,
    },
    /// The `result` (for the [head-with-hash](crate::MonitorBuilder::head_with_hash) probe,
    /// the block's `number`) is not a canonical hex quantity fitting `u64`. Holds what was
    /// received (a string's content, or the JSON text of any other value), cut to 40
    /// characters.
    InvalidQuantity(String),
    /// The `result` of the [head-with-hash](crate::MonitorBuilder::head_with_hash) probe
    /// (`eth_getBlockByNumber`) is not a block object: `null` (the provider has no latest block
    /// to show) or any other non-object. Holds its JSON text, cut to 40 characters.
    NotABlock(String),
    /// The block the [head-with-hash](crate::MonitorBuilder::head_with_hash) probe received
    /// has no top-level member of this name (`"number"` or `"hash"`) whose value ends within
    /// the first 4096 bytes of the body: the probe reads no further, and does not take a
    /// nested `hash` (of a transaction) or `parentHash` instead.
    MissingHeadField(&'static str),
    /// The block's `hash` is not a string of `0x` and 64 lower-case hex digits (32 bytes).
    /// Holds what was received, as [`InvalidQuantity`](ProbeError::InvalidQuantity) does.
    InvalidHash(String),
    /// The provider serves another chain than the monitor's
    /// [`expected_chain_id`](crate::MonitorBuilder::expected_chain_id).
    WrongChain {
        /// The configured chain id.
        expected: u64,
        /// The chain id the provider reported.
        actual: u64,
    },
    /// A failure another process of the fleet found at its probe of this provider
    /// ([`MonitorBuilder::fleet`](crate::MonitorBuilder)), of a kind that cannot be rebuilt
    /// here (a transport error): its kind and its message.
    Relayed {
        /// The kind of the failure found.
        kind: ProbeErrorKind,
        /// Its message (no URL: the prober's errors hold none).
        message: String,
    },
}

/// The kind of a [`ProbeError`], without its details: what a
/// [`SnapshotEntry`](crate::SnapshotEntry) keeps about a provider's last failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProbeErrorKind {
    /// [`ProbeError::Transport`].
    Transport,
    /// [`ProbeError::Timeout`].
    Timeout,
    /// [`ProbeError::Status`].
    Status,
    /// [`ProbeError::BodyTooLarge`].
    BodyTooLarge,
    /// [`ProbeError::InvalidJson`].
    InvalidJson,
    /// [`ProbeError::NotJsonRpc`].
    NotJsonRpc,
    /// [`ProbeError::IdMismatch`].
    IdMismatch,
    /// [`ProbeError::JsonRpc`].
    JsonRpc,
    /// [`ProbeError::InvalidQuantity`].
    InvalidQuantity,
    /// [`ProbeError::NotABlock`].
    NotABlock,
    /// [`ProbeError::MissingHeadField`].
    MissingHeadField,
    /// [`ProbeError::InvalidHash`].
    InvalidHash,
    /// [`ProbeError::WrongChain`].
    WrongChain,
}

// ===== impl ProbeError =====

impl ProbeError {
    /// The kind of this error.
    pub fn kind(&self) -> ProbeErrorKind {
        match self {
            ProbeError::Transport(_) => ProbeErrorKind::Transport,
            ProbeError::Timeout => ProbeErrorKind::Timeout,
            ProbeError::Status(_) => ProbeErrorKind::Status,
            ProbeError::BodyTooLarge => ProbeErrorKind::BodyTooLarge,
            ProbeError::InvalidJson => ProbeErrorKind::InvalidJson,
            ProbeError::NotJsonRpc => ProbeErrorKind::NotJsonRpc,
            ProbeError::IdMismatch => ProbeErrorKind::IdMismatch,
            ProbeError::JsonRpc { .. } => ProbeErrorKind::JsonRpc,
            ProbeError::InvalidQuantity(_) => ProbeErrorKind::InvalidQuantity,
            ProbeError::NotABlock(_) => ProbeErrorKind::NotABlock,
            ProbeError::MissingHeadField(_) => ProbeErrorKind::MissingHeadField,
            ProbeError::InvalidHash(_) => ProbeErrorKind::InvalidHash,
            ProbeError::WrongChain { .. } => ProbeErrorKind::WrongChain,
            ProbeError::Relayed { kind, .. } => *kind,
        }
    }

    /// Strips the URL and maps a timeout, from whichever layer, to [`ProbeError::Timeout`].
    pub(crate) fn from_reqwest(error: reqwest::Error) -> Self {
        if error.is_timeout() { ProbeError::Timeout } else { ProbeError::Transport(error.without_url()) }
    }
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProbeError::Transport(e) if e.is_connect() => f.write_str("could not connect"),
            ProbeError::Transport(e) if e.is_body() || e.is_decode() => {
                f.write_str("response body could not be read")
            }
            ProbeError::Transport(_) => f.write_str("request failed in transport"),
            ProbeError::Timeout => f.write_str("no complete answer within the probe timeout"),
            ProbeError::Status(status) => write!(f, "http status {status}, expected 200 OK"),
            ProbeError::BodyTooLarge => write!(f, "response body larger than {MAX_BODY} bytes"),
            ProbeError::InvalidJson => f.write_str("response body is not json"),
            ProbeError::NotJsonRpc => f.write_str("response is not a json-rpc 2.0 result"),
            ProbeError::IdMismatch => f.write_str("response id differs from the request id"),
            ProbeError::JsonRpc { code, message } => write!(f, "json-rpc error {code}: {message:?}"),
            ProbeError::InvalidQuantity(shown) => {
                write!(f, "result {shown:?} is not a canonical hex quantity fitting u64")
            }
            ProbeError::NotABlock(shown) => write!(f, "result {shown} is not a block"),
            ProbeError::MissingHeadField(field) => {
                write!(f, "block has no top-level {field:?} within the first {MAX_BODY} bytes")
            }
            ProbeError::InvalidHash(shown) => {
                write!(f, "block hash {shown:?} is not 0x and 64 lower-case hex digits")
            }
            ProbeError::WrongChain { expected, actual } => {
                write!(f, "wrong chain (expected chain id {expected}, got {actual})")
            }
            ProbeError::Relayed { message, .. } => {
                write!(f, "{message} (probed by another process of the fleet)")
            }
        }
    }
}

impl fmt::Debug for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // Errors made by this crate never hold a URL; one built elsewhere might, and its
            // Debug would print it, so only its kind is shown then.
            ProbeError::Transport(e) if e.url().is_some() => {
                f.write_str("Transport(reqwest::Error { url: <redacted>, .. })")
            }
            ProbeError::Transport(e) => f.debug_tuple("Transport").field(e).finish(),
            ProbeError::Timeout => f.write_str("Timeout"),
            ProbeError::Status(status) => f.debug_tuple("Status").field(&status.as_u16()).finish(),
            ProbeError::BodyTooLarge => f.write_str("BodyTooLarge"),
            ProbeError::InvalidJson => f.write_str("InvalidJson"),
            ProbeError::NotJsonRpc => f.write_str("NotJsonRpc"),
            ProbeError::IdMismatch => f.write_str("IdMismatch"),
            ProbeError::JsonRpc { code, message } => {
                f.debug_struct("JsonRpc").field("code", code).field("message", message).finish()
            }
            ProbeError::InvalidQuantity(shown) => f.debug_tuple("InvalidQuantity").field(shown).finish(),
            ProbeError::NotABlock(shown) => f.debug_tuple("NotABlock").field(shown).finish(),
            ProbeError::MissingHeadField(field) => f.debug_tuple("MissingHeadField").field(field).finish(),
            ProbeError::InvalidHash(shown) => f.debug_tuple("InvalidHash").field(shown).finish(),
            ProbeError::WrongChain { expected, actual } => {
                f.debug_struct("WrongChain").field("expected", expected).field("actual", actual).finish()
            }
            ProbeError::Relayed { kind, message } => {
                f.debug_struct("Relayed").field("kind", kind).field("message", message).finish()
            }
        }
    }
}

impl StdError for ProbeError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            ProbeError::Transport(e) if e.url().is_none() => Some(e),
            _ => None,
        }
    }
}

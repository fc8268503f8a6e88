//! Errors: why a probe failed, what a check did about it, and why a monitor cannot be built.

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

use failnext::EndpointId;
use http::StatusCode;

use crate::parse::{MAX_BODY, Method};

/// Why one probe of one provider failed.
///
/// A failed probe makes its provider ineligible in the snapshot the check publishes (if it
/// publishes one). Every variant is a property of this one answer: none is retried, and none
/// affects the provider in a later check.
///
/// No variant carries a URL: [`Transport`](ProbeError::Transport) errors have theirs removed
/// with [`reqwest::Error::without_url`], and the provider is named by its id in the
/// [`ProbeFailure`] that holds this error.
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
    /// The response body is larger than 4096 bytes; the rest of it was not read.
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
    /// The `result` is not a canonical hex quantity fitting `u64`. Holds what was received
    /// (a string's content, or the JSON text of any other value), cut to 40 characters.
    InvalidQuantity(String),
    /// The provider serves another chain than the monitor's
    /// [`expected_chain_id`](crate::MonitorBuilder::expected_chain_id).
    WrongChain {
        /// The configured chain id.
        expected: u64,
        /// The chain id the provider reported.
        actual: u64,
    },
}

/// One provider whose probe failed in a check: which endpoint, which call, and why.
#[derive(Clone)]
pub struct ProbeFailure {
    endpoint: EndpointId,
    method: Method,
    error: Arc<ProbeError>,
}

/// A check in which at least one probe failed.
///
/// [`published`](CheckError::published) says whether the check still published a new snapshot
/// (some probes succeeded; the failed providers are ineligible in it) or kept the previous one
/// (every probe failed). Either way [`failures`](CheckError::failures) names every provider
/// whose probe failed, in configured order.
///
/// `Display` is one line listing every failure with its endpoint id, for logs. `source()` is
/// `None`: there is one cause per failure, reachable through each [`ProbeFailure`], which is
/// itself an error whose `source()` chain continues into the transport error, if any.
pub struct CheckError {
    inner: Box<CheckErrorInner>,
}

struct CheckErrorInner {
    published: bool,
    probed: usize,
    failures: Vec<ProbeFailure>,
}

/// A [`Monitor`](crate::Monitor) configuration that cannot be built.
///
/// When an endpoint breaks one of the rules shared with failnext, the
/// [`source`](StdError::source) is the [`failnext::ConfigError`] naming the endpoint and the
/// rule. No message contains a URL's path, query or userinfo.
pub struct ConfigError {
    kind: ConfigErrorKind,
}

enum ConfigErrorKind {
    Endpoints(failnext::ConfigError),
    ProbeTimeout,
    Client(reqwest::Error),
}

// ===== impl ProbeError =====

impl ProbeError {
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
            ProbeError::WrongChain { expected, actual } => {
                write!(f, "wrong chain: expected chain id {expected}, got {actual}")
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
            ProbeError::WrongChain { expected, actual } => {
                f.debug_struct("WrongChain").field("expected", expected).field("actual", actual).finish()
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

// ===== impl ProbeFailure =====

impl ProbeFailure {
    pub(crate) fn new(endpoint: EndpointId, method: Method, error: ProbeError) -> Self {
        ProbeFailure { endpoint, method, error: Arc::new(error) }
    }

    /// The id of the provider whose probe failed.
    pub fn endpoint(&self) -> &EndpointId {
        &self.endpoint
    }

    /// The JSON-RPC method of the failed call: `"eth_blockNumber"`, or `"eth_chainId"` when an
    /// expected chain id is configured and that call failed or named another chain.
    pub fn method(&self) -> &'static str {
        self.method.name()
    }

    /// Why it failed.
    pub fn error(&self) -> &ProbeError {
        &self.error
    }

    /// The same error, shared with the snapshot entry that records it.
    pub(crate) fn shared_error(&self) -> Arc<ProbeError> {
        Arc::clone(&self.error)
    }
}

impl fmt::Display for ProbeFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "endpoint {:?}: {}: {}", self.endpoint, self.method.name(), self.error)
    }
}

impl fmt::Debug for ProbeFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProbeFailure")
            .field("endpoint", &self.endpoint)
            .field("method", &self.method.name())
            .field("error", &self.error)
            .finish()
    }
}

/// `Display` already includes the [`ProbeError`]'s phrase, so the chain continues with the
/// error's own cause.
impl StdError for ProbeFailure {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.error.source()
    }
}

// ===== impl CheckError =====

impl CheckError {
    pub(crate) fn new(published: bool, probed: usize, failures: Vec<ProbeFailure>) -> Self {
        CheckError { inner: Box::new(CheckErrorInner { published, probed, failures }) }
    }

    /// Whether this check published a new snapshot despite the failures.
    ///
    /// `true` when at least one probe succeeded: the new snapshot is in force and the failed
    /// providers are ineligible in it. `false` when every probe failed: the previous snapshot
    /// (or, before the first publication, fail-open eligibility) stays in force.
    pub fn published(&self) -> bool {
        self.inner.published
    }

    /// Every provider whose probe failed, in configured order; never empty.
    pub fn failures(&self) -> &[ProbeFailure] {
        &self.inner.failures
    }
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let CheckErrorInner { published, probed, failures } = &*self.inner;
        if *published {
            write!(f, "{} of {probed} block-height probes failed, new snapshot published", failures.len())?;
        } else if *probed == 1 {
            f.write_str("the block-height probe failed, previous snapshot kept")?;
        } else {
            write!(f, "all {probed} block-height probes failed, previous snapshot kept")?;
        }
        for (i, failure) in failures.iter().enumerate() {
            f.write_str(if i == 0 { ": " } else { "; " })?;
            fmt::Display::fmt(failure, f)?;
        }
        Ok(())
    }
}

impl fmt::Debug for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("failnext_blocklag::CheckError")
            .field("published", &self.inner.published)
            .field("probed", &self.inner.probed)
            .field("failures", &self.inner.failures)
            .finish()
    }
}

impl StdError for CheckError {}

// ===== impl ConfigError =====

impl ConfigError {
    pub(crate) fn endpoints(error: failnext::ConfigError) -> Self {
        ConfigError { kind: ConfigErrorKind::Endpoints(error) }
    }

    pub(crate) fn probe_timeout() -> Self {
        ConfigError { kind: ConfigErrorKind::ProbeTimeout }
    }

    pub(crate) fn client(error: reqwest::Error) -> Self {
        ConfigError { kind: ConfigErrorKind::Client(error.without_url()) }
    }

    /// The id of the endpoint that breaks a rule, when the error is about one with a non-empty
    /// id (as [`failnext::ConfigError::endpoint_id`]).
    pub fn endpoint_id(&self) -> Option<&EndpointId> {
        match &self.kind {
            ConfigErrorKind::Endpoints(e) => e.endpoint_id(),
            _ => None,
        }
    }

    /// The position, in the configured list, of the endpoint that breaks a rule (as
    /// [`failnext::ConfigError::endpoint_index`]).
    pub fn endpoint_index(&self) -> Option<usize> {
        match &self.kind {
            ConfigErrorKind::Endpoints(e) => e.endpoint_index(),
            _ => None,
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ConfigErrorKind::Endpoints(_) => f.write_str("invalid endpoint configuration"),
            ConfigErrorKind::ProbeTimeout => f.write_str("probe timeout must be non-zero"),
            ConfigErrorKind::Client(_) => f.write_str("the default probe client could not be built"),
        }
    }
}

impl fmt::Debug for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("failnext_blocklag::ConfigError");
        match &self.kind {
            ConfigErrorKind::Endpoints(e) => d.field("endpoints", e),
            ConfigErrorKind::ProbeTimeout => d.field("kind", &format_args!("ProbeTimeout")),
            ConfigErrorKind::Client(e) => d.field("client", e),
        };
        d.finish()
    }
}

impl StdError for ConfigError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match &self.kind {
            ConfigErrorKind::Endpoints(e) => Some(e),
            ConfigErrorKind::ProbeTimeout => None,
            ConfigErrorKind::Client(e) => Some(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync + 'static>() {}

    #[test]
    fn errors_are_send_sync_and_small() {
        assert_send_sync::<ProbeError>();
        assert_send_sync::<ProbeFailure>();
        assert_send_sync::<CheckError>();
        assert_send_sync::<ConfigError>();
        assert_eq!(std::mem::size_of::<CheckError>(), std::mem::size_of::<usize>());
    }

    #[test]
    fn check_error_lists_every_failure_with_its_endpoint() {
        let err = CheckError::new(
            true,
            3,
            vec![
                ProbeFailure::new("a".into(), Method::BlockNumber, ProbeError::Timeout),
                ProbeFailure::new(
                    "b".into(),
                    Method::ChainId,
                    ProbeError::WrongChain { expected: 1, actual: 5 },
                ),
            ],
        );
        assert_eq!(
            err.to_string(),
            "2 of 3 block-height probes failed, new snapshot published: \
             endpoint \"a\": eth_blockNumber: no complete answer within the probe timeout; \
             endpoint \"b\": eth_chainId: wrong chain: expected chain id 1, got 5"
        );
        let kept = CheckError::new(
            false,
            1,
            vec![ProbeFailure::new(
                "a".into(),
                Method::BlockNumber,
                ProbeError::Status(StatusCode::BAD_GATEWAY),
            )],
        );
        assert_eq!(
            kept.to_string(),
            "the block-height probe failed, previous snapshot kept: \
             endpoint \"a\": eth_blockNumber: http status 502 Bad Gateway, expected 200 OK"
        );
    }
}

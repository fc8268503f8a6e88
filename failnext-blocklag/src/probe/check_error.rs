//! `CheckError`: what a check reports when probes fail, one [`ProbeFailure`] per provider.

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

use failnext::EndpointId;

use crate::probe::probe_error::ProbeError;
use crate::probe::rpc::Method;

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

// ===== impl ProbeFailure =====

impl ProbeFailure {
    pub(crate) fn new(endpoint: EndpointId, method: Method, error: ProbeError) -> Self {
        ProbeFailure { endpoint, method, error: Arc::new(error) }
    }

    /// The id of the provider whose probe failed.
    pub fn endpoint(&self) -> &EndpointId {
        &self.endpoint
    }

    /// The JSON-RPC method of the failed call: `"eth_blockNumber"` (`"eth_getBlockByNumber"`
    /// with [`head_with_hash`](crate::MonitorBuilder::head_with_hash)), or `"eth_chainId"` when
    /// an expected chain id is configured and that call failed or named another chain.
    pub fn method(&self) -> &'static str {
        self.method.name()
    }

    /// The failed call, as a [`Method`].
    pub(crate) fn call(&self) -> Method {
        self.method
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
        write!(f, "{} of {:?}: {}", self.method.name(), self.endpoint, self.error)
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
            write!(
                f,
                "the probes of {} of {probed} providers failed, new snapshot published",
                failures.len()
            )?;
        } else if *probed == 1 {
            f.write_str("the provider's probe failed, previous snapshot kept")?;
        } else {
            write!(f, "the probes of all {probed} providers failed, previous snapshot kept")?;
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

#[cfg(test)]
mod tests {
    use http::StatusCode;

    use super::*;
    use crate::probe::probe_error::ProbeError;
    use crate::runtime::config_error::ConfigError;

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
            "the probes of 2 of 3 providers failed, new snapshot published: \
             eth_blockNumber of \"a\": no complete answer within the probe timeout; \
             eth_chainId of \"b\": wrong chain (expected chain id 1, got 5)"
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
            "the provider's probe failed, previous snapshot kept: \
             eth_blockNumber of \"a\": http status 502 Bad Gateway, expected 200 OK"
        );
    }
}

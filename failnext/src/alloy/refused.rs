//! [`BundleRefused`]: a call a bundle does not send. Its own room, below both the bundle that
//! refuses it and the `Failure` that finds it.

use std::fmt;

use alloy_transport::TransportError;

/// A call a `Bundle` does not send: a write (a bundle only reads), or the pending nonce
/// (`eth_getTransactionCount` at `pending`: it counts transactions no block holds). Nothing
/// was sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BundleRefused {
    pub(super) method: String,
    pub(super) why: &'static str,
}

impl BundleRefused {
    /// The call's method.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// This error inside an alloy `TransportError`, if it is one.
    pub fn find(err: &TransportError) -> Option<&BundleRefused> {
        err.as_transport_err()?.as_custom()?.downcast_ref()
    }
}

impl fmt::Display for BundleRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is not sent through a bundle: {}", self.method, self.why)
    }
}

impl std::error::Error for BundleRefused {}

//! Shared test support: scripted JSON-RPC providers, raw TCP servers and small helpers.

#![allow(dead_code, unreachable_pub, reason = "each test module uses a different subset")]

pub mod node;
pub mod raw;

use std::future::Future;
use std::time::Duration;

use failnext::Endpoint;
use failnext_blocklag::{CheckError, Monitor, MonitorBuilder, ProbeError};

pub use node::{Node, error_reply, result_reply};
pub use raw::{Mode, RawServer, refused_url};

/// `Monitor::builder` over `(id, url)` pairs.
pub fn monitor<'a>(endpoints: impl IntoIterator<Item = (&'a str, String)>) -> MonitorBuilder {
    Monitor::builder(endpoints.into_iter().map(|(id, url)| Endpoint::new(id, url)))
}

/// The ids of the failed endpoints, in order.
pub fn failed_ids(err: &CheckError) -> Vec<String> {
    err.failures().iter().map(|f| f.endpoint().to_string()).collect()
}

/// The error of the only failure.
pub fn only_error(err: &CheckError) -> &ProbeError {
    assert_eq!(err.failures().len(), 1, "{err}");
    err.failures()[0].error()
}

/// Polls `condition` until it holds. The 10 s guard only turns a hang into a failure; it is not
/// a timing claim.
pub async fn wait_until<F, Fut>(what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let wait = async {
        while !condition().await {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    if tokio::time::timeout(Duration::from_secs(10), wait).await.is_err() {
        panic!("gave up waiting until {what}");
    }
}

/// `future`, or a failure naming `what` if it does not finish within a 10 s liveness guard.
pub async fn within_guard<T>(what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(Duration::from_secs(10), future).await {
        Ok(value) => value,
        Err(_) => panic!("{what} did not finish"),
    }
}

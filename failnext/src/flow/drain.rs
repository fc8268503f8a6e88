//! Dropping a superseded trigger response while keeping its connection pooled.

use std::future::Future;
use std::task::{Context, Waker};
use std::time::Duration;

use reqwest::Response;

/// Largest body of a superseded trigger response that is read to keep its connection.
const DRAIN_LIMIT: u64 = 64 * 1024;

/// How long reading such a body may take before the connection is given up.
const DRAIN_TIME: Duration = Duration::from_secs(1);

/// Drops a superseded trigger response, keeping its connection when that is cheap.
///
/// A response dropped with its body unread closes its connection, and the next request to that
/// provider pays for a new one. A body of known length up to [`DRAIN_LIMIT`] is read to its
/// end instead, which returns the connection to the pool: at once when it has already arrived,
/// otherwise on a spawned task bounded by [`DRAIN_TIME`], so the caller never waits for it.
/// Larger or unknown-length bodies are dropped unread. Nothing is copied: chunks are discarded.
pub(crate) fn discard(resp: Response) {
    if resp.content_length().is_none_or(|len| len > DRAIN_LIMIT) {
        return;
    }
    let mut drain = Box::pin(async move {
        let mut resp = resp;
        let read_all = async { while let Ok(Some(_)) = resp.chunk().await {} };
        let _ = tokio::time::timeout(DRAIN_TIME, read_all).await;
    });
    if drain.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_pending() {
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(drain);
        }
    }
}

//! Shared test support: scripted JSON-RPC providers (wiremock `Node`s, and loopback toolkit
//! servers for what wiremock cannot do: answer slowly while counting overlapping requests,
//! wait for a gate, never answer, or stream an endless body) and small helpers.

#![allow(dead_code, unreachable_pub, reason = "each test module uses a different subset")]

pub mod node;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use failnext::Endpoint;
use failnext_blocklag::{CheckError, Monitor, MonitorBuilder, ProbeError};

pub use failnext_loopback::{Server, refused_url};
pub use node::{Node, error_reply, result_reply};

use failnext_loopback::{Action, Later, LaterHandler, Received, Reply};
use tokio::sync::watch;

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

/// A provider that waits `delay`, then answers the JSON-RPC request with `height` (echoing its
/// id) and closes; [`Server::max_in_flight`] counts the overlapping waits.
pub async fn slow(delay: Duration, height: u64) -> Server {
    answering_after(height, move |_| Box::pin(tokio::time::sleep(delay))).await
}

/// A provider that answers like [`slow`] (without delay), but only once the gate is opened
/// with `send_replace(true)`.
pub async fn gated(height: u64) -> (Server, watch::Sender<bool>) {
    let gate = watch::Sender::new(false);
    let opened = gate.clone();
    let server = answering_after(height, move |_| {
        let mut open = opened.subscribe();
        Box::pin(async move {
            let _ = open.wait_for(|open| *open).await;
        })
    })
    .await;
    (server, gate)
}

async fn answering_after(
    height: u64,
    wait: impl Fn(&Received) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync + 'static,
) -> Server {
    Server::start_later(Arc::new(move |req: &Received| {
        let reply = req.rpc_result(format!("{height:#x}")).closing();
        let waited = wait(req);
        Box::pin(async move {
            waited.await;
            Action::Reply(reply)
        }) as Later
    }) as LaterHandler)
    .await
}

/// A provider that never answers; [`Server::abandoned`] counts the requests the client gave up.
pub async fn hanging() -> Server {
    Server::always(Action::Hang).await
}

/// A provider that answers 200 with a chunked body that never ends; [`Server::abandoned`]
/// counts the bodies the client stopped reading.
pub async fn endless() -> Server {
    let reply = Reply::new(200).content_type("application/json").forever(vec![b' '; 0x400], Duration::ZERO);
    Server::always(Action::Reply(reply)).await
}

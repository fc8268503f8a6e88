//! Shared test support: wiremock providers, a client builder and an event recorder. Servers
//! wiremock cannot be (closed, reset, hanging, refused, truncated) are the loopback toolkit's
//! (`failnext_loopback`).

#![allow(dead_code, unreachable_pub, reason = "each test module uses a different subset")]

pub mod events;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use failnext::{Endpoint, Failover, FailoverBuilder};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// A client whose only middleware is `failover`.
pub fn client(failover: Failover) -> ClientWithMiddleware {
    ClientBuilder::new(reqwest::Client::new()).with(failover).build()
}

/// `Failover::builder` over `(id, url)` pairs.
pub fn builder<'a>(endpoints: impl IntoIterator<Item = (&'a str, String)>) -> FailoverBuilder {
    Failover::builder(endpoints.into_iter().map(|(id, url)| Endpoint::new(id, url)))
}

/// A wiremock server that answers every request with the scripted statuses in turn (the last
/// one repeats), and counts the requests it received.
pub struct Scripted {
    pub server: MockServer,
    pub hits: Arc<AtomicUsize>,
}

struct Script {
    statuses: Vec<u16>,
    hits: Arc<AtomicUsize>,
}

impl Respond for Script {
    fn respond(&self, _req: &Request) -> ResponseTemplate {
        let n = self.hits.fetch_add(1, Ordering::SeqCst);
        let status = *self.statuses.get(n).or(self.statuses.last()).unwrap_or(&200);
        ResponseTemplate::new(status).set_body_string(format!("status {status} from call {n}"))
    }
}

impl Scripted {
    pub async fn start(statuses: &[u16]) -> Scripted {
        let server = MockServer::start().await;
        let hits = Arc::new(AtomicUsize::new(0));
        Mock::given(wiremock::matchers::any())
            .respond_with(Script { statuses: statuses.to_vec(), hits: hits.clone() })
            .mount(&server)
            .await;
        Scripted { server, hits }
    }

    pub fn url(&self) -> String {
        format!("{}/rpc", self.server.uri())
    }

    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    /// The requests this server received, as wiremock recorded them.
    pub async fn requests(&self) -> Vec<Request> {
        self.server.received_requests().await.unwrap_or_default()
    }
}

/// Shorthand: one status forever.
pub async fn status(code: u16) -> Scripted {
    Scripted::start(&[code]).await
}

/// The failnext error inside a middleware error; panics (fails the test) if absent.
pub fn failnext_error(err: &reqwest_middleware::Error) -> &failnext::Error {
    failnext::Error::from_middleware(err).unwrap_or_else(|| panic!("not a failnext error: {err:?}"))
}

/// A loopback server that does `action` for every request.
pub async fn acting(action: failnext_loopback::Action) -> failnext_loopback::Server {
    failnext_loopback::Server::start(Arc::new(move |_: &failnext_loopback::Received| action.clone())).await
}

/// A loopback server that answers 200 after its current delay (milliseconds, changeable
/// through the returned handle), on tokio's clock (paused in tests).
pub async fn delayed(ms: u64) -> (failnext_loopback::Server, Arc<std::sync::atomic::AtomicU64>) {
    delayed_status(ms, 200).await
}

/// [`delayed`], answering `status`.
pub async fn delayed_status(
    ms: u64,
    status: u16,
) -> (failnext_loopback::Server, Arc<std::sync::atomic::AtomicU64>) {
    let delay = Arc::new(std::sync::atomic::AtomicU64::new(ms));
    let d = delay.clone();
    let server = failnext_loopback::Server::start_later(Arc::new(
        move |_: &failnext_loopback::Received| -> failnext_loopback::Later {
            let ms = d.load(Ordering::SeqCst);
            Box::pin(async move {
                tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                failnext_loopback::Action::Reply(failnext_loopback::Reply::new(status).text("ok"))
            })
        },
    ))
    .await;
    (server, delay)
}

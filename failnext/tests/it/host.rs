//! Catalogue §L: the `Host` header, C131-C135.
//!
//! Rust has no separate `Request.Host` field: "explicit Host" is a `Host` header. Absent stays
//! absent (the client derives it from each endpoint's URL); a value equal to the request URL's
//! `host[:port]` follows each endpoint; any other value is kept on every attempt. Each test
//! checks both what failnext hands to the rest of the chain (a middleware after it records
//! every attempt) and what the servers received.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use failnext::{Failover, RequestBuilderExt};
use http::Extensions;
use http::header::HOST;
use reqwest::{Request, Response};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware, Middleware, Next};

use crate::support::*;
use failnext_loopback::refused_url;

const BOUND: Duration = Duration::from_secs(20);

/// The URL and `Host` header of one attempt.
type Seen = (String, Option<String>);

/// Records the URL and `Host` header of every attempt failnext hands on.
#[derive(Clone, Default)]
struct Spy {
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Spy {
    fn take(&self) -> Vec<Seen> {
        std::mem::take(&mut *self.seen.lock().unwrap())
    }

    fn hosts(&self) -> Vec<Option<String>> {
        self.take().into_iter().map(|(_, host)| host).collect()
    }
}

#[async_trait::async_trait]
impl Middleware for Spy {
    async fn handle(
        &self,
        req: Request,
        ext: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        let host = req.headers().get(HOST).map(|h| h.to_str().unwrap().to_owned());
        self.seen.lock().unwrap().push((req.url().to_string(), host));
        next.run(req, ext).await
    }
}

fn spied_client(failover: Failover) -> (ClientWithMiddleware, Spy) {
    let spy = Spy::default();
    (ClientBuilder::new(reqwest::Client::new()).with(failover).with(spy.clone()).build(), spy)
}

/// The `Host` headers a server received, in order.
async fn received_hosts(server: &Scripted) -> Vec<String> {
    server
        .requests()
        .await
        .iter()
        .map(|r| r.headers.get(HOST).map(|h| h.to_str().unwrap().to_owned()).unwrap_or_default())
        .collect()
}

/// `host:port` of a scripted server.
fn authority(server: &Scripted) -> String {
    server.server.address().to_string()
}

async fn send(req: reqwest_middleware::RequestBuilder) -> Response {
    tokio::time::timeout(BOUND, req.send()).await.expect("bounded").expect("a response")
}

// C132
#[tokio::test]
async fn absent_host_stays_absent_on_every_attempt() {
    let (primary, backup) = (status(503).await, status(200).await);
    let failover = builder([("primary", primary.url()), ("backup", backup.url())]).build().unwrap();
    let (c, spy) = spied_client(failover);
    send(c.get("http://127.0.0.1:9/request")).await;
    assert_eq!(spy.take(), [(primary.url(), None), (backup.url(), None)]);
    // The client derives it from each endpoint's URL.
    assert_eq!(received_hosts(&primary).await, [authority(&primary)]);
    assert_eq!(received_hosts(&backup).await, [authority(&backup)]);
}

// C131, C4: a custom Host is preserved on every attempt while the URL is the endpoint's.
#[tokio::test]
async fn custom_host_is_preserved_on_every_attempt() {
    let (primary, backup) = (status(503).await, status(200).await);
    let failover =
        builder([("down", refused_url("/rpc")), ("primary", primary.url()), ("backup", backup.url())])
            .build()
            .unwrap();
    let (c, spy) = spied_client(failover);
    let resp = send(c.get("http://127.0.0.1:9/request?old=1").header(HOST, "signed.example")).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(spy.hosts(), vec![Some("signed.example".to_owned()); 3]);
    assert_eq!(received_hosts(&primary).await, ["signed.example"]);
    assert_eq!(received_hosts(&backup).await, ["signed.example"]);
    let paths: Vec<_> = backup.requests().await.iter().map(|r| r.url.path().to_owned()).collect();
    assert_eq!(paths, ["/rpc"]);
    assert_eq!(backup.requests().await[0].url.query(), None, "the request's query is not merged");
}

// C133, C134: a Host equal to the request URL's authority is treated as URL-derived and
// follows the endpoint of each attempt.
#[tokio::test]
async fn host_equal_to_the_request_url_authority_follows_each_endpoint() {
    let (primary, backup) = (status(503).await, status(200).await);
    let failover = builder([("primary", primary.url()), ("backup", backup.url())]).build().unwrap();
    let (c, spy) = spied_client(failover);
    let req = c.post(primary.url()).header(HOST, authority(&primary)).body("{}").allow_failover();
    assert_eq!(send(req).await.status(), 200);
    assert_eq!(spy.hosts(), [Some(authority(&primary)), Some(authority(&backup))]);
    assert_eq!(received_hosts(&primary).await, [authority(&primary)]);
    assert_eq!(received_hosts(&backup).await, [authority(&backup)]);
    assert_ne!(authority(&primary), authority(&backup));
}

// C135: the rule applies on the first attempt too, not only on failover.
#[tokio::test]
async fn url_derived_host_follows_the_endpoint_on_the_first_attempt_too() {
    let only = status(200).await;
    let failover = builder([("only", only.url())]).build().unwrap();
    let (c, spy) = spied_client(failover);
    send(c.get("http://127.0.0.1:9/request").header(HOST, "127.0.0.1:9")).await;
    assert_eq!(spy.hosts(), [Some(authority(&only))]);
    assert_eq!(received_hosts(&only).await, [authority(&only)]);
}

// C135: the comparison with the request URL is exact (port and case included); anything else
// is custom and kept.
#[tokio::test]
async fn host_comparison_with_the_request_url_is_exact() {
    let only = status(200).await;
    let failover = builder([("only", only.url())]).build().unwrap();
    let (c, spy) = spied_client(failover);
    for (request_url, host) in [
        ("http://127.0.0.1:9/", "127.0.0.1"),
        ("http://127.0.0.1:9/", "127.0.0.1:90"),
        ("http://127.0.0.1:9/", "127.0.0.1:09"),
        ("http://localhost:9/", "LOCALHOST:9"),
        ("http://localhost/", "localhost:80"),
    ] {
        send(c.get(request_url).header(HOST, host)).await;
        assert_eq!(spy.hosts(), [Some(host.to_owned())], "{request_url} with Host {host}");
    }
    assert_eq!(
        received_hosts(&only).await,
        ["127.0.0.1", "127.0.0.1:90", "127.0.0.1:09", "LOCALHOST:9", "localhost:80"]
    );
}

// C135: a URL without an explicit port matches a Host without one.
#[tokio::test]
async fn host_without_port_matches_a_request_url_without_port() {
    let only = status(200).await;
    let failover = builder([("only", only.url())]).build().unwrap();
    let (c, spy) = spied_client(failover);
    send(c.get("http://logical.test/request").header(HOST, "logical.test")).await;
    assert_eq!(spy.hosts(), [Some(authority(&only))]);
}

// C5 in Rust terms: failnext changes only its own copies; the URL each attempt gets is the
// endpoint's, whatever the caller's URL was.
#[tokio::test]
async fn each_attempt_goes_to_the_endpoint_url_not_the_request_url() {
    let (primary, backup) = (status(503).await, status(200).await);
    let failover = builder([("primary", primary.url()), ("backup", backup.url())]).build().unwrap();
    let (c, spy) = spied_client(failover);
    send(c.get("http://127.0.0.1:9/original/path?old=1")).await;
    let urls: Vec<_> = spy.take().into_iter().map(|(url, _)| url).collect();
    assert_eq!(urls, [primary.url(), backup.url()]);
}

//! The clients under test. Each variant owns its own `reqwest::Client` (its own connection
//! pool), and sends the same JSON-RPC POST with a `Bytes` body; an alloy variant instead has
//! an alloy `RpcClient` call `eth_blockNumber` over its transport.

use std::task::{Context, Poll};

use alloy::primitives::U64;
use alloy::rpc::client::RpcClient;
use alloy::rpc::json_rpc::{RequestPacket, ResponsePacket};
use alloy::transports::http::Http;
use alloy::transports::{TransportError, TransportErrorKind, TransportFut};
use bytes::Bytes;
use failnext::alloy::FailoverTransport;
use failnext::{Failover, RequestBuilderExt};
use reqwest::header::{CONTENT_TYPE, HeaderValue};
use reqwest::{Response, Url};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use reqwest_retry::RetryTransientMiddleware;
use reqwest_retry::policies::ExponentialBackoff;

pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The request every scenario sends unless it sets its own body.
pub(crate) const BLOCK_NUMBER: &str = r#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}"#;

/// One client configuration and the URL it sends to.
#[derive(Debug)]
pub(crate) struct Variant {
    pub(crate) name: &'static str,
    client: Client,
    url: Url,
    body: Bytes,
}

#[derive(Debug)]
enum Client {
    /// `reqwest::Client`, nothing else: the physical limit.
    Bare(reqwest::Client),
    /// `ClientWithMiddleware` (empty, reqwest-retry or failnext); `allow` marks each request
    /// with `allow_failover()`.
    Chain { client: ClientWithMiddleware, allow: bool },
    /// What an application writes without failnext: the primary, then on 502/503/504 or an
    /// error the backup, draining the discarded response so its connection is reused.
    AppLoop { client: reqwest::Client, backup: Url },
    /// An alloy `RpcClient` (over alloy's `Http`, failnext's `FailoverTransport` or the
    /// bench's [`ChainTransport`]) calling `eth_blockNumber`; the variant's body is not used.
    Alloy(RpcClient),
}

// ===== impl Variant =====

impl Variant {
    /// A bare `reqwest::Client`.
    pub(crate) fn bare(name: &'static str, url: &str) -> Result<Variant, BoxError> {
        Variant::new(name, url, Client::Bare(reqwest_client()?))
    }

    /// A `ClientWithMiddleware` with no middleware.
    pub(crate) fn empty(name: &'static str, url: &str) -> Result<Variant, BoxError> {
        let client = ClientBuilder::new(reqwest_client()?).build();
        Variant::new(name, url, Client::Chain { client, allow: false })
    }

    /// reqwest-retry's `RetryTransientMiddleware`, exponential backoff, at most 2 retries.
    pub(crate) fn retry(name: &'static str, url: &str) -> Result<Variant, BoxError> {
        let policy = ExponentialBackoff::builder().build_with_max_retries(2);
        let client = ClientBuilder::new(reqwest_client()?)
            .with(RetryTransientMiddleware::new_with_policy(policy))
            .build();
        Variant::new(name, url, Client::Chain { client, allow: false })
    }

    /// One middleware that only calls the rest of the chain: what any middleware costs in
    /// reqwest-middleware (a boxed future, the per-request copy of the middleware list).
    pub(crate) fn pass_through(name: &'static str, url: &str) -> Result<Variant, BoxError> {
        let client = ClientBuilder::new(reqwest_client()?).with(PassThrough).build();
        Variant::new(name, url, Client::Chain { client, allow: false })
    }

    /// `failover` as the only middleware; `allow` adds `allow_failover()` to every request.
    pub(crate) fn failover(
        name: &'static str,
        url: &str,
        failover: Failover,
        allow: bool,
    ) -> Result<Variant, BoxError> {
        let client = ClientBuilder::new(reqwest_client()?).with(failover).build();
        Variant::new(name, url, Client::Chain { client, allow })
    }

    /// A hand-written loop over `primary` then `backup` on a bare client.
    pub(crate) fn app_loop(name: &'static str, primary: &str, backup: &str) -> Result<Variant, BoxError> {
        let client = Client::AppLoop { client: reqwest_client()?, backup: backup.parse()? };
        Variant::new(name, primary, client)
    }

    /// An alloy `RpcClient` over alloy's own `Http<reqwest::Client>` transport to `url`.
    pub(crate) fn alloy_http(name: &'static str, url: &str) -> Result<Variant, BoxError> {
        let http = Http::with_client(reqwest_client()?, url.parse()?);
        Variant::new(name, url, Client::Alloy(RpcClient::new(http, true)))
    }

    /// An alloy `RpcClient` over [`ChainTransport`]: alloy's `Http` rewritten on a
    /// `ClientWithMiddleware` with one do-nothing middleware, to `url`.
    pub(crate) fn alloy_chain(name: &'static str, url: &str) -> Result<Variant, BoxError> {
        let client = ClientBuilder::new(reqwest_client()?).with(PassThrough).build();
        let transport = ChainTransport { client, url: url.parse()? };
        Variant::new(name, url, Client::Alloy(RpcClient::new(transport, true)))
    }

    /// An alloy `RpcClient` over `transport` (`url` is only shown, never used: the transport
    /// carries its endpoints).
    pub(crate) fn alloy_failover(
        name: &'static str,
        url: &str,
        transport: FailoverTransport,
    ) -> Result<Variant, BoxError> {
        let local = transport.is_local();
        Variant::new(name, url, Client::Alloy(RpcClient::new(transport, local)))
    }

    /// Sends `body` instead of the `eth_blockNumber` call.
    pub(crate) fn with_body(mut self, body: Bytes) -> Variant {
        self.body = body;
        self
    }

    fn new(name: &'static str, url: &str, client: Client) -> Result<Variant, BoxError> {
        Ok(Variant { name, client, url: url.parse()?, body: Bytes::from_static(BLOCK_NUMBER.as_bytes()) })
    }

    /// One request, its response body read to the end. True on HTTP 200.
    pub(crate) async fn call(&self) -> bool {
        let resp = match &self.client {
            Client::Bare(client) => post(client, &self.url, &self.body).send().await.ok(),
            Client::Chain { client, allow } => {
                let req = client.post(self.url.clone()).header(CONTENT_TYPE, json()).body(self.body.clone());
                let req = if *allow { req.allow_failover() } else { req };
                req.send().await.ok()
            }
            Client::AppLoop { client, backup } => app_loop(client, &self.url, backup, &self.body).await,
            Client::Alloy(client) => {
                let number = client.request_noparams::<U64>("eth_blockNumber").await;
                return number.is_ok_and(|n| n == U64::from(crate::servers::ECHO_RESULT));
            }
        };
        match resp {
            Some(resp) => resp.status() == 200 && resp.bytes().await.is_ok(),
            None => false,
        }
    }
}

/// The `reqwest::Client` of every variant: reqwest's defaults without proxies.
pub(crate) fn reqwest_client() -> Result<reqwest::Client, BoxError> {
    Ok(reqwest::Client::builder().no_proxy().build()?)
}

fn json() -> HeaderValue {
    HeaderValue::from_static("application/json")
}

fn post(client: &reqwest::Client, url: &Url, body: &Bytes) -> reqwest::RequestBuilder {
    client.post(url.clone()).header(CONTENT_TYPE, json()).body(body.clone())
}

async fn app_loop(client: &reqwest::Client, primary: &Url, backup: &Url, body: &Bytes) -> Option<Response> {
    match post(client, primary, body).send().await {
        Ok(resp) if !matches!(resp.status().as_u16(), 502..=504) => return Some(resp),
        // Read the small error body so the connection goes back to the pool.
        Ok(resp) => drop(resp.bytes().await),
        Err(_) => {}
    }
    post(client, backup, body).send().await.ok()
}

/// The do-nothing middleware of reqwest-middleware's own documentation.
#[derive(Debug)]
pub(crate) struct PassThrough;

#[async_trait::async_trait]
impl reqwest_middleware::Middleware for PassThrough {
    async fn handle(
        &self,
        req: reqwest::Request,
        extensions: &mut http::Extensions,
        next: reqwest_middleware::Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        next.run(req, extensions).await
    }
}

/// What any alloy transport on reqwest-middleware pays before failnext does anything: the
/// healthy path of alloy's `Http<reqwest::Client>` (serialize, POST, read the body, parse the
/// packet), sent through a `ClientWithMiddleware` instead of a `reqwest::Client`. Errors are
/// flattened: the bench only needs the 200 path.
#[derive(Clone, Debug)]
struct ChainTransport {
    client: ClientWithMiddleware,
    url: Url,
}

impl ChainTransport {
    async fn send(self, packet: RequestPacket) -> Result<ResponsePacket, TransportError> {
        let body = serde_json::to_vec(&packet).map_err(TransportError::ser_err)?;
        let request = self.client.post(self.url).headers(packet.headers()).header(CONTENT_TYPE, json());
        let response = request.body(body).send().await.map_err(TransportErrorKind::custom)?;
        let status = response.status();
        let body = response.bytes().await.map_err(TransportErrorKind::custom)?;
        if !status.is_success() {
            return Err(TransportErrorKind::http_error(
                status.as_u16(),
                String::from_utf8_lossy(&body).into(),
            ));
        }
        serde_json::from_slice(&body)
            .map_err(|err| TransportError::deser_err(err, String::from_utf8_lossy(&body)))
    }
}

impl tower_service::Service<RequestPacket> for ChainTransport {
    type Response = ResponsePacket;
    type Error = TransportError;
    type Future = TransportFut<'static>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, packet: RequestPacket) -> TransportFut<'static> {
        Box::pin(self.clone().send(packet))
    }
}

//! The probe's network half: one bounded JSON-RPC exchange per call, no retries.

use std::time::Duration;

use http::StatusCode;
use http::header::{ACCEPT, CONTENT_TYPE};
use reqwest::{Client, Response, Url};

use crate::check_error::ProbeFailure;
use crate::parse;
use crate::probe_error::ProbeError;
use crate::rpc::{MAX_BODY, Method};

/// Everything a probe needs besides the provider.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ProbeConfig<'a> {
    pub(crate) client: &'a Client,
    pub(crate) timeout: Duration,
    pub(crate) expected_chain_id: Option<u64>,
}

/// What one provider's probe found.
#[derive(Debug)]
pub(crate) struct ProbeReport {
    /// The height, or the failure.
    pub(crate) result: Result<u64, ProbeFailure>,
    /// How long the `eth_blockNumber` call took, when it succeeded.
    pub(crate) latency: Option<Duration>,
    /// Whether an `eth_chainId` call was sent and the result is a height of the expected chain.
    pub(crate) chain_verified: bool,
}

/// Probes one provider: its block height, and its chain id when `config` expects one (the
/// monitor leaves it out once a provider's chain is verified).
///
/// With an expected chain id both calls are sent at once; a chain-id failure (including a
/// wrong chain) takes precedence over the height, since a height from an unverified chain is
/// not comparable.
pub(crate) async fn endpoint(config: ProbeConfig<'_>, id: &failnext::EndpointId, url: &Url) -> ProbeReport {
    let fail = |method, error| ProbeFailure::new(id.clone(), method, error);
    let height = async {
        let started = tokio::time::Instant::now();
        let height = call(config, url, Method::BlockNumber).await;
        (height, started.elapsed())
    };
    let Some(expected) = config.expected_chain_id else {
        let (height, took) = height.await;
        let latency = height.is_ok().then_some(took);
        let result = height.map_err(|e| fail(Method::BlockNumber, e));
        return ProbeReport { result, latency, chain_verified: false };
    };
    let (chain, (height, took)) = futures::future::join(call(config, url, Method::ChainId), height).await;
    let latency = height.is_ok().then_some(took);
    let result = match chain {
        Ok(actual) if actual == expected => height.map_err(|e| fail(Method::BlockNumber, e)),
        Ok(actual) => Err(fail(Method::ChainId, ProbeError::WrongChain { expected, actual })),
        Err(e) => Err(fail(Method::ChainId, e)),
    };
    let chain_verified = result.is_ok();
    ProbeReport { result, latency, chain_verified }
}

/// One JSON-RPC call under the probe timeout. The timeout covers connecting, sending and
/// reading the body; when it fires, the response is dropped with it.
async fn call(config: ProbeConfig<'_>, url: &Url, method: Method) -> Result<u64, ProbeError> {
    match tokio::time::timeout(config.timeout, exchange(config.client, url, method)).await {
        Ok(outcome) => outcome,
        Err(_elapsed) => Err(ProbeError::Timeout),
    }
}

async fn exchange(client: &Client, url: &Url, method: Method) -> Result<u64, ProbeError> {
    // reqwest moves any userinfo of `url` into an Authorization header.
    let mut response = client
        .post(url.clone())
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json")
        .body(method.request_body())
        .send()
        .await
        .map_err(ProbeError::from_reqwest)?;
    if response.status() != StatusCode::OK {
        return Err(ProbeError::Status(response.status()));
    }
    let body = read_capped(&mut response).await?;
    parse::parse_response(&body, method.request_id())
}

/// Reads at most [`MAX_BODY`] bytes of body.
///
/// A declared or actual length beyond that is [`ProbeError::BodyTooLarge`], and the rest is
/// left unread: the caller drops the response, which closes its connection instead of
/// returning it half-read to the pool.
async fn read_capped(response: &mut Response) -> Result<Vec<u8>, ProbeError> {
    if response.content_length().is_some_and(|len| len > MAX_BODY as u64) {
        return Err(ProbeError::BodyTooLarge);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(ProbeError::from_reqwest)? {
        if chunk.len() > MAX_BODY.saturating_sub(body.len()) {
            return Err(ProbeError::BodyTooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

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

/// Probes one provider: its block height, and its chain id when one is expected.
///
/// With an expected chain id both calls are sent at once; a chain-id failure (including a
/// wrong chain) takes precedence over the height, since a height from an unverified chain is
/// not comparable.
pub(crate) async fn endpoint(
    config: ProbeConfig<'_>,
    id: &failnext::EndpointId,
    url: &Url,
) -> Result<u64, ProbeFailure> {
    let fail = |method, error| ProbeFailure::new(id.clone(), method, error);
    let height = call(config, url, Method::BlockNumber);
    let Some(expected) = config.expected_chain_id else {
        return height.await.map_err(|e| fail(Method::BlockNumber, e));
    };
    let (chain, height) = futures::future::join(call(config, url, Method::ChainId), height).await;
    match chain {
        Ok(actual) if actual == expected => height.map_err(|e| fail(Method::BlockNumber, e)),
        Ok(actual) => Err(fail(Method::ChainId, ProbeError::WrongChain { expected, actual })),
        Err(e) => Err(fail(Method::ChainId, e)),
    }
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

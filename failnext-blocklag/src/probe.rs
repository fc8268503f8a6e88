//! The probe's network half: one bounded JSON-RPC exchange per call, no retries.

use std::time::Duration;

use http::StatusCode;
use http::header::{ACCEPT, CONTENT_TYPE};
use reqwest::{Client, Response, Url};

use crate::block_hash::BlockHash;
use crate::check_error::ProbeFailure;
use crate::head;
use crate::parse;
use crate::probe_error::ProbeError;
use crate::rpc::{MAX_BODY, Method};

/// Everything a probe needs besides the provider.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ProbeConfig<'a> {
    pub(crate) client: &'a Client,
    pub(crate) timeout: Duration,
    pub(crate) expected_chain_id: Option<u64>,
    /// The call that reads the height: [`Method::BlockNumber`] or [`Method::BlockByNumber`].
    pub(crate) head: Method,
}

/// What one provider's probe found.
#[derive(Debug)]
pub(crate) struct ProbeReport {
    /// The height, or the failure.
    pub(crate) result: Result<u64, ProbeFailure>,
    /// The hash of the head, when the head call succeeded and was [`Method::BlockByNumber`].
    pub(crate) hash: Option<BlockHash>,
    /// How long the head call took, when it succeeded.
    pub(crate) latency: Option<Duration>,
    /// Whether an `eth_chainId` call was sent and the result is a height of the expected chain.
    pub(crate) chain_verified: bool,
}

/// Probes one provider: its head (height, and hash with [`Method::BlockByNumber`]), and its
/// chain id when `config` expects one (the monitor leaves it out once a provider's chain is
/// verified).
///
/// With an expected chain id both calls are sent at once; a chain-id failure (including a
/// wrong chain) takes precedence over the height, since a height from an unverified chain is
/// not comparable.
pub(crate) async fn endpoint(config: ProbeConfig<'_>, id: &failnext::EndpointId, url: &Url) -> ProbeReport {
    let fail = |method, error| ProbeFailure::new(id.clone(), method, error);
    let head = async {
        let started = tokio::time::Instant::now();
        let head = call(config, url, config.head).await;
        (head, started.elapsed())
    };
    let (chain, (head, took)) = match config.expected_chain_id {
        Some(expected) => {
            let (chain, head) = futures::future::join(call(config, url, Method::ChainId), head).await;
            (Some((expected, chain)), head)
        }
        None => (None, head.await),
    };
    let latency = head.is_ok().then_some(took);
    let hash = head.as_ref().ok().and_then(|(_, hash)| *hash);
    let height = head.map(|(height, _)| height).map_err(|e| fail(config.head, e));
    let (result, chain_verified) = match chain {
        None => (height, false),
        Some((expected, Ok((actual, _)))) if actual == expected => {
            let verified = height.is_ok();
            (height, verified)
        }
        Some((expected, Ok((actual, _)))) => {
            (Err(fail(Method::ChainId, ProbeError::WrongChain { expected, actual })), false)
        }
        Some((_, Err(e))) => (Err(fail(Method::ChainId, e)), false),
    };
    let hash = hash.filter(|_| result.is_ok());
    ProbeReport { result, hash, latency, chain_verified }
}

/// One JSON-RPC call under the probe timeout: its quantity, and the block hash for
/// [`Method::BlockByNumber`]. The timeout covers connecting, sending and reading the body;
/// when it fires, the response is dropped with it.
async fn call(
    config: ProbeConfig<'_>,
    url: &Url,
    method: Method,
) -> Result<(u64, Option<BlockHash>), ProbeError> {
    match tokio::time::timeout(config.timeout, exchange(config.client, url, method)).await {
        Ok(outcome) => outcome,
        Err(_elapsed) => Err(ProbeError::Timeout),
    }
}

async fn exchange(
    client: &Client,
    url: &Url,
    method: Method,
) -> Result<(u64, Option<BlockHash>), ProbeError> {
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
    if method == Method::BlockByNumber {
        let body = read_prefix(&mut response).await?;
        let (height, hash) = head::parse_head_response(&body, method.request_id())?;
        if body.len() > MAX_BODY {
            drain_rest(response);
        }
        return Ok((height, Some(hash)));
    }
    let body = read_capped(&mut response).await?;
    parse::parse_response(&body, method.request_id()).map(|quantity| (quantity, None))
}

/// The most of a block beyond the cap [`drain_rest`] reads so that its connection is reused:
/// a mainnet block's transaction hashes are 10 to 40 KiB.
const DRAIN_MAX: usize = 256 * 1024;

/// How long [`drain_rest`] reads at most.
const DRAIN_FOR: Duration = Duration::from_secs(2);

/// Reads, in the background and without keeping it, what is left of a block whose head was
/// read from its first 4 KiB, so that its connection goes back to the pool (over TLS, a new
/// connection per check is a handshake per check): at most [`DRAIN_MAX`] more bytes within
/// [`DRAIN_FOR`], then the response is dropped, which closes the connection. A declared length
/// beyond that is not read at all; outside a tokio runtime nothing is drained.
fn drain_rest(mut response: Response) {
    if response.content_length().is_some_and(|len| len > (MAX_BODY + DRAIN_MAX) as u64) {
        return;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
    runtime.spawn(async move {
        let drained = async {
            let mut read = 0;
            while let Ok(Some(chunk)) = response.chunk().await {
                read += chunk.len();
                if read > DRAIN_MAX {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(DRAIN_FOR, drained).await;
    });
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

/// Reads the body up to one byte more than [`MAX_BODY`]: the whole body when it fits the
/// cap, else its first `MAX_BODY + 1` bytes, which [`head::parse_head_response`] knows to be
/// cut. No more is kept: the rest of a longer body is left to [`drain_rest`].
async fn read_prefix(response: &mut Response) -> Result<Vec<u8>, ProbeError> {
    let mut body = Vec::new();
    while body.len() <= MAX_BODY {
        let Some(chunk) = response.chunk().await.map_err(ProbeError::from_reqwest)? else { break };
        let room = MAX_BODY + 1 - body.len();
        body.extend_from_slice(chunk.get(..room).unwrap_or(&chunk));
    }
    Ok(body)
}

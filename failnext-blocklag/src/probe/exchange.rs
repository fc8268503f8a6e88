//! The probe's network half: one bounded JSON-RPC exchange per call, no retries.

use std::time::Duration;

use http::StatusCode;
use http::header::{ACCEPT, CONTENT_TYPE};
use reqwest::{Client, Response, Url};

use crate::probe::block_hash::BlockHash;
use crate::probe::check_error::ProbeFailure;
use crate::probe::head;
use crate::probe::parse;
use crate::probe::probe_error::ProbeError;
use crate::probe::rpc::{HEAD_BATCH_BODY, MAX_BODY, Method};

/// Everything a probe needs besides the provider.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ProbeConfig<'a> {
    pub(crate) client: &'a Client,
    pub(crate) timeout: Duration,
    pub(crate) expected_chain_id: Option<u64>,
    /// The call that reads the height: [`Method::BlockNumber`] or [`Method::BlockByNumber`].
    pub(crate) head: Method,
    /// Where a [`Method::BlockByNumber`] call leaves its block's timestamp, when asked.
    pub(crate) stamp: Option<&'a std::sync::Mutex<Option<u64>>>,
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
    /// The head block's timestamp (Unix seconds), when the head call read a block that has one.
    pub(crate) timestamp: Option<u64>,
    /// The chain id the provider reported when none was expected (a spawned probe's batch
    /// asks for it anyway), for the monitor to learn its providers' chain.
    pub(crate) chain_seen: Option<u64>,
}

/// Probes one provider: its head (height, and hash with [`Method::BlockByNumber`]), and its
/// chain id when `config` expects one.
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
    ProbeReport { result, hash, latency, chain_verified, timestamp: None, chain_seen: None }
}

/// The head probe of a spawned monitor: the head block (number, hash, timestamp) and the chain
/// id in one HTTP request, a JSON-RPC batch ([`HEAD_BATCH_BODY`]); the chain id is verified
/// at every probe when one is expected. A provider that does not answer the batch as a batch
/// (`separately`, found once, or found now: the second value returned) is probed with
/// separate calls instead, `eth_getBlockByNumber` and `eth_chainId` at once. Bounded by the
/// probe timeout as a whole; nothing is retried.
pub(crate) async fn stamped(
    config: ProbeConfig<'_>,
    id: &failnext::EndpointId,
    url: &Url,
    separately: bool,
) -> (ProbeReport, bool) {
    let separate = ProbeConfig { head: Method::BlockByNumber, ..config };
    if separately {
        return (endpoint_stamped(separate, id, url).await, true);
    }
    let fail = |method, error| ProbeFailure::new(id.clone(), method, error);
    let started = tokio::time::Instant::now();
    let batch = match tokio::time::timeout(config.timeout, exchange_batch(config.client, url)).await {
        Ok(batch) => batch,
        Err(_elapsed) => Err(Batch::Failed(ProbeError::Timeout)),
    };
    let took = started.elapsed();
    let (chain, head) = match batch {
        Ok(answers) => answers,
        Err(Batch::Refused) => return (endpoint_stamped(separate, id, url).await, true),
        Err(Batch::Failed(error)) => {
            let report = ProbeReport {
                result: Err(fail(Method::BlockByNumber, error)),
                hash: None,
                latency: None,
                chain_verified: false,
                timestamp: None,
                chain_seen: None,
            };
            return (report, false);
        }
    };
    let head = head.map_err(|e| fail(Method::BlockByNumber, e));
    let chain_seen = match (config.expected_chain_id, &chain) {
        (None, Ok(actual)) => Some(*actual),
        _ => None,
    };
    let (result, chain_verified) = match (config.expected_chain_id, chain) {
        (None, _) => (head.as_ref().map(|h| h.number).map_err(Clone::clone), false),
        (Some(expected), Ok(actual)) if actual == expected => {
            (head.as_ref().map(|h| h.number).map_err(Clone::clone), head.is_ok())
        }
        (Some(expected), Ok(actual)) => {
            (Err(fail(Method::ChainId, ProbeError::WrongChain { expected, actual })), false)
        }
        (Some(_), Err(e)) => (Err(fail(Method::ChainId, e)), false),
    };
    let answer = head.ok().filter(|_| result.is_ok());
    let report = ProbeReport {
        result,
        hash: answer.map(|h| h.hash),
        latency: answer.map(|_| took),
        chain_verified,
        timestamp: answer.and_then(|h| h.timestamp),
        chain_seen,
    };
    (report, false)
}

/// [`endpoint`] with the head block's timestamp: separate calls, for a provider that does
/// not answer batches.
pub(crate) async fn endpoint_stamped(
    config: ProbeConfig<'_>,
    id: &failnext::EndpointId,
    url: &Url,
) -> ProbeReport {
    let timestamp = std::sync::Mutex::new(None);
    let config = ProbeConfig { stamp: Some(&timestamp), ..config };
    let report = endpoint(config, id, url).await;
    let timestamp = timestamp.into_inner().unwrap_or_else(|p| p.into_inner());
    ProbeReport { timestamp: timestamp.filter(|_| report.result.is_ok()), ..report }
}

/// How the batch exchange ended when it gave no answers.
enum Batch {
    /// Not a batch answer the probe reads: probe this provider with separate calls.
    Refused,
    /// The exchange failed.
    Failed(ProbeError),
}

/// One batch exchange: the chain id's answer and the head's.
async fn exchange_batch(client: &Client, url: &Url) -> Result<head::BatchAnswers, Batch> {
    let mut response = client
        .post(url.clone())
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json")
        .body(HEAD_BATCH_BODY)
        .send()
        .await
        .map_err(|e| Batch::Failed(ProbeError::from_reqwest(e)))?;
    match response.status() {
        StatusCode::OK => {}
        // What providers that refuse batches answer (besides a JSON-RPC error object).
        StatusCode::BAD_REQUEST | StatusCode::METHOD_NOT_ALLOWED | StatusCode::UNPROCESSABLE_ENTITY => {
            return Err(Batch::Refused);
        }
        status => return Err(Batch::Failed(ProbeError::Status(status))),
    }
    let body = read_prefix(&mut response).await.map_err(Batch::Failed)?;
    let whole = body.len() <= MAX_BODY;
    let read = body.get(..MAX_BODY).unwrap_or(&body);
    let answers = head::parse_batch(read, whole).map_err(|why| match why {
        head::BatchRefused::Refused => Batch::Refused,
        head::BatchRefused::Broken => Batch::Failed(ProbeError::InvalidJson),
    })?;
    if !whole {
        drain_rest(response);
    }
    Ok(answers)
}

/// One JSON-RPC call under the probe timeout: its quantity, and the block hash for
/// [`Method::BlockByNumber`]. The timeout covers connecting, sending and reading the body;
/// when it fires, the response is dropped with it.
async fn call(
    config: ProbeConfig<'_>,
    url: &Url,
    method: Method,
) -> Result<(u64, Option<BlockHash>), ProbeError> {
    let stamp = config.stamp.filter(|_| method == Method::BlockByNumber);
    match tokio::time::timeout(config.timeout, exchange(config.client, url, method, stamp)).await {
        Ok(outcome) => outcome,
        Err(_elapsed) => Err(ProbeError::Timeout),
    }
}

async fn exchange(
    client: &Client,
    url: &Url,
    method: Method,
    stamp: Option<&std::sync::Mutex<Option<u64>>>,
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
        let whole = body.len() <= MAX_BODY;
        let answer = head::parse_head(body.get(..MAX_BODY).unwrap_or(&body), whole, method.request_id())?;
        if !whole {
            drain_rest(response);
        }
        if let Some(stamp) = stamp {
            *stamp.lock().unwrap_or_else(|p| p.into_inner()) = answer.timestamp;
        }
        return Ok((answer.number, Some(answer.hash)));
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

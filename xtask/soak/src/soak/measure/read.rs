//! One read, sent and reduced to a [`Sample`]: through a reqwest client with its `Failover`,
//! or through alloy's `RpcClient` over a `FailoverTransport`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use failnext::ResponseExt;
use failnext_examples::sim::Chain;
use http::header::CONTENT_TYPE;
use reqwest_middleware::ClientWithMiddleware;

use super::judge::{Answer, Sample, judge_body};
use super::recording::{READ, ReadLog};
use super::trace::{DEBUGGING, debug};
use crate::soak::record::Endpoints;

/// One read through alloy's `RpcClient` (`eth_blockNumber`, as `Provider::get_block_number`
/// sends it), judged as [`read`] judges a body.
pub(super) async fn read_alloy(
    client: &alloy::rpc::client::RpcClient,
    endpoints: &Endpoints,
    chain: &Chain,
) -> Sample {
    use alloy::transports::TransportError;
    use failnext::alloy::{CallExt, ServedByCell};
    let log = Arc::new(ReadLog::default());
    let served = ServedByCell::new();
    let traced = failnext::alloy::TraceCell::new();
    let head_start = chain.head();
    let start = Instant::now();
    let call = client.request_noparams::<alloy::primitives::U64>("eth_blockNumber").map_meta(|meta| {
        let meta = meta.record_served_by(&served);
        if DEBUGGING.load(std::sync::atomic::Ordering::Relaxed) { meta.record_trace(&traced) } else { meta }
    });
    let result = READ.scope(log.clone(), call).await;
    let end = Instant::now();
    let head_end = chain.head();
    match &result {
        Err(err) => debug(|| format!("alloy read failed: {err}; trace: {:?}", traced.get())),
        Ok(head) => debug(|| format!("alloy read {head} by {:?}; trace: {:?}", served.get(), traced.get())),
    }
    let answer = match result {
        Ok(head) => Answer::Head {
            by: served.get().and_then(|e| endpoints.by_id(e.as_str())),
            head: head.to::<u64>(),
        },
        Err(TransportError::ErrorResp(payload)) => Answer::RpcError(payload.code),
        Err(TransportError::DeserError { .. }) => Answer::NotJsonRpc,
        Err(err) => match failnext::alloy::Failure::find(&err) {
            Some(f) if f.is_read() && f.error().is_some_and(failnext::Error::is_no_usable_endpoint) => {
                Answer::NoUsable
            }
            _ => Answer::Failed,
        },
    };
    let (asked, mut dispatched) = std::mem::take(&mut *log.inner.lock().unwrap_or_else(|p| p.into_inner()));
    dispatched.sort_by_key(|(_, at)| *at);
    let hedges = log.hedges.load(std::sync::atomic::Ordering::Relaxed);
    Sample { start, end, head_start, head_end, answer, asked, dispatched, hedges }
}

/// Sends one read and reduces how it ended.
pub(super) async fn read(
    client: &ClientWithMiddleware,
    url: &str,
    endpoints: &Endpoints,
    chain: &Chain,
    id: u64,
) -> Sample {
    use failnext::RequestBuilderExt;
    let log = Arc::new(ReadLog::default());
    let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"eth_blockNumber","params":[]}}"#);
    let head_start = chain.head();
    let start = Instant::now();
    let exchange = async {
        let request = client.post(url).header(CONTENT_TYPE, "application/json").body(body).allow_failover();
        let traced = DEBUGGING.load(std::sync::atomic::Ordering::Relaxed);
        let sent = if traced { request.trace() } else { request }.send();
        match sent.await {
            Err(err) => {
                debug(|| format!("read {id} failed: {err}"));
                match failnext::Error::from_middleware(&err) {
                    Some(e) if e.is_no_usable_endpoint() => Answer::NoUsable,
                    _ => Answer::Failed,
                }
            }
            Ok(resp) => {
                let trace = resp.extensions().get::<failnext::Trace>().cloned();
                let by = resp.served_by().cloned();
                let status = resp.status();
                let served_by = resp.served_by().and_then(|e| endpoints.by_id(e.as_str()));
                if !status.is_success() {
                    return Answer::Status(status.as_u16());
                }
                match resp.bytes().await {
                    Err(_) => Answer::BodyFailed,
                    Ok(bytes) => {
                        let answer = judge_body(&bytes, id, served_by);
                        if let Some(trace) = trace {
                            debug(|| format!("read {id} answered {answer:?} by {by:?}: {trace:?}"));
                        }
                        answer
                    }
                }
            }
        }
    };
    let answer = READ.scope(log.clone(), exchange).await;
    let end = Instant::now();
    let head_end = chain.head();
    let (asked, dispatched) = std::mem::take(&mut *log.inner.lock().unwrap_or_else(|p| p.into_inner()));
    if end - start > Duration::from_secs(1) {
        let sent: Vec<_> =
            dispatched.iter().map(|(p, at)| (*p, at.saturating_duration_since(start))).collect();
        debug(|| format!("read {id} took {:?}: {answer:?}, sent {sent:?}", end - start));
    }
    let hedges = log.hedges.load(std::sync::atomic::Ordering::Relaxed);
    Sample { start, end, head_start, head_end, answer, asked, dispatched, hedges }
}

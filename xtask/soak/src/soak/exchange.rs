//! One soak request: built from its spec, sent within its log's scope, dropped when the spec
//! says, and reduced to how it ended.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use failnext::Permission;
use failnext::{RequestBuilderExt, ResponseExt};
use http::header::CONTENT_TYPE;

use crate::soak::Ctx;
use crate::soak::checks::{BodyEnd, Finished, Outcome, TypedError};
use crate::soak::record::{self, ErrorKind, RequestLog};
use crate::soak::schedule::{Cancel, Kind, RequestSpec};

/// The method of the soak's writes.
pub(crate) const WRITE_METHOD: &str = "eth_sendRawTransaction";

/// Sends one request as its spec says, within its log's scope, and collects how it ended.
pub(crate) async fn run_request(ctx: &Ctx, spec: RequestSpec) -> Finished {
    let log = Arc::new(RequestLog::default());
    let state = Arc::new(Mutex::new(Ended::default()));
    let exchange = record::scope(log.clone(), exchange(ctx, &spec, state.clone()));
    let bounded = async {
        match spec.cancel {
            Cancel::Never => {
                exchange.await;
                false
            }
            Cancel::After(deadline) => tokio::time::timeout(deadline, exchange).await.is_err(),
        }
    };
    let (hung, cancelled) = match tokio::time::timeout(ctx.safety_bound, bounded).await {
        Ok(cancelled) => (false, cancelled),
        Err(_) => (true, false),
    };
    let Ended { outcome, body, send_elapsed } =
        std::mem::take(&mut *state.lock().unwrap_or_else(|p| p.into_inner()));
    let body = match body {
        None if cancelled && outcome.is_some() => Some(BodyEnd::Cancelled),
        body => body,
    };
    Finished { spec, entries: log.take(), outcome, body, hung, send_elapsed }
}

/// What a request got so far; written as it goes, so a dropped request keeps what it had.
#[derive(Debug, Default)]
struct Ended {
    outcome: Option<Outcome>,
    body: Option<BodyEnd>,
    send_elapsed: Option<Duration>,
}

async fn exchange(ctx: &Ctx, spec: &RequestSpec, state: Arc<Mutex<Ended>>) {
    let update = |f: &mut dyn FnMut(&mut Ended)| f(&mut state.lock().unwrap_or_else(|p| p.into_inner()));
    let started = Instant::now();
    let sent = build(ctx, spec).send().await;
    let took = started.elapsed();
    update(&mut |e| e.send_elapsed = Some(took));
    let response = match sent {
        Ok(resp) => resp,
        Err(err) => {
            let typed = failnext::Error::from_middleware(&err).map(|e| {
                if e.is_no_usable_endpoint() {
                    TypedError::NoUsable
                } else if e.is_unknown_endpoint() {
                    TypedError::Unknown
                } else {
                    let listed = e.attempts().iter().map(|a| ctx.endpoints.by_id(a.endpoint().as_str()));
                    TypedError::Failover(listed.collect())
                }
            });
            let mut outcome = Some(Outcome::Error(typed));
            update(&mut |e| e.outcome = outcome.take());
            return;
        }
    };
    let served_by = response.served_by().and_then(|id| ctx.endpoints.by_id(id.as_str()));
    let status = response.status().as_u16();
    update(&mut |e| e.outcome = Some(Outcome::Response { status, served_by }));
    let mut body = Some(match response.bytes().await {
        Ok(bytes) => {
            BodyEnd::Read { duplicate_write: spec.kind.is_write() && contains(&bytes, b"already known") }
        }
        Err(e) => BodyEnd::Error(ErrorKind::of(&reqwest_middleware::Error::Reqwest(e))),
    });
    update(&mut |e| e.body = body.take());
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn build(ctx: &Ctx, spec: &RequestSpec) -> reqwest_middleware::RequestBuilder {
    let b = ctx.client.post(&ctx.url).header(CONTENT_TYPE, "application/json");
    let mut b = match spec.kind {
        Kind::Read => b.body(read_body(spec.id)),
        Kind::WriteDenied | Kind::WriteDefault => b.body(write_body(ctx.seed, spec.id)),
        Kind::Stream => {
            // No length: the stream goes out chunked, as a caller's stream usually does.
            let body = stream_body(spec.id).into_bytes();
            b.body(streaming(body, spec.chunks, spec.pause_between_chunks))
        }
    };
    b = match spec.kind.permission() {
        Some(Permission::Allow) => b.allow_failover(),
        Some(Permission::Deny) => b.deny_failover(),
        _ => b,
    };
    let ids = &ctx.endpoints.ids;
    let excluded = spec.excluded_ids(ids);
    if !excluded.is_empty() {
        b = b.exclude_endpoints(excluded);
    }
    match spec.preferred_id(ids) {
        Some(p) => b.prefer_endpoint(p),
        None => b,
    }
}

fn read_body(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"eth_call","params":[{{"to":"0x000000000000000000000000000000000000dead","data":"0x"}},"latest"]}}"#
    )
}

/// A write whose raw transaction is unique to this run and request, so the chain would answer
/// "already known" if it ever arrived twice.
fn write_body(seed: u64, id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"{WRITE_METHOD}","params":["0x02{seed:016x}{id:016x}"]}}"#
    )
}

fn stream_body(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"eth_getBalance","params":["0x000000000000000000000000000000000000beef","latest"]}}"#
    )
}

/// `body` as a stream of `chunks` pieces, optionally pausing between them.
fn streaming(body: Vec<u8>, chunks: usize, pause: bool) -> reqwest::Body {
    use futures::StreamExt;
    let size = body.len().div_ceil(chunks.max(1)).max(1);
    let pieces: Vec<Vec<u8>> = body.chunks(size).map(<[u8]>::to_vec).collect();
    let stream = futures::stream::iter(pieces.into_iter().enumerate()).then(move |(i, piece)| async move {
        if pause && i > 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        Ok::<_, io::Error>(piece)
    });
    reqwest::Body::wrap_stream(stream)
}

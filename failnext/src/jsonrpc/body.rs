//! Reading a body up to a cap, and rebuilding the response from the very chunks read.
//!
//! The body is read with [`Response::chunk`] into a list of [`Bytes`]: each chunk is the
//! buffer the connection filled, kept by reference count, never joined or copied. The
//! rebuilt response's body hands those chunks out again, in order, followed by the rest of
//! the original stream when the cap stopped the reading early. Status, version, headers,
//! extensions and [`Response::url`] are those of the original.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Extensions, HeaderMap, StatusCode, Version};
use http_body::{Frame, SizeHint};
use reqwest::{Response, ResponseBuilderExt};
use url::Url;

/// What reading a body gave.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// The whole body, within the cap: the response's parts and its chunks, in order.
    Complete(Parts, Chunks),
    /// The body is larger than the cap: the response, rebuilt from what was read so far
    /// followed by the rest of the stream (nothing lost, nothing copied).
    OverCap(Response),
    /// Reading failed (the body ended early, the connection reset, ...).
    Failed(reqwest::Error),
}

/// A response without its body.
/// The chunks a body was read in: one (the usual case for a small answer) without a list.
#[derive(Debug)]
pub(crate) enum Chunks {
    None,
    One(Bytes),
    Many(Vec<Bytes>),
}

impl Chunks {
    fn push(&mut self, chunk: Bytes) {
        *self = match std::mem::replace(self, Chunks::None) {
            Chunks::None => Chunks::One(chunk),
            Chunks::One(first) => Chunks::Many(vec![first, chunk]),
            Chunks::Many(mut all) => {
                all.push(chunk);
                Chunks::Many(all)
            }
        };
    }

    /// The chunks, in order.
    pub(crate) fn as_slice(&self) -> &[Bytes] {
        match self {
            Chunks::None => &[],
            Chunks::One(chunk) => std::slice::from_ref(chunk),
            Chunks::Many(all) => all,
        }
    }

    fn into_vec(self) -> Vec<Bytes> {
        match self {
            Chunks::None => Vec::new(),
            Chunks::One(chunk) => vec![chunk],
            Chunks::Many(all) => all,
        }
    }
}

#[derive(Debug)]
pub(crate) struct Parts {
    status: StatusCode,
    version: Version,
    headers: HeaderMap,
    extensions: Extensions,
    url: Url,
}

impl Parts {
    /// Takes everything but the body out of `response` (its headers and extensions are left
    /// empty).
    fn take(response: &mut Response) -> Parts {
        Parts {
            status: response.status(),
            version: response.version(),
            headers: std::mem::take(response.headers_mut()),
            extensions: std::mem::take(response.extensions_mut()),
            url: response.url().clone(),
        }
    }
}

/// Reads `response`'s body up to `cap` bytes. A `content-length` above the cap returns the
/// response untouched, unread.
pub(crate) async fn read(mut response: Response, cap: usize) -> Outcome {
    let cap64 = u64::try_from(cap).unwrap_or(u64::MAX);
    if response.content_length().is_some_and(|n| n > cap64) {
        return Outcome::OverCap(response);
    }
    let mut chunks = Chunks::None;
    let mut total = 0usize;
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                total = total.saturating_add(chunk.len());
                chunks.push(chunk);
                if total > cap {
                    let parts = Parts::take(&mut response);
                    let rest = reqwest::Body::from(response);
                    return Outcome::OverCap(rebuild(parts, chunks, Some(rest)));
                }
            }
            Ok(None) => return Outcome::Complete(Parts::take(&mut response), chunks),
            Err(error) => return Outcome::Failed(error),
        }
    }
}

/// The response with `parts`, whose body is `chunks` then `rest`.
pub(crate) fn rebuild(parts: Parts, chunks: Chunks, rest: Option<reqwest::Body>) -> Response {
    let body = match (rest, chunks) {
        // The whole body in one chunk (most answers): reqwest keeps those bytes as they are,
        // with no stream around them.
        (None, Chunks::One(chunk)) => reqwest::Body::from(chunk),
        (rest, chunks) => rebuilt_stream(chunks.into_vec(), rest),
    };
    let mut rebuilt = http::Response::new(body);
    *rebuilt.status_mut() = parts.status;
    *rebuilt.version_mut() = parts.version;
    *rebuilt.headers_mut() = parts.headers;
    // reqwest keeps a response's URL in an extension only its builder extension can set;
    // `From<http::Response>` takes it from there (and would say "no.url.provided" without).
    // The builder is lent the response's own extensions, so the URL joins that map (no second
    // map, no merge), and hands them back. An empty response with no fallible part set
    // cannot fail to build.
    let mut carrier = http::Response::builder();
    if let Some(extensions) = carrier.extensions_mut() {
        *extensions = parts.extensions;
    }
    if let Ok(carrier) = carrier.url(parts.url).body(()) {
        *rebuilt.extensions_mut() = carrier.into_parts().0.extensions;
    }
    Response::from(rebuilt)
}

/// The chunks already read, then the rest of the original stream, as one body.
fn rebuilt_stream(chunks: Vec<Bytes>, rest: Option<reqwest::Body>) -> reqwest::Body {
    let remaining = chunks.iter().map(|c| c.len() as u64).sum();
    reqwest::Body::wrap(Replay { chunks: chunks.into_iter(), remaining, rest })
}

/// A body that hands out chunks already read, then the rest of the original stream.
#[derive(Debug)]
struct Replay {
    chunks: std::vec::IntoIter<Bytes>,
    /// Bytes left in `chunks`.
    remaining: u64,
    rest: Option<reqwest::Body>,
}

impl http_body::Body for Replay {
    type Data = Bytes;
    type Error = reqwest::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, reqwest::Error>>> {
        let this = &mut *self;
        if let Some(chunk) = this.chunks.next() {
            this.remaining -= chunk.len() as u64;
            return Poll::Ready(Some(Ok(Frame::data(chunk))));
        }
        match this.rest.as_mut() {
            Some(rest) => Pin::new(rest).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.chunks.len() == 0 && self.rest.as_ref().is_none_or(http_body::Body::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        let Some(rest) = &self.rest else {
            return SizeHint::with_exact(self.remaining);
        };
        let inner = rest.size_hint();
        let mut hint = SizeHint::new();
        hint.set_lower(inner.lower().saturating_add(self.remaining));
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper.saturating_add(self.remaining));
        }
        hint
    }
}

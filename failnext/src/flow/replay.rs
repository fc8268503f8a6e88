//! Decision 4, can the request be sent again: a copy of the request for later attempts.
//!
//! `reqwest::Request::try_clone` would do, but it allocates more than it needs to (a URL that
//! every later attempt replaces anyway, and an extension map for the timeout, even when there
//! is none). This copy keeps only what a later attempt needs. The body is shared, never copied:
//! a reusable reqwest body is a `Bytes`, and `Bytes` clones by reference count.

use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Version};
use http_body::Body as _;
use reqwest::{Body, Request};
use url::Url;

/// What a later attempt sends: the caller's request minus its URL.
#[derive(Debug)]
pub(crate) struct Replay {
    method: Method,
    headers: HeaderMap,
    version: Version,
    timeout: Option<Duration>,
    body: Option<Bytes>,
}

impl Replay {
    /// Prepares later attempts of `req`, or `None` when its body is a stream, which can be
    /// sent only once. The caller's body is swapped for a shared handle on the same bytes.
    pub(crate) fn prepare(req: &mut Request) -> Option<Replay> {
        let body = match req.body_mut().take() {
            None => None,
            Some(body) => match shared_bytes(body) {
                Ok(bytes) => {
                    *req.body_mut() = Some(Body::from(bytes.clone()));
                    Some(bytes)
                }
                Err(stream) => {
                    *req.body_mut() = Some(stream);
                    return None;
                }
            },
        };
        Some(Replay {
            method: req.method().clone(),
            headers: req.headers().clone(),
            version: req.version(),
            timeout: req.timeout().copied(),
            body,
        })
    }

    /// A fresh request to `url`, for an attempt that may not be the last.
    pub(crate) fn request(&self, url: &Url) -> Request {
        self.build(url, self.headers.clone())
    }

    /// The request to `url` for the last possible attempt: the headers move instead of copying.
    pub(crate) fn into_request(mut self, url: &Url) -> Request {
        let headers = std::mem::take(&mut self.headers);
        self.build(url, headers)
    }

    fn build(&self, url: &Url, headers: HeaderMap) -> Request {
        let mut req = Request::new(self.method.clone(), url.clone());
        *req.headers_mut() = headers;
        *req.version_mut() = self.version;
        if self.timeout.is_some() {
            *req.timeout_mut() = self.timeout;
        }
        *req.body_mut() = self.body.clone().map(Body::from);
        req
    }
}

/// The `Bytes` of a reusable body, or the body back when it is a stream.
///
/// A reusable reqwest body yields its whole content as one data frame, at once, without
/// copying; a stream is never polled here, so nothing is consumed from it.
fn shared_bytes(mut body: Body) -> Result<Bytes, Body> {
    if body.as_bytes().is_none() {
        return Err(body);
    }
    match Pin::new(&mut body).poll_frame(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(None) => Ok(Bytes::new()),
        Poll::Ready(Some(Ok(frame))) => frame.into_data().map_err(|_| body),
        // A reusable body is always ready and never fails; keep the body as it is otherwise.
        Poll::Ready(Some(Err(_))) | Poll::Pending => Err(body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(body: impl Into<Body>) -> Request {
        let mut req = Request::new(Method::POST, "http://127.0.0.1:1/a".parse().unwrap());
        *req.body_mut() = Some(body.into());
        req.headers_mut().insert("x-test", "1".parse().unwrap());
        req
    }

    #[test]
    fn shares_the_body_bytes_without_copying() {
        let mut req = post("payload");
        let replay = Replay::prepare(&mut req).unwrap();
        assert_eq!(req.body().and_then(Body::as_bytes), Some(&b"payload"[..]));
        let url: Url = "http://127.0.0.1:2/b".parse().unwrap();
        let again = replay.request(&url);
        let (first, second) =
            (req.body().unwrap().as_bytes().unwrap(), again.body().unwrap().as_bytes().unwrap());
        assert_eq!(first.as_ptr(), second.as_ptr(), "the same buffer, not a copy");
        assert_eq!(again.url(), &url);
        assert_eq!(again.method(), Method::POST);
        assert_eq!(again.headers().get("x-test").unwrap(), "1");
        let last = replay.into_request(&url);
        assert_eq!(last.headers().get("x-test").unwrap(), "1");
        assert_eq!(last.body().unwrap().as_bytes(), Some(&b"payload"[..]));
    }

    #[test]
    fn empty_and_absent_bodies_stay_so() {
        let mut req = post("");
        let replay = Replay::prepare(&mut req).unwrap();
        assert_eq!(replay.request(req.url()).body().and_then(Body::as_bytes), Some(&b""[..]));
        let mut req = Request::new(Method::GET, "http://127.0.0.1:1/".parse().unwrap());
        let replay = Replay::prepare(&mut req).unwrap();
        assert!(replay.request(req.url()).body().is_none());
        assert!(req.body().is_none());
    }

    #[test]
    fn a_stream_is_not_replayable_and_is_left_untouched() {
        let stream = futures::stream::iter([Ok::<_, std::io::Error>(Bytes::from_static(b"x"))]);
        let mut req = post(Body::wrap_stream(stream));
        assert!(Replay::prepare(&mut req).is_none());
        assert!(req.body().is_some_and(|b| b.as_bytes().is_none()));
    }

    #[test]
    fn timeout_is_carried_only_when_set() {
        let mut req = post("x");
        *req.timeout_mut() = Some(Duration::from_secs(2));
        let replay = Replay::prepare(&mut req).unwrap();
        assert_eq!(replay.request(req.url()).timeout(), Some(&Duration::from_secs(2)));
    }
}

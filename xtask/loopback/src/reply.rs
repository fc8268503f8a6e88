//! What a [`Server`](crate::Server) does with a request: [`Action`], and the [`Reply`] it
//! sends, whose body can pause, trickle, never end, stop short or break off with a reset.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::{CONNECTION, CONTENT_TYPE, HeaderName, HeaderValue};
use http::{HeaderMap, StatusCode};
use http_body::{Body, Frame, SizeHint};
use tokio::time::Sleep;

use crate::server::stats::Abandon;

/// What the server does with one request it has read completely (head and body).
#[derive(Clone, Debug)]
pub enum Action {
    /// Send this reply.
    Reply(Reply),
    /// Close the connection without answering (the client sees an incomplete message).
    Close,
    /// Reset the connection (RST, `SO_LINGER` 0) without answering.
    Reset,
    /// Never answer. The connection stays open until the client closes it (then the request
    /// counts as [abandoned](crate::Server::abandoned)) or the server stops.
    Hang,
}

/// A response: status, headers and a scripted body.
///
/// The body is sent piece by piece: bytes, pauses, then possibly an endless repetition,
/// and finally ends as [`End`] says. Without [`length`](Reply::length) or
/// [`chunked`](Reply::chunked), a body of bytes alone is sent with its `Content-Length`;
/// anything else is sent chunked.
#[derive(Clone, Debug)]
pub struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    pieces: Vec<Piece>,
    end: End,
    length: Option<u64>,
    chunked: bool,
}

#[derive(Clone, Debug)]
enum Piece {
    Bytes(Bytes),
    Pause(Duration),
    /// These bytes again and again, a pause between them, for as long as the client reads.
    Forever(Bytes, Duration),
}

/// How a reply's body ends once its pieces are sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum End {
    /// Normally: the message is complete (if it sent what its length announced).
    #[default]
    Finish,
    /// Never: no more bytes, and the connection stays open until the client goes away.
    Stall,
    /// The connection closes (FIN): short of an announced length, a truncated body.
    Close,
    /// The connection is reset (RST, `SO_LINGER` 0): a reset mid-body.
    Reset,
}

/// A complete JSON reply with `Content-Length` and `Connection: close`: `status` and `body`.
pub fn response(status: u16, body: &[u8]) -> Reply {
    Reply::new(status).json(body.to_vec()).closing()
}

// ===== impl Reply =====

impl Reply {
    /// A reply with `status`, no header and an empty body.
    ///
    /// # Panics
    ///
    /// When `status` is not a valid HTTP status code (100 to 999).
    pub fn new(status: u16) -> Reply {
        Reply {
            status: StatusCode::from_u16(status).expect("a valid status code"),
            headers: HeaderMap::new(),
            pieces: Vec::new(),
            end: End::Finish,
            length: None,
            chunked: false,
        }
    }

    /// Adds a header (after any with the same name).
    ///
    /// # Panics
    ///
    /// When `name` or `value` is not valid in a header.
    pub fn header(mut self, name: &str, value: impl AsRef<str>) -> Reply {
        let name = HeaderName::from_bytes(name.as_bytes()).expect("a valid header name");
        let value = HeaderValue::from_str(value.as_ref()).expect("a valid header value");
        self.headers.append(name, value);
        self
    }

    /// `Content-Type: application/json` and `body` as the first piece.
    pub fn json(self, body: impl Into<Bytes>) -> Reply {
        self.content_type("application/json").send(body)
    }

    /// `Content-Type: text/plain; charset=utf-8` and `body` as the first piece.
    pub fn text(self, body: impl Into<String>) -> Reply {
        self.content_type("text/plain; charset=utf-8").send(body.into())
    }

    /// Sets `Content-Type`.
    pub fn content_type(mut self, value: &'static str) -> Reply {
        self.headers.insert(CONTENT_TYPE, HeaderValue::from_static(value));
        self
    }

    /// `Connection: close`: the server closes the connection after this reply.
    pub fn closing(mut self) -> Reply {
        self.headers.insert(CONNECTION, HeaderValue::from_static("close"));
        self
    }

    /// Sends `bytes` next.
    pub fn send(mut self, bytes: impl Into<Bytes>) -> Reply {
        self.pieces.push(Piece::Bytes(bytes.into()));
        self
    }

    /// Pauses for `pause` next (the head or the bytes before it are flushed first).
    pub fn pause(mut self, pause: Duration) -> Reply {
        self.pieces.push(Piece::Pause(pause));
        self
    }

    /// Sends `bytes` again and again with `every` between them, for as long as the client
    /// reads: the body never ends. Pieces after this one are never reached.
    pub fn forever(mut self, bytes: impl Into<Bytes>, every: Duration) -> Reply {
        self.pieces.push(Piece::Forever(bytes.into(), every));
        self
    }

    /// Announces `Content-Length: length`, whatever the pieces add up to: more than they
    /// send makes a truncated body (with [`End::Close`]) or a stalled one ([`End::Stall`]).
    pub fn length(mut self, length: u64) -> Reply {
        self.length = Some(length);
        self
    }

    /// Sends the body chunked even when its length is known.
    pub fn chunked(mut self) -> Reply {
        self.chunked = true;
        self
    }

    /// How the body ends once its pieces are sent. Default is [`End::Finish`].
    pub fn end(mut self, end: End) -> Reply {
        self.end = end;
        self
    }

    /// The status code.
    pub fn status(&self) -> u16 {
        self.status.as_u16()
    }

    /// The length of the bytes a body of bytes alone sends and then finishes, or `None`.
    fn exact_len(&self) -> Option<u64> {
        if self.chunked || self.end != End::Finish {
            return None;
        }
        let mut len = 0u64;
        for piece in &self.pieces {
            match piece {
                Piece::Bytes(b) => len += b.len() as u64,
                _ => return None,
            }
        }
        Some(len)
    }

    /// The hyper response; `reset` is the connection's reset-on-close switch.
    pub(crate) fn into_response(
        self,
        reset: Arc<AtomicBool>,
        mut abandon: Abandon,
    ) -> http::Response<ReplyBody> {
        let exact = self.exact_len();
        let mut headers = self.headers;
        let size = match (self.length, exact) {
            (Some(declared), Some(exact)) if declared == exact => Some(exact),
            (Some(declared), _) => {
                headers.insert(http::header::CONTENT_LENGTH, HeaderValue::from(declared));
                None
            }
            (None, exact) => exact,
        };
        if size == Some(0) {
            // hyper does not poll an empty body: it is complete already.
            abandon.finish();
        }
        let body =
            ReplyBody { pieces: self.pieces.into(), state: State::Next, end: self.end, size, reset, abandon };
        let mut resp = http::Response::new(body);
        *resp.status_mut() = self.status;
        *resp.headers_mut() = headers;
        resp
    }
}

// ===== ReplyBody =====

/// The body of a [`Reply`] on the wire.
pub(crate) struct ReplyBody {
    pieces: std::collections::VecDeque<Piece>,
    state: State,
    end: End,
    /// The exact length, when hyper may announce it.
    size: Option<u64>,
    reset: Arc<AtomicBool>,
    abandon: Abandon,
}

enum State {
    Next,
    Sleeping(Pin<Box<Sleep>>, Option<(Bytes, Duration)>),
    /// Returned `Pending` once so hyper flushes what it buffered; then ends.
    Flushed,
    Done,
}

/// The error that ends a body with [`End::Close`] or [`End::Reset`].
#[derive(Debug)]
pub(crate) struct Hangup;

impl std::fmt::Display for Hangup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the loopback server hung up on purpose")
    }
}

impl std::error::Error for Hangup {}

impl Body for ReplyBody {
    type Data = Bytes;
    type Error = Hangup;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Hangup>>> {
        let this = &mut *self;
        loop {
            match &mut this.state {
                State::Done => return Poll::Ready(None),
                State::Sleeping(sleep, repeat) => {
                    if sleep.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    let repeat = repeat.take();
                    this.state = State::Next;
                    if let Some((bytes, every)) = repeat {
                        this.pieces.push_front(Piece::Forever(bytes.clone(), every));
                        return Poll::Ready(Some(Ok(Frame::data(bytes))));
                    }
                }
                State::Next => match this.pieces.pop_front() {
                    Some(Piece::Bytes(bytes)) => return Poll::Ready(Some(Ok(Frame::data(bytes)))),
                    Some(Piece::Pause(pause)) => {
                        this.state = State::Sleeping(Box::pin(tokio::time::sleep(pause)), None);
                    }
                    Some(Piece::Forever(bytes, every)) if every.is_zero() => {
                        this.pieces.push_front(Piece::Forever(bytes.clone(), every));
                        return Poll::Ready(Some(Ok(Frame::data(bytes))));
                    }
                    Some(Piece::Forever(bytes, every)) => {
                        this.state =
                            State::Sleeping(Box::pin(tokio::time::sleep(every)), Some((bytes, every)));
                    }
                    None => match this.end {
                        End::Finish => {
                            this.state = State::Done;
                            this.abandon.finish();
                            return Poll::Ready(None);
                        }
                        End::Stall => return Poll::Pending,
                        End::Close | End::Reset => {
                            // hyper writes what it buffered only when the body is pending;
                            // an error right after the last bytes would lose them.
                            this.state = State::Flushed;
                            cx.waker().wake_by_ref();
                            return Poll::Pending;
                        }
                    },
                },
                State::Flushed => {
                    this.state = State::Done;
                    this.abandon.finish();
                    if this.end == End::Reset {
                        this.reset.store(true, Ordering::SeqCst);
                    }
                    return Poll::Ready(Some(Err(Hangup)));
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.state, State::Done) || (self.size == Some(0) && self.pieces.is_empty())
    }

    fn size_hint(&self) -> SizeHint {
        match self.size {
            Some(n) => SizeHint::with_exact(n),
            None => SizeHint::default(),
        }
    }
}

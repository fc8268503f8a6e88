//! One server's connections: the accept loop, each connection served by hyper, each request
//! read and answered with the handler's action, and the socket that can reset.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio::task::JoinSet;

use super::stats::{Abandon, InFlight, Open};
use super::{Respond, Shared};
use crate::lock;
use crate::received::Received;
use crate::reply::{Action, Hangup, Reply, ReplyBody};

pub(super) fn bind(addr: SocketAddr, runtime: &Handle) -> io::Result<TcpListener> {
    let _entered = runtime.enter();
    let socket = TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

pub(super) async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut stopped: oneshot::Receiver<()>,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            biased;
            _ = &mut stopped => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    shared.stats.connections.fetch_add(1, Ordering::SeqCst);
                    shared.stats.open.fetch_add(1, Ordering::SeqCst);
                    connections.spawn(serve_connection(stream, shared.clone()));
                }
                // Out of file descriptors or similar: wait a little rather than spin.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            // Reap finished connections so the set does not grow.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    connections.shutdown().await;
}

async fn serve_connection(stream: TcpStream, shared: Arc<Shared>) {
    let _open = Open(shared.stats.clone());
    if shared.nodelay {
        let _ = stream.set_nodelay(true);
    }
    let reset = Arc::new(AtomicBool::new(false));
    let io = TokioIo::new(Io { stream, reset: reset.clone() });
    let mut http = http1::Builder::new();
    http.keep_alive(shared.keep_alive);
    if let Some(max) = shared.max_head {
        http.max_buf_size(max.max(8192));
    }
    let service = service_fn(move |req| respond(req, shared.clone(), reset.clone()));
    let _ = http.serve_connection(io, service).await;
}

/// Reads the request, asks the handler, and turns its action into hyper's terms.
async fn respond(
    req: hyper::Request<Incoming>,
    shared: Arc<Shared>,
    reset: Arc<AtomicBool>,
) -> Result<hyper::Response<ReplyBody>, Hangup> {
    let stats = shared.stats.clone();
    stats.requests.fetch_add(1, Ordering::SeqCst);
    shared.arrived.notify_waiters();
    let mut abandon = Abandon(Some(stats.clone()));
    let in_flight = InFlight::enter(&stats);
    let (parts, body) = req.into_parts();
    let body = match read_body(body, shared.max_body, shared.keep_body).await {
        Ok(body) => body,
        Err(BodyError::TooLarge) => {
            abandon.finish();
            let reply = Reply::new(413).text("request body too large").closing();
            return Ok(reply.into_response(reset, abandon));
        }
        Err(BodyError::Gone) => return Err(Hangup),
    };
    let received =
        Received { method: parts.method, target: parts.uri.to_string(), headers: parts.headers, body };
    let respond = lock(&shared.respond).clone();
    let action = match respond {
        Respond::Now(handler) => {
            let action = handler(&received);
            shared.record(received);
            action
        }
        Respond::Later(handler) => {
            let later = handler(&received);
            shared.record(received);
            later.await
        }
    };
    drop(in_flight);
    match action {
        Action::Reply(reply) => Ok(reply.into_response(reset, abandon)),
        Action::Close => {
            abandon.finish();
            Err(Hangup)
        }
        Action::Reset => {
            abandon.finish();
            reset.store(true, Ordering::SeqCst);
            Err(Hangup)
        }
        Action::Hang => std::future::pending().await,
    }
}

enum BodyError {
    TooLarge,
    Gone,
}

/// Reads the body to its end, keeping at most `keep` bytes of it.
async fn read_body(mut body: Incoming, max: Option<usize>, keep: Option<usize>) -> Result<Bytes, BodyError> {
    if max.is_none() && keep.is_none() {
        return body.collect().await.map(|c| c.to_bytes()).map_err(|_| BodyError::Gone);
    }
    let mut kept = BytesMut::new();
    let mut total = 0usize;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.map_err(|_| BodyError::Gone)?.into_data() else { continue };
        total = total.saturating_add(data.len());
        if max.is_some_and(|max| total > max) {
            return Err(BodyError::TooLarge);
        }
        let room = keep.unwrap_or(usize::MAX).saturating_sub(kept.len());
        kept.extend_from_slice(&data[..data.len().min(room)]);
    }
    Ok(kept.freeze())
}

// ===== impl Shared =====

impl Shared {
    fn record(&self, received: Received) {
        if let Some(log) = &self.log {
            lock(log).push(received);
        }
    }
}

// ===== Io =====

/// A connection's socket that resets (RST) instead of closing (FIN) once `reset` is set.
struct Io {
    stream: TcpStream,
    reset: Arc<AtomicBool>,
}

impl Drop for Io {
    fn drop(&mut self) {
        if self.reset.load(Ordering::SeqCst) {
            // With a zero linger, closing sends RST instead of FIN and does not block.
            let _ = self.stream.set_zero_linger();
        }
    }
}

impl AsyncRead for Io {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Io {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

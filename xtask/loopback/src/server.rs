//! [`Server`]: a hyper HTTP/1.1 server on 127.0.0.1 whose every request is answered by a
//! handler's [`Action`], and that counts and records what it received.
//!
//! Everything above TCP is hyper's (`server::conn::http1`): keep-alive, pipelining, chunked
//! request bodies, `Connection: close`. The faults are made of hyper's own means: a handler
//! that never completes hangs; a handler error closes the connection without a response; a
//! body that ends short of its announced length truncates; a body that errors on a socket set
//! to `SO_LINGER` 0 resets. Nothing here writes HTTP by hand.

use std::fmt;
use std::future::Future;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
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
use tokio::sync::{Notify, oneshot};
use tokio::task::{JoinHandle, JoinSet};

use crate::lock;
use crate::received::Received;
use crate::reply::{Action, Hangup, Reply, ReplyBody};

/// Decides the action for each request, as soon as it is read; called in arrival order.
pub type Handler = Arc<dyn Fn(&Received) -> Action + Send + Sync>;

/// The action a [`LaterHandler`] decides on, after waiting for whatever it waits for.
pub type Later = Pin<Box<dyn Future<Output = Action> + Send>>;

/// Like [`Handler`], but the action comes later: after a delay, a gate, a chain tick. What
/// the future needs of the request it must take (clone) before it is returned.
pub type LaterHandler = Arc<dyn Fn(&Received) -> Later + Send + Sync>;

/// Either kind of handler.
#[derive(Clone)]
#[allow(missing_debug_implementations, reason = "holds a handler closure")]
pub enum Respond {
    /// Decides at once.
    Now(Handler),
    /// Decides later.
    Later(LaterHandler),
}

impl From<Handler> for Respond {
    fn from(handler: Handler) -> Respond {
        Respond::Now(handler)
    }
}

impl From<LaterHandler> for Respond {
    fn from(handler: LaterHandler) -> Respond {
        Respond::Later(handler)
    }
}

/// Options of a [`Server`]; [`serve`](Builder::serve) starts it.
#[derive(Clone, Debug)]
pub struct Builder {
    keep_alive: bool,
    nodelay: bool,
    record: bool,
    max_body: Option<usize>,
    keep_body: Option<usize>,
    max_head: Option<usize>,
    runtime: Option<Handle>,
}

/// A loopback HTTP/1.1 server (hyper) answering each request with its handler's [`Action`].
///
/// It counts requests, connections (accepted and open), requests in flight (read, action not
/// yet decided) and abandoned requests (whose handler or reply body was dropped before it
/// finished: the client went away). It records every request it read, unless built with
/// [`Builder::record`]`(false)`. It can [`stop`](Server::stop) (refusing connections, closing
/// the open ones) and [`restart`](Server::restart) on the same port. Dropping it stops it.
pub struct Server {
    addr: SocketAddr,
    shared: Arc<Shared>,
    runtime: Handle,
    running: Option<Running>,
}

struct Shared {
    respond: Mutex<Respond>,
    log: Option<Mutex<Vec<Received>>>,
    stats: Arc<Stats>,
    arrived: Notify,
    keep_alive: bool,
    nodelay: bool,
    max_body: Option<usize>,
    keep_body: Option<usize>,
    max_head: Option<usize>,
}

#[derive(Debug, Default)]
pub(crate) struct Stats {
    requests: AtomicUsize,
    connections: AtomicUsize,
    open: AtomicUsize,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    abandoned: AtomicUsize,
}

struct Running {
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

// ===== impl Builder =====

impl Default for Builder {
    fn default() -> Builder {
        Builder {
            keep_alive: true,
            nodelay: false,
            record: true,
            max_body: None,
            keep_body: None,
            max_head: None,
            runtime: None,
        }
    }
}

impl Builder {
    /// Whether connections stay open between requests. Default is `true` (a reply can still
    /// close its connection with [`Reply::closing`]).
    pub fn keep_alive(mut self, keep_alive: bool) -> Builder {
        self.keep_alive = keep_alive;
        self
    }

    /// Sets `TCP_NODELAY` on accepted connections. Default is off.
    pub fn nodelay(mut self, nodelay: bool) -> Builder {
        self.nodelay = nodelay;
        self
    }

    /// Whether every request read is kept for [`Server::take_log`]. Default is `true`; a
    /// long-running server (the simulator, the bench) turns it off.
    pub fn record(mut self, record: bool) -> Builder {
        self.record = record;
        self
    }

    /// Answers a request whose body is longer than `max` bytes with 413 and closes its
    /// connection, without calling the handler. Default is no limit.
    pub fn max_body(mut self, max: usize) -> Builder {
        self.max_body = Some(max);
        self
    }

    /// Keeps only the first `keep` bytes of each request body in [`Received::body`] (the
    /// rest is still read, and dropped). Default is the whole body.
    pub fn keep_body(mut self, keep: usize) -> Builder {
        self.keep_body = Some(keep);
        self
    }

    /// The largest request head hyper reads (at least 8 KiB); a longer one gets 431.
    /// Default is hyper's (about 400 KiB).
    pub fn max_head(mut self, max: usize) -> Builder {
        self.max_head = Some(max);
        self
    }

    /// Runs the server on `runtime` instead of the current one (see
    /// [`ServerThread`](crate::ServerThread)).
    pub fn runtime(mut self, runtime: Handle) -> Builder {
        self.runtime = Some(runtime);
        self
    }

    /// Binds `127.0.0.1` on an ephemeral port and starts serving with `respond`.
    ///
    /// # Errors
    ///
    /// When no loopback port can be bound, or there is no runtime to run on.
    pub fn serve(self, respond: impl Into<Respond>) -> io::Result<Server> {
        let runtime = match self.runtime {
            Some(runtime) => runtime,
            None => Handle::try_current().map_err(io::Error::other)?,
        };
        let listener = bind((Ipv4Addr::LOCALHOST, 0).into(), &runtime)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            respond: Mutex::new(respond.into()),
            log: self.record.then(|| Mutex::new(Vec::new())),
            stats: Arc::default(),
            arrived: Notify::new(),
            keep_alive: self.keep_alive,
            nodelay: self.nodelay,
            max_body: self.max_body,
            keep_body: self.keep_body,
            max_head: self.max_head,
        });
        let mut server = Server { addr, shared, runtime, running: None };
        server.spawn(listener);
        Ok(server)
    }
}

// ===== impl Server =====

impl Server {
    /// Options for a server.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// Starts a server on the current runtime that answers each request with `handler`'s
    /// action.
    ///
    /// # Panics
    ///
    /// When no loopback port can be bound, or outside a tokio runtime.
    pub async fn start(handler: Handler) -> Server {
        Server::builder().serve(handler).expect("bind a loopback server")
    }

    /// Like [`start`](Server::start), with a handler that decides later.
    ///
    /// # Panics
    ///
    /// As [`start`](Server::start).
    pub async fn start_later(handler: LaterHandler) -> Server {
        Server::builder().serve(handler).expect("bind a loopback server")
    }

    /// A server that does `action` with every request.
    ///
    /// # Panics
    ///
    /// As [`start`](Server::start).
    pub async fn always(action: Action) -> Server {
        Server::start(Arc::new(move |_: &Received| action.clone())).await
    }

    /// A server that answers every request with `status` and the JSON `body`, then closes
    /// the connection ([`response`](crate::response)).
    ///
    /// # Panics
    ///
    /// As [`start`](Server::start).
    pub async fn replying(status: u16, body: &'static [u8]) -> Server {
        Server::always(Action::Reply(crate::response(status, body))).await
    }

    /// The bound address (kept across [`stop`](Server::stop) and
    /// [`restart`](Server::restart)).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:port` followed by `rest` (which should start with `/`).
    pub fn url(&self, rest: &str) -> String {
        format!("http://{}{rest}", self.addr)
    }

    /// Replaces the handler for the requests that follow.
    pub fn set_handler(&self, respond: impl Into<Respond>) {
        *lock(&self.shared.respond) = respond.into();
    }

    /// Takes the requests read so far, in arrival order (none when not recording).
    pub fn take_log(&self) -> Vec<Received> {
        self.shared.log.as_ref().map(|log| std::mem::take(&mut *lock(log))).unwrap_or_default()
    }

    /// Requests whose head was read so far.
    pub fn requests(&self) -> usize {
        self.shared.stats.requests.load(Ordering::SeqCst)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.shared.stats.connections.load(Ordering::SeqCst)
    }

    /// Connections open now.
    pub fn open_connections(&self) -> usize {
        self.shared.stats.open.load(Ordering::SeqCst)
    }

    /// The most requests whose action was being decided at the same time.
    pub fn max_in_flight(&self) -> usize {
        self.shared.stats.max_in_flight.load(Ordering::SeqCst)
    }

    /// Requests whose handler or reply body was dropped before it finished: the client
    /// closed the connection while the server was waiting or still writing.
    pub fn abandoned(&self) -> usize {
        self.shared.stats.abandoned.load(Ordering::SeqCst)
    }

    /// Returns once `n` requests in all have arrived.
    pub async fn wait_for_requests(&self, n: usize) {
        loop {
            let notified = self.shared.arrived.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.requests() >= n {
                return;
            }
            notified.await;
        }
    }

    /// Closes the listening socket (connecting is refused) and every open connection, and
    /// returns once they are closed.
    pub async fn stop(&mut self) {
        if let Some(Running { stop, task }) = self.running.take() {
            // The loop may already have ended; either way the task is joined.
            let _ = stop.send(());
            let _ = task.await;
        }
    }

    /// Binds the same port again after [`stop`](Server::stop); does nothing if running.
    ///
    /// # Errors
    ///
    /// When the port cannot be bound again: while the server was stopped another socket may
    /// have taken it.
    pub fn restart(&mut self) -> io::Result<()> {
        if self.running.is_none() {
            let listener = bind(self.addr, &self.runtime)?;
            self.spawn(listener);
        }
        Ok(())
    }

    fn spawn(&mut self, listener: TcpListener) {
        let (stop, stopped) = oneshot::channel();
        let task = self.runtime.spawn(accept_loop(listener, self.shared.clone(), stopped));
        self.running = Some(Running { stop, task });
    }
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("addr", &self.addr)
            .field("running", &self.running.is_some())
            .field("requests", &self.requests())
            .field("connections", &self.connections())
            .finish()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Aborting drops the loop, its socket and its `JoinSet`, which aborts the connections.
        if let Some(running) = &self.running {
            running.task.abort();
        }
    }
}

fn bind(addr: SocketAddr, runtime: &Handle) -> io::Result<TcpListener> {
    let _entered = runtime.enter();
    let socket = TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, mut stopped: oneshot::Receiver<()>) {
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

// ===== guards =====

/// Counts a request as abandoned when dropped before [`finish`](Abandon::finish).
pub(crate) struct Abandon(Option<Arc<Stats>>);

impl Abandon {
    /// The request ended as planned.
    pub(crate) fn finish(&mut self) {
        self.0 = None;
    }
}

impl Drop for Abandon {
    fn drop(&mut self) {
        if let Some(stats) = &self.0 {
            stats.abandoned.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// A request whose action is being decided.
struct InFlight(Arc<Stats>);

impl InFlight {
    fn enter(stats: &Arc<Stats>) -> InFlight {
        let now = stats.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        stats.max_in_flight.fetch_max(now, Ordering::SeqCst);
        InFlight(stats.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// An open connection.
struct Open(Arc<Stats>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
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

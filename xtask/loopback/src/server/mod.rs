//! [`Server`]: a hyper HTTP/1.1 server on 127.0.0.1 whose every request is answered by a
//! handler's [`Action`], and that counts and records what it received.
//!
//! Everything above TCP is hyper's (`server::conn::http1`): keep-alive, pipelining, chunked
//! request bodies, `Connection: close`. The faults are made of hyper's own means: a handler
//! that never completes hangs; a handler error closes the connection without a response; a
//! body that ends short of its announced length truncates; a body that errors on a socket set
//! to `SO_LINGER` 0 resets. Nothing here writes HTTP by hand.

mod connection;
pub(crate) mod stats;

use std::fmt;
use std::future::Future;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use tokio::net::TcpListener;
use tokio::runtime::Handle;
use tokio::sync::{Notify, oneshot};
use tokio::task::JoinHandle;

use crate::lock;
use crate::received::Received;
use crate::reply::Action;
use connection::{accept_loop, bind};
use stats::Stats;

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

/// What the server and its connections share: the handler, the log, the counts, the settings.
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
    /// close its connection with [`Reply::closing`](crate::Reply::closing)).
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

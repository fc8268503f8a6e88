//! Loopback JSON-RPC servers (hyper), on their own thread and runtime, away from the client's.
//!
//! Each server counts the TCP connections it accepts, so a scenario can show whether the
//! client reused its connections. The server thread is not counted by the allocator.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::CONTENT_TYPE;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpSocket};
use tokio::runtime::Handle;
use tokio::sync::oneshot;

/// What a server does with every request. The request body is always read to its end first.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Behavior {
    /// HTTP 200 with a fixed `eth_blockNumber` result.
    Ok,
    /// HTTP 503 with a small JSON-RPC error body.
    Unavailable,
    /// Never answers.
    Hang,
    /// Echoes the request's JSON-RPC `id` with `result` = `height`, after `delay`.
    Head { delay: Duration, height: u64 },
}

/// One loopback server, or a port that refuses connections.
#[derive(Debug)]
pub(crate) struct Server {
    pub(crate) url: String,
    connections: Arc<AtomicU64>,
    /// A bound socket that never listens: connecting to it is refused, and the port stays ours.
    _refusing: Option<TcpSocket>,
}

/// The server thread: one current-thread runtime that every server of the run shares.
#[derive(Debug)]
pub(crate) struct Servers {
    handle: Handle,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

const OK_BODY: &str = r#"{"jsonrpc":"2.0","id":1,"result":"0x1316a5f"}"#;
const UNAVAILABLE_BODY: &str =
    r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"service unavailable"}}"#;

// ===== impl Servers =====

impl Servers {
    /// Starts the server thread.
    pub(crate) fn start() -> std::io::Result<Servers> {
        let (handle_tx, handle_rx) = std::sync::mpsc::channel();
        let (shutdown, shutdown_rx) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new().name("bench-servers".into()).spawn(move || {
            crate::alloc::untrack_this_thread();
            let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => return drop(handle_tx.send(Err(e))),
            };
            let _ = handle_tx.send(Ok(rt.handle().clone()));
            let _ = rt.block_on(shutdown_rx);
            // Dropping the runtime cancels every connection, hanging ones included.
        })?;
        let handle = handle_rx.recv().map_err(std::io::Error::other)??;
        Ok(Servers { handle, shutdown: Some(shutdown), thread: Some(thread) })
    }

    /// Starts a server with `behavior` on `127.0.0.1:0`.
    pub(crate) fn spawn(&self, behavior: Behavior) -> std::io::Result<Server> {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let connections = Arc::new(AtomicU64::new(0));
        let counter = connections.clone();
        let _guard = self.handle.enter();
        let listener = TcpListener::from_std(std_listener)?;
        self.handle.spawn(accept_loop(listener, behavior, counter));
        Ok(Server { url: url_of(addr), connections, _refusing: None })
    }

    /// A port on 127.0.0.1 that refuses every connection.
    pub(crate) fn refusing(&self) -> std::io::Result<Server> {
        let socket = TcpSocket::new_v4()?;
        socket.bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
        let addr = socket.local_addr()?;
        Ok(Server { url: url_of(addr), connections: Arc::default(), _refusing: Some(socket) })
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

// ===== impl Server =====

impl Server {
    /// Connections accepted so far.
    pub(crate) fn connections(&self) -> u64 {
        self.connections.load(Relaxed)
    }
}

fn url_of(addr: SocketAddr) -> String {
    format!("http://{addr}/")
}

async fn accept_loop(listener: TcpListener, behavior: Behavior, connections: Arc<AtomicU64>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        connections.fetch_add(1, Relaxed);
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let service = service_fn(move |req| respond(req, behavior));
            let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
        });
    }
}

async fn respond(req: Request<Incoming>, behavior: Behavior) -> Result<Response<Full<Bytes>>, Infallible> {
    let head = read_body(req.into_body()).await;
    let (status, body) = match behavior {
        Behavior::Ok => (StatusCode::OK, Bytes::from_static(OK_BODY.as_bytes())),
        Behavior::Unavailable => {
            (StatusCode::SERVICE_UNAVAILABLE, Bytes::from_static(UNAVAILABLE_BODY.as_bytes()))
        }
        Behavior::Head { delay, height } => {
            tokio::time::sleep(delay).await;
            (StatusCode::OK, Bytes::from(head_response(&head, height)))
        }
        Behavior::Hang => std::future::pending().await,
    };
    let mut resp = Response::new(Full::new(body));
    *resp.status_mut() = status;
    resp.headers_mut().insert(CONTENT_TYPE, "application/json".parse().expect("static header value"));
    Ok(resp)
}

/// Reads the whole body; keeps only its first 4 KiB (enough for a probe's `id`).
async fn read_body(mut body: Incoming) -> Vec<u8> {
    let mut head = Vec::new();
    while let Some(Ok(frame)) = body.frame().await {
        if let Ok(data) = frame.into_data() {
            let room = 4096usize.saturating_sub(head.len());
            head.extend_from_slice(&data[..data.len().min(room)]);
        }
    }
    head
}

fn head_response(request: &[u8], height: u64) -> String {
    let id = serde_json::from_slice::<serde_json::Value>(request)
        .ok()
        .and_then(|v| v.get("id").cloned())
        .unwrap_or(serde_json::Value::Null);
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"0x{height:x}"}}"#)
}

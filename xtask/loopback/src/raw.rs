//! A programmable raw HTTP/1.1 server, a refused address, and an attempt-logging middleware.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

/// Locks a mutex, ignoring poisoning: a failed assertion elsewhere must not cascade.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One request as the server read it off the wire.
#[derive(Clone, Debug, Default)]
pub struct Received {
    /// The request line's method.
    pub method: String,
    /// The request line's target (origin form: path and query).
    pub target: String,
    /// Header names (lower-cased) and raw values with surrounding whitespace trimmed.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The body, de-chunked when it was sent chunked.
    pub body: Vec<u8>,
}

impl Received {
    /// Every value of header `name` (lower-case).
    pub fn header_values(&self, name: &str) -> Vec<&[u8]> {
        self.headers.iter().filter(|(n, _)| n == name).map(|(_, v)| v.as_slice()).collect()
    }
}

/// What the server does with a request it has read completely.
#[derive(Clone, Debug)]
pub enum Action {
    /// Write these bytes, then close.
    Reply(Vec<u8>),
    /// Close without answering (the client sees an incomplete message).
    Close,
    /// Reset the connection (RST) without answering.
    Reset,
    /// Never answer; close only when the client goes away or the server is dropped.
    Hang,
}

/// Decides the action for each request; called once per request, in arrival order.
pub type Handler = Arc<dyn Fn(&Received) -> Action + Send + Sync>;

/// A complete `HTTP/1.1` response with `Content-Length` and `Connection: close`.
pub fn response(status: u16, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status} Scripted\r\ncontent-length: {}\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// A raw HTTP/1.1 server on 127.0.0.1 whose behaviour can be replaced at any time.
#[allow(missing_debug_implementations, reason = "holds a handler closure")]
pub struct RawServer {
    addr: SocketAddr,
    handler: Arc<Mutex<Handler>>,
    log: Arc<Mutex<Vec<Received>>>,
    task: JoinHandle<()>,
}

impl RawServer {
    /// Starts a server on 127.0.0.1 that answers each request with `handler`'s action.
    pub async fn start(handler: Handler) -> RawServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind loopback listener");
        let addr = listener.local_addr().expect("listener address");
        let handler = Arc::new(Mutex::new(handler));
        let log = Arc::new(Mutex::new(Vec::new()));
        let (h, l) = (handler.clone(), log.clone());
        let task = tokio::spawn(async move {
            // Dropping the set (when this task is aborted) aborts every connection task.
            let mut connections = JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else { continue };
                        connections.spawn(serve(stream, h.clone(), l.clone()));
                    }
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
        });
        RawServer { addr, handler, log, task }
    }

    /// A server that answers every request with `status` and `body`.
    pub async fn replying(status: u16, body: &'static [u8]) -> RawServer {
        RawServer::start(Arc::new(move |_: &Received| Action::Reply(response(status, body)))).await
    }

    /// A server that does `action` with every request.
    pub async fn always(action: Action) -> RawServer {
        RawServer::start(Arc::new(move |_: &Received| action.clone())).await
    }

    /// The bound address.
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
    pub fn set_handler(&self, handler: Handler) {
        *lock(&self.handler) = handler;
    }

    /// Takes the requests read so far, in arrival order.
    pub fn take_log(&self) -> Vec<Received> {
        std::mem::take(&mut *lock(&self.log))
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(mut stream: TcpStream, handler: Arc<Mutex<Handler>>, log: Arc<Mutex<Vec<Received>>>) {
    let Some(request) = read_request(&mut stream).await else { return };
    let handler = lock(&handler).clone();
    let action = handler(&request);
    lock(&log).push(request);
    match action {
        Action::Reply(bytes) => {
            let _ = stream.write_all(&bytes).await;
            let _ = stream.flush().await;
            let _ = stream.shutdown().await;
            // Drain until the client closes, so no unread byte turns the close into a reset.
            let mut sink = [0u8; 1024];
            let drain = async { while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {} };
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), drain).await;
        }
        Action::Close => {
            let _ = stream.shutdown().await;
        }
        Action::Reset => {
            #[allow(deprecated, reason = "zero linger is the portable way to send a reset")]
            let _ = stream.set_linger(Some(std::time::Duration::ZERO));
        }
        Action::Hang => {
            let mut sink = [0u8; 1024];
            while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
        }
    }
}

/// Reads one complete request: head, then a `Content-Length` or chunked body. `None` when the
/// client goes away first or sends something this small parser does not understand.
async fn read_request(stream: &mut TcpStream) -> Option<Received> {
    let mut buf = Vec::new();
    let head_end = loop {
        if let Some(i) = find(&buf, b"\r\n\r\n") {
            break i;
        }
        if buf.len() > 64 * 1024 || !fill(stream, &mut buf).await {
            return None;
        }
    };
    let head = buf[..head_end].to_vec();
    let mut rest = buf[head_end + 4..].to_vec();
    let mut lines = head.split(|&b| b == b'\n').map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let request_line = String::from_utf8_lossy(lines.next()?).into_owned();
    let mut parts = request_line.split(' ');
    let method = parts.next()?.to_owned();
    let target = parts.next()?.to_owned();
    let mut headers = Vec::new();
    for line in lines {
        let colon = line.iter().position(|&b| b == b':')?;
        let name = String::from_utf8_lossy(&line[..colon]).to_ascii_lowercase();
        headers.push((name, trim_ows(&line[colon + 1..]).to_vec()));
    }
    let value = |name: &str| {
        headers.iter().find(|(n, _)| n == name).map(|(_, v)| String::from_utf8_lossy(v).to_ascii_lowercase())
    };
    let body = if value("transfer-encoding").is_some_and(|te| te.contains("chunked")) {
        read_chunked(stream, &mut rest).await?
    } else {
        let len: usize = value("content-length").map_or(Some(0), |v| v.trim().parse().ok())?;
        while rest.len() < len {
            if !fill(stream, &mut rest).await {
                return None;
            }
        }
        rest.truncate(len);
        rest
    };
    Some(Received { method, target, headers, body })
}

async fn read_chunked(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line_end = loop {
            if let Some(i) = find(buf, b"\r\n") {
                break i;
            }
            if !fill(stream, buf).await {
                return None;
            }
        };
        let size_text = String::from_utf8_lossy(&buf[..line_end]).into_owned();
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        buf.drain(..line_end + 2);
        if size == 0 {
            // No trailers are ever sent by reqwest: just the final CRLF.
            while buf.len() < 2 {
                if !fill(stream, buf).await {
                    return None;
                }
            }
            return Some(body);
        }
        while buf.len() < size + 2 {
            if !fill(stream, buf).await {
                return None;
            }
        }
        body.extend_from_slice(&buf[..size]);
        buf.drain(..size + 2);
    }
}

async fn fill(stream: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 4096];
    match stream.read(&mut chunk).await {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            true
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn trim_ows(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}

/// A loopback address where a socket is bound but not listening, so every connection is
/// refused, and no other process can take the port while this value lives.
#[derive(Debug)]
pub struct Refused {
    _socket: TcpSocket,
    addr: SocketAddr,
}

impl Default for Refused {
    fn default() -> Self {
        Refused::new()
    }
}

impl Refused {
    /// Reserves a loopback port with nothing listening on it.
    pub fn new() -> Refused {
        let socket = TcpSocket::new_v4().expect("socket");
        socket.bind("127.0.0.1:0".parse().expect("loopback address")).expect("bind");
        let addr = socket.local_addr().expect("bound address");
        Refused { _socket: socket, addr }
    }

    /// The refused address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:port` followed by `rest`.
    pub fn url(&self, rest: &str) -> String {
        format!("http://{}{rest}", self.addr)
    }
}

/// A per-attempt middleware (added after `Failover`) that records the URL of every attempt.
#[derive(Clone, Debug, Default)]
pub struct AttemptLog {
    urls: Arc<Mutex<Vec<String>>>,
}

impl AttemptLog {
    /// The URLs attempted since the last call, in order.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.urls))
    }
}

// `Middleware` is an `async_trait`; this is its expansion, written out to avoid a dependency.
impl reqwest_middleware::Middleware for AttemptLog {
    fn handle<'life0, 'life1, 'life2, 'async_trait>(
        &'life0 self,
        req: reqwest::Request,
        extensions: &'life1 mut http::Extensions,
        next: reqwest_middleware::Next<'life2>,
    ) -> Pin<Box<dyn Future<Output = reqwest_middleware::Result<reqwest::Response>> + Send + 'async_trait>>
    where
        'life0: 'async_trait,
        'life1: 'async_trait,
        'life2: 'async_trait,
        Self: 'async_trait,
    {
        lock(&self.urls).push(req.url().to_string());
        Box::pin(next.run(req, extensions))
    }
}

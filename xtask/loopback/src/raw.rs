//! Raw sockets, for the faults hyper cannot produce.
//!
//! - [`Refused`] / [`refused_url`]: a port bound but not listening, so connecting is
//!   refused (no server at all).
//! - [`RawServer`]: writes scripted bytes after reading a request, for what is not HTTP:
//!   garbage before the status line, a head whose header lines never end. hyper only
//!   writes well-formed heads, so these stay raw.
//!
//! Everything HTTP can express (hangs, closes, resets, truncated, endless or trickled
//! bodies, huge announced lengths) is [`Server`](crate::Server)'s, on hyper.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

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
    ///
    /// # Panics
    ///
    /// When no loopback port can be bound.
    pub fn new() -> Refused {
        let socket = TcpSocket::new_v4().expect("socket");
        socket.bind((Ipv4Addr::LOCALHOST, 0).into()).expect("bind");
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

/// `http://127.0.0.1:port` followed by `rest`, on a port reserved (bound, not listening)
/// for the rest of the process: connecting is always refused.
///
/// # Panics
///
/// When no loopback port can be bound.
pub fn refused_url(rest: &str) -> String {
    let refused: &'static Refused = Box::leak(Box::new(Refused::new()));
    refused.url(rest)
}

/// What a [`RawServer`] writes on each connection once it has read a request.
#[derive(Clone, Debug, Default)]
pub struct Script {
    pieces: Vec<Piece>,
}

#[derive(Clone, Debug)]
enum Piece {
    Bytes(Bytes),
    Forever(Bytes, Duration),
}

impl Script {
    /// Writes nothing (then closes).
    pub fn new() -> Script {
        Script::default()
    }

    /// Writes `bytes` next.
    pub fn send(mut self, bytes: impl Into<Bytes>) -> Script {
        self.pieces.push(Piece::Bytes(bytes.into()));
        self
    }

    /// Writes `bytes` again and again with `every` between them (zero: yield to the
    /// runtime), until the client goes away.
    pub fn forever(mut self, bytes: impl Into<Bytes>, every: Duration) -> Script {
        self.pieces.push(Piece::Forever(bytes.into(), every));
        self
    }
}

/// A raw TCP server: reads one request (head and `Content-Length` body) per connection,
/// writes its [`Script`], then closes. Stops, dropping its connections, when dropped.
#[derive(Debug)]
pub struct RawServer {
    addr: SocketAddr,
    accepted: Arc<AtomicUsize>,
    open: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl RawServer {
    /// Starts a raw server on 127.0.0.1 running `script` on every connection.
    ///
    /// # Panics
    ///
    /// When no loopback port can be bound.
    pub async fn start(script: Script) -> RawServer {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.expect("bind loopback listener");
        let addr = listener.local_addr().expect("listener address");
        let accepted = Arc::new(AtomicUsize::new(0));
        let open = Arc::new(AtomicUsize::new(0));
        let (count, live) = (accepted.clone(), open.clone());
        let task = tokio::spawn(async move {
            // Dropping the set (when this task is aborted) aborts every connection task.
            let mut connections = JoinSet::new();
            loop {
                tokio::select! {
                    Ok((stream, _)) = listener.accept() => {
                        count.fetch_add(1, Ordering::SeqCst);
                        live.fetch_add(1, Ordering::SeqCst);
                        let open = Open(live.clone());
                        let script = script.clone();
                        connections.spawn(async move {
                            let _open = open;
                            run(stream, script).await
                        });
                    }
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
        });
        RawServer { addr, accepted, open, task }
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:port` followed by `rest`.
    pub fn url(&self, rest: &str) -> String {
        format!("http://{}{rest}", self.addr)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// Connections open now.
    pub fn open_connections(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }
}

/// An open connection; uncounted when its task ends, however it ends.
struct Open(Arc<AtomicUsize>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn run(mut stream: TcpStream, script: Script) -> std::io::Result<()> {
    read_request(&mut stream).await?;
    for piece in script.pieces {
        match piece {
            Piece::Bytes(bytes) => stream.write_all(&bytes).await?,
            Piece::Forever(bytes, every) => loop {
                stream.write_all(&bytes).await?;
                if every.is_zero() {
                    tokio::task::yield_now().await;
                } else {
                    tokio::time::sleep(every).await;
                }
            },
        }
    }
    stream.shutdown().await
}

/// Reads one request (head and `Content-Length` body), at most 64 KiB.
async fn read_request(stream: &mut TcpStream) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + length {
                return Ok(());
            }
        }
        if buf.len() > 64 * 1024 {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

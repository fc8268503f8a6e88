//! Raw TCP providers for what wiremock cannot do: answer slowly while counting overlapping
//! requests, never answer, or stream an endless body and notice when the client hangs up.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// A loopback URL on which nothing listens: connecting is refused.
pub async fn refused_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}/rpc")
}

/// What the server does once it has read a request.
#[derive(Clone, Copy, Debug)]
pub enum Mode {
    /// Wait `delay`, then answer the JSON-RPC request with `height` (echoing its id) and close.
    Slow { delay: Duration, height: u64 },
    /// Answer like `Slow` (without delay), but only once the gate is opened with
    /// [`RawServer::open_gate`].
    Gated { height: u64 },
    /// Never answer; keep the connection open.
    Hang,
    /// Answer 200 with a chunked body that never ends, until the client closes the connection.
    Endless,
}

struct Stats {
    gate: tokio::sync::watch::Sender<bool>,
    requests: AtomicUsize,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    closed_by_client: AtomicUsize,
}

pub struct RawServer {
    pub url: String,
    stats: Arc<Stats>,
    task: JoinHandle<()>,
}

impl RawServer {
    pub async fn start(mode: Mode) -> RawServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let stats = Arc::new(Stats {
            gate: tokio::sync::watch::Sender::new(false),
            requests: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            closed_by_client: AtomicUsize::new(0),
        });
        let shared = stats.clone();
        let task = tokio::spawn(async move {
            let mut connections = Vec::new();
            loop {
                let Ok((stream, _)) = listener.accept().await else { return };
                connections.push(AbortOnDrop(tokio::spawn(serve(stream, mode, shared.clone()))));
            }
        });
        RawServer { url, stats, task }
    }

    /// A URL of this server with `path` (all paths are served alike).
    pub fn url_with(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }

    /// Lets `Gated` requests, waiting or future, be answered.
    pub fn open_gate(&self) {
        self.stats.gate.send_replace(true);
    }

    /// Requests read so far.
    pub fn requests(&self) -> usize {
        self.stats.requests.load(Ordering::SeqCst)
    }

    /// The most requests that were being answered at the same time.
    pub fn max_in_flight(&self) -> usize {
        self.stats.max_in_flight.load(Ordering::SeqCst)
    }

    /// Connections the client closed while the server was still writing or waiting.
    pub fn closed_by_client(&self) -> usize {
        self.stats.closed_by_client.load(Ordering::SeqCst)
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn serve(mut stream: TcpStream, mode: Mode, stats: Arc<Stats>) {
    let Some(body) = read_request(&mut stream).await else { return };
    stats.requests.fetch_add(1, Ordering::SeqCst);
    match mode {
        Mode::Slow { delay, height } => {
            let now = stats.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            stats.max_in_flight.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(delay).await;
            stats.in_flight.fetch_sub(1, Ordering::SeqCst);
            answer(&mut stream, &body, height).await;
        }
        Mode::Gated { height } => {
            let _ = stats.gate.subscribe().wait_for(|open| *open).await;
            answer(&mut stream, &body, height).await;
        }
        Mode::Hang => {
            let mut sink = [0u8; 1024];
            while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
            stats.closed_by_client.fetch_add(1, Ordering::SeqCst);
        }
        Mode::Endless => {
            let head =
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
            if stream.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            let chunk = format!("400\r\n{}\r\n", " ".repeat(0x400));
            while stream.write_all(chunk.as_bytes()).await.is_ok() {}
            stats.closed_by_client.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Answers the JSON-RPC request `body` with `height`, echoing its id, and closes.
async fn answer(stream: &mut TcpStream, body: &[u8], height: u64) {
    let request: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let json = format!(r#"{{"jsonrpc":"2.0","id":{},"result":"{height:#x}"}}"#, request["id"]);
    let reply = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{json}",
        json.len()
    );
    let _ = stream.write_all(reply.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// Reads one request head and its `content-length` body; `None` if the client went away.
async fn read_request(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    Some(buf[head_end..head_end + length].to_vec())
}

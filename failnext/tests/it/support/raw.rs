//! Raw TCP endpoints for failures wiremock cannot produce: refused connections, connections
//! closed or reset mid-exchange, truncated bodies and servers that never answer.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

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

/// What a raw server does with each connection once it has read a request head.
#[derive(Clone, Copy, Debug)]
pub enum Behaviour {
    /// Close the connection without answering (the client sees an incomplete message).
    Close,
    /// Reset the connection (RST) without answering.
    Reset,
    /// Send these exact bytes, then close.
    Reply(&'static [u8]),
    /// Never answer; keep the connection open until the server is dropped.
    Hang,
}

/// Headers promising 100 bytes, then 10 bytes and a close.
pub const TRUNCATED_200: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\nconnection: close\r\n\r\n0123456789";

pub struct RawServer {
    pub url: String,
    requests: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl RawServer {
    pub async fn start(behaviour: Behaviour) -> RawServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/rpc", listener.local_addr().unwrap());
        let requests = Arc::new(AtomicUsize::new(0));
        let counter = requests.clone();
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            loop {
                let Ok((stream, _)) = listener.accept().await else { return };
                let counter = counter.clone();
                held.push(tokio::spawn(serve(stream, behaviour, counter)));
            }
        });
        RawServer { url, requests, task }
    }

    /// How many request heads the server has read.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(mut stream: TcpStream, behaviour: Behaviour, counter: Arc<AtomicUsize>) {
    if !read_head(&mut stream).await {
        return;
    }
    counter.fetch_add(1, Ordering::SeqCst);
    match behaviour {
        Behaviour::Close => {}
        Behaviour::Reset => {
            #[allow(deprecated, reason = "zero linger is the portable way to send a reset")]
            let _ = stream.set_linger(Some(std::time::Duration::ZERO));
        }
        Behaviour::Reply(bytes) => {
            let _ = stream.write_all(bytes).await;
            let _ = stream.flush().await;
        }
        Behaviour::Hang => {
            let mut sink = [0u8; 1024];
            while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
            std::future::pending::<()>().await;
        }
    }
}

/// Reads until the end of the request head (and any small body that came with it).
async fn read_head(stream: &mut TcpStream) -> bool {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        if buf.windows(4).any(|w| w == b"\r\n\r\n") {
            return true;
        }
    }
}

/// A server that reports each request head it reads, then never answers.
pub async fn hang_reporting_heads() -> (String, tokio::sync::mpsc::UnboundedReceiver<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/rpc", listener.local_addr().unwrap());
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                if read_head(&mut stream).await {
                    let _ = tx.send(());
                    std::future::pending::<()>().await;
                }
            });
        }
    });
    (url, rx)
}

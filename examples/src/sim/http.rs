//! Just enough HTTP/1.1 for JSON-RPC: read a request with a `Content-Length` body, write a
//! response, keep the connection alive between them.
//!
//! Written by hand rather than with hyper so a provider can misbehave below HTTP: hang with the
//! connection open, or reset it halfway through a body.

use std::io;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Largest request head accepted; a longer one is answered with 431 and the connection closed.
const MAX_HEAD: usize = 16 * 1024;
/// Largest request body accepted; a longer one is answered with 413 and the connection closed.
const MAX_BODY: usize = 1024 * 1024;

/// One request, as far as a JSON-RPC server cares.
#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) method: String,
    pub(crate) body: Vec<u8>,
    /// Whether the client lets the connection stay open after the response.
    pub(crate) keep_alive: bool,
}

/// Why no request could be read. `Reject` carries the response to send before closing.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The peer went away, or the socket failed: nothing can be sent.
    Gone,
    /// The request is unusable; answer with this response and close.
    Reject(Response),
}

/// A complete response: status, extra headers and body.
#[derive(Debug, Clone)]
pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) content_type: &'static str,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: Vec<u8>,
}

/// A server-side connection with its read buffer, so pipelined requests are not lost.
#[derive(Debug)]
pub(crate) struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

// ===== impl Response =====

impl Response {
    /// A JSON response with status 200.
    pub(crate) fn json(body: Vec<u8>) -> Response {
        Response { status: 200, content_type: "application/json", headers: Vec::new(), body }
    }

    /// A plain-text response, as a proxy or load balancer in front of a node sends.
    pub(crate) fn text(status: u16, body: &str) -> Response {
        Response {
            status,
            content_type: "text/plain; charset=utf-8",
            headers: Vec::new(),
            body: body.as_bytes().to_vec(),
        }
    }

    /// Adds a header.
    pub(crate) fn with_header(mut self, name: &'static str, value: String) -> Response {
        self.headers.push((name, value));
        self
    }

    /// The status line and headers, announcing the whole body.
    fn head(&self, keep_alive: bool) -> Vec<u8> {
        let mut head = format!(
            "HTTP/1.1 {} {}\r\ncontent-type: {}\r\ncontent-length: {}\r\n",
            self.status,
            reason(self.status),
            self.content_type,
            self.body.len()
        );
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if !keep_alive {
            head.push_str("connection: close\r\n");
        }
        head.push_str("\r\n");
        head.into_bytes()
    }
}

// ===== impl Conn =====

impl Conn {
    pub(crate) fn new(stream: TcpStream) -> Conn {
        Conn { stream, buf: Vec::new() }
    }

    /// Reads the next request. `Ok(None)` means the client closed the connection between
    /// requests, which is how keep-alive connections normally end.
    pub(crate) async fn read_request(&mut self) -> Result<Option<Request>, ReadError> {
        let head_len = loop {
            if let Some(end) = find(&self.buf, b"\r\n\r\n") {
                break end + 4;
            }
            if self.buf.len() > MAX_HEAD {
                return Err(reject(431, "request head too large"));
            }
            if self.fill().await.map_err(|_| ReadError::Gone)? == 0 {
                if self.buf.is_empty() {
                    return Ok(None);
                }
                return Err(ReadError::Gone);
            }
        };
        let head = Head::parse(&self.buf[..head_len])?;
        if head.content_length > MAX_BODY {
            return Err(reject(413, "request body too large"));
        }
        let total = head_len + head.content_length;
        while self.buf.len() < total {
            if self.fill().await.map_err(|_| ReadError::Gone)? == 0 {
                return Err(ReadError::Gone);
            }
        }
        let body = self.buf[head_len..total].to_vec();
        self.buf.drain(..total);
        Ok(Some(Request { method: head.method, body, keep_alive: head.keep_alive }))
    }

    /// Writes a whole response.
    pub(crate) async fn write(&mut self, resp: &Response, keep_alive: bool) -> io::Result<()> {
        let mut bytes = resp.head(keep_alive);
        bytes.extend_from_slice(&resp.body);
        self.stream.write_all(&bytes).await?;
        self.stream.flush().await
    }

    /// Writes the head and the first half of the body, then resets the connection (RST),
    /// so the client sees its response break off mid-body.
    pub(crate) async fn write_then_reset(mut self, resp: &Response) -> io::Result<()> {
        let mut bytes = resp.head(true);
        bytes.extend_from_slice(&resp.body[..resp.body.len() / 2]);
        self.stream.write_all(&bytes).await?;
        self.stream.flush().await?;
        // With a zero linger, closing sends RST instead of FIN and does not block.
        self.stream.set_zero_linger()?;
        drop(self.stream);
        Ok(())
    }

    /// Holds the connection without answering, reading and discarding whatever the client
    /// sends, until the client gives up and closes it.
    pub(crate) async fn hold(mut self) {
        let mut scratch = [0u8; 1024];
        while let Ok(n) = self.stream.read(&mut scratch).await {
            if n == 0 {
                return;
            }
        }
    }

    async fn fill(&mut self) -> io::Result<usize> {
        let mut chunk = [0u8; 4096];
        let n = self.stream.read(&mut chunk).await?;
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n)
    }
}

/// The parts of a request head the server uses.
#[derive(Debug)]
struct Head {
    method: String,
    content_length: usize,
    keep_alive: bool,
}

impl Head {
    fn parse(raw: &[u8]) -> Result<Head, ReadError> {
        let text = std::str::from_utf8(raw).map_err(|_| reject(400, "request head is not utf-8"))?;
        let mut lines = text.split("\r\n");
        let mut parts = lines.next().unwrap_or_default().split(' ');
        let (Some(method), Some(_target), Some(version), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(reject(400, "malformed request line"));
        };
        let mut head = Head {
            method: method.to_owned(),
            content_length: 0,
            keep_alive: match version {
                "HTTP/1.1" => true,
                "HTTP/1.0" => false,
                _ => return Err(reject(505, "only HTTP/1.0 and HTTP/1.1 are served")),
            },
        };
        for line in lines.filter(|l| !l.is_empty()) {
            let Some((name, value)) = line.split_once(':') else {
                return Err(reject(400, "malformed header line"));
            };
            let value = value.trim();
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => {
                    head.content_length = value.parse().map_err(|_| reject(400, "bad content-length"))?;
                }
                "transfer-encoding" => return Err(reject(501, "chunked request bodies are not supported")),
                "connection" if value.eq_ignore_ascii_case("close") => head.keep_alive = false,
                "connection" if value.eq_ignore_ascii_case("keep-alive") => head.keep_alive = true,
                _ => {}
            }
        }
        Ok(head)
    }
}

fn reject(status: u16, why: &str) -> ReadError {
    ReadError::Reject(Response::text(status, why))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        405 => "Method Not Allowed",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "Status",
    }
}

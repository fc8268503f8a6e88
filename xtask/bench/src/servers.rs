//! Loopback JSON-RPC servers (the toolkit's hyper server), on their own thread and runtime,
//! away from the client's.
//!
//! Each server counts the TCP connections it accepts, so a scenario can show whether the
//! client reused its connections. The server thread is not counted by the allocator.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use failnext_loopback::{
    Action, Handler, Later, LaterHandler, Received, Refused, Reply, Respond, ServerThread,
};

/// What a server does with every request. The request body is always read to its end first
/// (keeping its first 4 KiB, enough for a probe's `id`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Behavior {
    /// HTTP 200 with a fixed `eth_blockNumber` result.
    Ok,
    /// HTTP 503 with a small JSON-RPC error body.
    Unavailable,
    /// Never answers.
    Hang,
    /// HTTP 200, `application/json`, a JSON-RPC answer of [`BIG_JSON_LEN`] bytes (a `result`
    /// of 1 MiB of hex digits), built once and shared by every reply.
    BigJson,
    /// Echoes the request's JSON-RPC `id` with `result` = `height`, after `delay`.
    Head { delay: Duration, height: u64 },
    /// HTTP 200 with `{"jsonrpc":"2.0","id":<the request's id>,"result":"0x10"}`: what an alloy
    /// `RpcClient` (ids counting from 0) accepts as the answer to `eth_blockNumber`. The id is
    /// cut out of the body by [`echo_id`], without a JSON parse.
    EchoId,
}

/// One loopback server, or a port that refuses connections.
#[derive(Debug)]
pub(crate) struct Server {
    pub(crate) url: String,
    inner: Inner,
}

#[derive(Debug)]
enum Inner {
    Serving(Arc<failnext_loopback::Server>),
    /// A bound socket that never listens: connecting to it is refused, and the port stays ours.
    Refusing {
        _reserved: Refused,
    },
}

/// The server thread: one current-thread runtime that every server of the run shares.
/// Servers run until this is dropped, whether or not their [`Server`] handle is kept.
#[derive(Debug)]
pub(crate) struct Servers {
    running: Mutex<Vec<Arc<failnext_loopback::Server>>>,
    thread: ServerThread,
}

const OK_BODY: &str = r#"{"jsonrpc":"2.0","id":1,"result":"0x1316a5f"}"#;
const UNAVAILABLE_BODY: &str =
    r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"service unavailable"}}"#;

/// The block number a [`Behavior::EchoId`] server answers (`"0x10"`).
pub(crate) const ECHO_RESULT: u64 = 0x10;

const BIG_JSON_PREFIX: &str = r#"{"jsonrpc":"2.0","id":1,"result":"0x"#;
const BIG_JSON_SUFFIX: &str = r#""}"#;

/// The length of the [`Behavior::BigJson`] answer: 1 MiB of hex digits and the JSON-RPC frame.
pub(crate) const BIG_JSON_LEN: usize = BIG_JSON_PREFIX.len() + (1 << 20) + BIG_JSON_SUFFIX.len();

/// The [`Behavior::BigJson`] answer, built on first use.
fn big_json() -> Bytes {
    static BODY: OnceLock<Bytes> = OnceLock::new();
    BODY.get_or_init(|| {
        let mut body = Vec::with_capacity(BIG_JSON_LEN);
        body.extend_from_slice(BIG_JSON_PREFIX.as_bytes());
        body.extend(b"0123456789abcdef".iter().cycle().take(1 << 20));
        body.extend_from_slice(BIG_JSON_SUFFIX.as_bytes());
        Bytes::from(body)
    })
    .clone()
}

// ===== impl Servers =====

impl Servers {
    /// Starts the server thread.
    pub(crate) fn start() -> std::io::Result<Servers> {
        let thread = ServerThread::start("bench-servers", crate::alloc::untrack_this_thread)?;
        Ok(Servers { running: Mutex::default(), thread })
    }

    /// Starts a server with `behavior` on `127.0.0.1:0`.
    pub(crate) fn spawn(&self, behavior: Behavior) -> std::io::Result<Server> {
        let respond: Respond = match behavior {
            Behavior::Ok => fixed(200, OK_BODY).into(),
            Behavior::Unavailable => fixed(503, UNAVAILABLE_BODY).into(),
            Behavior::BigJson => {
                let reply = Reply::new(200).json(big_json());
                (Arc::new(move |_: &Received| Action::Reply(reply.clone())) as Handler).into()
            }
            Behavior::EchoId => (Arc::new(|req: &Received| {
                let reply = match echo_id(&req.body) {
                    Some(id) => Reply::new(200).json(id),
                    None => req.rpc_result(format!("0x{ECHO_RESULT:x}")),
                };
                Action::Reply(reply)
            }) as Handler)
                .into(),
            Behavior::Hang => (Arc::new(|_: &Received| Action::Hang) as Handler).into(),
            Behavior::Head { delay, height } => (Arc::new(move |req: &Received| {
                let reply = req.rpc_result(format!("0x{height:x}"));
                Box::pin(async move {
                    tokio::time::sleep(delay).await;
                    Action::Reply(reply)
                }) as Later
            }) as LaterHandler)
                .into(),
        };
        let server = self.serve(respond)?;
        Ok(Server { url: format!("http://{}/", server.addr()), inner: Inner::Serving(server) })
    }

    /// Starts a server on `127.0.0.1:0` answering with `respond`, kept running with the
    /// others: what [`spawn`](Servers::spawn) starts, and the peer table's providers.
    pub(crate) fn serve(
        &self,
        respond: impl Into<Respond>,
    ) -> std::io::Result<Arc<failnext_loopback::Server>> {
        let server = failnext_loopback::Server::builder()
            .runtime(self.thread.handle())
            .nodelay(true)
            .record(false)
            .keep_body(4096)
            .serve(respond)?;
        let server = Arc::new(server);
        failnext_loopback::lock(&self.running).push(server.clone());
        Ok(server)
    }

    /// A port on 127.0.0.1 that refuses every connection.
    pub(crate) fn refusing(&self) -> std::io::Result<Server> {
        let refused = Refused::new();
        Ok(Server { url: refused.url("/"), inner: Inner::Refusing { _reserved: refused } })
    }
}

/// Answers every request with `status` and the JSON `body`, keeping the connection.
fn fixed(status: u16, body: &'static str) -> Handler {
    let reply = Reply::new(status).json(body);
    Arc::new(move |_: &Received| Action::Reply(reply.clone()))
}

/// The [`Behavior::EchoId`] answer to `body`, a single call whose `id` is a number or a
/// string without escapes; `None` for anything else (the caller falls back to a JSON parse).
fn echo_id(body: &[u8]) -> Option<Vec<u8>> {
    const KEY: &[u8] = br#""id":"#;
    let at = body.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    let rest = &body[at..];
    let len = match rest.first()? {
        b'"' => rest[1..].iter().position(|&b| b == b'"' || b == b'\\').filter(|&i| rest[1 + i] == b'"')? + 2,
        b'0'..=b'9' => rest.iter().position(|b| !b.is_ascii_digit()).unwrap_or(rest.len()),
        _ => return None,
    };
    let mut answer = Vec::with_capacity(48);
    answer.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    answer.extend_from_slice(&rest[..len]);
    answer.extend_from_slice(br#","result":"0x10"}"#);
    Some(answer)
}

// ===== impl Server =====

impl Server {
    /// Connections accepted so far.
    pub(crate) fn connections(&self) -> u64 {
        match &self.inner {
            Inner::Serving(server) => server.connections() as u64,
            Inner::Refusing { .. } => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_id_answers_with_the_callers_id() {
        let answer = |body: &str| echo_id(body.as_bytes()).map(|a| String::from_utf8(a).unwrap());
        assert_eq!(
            answer(r#"{"method":"eth_blockNumber","params":[],"id":17,"jsonrpc":"2.0"}"#).unwrap(),
            r#"{"jsonrpc":"2.0","id":17,"result":"0x10"}"#
        );
        assert_eq!(answer(r#"{"id":0}"#).unwrap(), r#"{"jsonrpc":"2.0","id":0,"result":"0x10"}"#);
        assert_eq!(answer(r#"{"id":"a-1"}"#).unwrap(), r#"{"jsonrpc":"2.0","id":"a-1","result":"0x10"}"#);
        // Left to the JSON parse: no id, a string with an escape, a null id.
        assert_eq!(answer(r#"{"method":"x"}"#), None);
        assert_eq!(answer(r#"{"id":"a\"b"}"#), None);
        assert_eq!(answer(r#"{"id":null}"#), None);
    }
}

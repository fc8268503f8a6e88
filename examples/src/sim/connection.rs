//! One client connection: read requests, count them, answer each as the behaviour says.

use std::sync::Arc;

use tokio::net::TcpStream;

use crate::sim::behaviour::{Behaviour, MALFORMED_BODY, OVERSIZED_LEN};
use crate::sim::chain::Chain;
use crate::sim::http::{Conn, ReadError, Request, Response, reason};
use crate::sim::provider::{Mode, Shared};
use crate::sim::rpc::{self, Payload};

/// What to do with one request.
#[derive(Debug)]
enum Action {
    /// Send this response.
    Reply(Response),
    /// Never answer; keep the connection until the client closes it.
    Hold,
    /// Send half of this response, then reset the connection.
    Reset(Response),
    /// Close the connection without answering.
    Close,
}

/// Serves requests on `stream` until the client closes it or a behaviour ends it.
pub(crate) async fn serve(stream: TcpStream, shared: Arc<Shared>) {
    let mut conn = Conn::new(stream);
    loop {
        let req = match conn.read_request().await {
            Ok(Some(req)) => req,
            Ok(None) | Err(ReadError::Gone) => return,
            Err(ReadError::Reject(resp)) => {
                let _ = conn.write(&resp, false).await;
                return;
            }
        };
        let payload = Payload::parse(&req.body);
        shared.record(&payload);
        let mode = shared.mode();
        if let Behaviour::Slow(delay) = mode.behaviour {
            tokio::time::sleep(delay).await;
        }
        match respond(&req, &payload, &mode, &shared.chain) {
            Action::Reply(resp) => {
                if conn.write(&resp, req.keep_alive).await.is_err() || !req.keep_alive {
                    return;
                }
            }
            Action::Hold => return conn.hold().await,
            Action::Reset(resp) => {
                let _ = conn.write_then_reset(&resp).await;
                return;
            }
            Action::Close => return,
        }
    }
}

fn respond(req: &Request, payload: &Payload, mode: &Mode, chain: &Chain) -> Action {
    match &mode.behaviour {
        // The request arrived just before the listener closed.
        Behaviour::Down => Action::Close,
        Behaviour::Status(code) => Action::Reply(Response::text(*code, &format!("{code} {}", reason(*code)))),
        Behaviour::RateLimited { retry_after_secs } => Action::Reply(
            Response::text(429, "429 Too Many Requests: rate limit exceeded")
                .with_header("retry-after", retry_after_secs.to_string()),
        ),
        Behaviour::Hang => Action::Hold,
        Behaviour::Malformed => Action::Reply(Response::json(MALFORMED_BODY.as_bytes().to_vec())),
        Behaviour::JsonRpcError { code, message } => {
            Action::Reply(json(payload.reply(|call| rpc::fail(call, *code, message))))
        }
        Behaviour::Oversized => Action::Reply(pad(correct(req, payload, mode, chain))),
        Behaviour::ResetMidBody => Action::Reset(correct(req, payload, mode, chain)),
        Behaviour::Healthy
        | Behaviour::Lagging(_)
        | Behaviour::Stalled
        | Behaviour::Slow(_)
        | Behaviour::WrongChain(_) => Action::Reply(correct(req, payload, mode, chain)),
    }
}

/// The correct answer from the chain as `mode` shows it.
fn correct(req: &Request, payload: &Payload, mode: &Mode, chain: &Chain) -> Response {
    if req.method != "POST" {
        return Response::text(405, "JSON-RPC is served over POST").with_header("allow", "POST".to_owned());
    }
    let view = mode.view(chain);
    json(payload.reply(|call| rpc::serve(call, &view)))
}

/// A JSON reply; an empty body when every call was a notification.
fn json(reply: Option<serde_json::Value>) -> Response {
    Response::json(reply.map(|v| v.to_string().into_bytes()).unwrap_or_default())
}

/// Pads a body with trailing whitespace (still the same JSON) to `OVERSIZED_LEN` bytes.
fn pad(mut resp: Response) -> Response {
    if resp.body.len() < OVERSIZED_LEN {
        resp.body.resize(OVERSIZED_LEN, b' ');
    }
    resp
}

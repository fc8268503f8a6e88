//! Answering one request as the provider's behaviour says: the handler a provider's
//! toolkit server (hyper) calls for every request it reads.

use std::sync::Arc;

use failnext_loopback::{Action, End, LaterHandler, Received, Reply};

use crate::sim::behaviour::{Behaviour, MALFORMED_BODY, OVERSIZED_LEN};
use crate::sim::chain::Chain;
use crate::sim::rpc::{self, Payload};
use crate::sim::state::{Mode, Shared};

/// The handler of one provider: counts the request, reads the behaviour in force when it
/// arrived, and answers (after the delay of a `Slow` one).
pub(crate) fn handler(shared: Arc<Shared>) -> LaterHandler {
    Arc::new(move |req: &Received| {
        let payload = Payload::parse(&req.body);
        shared.record(&payload);
        let mode = shared.mode_for_request();
        let post = req.method == http::Method::POST;
        let shared = shared.clone();
        Box::pin(async move {
            if let Behaviour::Slow(delay) = mode.behaviour {
                tokio::time::sleep(delay).await;
            }
            respond(post, &payload, &mode, &shared.chain)
        })
    })
}

fn respond(post: bool, payload: &Payload, mode: &Mode, chain: &Chain) -> Action {
    match &mode.behaviour {
        // The request arrived just before the listener closed.
        Behaviour::Down => Action::Close,
        Behaviour::Status(code) => Action::Reply(status(*code).text(format!("{code} {}", reason(*code)))),
        Behaviour::RateLimited { retry_after_secs } => Action::Reply(
            Reply::new(429)
                .text("429 Too Many Requests: rate limit exceeded")
                .header("retry-after", retry_after_secs.to_string()),
        ),
        Behaviour::Hang => Action::Hang,
        Behaviour::Malformed => Action::Reply(Reply::new(200).json(MALFORMED_BODY)),
        Behaviour::JsonRpcError { code, message } => {
            Action::Reply(json(payload.reply(|call| rpc::fail(call, *code, message))))
        }
        Behaviour::Oversized => {
            let (head, mut body) = correct(post, payload, mode, chain);
            if body.len() < OVERSIZED_LEN {
                // Trailing whitespace: still the same JSON.
                body.resize(OVERSIZED_LEN, b' ');
            }
            Action::Reply(head.send(body))
        }
        Behaviour::ResetMidBody => {
            let (head, mut body) = correct(post, payload, mode, chain);
            let len = body.len() as u64;
            body.truncate(body.len() / 2);
            Action::Reply(head.length(len).send(body).end(End::Reset))
        }
        Behaviour::Truncated => {
            let (head, mut body) = correct(post, payload, mode, chain);
            let len = body.len() as u64;
            body.truncate(body.len() / 2);
            Action::Reply(head.length(len).send(body).end(End::Close))
        }
        Behaviour::Healthy
        | Behaviour::Lagging(_)
        | Behaviour::HalfStale(_)
        | Behaviour::Stalled
        | Behaviour::Ahead(_)
        | Behaviour::Slow(_)
        | Behaviour::WrongChain(_)
        | Behaviour::Forked(_)
        | Behaviour::NoArchive(_) => {
            let (head, body) = correct(post, payload, mode, chain);
            Action::Reply(head.send(body))
        }
    }
}

/// The correct answer from the chain as `mode` shows it: the reply without its body, and
/// the body.
fn correct(post: bool, payload: &Payload, mode: &Mode, chain: &Chain) -> (Reply, Vec<u8>) {
    if !post {
        let head = Reply::new(405).content_type("text/plain; charset=utf-8").header("allow", "POST");
        return (head, b"JSON-RPC is served over POST".to_vec());
    }
    let view = mode.view(chain);
    (Reply::new(200).content_type("application/json"), body(payload.reply(|call| rpc::serve(call, &view))))
}

/// A JSON reply; an empty body when every call was a notification.
fn json(reply: Option<serde_json::Value>) -> Reply {
    Reply::new(200).json(body(reply))
}

fn body(reply: Option<serde_json::Value>) -> Vec<u8> {
    reply.map(|v| v.to_string().into_bytes()).unwrap_or_default()
}

/// A reply with `code`, or 500 when `code` is no HTTP status.
fn status(code: u16) -> Reply {
    if http::StatusCode::from_u16(code).is_ok() { Reply::new(code) } else { Reply::new(500) }
}

fn reason(code: u16) -> &'static str {
    http::StatusCode::from_u16(code).ok().and_then(|s| s.canonical_reason()).unwrap_or("Status")
}

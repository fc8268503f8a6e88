//! A scripted Ethereum JSON-RPC provider on wiremock whose height, chain, delay and health can
//! change between checks.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

pub struct Node {
    pub server: MockServer,
    state: Arc<State>,
}

struct State {
    height: AtomicU64,
    chain: AtomicU64,
    delay_ms: AtomicU64,
    failing: AtomicBool,
}

/// A JSON-RPC success carrying `result`, echoing the request's id.
pub fn result_reply(request: &Value, result: impl Into<Value>) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "jsonrpc": "2.0", "id": request["id"], "result": result.into(),
    }))
}

/// A JSON-RPC error object, echoing the request's id.
pub fn error_reply(request: &Value, code: i64, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "jsonrpc": "2.0", "id": request["id"], "error": { "code": code, "message": message },
    }))
}

/// The answer of a provider at `height` on `chain` to one call: its height, its chain id, its
/// head block (stamped now), `0x0` for anything else; `None` for what is not a call.
fn answer(call: &Value, height: u64, chain: u64) -> Option<Value> {
    let result = match call["method"].as_str()? {
        "eth_blockNumber" => json!(format!("{height:#x}")),
        "eth_chainId" => json!(format!("{chain:#x}")),
        "eth_getBlockByNumber" => {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            json!({
                "number": format!("{height:#x}"),
                "hash": format!("0x{height:064x}"),
                "timestamp": format!("{:#x}", now.as_secs()),
            })
        }
        _ => json!("0x0"),
    };
    Some(json!({ "jsonrpc": "2.0", "id": call["id"], "result": result }))
}

impl Node {
    /// A healthy provider at `height` on chain 1.
    pub async fn at(height: u64) -> Node {
        let state = Arc::new(State {
            height: AtomicU64::new(height),
            chain: AtomicU64::new(1),
            delay_ms: AtomicU64::new(0),
            failing: AtomicBool::new(false),
        });
        let shared = state.clone();
        Node::serve(state, move |request: &Value| {
            let template = if shared.failing.load(Ordering::SeqCst) {
                ResponseTemplate::new(503)
            } else {
                let height = shared.height.load(Ordering::SeqCst);
                let chain = shared.chain.load(Ordering::SeqCst);
                match request {
                    // A batch (the spawned monitor's probe): each call answered, in order.
                    Value::Array(calls) => ResponseTemplate::new(200).set_body_json(Value::Array(
                        calls.iter().filter_map(|call| answer(call, height, chain)).collect(),
                    )),
                    call => match answer(call, height, chain) {
                        Some(body) => ResponseTemplate::new(200).set_body_json(body),
                        None => ResponseTemplate::new(400),
                    },
                }
            };
            template.set_delay(Duration::from_millis(shared.delay_ms.load(Ordering::SeqCst)))
        })
        .await
    }

    /// A provider answering every request (given as parsed JSON, `null` if it is not JSON)
    /// with `reply`.
    pub async fn replying(reply: impl Fn(&Value) -> ResponseTemplate + Send + Sync + 'static) -> Node {
        let state = Arc::new(State {
            height: AtomicU64::new(0),
            chain: AtomicU64::new(1),
            delay_ms: AtomicU64::new(0),
            failing: AtomicBool::new(false),
        });
        Node::serve(state, reply).await
    }

    async fn serve(
        state: Arc<State>,
        reply: impl Fn(&Value) -> ResponseTemplate + Send + Sync + 'static,
    ) -> Node {
        let server = MockServer::start().await;
        Mock::given(wiremock::matchers::any())
            .respond_with(move |request: &Request| {
                reply(&serde_json::from_slice(&request.body).unwrap_or(Value::Null))
            })
            .mount(&server)
            .await;
        Node { server, state }
    }

    pub fn url(&self) -> String {
        format!("{}/rpc", self.server.uri())
    }

    pub fn set_height(&self, height: u64) {
        self.state.height.store(height, Ordering::SeqCst);
    }

    pub fn set_chain(&self, chain: u64) {
        self.state.chain.store(chain, Ordering::SeqCst);
    }

    pub fn set_delay(&self, delay: Duration) {
        self.state.delay_ms.store(delay.as_millis() as u64, Ordering::SeqCst);
    }

    /// While failing, every request gets a 503.
    pub fn set_failing(&self, failing: bool) {
        self.state.failing.store(failing, Ordering::SeqCst);
    }

    /// Every request received so far.
    pub async fn received(&self) -> Vec<Request> {
        self.server.received_requests().await.unwrap_or_default()
    }

    /// The JSON-RPC method of every request received so far.
    pub async fn methods(&self) -> Vec<String> {
        self.received()
            .await
            .iter()
            .map(|r| {
                let body: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
                body["method"].as_str().unwrap_or("<none>").to_owned()
            })
            .collect()
    }

    pub async fn requests(&self) -> usize {
        self.received().await.len()
    }
}

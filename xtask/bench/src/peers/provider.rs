//! The loopback providers of one run: the good ones, and the primary with its fault, each
//! counting the monitor's probes and the requests it answered with its fault.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use failnext_loopback::{Action, Later, LaterHandler, Received, Refused, Reply};
use serde_json::Value;

use super::scenario::{FLAP, HEAD, LAG, PROBE_AGENT, RETRY_AFTER, SLOW_PRIMARY};
use crate::servers::Servers;
use crate::variants::BoxError;

/// The three providers of one run.
pub(super) struct Providers {
    pub(super) primary: Provider,
    pub(super) good: [Provider; 2],
}

/// A loopback provider, or the refusing primary.
pub(super) enum Provider {
    /// A loopback server with its counts.
    Serving { server: Arc<failnext_loopback::Server>, counts: Arc<Counts> },
    /// The refusing primary.
    Refusing(Refused),
}

impl Provider {
    pub(super) fn url(&self) -> String {
        match self {
            Provider::Serving { server, .. } => format!("http://{}/", server.addr()),
            Provider::Refusing(refused) => refused.url("/"),
        }
    }

    /// Requests received so far, probes included (0 for the refusing one).
    pub(super) fn requests(&self) -> u64 {
        match self {
            Provider::Serving { server, .. } => server.requests() as u64,
            Provider::Refusing(_) => 0,
        }
    }

    /// The probes, and the other requests it answered with its fault, so far.
    pub(super) fn counts(&self) -> (u64, u64) {
        match self {
            Provider::Serving { counts, .. } => (counts.probes.load(Relaxed), counts.faulty.load(Relaxed)),
            Provider::Refusing(_) => (0, 0),
        }
    }
}

/// What a provider does with every call.
#[derive(Clone, Copy, Debug)]
pub(super) enum Act {
    /// Answers [`HEAD`] (and chain id 1) after this delay.
    Good(Duration),
    /// HTTP 503 with a JSON-RPC error.
    Unavailable,
    /// HTTP 200 with a -32005 error and `Retry-After`.
    RateLimited,
    /// Answers `HEAD - LAG`.
    Lagging,
    /// Good for [`FLAP`], then 503 for [`FLAP`], from `started`.
    Flapping,
}

/// What a provider counts: the monitor's probes, and the other requests it answered with its
/// fault (a 503, a rate limit, a lagging head, a slow answer).
#[derive(Debug, Default)]
pub(super) struct Counts {
    probes: AtomicU64,
    faulty: AtomicU64,
}

pub(super) fn serve(servers: &Servers, act: Act, started: Instant) -> Result<Provider, BoxError> {
    let counts = Arc::new(Counts::default());
    let counted = counts.clone();
    let handler: LaterHandler = Arc::new(move |req: &Received| {
        let (reply, delay, faulty) = answer(req, act, started);
        if req.headers.get(reqwest::header::USER_AGENT).is_some_and(|v| v == PROBE_AGENT) {
            counted.probes.fetch_add(1, Relaxed);
        } else if faulty {
            counted.faulty.fetch_add(1, Relaxed);
        }
        Box::pin(async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            Action::Reply(reply)
        }) as Later
    });
    let server = servers.serve(handler)?;
    Ok(Provider::Serving { server, counts })
}

/// The reply to `req` (a call, or a batch: the monitor's probe asks the chain id and the
/// latest block in one request), its delay, and whether it is the provider's fault.
fn answer(req: &Received, act: Act, started: Instant) -> (Reply, Duration, bool) {
    let body: Value = req.json();
    let down = match act {
        Act::Flapping => (started.elapsed().as_nanos() / FLAP.as_nanos()) % 2 == 1,
        Act::Unavailable => true,
        _ => false,
    };
    if down {
        // What a load balancer in front of a provider sends: an HTML page, not JSON-RPC (alloy's
        // `Http` returns a JSON-RPC error body of a 503 as an answer, which FallbackLayer takes).
        let page = "<html><body><h1>503 Service Temporarily Unavailable</h1></body></html>";
        return (Reply::new(503).content_type("text/html").send(page), Duration::ZERO, true);
    }
    if let Act::RateLimited = act {
        let id = body.get("id").cloned().unwrap_or_default();
        let error = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32005,"message":"rate limit exceeded"}}}}"#
        );
        let reply = Reply::new(200).json(error).header("retry-after", RETRY_AFTER.to_string());
        return (reply, Duration::ZERO, true);
    }
    let delay = if let Act::Good(delay) = act { delay } else { Duration::ZERO };
    let (reply, faulty) = match &body {
        Value::Array(calls) => {
            let answers: Vec<(Value, bool)> = calls.iter().map(|call| one(call, act, started)).collect();
            let faulty = answers.iter().any(|a| a.1);
            (Value::Array(answers.into_iter().map(|a| a.0).collect()), faulty)
        }
        call => one(call, act, started),
    };
    let faulty = faulty || delay == SLOW_PRIMARY;
    (Reply::new(200).json(reply.to_string()), delay, faulty)
}

/// The answer to one call, and whether it is the provider's fault (a lagging head).
fn one(call: &Value, act: Act, started: Instant) -> (Value, bool) {
    let id = call.get("id").cloned().unwrap_or_default();
    let method = call.get("method").and_then(Value::as_str).unwrap_or_default();
    let (head, lagging) = match act {
        Act::Lagging => (HEAD - LAG, true),
        _ => (HEAD, false),
    };
    let (result, faulty) = match method {
        "eth_chainId" => (Value::from("0x1"), false),
        "eth_getBlockByNumber" => (block(head, started), lagging),
        _ => (Value::from(format!("0x{head:x}")), lagging),
    };
    (serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result}), faulty)
}

/// Block `number` as a provider answers `eth_getBlockByNumber`: its hash made of its number,
/// its timestamp the contender's start (`started`): the head does not move during a run
/// (at most [`RUN_LIMIT`](super::scenario::RUN_LIMIT)), well within the monitor's head age.
fn block(number: u64, started: Instant) -> Value {
    let made = std::time::SystemTime::now()
        .checked_sub(started.elapsed())
        .unwrap_or_else(std::time::SystemTime::now);
    let secs = made.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let hash = |n: u64| format!("0x{n:064x}");
    serde_json::json!({
        "number": format!("0x{number:x}"),
        "hash": hash(number),
        "parentHash": hash(number.saturating_sub(1)),
        "timestamp": format!("0x{secs:x}"),
        "transactions": [],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::scenario::SLOW_BASE;

    fn call(method: &str, agent: Option<&str>) -> Received {
        let mut req = Received {
            body: format!(r#"{{"jsonrpc":"2.0","id":7,"method":"{method}","params":[]}}"#).into(),
            ..Received::default()
        };
        if let Some(agent) = agent {
            req.headers.insert(reqwest::header::USER_AGENT, agent.parse().unwrap());
        }
        req
    }

    #[test]
    fn each_fault_is_answered_as_its_scenario_says() {
        let now = Instant::now();
        let (good, delay, faulty) = answer(&call("eth_blockNumber", None), Act::Good(Duration::ZERO), now);
        assert_eq!((good.status(), delay, faulty), (200, Duration::ZERO, false));
        let (_, delay, faulty) = answer(&call("eth_blockNumber", None), Act::Good(SLOW_PRIMARY), now);
        assert_eq!((delay, faulty), (SLOW_PRIMARY, true), "the slow primary's answers are its fault");
        let (_, _, faulty) = answer(&call("eth_blockNumber", None), Act::Good(SLOW_BASE), now);
        assert!(!faulty, "a good provider's own latency is not a fault");
        assert_eq!(answer(&call("eth_blockNumber", None), Act::Unavailable, now).0.status(), 503);
        let (limited, _, faulty) = answer(&call("eth_blockNumber", None), Act::RateLimited, now);
        assert_eq!((limited.status(), faulty), (200, true));
        let (_, _, faulty) = answer(&call("eth_chainId", None), Act::Lagging, now);
        assert!(!faulty, "a lagging provider is on the right chain");
        assert!(answer(&call("eth_blockNumber", None), Act::Lagging, now).2);
        // Flapping: up for the first period, down for the next.
        assert!(!answer(&call("eth_blockNumber", None), Act::Flapping, now).2);
        let earlier = now.checked_sub(FLAP + Duration::from_millis(1)).unwrap();
        assert!(answer(&call("eth_blockNumber", None), Act::Flapping, earlier).2);
    }
}

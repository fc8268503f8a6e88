//! A loopback provider serving the chain some blocks behind, counting the monitor's probes,
//! the other requests and the empty answers apart.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use failnext_loopback::{Action, Handler, Received, Reply};

use super::chain::{Chain, answer};
use super::scenario::PROBE_AGENT;
use crate::servers::Servers;
use crate::variants::BoxError;

/// What a provider counts.
#[derive(Debug, Default)]
pub(super) struct Counts {
    /// The monitor's probes.
    pub(super) probes: AtomicU64,
    /// Every other request.
    pub(super) requests: AtomicU64,
    /// Of those, the ones answered with an empty result.
    pub(super) empties: AtomicU64,
}

pub(super) fn serve(servers: &Servers, chain: Chain, behind: u64) -> Result<(String, Arc<Counts>), BoxError> {
    let counts = Arc::new(Counts::default());
    let counted = counts.clone();
    let handler: Handler = Arc::new(move |req: &Received| {
        let (body, empty) = answer(req, &chain, behind);
        let reply = Reply::new(200).json(body.to_string());
        if req.headers.get(reqwest::header::USER_AGENT).is_some_and(|v| v == PROBE_AGENT) {
            counted.probes.fetch_add(1, Relaxed);
        } else {
            counted.requests.fetch_add(1, Relaxed);
            if empty {
                counted.empties.fetch_add(1, Relaxed);
            }
        }
        Action::Reply(reply)
    });
    let server = servers.serve(handler)?;
    Ok((format!("http://{}/", server.addr()), counts))
}

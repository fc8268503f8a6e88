//! `Provider`: one simulated provider, its behaviour switch and its request counts.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use failnext_loopback::Server;

use crate::sim::behaviour::Behaviour;
use crate::sim::chain::Chain;
use crate::sim::respond;
use crate::sim::state::{Counts, Mode, Shared};

/// Largest request head read; a longer one is answered with 431 and the connection closed.
const MAX_HEAD: usize = 16 * 1024;
/// Largest request body read; a longer one is answered with 413 and the connection closed.
const MAX_BODY: usize = 1024 * 1024;

/// One simulated provider: a JSON-RPC server on `127.0.0.1` that serves its [`Chain`]
/// through a [`Behaviour`] you switch at run time. Made by [`Chain::provider`].
///
/// It counts what it received: [`total`](Provider::total) HTTP requests, and
/// [`count`](Provider::count) calls by JSON-RPC method (a batch of three calls is one request
/// and three calls). Everything that arrives is counted, whatever the behaviour answers; a
/// `Down` provider receives nothing.
///
/// Cloning is cheap; clones control the same provider. The server stops, closing its
/// connections, when the last clone is dropped.
#[derive(Clone)]
pub struct Provider {
    shared: Arc<Shared>,
    control: Arc<Control>,
}

struct Control {
    id: String,
    url: String,
    addr: SocketAddr,
    /// Held across a switch, so concurrent `set` calls take effect one after the other.
    server: tokio::sync::Mutex<Server>,
}

// ===== impl Chain =====

impl Chain {
    /// Starts a provider of this chain on `127.0.0.1` and an ephemeral port, healthy.
    ///
    /// # Errors
    ///
    /// When no loopback port can be bound.
    pub async fn provider(&self, id: impl Into<String>) -> io::Result<Provider> {
        Provider::start(self.clone(), id.into()).await
    }
}

// ===== impl Provider =====

impl Provider {
    pub(crate) async fn start(chain: Chain, id: String) -> io::Result<Provider> {
        let frozen = chain.head();
        let shared = Arc::new(Shared {
            chain,
            mode: Mutex::new(Mode { behaviour: Behaviour::Healthy, frozen }),
            counts: Mutex::new(Counts::default()),
            half_stale_turn: AtomicU64::new(0),
        });
        let server = Server::builder()
            .record(false)
            .nodelay(true)
            .max_head(MAX_HEAD)
            .max_body(MAX_BODY)
            .serve(respond::handler(shared.clone()))?;
        let addr = server.addr();
        let control =
            Control { id, url: format!("http://{addr}/"), addr, server: tokio::sync::Mutex::new(server) };
        Ok(Provider { shared, control: Arc::new(control) })
    }

    /// Switches the behaviour. It applies to every request that arrives after this returns;
    /// a request already being answered finishes under the old one.
    ///
    /// Switching to [`Behaviour::Down`] returns once the listener and every open connection
    /// are closed. Switching away from it binds the same port again, which can fail: while
    /// the provider was down the port was free, and another socket on this machine may have
    /// taken it (a small race, unlikely with ephemeral ports). The provider then stays down.
    ///
    /// # Errors
    ///
    /// When the port cannot be bound again after `Down`.
    pub async fn set(&self, behaviour: Behaviour) -> io::Result<()> {
        let mut server = self.control.server.lock().await;
        let down = behaviour == Behaviour::Down;
        self.shared.switch(behaviour);
        if down {
            server.stop().await;
            return Ok(());
        }
        let resumed = server.restart();
        if resumed.is_err() {
            self.shared.switch(Behaviour::Down);
        }
        resumed
    }

    /// The behaviour in force.
    pub fn behaviour(&self) -> Behaviour {
        self.shared.mode().behaviour
    }

    /// The id given to [`Chain::provider`].
    pub fn id(&self) -> &str {
        &self.control.id
    }

    /// The URL to send JSON-RPC requests to, `http://127.0.0.1:PORT/`.
    pub fn url(&self) -> &str {
        &self.control.url
    }

    /// The socket address the provider listens on (and listens on again after `Down`).
    pub fn addr(&self) -> SocketAddr {
        self.control.addr
    }

    /// This provider as a failnext endpoint: its id and URL.
    pub fn endpoint(&self) -> failnext::Endpoint {
        failnext::Endpoint::new(self.id(), self.url())
    }

    /// The block number this provider reports now (its lag, stall or lead applied).
    pub fn head(&self) -> u64 {
        self.shared.mode().reported(&self.shared.chain)
    }

    /// How many calls of JSON-RPC `method` this provider received.
    pub fn count(&self, method: &str) -> u64 {
        self.shared.counts().calls.get(method).copied().unwrap_or(0)
    }

    /// How many state reads (`eth_call`, `eth_getBalance`, `eth_getStorageAt`, `eth_getCode`,
    /// `eth_getTransactionCount`, `eth_getProof`) this provider received whose block was not
    /// named by its hash (EIP-1898 `{"blockHash": ...}`): `latest`, a tag, a number or none.
    pub fn unpinned_reads(&self) -> u64 {
        self.shared.counts().unpinned
    }

    /// The hash this provider gives block `number` (its fork's, its chain's).
    pub fn block_hash(&self, number: u64) -> String {
        self.shared.mode().view(&self.shared.chain).hash(number)
    }

    /// How many HTTP requests this provider received.
    pub fn total(&self) -> u64 {
        self.shared.counts().requests
    }

    /// Sets every count back to zero.
    pub fn reset_counts(&self) {
        *self.shared.counts() = Counts::default();
    }
}

impl fmt::Debug for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Provider")
            .field("id", &self.id())
            .field("url", &self.url())
            .field("behaviour", &self.behaviour())
            .field("total", &self.total())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::sim::START_HEAD;
    use crate::sim::rpc;

    fn answer(mode: &Mode, chain: &Chain, method: &str, params: serde_json::Value) -> serde_json::Value {
        let call = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
        rpc::serve(&call, &mode.view(chain)).unwrap_or_default()["result"].clone()
    }

    #[test]
    fn half_stale_lags_every_other_request() {
        let chain = Chain::manual(1);
        let shared = Shared {
            chain: chain.clone(),
            mode: Mutex::new(Mode { behaviour: Behaviour::Healthy, frozen: chain.head() }),
            counts: Mutex::new(Counts::default()),
            half_stale_turn: AtomicU64::new(0),
        };
        shared.switch(Behaviour::HalfStale(20));
        let heads: Vec<serde_json::Value> = (0..4)
            .map(|_| answer(&shared.mode_for_request(), &chain, "eth_blockNumber", json!([])))
            .collect();
        let (fresh, stale) = (json!(format!("{START_HEAD:#x}")), json!(format!("{:#x}", START_HEAD - 20)));
        assert_eq!(heads, [fresh.clone(), stale.clone(), fresh, stale]);
        // Unresolved (the provider's own view, not a request's), it shows the real head.
        assert_eq!(shared.mode().reported(&chain), START_HEAD);
        assert_eq!(shared.mode().behaviour, Behaviour::HalfStale(20));
    }

    #[test]
    fn ahead_reports_a_far_head_to_eth_block_number_only() {
        let chain = Chain::manual(1);
        let mode = Mode { behaviour: Behaviour::Ahead(1000), frozen: chain.head() };
        assert_eq!(mode.reported(&chain), START_HEAD + 1000);
        assert_eq!(answer(&mode, &chain, "eth_blockNumber", json!([])), format!("{:#x}", START_HEAD + 1000));
        // Every other read is the healthy provider's: the real head.
        let latest = answer(&mode, &chain, "eth_call", json!([{ "to": "0x00" }, "latest"]));
        assert_eq!(latest, format!("0x{START_HEAD:064x}"));
        let zero = "0x0000000000000000000000000000000000000000";
        assert_eq!(answer(&mode, &chain, "eth_getBalance", json!([zero, "latest"])), "0xde0b6b3a7640000");
    }
}

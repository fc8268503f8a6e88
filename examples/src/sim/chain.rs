//! `Chain`: the one simulated chain that every provider of a simulation serves.

use std::collections::HashMap;
use std::collections::hash_map::{DefaultHasher, Entry};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use failnext_loopback::lock;
use tokio::task::AbortHandle;
use tokio::time::MissedTickBehavior;

use crate::sim::hash;

/// The height a new chain starts at.
pub const START_HEAD: u64 = 1_000_000;

/// A simulated chain: a chain id, a head that only moves forward, and the transactions sent
/// to it. Every [`Provider`](crate::sim::Provider) made from it serves this one chain (each through its own
/// [`Behaviour`](crate::sim::Behaviour), which may show it late, frozen or under another id).
///
/// Cloning is cheap; clones are the same chain. The head ticker stops when the last clone
/// and the last provider are dropped.
#[derive(Clone)]
pub struct Chain {
    state: Arc<State>,
}

struct State {
    id: u64,
    head: AtomicU64,
    /// When the head block was made (Unix milliseconds, wall clock): block timestamps follow.
    head_made_ms: AtomicU64,
    /// The time between blocks, for the timestamps of blocks below the head (1 s when manual).
    tick_ms: u64,
    /// Transaction hash to the block that includes it.
    txs: Mutex<HashMap<String, u64>>,
    ticker: Option<AbortHandle>,
}

// ===== impl Chain =====

impl Chain {
    /// A chain whose head starts at [`START_HEAD`] and grows by one block every `tick`
    /// (a zero `tick` counts as one millisecond).
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime, because the ticker is a tokio task.
    pub fn start(chain_id: u64, tick: Duration) -> Chain {
        let tick = tick.max(Duration::from_millis(1));
        let state = Arc::new_cyclic(|weak: &Weak<State>| {
            let weak = weak.clone();
            let ticker = tokio::spawn(async move {
                let mut interval = tokio::time::interval_at(tokio::time::Instant::now() + tick, tick);
                interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
                loop {
                    interval.tick().await;
                    let Some(state) = weak.upgrade() else { return };
                    state.head_made_ms.store(unix_ms(), Ordering::SeqCst);
                    state.head.fetch_add(1, Ordering::SeqCst);
                }
            });
            State::new(chain_id, Some(ticker.abort_handle()), tick)
        });
        Chain { state }
    }

    /// A chain whose head moves only when [`advance`](Chain::advance) is called, for tests
    /// and scripted runs. Needs no runtime.
    pub fn manual(chain_id: u64) -> Chain {
        Chain { state: Arc::new(State::new(chain_id, None, Duration::from_secs(1))) }
    }

    /// The chain id every honest provider reports.
    pub fn id(&self) -> u64 {
        self.state.id
    }

    /// The hash of block `number` of this chain: what every honest provider serves (a
    /// provider on another chain or a fork of its own serves another).
    pub fn block_hash(&self, number: u64) -> String {
        hash::block_hash(self.id(), 0, number)
    }

    /// The newest block.
    pub fn head(&self) -> u64 {
        self.state.head.load(Ordering::SeqCst)
    }

    /// The timestamp (Unix seconds) of block `number`: the wall-clock time it was made, as
    /// far as the chain knows (the head's own time, one block time less per block below it).
    pub fn timestamp(&self, number: u64) -> u64 {
        let below = self.head().saturating_sub(number);
        let made = self.state.head_made_ms.load(Ordering::SeqCst);
        made.saturating_sub(below.saturating_mul(self.state.tick_ms)) / 1000
    }

    /// Adds `n` blocks at once and returns the new head.
    pub fn advance(&self, n: u64) -> u64 {
        self.state.head_made_ms.store(unix_ms(), Ordering::SeqCst);
        self.state.head.fetch_add(n, Ordering::SeqCst).saturating_add(n)
    }

    /// Accepts a raw transaction and returns its hash; it is included in the next block.
    /// The same bytes sent twice are refused the second time, as nodes do.
    pub(crate) fn submit(&self, raw: &str) -> Result<String, &'static str> {
        let hash = tx_hash(raw);
        match self.state.txs().entry(hash.clone()) {
            Entry::Occupied(_) => Err("already known"),
            Entry::Vacant(slot) => {
                slot.insert(self.head().saturating_add(1));
                Ok(hash)
            }
        }
    }

    /// The block that includes the transaction `hash`, once the chain has reached it.
    pub(crate) fn included_in(&self, hash: &str) -> Option<u64> {
        self.state.txs().get(&hash.to_ascii_lowercase()).copied()
    }
}

impl fmt::Debug for Chain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Chain")
            .field("id", &self.id())
            .field("head", &self.head())
            .field("ticking", &self.state.ticker.is_some())
            .finish()
    }
}

// ===== impl State =====

impl State {
    fn new(id: u64, ticker: Option<AbortHandle>, tick: Duration) -> State {
        State {
            id,
            head: AtomicU64::new(START_HEAD),
            head_made_ms: AtomicU64::new(unix_ms()),
            tick_ms: u64::try_from(tick.as_millis()).unwrap_or(u64::MAX).max(1),
            txs: Mutex::new(HashMap::new()),
            ticker,
        }
    }

    fn txs(&self) -> MutexGuard<'_, HashMap<String, u64>> {
        // Nothing panics while holding the lock; a poisoned map is still a valid map.
        lock(&self.txs)
    }
}

impl Drop for State {
    fn drop(&mut self) {
        if let Some(ticker) = &self.ticker {
            ticker.abort();
        }
    }
}

/// A stable 32-byte stand-in for a transaction hash (not keccak: nothing here checks it).
/// The wall clock, Unix milliseconds.
fn unix_ms() -> u64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

fn tx_hash(raw: &str) -> String {
    let mut hex = String::from("0x");
    for lane in 0u8..4 {
        let mut hasher = DefaultHasher::new();
        (lane, raw.to_ascii_lowercase()).hash(&mut hasher);
        hex.push_str(&format!("{:016x}", hasher.finish()));
    }
    hex
}

//! What the connections of one provider read: its chain, the mode in force (behaviour and the
//! height a stalled provider froze at), and what it received.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use failnext_loopback::lock;

use crate::sim::behaviour::Behaviour;
use crate::sim::chain::Chain;
use crate::sim::rpc::{Payload, View};

/// What the connections of one provider read: its identity, chain, behaviour and counts.
pub(crate) struct Shared {
    pub(crate) chain: Chain,
    pub(super) mode: Mutex<Mode>,
    pub(super) counts: Mutex<Counts>,
    /// Requests answered under [`Behaviour::HalfStale`]: the odd ones are stale.
    pub(super) half_stale_turn: AtomicU64,
}

/// The behaviour in force, and the height a stalled provider froze at.
#[derive(Debug, Clone)]
pub(crate) struct Mode {
    pub(crate) behaviour: Behaviour,
    pub(super) frozen: u64,
}

/// What a provider received: requests, calls by method, unpinned state reads.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    pub(crate) requests: u64,
    pub(crate) calls: HashMap<String, u64>,
    /// State reads whose block was not named by hash (EIP-1898 `blockHash`).
    pub(crate) unpinned: u64,
}

// ===== impl Shared =====

impl Shared {
    pub(crate) fn mode(&self) -> Mode {
        lock(&self.mode).clone()
    }

    /// The mode one arriving request is answered under: [`mode`](Shared::mode), with a
    /// [`Behaviour::HalfStale`] resolved to this request's turn (lagging every other request,
    /// healthy the others).
    pub(crate) fn mode_for_request(&self) -> Mode {
        let mut mode = self.mode();
        if let Behaviour::HalfStale(lag) = mode.behaviour {
            let turn = self.half_stale_turn.fetch_add(1, Ordering::Relaxed);
            mode.behaviour = if turn % 2 == 1 { Behaviour::Lagging(lag) } else { Behaviour::Healthy };
        }
        mode
    }

    /// Records one request that arrived with this payload.
    pub(crate) fn record(&self, payload: &Payload) {
        let mut counts = self.counts();
        counts.requests += 1;
        for method in payload.methods() {
            *counts.calls.entry(method.to_owned()).or_default() += 1;
        }
        counts.unpinned += payload.unpinned_state_reads();
    }

    pub(crate) fn switch(&self, behaviour: Behaviour) {
        let mut mode = lock(&self.mode);
        if matches!(behaviour, Behaviour::HalfStale(_)) && !matches!(mode.behaviour, Behaviour::HalfStale(_))
        {
            // The first request after the switch is a healthy one.
            self.half_stale_turn.store(0, Ordering::Relaxed);
        }
        // A provider freezes at the height it showed when it stalled, lag included.
        if behaviour == Behaviour::Stalled && mode.behaviour != Behaviour::Stalled {
            mode.frozen = mode.head(&self.chain);
        }
        mode.behaviour = behaviour;
    }

    pub(crate) fn counts(&self) -> MutexGuard<'_, Counts> {
        lock(&self.counts)
    }
}

// ===== impl Mode =====

impl Mode {
    /// The head this mode shows of `chain`.
    pub(crate) fn head(&self, chain: &Chain) -> u64 {
        match self.behaviour {
            Behaviour::Lagging(n) => chain.head().saturating_sub(n),
            Behaviour::Stalled => self.frozen,
            _ => chain.head(),
        }
    }

    /// The head this mode reports to `eth_blockNumber`: [`head`](Mode::head), or further
    /// ahead for [`Behaviour::Ahead`].
    pub(crate) fn reported(&self, chain: &Chain) -> u64 {
        match self.behaviour {
            Behaviour::Ahead(n) => self.head(chain).saturating_add(n),
            _ => self.head(chain),
        }
    }

    /// The chain as this mode shows it.
    pub(crate) fn view<'a>(&self, chain: &'a Chain) -> View<'a> {
        let chain_id = match self.behaviour {
            Behaviour::WrongChain(id) => id,
            _ => chain.id(),
        };
        let fork = match self.behaviour {
            Behaviour::Forked(fork) => fork,
            _ => 0,
        };
        let archive = match self.behaviour {
            Behaviour::NoArchive(depth) => Some(depth),
            _ => None,
        };
        View { chain, head: self.head(chain), reported: self.reported(chain), chain_id, fork, archive }
    }
}

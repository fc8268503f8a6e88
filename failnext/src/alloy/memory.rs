//! What the transport remembers between calls: which endpoint holds each filter, and where
//! recent broadcasts went (read-your-writes). Bounded in count and, for broadcasts, in time.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use alloy_primitives::{Address, B256};
use tokio::time::Instant;

use crate::EndpointId;

/// At most this many filters, transactions and senders are remembered each; the oldest goes
/// first.
pub(crate) const CAPACITY: usize = 4096;

/// A map that keeps at most [`CAPACITY`] entries, forgetting the oldest insertion first.
#[derive(Debug)]
struct Bounded<K, V> {
    map: HashMap<K, V>,
    order: VecDeque<K>,
}

impl<K: Hash + Eq + Clone, V> Bounded<K, V> {
    fn new() -> Self {
        Bounded { map: HashMap::new(), order: VecDeque::new() }
    }

    fn insert(&mut self, key: K, value: V) {
        if self.map.insert(key.clone(), value).is_none() {
            self.order.push_back(key);
        }
        while self.order.len() > CAPACITY {
            if let Some(old) = self.order.pop_front() {
                self.map.remove(&old);
            }
        }
    }

    fn get(&self, key: &K) -> Option<&V> {
        self.map.get(key)
    }

    fn remove(&mut self, key: &K) {
        if self.map.remove(key).is_some() {
            self.order.retain(|k| k != key);
        }
    }
}

#[derive(Debug)]
struct State {
    /// Filter id (as the provider wrote it, lower-cased) → the endpoint that created it.
    filters: Bounded<String, EndpointId>,
    /// Transaction hash → the endpoint that accepted its broadcast, and when.
    txs: Bounded<B256, (EndpointId, Instant)>,
    /// Sender → the endpoint of its latest broadcast, and when.
    senders: Bounded<Address, (EndpointId, Instant)>,
    /// Transaction hash → how its latest fan-out went, endpoint by endpoint.
    fanouts: Bounded<B256, super::fanout::Broadcast>,
}

/// The transport's memory, shared by its clones.
#[derive(Debug)]
pub(crate) struct Memory {
    state: Mutex<State>,
    /// How long a broadcast's endpoint is preferred for its lookups.
    pub(crate) remember_for: Duration,
}

impl Memory {
    pub(crate) fn new(remember_for: Duration) -> Memory {
        let state = State {
            filters: Bounded::new(),
            txs: Bounded::new(),
            senders: Bounded::new(),
            fanouts: Bounded::new(),
        };
        Memory { state: Mutex::new(state), remember_for }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn filter_created(&self, id: &str, endpoint: EndpointId) {
        self.lock().filters.insert(id.to_ascii_lowercase(), endpoint);
    }

    pub(crate) fn filter_endpoint(&self, id: &str) -> Option<EndpointId> {
        self.lock().filters.get(&id.to_ascii_lowercase()).cloned()
    }

    pub(crate) fn filter_removed(&self, id: &str) {
        self.lock().filters.remove(&id.to_ascii_lowercase());
    }

    /// A broadcast of `hash` (from `sender`, when known) was accepted by `endpoint`.
    pub(crate) fn broadcast(&self, hash: B256, sender: Option<Address>, endpoint: &EndpointId) {
        let now = Instant::now();
        let mut state = self.lock();
        state.txs.insert(hash, (endpoint.clone(), now));
        if let Some(sender) = sender {
            state.senders.insert(sender, (endpoint.clone(), now));
        }
    }

    /// Where the broadcast of `hash` went, if that was less than `remember_for` ago.
    pub(crate) fn tx_endpoint(&self, hash: &B256) -> Option<EndpointId> {
        let state = self.lock();
        state.txs.get(hash).filter(|(_, at)| at.elapsed() < self.remember_for).map(|(e, _)| e.clone())
    }

    /// The fan-out of `hash` ended as `outcome`.
    pub(crate) fn fanned_out(&self, hash: B256, outcome: super::fanout::Broadcast) {
        self.lock().fanouts.insert(hash, outcome);
    }

    /// How the latest fan-out of `hash` went, when it is still remembered.
    pub(crate) fn fanout(&self, hash: &B256) -> Option<super::fanout::Broadcast> {
        self.lock().fanouts.get(hash).cloned()
    }

    /// Where `sender`'s latest broadcast went, if that was less than `remember_for` ago.
    pub(crate) fn sender_endpoint(&self, sender: &Address) -> Option<EndpointId> {
        let state = self.lock();
        state.senders.get(sender).filter(|(_, at)| at.elapsed() < self.remember_for).map(|(e, _)| e.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_capacity_entries_are_kept_and_the_oldest_goes_first() {
        let m = Memory::new(Duration::from_secs(60));
        for i in 0..(CAPACITY + 10) {
            m.filter_created(&format!("0x{i:x}"), EndpointId::from("a"));
        }
        assert_eq!(m.lock().filters.map.len(), CAPACITY);
        assert!(m.filter_endpoint("0x0").is_none(), "the oldest is forgotten");
        assert!(m.filter_endpoint(&format!("0x{:X}", CAPACITY + 9)).is_some(), "case-insensitive");
        m.filter_removed(&format!("0x{:x}", CAPACITY + 9));
        assert!(m.filter_endpoint(&format!("0x{:x}", CAPACITY + 9)).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_broadcast_is_remembered_for_a_bounded_time() {
        let m = Memory::new(Duration::from_secs(60));
        let (hash, sender) = (B256::repeat_byte(1), Address::repeat_byte(2));
        m.broadcast(hash, Some(sender), &EndpointId::from("b"));
        assert_eq!(m.tx_endpoint(&hash), Some(EndpointId::from("b")));
        assert_eq!(m.sender_endpoint(&sender), Some(EndpointId::from("b")));
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!(m.tx_endpoint(&hash), None);
        assert_eq!(m.sender_endpoint(&sender), None);
    }
}

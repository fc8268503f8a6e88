//! [`Capability`]: what an endpoint may lack, and the transport's record of who lacks what,
//! declared (for good) or found (for a while).

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

use crate::EndpointId;

/// What an endpoint may lack, so that the requests that need it skip that endpoint while the
/// others still use it. Declared with [`FailoverTransportBuilder::lacks`], or found by the transport
/// from an endpoint's answers (see [the module docs](super#capabilities)).
///
/// [`FailoverTransportBuilder::lacks`]: super::FailoverTransportBuilder::lacks
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Capability {
    /// State more than [`archive_depth`](super::FailoverTransportBuilder::archive_depth) blocks
    /// behind the head (a full node prunes it; an archive node keeps it). Needed by a state
    /// read at an explicit block number (or a bundle's reference) that far back.
    Archive,
    /// `eth_getProof`.
    Proof,
    /// One method, by its exact name (`eth_getBlockReceipts`).
    Method(String),
    /// Every method of a namespace, the part of its name before the first `_` (`"trace"`,
    /// `"debug"`; a trailing `_` is ignored, so `"trace_"` is the same).
    Namespace(String),
    /// EIP-1898 block selection by hash (`{"blockHash": ..}`): [bundle](super::Bundle) reads
    /// need it. Only declared: a node that ignores the hash answers at its own latest block,
    /// which no answer shows.
    BlockHash,
    /// Requests larger than this many bytes (the serialized JSON-RPC body): a provider behind
    /// a proxy or node with a smaller body limit. Found from an HTTP 413 answer to a packet of
    /// reads: the provider then lacks requests of that packet's size and larger.
    RequestSize(usize),
    /// Blocks that are the chain's: a provider that answered a block whose header does not
    /// hash to the hash it claims, or another block than the one asked for, is found to lack
    /// it (see [verified blocks](super#verified-blocks)) and is skipped by every request for
    /// the lack period.
    TrueBlocks,
}

impl Capability {
    /// [`Capability::Method`] of `method`.
    pub fn method(method: impl Into<String>) -> Capability {
        Capability::Method(method.into())
    }

    /// [`Capability::Namespace`] of `namespace`.
    pub fn namespace(namespace: impl Into<String>) -> Capability {
        Capability::Namespace(namespace.into())
    }

    /// What a method that an endpoint answered "method not found" for says it lacks:
    /// `eth_getProof` is [`Proof`](Capability::Proof), any other its own
    /// [`Method`](Capability::Method).
    pub(crate) fn of_method(method: &str) -> Capability {
        match method {
            "eth_getProof" => Capability::Proof,
            m => Capability::Method(m.to_owned()),
        }
    }

    /// Whether a call of `method` needs this (for [`Archive`](Capability::Archive) and
    /// [`BlockHash`](Capability::BlockHash), which depend on the call's block, and
    /// [`RequestSize`](Capability::RequestSize), which depends on the packet's size, `false`).
    pub(crate) fn needed_by_method(&self, method: &str) -> bool {
        match self {
            Capability::Proof => method == "eth_getProof",
            Capability::Method(m) => m == method,
            Capability::Namespace(ns) => {
                method.split_once('_').is_some_and(|(prefix, _)| prefix == ns.trim_end_matches('_'))
            }
            Capability::Archive | Capability::BlockHash | Capability::RequestSize(_) => false,
            Capability::TrueBlocks => true,
        }
    }
}

#[cfg_attr(not(feature = "redis"), allow(dead_code, reason = "the fleet's notes name capabilities so"))]
impl Capability {
    /// A stable name, for the fleet's notes.
    pub(crate) fn code(&self) -> String {
        match self {
            Capability::Archive => "archive".to_owned(),
            Capability::Proof => "proof".to_owned(),
            Capability::Method(m) => format!("method {m}"),
            Capability::Namespace(ns) => format!("namespace {ns}"),
            Capability::BlockHash => "blockhash".to_owned(),
            Capability::RequestSize(bytes) => format!("size {bytes}"),
            Capability::TrueBlocks => "trueblocks".to_owned(),
        }
    }

    /// The capability [`code`](Capability::code) names.
    pub(crate) fn from_code(code: &str) -> Option<Capability> {
        Some(match code.split_once(' ') {
            Some(("method", m)) => Capability::Method(m.to_owned()),
            Some(("namespace", ns)) => Capability::Namespace(ns.to_owned()),
            Some(("size", bytes)) => Capability::RequestSize(bytes.parse().ok()?),
            Some(_) => return None,
            None => match code {
                "archive" => Capability::Archive,
                "proof" => Capability::Proof,
                "blockhash" => Capability::BlockHash,
                "trueblocks" => Capability::TrueBlocks,
                _ => return None,
            },
        })
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Capability::Archive => f.write_str("archive state"),
            Capability::Proof => f.write_str("eth_getProof"),
            Capability::Method(m) => write!(f, "method {m}"),
            Capability::Namespace(ns) => write!(f, "namespace {}_", ns.trim_end_matches('_')),
            Capability::BlockHash => f.write_str("block selection by hash"),
            Capability::RequestSize(bytes) => write!(f, "requests over {bytes} bytes"),
            Capability::TrueBlocks => f.write_str("the chain's blocks"),
        }
    }
}

/// One endpoint lacking one capability: for good (declared), or until an instant (found).
#[derive(Debug)]
struct Lack {
    endpoint: EndpointId,
    capability: Capability,
    until: Option<Instant>,
}

/// Who lacks what. The healthy path reads one atomic flag: while nothing is recorded, no lock
/// is taken and nothing is parsed.
#[derive(Debug, Default)]
pub(crate) struct Capabilities {
    /// Whether anything is recorded (it may have expired since).
    any: AtomicBool,
    lacks: Mutex<Vec<Lack>>,
    /// The fleet each lack found is announced to (feature `redis`).
    #[cfg(feature = "redis")]
    pub(crate) fleet: std::sync::OnceLock<crate::fleet::Fleet>,
}

impl Capabilities {
    fn lock(&self) -> MutexGuard<'_, Vec<Lack>> {
        self.lacks.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether anything is recorded: one atomic load.
    pub(crate) fn is_active(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }

    /// `endpoint` lacks `capability` for good.
    pub(crate) fn declare(&self, endpoint: EndpointId, capability: Capability) {
        let mut lacks = self.lock();
        lacks.retain(|l| !(l.endpoint == endpoint && l.capability == capability));
        lacks.push(Lack { endpoint, capability, until: None });
        self.any.store(true, Ordering::Release);
    }

    /// `endpoint` was found to lack `capability`: for `duration` from now (a declared lack
    /// stays for good). Returns whether it is news (not recorded already); news is announced
    /// to the fleet (feature `redis`), whose other processes learn it with
    /// [`heard`](Capabilities::heard).
    pub(crate) fn found(&self, endpoint: &EndpointId, capability: Capability, duration: Duration) -> bool {
        #[cfg(feature = "redis")]
        let code = self.fleet.get().map(|_| capability.code());
        let news = self.found_here(endpoint, capability, duration);
        #[cfg(feature = "redis")]
        if let (true, Some(fleet), Some(code)) = (news, self.fleet.get(), code) {
            let ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
            fleet.announce_soon(format!("lack:{}", endpoint.as_str()), format!("{ms} {code}"), duration);
        }
        news
    }

    /// A lack another process of the fleet announced (`name` `lack:{endpoint}`, `value`
    /// `{milliseconds} {capability code}`): learnt here for that long, not announced again.
    #[cfg(feature = "redis")]
    pub(crate) fn heard(&self, name: &str, value: &str) {
        let Some(endpoint) = name.strip_prefix("lack:") else { return };
        let Some((ms, code)) = value.split_once(' ') else { return };
        if let (Ok(ms), Some(capability)) = (ms.parse::<u64>(), Capability::from_code(code)) {
            self.found_here(&EndpointId::from(endpoint), capability, Duration::from_millis(ms));
        }
    }

    /// [`found`](Capabilities::found), here only.
    fn found_here(&self, endpoint: &EndpointId, capability: Capability, duration: Duration) -> bool {
        let until = Instant::now() + duration;
        let mut lacks = self.lock();
        let known = lacks.iter_mut().find(|l| l.endpoint == *endpoint && l.capability == capability);
        let news = match known {
            Some(Lack { until: None, .. }) => false,
            Some(lack) => {
                let news = lack.until.is_some_and(|u| u <= Instant::now());
                lack.until = Some(until);
                news
            }
            None => {
                lacks.push(Lack { endpoint: endpoint.clone(), capability, until: Some(until) });
                true
            }
        };
        self.any.store(true, Ordering::Release);
        news
    }

    /// What `endpoint` lacks now.
    pub(crate) fn lacking(&self, endpoint: &str) -> Vec<Capability> {
        let mut lacks = self.lock();
        self.prune(&mut lacks);
        lacks.iter().filter(|l| l.endpoint.as_str() == endpoint).map(|l| l.capability.clone()).collect()
    }

    /// Adds to `into` each endpoint lacking a capability `needs` says the request needs, with
    /// the first such capability (an endpoint already in `into` is not added again).
    pub(crate) fn lacking_for(
        &self,
        mut needs: impl FnMut(&Capability) -> bool,
        into: &mut Vec<(EndpointId, Capability)>,
    ) {
        let mut lacks = self.lock();
        self.prune(&mut lacks);
        for lack in lacks.iter() {
            if !into.iter().any(|(e, _)| *e == lack.endpoint) && needs(&lack.capability) {
                into.push((lack.endpoint.clone(), lack.capability.clone()));
            }
        }
    }

    /// Forgets what expired; with nothing left, the healthy path stops looking.
    fn prune(&self, lacks: &mut Vec<Lack>) {
        let now = Instant::now();
        lacks.retain(|l| l.until.is_none_or(|u| u > now));
        if lacks.is_empty() {
            self.any.store(false, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_namespace_covers_its_methods_and_only_those() {
        let trace = Capability::namespace("trace_");
        assert!(trace.needed_by_method("trace_block"));
        assert!(Capability::namespace("trace").needed_by_method("trace_filter"));
        assert!(!trace.needed_by_method("eth_call"));
        assert!(!trace.needed_by_method("tracer"));
        assert!(Capability::Proof.needed_by_method("eth_getProof"));
        assert!(Capability::method("eth_getBlockReceipts").needed_by_method("eth_getBlockReceipts"));
        assert!(!Capability::Archive.needed_by_method("eth_getBalance"), "archive depends on the block");
        assert_eq!(Capability::of_method("eth_getProof"), Capability::Proof);
    }

    #[tokio::test(start_paused = true)]
    async fn a_found_lack_expires_and_a_declared_one_stays() {
        let caps = Capabilities::default();
        assert!(!caps.is_active());
        let (a, b) = (EndpointId::from("a"), EndpointId::from("b"));
        caps.declare(b.clone(), Capability::Archive);
        assert!(caps.found(&a, Capability::Archive, Duration::from_secs(600)));
        assert!(!caps.found(&a, Capability::Archive, Duration::from_secs(600)), "not news twice");
        assert!(!caps.found(&b, Capability::Archive, Duration::from_secs(1)), "declared stays declared");
        let mut out = Vec::new();
        caps.lacking_for(|c| *c == Capability::Archive, &mut out);
        let ids: Vec<_> = out.iter().map(|(e, _)| e.clone()).collect();
        assert_eq!(ids, [b.clone(), a.clone()], "in the order recorded");
        assert!(out.iter().all(|(_, c)| *c == Capability::Archive), "with what each lacks");
        tokio::time::advance(Duration::from_secs(600)).await;
        assert!(caps.lacking("a").is_empty());
        assert_eq!(caps.lacking("b"), [Capability::Archive]);
        assert!(caps.is_active(), "the declared one is left");
    }

    #[test]
    fn nothing_recorded_leaves_the_flag_down() {
        let caps = Capabilities::default();
        caps.found(&EndpointId::from("a"), Capability::method("m"), Duration::ZERO);
        assert!(caps.lacking("a").is_empty(), "expired at once");
        assert!(!caps.is_active(), "pruned to nothing: the hot path stops looking");
    }
}

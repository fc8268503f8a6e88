//! Helpers for pairing failnext with failnext-blocklag, shared by the blocklag examples and
//! the demo bot: the monitor's probe client, eligibility read from one snapshot, and what
//! "healthy" means for a simulated provider.

use std::time::Duration;

use failnext::EndpointId;
use failnext_blocklag::Monitor;

use crate::sim::Behaviour;

/// A plain client for the monitor's probes: redirects are not followed (as the reference
/// does), and there is no proxy when the providers are `local` (the simulator listens on
/// loopback). It never goes through failnext, so each probe reaches the provider it names.
///
/// # Errors
///
/// When reqwest cannot build a client.
pub fn probe_client(local: bool) -> reqwest::Result<reqwest::Client> {
    let builder = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none());
    if local { builder.no_proxy().build() } else { builder.build() }
}

/// The endpoints `monitor` holds eligible now, in configured order, all answered from one
/// snapshot (before the first check, every endpoint: the monitor fails open).
pub fn eligible_now(monitor: &Monitor) -> Vec<EndpointId> {
    let ids = monitor.endpoints().iter().map(|ep| ep.id());
    match monitor.snapshot() {
        Some(snapshot) => ids.filter(|id| snapshot.is_eligible(id)).cloned().collect(),
        None => ids.cloned().collect(),
    }
}

/// Whether a simulated provider with this behaviour answers a read correctly within
/// `timeout`: healthy, behind, stalled or reporting a head ahead (old data is still an answer; eligibility is the
/// monitor's business), without archive state (current reads succeed), or slow by less than
/// the timeout. Down, HTTP errors, rate limits, JSON-RPC errors, hanging, the wrong chain, a
/// fork of its own and broken bodies are not healthy.
pub fn answers_reads(behaviour: &Behaviour, timeout: Duration) -> bool {
    match behaviour {
        Behaviour::Healthy
        | Behaviour::Lagging(_)
        | Behaviour::HalfStale(_)
        | Behaviour::Stalled
        | Behaviour::Ahead(_)
        | Behaviour::NoArchive(_) => true,
        Behaviour::Slow(delay) => *delay < timeout,
        _ => false,
    }
}

/// A short, lower-case description of a simulated provider's behaviour, for live views.
pub fn describe(behaviour: &Behaviour) -> String {
    match behaviour {
        Behaviour::Healthy => "healthy".to_owned(),
        Behaviour::Down => "down".to_owned(),
        Behaviour::Status(code) => format!("http {code}"),
        Behaviour::RateLimited { retry_after_secs } => format!("429, retry after {retry_after_secs} s"),
        Behaviour::JsonRpcError { code, .. } => format!("json-rpc error {code}"),
        Behaviour::Lagging(n) => format!("lagging {n} blocks"),
        Behaviour::HalfStale(n) => format!("lagging {n} blocks every other request"),
        Behaviour::Stalled => "stalled".to_owned(),
        Behaviour::Ahead(n) => format!("reports {n} blocks ahead"),
        Behaviour::Slow(delay) => format!("slow (+{} ms)", delay.as_millis()),
        Behaviour::Hang => "hanging".to_owned(),
        Behaviour::WrongChain(id) => format!("wrong chain {id}"),
        Behaviour::Forked(fork) => format!("on fork {fork}"),
        Behaviour::NoArchive(depth) => format!("state for the last {depth} blocks only"),
        Behaviour::Malformed => "malformed body".to_owned(),
        Behaviour::Oversized => "oversized body".to_owned(),
        Behaviour::ResetMidBody => "reset mid-body".to_owned(),
        Behaviour::Truncated => "truncated body".to_owned(),
    }
}

//! The ground truth of a measure: when each provider switched to which behaviour, and what
//! makes those switches: the flapping scenario's seeded fault windows, or the half-stale
//! scenario's fixed behaviours.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use failnext_examples::sim::{Behaviour, Provider};
use tokio::sync::watch;

use crate::soak::schedule::{self, FaultKind, Rng};

/// One behaviour switch of one provider: `Provider::set` was called at `began` and returned at
/// `done`. A request that arrives after `done` meets `kind` (until the next switch begins);
/// one that arrives between `began` and `done` may meet either.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Switch {
    pub(crate) began: Instant,
    pub(crate) done: Instant,
    pub(crate) kind: FaultKind,
}

/// Every switch of every provider during a measure, in order per provider.
#[derive(Clone, Debug, Default)]
pub(crate) struct Timeline {
    pub(crate) providers: Vec<Vec<Switch>>,
}

impl Timeline {
    fn switches(&self, p: usize) -> &[Switch] {
        self.providers.get(p).map_or(&[], Vec::as_slice)
    }

    /// Provider `p` was healthy (no fault active) during the whole of `from..=to`: the switch in
    /// force had finished to `Healthy` by `from`, and the next one began after `to`.
    pub(crate) fn healthy_throughout(&self, p: usize, from: Instant, to: Instant) -> bool {
        let s = self.switches(p);
        let Some(i) = s.iter().rposition(|w| w.began <= from) else { return false };
        s[i].kind == FaultKind::Healthy && s[i].done <= from && s.get(i + 1).is_none_or(|n| n.began > to)
    }

    /// The behaviour provider `p` was switched to last before `at` (`None` before any).
    pub(crate) fn kind_at(&self, p: usize, at: Instant) -> Option<FaultKind> {
        let s = self.switches(p);
        s.iter().rposition(|w| w.began <= at).map(|i| s[i].kind)
    }

    /// Provider `p` was certainly refusing connections at `at`: its switch to `Down` had
    /// returned (listener closed) and the next switch had not begun.
    pub(crate) fn refused_at(&self, p: usize, at: Instant) -> bool {
        let s = self.switches(p);
        let Some(i) = s.iter().rposition(|w| w.done <= at) else { return false };
        s[i].kind == FaultKind::Down && s.get(i + 1).is_none_or(|n| n.began > at)
    }

    /// Provider `p` may have been on the wrong chain at some point of `from..=to`.
    pub(crate) fn wrong_chain_during(&self, p: usize, from: Instant, to: Instant) -> bool {
        let s = self.switches(p);
        s.iter().enumerate().any(|(i, w)| {
            let until = s.get(i + 1).map(|n| n.done);
            w.kind == FaultKind::WrongChain && w.began <= to && until.is_none_or(|u| u >= from)
        })
    }

    /// Share of the time between `from` and `to` each provider spent outside `Healthy`.
    pub(crate) fn faulty_share(&self, p: usize, from: Instant, to: Instant) -> f64 {
        let s = self.switches(p);
        let total = to.saturating_duration_since(from).as_secs_f64().max(1e-9);
        let mut faulty = Duration::ZERO;
        for (i, w) in s.iter().enumerate() {
            if w.kind == FaultKind::Healthy {
                continue;
            }
            let start = w.began.max(from);
            let end = s.get(i + 1).map_or(to, |n| n.done).min(to);
            faulty += end.saturating_duration_since(start);
        }
        faulty.as_secs_f64() / total
    }
}

/// The faults of the measure, with their relative frequency: those a hosted provider shows,
/// as issue 10 lists them (no `Slow` or `Oversized`: they answer correctly).
const MIX: [(FaultKind, u64); 11] = [
    (FaultKind::Down, 6),
    (FaultKind::Status5xx, 10),
    (FaultKind::RateLimited, 6),
    (FaultKind::JsonRpcError, 9),
    (FaultKind::Malformed, 5),
    (FaultKind::Truncated, 5),
    (FaultKind::ResetMidBody, 5),
    (FaultKind::Hang, 5),
    (FaultKind::Lagging, 6),
    (FaultKind::Stalled, 3),
    (FaultKind::WrongChain, 4),
];

/// One provider's seeded flapping: healthy for `fault..=4 x fault` (a provider's usual
/// latency, 10..120 ms), then one fault of the mix for `fault/2..=3/2 x fault`, and again.
/// Each provider is faulty about 2/7 of the time, independently of the others.
#[derive(Debug)]
pub(crate) struct Windows {
    rng: Rng,
    fault_ms: u64,
    /// How long a provider is down before it comes back on the wrong chain.
    restart: Duration,
}

impl Windows {
    /// `restart`: how long a provider is down (refusing) before it comes back on the wrong
    /// chain. A provider changes chain across a restart (a node restarted on another network,
    /// a URL reconfigured), never between two answers: the monitor verifies the chain when a
    /// provider recovers (the multi-RPC article: "run the relevant checks at registration and
    /// recovery"), so `restart` is long enough for a check to see it down first. A provider
    /// that switched chain between two answers could not be told from a good one by any
    /// client until the next check; the measure does not model that.
    pub(crate) fn new(seed: u64, provider: usize, fault: Duration, restart: Duration) -> Windows {
        let fault_ms = u64::try_from(fault.as_millis()).unwrap_or(u64::MAX).max(2);
        Windows { rng: Rng::derive(seed, 0x3EA5_0000 + provider as u64), fault_ms, restart }
    }

    /// The next healthy spell: its behaviour and length.
    pub(crate) fn healthy(&mut self) -> (Behaviour, Duration) {
        let latency = Behaviour::Slow(self.rng.millis(10, 120));
        (latency, self.rng.millis(self.fault_ms, self.fault_ms.saturating_mul(4)))
    }

    /// The next fault window: its kind, behaviour and length.
    pub(crate) fn fault(&mut self) -> (FaultKind, Behaviour, Duration) {
        let rng = &mut self.rng;
        let weights: Vec<u64> = MIX.iter().map(|(_, w)| *w).collect();
        let kind = MIX[rng.weighted(&weights)].0;
        let length = rng.millis(self.fault_ms / 2, self.fault_ms.saturating_mul(3) / 2);
        // A rate limit asks for about as long as it lasts, in whole seconds.
        let retry_ms = length.as_millis().max(1) as u64;
        let behaviour = match kind {
            FaultKind::Down => Behaviour::Down,
            FaultKind::Status5xx => Behaviour::Status([502, 503, 504][rng.index(3)]),
            FaultKind::RateLimited => Behaviour::RateLimited { retry_after_secs: retry_ms.div_ceil(1000) },
            FaultKind::JsonRpcError => {
                // The two codes the figures are about: rate limit and internal error.
                let (code, message) = [(-32005, "limit exceeded"), (-32603, "internal error")][rng.index(2)];
                Behaviour::JsonRpcError { code, message: message.to_owned() }
            }
            FaultKind::Malformed => Behaviour::Malformed,
            FaultKind::Truncated => Behaviour::Truncated,
            FaultKind::ResetMidBody => Behaviour::ResetMidBody,
            FaultKind::Hang => Behaviour::Hang,
            FaultKind::Lagging => Behaviour::Lagging(3 + rng.below(4)),
            FaultKind::Stalled => Behaviour::Stalled,
            FaultKind::WrongChain => Behaviour::WrongChain(1 + rng.below(10)),
            _ => schedule::json_rpc_error(rng),
        };
        (kind, behaviour, length)
    }
}

/// How many blocks the half-stale provider is behind on its stale answers.
pub(crate) const HALF_STALE_LAG: u64 = 20;

/// The half-stale scenario: provider 0 is `HalfStale(HALF_STALE_LAG)` with no extra delay
/// (the fastest), every other one healthy at a seeded `Slow(20..=40 ms)`; recorded as switches
/// (provider 0's as a fault: it is never healthy throughout). They stay so for the measure.
pub(crate) async fn half_stale(providers: &[Provider], seed: u64, timeline: &Mutex<Timeline>) {
    let mut rng = Rng::derive(seed, 0x4A1F_57A1);
    for (p, provider) in providers.iter().enumerate() {
        let (behaviour, kind) = if p == 0 {
            (Behaviour::HalfStale(HALF_STALE_LAG), FaultKind::HalfStale)
        } else {
            (Behaviour::Slow(rng.millis(20, 40)), FaultKind::Healthy)
        };
        let began = Instant::now();
        let kind = if provider.set(behaviour).await.is_ok() { kind } else { FaultKind::Down };
        let done = Instant::now();
        super::trace::debug(|| format!("p{p} -> {kind}"));
        let mut t = timeline.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = t.providers.get_mut(p) {
            s.push(Switch { began, done, kind });
        }
    }
}

/// Switches `provider` (index `p`) through its windows until `stop`, recording every switch.
pub(crate) async fn flap(
    provider: Provider,
    p: usize,
    mut windows: Windows,
    timeline: Arc<Mutex<Timeline>>,
    mut stop: watch::Receiver<bool>,
) {
    let record = |began: Instant, kind: FaultKind| {
        let done = Instant::now();
        super::trace::debug(|| format!("p{p} -> {kind}"));
        let mut t = timeline.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = t.providers.get_mut(p) {
            s.push(Switch { began, done, kind });
        }
    };
    loop {
        let (behaviour, wait) = windows.healthy();
        let began = Instant::now();
        // A failed rebind after `Down` leaves the provider down: recorded as such.
        let kind = if provider.set(behaviour).await.is_ok() { FaultKind::Healthy } else { FaultKind::Down };
        record(began, kind);
        if crate::soak::watch::stopped_or(&mut stop, wait).await {
            return;
        }
        let (kind, behaviour, wait) = windows.fault();
        if kind == FaultKind::WrongChain {
            // Down first: a restart onto the other chain.
            let began = Instant::now();
            let _ = provider.set(Behaviour::Down).await;
            record(began, FaultKind::Down);
            if crate::soak::watch::stopped_or(&mut stop, windows.restart).await {
                return;
            }
        }
        let began = Instant::now();
        let kind = if provider.set(behaviour).await.is_ok() { kind } else { FaultKind::Down };
        record(began, kind);
        if crate::soak::watch::stopped_or(&mut stop, wait).await {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(base: Instant, ms: u64) -> Instant {
        base + Duration::from_millis(ms)
    }

    /// p0: healthy (switch 0..1 ms), down (100..105), healthy (300..302).
    fn timeline(base: Instant) -> Timeline {
        let sw = |b, d, kind| Switch { began: at(base, b), done: at(base, d), kind };
        Timeline {
            providers: vec![vec![
                sw(0, 1, FaultKind::Healthy),
                sw(100, 105, FaultKind::Down),
                sw(300, 302, FaultKind::Healthy),
            ]],
        }
    }

    #[test]
    fn healthy_throughout_needs_the_whole_request_inside_a_finished_healthy_spell() {
        let base = Instant::now();
        let t = timeline(base);
        assert!(t.healthy_throughout(0, at(base, 10), at(base, 99)));
        assert!(!t.healthy_throughout(0, at(base, 10), at(base, 100)), "a fault began at its end");
        assert!(!t.healthy_throughout(0, at(base, 150), at(base, 160)), "down");
        assert!(!t.healthy_throughout(0, at(base, 301), at(base, 310)), "the switch back had not returned");
        assert!(t.healthy_throughout(0, at(base, 302), at(base, 10_000)));
        assert!(!t.healthy_throughout(1, at(base, 10), at(base, 20)), "no such provider");
    }

    #[test]
    fn refused_only_between_the_listener_closing_and_the_next_switch() {
        let base = Instant::now();
        let t = timeline(base);
        assert!(!t.refused_at(0, at(base, 102)), "the listener was still closing");
        assert!(t.refused_at(0, at(base, 105)));
        assert!(t.refused_at(0, at(base, 299)));
        assert!(!t.refused_at(0, at(base, 300)), "rebinding began");
        assert!(!t.refused_at(0, at(base, 50)));
    }

    #[test]
    fn wrong_chain_counts_any_overlap() {
        let base = Instant::now();
        let sw = |b, d, kind| Switch { began: at(base, b), done: at(base, d), kind };
        let t = Timeline {
            providers: vec![vec![
                sw(0, 1, FaultKind::Healthy),
                sw(100, 101, FaultKind::WrongChain),
                sw(200, 201, FaultKind::Healthy),
            ]],
        };
        assert!(!t.wrong_chain_during(0, at(base, 10), at(base, 99)));
        assert!(t.wrong_chain_during(0, at(base, 90), at(base, 100)));
        assert!(t.wrong_chain_during(0, at(base, 201), at(base, 250)), "the switch back had just returned");
        assert!(!t.wrong_chain_during(0, at(base, 202), at(base, 250)));
        assert!((t.faulty_share(0, base, at(base, 400)) - 0.25).abs() < 0.01);
    }

    #[test]
    fn fault_windows_last_about_the_fault_length() {
        let mut w = Windows::new(7, 0, Duration::from_millis(200), Duration::from_millis(700));
        for _ in 0..200 {
            let (kind, _, length) = w.fault();
            assert_ne!(kind, FaultKind::Healthy);
            assert!((100..=300).contains(&(length.as_millis() as u64)), "{length:?}");
            let (_, gap) = w.healthy();
            assert!((200..=800).contains(&(gap.as_millis() as u64)), "{gap:?}");
        }
    }
}

//! Publication: a check's or a probe's snapshot published with the contradictions laid
//! over it, its latencies fed to failnext, its chain id learnt, and its metrics.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use failnext::{Endpoint, EndpointId, Observation};
use tokio::time::Instant;

use crate::judging::entry::SnapshotEntry;
use crate::judging::fitness::Fitness;
use crate::judging::round;
use crate::judging::snapshot::Snapshot;
use crate::probe::exchange::ProbeReport;
use crate::runtime::event::MonitorEvent;

use super::{Fresh, Inner, decide, mask};

/// The bad share above which a provider's fed latency is penalised.
pub(crate) const PENALTY_BAD_SHARE: f64 = 0.1;

/// The most probe timeouts a penalty adds.
const PENALTY_MAX_TIMEOUTS: f64 = 9.0;

/// The latency fed for a provider of probe latency `latency` whose recent bad share is
/// `share`: `latency` up to [`PENALTY_BAD_SHARE`], else `latency` plus `min(s / (1 - s), 9)`
/// times `timeout`.
pub(crate) fn penalised(latency: Duration, share: f64, timeout: Duration) -> Duration {
    if share <= PENALTY_BAD_SHARE {
        return latency;
    }
    let extra =
        if share >= 1.0 { PENALTY_MAX_TIMEOUTS } else { (share / (1.0 - share)).min(PENALTY_MAX_TIMEOUTS) };
    latency.saturating_add(timeout.mul_f64(extra))
}

/// The published snapshot as metrics (feature `metrics`), labelled by endpoint id:
/// `failnext_blocklag_height`, `failnext_blocklag_lag_blocks` and
/// `failnext_blocklag_probe_latency_seconds` (gauges), `failnext_blocklag_eligible` (gauge, 0 or
/// 1), `failnext_blocklag_probe_failures_total` (counter, with the failed `call`).
#[cfg(feature = "metrics")]
fn record_metrics(snapshot: &Snapshot, fresh: Fresh) {
    for (i, entry) in snapshot.entries().iter().enumerate() {
        let id = entry.endpoint().as_str().to_owned();
        if let Some(height) = entry.height() {
            metrics::gauge!("failnext_blocklag_height", "endpoint" => id.clone()).set(height as f64);
        }
        if let Some(lag) = entry.lag() {
            metrics::gauge!("failnext_blocklag_lag_blocks", "endpoint" => id.clone()).set(lag as f64);
        }
        if let Some(latency) = entry.probe_latency() {
            metrics::gauge!("failnext_blocklag_probe_latency_seconds", "endpoint" => id.clone())
                .set(latency.as_secs_f64());
        }
        if entry.height().is_none() && entry.error().is_some() && fresh.contains(i) {
            let call = entry.last_failed_call().unwrap_or("unknown");
            metrics::counter!("failnext_blocklag_probe_failures_total", "endpoint" => id.clone(), "call" => call)
                .increment(1);
        }
        let eligible = if entry.is_eligible() { 1.0 } else { 0.0 };
        metrics::gauge!("failnext_blocklag_eligible", "endpoint" => id).set(eligible);
    }
}

impl Inner {
    /// Feeds entry `i`'s probe latency (penalised by its bad share) to `feed`, when its probe
    /// answered.
    pub(super) fn feed_entry(&self, feed: &failnext::LatencyFeed, i: usize, entry: &SnapshotEntry) {
        if let (Some(_), Some(latency)) = (entry.height(), entry.probe_latency()) {
            let share = entry.bad_share().unwrap_or_else(|| self.counts(i).bad_share());
            feed.observe(entry.endpoint().as_str(), penalised(latency, share, self.settings.probe_timeout));
        }
    }

    /// Makes `snapshot` the one readers see: the snapshot first, then its bitmask. The
    /// contradictions pending are applied to it, and their bits cleared again after the store
    /// (a contradiction recorded meanwhile is not undone). Call it holding `publishing`.
    pub(super) fn publish(&self, snapshot: Snapshot, fresh: Fresh) {
        let snapshot = self.overlay(snapshot);
        #[cfg(feature = "metrics")]
        record_metrics(&snapshot, fresh);
        if let Some(feed) = &*self.feed.load() {
            // Only the providers that answered this probe: a failed probe adds no sample.
            for (i, entry) in snapshot.entries().iter().enumerate().filter(|(i, _)| fresh.contains(*i)) {
                self.feed_entry(feed, i, entry);
            }
        }
        let n = self.settings.endpoints.len();
        let bits = self.bits.as_ref().map(|bits| (bits, mask(n, Some(&snapshot), &self.settings.freshness)));
        self.published.store(Some(Arc::new(snapshot)));
        if let Some((bits, mask)) = bits {
            bits.store(mask, Ordering::SeqCst);
            for (i, contradicted) in self.contradicted.iter().enumerate() {
                if contradicted.load().is_some() {
                    bits.fetch_and(!(1 << i), Ordering::SeqCst);
                }
            }
        }
    }

    /// [`publish`](Inner::publish), telling the event hook when the head stalls or moves again.
    pub(crate) fn publish_and_tell(&self, snapshot: Snapshot, fresh: Fresh) {
        let Some(hook) = &self.settings.on_event else {
            self.publish(snapshot, fresh);
            return;
        };
        let before = self.published.load_full();
        let was_stalled = before.as_ref().is_some_and(|s| s.stalled());
        let mut events = Vec::new();
        match (was_stalled, snapshot.stalled()) {
            (false, true) => events.push(MonitorEvent::Stalled {
                head: snapshot.highest(),
                unchanged_for: snapshot.head_unchanged_for(),
            }),
            (true, false) => events.push(MonitorEvent::StallEnded { head: snapshot.highest() }),
            _ => {}
        }
        // Heads that turned stale or implausible with this publication.
        for (i, entry) in snapshot.entries().iter().enumerate() {
            let was = before.as_ref().and_then(|b| b.entries().get(i));
            let (Some(head), endpoint) = (entry.height(), entry.endpoint().clone()) else { continue };
            if entry.is_stale() && !was.is_some_and(SnapshotEntry::is_stale) {
                let age = entry.head_age().unwrap_or_default();
                events.push(MonitorEvent::HeadStale { endpoint, head, age });
            } else if entry.is_implausible() && !was.is_some_and(SnapshotEntry::is_implausible) {
                events.push(MonitorEvent::HeadImplausible { endpoint, head });
            }
        }
        self.publish(snapshot, fresh);
        for event in &events {
            hook(event);
        }
    }

    /// `snapshot` with every pending contradiction of an admitted entry applied.
    pub(super) fn overlay(&self, snapshot: Snapshot) -> Snapshot {
        let pending: Vec<(usize, Observation)> = self
            .contradicted
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.load().as_deref().map(|o| (i, *o)))
            .filter(|(i, _)| snapshot.fitness_at(*i).is_eligible())
            .collect();
        if pending.is_empty() {
            return snapshot;
        }
        snapshot.map_entries(|i, entry| match pending.iter().find(|(j, _)| *j == i) {
            Some((_, observation)) => entry.with_fitness(Fitness::Contradicted(*observation)),
            None => entry,
        })
    }

    /// Publishes the latest snapshot again with the pending contradictions applied (nothing
    /// when none is published yet). Call it holding `publishing`.
    pub(super) fn republish(&self) {
        if let Some(current) = self.published.load_full() {
            self.publish(Snapshot::clone(&current), Fresh::None);
        }
    }

    /// Clears the contradictions of the endpoints in `positions`, whose probes are starting,
    /// having made each visible first.
    pub(crate) fn take_contradictions(&self, positions: std::ops::Range<usize>) {
        let pending = || positions.clone().any(|i| self.is_contradicted(i));
        if pending() {
            let _publishing = self.publishing.lock().unwrap_or_else(PoisonError::into_inner);
            self.republish();
        }
        for i in positions {
            self.contradicted[i].store(None);
        }
    }

    /// Whether a contradiction of endpoint `i` is pending.
    pub(super) fn is_contradicted(&self, i: usize) -> bool {
        self.contradicted.get(i).is_some_and(|c| c.load().is_some())
    }

    /// Whether `snapshot` (the latest one) admits endpoint `i`, contradictions aside (no time
    /// rules): what counts as "admitted" for the evidence.
    pub(super) fn admits(&self, snapshot: Option<&Snapshot>, i: usize) -> bool {
        decide(Some(i), snapshot, &self.settings.freshness, None).is_eligible()
    }

    /// The chain id learnt from the providers' probes, when none was expected.
    pub(crate) fn learnt_chain(&self) -> Option<u64> {
        Some(self.learnt_chain.load(Ordering::Acquire)).filter(|&c| c != 0)
    }

    /// Endpoint `i`'s probe reported chain id `chain` (none was expected): once a strict
    /// majority of the endpoints reported the same id, it is the monitor's chain, and every
    /// later spawned probe verifies it ([`ProbeError::WrongChain`](crate::ProbeError::WrongChain)
    /// otherwise). A bot's providers serve one chain; one that comes back on another across a
    /// restart is then held out as if the chain had been given.
    pub(super) fn learn_chain(&self, i: usize, chain: u64) {
        let Some(seen) = self.chain_seen.get(i) else { return };
        if chain == 0 || self.learnt_chain().is_some() {
            return;
        }
        seen.store(chain, Ordering::Release);
        let agreeing = self.chain_seen.iter().filter(|c| c.load(Ordering::Acquire) == chain).count();
        if agreeing * 2 > self.chain_seen.len() {
            let _ = self.learnt_chain.compare_exchange(0, chain, Ordering::AcqRel, Ordering::Acquire);
        }
    }

    /// Publishes the spawned schedule's probe of endpoint `i` ([`round::amend`]) and records
    /// the evidence it adds. Returns `None` when the endpoint is fit afterwards (eligible, not
    /// contradicted), else the kind of its unfitness.
    pub(super) fn publish_probe(&self, i: usize, report: ProbeReport) -> Option<u32> {
        if report.result.is_ok() {
            self.probe_answered(i);
        }
        if let Some(pending) = self.chain_pending.get(i) {
            if report.result.is_err() {
                pending.store(true, Ordering::Relaxed);
            } else if report.chain_verified {
                pending.store(false, Ordering::Relaxed);
            }
        }
        let (at, counts) = (Instant::now(), self.counts(i));
        let ids: Vec<&EndpointId> = self.settings.endpoints.iter().map(Endpoint::id).collect();
        let waiting = if self.settings.freshness.fail_closed { Fitness::Closed } else { Fitness::Unchecked };
        let vouched: Vec<Option<(u64, Instant)>> = (0..ids.len()).map(|j| self.answered(j)).collect();
        let config = round::Amending {
            max_lag: self.settings.max_lag,
            rules: self.settings.rules,
            waiting,
            vouched: &vouched,
        };
        let measured =
            round::Measured { latency: report.latency, hash: report.hash, timestamp: report.timestamp };
        let probed = round::Probed { position: i, outcome: report.result, measured, at, counts };
        let _publishing = self.publishing.lock().unwrap_or_else(PoisonError::into_inner);
        let previous = self.published.load_full();
        let amended = round::amend(previous.as_deref(), &ids, probed, config);
        if let (Some(good), Some(evidence)) = (amended.evidence, self.evidence.get(i)) {
            evidence.record(good, self.now_ms(), self.half_life());
        }
        if let Some(snapshot) = amended.snapshot {
            self.publish_and_tell(snapshot, Fresh::One(i));
        }
        let published = self.published.load();
        let entry = published.as_deref().and_then(|s| s.entries().get(i));
        let Some(entry) = entry else { return Some(Fitness::Unknown.kind()) };
        let fitness = entry.fitness();
        if self.is_contradicted(i) {
            return Some(Fitness::Contradicted(failnext::Observation::Failed).kind());
        }
        if fitness.is_eligible() {
            return None;
        }
        // A failed probe's kind is its error's: refused and wrong chain are two faults.
        let error = entry.error().map_or(0, |e| 1 + e.kind() as u32);
        Some(fitness.kind() << 8 | error)
    }
}

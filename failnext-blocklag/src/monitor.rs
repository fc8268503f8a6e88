//! `Monitor`: serialized checks that publish snapshots, and lock-free eligibility reads
//! answered by one pure rule ([`decide`]).

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwapOption;
use failnext::{Eligibility, Endpoint, EndpointId, Observation};
use tokio::time::Instant;

use crate::check_error::CheckError;
use crate::event::MonitorEvent;
use crate::evidence::{self, Counts, Evidence};
use crate::fitness::Fitness;
use crate::persist::MonitorHealth;
use crate::probe::{self, ProbeConfig, ProbeReport};
use crate::round;
use crate::rpc::Method;
use crate::settings::{Freshness, Settings};
use crate::snapshot::{Snapshot, SnapshotEntry};
use crate::wake::Gap;

/// Watches the block heights of a fixed set of providers and says which ones are close enough
/// to the highest to be used.
///
/// [`check`](Monitor::check) probes every provider and publishes a [`Snapshot`];
/// [`eligible`](Monitor::eligible) answers from the latest one without I/O. Give a clone to
/// [`failnext::FailoverBuilder::eligible`] (the monitor implements [`Eligibility`]) and call
/// `check` on your own schedule, or let [`spawn`](Monitor::spawn) run it on an adaptive one.
///
/// Cloning is cheap; clones share the snapshot and the check queue. See the
/// [crate documentation](crate) for the rules and a complete example.
#[derive(Clone)]
pub struct Monitor {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) settings: Settings,
    published: ArcSwapOption<Snapshot>,
    /// Bit `i` is the eligibility of endpoint `i` in the latest publication ([`mask`]),
    /// stored right after each snapshot, for monitors of at most 64 endpoints: one atomic load
    /// answers `eligible()`.
    bits: Option<AtomicU64>,
    /// Serializes checks. Held across the probes; never touched by readers.
    checking: tokio::sync::Mutex<()>,
    /// Per endpoint, in configured order: its chain id still has to be verified (never
    /// verified yet, or its probe failed since). Written only under `checking`. Kept here, not
    /// in the snapshot, because a check in which every probe fails publishes nothing, and the
    /// failure must still lead to a new verification.
    chain_pending: Vec<AtomicBool>,
    /// Per endpoint: it does not answer the spawned probe's batch as a batch (found once), so
    /// it is probed with separate calls.
    separately: Vec<AtomicBool>,
    /// Where each check's probe latencies go, when paired ([`Monitor::feed_latency`]).
    feed: ArcSwapOption<failnext::LatencyFeed>,
    /// Serializes publications (checks and the spawned schedule's probes, and contradictions):
    /// held from loading the latest snapshot to storing the next, never across an await.
    publishing: Mutex<()>,
    /// The origin of the evidence's millisecond clock.
    origin: Instant,
    /// The evidence's half-life, in milliseconds: a quarter of the spawned interval.
    half_life_ms: AtomicU64,
    /// Per endpoint, in configured order: its recent good and bad outcomes.
    evidence: Vec<Evidence>,
    /// Per endpoint: a real-traffic answer that contradicted the view since its latest probe
    /// started, applied to every publication until its next probe.
    contradicted: Vec<ArcSwapOption<Observation>>,
    /// The latest spawned schedule's wake-ups, for `check_now`.
    pub(crate) schedule: ArcSwapOption<crate::wake::Link>,
    /// Per endpoint: 1 + the millisecond time ([`Inner::now_ms`]) of its latest answer judged
    /// good that showed its head (an observed `eth_blockNumber`); 0 for never. Traffic is the
    /// probe: the spawned schedule skips the idle probe of a provider answering well.
    answered: Vec<AtomicU64>,
    /// Per endpoint: the highest head its good answers showed (0: none).
    answered_head: Vec<AtomicU64>,
    /// Per endpoint: 1 + the millisecond time its highest head was first shown (0: none). Not
    /// the latest answer's: a provider that stalled shows the same head again and again, and
    /// that head is no newer for it.
    answered_head_at: Vec<AtomicU64>,
    /// Per endpoint: its attempts outrun by a hedge since its latest good answer.
    outrun: Vec<AtomicU32>,
    /// Per endpoint: 1 + the millisecond time of its latest sign of life (a good answer of
    /// any kind, a probe answered); 0 for never.
    contact: Vec<AtomicU64>,
    /// Per endpoint: it answered after a spell of [`QUIET`] or more without a sign of life
    /// since its latest probe answered: a restart, possibly onto another chain, may have
    /// fitted in the spell, and only a probe's `eth_chainId` tells. Traffic does not stand
    /// in for its probe until one answers.
    resumed: Vec<AtomicBool>,
    /// Without an expected chain id: per endpoint, the chain id its spawned probe reported
    /// (0: none yet), until the chain is learnt.
    chain_seen: Vec<AtomicU64>,
    /// Without an expected chain id: the chain id a strict majority of the endpoints reported
    /// (0: not learnt yet). Once learnt, every spawned probe verifies it.
    learnt_chain: AtomicU64,
}

impl Monitor {
    /// A monitor of `settings` that has not checked yet: every endpoint is eligible (none,
    /// when fail-closed).
    pub(crate) fn new(settings: Settings) -> Self {
        let n = settings.endpoints.len();
        let bits = (n <= 64).then(|| AtomicU64::new(mask(n, None, &settings.freshness)));
        let inner = Inner {
            settings,
            published: ArcSwapOption::empty(),
            bits,
            checking: tokio::sync::Mutex::new(()),
            chain_pending: (0..n).map(|_| AtomicBool::new(true)).collect(),
            separately: (0..n).map(|_| AtomicBool::new(false)).collect(),
            feed: ArcSwapOption::empty(),
            publishing: Mutex::new(()),
            origin: Instant::now(),
            half_life_ms: AtomicU64::new(evidence::DEFAULT_HALF_LIFE_MS),
            evidence: (0..n).map(|_| Evidence::default()).collect(),
            contradicted: (0..n).map(|_| ArcSwapOption::empty()).collect(),
            schedule: ArcSwapOption::empty(),
            answered: (0..n).map(|_| AtomicU64::new(0)).collect(),
            answered_head: (0..n).map(|_| AtomicU64::new(0)).collect(),
            answered_head_at: (0..n).map(|_| AtomicU64::new(0)).collect(),
            outrun: (0..n).map(|_| AtomicU32::new(0)).collect(),
            contact: (0..n).map(|_| AtomicU64::new(0)).collect(),
            resumed: (0..n).map(|_| AtomicBool::new(false)).collect(),
            chain_seen: (0..n).map(|_| AtomicU64::new(0)).collect(),
            learnt_chain: AtomicU64::new(0),
        };
        Monitor { inner: Arc::new(inner) }
    }

    /// The monitored endpoints, in configured order.
    pub fn endpoints(&self) -> &[Endpoint] {
        &self.inner.settings.endpoints
    }

    /// Probes every provider once and publishes their relative eligibility.
    ///
    /// Each provider gets one `eth_blockNumber` POST (`eth_getBlockByNumber("latest", false)`
    /// with [`head_with_hash`](crate::MonitorBuilder::head_with_hash)), and one `eth_chainId`
    /// POST when an [expected chain id](crate::MonitorBuilder::expected_chain_id) is set, sent
    /// directly with the monitor's own client, never through failnext, all providers at once.
    /// Each call
    /// is bounded by the [probe timeout](crate::MonitorBuilder::probe_timeout); nothing is
    /// retried.
    ///
    /// Calls are serialized: a check that finds another one running waits for it (in call
    /// order), then runs its own probes. Dropping a waiting check starts no probe. Dropping a
    /// running check abandons its probes and publishes nothing.
    ///
    /// # Errors
    ///
    /// | Probes | Eligibility afterwards | Returns |
    /// |---|---|---|
    /// | all succeed | new snapshot | `Ok(())` |
    /// | some succeed | new snapshot; the failed providers are ineligible | [`CheckError`], [`published()`](CheckError::published) is `true` |
    /// | all fail | previous snapshot kept (fail-open before the first one) | [`CheckError`], `published()` is `false` |
    /// | future dropped before publication | previous snapshot kept | nothing (dropped) |
    ///
    /// [`CheckError::failures`] names every provider whose probe failed, and why. An error does
    /// not mean eligibility is unchanged: look at `published()`.
    ///
    /// # Panics
    ///
    /// When polled outside a Tokio runtime with the time driver enabled (the probe timeout is a
    /// Tokio timer; reqwest needs a Tokio runtime too).
    pub async fn check(&self) -> Result<(), CheckError> {
        let _turn = self.inner.checking.lock().await;
        let inner = &*self.inner;
        let settings = &inner.settings;
        // This check's probes supersede the contradictions so far (made visible first).
        inner.take_contradictions(0..settings.endpoints.len());
        let config = ProbeConfig {
            client: &settings.client,
            timeout: settings.probe_timeout,
            expected_chain_id: settings.expected_chain_id,
            head: settings.head,
            stamp: None,
        };
        let probes = settings.endpoints.iter().zip(&settings.urls).zip(&inner.chain_pending).map(
            |((ep, url), pending)| {
                // The chain id is verified at every check (a provider can change chains across a
                // restart between two checks); `pending` only remembers that it was not yet.
                let _ = pending;
                async move {
                    match config.head {
                        // The block's timestamp is read too: heads are judged by the clock.
                        Method::BlockByNumber => probe::endpoint_stamped(config, ep.id(), url).await,
                        _ => probe::endpoint(config, ep.id(), url).await,
                    }
                }
            },
        );
        let reports = futures::future::join_all(probes).await;
        // From here to the store there is no await: a dropped future publishes all or nothing.
        let _publishing = inner.publishing.lock().unwrap_or_else(PoisonError::into_inner);
        let mut outcomes = Vec::with_capacity(reports.len());
        let mut measured = Vec::with_capacity(reports.len());
        for ((report, ep), pending) in reports.into_iter().zip(&settings.endpoints).zip(&inner.chain_pending)
        {
            if report.result.is_err() {
                pending.store(true, Ordering::Relaxed);
            } else if report.chain_verified {
                pending.store(false, Ordering::Relaxed);
            }
            measured.push(round::Measured {
                latency: report.latency,
                hash: report.hash,
                timestamp: report.timestamp,
            });
            outcomes.push((ep.id().clone(), report.result));
        }
        let previous = inner.published.load();
        let held: Vec<bool> =
            (0..settings.endpoints.len()).map(|i| inner.admits(previous.as_deref(), i)).collect();
        let round = round::assemble(
            outcomes,
            settings.max_lag,
            SystemTime::now(),
            previous.as_deref(),
            settings.rules,
            &measured,
            tokio::time::Instant::now(),
        );
        if let Some(snapshot) = &round.snapshot {
            for ((entry, evidence), admitted) in snapshot.entries().iter().zip(&inner.evidence).zip(held) {
                let good = matches!(entry.fitness(), Fitness::Fit { .. } | Fitness::Readmitting { .. });
                if good || admitted {
                    evidence.record(good, inner.now_ms(), inner.half_life());
                }
            }
        } else {
            for (i, admitted) in held.into_iter().enumerate() {
                if admitted {
                    inner.evidence[i].record(false, inner.now_ms(), inner.half_life());
                }
            }
        }
        let published = match round.snapshot {
            Some(snapshot) => {
                inner.publish_and_tell(snapshot, Fresh::All);
                true
            }
            None => false,
        };
        if round.failures.is_empty() {
            Ok(())
        } else {
            Err(CheckError::new(published, settings.endpoints.len(), round.failures))
        }
    }

    /// Whether the endpoint `id` may be used, according to the latest published snapshot.
    ///
    /// Before the first publication every configured endpoint is eligible (fail-open; none is
    /// with [`fail_closed`](crate::MonitorBuilder::fail_closed)). Ids that are not configured
    /// are never eligible. By default published eligibility does not expire: if checks stop or
    /// keep failing completely, the last snapshot stays in force. With a
    /// [`max_age`](crate::MonitorBuilder::max_age), a snapshot older than that answers as if
    /// nothing was published; with a [`grace`](crate::MonitorBuilder::grace), an endpoint whose
    /// last good probe is older than that is ineligible. Only these two options make this call
    /// read the clock.
    ///
    /// Lock-free and without I/O: it never waits for a running check. Two calls may see two
    /// different snapshots when a check publishes between them; to ask several questions of
    /// one comparison, use [`snapshot`](Monitor::snapshot) once. failnext asks once per
    /// endpoint at the start of each request and keeps the answers for that request.
    ///
    /// Eligibility only rules endpoints out. It does not grant permission to fail over, make a
    /// request replayable, or override failnext's cooldown, exclusions or order.
    pub fn eligible(&self, id: &str) -> bool {
        // Every path answers `decide(..).is_eligible()`; the first two without touching the
        // snapshot.
        let inner = &*self.inner;
        let Some(i) = inner.settings.position(id) else { return Fitness::Unknown.is_eligible() };
        let freshness = &inner.settings.freshness;
        if freshness.needs_clock() {
            let published = inner.published.load();
            let now = tokio::time::Instant::now();
            return decide(Some(i), published.as_deref(), freshness, Some(now)).is_eligible()
                && !inner.is_contradicted(i);
        }
        if let Some(bits) = &inner.bits {
            // A contradiction clears its bit at once ([`Inner::contradict`]).
            return bits.load(Ordering::Acquire) & (1 << i) != 0;
        }
        let published = inner.published.load();
        decide(Some(i), published.as_deref(), freshness, None).is_eligible() && !inner.is_contradicted(i)
    }

    /// What this monitor learnt (from its latest snapshot), to restore after a restart; `None`
    /// until a check publishes. See [`MonitorHealth`].
    pub fn health(&self) -> Option<MonitorHealth> {
        self.inner.published.load().as_deref().map(MonitorHealth::of)
    }

    /// Takes over `health` (from [`health`](Monitor::health), before a restart) as if it were
    /// the latest check, when this monitor has not published yet: eligibility, re-admission
    /// progress, probe latencies and last good probes continue (matched by id). Returns how
    /// many providers took their state over: 0 when a check has published already, or none of
    /// the ids is configured here. The next check compares heights as usual.
    pub fn restore_health(&self, health: &MonitorHealth) -> usize {
        let _turn = match self.inner.checking.try_lock() {
            Ok(turn) => turn,
            Err(_) => return 0,
        };
        if self.inner.published.load().is_some() {
            return 0;
        }
        let ids: Vec<&EndpointId> = self.inner.settings.endpoints.iter().map(Endpoint::id).collect();
        match health.snapshot(&ids, self.inner.settings.max_lag) {
            Some((snapshot, restored)) => {
                let _publishing = self.inner.publishing.lock().unwrap_or_else(PoisonError::into_inner);
                self.inner.publish(snapshot, Fresh::None);
                restored
            }
            None => 0,
        }
    }

    /// Passes every published check's probe latencies (each provider that answered, its
    /// [`probe_latency`](crate::SnapshotEntry::probe_latency) average) to a failnext
    /// `Failover` with latency-aware ordering, through `feed`
    /// (`failover.latency_feed()`, which does not keep the `Failover` alive). So a slow
    /// primary's reads move to a faster provider, and come back when its probes are fast
    /// again, without waiting for failnext's own exploring requests. A later call replaces the
    /// feed. Under the [spawned schedule](Monitor::spawn) each probe feeds its own provider's
    /// latency when it publishes.
    ///
    /// A provider whose recent answers are often bad is not fed its bare latency, or being
    /// fast it would keep first place while it fails: when the bad share `s` of its recent
    /// evidence is above 1/10, the latency fed is its probe latency plus
    /// `min(s / (1 - s), 9)` probe timeouts (the expected extra attempts per good answer, each
    /// costed at a probe timeout). See [Paired with failnext](crate#paired-with-failnext).
    ///
    /// The latest snapshot's latencies are fed at once, so a `Failover` paired after the
    /// first probes (a schedule spawned, then [waited for](crate::MonitorHandle::ready)) orders
    /// its first request by them.
    pub fn feed_latency(&self, feed: failnext::LatencyFeed) {
        if let Some(snapshot) = self.snapshot() {
            for (i, entry) in snapshot.entries().iter().enumerate() {
                self.inner.feed_entry(&feed, i, entry);
            }
        }
        self.inner.feed.store(Some(Arc::new(feed)));
    }

    /// One probe of endpoint `i` for the spawned schedule, bounded by `timeout`, published on
    /// its own as soon as it ends; the chain id is verified at every such probe (when one is
    /// expected). Resolves to `None` when the endpoint is fit afterwards, else to the kind of its
    /// unfitness (its fitness and probe error, as a number): the schedule's backoff grows only
    /// while the kind stays the same.
    pub(crate) async fn probe_one(&self, i: usize, timeout: Duration) -> Option<u32> {
        let inner = &*self.inner;
        let settings = &inner.settings;
        let (Some(ep), Some(url)) = (settings.endpoints.get(i), settings.urls.get(i)) else {
            return None;
        };
        inner.take_contradictions(i..i + 1);
        let config = ProbeConfig {
            client: &settings.client,
            timeout,
            expected_chain_id: settings.expected_chain_id.or_else(|| inner.learnt_chain()),
            head: settings.head,
            stamp: None,
        };
        // One HTTP request: the head block (number, hash, timestamp) and the chain id in a
        // batch, or separate calls for a provider found not to answer batches.
        let separately = inner.separately.get(i).is_some_and(|s| s.load(Ordering::Relaxed));
        let (report, refuses) = probe::stamped(config, ep.id(), url, separately).await;
        if let (true, Some(flag)) = (refuses && !separately, inner.separately.get(i)) {
            flag.store(true, Ordering::Relaxed);
        }
        if let Some(chain) = report.chain_seen {
            inner.learn_chain(i, chain);
        }
        inner.publish_probe(i, report)
    }

    /// The shared state, for the schedule and the [`HealthSource`](failnext::HealthSource)
    /// implementation.
    pub(crate) fn inner(&self) -> &Inner {
        &self.inner
    }

    /// The latest published snapshot: heights, the highest one, per-endpoint eligibility and
    /// the time of the check. `None` until a check publishes.
    pub fn snapshot(&self) -> Option<Arc<Snapshot>> {
        self.inner.published.load_full()
    }
}

/// Which entries of a publication are new (probed for it): they feed latencies and count
/// failures.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Fresh {
    /// Every entry: a check.
    All,
    /// The entry at this position: a spawned probe.
    One(usize),
    /// None: a restored snapshot, a contradiction.
    None,
}

impl Fresh {
    fn contains(self, position: usize) -> bool {
        match self {
            Fresh::All => true,
            Fresh::One(i) => i == position,
            Fresh::None => false,
        }
    }
}

/// How many attempts in a row outrun by a hedge (with no good answer between) contradict the
/// view of an admitted provider: one is the tail latency a hedge cuts off (at a p95 hedge, one
/// read in twenty), three in a row a provider that may be hanging.
pub(crate) const OUTRUN_STREAK: u32 = 3;

/// How many other admitted providers let a provider held out wait for its idle re-check
/// ([`Inner::needed`]): the one serving, and one to fail over to.
pub(crate) const SPARES: usize = 2;

/// How long nothing heard of a provider (no good answer, no probe answered) makes its next
/// good answer a resumption ([`Inner::resumes`]): long enough for a restart (a node's process,
/// a listener rebound), which may change its chain. Reads a provider serves in a row come far
/// closer together; a provider that serves now and then resumes at most once per interval.
pub(crate) const QUIET: Duration = Duration::from_millis(200);

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

impl Inner {
    /// Feeds entry `i`'s probe latency (penalised by its bad share) to `feed`, when its probe
    /// answered.
    fn feed_entry(&self, feed: &failnext::LatencyFeed, i: usize, entry: &SnapshotEntry) {
        if let (Some(_), Some(latency)) = (entry.height(), entry.probe_latency()) {
            let share = entry.bad_share().unwrap_or_else(|| self.counts(i).bad_share());
            feed.observe(entry.endpoint().as_str(), penalised(latency, share, self.settings.probe_timeout));
        }
    }

    /// Makes `snapshot` the one readers see: the snapshot first, then its bitmask. The
    /// contradictions pending are applied to it, and their bits cleared again after the store
    /// (a contradiction recorded meanwhile is not undone). Call it holding `publishing`.
    fn publish(&self, snapshot: Snapshot, fresh: Fresh) {
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
    fn overlay(&self, snapshot: Snapshot) -> Snapshot {
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
    fn republish(&self) {
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
    fn is_contradicted(&self, i: usize) -> bool {
        self.contradicted.get(i).is_some_and(|c| c.load().is_some())
    }

    /// Whether `snapshot` (the latest one) admits endpoint `i`, contradictions aside (no time
    /// rules): what counts as "admitted" for the evidence.
    fn admits(&self, snapshot: Option<&Snapshot>, i: usize) -> bool {
        decide(Some(i), snapshot, &self.settings.freshness, None).is_eligible()
    }

    /// Milliseconds since the monitor was built, on the Tokio clock.
    pub(crate) fn now_ms(&self) -> u64 {
        u64::try_from(Instant::now().saturating_duration_since(self.origin).as_millis()).unwrap_or(u64::MAX)
    }

    /// The evidence's half-life, in milliseconds.
    pub(crate) fn half_life(&self) -> u64 {
        self.half_life_ms.load(Ordering::Relaxed)
    }

    /// Sets the evidence's half-life (a spawned schedule: a quarter of its interval).
    pub(crate) fn set_half_life(&self, half_life: Duration) {
        let ms = u64::try_from(half_life.as_millis()).unwrap_or(u64::MAX).max(1);
        self.half_life_ms.store(ms, Ordering::Relaxed);
    }

    /// Endpoint `i`'s evidence now.
    pub(crate) fn counts(&self, i: usize) -> Counts {
        self.evidence.get(i).map_or_else(Counts::default, |e| e.counts(self.now_ms(), self.half_life()))
    }

    /// Records what real traffic showed of endpoint `i` (from [`HealthSource::observe`]
    /// (failnext::HealthSource::observe)): the evidence, and for a head behind or implausible
    /// while the view admits it, a contradiction that makes it ineligible at once. Returns
    /// whether it contradicted the view.
    pub(crate) fn observe(&self, i: usize, observation: Observation) -> bool {
        let Some(evidence) = self.evidence.get(i) else { return false };
        // An attempt outrun by a hedge is the slow tail the hedge is there to cut off, until
        // it happens [`OUTRUN_STREAK`] times without a good answer between: then the provider
        // may be hanging: it counts as bad evidence, and the view is contradicted as for a
        // failure. (The tail is no evidence against the provider.)
        if let (Observation::Outrun { .. }, Some(outrun)) = (observation, self.outrun.get(i)) {
            if outrun.fetch_add(1, Ordering::Relaxed).saturating_add(1) < OUTRUN_STREAK {
                return false;
            }
        }
        let now_ms = self.now_ms();
        evidence.record(!observation.is_bad(), now_ms, self.half_life());
        if let Observation::Answered { head } = observation {
            self.resumes(i, now_ms);
            if let Some(outrun) = self.outrun.get(i) {
                if outrun.load(Ordering::Relaxed) != 0 {
                    outrun.store(0, Ordering::Relaxed);
                }
            }
            if let (Some(head), Some(at), Some(highest), Some(first)) =
                (head, self.answered.get(i), self.answered_head.get(i), self.answered_head_at.get(i))
            {
                at.store(now_ms.saturating_add(1), Ordering::Release);
                if head > highest.load(Ordering::Acquire) {
                    first.store(now_ms.saturating_add(1), Ordering::Release);
                    highest.fetch_max(head, Ordering::AcqRel);
                }
            }
            // A provider held out for a failure that answers well is probed now: it is admitted
            // again within a probe's latency of its first good answer, not an interval later.
            // (A good answer says nothing against a lag, a stale head or its doubted record.)
            if self.held_out(i) && self.held_out_for_failing(i) {
                self.wake(i, Gap::Recheck);
            }
            return false;
        }
        // A failed attempt contradicts the view only when a spawned schedule re-checks the
        // provider soon (its backoff); checks run by hand may come an interval later.
        let rechecked = self.schedule.load().is_some();
        if (observation == Observation::Failed && !rechecked) || self.held_out(i) {
            return false;
        }
        self.contradicted[i].store(Some(Arc::new(observation)));
        if let Some(bits) = &self.bits {
            bits.fetch_and(!(1 << i), Ordering::SeqCst);
        }
        // Published here when no publication is under way; else the one under way applies it,
        // or the provider's probe does before it starts.
        if let Ok(_publishing) = self.publishing.try_lock() {
            self.republish();
        }
        // Its probe runs now, whatever `check_now` allowed lately (a contradiction happens at
        // most once per re-admission), when the reads need it back; otherwise the schedule
        // checks it once they do, or an interval after its last check ([`Inner::needed`]).
        self.wake(i, Gap::Recheck);
        true
    }

    /// Endpoint `i` answered well at `now_ms`: when nothing was heard of it for [`QUIET`] or
    /// more before (since its latest probe answered), it may have restarted unseen, possibly
    /// onto another chain, which its answers do not show. Its probe (which asks `eth_chainId`)
    /// is pulled forward to now: at most once per interval while the view admits it
    /// ([`Gap::Interval`]: the probe moves, it is not added), as evidence against the view
    /// while it holds it out (the reads reach it as their reserve: nothing else was left).
    /// Traffic does not stand in for its probe until one answers.
    fn resumes(&self, i: usize, now_ms: u64) {
        let (Some(contact), Some(resumed)) = (self.contact.get(i), self.resumed.get(i)) else { return };
        let before = contact.swap(now_ms.saturating_add(1), Ordering::AcqRel);
        let quiet_ms = u64::try_from(QUIET.as_millis()).unwrap_or(u64::MAX);
        if before != 0 && now_ms.saturating_sub(before - 1) >= quiet_ms {
            resumed.store(true, Ordering::Release);
            self.wake(i, if self.held_out(i) { Gap::Recheck } else { Gap::Interval });
        }
    }

    /// Endpoint `i`'s probe answered (fit or not, on its chain or not: it said so): a sign of
    /// life, and its chain is known again.
    fn probe_answered(&self, i: usize) {
        if let (Some(contact), Some(resumed)) = (self.contact.get(i), self.resumed.get(i)) {
            contact.fetch_max(self.now_ms().saturating_add(1), Ordering::AcqRel);
            resumed.store(false, Ordering::Release);
        }
    }

    /// Whether reads need endpoint `i`, held out, back soon: fewer than [`SPARES`] other
    /// providers are admitted. While enough others serve, a provider held out is re-checked
    /// at the idle interval, not on its short backoff: the re-checks are paid requests, and
    /// the reads have providers to go to (and still try this one last).
    pub(crate) fn needed(&self, i: usize) -> bool {
        let n = self.evidence.len();
        let admitted = (0..n).filter(|&j| j != i && !self.held_out(j)).count();
        admitted < SPARES
    }

    /// Whether the view holds endpoint `i` out (contradicted, or not admitted by the latest
    /// snapshot; time rules aside): one atomic load with the bitmask (at most 64 endpoints),
    /// which every contradiction clears at once; observed on every judged attempt.
    pub(crate) fn held_out(&self, i: usize) -> bool {
        match &self.bits {
            Some(bits) => bits.load(Ordering::Acquire) & (1 << i) == 0,
            None => self.is_contradicted(i) || !self.admits(self.published.load().as_deref(), i),
        }
    }

    /// Whether endpoint `i`, held out, is held out because it failed (its probe, or an
    /// attempt failed or was outrun): what a good answer disproves.
    fn held_out_for_failing(&self, i: usize) -> bool {
        if let Some(observation) = self.contradicted.get(i).and_then(|c| c.load_full()) {
            return matches!(*observation, Observation::Failed | Observation::Outrun { .. });
        }
        self.published.load().as_deref().is_some_and(|s| s.fitness_at(i) == Fitness::ProbeFailed)
    }

    /// Wakes endpoint `i`'s probe in the spawned schedule (see [`Link::wake`]), unless one was
    /// woken within `gap`; nothing without a schedule.
    ///
    /// [`Link::wake`]: crate::wake::Link::wake
    fn wake(&self, i: usize, gap: Gap) {
        if let Some(link) = &*self.schedule.load() {
            link.wake(i, self.now_ms(), gap);
        }
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
    fn learn_chain(&self, i: usize, chain: u64) {
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

    /// How long ago endpoint `i` last answered well with its head, as real traffic told
    /// ([`Inner::observe`]); `None` when it never did.
    pub(crate) fn answered_ago(&self, i: usize) -> Option<Duration> {
        if self.resumed.get(i)?.load(Ordering::Acquire) {
            return None;
        }
        let at = self.answered.get(i)?.load(Ordering::Acquire).checked_sub(1)?;
        Some(Duration::from_millis(self.now_ms().saturating_sub(at)))
    }

    /// The highest head real traffic showed of endpoint `i`, and when it first showed it
    /// (the chain had reached that head by then; a later answer with the same head says
    /// nothing newer).
    pub(crate) fn answered(&self, i: usize) -> Option<(u64, Instant)> {
        let head = self.answered_head.get(i)?.load(Ordering::Acquire);
        let at = self.answered_head_at.get(i)?.load(Ordering::Acquire).checked_sub(1)?;
        let ago = Duration::from_millis(self.now_ms().saturating_sub(at));
        let now = Instant::now();
        (head != 0).then(|| (head, now.checked_sub(ago).unwrap_or(now)))
    }

    /// Asks the spawned schedule to probe endpoint `i` now (see [`Link::wake`]; the
    /// schedule runs it when the reads need it, [`Inner::needed`]); nothing without a
    /// schedule.
    ///
    /// [`Link::wake`]: crate::wake::Link::wake
    pub(crate) fn check_now(&self, i: usize) {
        self.wake(i, Gap::Interval);
    }

    /// Publishes the spawned schedule's probe of endpoint `i` ([`round::amend`]) and records
    /// the evidence it adds. Returns `None` when the endpoint is fit afterwards (eligible, not
    /// contradicted), else the kind of its unfitness.
    fn publish_probe(&self, i: usize, report: ProbeReport) -> Option<u32> {
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

/// The eligibility rule for one id, with its reason. Pure.
///
/// `position` is the id's place among the configured endpoints (`None`: not configured, so
/// never eligible); `published` is the latest published snapshot (`None`: no check has
/// published yet, so every configured endpoint is eligible, or none when fail-closed).
/// `now` is the time of asking, given when the [`Freshness`] rules need it
/// ([`Freshness::needs_clock`]); without it the time rules are not applied.
///
/// In order: a snapshot older than `max_age` answers as no snapshot; then the snapshot's
/// fitness; then a fit endpoint whose last good probe is older than `grace` is
/// [`Fitness::Unheard`].
fn decide(
    position: Option<usize>,
    published: Option<&Snapshot>,
    freshness: &Freshness,
    now: Option<tokio::time::Instant>,
) -> Fitness {
    let unpublished = if freshness.fail_closed { Fitness::Closed } else { Fitness::Unchecked };
    let (i, snapshot) = match (position, published) {
        (None, _) => return Fitness::Unknown,
        (Some(_), None) => return unpublished,
        (Some(i), Some(snapshot)) => (i, snapshot),
    };
    let Some(now) = now else { return snapshot.fitness_at(i) };
    let older_than =
        |at: tokio::time::Instant, limit: std::time::Duration| now.saturating_duration_since(at) > limit;
    if freshness.max_age.is_some_and(|max_age| older_than(snapshot.checked(), max_age)) {
        return unpublished;
    }
    let fitness = snapshot.fitness_at(i);
    let Some(grace) = freshness.grace else { return fitness };
    let heard =
        snapshot.entries().get(i).and_then(|e| e.last_good()).is_some_and(|at| !older_than(at, grace));
    // A provider the spawned schedule has not probed yet is as before any publication.
    let unheard = fitness.is_eligible() && fitness != Fitness::Unchecked && !heard;
    if unheard { Fitness::Unheard } else { fitness }
}

/// Bit `i` set iff the endpoint at position `i` is eligible by [`decide`] without the time
/// rules, for `n <= 64` endpoints.
fn mask(n: usize, published: Option<&Snapshot>, freshness: &Freshness) -> u64 {
    (0..n)
        .filter(|&i| decide(Some(i), published, freshness, None).is_eligible())
        .fold(0, |mask, i| mask | 1 << i)
}

impl Eligibility for Monitor {
    fn is_eligible(&self, id: &EndpointId) -> bool {
        self.eligible(id)
    }
}

impl fmt::Debug for Monitor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = &*self.inner;
        let settings = &inner.settings;
        f.debug_struct("failnext_blocklag::Monitor")
            .field("endpoints", &settings.endpoints)
            .field("max_lag", &settings.max_lag)
            .field("probe_timeout", &settings.probe_timeout)
            .field("expected_chain_id", &settings.expected_chain_id)
            .field("rules", &settings.rules)
            .field("snapshot", &inner.published.load().as_deref())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check_error::ProbeFailure;
    use crate::probe_error::ProbeError;
    use crate::rpc::Method;

    fn monitor_of(n: usize) -> Monitor {
        let endpoints = (0..n).map(|i| Endpoint::new(format!("e{i}"), "http://127.0.0.1:9/rpc"));
        Monitor::builder(endpoints).max_lag(3).build().unwrap()
    }

    /// Asks for every configured id (as clones, which the address-first lookup finds, and as
    /// fresh strings, which it finds by text) and for unknown ones.
    fn assert_eligible_follows_decide(monitor: &Monitor) {
        let published = monitor.snapshot();
        for (i, ep) in monitor.endpoints().iter().enumerate() {
            let want = decide(Some(i), published.as_deref(), &Freshness::default(), None).is_eligible();
            assert_eq!(monitor.eligible(ep.id()), want, "{}", ep.id());
            let fresh = format!("e{i}");
            assert_eq!(monitor.eligible(&fresh), want, "{fresh}");
        }
        for unknown in ["", "zz", "E0"] {
            assert_eq!(decide(None, published.as_deref(), &Freshness::default(), None), Fitness::Unknown);
            assert!(!monitor.eligible(unknown), "{unknown:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_head_traffic_shows_again_and_again_counts_from_when_it_was_first_shown() {
        let monitor = monitor_of(2);
        let inner = monitor.inner();
        inner.observe(0, Observation::Answered { head: Some(100) });
        let first = tokio::time::Instant::now();
        // A provider that stalled answers the same head for two seconds: no newer for it.
        for _ in 0..20 {
            tokio::time::advance(Duration::from_millis(100)).await;
            inner.observe(0, Observation::Answered { head: Some(100) });
        }
        assert_eq!(inner.answered(0), Some((100, first)));
        assert_eq!(inner.answered_ago(0), Some(Duration::ZERO), "it did answer just now");
        tokio::time::advance(Duration::from_millis(100)).await;
        inner.observe(0, Observation::Answered { head: Some(101) });
        assert_eq!(inner.answered(0), Some((101, tokio::time::Instant::now())));
        assert_eq!(inner.answered(1), None);
    }

    #[tokio::test(start_paused = true)]
    async fn answers_after_a_quiet_spell_stand_in_for_no_probe_until_one_answers() {
        let monitor = monitor_of(2);
        let inner = monitor.inner();
        inner.observe(0, Observation::Answered { head: Some(100) });
        tokio::time::advance(QUIET - Duration::from_millis(1)).await;
        inner.observe(0, Observation::Answered { head: Some(100) });
        assert_eq!(inner.answered_ago(0), Some(Duration::ZERO), "answers closer than QUIET vouch");
        tokio::time::advance(QUIET).await;
        inner.observe(0, Observation::Answered { head: Some(100) });
        assert_eq!(inner.answered_ago(0), None, "it may have restarted in the spell");
        inner.observe(0, Observation::Answered { head: Some(100) });
        assert_eq!(inner.answered_ago(0), None, "still, until its probe answers");
        inner.probe_answered(0);
        inner.observe(0, Observation::Answered { head: Some(100) });
        assert_eq!(inner.answered_ago(0), Some(Duration::ZERO));
    }

    #[test]
    fn eligible_answers_decide_with_and_without_the_bitmask() {
        for n in [4, 64, 65] {
            let monitor = monitor_of(n);
            assert_eq!(monitor.inner.bits.is_some(), n <= 64);
            assert_eq!(decide(Some(n - 1), None, &Freshness::default(), None), Fitness::Unchecked);
            assert_eligible_follows_decide(&monitor);

            let outcomes = monitor.endpoints().iter().enumerate().map(|(i, ep)| {
                let outcome = match i {
                    0 => Err(ProbeFailure::new(ep.id().clone(), Method::BlockNumber, ProbeError::Timeout)),
                    1 => Ok(90),
                    2 => Ok(97),
                    _ => Ok(100),
                };
                (ep.id().clone(), outcome)
            });
            let round = round::assemble(
                outcomes.collect(),
                3,
                SystemTime::UNIX_EPOCH,
                None,
                round::Rules::default(),
                &[],
                tokio::time::Instant::now(),
            );
            monitor.inner.publish(round.snapshot.unwrap(), Fresh::All);
            let published = monitor.snapshot().unwrap();
            assert_eq!(decide(Some(0), Some(&published), &Freshness::default(), None), Fitness::ProbeFailed);
            assert_eq!(
                decide(Some(1), Some(&published), &Freshness::default(), None),
                Fitness::Lagging { behind: 10 }
            );
            assert_eq!(
                decide(Some(2), Some(&published), &Freshness::default(), None),
                Fitness::Fit { behind: 3 }
            );
            assert_eq!(
                decide(Some(n - 1), Some(&published), &Freshness::default(), None),
                Fitness::Fit { behind: 0 }
            );
            assert_eligible_follows_decide(&monitor);
        }
    }

    #[test]
    fn a_provider_often_bad_is_fed_a_latency_penalised_by_probe_timeouts() {
        use std::time::Duration;
        let (ms, timeout) = (Duration::from_millis, Duration::from_secs(1));
        assert_eq!(penalised(ms(10), 0.0, timeout), ms(10));
        assert_eq!(penalised(ms(10), PENALTY_BAD_SHARE, timeout), ms(10));
        // Half bad: one extra attempt per good answer, costed at a timeout.
        assert_eq!(penalised(ms(10), 0.5, timeout), ms(1_010));
        assert!(penalised(ms(10), 0.2, timeout) > ms(200), "behind a healthy 200 ms provider");
        assert_eq!(penalised(ms(10), 1.0, timeout), ms(9_010));
        assert_eq!(penalised(ms(10), 0.99, timeout), ms(9_010));
    }

    #[tokio::test(start_paused = true)]
    async fn the_time_rules_apply_only_with_a_clock_and_in_order() {
        use std::time::Duration;
        use tokio::time::Instant;

        let monitor = monitor_of(2);
        let ids = monitor.endpoints().iter().map(|ep| ep.id().clone());
        let outcomes = ids.zip([Ok(100), Ok(90)]).collect();
        let snapshot = round::assemble(
            outcomes,
            3,
            SystemTime::UNIX_EPOCH,
            None,
            round::Rules::default(),
            &[],
            Instant::now(),
        )
        .snapshot
        .unwrap();
        let secs = Duration::from_secs;
        let rules = |fail_closed, grace: Option<u64>, max_age: Option<u64>| Freshness {
            fail_closed,
            grace: grace.map(secs),
            max_age: max_age.map(secs),
        };
        let at = |after: u64| Some(Instant::now() + secs(after));
        let fit = Fitness::Fit { behind: 0 };
        let lagging = Fitness::Lagging { behind: 10 };
        let s = Some(&snapshot);

        // Without `now`, no time rule: what the bitmask stores.
        assert_eq!(decide(Some(0), s, &rules(true, Some(1), Some(1)), None), fit);
        assert_eq!(decide(Some(0), None, &rules(true, None, None), None), Fitness::Closed);
        // Grace: inclusive, only turns fit into unheard.
        assert_eq!(decide(Some(0), s, &rules(false, Some(5), None), at(5)), fit);
        assert_eq!(decide(Some(0), s, &rules(false, Some(5), None), at(6)), Fitness::Unheard);
        assert_eq!(decide(Some(1), s, &rules(false, Some(5), None), at(6)), lagging);
        // Max age: inclusive, then the unpublished rule, before grace.
        assert_eq!(decide(Some(1), s, &rules(false, None, Some(5)), at(5)), lagging);
        assert_eq!(decide(Some(1), s, &rules(false, None, Some(5)), at(6)), Fitness::Unchecked);
        assert_eq!(decide(Some(0), s, &rules(true, Some(1), Some(5)), at(6)), Fitness::Closed);
        assert_eq!(decide(None, s, &rules(false, Some(1), Some(5)), at(6)), Fitness::Unknown);
    }
}

//! `Monitor`: serialized checks that publish snapshots, and lock-free eligibility reads
//! answered by one pure rule ([`decide`]).

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwapOption;
use failnext::{Eligibility, Endpoint, EndpointId, Observation};
use tokio::time::Instant;

use crate::judging::evidence::{self, Evidence};
use crate::judging::fitness::Fitness;
use crate::judging::round;
use crate::judging::snapshot::Snapshot;
use crate::probe::check_error::CheckError;
use crate::probe::exchange::{self, ProbeConfig};
use crate::probe::rpc::Method;
use crate::runtime::persist::MonitorHealth;
use crate::runtime::settings::{Freshness, Settings};

mod publish;
pub(crate) mod traffic;

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
    pub(crate) schedule: ArcSwapOption<crate::runtime::wake::Link>,
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
    /// Per endpoint: this process's own traffic gave it a reason to check the provider's chain
    /// now (an answer far ahead, a resumption): with a fleet, its next probe runs here even
    /// while another process holds its lease (and is announced), since the holder may have
    /// seen nothing of it.
    pub(crate) doubted: Vec<AtomicBool>,
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
            doubted: (0..n).map(|_| AtomicBool::new(false)).collect(),
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
                        Method::BlockByNumber => exchange::endpoint_stamped(config, ep.id(), url).await,
                        _ => exchange::endpoint(config, ep.id(), url).await,
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
        #[cfg(feature = "redis")]
        let held = match &settings.fleet {
            Some(fleet) => {
                let name = crate::runtime::fleet::name(ep.id());
                let doubted = inner.doubted.get(i).is_some_and(|d| d.swap(false, Ordering::AcqRel));
                match fleet.hold(&name, crate::runtime::fleet::lease_for(timeout)).await {
                    // Another process probes it: its latest probe is this one, unless this
                    // process's own traffic doubts it (probed here then, and announced).
                    Some(false) if !doubted => {
                        let note = fleet.read(&name).await.flatten()?;
                        let report = crate::runtime::fleet::decode(&note, ep.id())?;
                        if let Some(chain) = report.chain_seen {
                            inner.learn_chain(i, chain);
                        }
                        return inner.publish_probe(i, report);
                    }
                    Some(_) => Some((fleet, name)),
                    // Redis unavailable: probed here, as without a fleet.
                    None => None,
                }
            }
            None => None,
        };
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
        let (report, refuses) = exchange::stamped(config, ep.id(), url, separately).await;
        if let (true, Some(flag)) = (refuses && !separately, inner.separately.get(i)) {
            flag.store(true, Ordering::Relaxed);
        }
        if let Some(chain) = report.chain_seen {
            inner.learn_chain(i, chain);
        }
        #[cfg(feature = "redis")]
        if let Some((fleet, name)) = held {
            let note = crate::runtime::fleet::encode(&report);
            fleet.announce(&name, &note, crate::runtime::fleet::lease_for(timeout)).await;
        }
        inner.publish_probe(i, report)
    }

    /// A note another process of the fleet announced (`name`, `note`), taken at once: a
    /// provider's probe, as this monitor's own probe of it; a provider's new head seen in
    /// traffic, as this monitor's own traffic's.
    #[cfg(feature = "redis")]
    pub(crate) fn relayed(&self, name: &str, note: &str) {
        let inner = &*self.inner;
        let endpoints = &inner.settings.endpoints;
        if let Some(i) = endpoints.iter().position(|ep| crate::runtime::fleet::head_name(ep.id()) == name) {
            // A head another process saw in traffic: as if seen here, but never one far ahead
            // (a value in Redis is not trusted beyond what this monitor's own traffic is).
            if let Ok(head) = note.parse::<u64>() {
                if !inner.far_ahead(head) {
                    inner.raise_head(i, head, inner.now_ms());
                }
            }
            return;
        }
        let Some(i) = endpoints.iter().position(|ep| crate::runtime::fleet::name(ep.id()) == name) else {
            return;
        };
        let Some(report) = crate::runtime::fleet::decode(note, endpoints[i].id()) else { return };
        if let Some(chain) = report.chain_seen {
            inner.learn_chain(i, chain);
        }
        let _ = inner.publish_probe(i, report);
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

impl Inner {
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
    use super::publish::{PENALTY_BAD_SHARE, penalised};
    use super::traffic::QUIET;
    use super::*;
    use crate::probe::check_error::ProbeFailure;
    use crate::probe::probe_error::ProbeError;
    use crate::probe::rpc::Method;

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

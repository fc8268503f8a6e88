//! `Monitor`: serialized checks that publish snapshots, and lock-free eligibility reads.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use arc_swap::ArcSwapOption;
use failnext::{Eligibility, Endpoint, EndpointId};

use crate::check_error::CheckError;
use crate::probe::{self, ProbeConfig};
use crate::settings::Settings;
use crate::snapshot::{self, Snapshot};

/// Watches the block heights of a fixed set of providers and says which ones are close enough
/// to the highest to be used.
///
/// [`check`](Monitor::check) probes every provider and publishes a [`Snapshot`];
/// [`eligible`](Monitor::eligible) answers from the latest one without I/O. Give a clone to
/// [`failnext::FailoverBuilder::eligible`] (the monitor implements [`Eligibility`]) and call
/// `check` on your own schedule: there is no background task.
///
/// Cloning is cheap; clones share the snapshot and the check queue. See the
/// [crate documentation](crate) for the rules and a complete example.
#[derive(Clone)]
pub struct Monitor {
    inner: Arc<Inner>,
}

struct Inner {
    settings: Settings,
    published: ArcSwapOption<Snapshot>,
    /// Bit `i` is the published eligibility of endpoint `i`, stored right after each snapshot,
    /// for monitors of at most 64 endpoints: one atomic load answers `eligible()`.
    bits: Option<AtomicU64>,
    /// Serializes checks. Held across the probes; never touched by readers.
    checking: tokio::sync::Mutex<()>,
}

impl Monitor {
    /// A monitor of `settings` that has not checked yet: every endpoint is eligible.
    pub(crate) fn new(settings: Settings) -> Self {
        let n = settings.endpoints.len();
        let bits = (n <= 64).then(|| AtomicU64::new(all_ones(n)));
        let inner = Inner {
            settings,
            published: ArcSwapOption::empty(),
            bits,
            checking: tokio::sync::Mutex::new(()),
        };
        Monitor { inner: Arc::new(inner) }
    }

    /// The monitored endpoints, in configured order.
    pub fn endpoints(&self) -> &[Endpoint] {
        &self.inner.settings.endpoints
    }

    /// Probes every provider once and publishes their relative eligibility.
    ///
    /// Each provider gets one `eth_blockNumber` POST (and one `eth_chainId` POST when an
    /// [expected chain id](crate::MonitorBuilder::expected_chain_id) is set), sent directly
    /// with the monitor's own client, never through failnext, all providers at once. Each call
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
        let config = ProbeConfig {
            client: &settings.client,
            timeout: settings.probe_timeout,
            expected_chain_id: settings.expected_chain_id,
        };
        let probes =
            settings.endpoints.iter().zip(&settings.urls).map(|(ep, url)| async move {
                (ep.id().clone(), probe::endpoint(config, ep.id(), url).await)
            });
        let outcomes = futures::future::join_all(probes).await;
        // From here to the store there is no await: a dropped future publishes all or nothing.
        let round = snapshot::assemble(outcomes, settings.max_lag, SystemTime::now());
        let published = match round.snapshot {
            Some(snapshot) => {
                if let Some(bits) = &inner.bits {
                    let mask = settings
                        .endpoints
                        .iter()
                        .enumerate()
                        .filter(|(_, ep)| snapshot.is_eligible(ep.id()))
                        .fold(0u64, |mask, (i, _)| mask | 1 << i);
                    inner.published.store(Some(Arc::new(snapshot)));
                    bits.store(mask, Ordering::Release);
                } else {
                    inner.published.store(Some(Arc::new(snapshot)));
                }
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
    /// Before the first publication every configured endpoint is eligible (fail-open). Ids
    /// that are not configured are never eligible. Published eligibility does not expire: if
    /// checks stop or keep failing completely, the last snapshot stays in force.
    ///
    /// Lock-free and without I/O: it never waits for a running check. Two calls may see two
    /// different snapshots when a check publishes between them; to ask several questions of
    /// one comparison, use [`snapshot`](Monitor::snapshot) once. failnext asks once per
    /// endpoint at the start of each request and keeps the answers for that request.
    ///
    /// Eligibility only rules endpoints out. It does not grant permission to fail over, make a
    /// request replayable, or override failnext's cooldown, exclusions or order.
    pub fn eligible(&self, id: &str) -> bool {
        let inner = &*self.inner;
        let Some(i) = inner.settings.position(id) else { return false };
        if let Some(bits) = &inner.bits {
            return bits.load(Ordering::Acquire) & (1 << i) != 0;
        }
        match &*inner.published.load() {
            Some(snapshot) => snapshot.is_eligible(id),
            None => true,
        }
    }

    /// The latest published snapshot: heights, the highest one, per-endpoint eligibility and
    /// the time of the check. `None` until a check publishes.
    pub fn snapshot(&self) -> Option<Arc<Snapshot>> {
        self.inner.published.load_full()
    }
}

/// A mask with the low `n` bits set (n <= 64).
fn all_ones(n: usize) -> u64 {
    if n >= 64 { u64::MAX } else { (1u64 << n) - 1 }
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
            .field("snapshot", &inner.published.load().as_deref())
            .finish_non_exhaustive()
    }
}

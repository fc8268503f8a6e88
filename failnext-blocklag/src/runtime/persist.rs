//! What the monitor learnt, kept across a restart: [`MonitorHealth`].

use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use crate::judging::entry::SnapshotEntry;
use crate::judging::fitness::Fitness;
use crate::judging::snapshot::Snapshot;

/// What a [`Monitor`](crate::Monitor) learnt, to restore into the monitor of a restarted
/// process ([`Monitor::health`](crate::Monitor::health),
/// [`Monitor::restore_health`](crate::Monitor::restore_health)): per provider its eligibility,
/// its re-admission progress (consecutive good checks), its probe latency average, its last
/// height and when its probe last succeeded, as a wall-clock time. With the feature `serde` it
/// serializes.
///
/// Restored, a provider that was ineligible stays so until it has had the
/// [`readmit_after`](crate::MonitorBuilder::readmit_after) good checks in a row it still
/// needed; one that was eligible is eligible until the first check says otherwise.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct MonitorHealth {
    taken_at: SystemTime,
    providers: Vec<ProviderHealth>,
}

/// One provider's part of a [`MonitorHealth`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ProviderHealth {
    id: String,
    eligible: bool,
    height: Option<u64>,
    consecutive_good_checks: u32,
    probe_latency: Option<Duration>,
    last_good: Option<SystemTime>,
}

impl MonitorHealth {
    /// When it was taken.
    pub fn taken_at(&self) -> SystemTime {
        self.taken_at
    }

    /// Each provider's part, in configured order.
    pub fn providers(&self) -> &[ProviderHealth] {
        &self.providers
    }

    /// What `snapshot` says, taken now.
    pub(crate) fn of(snapshot: &Snapshot) -> MonitorHealth {
        let (now, wall) = (Instant::now(), SystemTime::now());
        let providers = snapshot
            .entries()
            .iter()
            .map(|e| ProviderHealth {
                id: e.endpoint().to_string(),
                eligible: e.is_eligible(),
                height: e.height(),
                consecutive_good_checks: e.consecutive_good_checks(),
                probe_latency: e.probe_latency(),
                last_good: e.last_good().map(|at| wall - now.saturating_duration_since(at)),
            })
            .collect();
        MonitorHealth { taken_at: wall, providers }
    }

    /// A snapshot of `ids` (configured order) as this health says, for a monitor that has not
    /// published yet; providers it does not name are left out (`None`: nothing to restore).
    pub(crate) fn snapshot(&self, ids: &[&failnext::EndpointId], max_lag: u64) -> Option<(Snapshot, usize)> {
        let (now, wall) = (Instant::now(), SystemTime::now());
        let highest = self.providers.iter().filter_map(|p| p.height).max().unwrap_or(0);
        let mut restored = 0;
        let entries: Vec<SnapshotEntry> = ids
            .iter()
            .map(|id| match self.providers.iter().find(|p| p.id == id.as_str()) {
                Some(p) => {
                    restored += 1;
                    let fitness = if p.eligible {
                        Fitness::Fit { behind: 0 }
                    } else {
                        Fitness::Readmitting { behind: 0, good: p.consecutive_good_checks }
                    };
                    let last_good = p.last_good.map(|at| {
                        let ago = wall.duration_since(at).unwrap_or(Duration::ZERO);
                        now.checked_sub(ago).unwrap_or(now)
                    });
                    SnapshotEntry::probed((*id).clone(), p.height.unwrap_or(highest), fitness)
                        .with_good_checks(p.consecutive_good_checks)
                        .with_probe_health(p.probe_latency, None)
                        .last_good_at(last_good)
                }
                // Not in the saved health: as before any check (eligible, fail-open).
                None => SnapshotEntry::probed((*id).clone(), highest, Fitness::Fit { behind: 0 }),
            })
            .collect();
        (restored > 0)
            .then(|| (Snapshot::new(entries, highest, max_lag, self.taken_at).checked_at(now), restored))
    }
}

impl ProviderHealth {
    /// The provider's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether it was eligible.
    pub fn eligible(&self) -> bool {
        self.eligible
    }

    /// Its consecutive good checks (its re-admission progress when it was ineligible).
    pub fn consecutive_good_checks(&self) -> u32 {
        self.consecutive_good_checks
    }

    /// Its probe latency average.
    pub fn probe_latency(&self) -> Option<Duration> {
        self.probe_latency
    }
}

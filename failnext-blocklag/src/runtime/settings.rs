//! `Settings`: the validated configuration a [`Monitor`](crate::Monitor) runs with.
//!
//! [`MonitorBuilder::build`](crate::MonitorBuilder::build) makes it once; the monitor only
//! reads it. Keeping it apart lets both depend on it without depending on each other.

use std::time::Duration;

use failnext::Endpoint;
use reqwest::Url;

/// Everything a monitor was configured with, after validation.
pub(crate) struct Settings {
    /// The monitored endpoints, in configured order.
    pub(crate) endpoints: Vec<Endpoint>,
    /// The probe destination of each endpoint, same order. These validated URLs keep any
    /// userinfo, which reqwest sends as Basic credentials.
    pub(crate) urls: Vec<Url>,
    /// The inclusive lag threshold, in blocks.
    pub(crate) max_lag: u64,
    /// Sends the probes, and nothing else.
    pub(crate) client: reqwest::Client,
    /// Bounds each probe call.
    pub(crate) probe_timeout: Duration,
    /// Whether `probe_timeout` was set (else the spawned schedule's follows its interval).
    pub(crate) probe_timeout_set: bool,
    /// When set, checks verify each provider's chain id (at first, and after a failure).
    pub(crate) expected_chain_id: Option<u64>,
    /// The call that reads each provider's head: `eth_blockNumber`, or
    /// `eth_getBlockByNumber` with head-with-hash.
    pub(crate) head: crate::probe::rpc::Method,
    /// The rules carried across checks (re-admission, reference height).
    pub(crate) rules: crate::judging::round::Rules,
    /// How unknown and old answers count (fail-closed, grace, maximum age).
    pub(crate) freshness: Freshness,
    /// Told of each [`MonitorEvent`](crate::MonitorEvent).
    pub(crate) on_event: Option<crate::runtime::event::Hook>,
    /// The fleet whose one prober per provider this monitor may be.
    #[cfg(feature = "redis")]
    pub(crate) fleet: Option<failnext::fleet::Fleet>,
}

/// The "unknown is not healthy" rules: what eligibility is before the first publication, and
/// when published answers are too old to count.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Freshness {
    /// Before the first publication (and when the snapshot is older than `max_age`), no
    /// endpoint is eligible, instead of all of them.
    pub(crate) fail_closed: bool,
    /// An endpoint whose last good probe is older than this is ineligible.
    pub(crate) grace: Option<Duration>,
    /// A snapshot older than this no longer decides: the unpublished rule does.
    pub(crate) max_age: Option<Duration>,
}

impl Freshness {
    /// Whether eligibility depends on the time of asking, so `eligible()` must read the clock.
    pub(crate) fn needs_clock(&self) -> bool {
        self.grace.is_some() || self.max_age.is_some()
    }
}

impl Settings {
    /// The probe timeout of a schedule spawned with `interval`: the one set, else
    /// `min(5 s, interval)`.
    pub(crate) fn spawned_timeout(&self, interval: Duration) -> Duration {
        if self.probe_timeout_set { self.probe_timeout } else { self.probe_timeout.min(interval) }
    }

    /// The position of `id` among the configured endpoints. failnext asks with clones of the
    /// ids the monitor was built from, so comparing addresses first usually finds it without
    /// comparing any text.
    pub(crate) fn position(&self, id: &str) -> Option<usize> {
        let ids = || self.endpoints.iter().map(|ep| ep.id().as_str());
        ids().position(|known| std::ptr::eq(known, id)).or_else(|| ids().position(|known| known == id))
    }
}

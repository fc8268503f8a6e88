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
    /// When set, checks verify each provider's chain id (at first, and after a failure).
    pub(crate) expected_chain_id: Option<u64>,
    /// The rules carried across checks (re-admission, reference height).
    pub(crate) rules: crate::round::Rules,
}

impl Settings {
    /// The position of `id` among the configured endpoints. failnext asks with clones of the
    /// ids the monitor was built from, so comparing addresses first usually finds it without
    /// comparing any text.
    pub(crate) fn position(&self, id: &str) -> Option<usize> {
        let ids = || self.endpoints.iter().map(|ep| ep.id().as_str());
        ids().position(|known| std::ptr::eq(known, id)).or_else(|| ids().position(|known| known == id))
    }
}

//! The monitor as failnext's [`HealthSource`]: eligibility, the reference head, latencies,
//! and the evidence and check requests failnext sends back.

use failnext::{EndpointId, Head, HealthSource, LatencyFeed, Observation};

use crate::runtime::monitor::Monitor;
use crate::runtime::schedule::MonitorHandle;

/// Pairs the monitor with a `Failover` both ways, through
/// [`FailoverBuilder::monitor`](failnext::FailoverBuilder::monitor): see
/// [Paired with failnext](crate#paired-with-failnext) for the rules.
///
/// - [`eligible`](HealthSource::eligible) is [`Monitor::eligible`];
/// - [`head`](HealthSource::head) is the latest snapshot's reference head: its
///   [height](crate::Snapshot::highest), [when it was last reported](crate::Snapshot::reference_seen),
///   the learned [block time](crate::judging::snapshot::Snapshot::block_time) when there is one, and `max_lag` as
///   the tolerance; `None` before a probe published (and after
///   [`restore_health`](Monitor::restore_health), until one does);
/// - [`pair`](HealthSource::pair) is [`Monitor::feed_latency`];
/// - [`observe`](HealthSource::observe) adds the answer to the endpoint's evidence (lock-free),
///   and a head [`Behind`](Observation::Behind) or [`Implausible`](Observation::Implausible)
///   of an endpoint the monitor admits makes it ineligible at once, and probes it;
/// - [`check_now`](HealthSource::check_now) wakes the endpoint's probe of the
///   [spawned schedule](Monitor::spawn), at most once per endpoint per interval; without a
///   spawned schedule it does nothing.
///
/// Ids the monitor does not know are ignored.
impl HealthSource for Monitor {
    fn eligible(&self, id: &EndpointId) -> bool {
        Monitor::eligible(self, id)
    }

    /// An endpoint whose latest probe found it on another chain
    /// ([`ProbeError::WrongChain`](crate::ProbeError::WrongChain)) serves nothing: not even
    /// failnext's reserve.
    fn never(&self, id: &EndpointId) -> bool {
        let Some(snapshot) = self.snapshot() else { return false };
        snapshot
            .entry(id)
            .and_then(|e| e.error())
            .is_some_and(|e| e.kind() == crate::probe::probe_error::ProbeErrorKind::WrongChain)
    }

    fn head(&self) -> Option<Head> {
        let snapshot = self.snapshot()?;
        let timing = snapshot.head()?;
        let head = Head::new(snapshot.highest(), snapshot.reference_seen()).tolerance(snapshot.max_lag());
        Some(match timing.block_time {
            Some(block_time) => head.block_time(block_time),
            None => head,
        })
    }

    /// The endpoint's head now: the newest of its probe's and of its good answers' heads,
    /// each projected forward by the learned block time since it was seen.
    fn head_of(&self, id: &EndpointId) -> Option<u64> {
        projected_head(self, id)
    }

    /// When the endpoint's latest probe passed.
    fn last_good(&self, id: &EndpointId) -> Option<tokio::time::Instant> {
        self.snapshot()?.entry(id)?.last_good()
    }

    fn pair(&self, feed: LatencyFeed) {
        self.feed_latency(feed);
    }

    fn observe(&self, id: &EndpointId, observation: Observation) {
        if let Some(i) = self.inner().settings.position(id) {
            self.inner().observe(i, observation);
        }
    }

    fn check_now(&self, id: &EndpointId) {
        if let Some(i) = self.inner().settings.position(id) {
            self.inner().check_now(i);
        }
    }
}

/// A [spawned](Monitor::spawn) schedule's handle is its monitor as a [`HealthSource`], so that
/// whoever pairs with it owns the schedule too: give the handle to
/// [`FailoverBuilder::monitor`](failnext::FailoverBuilder::monitor) (or the alloy transport's
/// `monitor`) and the probes run as long as the `Failover` does; dropping the last clone of
/// the `Failover` drops the handle, which stops the schedule.
///
/// ```no_run
/// use std::time::Duration;
/// use failnext::{Endpoint, Failover};
/// use failnext_blocklag::Monitor;
///
/// # #[allow(dead_code)]
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let endpoints = [
///     Endpoint::new("primary", "http://127.0.0.1:8545"),
///     Endpoint::new("backup", "http://127.0.0.1:8546"),
/// ];
/// let monitor = Monitor::builder(endpoints.clone()).build()?;
/// let failover = Failover::builder(endpoints).monitor(monitor.spawn(Duration::from_secs(2))).build()?;
/// # drop(failover); Ok(()) }
/// ```
impl HealthSource for MonitorHandle {
    fn eligible(&self, id: &EndpointId) -> bool {
        self.monitor.eligible(id)
    }
    fn never(&self, id: &EndpointId) -> bool {
        HealthSource::never(&self.monitor, id)
    }
    fn head(&self) -> Option<Head> {
        HealthSource::head(&self.monitor)
    }
    fn head_of(&self, id: &EndpointId) -> Option<u64> {
        HealthSource::head_of(&self.monitor, id)
    }
    fn last_good(&self, id: &EndpointId) -> Option<tokio::time::Instant> {
        HealthSource::last_good(&self.monitor, id)
    }
    fn pair(&self, feed: LatencyFeed) {
        self.monitor.feed_latency(feed);
    }
    fn observe(&self, id: &EndpointId, observation: Observation) {
        HealthSource::observe(&self.monitor, id, observation);
    }
    fn check_now(&self, id: &EndpointId) {
        HealthSource::check_now(&self.monitor, id);
    }
}

/// Endpoint `id`'s head now, as [`HealthSource::head_of`] gives it: its probe's height and the
/// highest head its good answers showed, each credited with the blocks the chain made since
/// (by the snapshot's learned block time; none without one), the higher of the two.
fn projected_head(monitor: &Monitor, id: &EndpointId) -> Option<u64> {
    let snapshot = monitor.snapshot();
    let inner = monitor.inner();
    let i = inner.settings.position(id)?;
    let block_time = snapshot.as_deref().and_then(crate::judging::snapshot::Snapshot::block_time);
    let now = tokio::time::Instant::now();
    let probed = snapshot.as_deref().and_then(|s| {
        let entry = s.entries().get(i)?;
        Some((entry.height()?, entry.checked()))
    });
    crate::judging::clock::newest_head(probed, inner.answered(i), now, block_time)
}

//! What failnext did for each read, recorded as it happens: the eligibility answers it got,
//! the attempts it dispatched and the hedges it sent, in the read's own log.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use failnext::{Eligibility, EndpointId};
use failnext_blocklag::Monitor;
use http::Extensions;
use reqwest::{Request, Response};
use reqwest_middleware::{Middleware, Next};

use super::judge::{Asked, Dispatches};
use crate::soak::record::Endpoints;

tokio::task_local! {
    pub(super) static READ: Arc<ReadLog>;
}

/// What failnext did for one read: the eligibility answers it got and where it dispatched.
#[derive(Debug, Default)]
pub(super) struct ReadLog {
    pub(super) inner: Mutex<(Asked, Dispatches)>,
    /// Hedges failnext sent (its `Event::Hedge`s).
    pub(super) hedges: std::sync::atomic::AtomicU32,
}

impl ReadLog {
    /// The read in scope sent a hedge.
    pub(super) fn hedged() {
        let _ = READ.try_with(|log| log.hedges.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    }

    pub(super) fn with(f: impl FnOnce(&mut (Asked, Dispatches))) {
        let _ = READ.try_with(|log| f(&mut log.inner.lock().unwrap_or_else(|p| p.into_inner())));
    }
}

/// The monitor as eligibility, recording each answer in the read's log.
pub(super) struct Recorded {
    pub(super) monitor: Monitor,
    pub(super) endpoints: Endpoints,
}

impl Eligibility for Recorded {
    fn is_eligible(&self, id: &EndpointId) -> bool {
        let answer = self.monitor.eligible(id);
        let i = self.endpoints.by_id(id.as_str());
        ReadLog::with(|l| l.0.push((i, answer)));
        answer
    }
}

/// After `Failover`: records each attempt's endpoint and instant, before it is sent.
pub(super) struct Dispatched {
    pub(super) endpoints: Endpoints,
}

#[async_trait::async_trait]
impl Middleware for Dispatched {
    async fn handle(
        &self,
        req: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        let i = self.endpoints.by_port(req.url().port());
        ReadLog::with(|l| l.1.push((i, Instant::now())));
        next.run(req, extensions).await
    }
}

/// An alloy read's attempts and hedges, from the transport's events (its requests go through
/// its own client, which no middleware of the measure's wraps): each attempt at the instant
/// it started.
pub(super) fn record_event(endpoints: &Endpoints, event: &failnext::Event<'_>) {
    match event {
        failnext::Event::Attempt { endpoint, elapsed, .. } => {
            let i = endpoints.by_id(endpoint.as_str());
            let at = Instant::now().checked_sub(*elapsed).unwrap_or_else(Instant::now);
            ReadLog::with(|l| l.1.push((i, at)));
        }
        failnext::Event::Hedge { .. } => ReadLog::hedged(),
        _ => {}
    }
}

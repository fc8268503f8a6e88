//! `Failover`: the middleware and its handles. A request runs in `run` (the loop), one
//! attempt in `attempt`; the decisions live in `session` (what next), `select`, `permission`,
//! `replay` and `judge`.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::time::Duration;

use http::Extensions;
use reqwest::{Request, Response};
use reqwest_middleware::{Middleware, Next};

use crate::flow::fast;
use crate::flow::run::{begin, ended, run, served};
use crate::flow::shared::Shared;
use crate::flow::slot::position;
use crate::judging::scope::RequestScope;
use crate::request::endpoint::Endpoint;
use crate::request::options::RequestOptions;

/// The failover middleware: sends each request to the first usable endpoint of an ordered
/// set, and to the next one only when that is safe.
///
/// Add it to a `reqwest_middleware::ClientBuilder`. Middlewares added before it run once per
/// request; those added after it run once per attempt. Cloning is cheap and clones share
/// cooldown state. See the [crate documentation](crate) for the rules.
///
/// ```
/// use failnext::{Endpoint, Failover};
///
/// let failover = Failover::builder([
///     Endpoint::new("primary", "http://127.0.0.1:8545/rpc"),
///     Endpoint::new("backup", "http://127.0.0.1:8546/rpc"),
/// ])
/// .build()?;
/// let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
///     .with(failover)
///     .build();
/// # drop(client);
/// # Ok::<(), failnext::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct Failover {
    pub(crate) shared: Arc<Shared>,
}

// ===== impl Failover =====

impl Failover {
    pub(crate) fn from_shared(shared: Shared) -> Failover {
        let shared = Arc::new(shared);
        #[cfg(feature = "redis")]
        if let Some(link) = &shared.fleet {
            let _ = link.me.set(Arc::downgrade(&shared));
        }
        Failover { shared }
    }

    #[cfg(test)]
    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    /// The fleet this failover is one process of (feature `redis`; the alloy transport shares
    /// what it learns with it).
    #[cfg(all(feature = "redis", feature = "alloy"))]
    pub(crate) fn shared_fleet(&self) -> Option<crate::fleet::Fleet> {
        self.shared.fleet.as_ref().map(|link| link.fleet.clone())
    }

    /// The configured endpoints, in priority order.
    pub fn endpoints(&self) -> &[Endpoint] {
        &self.shared.endpoints
    }

    /// Whether the endpoint `id` is cooling down now (its breaker is open), so requests skip
    /// it, except the breaker's last resort. `false` when half-open, for an unknown id and when
    /// cooldown is disabled. Takes a short internal lock; safe to call from hooks.
    pub fn is_cooling_down(&self, id: &str) -> bool {
        let slots = &self.shared.slots;
        position(slots, id).is_some_and(|i| slots[i].health.cooling_until().is_some())
    }
}

impl fmt::Debug for Failover {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shared = &*self.shared;
        f.debug_struct("Failover")
            .field("endpoints", &shared.endpoints)
            .field("eligible", &shared.eligible.as_ref().map(|_| "<fn>"))
            .field("permission_policy", &shared.policy.as_ref().map(|_| "<fn>"))
            .field("additional_trigger_status_codes", &shared.triggers)
            .field("classifier", &shared.classifier.as_ref().map(|_| "<classifier>"))
            .field("cooldown", &shared.cooldown)
            .field("attempt_timeout", &shared.attempt_timeout)
            .field("on_event", &shared.events.has_hook().then_some("<fn>"))
            .finish()
    }
}

/// Written out as `async_trait` expands it, so that what is decided before the first attempt
/// is decided before the request's future is made, and the future `reqwest-middleware` boxes
/// is the fast path's own (small) or the session's, not one wrapped around the other.
impl Middleware for Failover {
    fn handle<'life0, 'life1, 'life2, 'async_trait>(
        &'life0 self,
        req: Request,
        extensions: &'life1 mut Extensions,
        next: Next<'life2>,
    ) -> Pin<Box<dyn Future<Output = reqwest_middleware::Result<Response>> + Send + 'async_trait>>
    where
        'life0: 'async_trait,
        'life1: 'async_trait,
        'life2: 'async_trait,
        Self: 'async_trait,
    {
        let shared = &*self.shared;
        let scope = extensions.get::<RequestScope>().map(|s| Arc::clone(&s.0));
        let plain = fast::plain(shared, &RequestOptions::read(extensions), scope.as_deref());
        match (plain, scope) {
            (Some(plain), None) => {
                Box::pin(fast::request(shared, req, plain, None, (extensions, next), served))
            }
            (Some(plain), Some(scope)) => Box::pin(async move {
                fast::request(shared, req, plain, Some(&*scope), (extensions, next), served).await
            }),
            (None, scope) => Box::pin(async move {
                let opts = RequestOptions::read(extensions);
                let (session, guard) = begin(shared, req, &opts, scope.as_deref())?;
                let outcome = run(shared, session, extensions, &next).await;
                served(shared, ended(shared, guard, outcome))
            }),
        }
    }
}

impl Failover {
    /// Every endpoint's health now (breaker state, open-until as a wall-clock deadline, latency
    /// average), to restore after a restart; see [`HealthSnapshot`](crate::HealthSnapshot).
    pub fn health(&self) -> crate::health::persist::HealthSnapshot {
        let now = std::time::SystemTime::now();
        let endpoints = self
            .shared
            .slots
            .iter()
            .map(|slot| {
                crate::health::persist::EndpointHealth::of(
                    slot.id(),
                    slot.health.export(),
                    slot.latency.get(),
                    now,
                )
            })
            .collect();
        crate::health::persist::HealthSnapshot { taken_at: now, endpoints }
    }

    /// Takes over `snapshot` (from [`health`](Failover::health), before a restart), endpoint by
    /// endpoint, by id: open times continue until their deadline (one that passed meanwhile
    /// leaves the breaker half-open), failed trials keep growing the next open time, latency
    /// averages are kept. Ids not configured here are ignored. Returns how many endpoints took
    /// their state over. Meant for a fresh `Failover`: it replaces what this one has learnt.
    pub fn restore_health(&self, snapshot: &crate::health::persist::HealthSnapshot) -> usize {
        let now = std::time::SystemTime::now();
        let slots = &self.shared.slots;
        let mut restored = 0;
        for kept in snapshot.endpoints() {
            if let Some(i) = position(slots, kept.id()) {
                slots[i].health.import(&kept.kept(now));
                if let Some(latency) = kept.latency() {
                    slots[i].latency.observe(latency);
                }
                restored += 1;
            }
        }
        restored
    }

    /// A handle that feeds latency samples into this `Failover` without keeping it alive (a
    /// weak reference): what a monitor holds when it passes its probe latencies on, so that
    /// the `Failover` (which holds the monitor as its eligibility) and the monitor do not keep
    /// each other forever. See [`LatencyFeed`](crate::LatencyFeed).
    pub fn latency_feed(&self) -> crate::health::feed::LatencyFeed {
        let shared: Weak<Shared> = Arc::downgrade(&self.shared);
        crate::health::feed::LatencyFeed(shared)
    }

    /// Adds a latency sample for endpoint `id` to its average (see [`LatencyOrdering`]): a
    /// monitor's probe latency, say. Does nothing for an unknown id or without latency-aware
    /// ordering.
    ///
    /// [`LatencyOrdering`]: crate::LatencyOrdering
    pub fn observe_latency(&self, id: &str, latency: Duration) {
        crate::health::feed::LatencySink::observe_latency(&*self.shared, id, latency);
    }
}

//! The application's say in which endpoints a request may use.

use std::sync::Arc;

use crate::request::endpoint::EndpointId;

/// Decides whether an endpoint may be used by a request.
///
/// failnext asks once per non-excluded endpoint at the start of each request, in configured
/// order, before anything is sent, and keeps the answers for the whole request. It is never
/// asked for excluded endpoints, nor when the request names an unknown endpoint. It may be
/// asked from several requests at once, and never while failnext holds a lock.
///
/// Eligibility does not grant permission to fail over, does not make a body replayable and
/// does not bypass cooldown.
///
/// Implemented for closures and for `Arc<T>`. A closure needs its argument type written out,
/// or the compiler cannot infer the higher-ranked lifetime:
///
/// ```
/// use failnext::{Endpoint, EndpointId, Failover};
///
/// let failover = Failover::builder([
///     Endpoint::new("primary", "http://127.0.0.1:8545"),
///     Endpoint::new("backup", "http://127.0.0.1:8546"),
/// ])
/// .eligible(|id: &EndpointId| id.as_str() != "primary") // the type annotation is required
/// .build()?;
/// # drop(failover);
/// # Ok::<(), failnext::ConfigError>(())
/// ```
pub trait Eligibility: Send + Sync + 'static {
    /// Whether the endpoint `id` may be used.
    fn is_eligible(&self, id: &EndpointId) -> bool;
}

impl<F> Eligibility for F
where
    F: Fn(&EndpointId) -> bool + Send + Sync + 'static,
{
    fn is_eligible(&self, id: &EndpointId) -> bool {
        self(id)
    }
}

impl<T: Eligibility + ?Sized> Eligibility for Arc<T> {
    fn is_eligible(&self, id: &EndpointId) -> bool {
        (**self).is_eligible(id)
    }
}

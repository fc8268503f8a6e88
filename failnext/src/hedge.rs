//! Hedged reads (opt-in): [`Hedge`].

use std::time::Duration;

/// Hedged reads, for [`FailoverBuilder::hedge`](crate::FailoverBuilder::hedge): when a
/// request's first attempt has not finished after `delay`, the request's next candidate is
/// started too; the first acceptable answer (judged `Return`) wins and the other attempt is
/// cancelled (its future dropped; its connection closes). An attempt that fails or is flagged
/// is kept as usual while the other goes on.
///
/// Only for a request that may fail over and whose body can be sent again: never for a
/// write, never for a streaming body; at most one hedge per request, on its first attempt. A
/// hedge is a failover attempt: it needs a token of the [failover budget](crate::Budget) when
/// there is one, and its own share of the deadline. The trace shows it
/// ([`TraceStep::Hedged`](crate::TraceStep::Hedged)).
///
/// ```
/// use std::time::Duration;
/// use failnext::{Endpoint, Failover, Hedge};
///
/// let failover = Failover::builder([
///     Endpoint::new("primary", "http://127.0.0.1:8545"),
///     Endpoint::new("backup", "http://127.0.0.1:8546"),
/// ])
/// .hedge(Hedge::after(Duration::from_millis(20)))
/// .build()?;
/// # drop(failover);
/// # Ok::<(), failnext::ConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hedge {
    pub(crate) delay: Duration,
}

impl Hedge {
    /// Starts the next candidate when the first attempt has not finished after `delay`.
    pub fn after(delay: Duration) -> Hedge {
        Hedge { delay }
    }
}

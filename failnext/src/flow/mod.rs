//! The request loop and its session, on top of judging, health and events: the builder that
//! assembles it, the middleware's entry, the run of one request (its session: which endpoint
//! next, each attempt, hedges, the budget, the deadline), the per-endpoint slots and the
//! state every request shares.

pub(crate) mod attempt;
pub(crate) mod budget;
pub(crate) mod builder;
pub(crate) mod drain;
pub(crate) mod fast;
#[cfg(feature = "redis")]
pub(crate) mod fleet;
pub(crate) mod hedge;
pub(crate) mod middleware;
pub(crate) mod replay;
pub(crate) mod run;
pub(crate) mod select;
pub(crate) mod session;
pub(crate) mod shared;
pub(crate) mod slot;

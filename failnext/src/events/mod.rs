//! What a request tells: every decision as an [`Event`](crate::Event), the per-request
//! [`Trace`](crate::Trace) built from them, the error a failed request returns, and the
//! metrics (feature `metrics`).

pub(crate) mod error;
pub(crate) mod event;
#[cfg(feature = "metrics")]
pub(crate) mod metrics;
pub(crate) mod trace;

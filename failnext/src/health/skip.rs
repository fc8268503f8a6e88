//! `Skip`: why a request passes over an endpoint; the vocabulary shared by the plan (which
//! settles exclusion and eligibility), the endpoint's health (which answers cooling, open and
//! trial busy), the trace and the metrics.

use tokio::time::Instant;

/// Why a request passes over an endpoint. A skipped endpoint is never revisited in that
/// request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Skip {
    /// The request excluded it.
    Excluded,
    /// The eligibility hook ruled it out at request start.
    Ineligible,
    /// A paired health source advised against it at request start: kept in the plan's
    /// reserve, tried after every other candidate. Never returned by a live check.
    Reserve,
    /// Its turn came while it was cooling down (the reference rule), until this instant.
    CoolingUntil(Instant),
    /// Its turn came while its breaker was open, until this instant. It stays a candidate for
    /// the last resort of this request.
    Open {
        /// When its open time ends.
        until: Instant,
    },
    /// Its breaker is half-open and another request holds its one trial permit. It stays a
    /// candidate for the last resort of this request, which may wait for that trial.
    HalfOpenBusy,
}

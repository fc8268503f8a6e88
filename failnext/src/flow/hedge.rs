//! Hedged reads (opt-in): [`Hedge`], after a fixed delay or a percentile of the first
//! endpoint's recent latency.

use std::time::Duration;

use crate::health::recent::Recent;
use crate::request::config_error::ConfigErrorKind;

/// Hedged reads, for [`FailoverBuilder::hedge`](crate::FailoverBuilder::hedge): when a
/// request's first attempt has not finished after a delay, the request's next candidate is
/// started too; the first acceptable answer (judged `Return`) wins and the other attempt is
/// cancelled. An attempt that fails or is flagged is kept as usual while the other goes on.
/// The next candidate is the next in the request's order; with
/// [latency ordering](crate::LatencyOrdering) it is the fastest endpoint left when that is
/// faster than the next in order by more than the margin (a hedge races a slow attempt: racing
/// it with an endpoint known to be slow would only add load).
///
/// The delay is fixed ([`Hedge::after`]) or follows the first endpoint's recent latency
/// ([`Hedge::percentile`]); either way it is bounded by [`at_least`](Hedge::at_least) and
/// [`at_most`](Hedge::at_most).
///
/// Only for a request that may fail over and whose body can be sent again: never for a
/// write, never for a streaming body; at most one hedge per request, on its first attempt. A
/// hedge is a failover attempt: it needs a token of the [failover budget](crate::Budget) when
/// there is one (without one the first attempt goes on alone), and its own share of the
/// deadline. Each hedge is an [`Event::Hedge`](crate::Event::Hedge) (and a `tracing` event, and
/// the metric `failnext_hedges_total`), and the trace shows it
/// ([`TraceStep::Hedged`](crate::TraceStep::Hedged), and
/// [`TraceStep::Cancelled`](crate::TraceStep::Cancelled) for the attempt that lost).
///
/// **The losing attempt.** When it is still waiting for its response's headers (the usual
/// case: it lost because it was slower), its future is dropped and its connection closes:
/// finishing it in the background would keep loading the provider for an answer nobody reads,
/// and hold a task per hedge. When it has its response already (both answered at once), the
/// response is dropped the way a superseded 503 is: a body of known length up to 64 KiB is
/// read to its end so that the connection goes back to the pool, any other is dropped unread.
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
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hedge {
    delay: Delay,
    floor: Duration,
    ceiling: Duration,
}

/// Where a hedge's delay comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Delay {
    Fixed(Duration),
    /// The `q`-quantile of the first endpoint's recent latencies; `fallback` while it has too
    /// few (no hedge when `None`).
    Percentile {
        q: f64,
        fallback: Option<Duration>,
    },
}

/// The hedge a paired `Failover` gives reads unless told otherwise: after the 95th
/// percentile of the first endpoint's recent latencies (no hedge until it has 16 samples),
/// never before 10 ms.
pub(crate) const PAIRED_HEDGE: Hedge = Hedge::percentile(0.95).at_least(Duration::from_millis(10));

impl Hedge {
    /// Starts the next candidate when the first attempt has not finished after `delay`.
    pub const fn after(delay: Duration) -> Hedge {
        Hedge::with(Delay::Fixed(delay))
    }

    /// Starts the next candidate when the first attempt has taken longer than the
    /// `q`-quantile of its endpoint's recent latencies (`0.9`: slower than nine in ten of
    /// them), so that only the slow tail is hedged, whatever the endpoint's usual speed.
    ///
    /// Each endpoint keeps its latest 64 attempt latencies, in a fixed ring of atomics (no
    /// lock, no allocation per request): of each attempt judged a success, the time from
    /// sending it to its judgement (the response's headers, or the classifier's verdict when
    /// one is configured); of a first attempt cancelled because its hedge won, the time it had
    /// run (a lower bound, kept so that hedging the slow tail does not make it forgotten). They are kept only with a
    /// percentile hedge configured: without one, nothing is recorded and no clock is read for
    /// it. The quantile is by nearest rank over those samples: with 64 of them, any `q`
    /// above 0.98 is their maximum.
    ///
    /// Until the first endpoint has 16 samples, the request is not hedged, or is hedged
    /// after the [`fallback`](Hedge::fallback) delay when one is set. The delay is bounded by
    /// [`at_least`](Hedge::at_least) and [`at_most`](Hedge::at_most): a ceiling keeps a slow
    /// period from making hedges too late to help, a floor keeps a very fast endpoint from
    /// being hedged on every jitter.
    ///
    /// `q` must be above 0 and below 1 (NaN is not): [`FailoverBuilder::build`] rejects any
    /// other with a [`ConfigError`](crate::ConfigError); nothing panics.
    ///
    /// ```
    /// use std::time::Duration;
    /// use failnext::{Endpoint, Failover, Hedge};
    ///
    /// // Hedge a read slower than 95 % of its endpoint's recent ones, but never before 20 ms
    /// // nor after 500 ms; until the endpoint has been measured, after 200 ms.
    /// let hedge = Hedge::percentile(0.95)
    ///     .at_least(Duration::from_millis(20))
    ///     .at_most(Duration::from_millis(500))
    ///     .fallback(Duration::from_millis(200));
    /// let failover = Failover::builder([
    ///     Endpoint::new("primary", "http://127.0.0.1:8545"),
    ///     Endpoint::new("backup", "http://127.0.0.1:8546"),
    /// ])
    /// .hedge(hedge)
    /// .build()?;
    /// # drop(failover);
    ///
    /// // An impossible quantile is a configuration error, not a panic.
    /// let err = Failover::builder([Endpoint::new("primary", "http://127.0.0.1:8545")])
    ///     .hedge(Hedge::percentile(1.5))
    ///     .build()
    ///     .unwrap_err();
    /// assert!(err.to_string().contains("percentile"));
    /// # Ok::<(), failnext::ConfigError>(())
    /// ```
    ///
    /// [`FailoverBuilder::build`]: crate::FailoverBuilder::build
    pub const fn percentile(q: f64) -> Hedge {
        Hedge::with(Delay::Percentile { q, fallback: None })
    }

    /// The delay used while the first endpoint has fewer than 16 samples (a percentile hedge
    /// only; a fixed one always has its delay). It is bounded by the floor and the ceiling
    /// like any delay.
    ///
    /// Default is none: such a request is not hedged.
    #[must_use]
    pub fn fallback(mut self, delay: Duration) -> Hedge {
        if let Delay::Percentile { fallback, .. } = &mut self.delay {
            *fallback = Some(delay);
        }
        self
    }

    /// The hedge never starts before `floor`, whatever the delay says.
    ///
    /// Default is zero.
    #[must_use]
    pub const fn at_least(mut self, floor: Duration) -> Hedge {
        self.floor = floor;
        self
    }

    /// The hedge never starts later than `ceiling`, whatever the delay says.
    ///
    /// Default is no ceiling.
    #[must_use]
    pub const fn at_most(mut self, ceiling: Duration) -> Hedge {
        self.ceiling = ceiling;
        self
    }

    const fn with(delay: Delay) -> Hedge {
        Hedge { delay, floor: Duration::ZERO, ceiling: Duration::MAX }
    }

    /// Whether endpoints keep their recent latencies for this hedge.
    pub(crate) fn keeps_latencies(&self) -> bool {
        matches!(self.delay, Delay::Percentile { .. })
    }

    /// What `build()` rejects.
    pub(crate) fn check(&self) -> Result<(), ConfigErrorKind> {
        if let Delay::Percentile { q, .. } = self.delay {
            if !(q > 0.0 && q < 1.0) {
                return Err(ConfigErrorKind::HedgePercentile);
            }
        }
        if self.floor > self.ceiling {
            return Err(ConfigErrorKind::HedgeBounds);
        }
        Ok(())
    }

    /// The delay before hedging a first attempt to the endpoint whose recent latencies are
    /// `recent`; `None` for no hedge (a percentile, too few samples, no fallback).
    pub(crate) fn delay(&self, recent: Option<&Recent>) -> Option<Duration> {
        let delay = match self.delay {
            Delay::Fixed(delay) => delay,
            Delay::Percentile { q, fallback } => match recent.and_then(|r| r.quantile(q)) {
                Some(delay) => delay,
                None => fallback?,
            },
        };
        // Not `clamp`, which panics on bounds the wrong way round (build rejects them).
        Some(delay.max(self.floor).min(self.ceiling))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn measured(latency: Duration) -> Recent {
        let recent = Recent::new();
        for _ in 0..crate::health::recent::MIN_SAMPLES {
            recent.record(latency);
        }
        recent
    }

    #[test]
    fn a_percentile_outside_the_open_unit_interval_is_rejected() {
        for q in [f64::NAN, 0.0, 1.0, -0.5, 1.5, f64::INFINITY] {
            assert!(Hedge::percentile(q).check().is_err(), "{q}");
        }
        assert!(Hedge::percentile(0.5).check().is_ok());
        assert!(Hedge::after(MS).at_least(2 * MS).at_most(MS).check().is_err());
    }

    #[test]
    fn the_delay_is_the_quantile_then_the_fallback_within_floor_and_ceiling() {
        let fast = measured(100 * MS);
        let p90 = Hedge::percentile(0.9);
        assert_eq!(p90.delay(Some(&fast)), Some(100 * MS));
        assert_eq!(p90.delay(Some(&Recent::new())), None, "too few samples, no fallback: no hedge");
        assert_eq!(p90.delay(None), None);
        let with_fallback = p90.fallback(300 * MS);
        assert_eq!(with_fallback.delay(Some(&Recent::new())), Some(300 * MS));
        assert_eq!(with_fallback.at_most(50 * MS).delay(Some(&fast)), Some(50 * MS));
        assert_eq!(with_fallback.at_least(200 * MS).delay(Some(&fast)), Some(200 * MS));
        assert_eq!(with_fallback.at_most(250 * MS).delay(None), Some(250 * MS), "the fallback too");
        assert_eq!(Hedge::after(20 * MS).fallback(MS).delay(None), Some(20 * MS), "fixed: no fallback");
        assert_eq!(Hedge::after(20 * MS).at_least(30 * MS).delay(None), Some(30 * MS));
    }

    #[test]
    fn bounds_the_wrong_way_round_do_not_panic() {
        assert_eq!(Hedge::after(20 * MS).at_least(2 * MS).at_most(MS).delay(None), Some(MS));
    }
}

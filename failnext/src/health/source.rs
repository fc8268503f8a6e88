//! [`HealthSource`]: a view of the endpoints' health kept outside the request path
//! (failnext-blocklag's `Monitor`), paired with a `Failover` in one call
//! ([`FailoverBuilder::monitor`](crate::FailoverBuilder::monitor)), both ways: the source gives
//! eligibility, latency and the best head it knows; failnext gives back what real traffic shows
//! ([`Observation`]s) and asks for a check when an answer contradicts the view.

use std::time::Duration;

use tokio::time::Instant;

use crate::health::feed::LatencyFeed;
use crate::request::endpoint::EndpointId;

/// A view of the endpoints' health kept outside the request path, paired with a
/// [`Failover`](crate::Failover) by [`FailoverBuilder::monitor`](crate::FailoverBuilder::monitor).
///
/// failnext-blocklag's `Monitor` implements it. Every method but
/// [`eligible`](HealthSource::eligible) has a default that does nothing, so a source
/// implements what it knows.
///
/// What failnext does with a paired source:
///
/// - **eligibility, as advice**: [`eligible`](HealthSource::eligible) is asked once per
///   endpoint at a request's start, like an [`Eligibility`](crate::Eligibility) hook; an
///   endpoint it rules out is not dropped but kept in reserve, tried only once every endpoint
///   it admits has been tried (or none is admitted), unless the source says it can
///   [never](HealthSource::never) serve (another chain). The plain
///   [`eligible`](crate::FailoverBuilder::eligible) hook keeps the reference rule: an
///   ineligible endpoint is never tried;
/// - **latency**: [`pair`](HealthSource::pair) hands the source a [`LatencyFeed`] once, when
///   the `Failover` is built, for latency-aware ordering;
/// - **heads**: [`head`](HealthSource::head) is the best head the source knows; an
///   `eth_blockNumber` answer far below the best known head (this one, or the highest
///   plausible one the `Failover` has seen in answers) or above anything plausible is failed
///   over (see [`FailoverBuilder::monitor`](crate::FailoverBuilder::monitor));
/// - **evidence**: every judged attempt is [observed](HealthSource::observe), and an answer
///   that contradicts the view (an endpoint the source admits that fails, an implausible or
///   stale head) asks for a [check](HealthSource::check_now) of its endpoint.
///
/// [`observe`](HealthSource::observe) and [`check_now`](HealthSource::check_now) are called
/// from the request's task, on every attempt: they must be cheap and must not block.
pub trait HealthSource: Send + Sync + 'static {
    /// Whether the source admits endpoint `id` now. Asked once per non-excluded endpoint at
    /// the start of each request, in configured order; the answers hold for the request.
    fn eligible(&self, id: &EndpointId) -> bool;

    /// Whether endpoint `id`, which [`eligible`](HealthSource::eligible) just ruled out, can
    /// serve no request at all (it is on another chain, say): then it is not even kept in
    /// reserve. Asked only of endpoints `eligible` ruled out. Default: `false` (every ruled
    /// out endpoint is a reserve).
    fn never(&self, id: &EndpointId) -> bool {
        let _ = id;
        false
    }

    /// The best head the source knows (its reference head), if any.
    fn head(&self) -> Option<Head> {
        None
    }

    /// The head endpoint `id` is known to be at now, if the source knows it: the floor of
    /// the alloy transport's monotonic reads and the block its bundles start from. Default:
    /// `None` (unknown).
    fn head_of(&self, id: &EndpointId) -> Option<u64> {
        let _ = id;
        None
    }

    /// When endpoint `id` last showed itself good to the source (its latest passing probe),
    /// if the source knows: an open breaker whose endpoint passed a probe since it opened
    /// ends its open time at once (the next request is its trial), instead of waiting out an
    /// open time that grew while the provider was down. Default: `None` (unknown).
    fn last_good(&self, id: &EndpointId) -> Option<Instant> {
        let _ = id;
        None
    }

    /// Called once, when the paired `Failover` is built: `feed` takes latency samples for its
    /// latency-aware ordering (it does not keep the `Failover` alive).
    fn pair(&self, feed: LatencyFeed) {
        let _ = feed;
    }

    /// What a judged attempt at endpoint `id` showed.
    fn observe(&self, id: &EndpointId, observation: Observation) {
        let _ = (id, observation);
    }

    /// An answer of endpoint `id` contradicted the view: look at it again soon. The source
    /// decides how often it honours the request (failnext-blocklag: at most one extra probe
    /// per provider per interval).
    fn check_now(&self, id: &EndpointId) {
        let _ = id;
    }
}

impl<T: HealthSource + ?Sized> HealthSource for std::sync::Arc<T> {
    fn eligible(&self, id: &EndpointId) -> bool {
        (**self).eligible(id)
    }
    fn never(&self, id: &EndpointId) -> bool {
        (**self).never(id)
    }
    fn head(&self) -> Option<Head> {
        (**self).head()
    }
    fn head_of(&self, id: &EndpointId) -> Option<u64> {
        (**self).head_of(id)
    }
    fn last_good(&self, id: &EndpointId) -> Option<Instant> {
        (**self).last_good(id)
    }
    fn pair(&self, feed: LatencyFeed) {
        (**self).pair(feed);
    }
    fn observe(&self, id: &EndpointId, observation: Observation) {
        (**self).observe(id, observation);
    }
    fn check_now(&self, id: &EndpointId) {
        (**self).check_now(id);
    }
}

/// The best head a [`HealthSource`] knows: its number, when it was current, the chain's block
/// time, and how far behind it an answer may be and still be current.
///
/// ```
/// use std::time::Duration;
/// use failnext::Head;
///
/// let head = Head::new(1_000, tokio::time::Instant::now())
///     .block_time(Duration::from_secs(12))
///     .tolerance(2);
/// assert_eq!(head.number(), 1_000);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    number: u64,
    seen: Instant,
    block_time: Option<Duration>,
    tolerance: u64,
}

/// The tolerance of a [`Head`] made without one: an answer up to this many blocks behind the
/// best known head is current.
pub const DEFAULT_TOLERANCE: u64 = 3;

impl Head {
    /// Block `number`, current at `seen` (the Tokio clock); no block time known, the default
    /// tolerance ([`DEFAULT_TOLERANCE`]).
    pub fn new(number: u64, seen: Instant) -> Head {
        Head { number, seen, block_time: None, tolerance: DEFAULT_TOLERANCE }
    }

    /// The chain's block time, which bounds how high a head may plausibly be later.
    pub fn block_time(mut self, block_time: Duration) -> Head {
        self.block_time = (!block_time.is_zero()).then_some(block_time);
        self
    }

    /// How many blocks behind this head an answer may be and still count as current.
    pub fn tolerance(mut self, blocks: u64) -> Head {
        self.tolerance = blocks;
        self
    }

    /// The block number.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// When this head was current, on the Tokio clock.
    pub fn seen(&self) -> Instant {
        self.seen
    }

    /// The chain's block time, when known.
    pub fn known_block_time(&self) -> Option<Duration> {
        self.block_time
    }

    /// How many blocks behind it an answer may be.
    pub fn blocks_of_tolerance(&self) -> u64 {
        self.tolerance
    }

    /// This head projected to `now`: its number plus the whole blocks the chain made since it
    /// was current, by its block time (its number without one).
    pub fn projected(&self, now: Instant) -> u64 {
        self.number.saturating_add(self.made(now, 1).unwrap_or(0))
    }

    /// The whole blocks `rate` times the block time makes from `seen` to `now`; `None` without
    /// a block time.
    fn made(&self, now: Instant, rate: u128) -> Option<u64> {
        let block_time = self.block_time?;
        let elapsed = now.saturating_duration_since(self.seen);
        Some((rate * elapsed.as_nanos() / block_time.as_nanos().max(1)) as u64)
    }

    /// The highest head plausible at `now`: this one, plus the blocks the chain can have made
    /// since it was current (two per block time: a block time learnt from a few samples may
    /// be longer than the chain's, and an honest answer must never look implausible; and one
    /// more), plus the tolerance (at least [`DEFAULT_TOLERANCE`]: a head taken a moment
    /// before a block may be a few behind an honest answer); `None` without a block time
    /// (nothing bounds it).
    pub fn plausible_limit(&self, now: Instant) -> Option<u64> {
        let made = self.made(now, 2)?;
        let tolerance = self.tolerance.max(DEFAULT_TOLERANCE);
        Some(self.number.saturating_add(made).saturating_add(1).saturating_add(tolerance))
    }
}

/// What one judged attempt at an endpoint showed, told to a paired [`HealthSource`]
/// ([`HealthSource::observe`]).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Observation {
    /// An answer judged good, with the head it carried (an `eth_blockNumber` result), if any.
    Answered {
        /// The head the answer reported.
        head: Option<u64>,
    },
    /// An attempt that failed: a transport error, a failure status, a JSON-RPC error that
    /// blames the provider, a body that could not be read.
    Failed,
    /// A head below `floor` (the best known head less its tolerance): stale, failed over.
    Behind {
        /// The head the answer reported.
        head: u64,
        /// The best known head less its tolerance.
        floor: u64,
    },
    /// An attempt given up because another endpoint's answer came first (a hedge's race),
    /// after it had run this long without an answer: it was slower than the request could
    /// wait for, and may be hanging.
    Outrun {
        /// How long it had run.
        after: Duration,
    },
    /// A head above anything plausible (`limit`): implausible, failed over.
    Implausible {
        /// The head the answer reported.
        head: u64,
        /// The highest plausible head.
        limit: u64,
    },
}

impl Observation {
    /// Whether it speaks against the endpoint (failed, outrun, behind, implausible).
    pub fn is_bad(&self) -> bool {
        !matches!(self, Observation::Answered { .. })
    }

    /// The head the answer reported, if it carried one.
    pub fn head(&self) -> Option<u64> {
        match *self {
            Observation::Answered { head } => head,
            Observation::Behind { head, .. } | Observation::Implausible { head, .. } => Some(head),
            Observation::Failed | Observation::Outrun { .. } => None,
        }
    }
}

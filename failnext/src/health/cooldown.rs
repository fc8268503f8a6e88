//! `Cooldown`: the public rule for keeping a failing endpoint out of rotation: the adaptive
//! breaker (the default), the reference rule of 0.1, or nothing.
//!
//! The per-endpoint state that applies it lives in `health/` (one type per rule).

use std::time::Duration;

/// How an endpoint's failures keep it out of rotation: an adaptive breaker (the default), the
/// reference cooldown of failnext 0.1, or nothing.
///
/// Failures and successes are what the judge draws from each attempt: with the status-only
/// judge, transport errors and HTTP 502, 503 and 504 are failures and any other response
/// (including one whose status was added with
/// [`additional_trigger_status_codes`](crate::FailoverBuilder::additional_trigger_status_codes))
/// is a success. There are no probes and no background task under any rule: every trial is a
/// real request.
///
/// # The adaptive breaker ([`Cooldown::adaptive`], the default)
///
/// Per endpoint: **closed** (takes traffic) → **open** (skipped) → **half-open** (one trial
/// request at a time) → closed. It opens after 3 consecutive failures, or at once when the
/// outcome carries a hint (a `Retry-After`, or a classifier's
/// [`cool_for`](crate::Verdict::FailOver)), and then stays open for exactly that hint.
/// Without a hint the first open time is 250 ms; every failed trial doubles it (±20 %
/// jitter) up to [`max_open`](Cooldown::max_open) (30 s by default). After the open time, the
/// next request to reach the endpoint is its trial; others skip it meanwhile. A successful
/// trial gives the endpoint its full traffic back at once; the growth is forgotten only after
/// 3 successes in a row (the trial included), and until then a single failure opens it again,
/// for longer. When every endpoint left to a request is open, the request is sent, as a trial,
/// to the one whose open time ends soonest, or waits for a trial another request holds (the
/// last resort); an endpoint the eligibility hook turns eligible again gets its trial at
/// once. See the crate documentation,
/// section [The breaker](crate#the-breaker), for a timeline.
///
/// # The reference rule ([`Cooldown::new`])
///
/// `threshold` consecutive failures put the endpoint into cooldown for `duration`; any success
/// resets the streak. A cooling endpoint is skipped when its turn comes, and cooling ends
/// `duration` after the attempt that reached the threshold completed. Hints are ignored, there
/// is no half-open state, and no last resort: when every candidate is cooling, the request
/// fails with [`Error::is_no_usable_endpoint`](crate::Error::is_no_usable_endpoint). This is
/// exactly failnext 0.1 (whose default was `Cooldown::new(3, Duration::from_secs(30))`).
///
/// ```
/// use std::time::Duration;
/// use failnext::Cooldown;
///
/// assert_eq!(Cooldown::default(), Cooldown::adaptive());
/// let reference = Cooldown::new(3, Duration::from_secs(30)); // failnext 0.1's default
/// assert_eq!(reference.threshold(), Some(3));
/// let patient = Cooldown::adaptive().max_open(Duration::from_secs(120));
/// assert_eq!(patient.duration(), Some(Duration::from_secs(120)));
/// assert!(Cooldown::disabled().is_disabled());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Cooldown {
    rule: Rule,
}

/// The rule behind a [`Cooldown`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Rule {
    /// Nothing is recorded, nothing is ever skipped.
    Disabled,
    /// failnext 0.1: `threshold` consecutive failures cool the endpoint for `duration`.
    Reference { threshold: u32, duration: Duration },
    /// The breaker.
    Adaptive(Adaptive),
}

/// The adaptive breaker's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Adaptive {
    /// The longest open time without a hint.
    pub(crate) max_open: Duration,
}

impl Adaptive {
    /// Consecutive failures (without a hint) that open a closed breaker.
    pub(crate) const TRIP_AFTER: u32 = 3;
    /// The first open time without a hint.
    pub(crate) const FIRST_OPEN: Duration = Duration::from_millis(250);
    /// Successes in a row, trial included, after which the growth of the open time is reset.
    pub(crate) const READMIT_AFTER: u32 = 3;
    /// The default cap on an open time without a hint.
    pub(crate) const MAX_OPEN: Duration = Duration::from_secs(30);
}

impl Cooldown {
    /// The reference rule: cool an endpoint for `duration` after `threshold` consecutive
    /// failures, exactly as failnext 0.1 did (see [above](Cooldown#the-reference-rule-cooldownnew)).
    ///
    /// A zero threshold or a zero duration is rejected by
    /// [`FailoverBuilder::build`](crate::FailoverBuilder::build); use [`Cooldown::disabled`]
    /// to turn cooldown off.
    pub const fn new(threshold: u32, duration: Duration) -> Self {
        Cooldown { rule: Rule::Reference { threshold, duration } }
    }

    /// The adaptive breaker (see [above](Cooldown#the-adaptive-breaker-cooldownadaptive-the-default)),
    /// with a 30 s cap on the open time. This is [`Cooldown::default`].
    pub const fn adaptive() -> Self {
        Cooldown { rule: Rule::Adaptive(Adaptive { max_open: Adaptive::MAX_OPEN }) }
    }

    /// The longest an adaptive breaker stays open without a hint; a hint (at most 5 minutes, as
    /// the judge caps it) is followed whatever this says. A zero cap is rejected by
    /// [`FailoverBuilder::build`](crate::FailoverBuilder::build). Has no effect on the
    /// reference rule or on a disabled cooldown.
    ///
    /// Default is 30 seconds.
    #[must_use]
    pub const fn max_open(self, max_open: Duration) -> Self {
        match self.rule {
            Rule::Adaptive(_) => Cooldown { rule: Rule::Adaptive(Adaptive { max_open }) },
            _ => self,
        }
    }

    /// Never skip an endpoint because of its past failures.
    pub const fn disabled() -> Self {
        Cooldown { rule: Rule::Disabled }
    }

    /// Whether cooldown is off.
    pub const fn is_disabled(&self) -> bool {
        matches!(self.rule, Rule::Disabled)
    }

    /// Consecutive failures that start a cooldown (or open the adaptive breaker when no hint is
    /// given: 3), or `None` when disabled.
    pub fn threshold(&self) -> Option<u32> {
        self.setting().map(|(t, _)| t)
    }

    /// How long a cooldown lasts (for the adaptive breaker: its cap on the open time without a
    /// hint, [`max_open`](Cooldown::max_open)), or `None` when disabled.
    pub fn duration(&self) -> Option<Duration> {
        self.setting().map(|(_, d)| d)
    }

    /// `(threshold, duration)` as [`threshold`](Cooldown::threshold) and
    /// [`duration`](Cooldown::duration) report them, or `None` when disabled: what
    /// `FailoverBuilder::build` validates (neither may be zero).
    pub(crate) fn setting(&self) -> Option<(u32, Duration)> {
        match self.rule {
            Rule::Disabled => None,
            Rule::Reference { threshold, duration } => Some((threshold, duration)),
            Rule::Adaptive(a) => Some((Adaptive::TRIP_AFTER, a.max_open)),
        }
    }

    pub(crate) fn rule(&self) -> Rule {
        self.rule
    }
}

impl Default for Cooldown {
    /// [`Cooldown::adaptive`].
    fn default() -> Self {
        Cooldown::adaptive()
    }
}

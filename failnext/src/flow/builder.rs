//! `FailoverBuilder`: configuration, validated once in `build()`.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;

use crate::events::event::{Emitter, Event, HookFn};
use crate::flow::middleware::Failover;
use crate::flow::shared::Shared;
use crate::flow::slot::Slot;
use crate::health::cooldown::Cooldown;
use crate::health::eligibility::Eligibility;
use crate::health::latency::LatencyOrdering;
use crate::health::source::HealthSource;
use crate::judging::classify::Classifier;
use crate::judging::judge::Triggers;
use crate::request::config_error::{ConfigError, ConfigErrorKind};
use crate::request::endpoint::Endpoint;
use crate::request::permission::{Permission, PolicyFn};
use crate::request::validate::validate_endpoints;

/// The attempt timeout when none is configured; see [`FailoverBuilder::attempt_timeout`].
const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

impl Failover {
    /// Starts configuring a `Failover` over `endpoints`, in priority order. The endpoints are
    /// copied; they are validated by [`FailoverBuilder::build`].
    pub fn builder(endpoints: impl IntoIterator<Item = Endpoint>) -> FailoverBuilder {
        FailoverBuilder::new(endpoints)
    }
}

/// Configures a [`Failover`]. Made by [`Failover::builder`]; every setter consumes and returns
/// the builder, and nothing is checked until [`build`](FailoverBuilder::build).
#[must_use = "a builder does nothing until build() is called"]
pub struct FailoverBuilder {
    endpoints: Vec<Endpoint>,
    eligible: Option<Arc<dyn Eligibility>>,
    policy: Option<PolicyFn>,
    additional: Vec<StatusCode>,
    pub(crate) classifier: Option<Box<dyn Classifier>>,
    cooldown: Cooldown,
    attempt_timeout: Option<Duration>,
    deadline: Option<Duration>,
    budget: Option<crate::flow::budget::Budget>,
    trace_all: bool,
    pub(crate) hedge: crate::request::setting::Setting<crate::flow::hedge::Hedge>,
    ordering: Option<LatencyOrdering>,
    hook: Option<HookFn>,
    source: Option<Arc<dyn HealthSource>>,
    #[cfg(feature = "redis")]
    fleet: Option<crate::fleet::Fleet>,
}

impl FailoverBuilder {
    fn new(endpoints: impl IntoIterator<Item = Endpoint>) -> Self {
        FailoverBuilder {
            endpoints: endpoints.into_iter().collect(),
            eligible: None,
            policy: None,
            additional: Vec::new(),
            classifier: None,
            cooldown: Cooldown::default(),
            attempt_timeout: Some(DEFAULT_ATTEMPT_TIMEOUT),
            deadline: None,
            budget: None,
            trace_all: false,
            hedge: crate::request::setting::Setting::Default,
            ordering: None,
            hook: None,
            #[cfg(feature = "redis")]
            fleet: None,
            source: None,
        }
    }

    /// Lets the application rule endpoints out, for example those a lag monitor marks stale.
    ///
    /// Asked once per non-excluded endpoint at the start of each request; the answers hold for
    /// the whole request. See [`Eligibility`]. A closure needs its argument type written out:
    /// `|id: &EndpointId| ...`.
    ///
    /// Default is every endpoint eligible.
    pub fn eligible(mut self, eligibility: impl Eligibility) -> Self {
        self.eligible = Some(Arc::new(eligibility));
        self
    }

    /// Pairs this `Failover` with a health view kept outside the request path (failnext-blocklag's
    /// `Monitor`), both ways, in one call. See [`HealthSource`].
    ///
    /// - The source's eligibility is **advice, not a wall**: an endpoint it rules out is kept
    ///   in reserve, after every endpoint it admits, and tried only when those have all been
    ///   tried (a read that may fail over) or when it admits none; its answer is judged, and
    ///   observed, like any other. [`eligible`](FailoverBuilder::eligible), when also set, still
    ///   rules endpoints out entirely.
    /// - Its probe latencies feed [latency-aware ordering](FailoverBuilder::latency_ordering)
    ///   (given a [`LatencyFeed`](crate::LatencyFeed) once, at build), which then does not
    ///   explore (send reads first to slower endpoints to measure them) unless
    ///   [`explore_every`](crate::LatencyOrdering::explore_every) is set.
    /// - **Heads are judged**: with the JSON-RPC classifier (feature `jsonrpc`, which reads an
    ///   answer's quantity in place), a single `eth_blockNumber` answer more than the head's
    ///   tolerance below the best known head (the source's, or the highest plausible one this
    ///   `Failover` has seen in answers) is failed over as stale (`Unfit::BelowFloor`), and
    ///   one above the highest plausible head (the best known head plus the blocks its block
    ///   time allows since, plus the tolerance) as implausible (`Unfit::Implausible`); both
    ///   are failures of their endpoint and ask the source to check it now.
    /// - **Every judged attempt is evidence**: [`HealthSource::observe`] is told how it went,
    ///   and an endpoint the source admitted that failed is asked to be checked now.
    /// - **Reads are hedged** at the 95th percentile of the first endpoint's recent latency
    ///   unless [`hedge`](FailoverBuilder::hedge) or [`no_hedge`](FailoverBuilder::no_hedge)
    ///   says otherwise; an admitted first attempt out four times the hedge's delay (at least
    ///   250 ms) is raced by the reserve too, so a hung provider holds a read for a fraction of
    ///   a second, not for the attempt timeout. Writes (requests that may not fail over) are
    ///   never hedged.
    ///
    /// A later call replaces the source.
    pub fn monitor(mut self, source: impl HealthSource) -> Self {
        self.source = Some(Arc::new(source));
        self
    }

    /// Decides permission to fail over for requests that made no explicit choice.
    ///
    /// Called at most once per request, with the caller's original request, and only when a
    /// second endpoint could be tried; it is not called when the request carries an explicit
    /// [`Permission::Allow`] or [`Permission::Deny`]. Returning [`Permission::Defer`] falls back
    /// to the method rule (`GET` and `HEAD` may fail over, nothing else).
    ///
    /// ```
    /// use failnext::{Endpoint, Failover, Permission};
    ///
    /// // Only safe when every POST this client sends may be repeated on another provider.
    /// let failover = Failover::builder([Endpoint::new("a", "http://127.0.0.1:1")])
    ///     .permission_policy(|req: &reqwest::Request| {
    ///         if req.method() == reqwest::Method::POST { Permission::Allow } else { Permission::Defer }
    ///     })
    ///     .build()?;
    /// # drop(failover);
    /// # Ok::<(), failnext::ConfigError>(())
    /// ```
    ///
    /// Default is no policy: request-scoped choice, then the method rule.
    pub fn permission_policy(
        mut self,
        policy: impl Fn(&reqwest::Request) -> Permission + Send + Sync + 'static,
    ) -> Self {
        self.policy = Some(Arc::new(policy));
        self
    }

    /// Adds HTTP statuses that trigger failover, on top of 502, 503 and 504 (which cannot be
    /// removed). Any status may be added, 2xx included. Calls accumulate; duplicates are fine.
    ///
    /// Added statuses trigger failover but are not cooldown failures: like any response other
    /// than 502/503/504, they reset the endpoint's failure streak.
    ///
    /// Default is none.
    pub fn additional_trigger_status_codes(mut self, codes: impl IntoIterator<Item = StatusCode>) -> Self {
        self.additional.extend(codes);
        self
    }

    /// Judges every response whose status is not a trigger, for example to fail over from an
    /// HTTP 200 that carries a JSON-RPC rate-limit error; see [`Classifier`].
    ///
    /// Transport errors and trigger statuses (502, 503, 504 and the
    /// [added](FailoverBuilder::additional_trigger_status_codes) ones) are judged before it and
    /// never reach it. A response it flags ([`Verdict::FailOver`](crate::Verdict::FailOver)) is
    /// retained like a trigger response: if every later attempt errors, or the request may not
    /// fail over, the caller gets it. A classifier that hands back
    /// [`Classified::Failed`](crate::Classified::Failed), or panics, makes the attempt a failed
    /// one (listed in [`Error::attempts`](crate::Error::attempts)), which fails over; see the
    /// crate documentation's "Judging" section.
    ///
    /// Default is none: a response whose status is not a trigger is returned at once, body
    /// untouched (0.1's rule).
    pub fn classifier(mut self, classifier: impl Classifier) -> Self {
        self.classifier = Some(Box::new(classifier));
        self
    }

    /// Bounds every request as a whole: its attempts, its waits for another request's breaker
    /// trial and its skips together, apart from (and on top of) the per-attempt
    /// [`attempt_timeout`](FailoverBuilder::attempt_timeout): each attempt gets at most what
    /// is left. When it passes, the request sends nothing more and ends with an error that
    /// [`is_deadline`](crate::Error::is_deadline), lists the attempts made and names the
    /// endpoints not tried, or, if it holds one, with the retained trigger response (a
    /// response, even a 503, says more than "out of time", and is what the request would
    /// return with nothing left to try). An attempt cut short by the deadline says nothing
    /// about its endpoint (neutral for its breaker). A request's own
    /// [`RequestBuilderExt::deadline`](crate::RequestBuilderExt::deadline) replaces it.
    ///
    /// Default: none. Setting one costs a clock read per request.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Hedges reads: a request that may fail over starts its next candidate too when its
    /// first attempt is slow, after a fixed delay or a percentile of that endpoint's recent
    /// latency; see [`Hedge`](crate::Hedge). A percentile hedge times every attempt (two clock
    /// reads) and keeps a successful one's latency (two relaxed atomic operations); a fixed one
    /// costs nothing until a request may be hedged.
    ///
    /// Default: none; with a [monitor](FailoverBuilder::monitor), after the 95th percentile
    /// of the first endpoint's recent latencies (no hedge until it has 16 samples), never
    /// before 10 ms, as the alloy transport's reads (a hung provider is then raced within a
    /// few hundred milliseconds instead of holding a read for the attempt timeout; the
    /// monitor's view of heads keeps a faster provider that lags from winning the race).
    pub fn hedge(mut self, hedge: crate::flow::hedge::Hedge) -> Self {
        self.hedge = crate::request::setting::Setting::Set(hedge);
        self
    }

    /// No hedge, even with a [monitor](FailoverBuilder::monitor).
    pub fn no_hedge(mut self) -> Self {
        self.hedge = crate::request::setting::Setting::Off;
        self
    }

    /// Keeps a [`Trace`](crate::Trace) of every request (default: only of those that ask with
    /// [`RequestBuilderExt::trace`](crate::RequestBuilderExt::trace)). A trace allocates: one
    /// list per endpoint per request.
    pub fn trace(mut self, all: bool) -> Self {
        self.trace_all = all;
        self
    }

    /// Limits failover attempts across all requests of this `Failover` and its clones; see
    /// [`Budget`](crate::Budget). Default: none (0.1's rule: every request may try every
    /// endpoint). Setting one costs an atomic add per request.
    pub fn failover_budget(mut self, budget: crate::flow::budget::Budget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Makes this process one of a fleet sharing `fleet`'s Redis (feature `redis`): the
    /// providers [budgeted](crate::fleet::Fleet::budget) there are sent a request only when
    /// the fleet's budget admits it (else the request goes to the next provider, told as
    /// [`SkipReason::FleetBudget`](crate::SkipReason::FleetBudget)), and a cooldown this
    /// process starts on one of them holds for every process. A request to a budgeted
    /// provider waits at most the fleet's [timeout](crate::fleet::Fleet::timeout) for Redis;
    /// hedges never go to a budgeted provider. See [`fleet`](crate::fleet).
    #[cfg(feature = "redis")]
    pub fn fleet(mut self, fleet: crate::fleet::Fleet) -> Self {
        self.fleet = Some(fleet);
        self
    }

    /// Orders endpoints by latency as well as priority; see [`LatencyOrdering`]. Default: none,
    /// priority order only (the reference rule).
    pub fn latency_ordering(mut self, ordering: LatencyOrdering) -> Self {
        self.ordering = Some(ordering);
        self
    }

    /// Sets the cooldown rule; see [`Cooldown`].
    ///
    /// Default is [`Cooldown::default()`], the adaptive breaker; `Cooldown::new(3,
    /// Duration::from_secs(30))` is 0.1's default.
    pub fn cooldown(mut self, cooldown: Cooldown) -> Self {
        self.cooldown = cooldown;
        self
    }

    /// Bounds every attempt, so one hanging provider costs at most this long before the next
    /// is tried.
    ///
    /// It is set as reqwest's per-request timeout on each attempt (the shorter one wins when
    /// the request has its own), so a late attempt fails with a reqwest timeout error
    /// (`is_timeout()` is true), which triggers failover like any other error. As with
    /// reqwest's own timeout, it runs until the response body has been read, so it also bounds
    /// reading the body of the response you get back (and a classifier's reading of it).
    ///
    /// Raise it for calls that take long on a healthy provider (a wide `eth_getLogs`, a heavy
    /// `debug_traceTransaction`); a request's own shorter `RequestBuilder::timeout` still wins
    /// for that request. [`no_attempt_timeout`](FailoverBuilder::no_attempt_timeout) removes
    /// the bound.
    ///
    /// Default is 10 seconds: well above a heavy `eth_call` or a typical `eth_getLogs` on a
    /// healthy provider (tens to hundreds of milliseconds, a few seconds at worst), and well
    /// below the patience of a bot, which would rather hear from the next provider than wait
    /// on a hung one (a provider stopped mid-answer, or one whose kernel accepts connections
    /// while nothing answers, would otherwise hold the request forever).
    pub fn attempt_timeout(mut self, timeout: Duration) -> Self {
        self.attempt_timeout = Some(timeout);
        self
    }

    /// Removes the attempt timeout: an attempt then lasts as long as the client (or the
    /// request's own timeout) lets it, which for a hung provider may be forever. 0.1's default.
    ///
    /// Default is a 10 second [`attempt_timeout`](FailoverBuilder::attempt_timeout).
    pub fn no_attempt_timeout(mut self) -> Self {
        self.attempt_timeout = None;
        self
    }

    /// Receives every [`Event`] synchronously, in causal order; see [`Event`].
    ///
    /// Default is no hook.
    pub fn on_event(mut self, hook: impl Fn(&Event<'_>) + Send + Sync + 'static) -> Self {
        self.hook = Some(Arc::new(hook));
        self
    }

    /// Validates the configuration and builds the middleware.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`], for the first of these that fails, in this order:
    ///
    /// - the endpoint list is empty;
    /// - an endpoint breaks a rule of [`validate_endpoints`](crate::validate_endpoints)
    ///   (empty or repeated id; URL not absolute, unparsable, not http(s), without a host,
    ///   with a `#`, with surrounding whitespace or a malformed `%` escape);
    /// - the cooldown threshold is 0 or its duration is zero (use [`Cooldown::disabled`]), or
    ///   the adaptive breaker's [`max_open`](Cooldown::max_open) is zero;
    /// - the attempt timeout is zero, or the deadline is;
    /// - the failover budget's ratio is negative or not finite, or its balance is 0;
    /// - the hedge's percentile is not above 0 and below 1 (NaN included), or its floor
    ///   ([`Hedge::at_least`](crate::Hedge::at_least)) exceeds its ceiling
    ///   ([`Hedge::at_most`](crate::Hedge::at_most)).
    pub fn build(self) -> Result<Failover, ConfigError> {
        let urls = validate_endpoints(&self.endpoints)?;
        if let Some((threshold, duration)) = self.cooldown.setting() {
            if threshold == 0 {
                return Err(ConfigErrorKind::CooldownThreshold.into());
            }
            if duration.is_zero() {
                return Err(ConfigErrorKind::CooldownDuration.into());
            }
        }
        if self.attempt_timeout.is_some_and(|t| t.is_zero()) {
            return Err(ConfigErrorKind::AttemptTimeout.into());
        }
        if self.deadline.is_some_and(|d| d.is_zero()) {
            return Err(ConfigErrorKind::Deadline.into());
        }
        if self.budget.is_some_and(|b| !b.is_valid()) {
            return Err(ConfigErrorKind::Budget.into());
        }
        // Unpaired, a hedge takes the first answer whatever its head: a faster provider that
        // lags wins the race (the soak's stale answers rose by two fifths), so the default
        // hedge needs a monitor's view of heads.
        let hedge = self.hedge.or(self.source.is_some().then_some(crate::flow::hedge::PAIRED_HEDGE));
        if let Some(hedge) = &hedge {
            hedge.check()?;
        }
        let keep = hedge.is_some_and(|h| h.keeps_latencies());
        let slots = self
            .endpoints
            .iter()
            .zip(urls)
            .map(|(ep, url)| Slot::new(ep, url, self.cooldown).keeping_latencies(keep));
        let paired = self.source.clone().map(crate::health::paired::Paired::new);
        let failover = Failover::from_shared(Shared {
            slots: slots.collect(),
            endpoints: self.endpoints,
            eligible: self.eligible,
            policy: self.policy,
            triggers: Triggers::new(self.additional),
            classifier: self.classifier,
            cooldown: self.cooldown,
            attempt_timeout: self.attempt_timeout,
            deadline: self.deadline,
            budget: self.budget.map(crate::flow::budget::Tokens::new),
            trace_all: self.trace_all,
            hedge,
            ordering: self
                .ordering
                .map(|rule| crate::health::latency::Ordered::new(rule, self.source.is_some())),
            events: Emitter::new(self.hook),
            paired,
            #[cfg(feature = "redis")]
            fleet: self.fleet.map(crate::flow::shared::Tie::new),
        });
        if let Some(source) = &self.source {
            source.pair(failover.latency_feed());
        }
        Ok(failover)
    }
}

impl fmt::Debug for FailoverBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FailoverBuilder")
            .field("endpoints", &self.endpoints)
            .field("eligible", &self.eligible.as_ref().map(|_| "<fn>"))
            .field("permission_policy", &self.policy.as_ref().map(|_| "<fn>"))
            .field("additional_trigger_status_codes", &self.additional)
            .field("classifier", &self.classifier.as_ref().map(|_| "<classifier>"))
            .field("cooldown", &self.cooldown)
            .field("attempt_timeout", &self.attempt_timeout)
            .field("on_event", &self.hook.as_ref().map(|_| "<fn>"))
            .field("monitor", &self.source.as_ref().map(|_| "<source>"))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A source that admits every endpoint.
    struct Admits;

    impl HealthSource for Admits {
        fn eligible(&self, _: &crate::request::endpoint::EndpointId) -> bool {
            true
        }
    }

    fn hedge_of(builder: FailoverBuilder) -> Option<crate::flow::hedge::Hedge> {
        builder.build().unwrap().shared().hedge
    }

    #[test]
    fn a_paired_failover_hedges_reads_at_the_95th_percentile_unless_told_otherwise() {
        let endpoints =
            || [Endpoint::new("a", "http://127.0.0.1:1/"), Endpoint::new("b", "http://127.0.0.1:2/")];
        let fixed = crate::Hedge::after(Duration::from_millis(20));
        assert_eq!(hedge_of(Failover::builder(endpoints())), None, "unpaired: the reference rules");
        assert_eq!(
            hedge_of(Failover::builder(endpoints()).monitor(Admits)),
            Some(crate::flow::hedge::PAIRED_HEDGE)
        );
        assert_eq!(hedge_of(Failover::builder(endpoints()).monitor(Admits).hedge(fixed)), Some(fixed));
        assert_eq!(hedge_of(Failover::builder(endpoints()).monitor(Admits).no_hedge()), None);
        assert_eq!(
            hedge_of(Failover::builder(endpoints()).no_hedge().hedge(fixed).monitor(Admits)),
            Some(fixed)
        );
    }
}

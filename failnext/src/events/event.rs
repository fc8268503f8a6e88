//! Events: what happened during one request, delivered synchronously to the application.

use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;

use crate::judging::classify::{Class, Evidence, Verdict};
use crate::request::endpoint::EndpointId;

/// Something that happened while failnext handled one request.
///
/// Delivered to the [`on_event`](crate::FailoverBuilder::on_event) hook synchronously, on the
/// task that runs the request, in causal order: the request does not go on until the hook
/// returns, so keep the hook short. Hooks of different requests may run at the same time.
/// Each request produces exactly one [`Event::Result`], and it is the last event of the request.
///
/// Within a request: every attempt produces an [`Event::Attempt`] when its response's headers
/// (or its error) arrive, then, right after it (after the configured classifier, if any, has
/// read the response), an [`Event::Judged`] with the same endpoint and attempt number, saying
/// how the outcome was judged; then the endpoint's health learns from it. The endpoints out
/// of the request from its start (excluded, ineligible, unfit for its [`Scope`](crate::Scope))
/// come first, each an [`Event::Skipped`]; a skip when a candidate's turn comes is an
/// [`Event::Skipped`] then an [`Event::CooldownSkip`], before the attempt it makes way for, and
/// [`Event::NotReplayable`] ends the attempts. A hedge ([`Event::Hedge`]) comes when it is
/// sent, after the skips that made way for it and before its own `Attempt` (the first
/// attempt's `Attempt` comes before it only when that attempt's headers came in time but the
/// classifier was still reading its body); the attempt that loses has its `Attempt` and
/// `Judged` only if it had completed by the time the other won (otherwise it is cancelled,
/// and its endpoint's health learns nothing). A request whose future is dropped while an
/// attempt is in flight has an `Attempt` and a `Judged` for every attempt completed before,
/// then its `Result` (`Cancelled`); dropped while the classifier reads a response, that
/// attempt has its `Attempt` but no `Judged`, and its endpoint's health learns nothing.
///
/// The hook runs on the task that polls the request's future, inside that poll, as does the
/// [`Eligibility`](crate::Eligibility) hook: a `tokio::task_local!` set around the request is
/// visible in both, which is how an application ties events to its own request ids.
///
/// The hook is never called while failnext holds a lock, so it may call back into the
/// [`Failover`](crate::Failover). If it panics, the panic reaches the caller of the request,
/// and everything failnext held (responses, request bodies) is dropped on the way.
#[non_exhaustive]
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// An attempt was sent to `endpoint` and completed.
    Attempt {
        /// The endpoint attempted.
        endpoint: &'a EndpointId,
        /// 1-based number of this attempt within the request; skips use no number.
        attempt: u32,
        /// The response status (trigger statuses included) or the error.
        outcome: AttemptOutcome<'a>,
        /// From handing the request to the rest of the chain until it returned a response's
        /// headers or an error; reading the body later is not included.
        elapsed: Duration,
    },
    /// How the outcome of attempt `attempt` to `endpoint` was judged: always right after that
    /// attempt's [`Event::Attempt`].
    #[non_exhaustive]
    Judged {
        /// The endpoint attempted.
        endpoint: &'a EndpointId,
        /// The attempt's number, as in its [`Event::Attempt`].
        attempt: u32,
        /// How the outcome was judged: [`Class::Transport`] for an error, [`Class::Trigger`]
        /// for a trigger status, the classifier's class otherwise ([`Class::Answer`] when no
        /// classifier is configured).
        class: Class,
        /// Returned, or failed over (when the request may). A
        /// [`Classified::Failed`](crate::Classified::Failed) or a panicking classifier is
        /// always [`Verdict::FailOver`].
        verdict: Verdict,
        /// What the endpoint's health was told.
        evidence: Evidence,
        /// The answer was overruled by the request's [`Scope`](crate::Scope) (no answer for
        /// this request), and why; the judgement above is the overruling one.
        overruled: Option<&'a crate::judging::scope::Unfit>,
    },
    /// `endpoint` was passed over because it is cooling down (the reference rule) or its
    /// breaker is open or half-open with its trial taken (the adaptive breaker). It is not
    /// revisited in this request, except by the breaker's last resort.
    CooldownSkip {
        /// The endpoint skipped.
        endpoint: &'a EndpointId,
    },
    /// `endpoint`'s breaker changed state, in the request that changed it: `Open` and `Closed`
    /// right after the [`Event::Attempt`] whose outcome caused them, `HalfOpen` when the request
    /// takes the trial permit, before its attempt. Only the adaptive breaker
    /// ([`Cooldown::adaptive`](crate::Cooldown::adaptive)) emits these.
    Breaker {
        /// The endpoint whose breaker changed.
        endpoint: &'a EndpointId,
        /// Its new state.
        state: crate::health::BreakerState,
    },
    /// The request passed over `endpoint`, and why: at its start (excluded, ineligible), or
    /// when its turn came (cooling, breaker open, trial taken; then a [`Event::CooldownSkip`]
    /// follows, as in 0.1). Never revisited in the request, except by the breaker's last
    /// resort.
    #[non_exhaustive]
    Skipped {
        /// The endpoint passed over.
        endpoint: &'a EndpointId,
        /// Why.
        reason: SkipReason,
        /// For [`SkipReason::Unfit`]: what the request's [`Scope`](crate::Scope) said.
        unfit: Option<&'a crate::judging::scope::Unfit>,
    },
    /// Failover wanted to try `endpoint`, but the request body is a stream that cannot be
    /// sent twice, so the request stops there.
    NotReplayable {
        /// The endpoint that could not be tried.
        endpoint: &'a EndpointId,
    },
    /// A hedge was started: the request's first attempt, to `first`, had not finished after
    /// `after`, so attempt `attempt` is sent to `endpoint` while it goes on; see
    /// [`Hedge`](crate::Hedge). At most once per request.
    #[non_exhaustive]
    Hedge {
        /// The endpoint the hedge is sent to.
        endpoint: &'a EndpointId,
        /// The hedge's attempt number (2: the first attempt is still in flight).
        attempt: u32,
        /// The endpoint of the first attempt, the one being hedged.
        first: &'a EndpointId,
        /// How long the first attempt was given: the fixed delay, or the percentile of
        /// `first`'s recent latencies (or the fallback), within the floor and the ceiling.
        after: Duration,
    },
    /// A chain follower (`failnext::alloy::Follower`, feature `alloy`) caught up on `blocks`
    /// blocks from `from` it had not yet seen, read in one request (a gap it filled). Not part
    /// of a request's sequence.
    Backfilled {
        /// The first block read.
        from: u64,
        /// How many blocks, in order, from `from`.
        blocks: u64,
        /// The endpoint that answered.
        endpoint: Option<&'a EndpointId>,
    },
    /// A chain follower found `depth` blocks it had yielded replaced by another branch: the
    /// blocks after `kept` were dropped. Not part of a request's sequence.
    Reorged {
        /// How many blocks were dropped.
        depth: u64,
        /// The newest block it had yielded that is still canonical.
        kept: u64,
        /// The endpoint whose answer showed the new branch.
        endpoint: Option<&'a EndpointId>,
    },
    /// A consensus read of the alloy transport (feature `alloy`) was answered by `endpoint`
    /// otherwise than by the quorum: evidence against it (after `DISSENTS` in a row it is
    /// ruled out for the method). Not part of a request's sequence.
    Disagreed {
        /// The provider in the minority.
        endpoint: &'a EndpointId,
        /// The method voted.
        method: &'a str,
    },
    /// The alloy transport (feature `alloy`) was answered a block that failed its check: its
    /// header does not hash to the hash it claims, or it is not the block asked for. Not an
    /// answer: `endpoint` is put off the chain (every request skips it for the transport's
    /// lack period) and the read goes to the next provider. Not part of a request's sequence.
    ForgedBlock {
        /// The provider that answered it.
        endpoint: &'a EndpointId,
        /// The number the block claimed.
        number: Option<u64>,
    },
    /// The alloy transport (feature `alloy`) found that this chain's block headers do not hash
    /// as Ethereum's (two providers' blocks `number` failed the same way): block checks are off
    /// for the transport. Told once per transport. Not part of a request's sequence.
    BlocksUnverifiable {
        /// The block both providers answered.
        number: Option<u64>,
    },
    /// Another process of the fleet (feature `redis`) cooled `endpoint` (a `Retry-After` met,
    /// its breaker opened) with `left` to go: this process skips it for as long (its breaker
    /// opens; an [`Event::Breaker`] follows when that changed its state). Not part of a
    /// request's sequence.
    FleetCooldown {
        /// The endpoint cooled.
        endpoint: &'a EndpointId,
        /// Why: how the answer that started the cooldown was judged in the process that met
        /// it; `None` when it did not say.
        reason: Option<Class>,
        /// How long it has left.
        left: Duration,
    },
    /// The fleet's Redis (feature `redis`) was found unavailable, or back: told once per
    /// change, by the request whose admission found it. Not part of a request's sequence.
    Fleet {
        /// Unavailable (the process goes on with its own view and budgets) or rejoined.
        state: FleetState,
    },
    /// The request is about to return; always the last event of a request.
    Result {
        /// The endpoint whose response is returned (for a retained response, the one that
        /// produced it); `None` for an error or a cancellation.
        endpoint: Option<&'a EndpointId>,
        /// What the caller receives.
        outcome: ResultOutcome<'a>,
    },
}

/// Why a request passed over an endpoint ([`Event::Skipped`]).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SkipReason {
    /// The request excluded it.
    Excluded,
    /// The eligibility hook ruled it out at the request's start.
    Ineligible,
    /// Cooling down (the reference rule).
    Cooling,
    /// Its breaker was open.
    BreakerOpen,
    /// Its breaker was half-open and another request held its trial.
    TrialBusy,
    /// The request's [`Scope`](crate::Scope) ruled it out: it cannot serve this request (it
    /// lacks a capability the request needs, does not know its block, is below its floor).
    Unfit,
    /// The fleet's budget for it (feature `redis`) is spent for now, or it cools fleet-wide.
    FleetBudget,
}

/// Whether the fleet's Redis is reachable, as told by [`Event::Fleet`] (feature `redis`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FleetState {
    /// Redis did not answer within the fleet's timeout (or refused): this process goes on
    /// with its own view and budgets.
    Unavailable,
    /// Redis answers again: this process is back on the fleet's view.
    Rejoined,
}

impl SkipReason {
    /// Every reason, in declaration order: `ALL[r as usize] == r`.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code, reason = "the metric's keys, one per reason"))]
    pub(crate) const ALL: [SkipReason; 7] = [
        SkipReason::Excluded,
        SkipReason::Ineligible,
        SkipReason::Cooling,
        SkipReason::BreakerOpen,
        SkipReason::TrialBusy,
        SkipReason::Unfit,
        SkipReason::FleetBudget,
    ];

    /// The reason as the tracing event and the metric label say it.
    #[cfg_attr(
        not(any(feature = "tracing", feature = "metrics")),
        allow(dead_code, reason = "the labels of the tracing event and the metric")
    )]
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SkipReason::Excluded => "excluded",
            SkipReason::Ineligible => "ineligible",
            SkipReason::Cooling => "cooling",
            SkipReason::BreakerOpen => "open",
            SkipReason::TrialBusy => "trial_busy",
            SkipReason::Unfit => "unfit",
            SkipReason::FleetBudget => "fleet_budget",
        }
    }
}

/// How an attempt ended.
#[derive(Debug, Clone, Copy)]
pub enum AttemptOutcome<'a> {
    /// An HTTP response with this status.
    Status(StatusCode),
    /// No HTTP response; the error has no URL in it.
    Error(&'a reqwest_middleware::Error),
}

/// How a request ended.
#[derive(Debug, Clone, Copy)]
pub enum ResultOutcome<'a> {
    /// A response with this status is returned.
    Status(StatusCode),
    /// This very error is returned.
    Error(&'a reqwest_middleware::Error),
    /// The caller dropped the request's future before it finished.
    Cancelled,
}

pub(crate) type HookFn = Arc<dyn Fn(&Event<'_>) + Send + Sync>;

/// Delivers events to the hook and, with the `tracing` feature, to `tracing`.
#[derive(Clone, Default)]
pub(crate) struct Emitter {
    hook: Option<HookFn>,
}

impl Emitter {
    pub(crate) fn new(hook: Option<HookFn>) -> Emitter {
        Emitter { hook }
    }

    /// Whether anyone listens; events (and their timing) are skipped otherwise.
    pub(crate) fn is_active(&self) -> bool {
        cfg!(feature = "tracing") || cfg!(feature = "metrics") || self.hook.is_some()
    }

    pub(crate) fn has_hook(&self) -> bool {
        self.hook.is_some()
    }

    pub(crate) fn emit(&self, event: &Event<'_>) {
        #[cfg(feature = "tracing")]
        trace(event);
        if let Some(hook) = &self.hook {
            hook(event);
        }
    }
}

/// A short, URL-free name for the kind of an attempt error.
#[cfg_attr(not(feature = "tracing"), allow(dead_code))]
pub(crate) fn error_kind(err: &reqwest_middleware::Error) -> &'static str {
    match err {
        reqwest_middleware::Error::Middleware(_) => "middleware",
        e if e.is_timeout() => "timeout",
        e if e.is_connect() => "connect",
        e if e.is_body() => "body",
        e if e.is_redirect() => "redirect",
        e if e.is_builder() => "builder",
        e if e.is_request() => "request",
        _ => "other",
    }
}

#[cfg(feature = "tracing")]
fn trace(event: &Event<'_>) {
    match *event {
        Event::Attempt { endpoint, attempt, outcome: AttemptOutcome::Status(status), elapsed } => {
            let elapsed_us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
            tracing::debug!(
                endpoint = endpoint.as_str(),
                attempt,
                status = status.as_u16(),
                elapsed_us,
                "failnext attempt"
            );
        }
        Event::Attempt { endpoint, attempt, outcome: AttemptOutcome::Error(e), elapsed } => {
            let elapsed_us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
            tracing::warn!(
                endpoint = endpoint.as_str(),
                attempt,
                error_kind = error_kind(e),
                elapsed_us,
                "failnext attempt failed"
            );
        }
        Event::Judged { endpoint, attempt, class, verdict, evidence, .. } => {
            tracing::debug!(
                endpoint = endpoint.as_str(),
                attempt,
                class = ?class,
                verdict = ?verdict,
                evidence = ?evidence,
                "failnext judged attempt"
            );
        }
        Event::CooldownSkip { endpoint } => {
            tracing::info!(endpoint = endpoint.as_str(), "failnext skipped endpoint in cooldown");
        }
        Event::Breaker { endpoint, state } => {
            tracing::info!(endpoint = endpoint.as_str(), ?state, "failnext breaker");
        }
        Event::Hedge { endpoint, attempt, first, after } => {
            let after_us = u64::try_from(after.as_micros()).unwrap_or(u64::MAX);
            tracing::debug!(
                endpoint = endpoint.as_str(),
                attempt,
                first = first.as_str(),
                after_us,
                "failnext hedge"
            );
        }
        Event::Skipped { endpoint, reason, .. } => {
            tracing::debug!(
                endpoint = endpoint.as_str(),
                reason = reason.as_str(),
                "failnext skipped endpoint"
            );
        }
        Event::NotReplayable { endpoint } => {
            tracing::info!(endpoint = endpoint.as_str(), "failnext cannot replay a streaming body");
        }
        Event::Backfilled { .. }
        | Event::Reorged { .. }
        | Event::Disagreed { .. }
        | Event::ForgedBlock { .. }
        | Event::BlocksUnverifiable { .. } => trace_chain(event),
        Event::FleetCooldown { endpoint, reason, left } => {
            let reason = reason.map_or("", Class::as_str);
            let left_ms = u64::try_from(left.as_millis()).unwrap_or(u64::MAX);
            tracing::info!(
                endpoint = endpoint.as_str(),
                reason,
                left_ms,
                "failnext: cooled by another process of the fleet"
            );
        }
        Event::Fleet { state: FleetState::Unavailable } => {
            tracing::warn!(
                "failnext: the fleet's Redis is unavailable; going on with this process's own view"
            );
        }
        Event::Fleet { state: FleetState::Rejoined } => {
            tracing::info!("failnext: the fleet's Redis answers again; back on the fleet's view");
        }
        Event::Result { endpoint, outcome } => {
            let endpoint = endpoint.map_or("", |e| e.as_str());
            match outcome {
                ResultOutcome::Status(status) => {
                    tracing::debug!(endpoint, status = status.as_u16(), "failnext result");
                }
                ResultOutcome::Error(e) => {
                    tracing::warn!(error_kind = error_kind(e), "failnext result: error");
                }
                ResultOutcome::Cancelled => tracing::debug!("failnext result: cancelled"),
            }
        }
    }
}

/// The events of the alloy transport and the follower, not of one request.
#[cfg(feature = "tracing")]
fn trace_chain(event: &Event<'_>) {
    match *event {
        Event::Backfilled { from, blocks, endpoint } => {
            let endpoint = endpoint.map_or("", |e| e.as_str());
            tracing::debug!(from, blocks, endpoint, "failnext follower backfilled");
        }
        Event::Reorged { depth, kept, endpoint } => {
            let endpoint = endpoint.map_or("", |e| e.as_str());
            tracing::warn!(depth, kept, endpoint, "failnext follower saw a reorg");
        }
        Event::Disagreed { endpoint, method } => {
            tracing::info!(
                endpoint = endpoint.as_str(),
                method,
                "failnext: a provider disagreed with the quorum"
            );
        }
        Event::ForgedBlock { endpoint, number } => {
            tracing::warn!(endpoint = endpoint.as_str(), ?number, "failnext rejected a forged block");
        }
        Event::BlocksUnverifiable { number } => {
            tracing::warn!(
                ?number,
                "failnext: this chain's block headers do not hash as Ethereum's; block checks are off"
            );
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::SkipReason;

    #[test]
    fn every_skip_reason_is_listed_in_declaration_order() {
        for (i, reason) in SkipReason::ALL.into_iter().enumerate() {
            assert_eq!(reason as usize, i, "{reason:?}");
        }
    }
}

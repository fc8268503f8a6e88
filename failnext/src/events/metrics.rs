//! Metrics (feature `metrics`): what failnext does, through the `metrics` facade, labelled by
//! endpoint id (never a URL). The application installs the recorder (a Prometheus exporter,
//! say); without one, every call is a no-op.
//!
//! | metric | kind | labels |
//! | --- | --- | --- |
//! | `failnext_attempts_total` | counter | `endpoint`, `class` (how the outcome was judged) |
//! | `failnext_attempt_seconds` | histogram | `endpoint` (until the response's headers or the error) |
//! | `failnext_failovers_total` | counter | `endpoint` (an attempt judged `FailOver`: the request moves on from it, if it may) |
//! | `failnext_hedges_total` | counter | `endpoint` (the one whose first attempt was hedged) |
//! | `failnext_skips_total` | counter | `endpoint`, `reason` (`excluded`, `ineligible`, `cooling`, `open`, `trial_busy`, `unfit`, `fleet_budget`) |
//! | `failnext_breaker_transitions_total` | counter | `endpoint`, `state` (`open`, `half_open`, `closed`) |
//! | `failnext_follower_backfilled_blocks_total` | counter | none (blocks a chain follower read in a batch to catch up) |
//! | `failnext_follower_reorgs_total`, `failnext_follower_reorged_blocks_total` | counter | none (reorgs a chain follower reported, and the blocks they dropped) |
//! | `failnext_forged_blocks_total` | counter | `endpoint` (blocks the alloy transport rejected: not the chain's) |
//! | `failnext_disagreements_total` | counter | `endpoint` (consensus reads it answered otherwise than the quorum) |
//! | `failnext_blocks_unverifiable_total` | counter | none (chains found not to hash as Ethereum: block checks turned off) |
//! | `failnext_fleet_unavailable_total` | counter | none (the fleet's Redis found unavailable, feature `redis`) |
//!
//! Fed from one place, the event stream ([`record`], called for every [`Event`] before the
//! application's hook sees it): whatever an event says, the metrics say, and nothing else.
//! Every key is made once per endpoint, when the `Failover` is built, with the endpoint id
//! shared by reference count: recording allocates nothing. The recorder is looked up at each
//! call (as the facade's macros do), so one installed after the `Failover` is built still
//! receives everything.

use metrics::{Key, Label, Metadata, SharedString};

use crate::events::event::{Event, SkipReason};
use crate::health::BreakerState;
use crate::judging::classify::{Class, Verdict};
use crate::request::endpoint::EndpointId;

static METADATA: Metadata<'static> =
    Metadata::new(module_path!(), metrics::Level::INFO, Some(module_path!()));

const CLASSES: [Class; 10] = Class::ALL;

const STATES: [&str; 3] = ["open", "half_open", "closed"];

/// One endpoint's metric keys, made once.
#[derive(Debug)]
pub(crate) struct Keys {
    attempts: [Key; 10],
    seconds: Key,
    failovers: Key,
    hedges: Key,
    skips: [Key; 7],
    breaker: [Key; 3],
    forged: Key,
    disagreed: Key,
}

impl Keys {
    pub(crate) fn new(id: &EndpointId) -> Keys {
        let endpoint = || Label::new("endpoint", SharedString::from_shared(id.shared()));
        let key = |name: &'static str, more: Option<(&'static str, &'static str)>| {
            let mut labels = vec![endpoint()];
            if let Some((k, v)) = more {
                labels.push(Label::from_static_parts(k, v));
            }
            Key::from_parts(name, labels)
        };
        Keys {
            attempts: CLASSES.map(|c| key("failnext_attempts_total", Some(("class", c.as_str())))),
            seconds: key("failnext_attempt_seconds", None),
            failovers: key("failnext_failovers_total", None),
            hedges: key("failnext_hedges_total", None),
            skips: SkipReason::ALL.map(|r| key("failnext_skips_total", Some(("reason", r.as_str())))),
            breaker: STATES.map(|s| key("failnext_breaker_transitions_total", Some(("state", s)))),
            forged: key("failnext_forged_blocks_total", None),
            disagreed: key("failnext_disagreements_total", None),
        }
    }
}

fn count(key: &Key) {
    count_by(key, 1);
}

fn count_by(key: &Key, n: u64) {
    metrics::with_recorder(|r| r.register_counter(key, &METADATA).increment(n));
}

/// The chain follower's counters: no endpoint label.
static BACKFILLED_BLOCKS: Key = Key::from_static_name("failnext_follower_backfilled_blocks_total");
static REORGS: Key = Key::from_static_name("failnext_follower_reorgs_total");
static REORGED_BLOCKS: Key = Key::from_static_name("failnext_follower_reorged_blocks_total");
static UNVERIFIABLE: Key = Key::from_static_name("failnext_blocks_unverifiable_total");
static FLEET_UNAVAILABLE: Key = Key::from_static_name("failnext_fleet_unavailable_total");

/// What `event` says, as metrics; `keys` finds an endpoint's keys.
pub(crate) fn record<'k>(event: &Event<'_>, keys: impl Fn(&EndpointId) -> Option<&'k Keys>) {
    match *event {
        Event::Attempt { endpoint, elapsed, .. } => {
            if let Some(k) = keys(endpoint) {
                metrics::with_recorder(|r| {
                    r.register_histogram(&k.seconds, &METADATA).record(elapsed.as_secs_f64());
                });
            }
        }
        Event::Judged { endpoint, class, verdict, .. } => {
            let Some(k) = keys(endpoint) else { return };
            if let Some(at) = CLASSES.iter().position(|c| *c == class) {
                count(&k.attempts[at]);
            }
            if let Verdict::FailOver { .. } = verdict {
                count(&k.failovers);
            }
        }
        Event::Hedge { first, .. } => {
            if let Some(k) = keys(first) {
                count(&k.hedges);
            }
        }
        Event::Skipped { endpoint, reason, .. } => {
            if let Some(k) = keys(endpoint) {
                // `ALL` is in declaration order, so a reason is its own index.
                count(&k.skips[reason as usize]);
            }
        }
        Event::Breaker { endpoint, state } => {
            let at = match state {
                BreakerState::Open { .. } => 0,
                BreakerState::HalfOpen => 1,
                BreakerState::Closed => 2,
            };
            if let Some(k) = keys(endpoint) {
                count(&k.breaker[at]);
            }
        }
        Event::ForgedBlock { endpoint, .. } => {
            if let Some(k) = keys(endpoint) {
                count(&k.forged);
            }
        }
        Event::Disagreed { endpoint, .. } => {
            if let Some(k) = keys(endpoint) {
                count(&k.disagreed);
            }
        }
        Event::BlocksUnverifiable { .. } => count(&UNVERIFIABLE),
        Event::Fleet { state: crate::FleetState::Unavailable } => count(&FLEET_UNAVAILABLE),
        Event::Backfilled { blocks, .. } => count_by(&BACKFILLED_BLOCKS, blocks),
        Event::Reorged { depth, .. } => {
            count(&REORGS);
            count_by(&REORGED_BLOCKS, depth);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use failnext_loopback::metrics::{Kept, Rec};

    use super::*;

    #[test]
    fn forged_blocks_disagreements_and_unverifiable_chains_are_counted() {
        let kept = Arc::new(Kept::default());
        let recorder = Rec(kept.clone());
        let id = EndpointId::from("liar");
        let keys = Keys::new(&id);
        let find = |e: &EndpointId| (*e == id).then_some(&keys);
        metrics::with_local_recorder(&recorder, || {
            record(&Event::ForgedBlock { endpoint: &id, number: Some(7) }, find);
            record(&Event::Disagreed { endpoint: &id, method: "eth_call" }, find);
            record(&Event::Disagreed { endpoint: &id, method: "eth_call" }, find);
            record(&Event::BlocksUnverifiable { number: Some(1) }, find);
        });
        assert_eq!(kept.get("failnext_forged_blocks_total{endpoint=liar}"), 1, "{:?}", kept.names());
        assert_eq!(kept.get("failnext_disagreements_total{endpoint=liar}"), 2);
        assert_eq!(kept.get("failnext_blocks_unverifiable_total{}"), 1);
    }
}

//! The failnext configurations the measure compares, one constructor each.
//!
//! Every configuration is its own `Failover` over the same providers and the same fault
//! windows; [`Subject::configure`] is the only place where they differ. The measure sets what
//! they share around it: the attempt timeout, the dispatch recorder, and the monitor: the
//! shared one as eligibility (`FailoverBuilder::eligible`, a wall), or, for a
//! [paired](Subject::is_paired) configuration, a monitor of its own as its health source
//! (`FailoverBuilder::monitor`, advice both ways: the `Monitor` itself, through
//! `RecordedSource`, which records its eligibility answers).
//!
//! To add a configuration: a variant, its row in [`Subject::ALL`], its [`name`](Subject::name)
//! and its [`configure`](Subject::configure) arm.

use std::fmt;
use std::time::Duration;

use failnext::alloy;
use failnext::{
    Cooldown, EndpointId, FailoverBuilder, Head, HealthSource, Hedge, LatencyFeed, LatencyOrdering,
    Observation,
};

use super::recording::ReadLog;
use crate::soak::record::Endpoints;

/// One failnext configuration under measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Subject {
    /// 0.1's defaults: `Cooldown::new(3, 30 s)` and the status-only judge (triggers 502, 503,
    /// 504; no classifier, no additional trigger status).
    Reference,
    /// The reference with `Cooldown::disabled()`: the status-only judge, no breaker at all.
    CooldownDisabled,
    /// 0.2's defaults: `Cooldown::default()` (the adaptive breaker), the status-only judge.
    Default02,
    /// 0.2's defaults with `failnext::jsonrpc::JsonRpcClassifier::new()` as the judge.
    Default02JsonRpc,
    /// The JSON-RPC classifier with no breaker at all: what the breaker's open times cost.
    DisabledJsonRpc,
    /// Issue 20's pairing: a monitor of its own as the health source
    /// (`FailoverBuilder::monitor`), latency ordering, a p95 hedge, the JSON-RPC classifier and
    /// the adaptive breaker.
    Paired,
    /// The alloy transport's defaults (`FailoverTransport::builder(..).build()`'s `Failover`):
    /// the JSON-RPC classifier, the adaptive breaker, `DEFAULT_BUDGET`, `DEFAULT_DEADLINE`.
    /// What a bot gets without configuring anything.
    Transport,
    /// The transport's defaults paired with a monitor of its own in one call
    /// (`.monitor(..)`): `DEFAULT_HEDGE` and latency ordering with `DEFAULT_LATENCY_MARGIN` on
    /// top.
    TransportPaired,
    /// The README's paired setup through alloy, exactly as pasted, probing every 2 s:
    /// `Monitor::builder(endpoints).build()?.spawn(2 s)`, `ready(5 s)`,
    /// `FailoverTransport::builder(endpoints).monitor(handle).build()`, reads through alloy's
    /// `RpcClient`. Nothing of the measure's shared settings (attempt timeout, probe timeout,
    /// `max_lag`, chain id) is added.
    ReadmeAlloy2s,
    /// The same at `spawn(5 s)`.
    ReadmeAlloy5s,
    /// The README's paired setup through the reqwest middleware, as pasted: the quick start's
    /// `Failover::builder(endpoints).classifier(JsonRpcClassifier::new())` and
    /// `.monitor(Monitor::builder(endpoints).build()?.spawn(2 s))`, `ready(5 s)` first; the
    /// builder's default attempt timeout (10 s).
    ReadmeReqwest2s,
    /// The same at `spawn(5 s)`.
    ReadmeReqwest5s,
}

/// The reference rule's cooldown, set explicitly (0.1's default).
pub const REFERENCE_COOLDOWN: (u32, Duration) = (3, Duration::from_secs(30));

/// The paired configuration's latency ordering margin.
pub const PAIRED_LATENCY_MARGIN: Duration = Duration::from_millis(10);
/// The paired configuration's hedge: after this quantile of the first endpoint's recent
/// latencies...
pub const PAIRED_HEDGE_QUANTILE: f64 = 0.95;
/// ... or after this delay while it has too few of them.
pub const PAIRED_HEDGE_FALLBACK: Duration = Duration::from_millis(50);

impl Subject {
    /// Every configuration, in the order the report prints them.
    pub const ALL: &'static [Subject] = &[
        Subject::Reference,
        Subject::CooldownDisabled,
        Subject::Default02,
        Subject::Default02JsonRpc,
        Subject::DisabledJsonRpc,
        Subject::Paired,
        Subject::Transport,
        Subject::TransportPaired,
        Subject::ReadmeAlloy2s,
        Subject::ReadmeAlloy5s,
        Subject::ReadmeReqwest2s,
        Subject::ReadmeReqwest5s,
    ];

    /// The README's setups, as pasted: the headline rows.
    pub const README: &'static [Subject] =
        &[Subject::ReadmeAlloy2s, Subject::ReadmeAlloy5s, Subject::ReadmeReqwest2s, Subject::ReadmeReqwest5s];

    /// A short name, for the report and `--configs`.
    pub fn name(self) -> &'static str {
        match self {
            Subject::Reference => "reference",
            Subject::CooldownDisabled => "cooldown-disabled",
            Subject::Default02 => "0.2-default",
            Subject::Default02JsonRpc => "0.2-default+jsonrpc",
            Subject::DisabledJsonRpc => "disabled+jsonrpc",
            Subject::Paired => "paired",
            Subject::Transport => "transport-defaults",
            Subject::TransportPaired => "transport-paired",
            Subject::ReadmeAlloy2s => "readme-alloy-2s",
            Subject::ReadmeAlloy5s => "readme-alloy-5s",
            Subject::ReadmeReqwest2s => "readme-reqwest-2s",
            Subject::ReadmeReqwest5s => "readme-reqwest-5s",
        }
    }

    /// What the configuration is, in one line.
    pub fn describe(self) -> &'static str {
        match self {
            Subject::Reference => "Cooldown::new(3, 30 s), status-only judge",
            Subject::CooldownDisabled => "Cooldown::disabled(), status-only judge",
            Subject::Default02 => "Cooldown::default() (adaptive), status-only judge",
            Subject::Default02JsonRpc => "Cooldown::default() (adaptive), JsonRpcClassifier",
            Subject::DisabledJsonRpc => "Cooldown::disabled(), JsonRpcClassifier",
            Subject::Paired => {
                "own Monitor as .monitor(), LatencyOrdering 10 ms, Hedge p95 (50 ms until measured), JsonRpcClassifier, Cooldown::default()"
            }
            Subject::Transport => {
                "the alloy transport's defaults: JsonRpcClassifier, Cooldown::default(), Budget 1.0 + 10/s, deadline 30 s"
            }
            Subject::TransportPaired => {
                "the alloy transport's defaults + own Monitor as .monitor() (Hedge p95 ≥ 10 ms, LatencyOrdering 10 ms)"
            }
            Subject::ReadmeAlloy2s | Subject::ReadmeAlloy5s => {
                "the README as pasted, through alloy's RpcClient: FailoverTransport::builder(..).monitor(Monitor::builder(..).build()?.spawn(interval)).build()"
            }
            Subject::ReadmeReqwest2s | Subject::ReadmeReqwest5s => {
                "the README as pasted, through reqwest: Failover::builder(..).classifier(JsonRpcClassifier::new()).monitor(Monitor::builder(..).build()?.spawn(interval))"
            }
        }
    }

    /// Whether the configuration has a monitor of its own as its health source (built,
    /// spawned and stopped by the measure), instead of the shared monitor as eligibility.
    pub fn is_paired(self) -> bool {
        matches!(self, Subject::Paired | Subject::TransportPaired)
    }

    /// The probe interval of a README setup (`spawn(interval)`), `None` for the others.
    pub fn readme_interval(self) -> Option<Duration> {
        match self {
            Subject::ReadmeAlloy2s | Subject::ReadmeReqwest2s => Some(Duration::from_secs(2)),
            Subject::ReadmeAlloy5s | Subject::ReadmeReqwest5s => Some(Duration::from_secs(5)),
            _ => None,
        }
    }

    /// Whether its reads go through alloy's `RpcClient` over `FailoverTransport`.
    pub fn is_alloy(self) -> bool {
        matches!(self, Subject::ReadmeAlloy2s | Subject::ReadmeAlloy5s)
    }

    /// Applies this configuration to a builder that already has the shared settings.
    pub fn configure(self, builder: FailoverBuilder) -> FailoverBuilder {
        match self {
            Subject::Reference => builder.cooldown(Cooldown::new(REFERENCE_COOLDOWN.0, REFERENCE_COOLDOWN.1)),
            Subject::CooldownDisabled => builder.cooldown(Cooldown::disabled()),
            Subject::Default02 => builder.cooldown(Cooldown::default()),
            Subject::Default02JsonRpc => {
                builder.cooldown(Cooldown::default()).classifier(failnext::jsonrpc::JsonRpcClassifier::new())
            }
            Subject::DisabledJsonRpc => {
                builder.cooldown(Cooldown::disabled()).classifier(failnext::jsonrpc::JsonRpcClassifier::new())
            }
            Subject::Paired => builder
                .latency_ordering(LatencyOrdering::new(PAIRED_LATENCY_MARGIN))
                .hedge(Hedge::percentile(PAIRED_HEDGE_QUANTILE).fallback(PAIRED_HEDGE_FALLBACK))
                .classifier(failnext::jsonrpc::JsonRpcClassifier::new())
                .cooldown(Cooldown::default()),
            Subject::Transport => transport_defaults(builder),
            Subject::TransportPaired => transport_defaults(builder)
                .latency_ordering(LatencyOrdering::new(alloy::DEFAULT_LATENCY_MARGIN)),
            Subject::ReadmeReqwest2s | Subject::ReadmeReqwest5s => {
                builder.classifier(failnext::jsonrpc::JsonRpcClassifier::new())
            }
            // Built by the measure as a transport, not a `Failover`.
            Subject::ReadmeAlloy2s | Subject::ReadmeAlloy5s => builder,
        }
    }
}

/// The settings `FailoverTransport::builder` adds to a `Failover` by default, paired or not
/// (paired, it adds the hedge and latency ordering too).
fn transport_defaults(builder: FailoverBuilder) -> FailoverBuilder {
    builder
        .classifier(failnext::jsonrpc::JsonRpcClassifier::new())
        .cooldown(Cooldown::default())
        .failover_budget(alloy::DEFAULT_BUDGET)
        .deadline(alloy::DEFAULT_DEADLINE)
}

/// A health source that records each eligibility answer in the read's log (for the "counted"
/// figure), and passes everything else through.
pub(crate) struct RecordedSource<S> {
    pub(crate) source: S,
    pub(crate) endpoints: Endpoints,
}

impl<S: HealthSource> HealthSource for RecordedSource<S> {
    fn eligible(&self, id: &EndpointId) -> bool {
        let answer = self.source.eligible(id);
        let i = self.endpoints.by_id(id.as_str());
        ReadLog::with(|l| l.0.push((i, answer)));
        answer
    }

    fn never(&self, id: &EndpointId) -> bool {
        self.source.never(id)
    }

    fn head(&self) -> Option<Head> {
        self.source.head()
    }

    fn head_of(&self, id: &EndpointId) -> Option<u64> {
        self.source.head_of(id)
    }

    fn last_good(&self, id: &EndpointId) -> Option<tokio::time::Instant> {
        self.source.last_good(id)
    }

    fn pair(&self, feed: LatencyFeed) {
        self.source.pair(feed);
    }

    fn observe(&self, id: &EndpointId, observation: Observation) {
        self.source.observe(id, observation);
    }

    fn check_now(&self, id: &EndpointId) {
        self.source.check_now(id);
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Subject {
    type Err = String;

    fn from_str(s: &str) -> Result<Subject, String> {
        Subject::ALL.iter().copied().find(|c| c.name() == s).ok_or_else(|| {
            let names: Vec<&str> = Subject::ALL.iter().map(|c| c.name()).collect();
            format!("unknown configuration {s:?}: expected one of {}", names.join(", "))
        })
    }
}

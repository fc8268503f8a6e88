//! The request scenarios: which servers, which variants, how many requests, and the
//! interleaved rounds that measure them.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use failnext::alloy::FailoverTransport;
use failnext::jsonrpc::JsonRpcClassifier;
use failnext::{Cooldown, Endpoint, Failover, Permission};

use crate::measure::{Summary, batch};
use crate::servers::{Behavior, Server, Servers};
use crate::variants::{BoxError, Variant};

/// The per-attempt deadline of the `hang` scenario.
pub(crate) const HANG_TIMEOUT: Duration = Duration::from_millis(50);

/// The request body of the `body-1mib` scenario.
pub(crate) const LARGE_BODY: usize = 1 << 20;

/// The names `--scenario` accepts, in run order (blocklag is handled by `blocklag.rs`).
pub(crate) const NAMES: [&str; 8] = [
    "healthy-post",
    "healthy-allow",
    "alloy-healthy",
    "refused",
    "unavailable",
    "body-1mib",
    "judge-1mib",
    "hang",
];

/// One scenario, ready to run.
#[derive(Debug)]
pub(crate) struct Scenario {
    pub(crate) name: &'static str,
    pub(crate) about: &'static str,
    /// The first variant is the reference of every ratio in the table.
    pub(crate) variants: Vec<Arc<Variant>>,
    /// Servers whose accepted connections are counted (the refusing socket is kept alive here).
    servers: Vec<Server>,
    /// Requests per batch.
    sizes: Sizes,
}

/// Requests per batch at concurrency 1 and 32, in a full run and in a quick one.
#[derive(Clone, Copy, Debug)]
struct Sizes {
    full: [usize; 2],
    quick: [usize; 2],
}

/// One scenario's results at one concurrency.
#[derive(Debug)]
pub(crate) struct Outcome {
    pub(crate) scenario: &'static str,
    pub(crate) about: &'static str,
    pub(crate) requests_per_batch: usize,
    pub(crate) rows: Vec<Summary>,
}

/// How big the run is.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plan {
    pub(crate) rounds: usize,
    pub(crate) quick: bool,
}

/// Builds the scenario called `name` on `servers`.
pub(crate) fn build(name: &str, servers: &Servers) -> Result<Scenario, BoxError> {
    match name {
        "healthy-post" | "healthy-allow" => healthy(servers, name == "healthy-allow"),
        "alloy-healthy" => alloy_healthy(servers),
        "refused" => refused(servers),
        "unavailable" => unavailable(servers),
        "body-1mib" => body_1mib(servers),
        "judge-1mib" => judge_1mib(servers),
        "hang" => hang(servers),
        other => Err(format!("unknown scenario {other:?}").into()),
    }
}

/// The healthy scenarios: the primary answers 200 to a POST, with or without
/// `allow_failover()` (`allow`: `healthy-allow`).
fn healthy(servers: &Servers, allow: bool) -> Result<Scenario, BoxError> {
    let ok = || servers.spawn(Behavior::Ok);
    let (primary, backup) = (ok()?, ok()?);
    let eps = endpoints(&[&primary, &backup]);
    // The baselines have no timeout, so `failover` has none either; `failover-timeout`
    // is the 0.2 default, which bounds each attempt (10 s) with reqwest's per-request
    // timeout: a timer per attempt.
    let failover = Failover::builder(eps.clone()).no_attempt_timeout().build()?;
    let timed = Failover::builder(eps.clone()).build()?;
    // Latency-aware ordering (opt-in, issue 12): a clock read per attempt and one
    // atomic average per endpoint; exploration off, so every request goes the same way.
    let ordered = Failover::builder(eps.clone())
        .no_attempt_timeout()
        .latency_ordering(
            failnext::LatencyOrdering::new(std::time::Duration::from_millis(50)).explore_every(0),
        )
        .build()?;
    let url = primary.url.as_str();
    let mut variants = vec![
        Variant::bare("bare", url)?,
        Variant::empty("empty", url)?,
        Variant::retry("retry", url)?,
        Variant::pass_through("pass-through", url)?,
        Variant::failover("failover", url, failover, allow)?,
        Variant::failover("failover-timeout", url, timed, allow)?,
        Variant::failover("failover-latency", url, ordered, allow)?,
    ];
    if allow {
        // The same permission from a client-wide policy: no per-request extension.
        let policy = Failover::builder(eps).permission_policy(allow_post).no_attempt_timeout().build()?;
        variants.push(Variant::failover("failover-policy", url, policy, false)?);
    }
    let about = if allow {
        "primary answers 200; POST with allow_failover() (failover-policy: a permission_policy \
         allowing POST instead): failnext may fail over, so it copies the request up front"
    } else {
        "primary answers 200; POST without allow: failnext cannot fail over"
    };
    Ok(Scenario {
        name: if allow { "healthy-allow" } else { "healthy-post" },
        about,
        variants: arcs(variants),
        servers: vec![primary, backup],
        sizes: Sizes { full: [1000, 3000], quick: [20, 64] },
    })
}

/// `alloy-healthy`: an alloy `RpcClient` over alloy's `Http` and over failnext's transport.
fn alloy_healthy(servers: &Servers) -> Result<Scenario, BoxError> {
    let (primary, backup) = (servers.spawn(Behavior::EchoId)?, servers.spawn(Behavior::EchoId)?);
    let eps = endpoints(&[&primary, &backup]);
    // As in healthy-*: no attempt timeout, since alloy's `Http` has none, and no request
    // deadline or failover budget. On the same client as alloy's `Http` (reqwest's defaults
    // without proxies): with the default `reqwest::Client::new()`, reqwest's proxy matcher
    // alone would cost ~1300 instructions per request that the baseline does not pay.
    let builder = || -> Result<_, BoxError> {
        Ok(FailoverTransport::builder(eps.clone())
            .client(crate::variants::reqwest_client()?)
            .no_attempt_timeout()
            .no_deadline()
            .no_failover_budget())
    };
    let jsonrpc = builder()?.build()?;
    let chain = builder()?.call_middleware(crate::variants::PassThrough).build()?;
    let url = primary.url.as_str();
    Ok(Scenario {
        name: "alloy-healthy",
        about: "primary answers eth_blockNumber (echoing the id); an alloy RpcClient calls it over \
                alloy's Http (reqwest, no TLS), over FailoverTransport::builder (JSON-RPC \
                classifier, the default; no deadline, no budget), the same on a client chain \
                with a pass-through middleware, and (for scale) over Http's healthy path rewritten on a ClientWithMiddleware with a \
                do-nothing middleware",
        variants: arcs(vec![
            Variant::alloy_http("alloy-http", url)?,
            Variant::alloy_failover("failnext-transport", url, jsonrpc)?,
            Variant::alloy_failover("failnext-transport-chain", url, chain)?,
            Variant::alloy_chain("alloy-chain-pass-through", url)?,
        ]),
        servers: vec![primary, backup],
        sizes: Sizes { full: [1000, 3000], quick: [20, 64] },
    })
}

/// `refused`: the primary refuses connections.
fn refused(servers: &Servers) -> Result<Scenario, BoxError> {
    let ok = || servers.spawn(Behavior::Ok);
    let allow = true;
    let (primary, backup) = (servers.refusing()?, ok()?);
    let eps = endpoints(&[&primary, &backup]);
    let plain = Failover::builder(eps.clone()).cooldown(Cooldown::disabled()).no_attempt_timeout().build()?;
    // One refused connection trips it; the warm-up batch does that before measuring.
    let cooled = Failover::builder(eps)
        .cooldown(Cooldown::new(1, Duration::from_secs(3600)))
        .no_attempt_timeout()
        .build()?;
    let (p, b) = (primary.url.as_str(), backup.url.as_str());
    Ok(Scenario {
        name: "refused",
        about: "primary refuses connections; baselines go straight to the backup",
        variants: arcs(vec![
            Variant::bare("bare→backup", b)?,
            Variant::empty("empty→backup", b)?,
            Variant::failover("failover", p, plain, allow)?,
            Variant::failover("failover-cooled", p, cooled, allow)?,
        ]),
        servers: vec![primary, backup],
        sizes: Sizes { full: [1000, 3000], quick: [20, 64] },
    })
}

/// `unavailable`: the primary answers 503.
fn unavailable(servers: &Servers) -> Result<Scenario, BoxError> {
    let ok = || servers.spawn(Behavior::Ok);
    let allow = true;
    let (primary, backup) = (servers.spawn(Behavior::Unavailable)?, ok()?);
    // Cooldown off: with it, the primary would be skipped after three 503s.
    let failover = Failover::builder(endpoints(&[&primary, &backup]))
        .cooldown(Cooldown::disabled())
        .no_attempt_timeout()
        .build()?;
    let (p, b) = (primary.url.as_str(), backup.url.as_str());
    Ok(Scenario {
        name: "unavailable",
        about: "primary answers 503 (small body); app-loop tries primary then backup by hand",
        variants: arcs(vec![
            Variant::bare("bare→backup", b)?,
            Variant::app_loop("app-loop", p, b)?,
            Variant::failover("failover", p, failover, allow)?,
        ]),
        servers: vec![primary, backup],
        sizes: Sizes { full: [800, 2400], quick: [20, 64] },
    })
}

/// `body-1mib`: a 1 MiB body, two endpoints answering 503 after reading it.
fn body_1mib(servers: &Servers) -> Result<Scenario, BoxError> {
    let ok = || servers.spawn(Behavior::Ok);
    let allow = true;
    let (first, second) = (servers.spawn(Behavior::Unavailable)?, servers.spawn(Behavior::Unavailable)?);
    let backup = ok()?;
    let failover = Failover::builder(endpoints(&[&first, &second, &backup]))
        .cooldown(Cooldown::disabled())
        .no_attempt_timeout()
        .build()?;
    let body = Bytes::from(vec![b' '; LARGE_BODY]);
    let (p, b) = (first.url.as_str(), backup.url.as_str());
    Ok(Scenario {
        name: "body-1mib",
        about: "1 MiB Bytes body; two endpoints answer 503 after reading it, the third 200",
        variants: arcs(vec![
            Variant::bare("bare→backup", b)?.with_body(body.clone()),
            Variant::empty("empty→backup", b)?.with_body(body.clone()),
            Variant::failover("failover", p, failover, allow)?.with_body(body),
        ]),
        servers: vec![first, second, backup],
        sizes: Sizes { full: [100, 200], quick: [4, 32] },
    })
}

/// `judge-1mib`: a 1 MiB JSON-RPC answer, judged by status or read whole.
fn judge_1mib(servers: &Servers) -> Result<Scenario, BoxError> {
    let ok = || servers.spawn(Behavior::Ok);
    let allow = true;
    let (primary, backup) = (servers.spawn(Behavior::BigJson)?, ok()?);
    let eps = endpoints(&[&primary, &backup]);
    let status_only = Failover::builder(eps.clone()).build()?;
    let jsonrpc = Failover::builder(eps).classifier(JsonRpcClassifier::new()).build()?;
    let url = primary.url.as_str();
    Ok(Scenario {
        name: "judge-1mib",
        about: "primary answers 200 with a 1 MiB JSON-RPC result, read whole; failover judges \
                by status, failover-jsonrpc reads and judges the body",
        variants: arcs(vec![
            Variant::bare("bare", url)?,
            Variant::empty("empty", url)?,
            Variant::failover("failover", url, status_only, allow)?,
            Variant::failover("failover-jsonrpc", url, jsonrpc, allow)?,
        ]),
        servers: vec![primary, backup],
        sizes: Sizes { full: [100, 200], quick: [4, 32] },
    })
}

/// `hang`: the primary never answers.
fn hang(servers: &Servers) -> Result<Scenario, BoxError> {
    let ok = || servers.spawn(Behavior::Ok);
    let allow = true;
    let (primary, backup) = (servers.spawn(Behavior::Hang)?, ok()?);
    let failover = Failover::builder(endpoints(&[&primary, &backup]))
        .cooldown(Cooldown::disabled())
        .attempt_timeout(HANG_TIMEOUT)
        .build()?;
    let (p, b) = (primary.url.as_str(), backup.url.as_str());
    Ok(Scenario {
        name: "hang",
        about: "primary never answers; failnext has attempt_timeout(50 ms), cooldown off",
        variants: arcs(vec![
            Variant::bare("bare→backup", b)?,
            Variant::empty("empty→backup", b)?,
            Variant::failover("failover", p, failover, allow)?,
        ]),
        servers: vec![primary, backup],
        sizes: Sizes { full: [6, 32], quick: [2, 32] },
    })
}

impl Scenario {
    /// Keeps only the variants named in `names` (all of them when `names` is empty).
    pub(crate) fn retain_variants(&mut self, names: &[String]) {
        if !names.is_empty() {
            self.variants.retain(|v| names.iter().any(|n| n == v.name));
        }
    }
}

/// Runs `scenario` sequentially and at concurrency 32: a warm-up batch per variant, then
/// `plan.rounds` rounds in which every variant runs one batch, in an order rotated each round.
pub(crate) async fn run(scenario: &Scenario, plan: Plan) -> Vec<Outcome> {
    let watch: Vec<&Server> = scenario.servers.iter().collect();
    let mut outcomes = Vec::new();
    for (i, concurrency) in [1, 32].into_iter().enumerate() {
        let n = if plan.quick { scenario.sizes.quick[i] } else { scenario.sizes.full[i] };
        for v in &scenario.variants {
            batch(v, n.min(concurrency * 8).max(concurrency), concurrency, &watch).await;
        }
        let mut samples: Vec<Vec<_>> = scenario.variants.iter().map(|_| Vec::new()).collect();
        for round in 0..plan.rounds {
            for k in 0..scenario.variants.len() {
                let v = (k + round) % scenario.variants.len();
                samples[v].push(batch(&scenario.variants[v], n, concurrency, &watch).await);
            }
        }
        let rows = scenario.variants.iter().zip(samples).map(|(v, s)| Summary::of(v.name, concurrency, s));
        outcomes.push(Outcome {
            scenario: scenario.name,
            about: scenario.about,
            requests_per_batch: n,
            rows: rows.collect(),
        });
    }
    outcomes
}

fn allow_post(req: &reqwest::Request) -> Permission {
    if req.method() == reqwest::Method::POST { Permission::Allow } else { Permission::Defer }
}

fn endpoints(servers: &[&Server]) -> Vec<Endpoint> {
    let names = ["primary", "secondary", "backup"];
    let last = servers.len() - 1;
    servers
        .iter()
        .enumerate()
        .map(|(i, s)| Endpoint::new(if i == last { "backup" } else { names[i] }, s.url.clone()))
        .collect()
}

fn arcs(variants: Vec<Variant>) -> Vec<Arc<Variant>> {
    variants.into_iter().map(Arc::new).collect()
}

//! A rehearsal of read bundles: a two-pool quote bot reading through read bundles while its
//! providers fail in every way a bot meets (a fork, a wrong chain, lag, rate limits, pruned
//! state).
//!
//! Six simulated providers of one chain, in priority order:
//!
//! | provider | what is wrong | the rule that handles it |
//! |---|---|---|
//! | `forked` | the same heights on a fork of its own: other block hashes | the monitor's agreement ignores its hash; a pinned read finds no such block there and moves on (the bundle does not ask it again) |
//! | `wrong-chain` | another chain id | the monitor checks the chain id: never eligible |
//! | `lagging` | 20 blocks behind: old but valid answers | the monitor's lag limit: not eligible |
//! | `limited` | healthy, then rate limited (HTTP 429, `Retry-After`) | failnext's breaker cools it for the hint; the monitor's probes fail too |
//! | `full` | no archive state: only its newest blocks | a "missing trie node" answer to a historical read excludes it from historical reads only |
//! | `archive` | nothing | serves what the others cannot |
//!
//! A [`Monitor`] probes every provider's head with its hash (`head_with_hash`) and publishes
//! the agreed head: the highest `(number, hash)` that at least two eligible providers report.
//! For each decision the bot takes that reference, opens a [`Bundle`] on it and reads both
//! pools' reserves (`eth_call` of `getReserves()`, which the simulator answers with the hash of
//! the block it ran against); every few decisions it also reads at a reference it used earlier,
//! far enough back that a node without archive state no longer has it. A quote whose two
//! reads come from different blocks, a read not pinned by hash, too many requests or too
//! much time break the rehearsal.

use std::fmt;
use std::time::{Duration, Instant};

use alloy::primitives::B256;
use alloy::rpc::client::RpcClient;
use failnext::Endpoint;
use failnext::alloy::{BlockRef, Bundle, Capability, FailoverTransport, Failure};
use failnext_blocklag::{Monitor, MonitorHandle};
use serde_json::{Value, json};

use crate::demo::DemoError;
use crate::sim::{Behaviour, Chain, GET_RESERVES, Provider};

/// The chain id of the rehearsal's chain.
const CHAIN_ID: u64 = 1;

/// The two pools a quote reads.
const POOLS: [&str; 2] =
    ["0x00000000000000000000000000000000000000a1", "0x00000000000000000000000000000000000000b2"];

/// The full node keeps state for this many blocks; the transport's archive depth is the same.
const STATE_KEPT: u64 = 32;

/// A historical read goes at least this far back (past what the full node keeps).
const HISTORY: u64 = STATE_KEPT + 8;

/// The request budget: requests per read on average (a first read of a bundle may first meet
/// the forked provider).
pub const REQUESTS_PER_READ: f64 = 2.0;
/// The time budget of one decision's reads.
pub const TIME_PER_DECISION: Duration = Duration::from_millis(100);

/// How the rehearsal runs.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Quotes to build.
    pub decisions: usize,
    /// The chain's block time.
    pub block_time: Duration,
    /// How often the monitor checks.
    pub check_every: Duration,
    /// Every this many decisions, one read at an earlier reference.
    pub historical_every: usize,
    /// A decision starts this often (a bot quotes on a schedule, not in a loop).
    pub every: Duration,
}

impl Default for Plan {
    fn default() -> Plan {
        Plan {
            decisions: 80,
            block_time: Duration::from_millis(20),
            check_every: Duration::from_millis(50),
            historical_every: 5,
            every: Duration::from_millis(25),
        }
    }
}

/// What the rehearsal measured.
#[derive(Clone, Debug, Default)]
pub struct Rehearsal {
    /// Quotes built (both pools read at one reference).
    pub quotes: u64,
    /// Distinct references the quotes were built at.
    pub references: u64,
    /// Quotes whose two reads came from different blocks, or not from the reference: must be 0.
    pub mixed: u64,
    /// Decisions restarted at a new reference because no provider knew the old one.
    pub restarts: u64,
    /// Reads that failed otherwise.
    pub failed: u64,
    /// Historical reads answered at their reference.
    pub historical: u64,
    /// Historical reads that failed.
    pub historical_failed: u64,
    /// State reads any provider received that were not pinned by hash: must be 0.
    pub unpinned: u64,
    /// `eth_call`s the providers received (every read attempt of the bot).
    pub requests: u64,
    /// Reads the bot made (two per quote, one per historical read).
    pub reads: u64,
    /// The time the decisions took (their reads), the schedule's waits apart.
    pub elapsed: Duration,
    /// The slowest decision.
    pub slowest: Duration,
    /// Whether the full node was found to lack archive state.
    pub full_lacks_archive: bool,
    /// `eth_call`s the full node received.
    pub full_calls: u64,
    /// Decisions run.
    pub decisions: u64,
}

impl Rehearsal {
    /// The request budget: [`REQUESTS_PER_READ`] per read.
    pub fn request_budget(&self) -> u64 {
        (self.reads as f64 * REQUESTS_PER_READ).ceil() as u64
    }

    /// The time budget: [`TIME_PER_DECISION`] per decision.
    pub fn time_budget(&self) -> Duration {
        TIME_PER_DECISION * self.decisions as u32
    }

    /// Whether every rule held: no quote from two references, no unpinned read, every read
    /// answered (restarts aside), the budgets kept, and the full node used for current reads
    /// while skipped for historical ones.
    pub fn holds(&self) -> bool {
        self.quotes > 0
            && self.mixed == 0
            && self.unpinned == 0
            && self.failed == 0
            && self.historical > 0
            && self.historical_failed == 0
            && self.requests <= self.request_budget()
            && self.elapsed <= self.time_budget()
            && self.full_lacks_archive
            && self.full_calls > 0
    }
}

impl fmt::Display for Rehearsal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rehearsal: {} quotes at {} references, {} from two references, {} reads at an unpinned latest, \
             {} historical reads ({} failed; the full node found without archive state: {}, {} current reads \
             sent to it), {} restarts, {} requests for {} reads (budget {}), {:.2?} (budget {:.2?}, slowest \
             decision {:.2?}): {}",
            self.quotes,
            self.references,
            self.mixed,
            self.unpinned,
            self.historical,
            self.historical_failed,
            self.full_lacks_archive,
            self.full_calls,
            self.restarts,
            self.requests,
            self.reads,
            self.request_budget(),
            self.elapsed,
            self.time_budget(),
            self.slowest,
            if self.holds() { "held" } else { "BROKEN" },
        )
    }
}

/// The rehearsal's providers, in priority order.
struct Cast {
    chain: Chain,
    forked: Provider,
    wrong_chain: Provider,
    lagging: Provider,
    limited: Provider,
    full: Provider,
    archive: Provider,
}

impl Cast {
    async fn start(plan: &Plan) -> Result<Cast, DemoError> {
        let chain = Chain::start(CHAIN_ID, plan.block_time);
        let start = |id: &'static str| {
            let chain = chain.clone();
            async move { chain.provider(id).await.map_err(|e| DemoError::new(format!("provider {id}: {e}"))) }
        };
        let cast = Cast {
            forked: start("forked").await?,
            wrong_chain: start("wrong-chain").await?,
            lagging: start("lagging").await?,
            limited: start("limited").await?,
            full: start("full").await?,
            archive: start("archive").await?,
            chain,
        };
        let set = |p: &Provider, b: Behaviour| {
            let p = p.clone();
            async move { p.set(b).await.map_err(|e| DemoError::new(format!("provider {}: {e}", p.id()))) }
        };
        set(&cast.forked, Behaviour::Forked(9)).await?;
        set(&cast.wrong_chain, Behaviour::WrongChain(5)).await?;
        set(&cast.lagging, Behaviour::Lagging(20)).await?;
        set(&cast.full, Behaviour::NoArchive(STATE_KEPT)).await?;
        Ok(cast)
    }

    fn all(&self) -> [&Provider; 6] {
        [&self.forked, &self.wrong_chain, &self.lagging, &self.limited, &self.full, &self.archive]
    }

    fn endpoints(&self) -> Vec<Endpoint> {
        self.all().iter().map(|p| p.endpoint()).collect()
    }
}

/// Runs the rehearsal.
///
/// # Errors
///
/// When a simulated provider or the client cannot be set up.
pub async fn rehearse(plan: Plan) -> Result<Rehearsal, DemoError> {
    let cast = Cast::start(&plan).await?;
    let monitor = Monitor::builder(cast.endpoints())
        .head_with_hash()
        .agreement(2)
        .expected_chain_id(CHAIN_ID)
        .max_lag(3)
        .build()
        .map_err(DemoError::new)?;
    let _ = monitor.check().await;
    let polling: MonitorHandle = monitor.spawn(plan.check_every);
    let heads = monitor.clone();
    let transport = FailoverTransport::builder(cast.endpoints())
        .eligible(monitor.clone())
        .no_deadline()
        .no_failover_budget()
        .archive_depth(STATE_KEPT)
        .monotonic_reads(move |id| heads.snapshot()?.height(id))
        .build()
        .map_err(DemoError::new)?;

    let mut out = Rehearsal::default();
    let mut used: Vec<BlockRef> = Vec::new();
    let mut schedule = tokio::time::interval(plan.every);
    for decision in 0..plan.decisions {
        schedule.tick().await;
        if decision == plan.decisions / 3 {
            let limited = Behaviour::RateLimited { retry_after_secs: 2 };
            cast.limited.set(limited).await.map_err(DemoError::new)?;
        }
        let began = Instant::now();
        out.decisions += 1;
        // At most one restart per decision: a reference no provider knows is replaced once.
        for _ in 0..2 {
            let Some(reference) = agreed(&monitor, plan.check_every).await else {
                out.failed += 1;
                break;
            };
            match quote(&transport.bundle(reference), &mut out).await {
                Ok(()) => {
                    if used.last() != Some(&reference) {
                        out.references += 1;
                        used.push(reference);
                    }
                    break;
                }
                Err(Restart) => out.restarts += 1,
            }
        }
        if decision % plan.historical_every == plan.historical_every - 1 {
            let now = used.last().map_or(0, |r| r.number);
            if let Some(old) = used.iter().rev().find(|r| r.number + HISTORY <= now).copied() {
                historical(&transport.bundle(old), &mut out).await;
            }
        }
        out.slowest = out.slowest.max(began.elapsed());
        out.elapsed += began.elapsed();
    }
    drop(polling);
    out.unpinned = cast.all().iter().map(|p| p.unpinned_reads()).sum();
    out.requests = cast.all().iter().map(|p| p.count("eth_call")).sum();
    out.full_calls = cast.full.count("eth_call");
    out.full_lacks_archive = transport.lacking("full").contains(&Capability::Archive);
    drop(cast.chain);
    Ok(out)
}

/// The agreed head of the newest snapshot, waiting up to a few checks for one.
async fn agreed(monitor: &Monitor, check_every: Duration) -> Option<BlockRef> {
    for _ in 0..8 {
        if let Some(agreed) = monitor.snapshot().and_then(|s| s.agreed().cloned()) {
            return Some(BlockRef::new(agreed.number(), B256::from(agreed.hash().into_bytes())));
        }
        tokio::time::sleep(check_every / 2).await;
    }
    None
}

/// The decision must start again at a new reference: no provider knows this one.
struct Restart;

/// Reads both pools through `bundle` and counts the quote.
async fn quote(bundle: &Bundle, out: &mut Rehearsal) -> Result<(), Restart> {
    let client = RpcClient::new(bundle.clone(), true);
    let mut answers = Vec::with_capacity(2);
    for pool in POOLS {
        out.reads += 1;
        match reserves(&client, pool).await {
            Ok(answer) => answers.push(answer),
            Err(e) if Failure::find(&e).is_some_and(|f| f.is_reference_unknown()) => return Err(Restart),
            Err(_) => {
                out.failed += 1;
                return Ok(());
            }
        }
    }
    out.quotes += 1;
    let reference = bundle.reference().hash;
    if answers.iter().any(|a| *a != reference) {
        out.mixed += 1;
    }
    Ok(())
}

/// One read at an earlier reference.
async fn historical(bundle: &Bundle, out: &mut Rehearsal) {
    let client = RpcClient::new(bundle.clone(), true);
    out.reads += 1;
    match reserves(&client, POOLS[0]).await {
        Ok(answer) if answer == bundle.reference().hash => out.historical += 1,
        _ => out.historical_failed += 1,
    }
}

/// `getReserves()` of `pool`: the simulator answers with the hash of the block it ran against.
async fn reserves(client: &RpcClient, pool: &str) -> Result<B256, alloy::transports::TransportError> {
    let call: Value = json!({ "to": pool, "data": GET_RESERVES });
    client.request("eth_call", (call,)).await
}

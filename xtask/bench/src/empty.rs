//! The `empty-behind` scenario: the empty answers of a provider a few blocks behind.
//!
//! Three loopback providers on one chain whose head advances by one block every
//! [`BLOCK_TIME`] from the contender's start. `primary` is [`BEHIND`] blocks behind: it answers
//! `eth_blockNumber` and `eth_getBlockByNumber("latest")` with its own head, `null` for a block,
//! transaction or receipt above it and `[]` for logs whose `toBlock` is above it (what a real
//! provider answers for what it has not got yet). `secondary` and `backup` are current.
//! Transaction hash `n` (32-byte big-endian) belongs to block `n`, one log per block.
//!
//! Every contender is an alloy `RpcClient`; [`LANES`] tasks each start a read every [`GAP`]
//! (open loop), rotating among `eth_getTransactionReceipt(tx of block head−k)`,
//! `eth_getBlockByNumber(head−k)` and `eth_getLogs(head−k..=head−k)` for `k` in `0..=2`, `head`
//! being the true head at the read's start: blocks the current providers have and the
//! primary has not. A read is correct when it returns that block's object (receipt, block, its
//! one log); an empty answer is wrong (a current provider had the block), and so is an error or
//! no answer within [`CALL_LIMIT`].
//!
//! Measured per contender: reads, the correct share, empty answers returned, other wrong
//! answers, requests per read (counted at the three servers, the failnext-blocklag monitor's
//! probes apart by their User-Agent), the monitor's probes per provider per second (from its
//! spawn to the last read), the primary's lag as the monitor last saw it, p50 and p99.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use alloy::rpc::client::RpcClient;
use alloy::transports::http::Http;
use alloy::transports::layers::FallbackService;
use failnext::Endpoint;
use failnext::alloy::FailoverTransport;
use failnext_blocklag::Monitor;
use failnext_loopback::{Action, Handler, Received, Reply};
use serde_json::{Value, json};

use crate::measure::quantile;
use crate::servers::Servers;
use crate::variants::{BoxError, reqwest_client};

/// The chain's head at the contender's start.
const BASE: u64 = 0x1000;

/// One block every this long.
const BLOCK_TIME: Duration = Duration::from_millis(50);

/// How many blocks the primary is behind.
const BEHIND: u64 = 5;

/// Tasks sending reads.
const LANES: usize = 4;

/// Each task starts a read this often (when the previous one has returned): ~500 reads/s.
const GAP: Duration = Duration::from_millis(8);

/// Reads per contender (quick: a smoke run).
const READS: usize = 2000;
const QUICK_READS: usize = 60;

/// A contender starts no read after this long.
const RUN_LIMIT: Duration = Duration::from_secs(20);

/// A read not answered within this counts as wrong and is abandoned.
const CALL_LIMIT: Duration = Duration::from_secs(5);

/// The User-Agent of the monitor's probes (so the servers count them apart).
const PROBE_AGENT: &str = "failnext-bench-empty-probe";

/// The contenders.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Peer {
    /// alloy's `Http` to the primary alone.
    AlloyHttp,
    /// `FallbackLayer::default()` over the three (`FallbackService::new(.., 3)`: every read to
    /// all three at once, the first `Ok` wins).
    Fallback,
    /// `FailoverTransport::builder(..).build()`: no monitor, so no per-provider heads.
    Failnext,
    /// The defaults paired with a monitor, `spawn(2 s)` as the README pastes it.
    Paired2s,
    /// The same, `spawn(5 s)`.
    Paired5s,
}

const PEERS: [Peer; 5] = [Peer::AlloyHttp, Peer::Fallback, Peer::Failnext, Peer::Paired2s, Peer::Paired5s];

impl Peer {
    fn name(self) -> &'static str {
        match self {
            Peer::AlloyHttp => "alloy Http (primary only)",
            Peer::Fallback => "alloy FallbackLayer (default: 3 at once)",
            Peer::Failnext => "failnext (defaults, no monitor)",
            Peer::Paired2s => "failnext (paired, spawn 2 s)",
            Peer::Paired5s => "failnext (paired, spawn 5 s)",
        }
    }

    fn every(self) -> Option<Duration> {
        match self {
            Peer::Paired2s => Some(Duration::from_secs(2)),
            Peer::Paired5s => Some(Duration::from_secs(5)),
            _ => None,
        }
    }
}

/// One contender's figures.
#[derive(Debug)]
pub(crate) struct Row {
    pub(crate) peer: Peer,
    pub(crate) reads: u64,
    pub(crate) correct: u64,
    /// `null` / `[]` returned for a block the current providers had.
    pub(crate) empty: u64,
    /// Errors, timeouts and answers for another block.
    pub(crate) failed: u64,
    /// Requests the three servers received, probes excluded, per read.
    pub(crate) requests_per_read: f64,
    /// The monitor's probes per provider per second, from its spawn (the paired rows).
    pub(crate) probes_per_provider_s: Option<f64>,
    /// How many blocks behind the monitor last saw the primary (the paired rows).
    pub(crate) seen_lag: Option<u64>,
    pub(crate) p50_ms: f64,
    pub(crate) p99_ms: f64,
}

/// Runs every contender, each on fresh servers and a fresh chain.
pub(crate) async fn run(servers: &Servers, quick: bool) -> Result<Vec<Row>, BoxError> {
    let reads = if quick { QUICK_READS } else { READS };
    let mut rows = Vec::new();
    for peer in PEERS {
        rows.push(run_one(servers, peer, reads).await?);
    }
    Ok(rows)
}

// ===== the chain =====

/// The chain every provider of one contender serves: its head advances from [`BASE`] by one
/// block every [`BLOCK_TIME`] from `started`.
#[derive(Clone, Copy, Debug)]
struct Chain {
    started: Instant,
    /// The wall clock at `started` (block timestamps).
    unix: Duration,
}

impl Chain {
    fn new() -> Chain {
        Chain {
            started: Instant::now(),
            unix: SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default(),
        }
    }

    /// The true head at `at`.
    fn head_at(&self, at: Instant) -> u64 {
        let blocks = at.saturating_duration_since(self.started).as_nanos() / BLOCK_TIME.as_nanos();
        BASE + blocks as u64
    }

    fn head(&self) -> u64 {
        self.head_at(Instant::now())
    }

    /// Block `n` as `eth_getBlockByNumber` answers it; its timestamp when it was made.
    fn block(&self, n: u64) -> Value {
        let made = self.unix + BLOCK_TIME * (n.saturating_sub(BASE) as u32);
        json!({
            "number": hex(n),
            "hash": block_hash(n),
            "parentHash": block_hash(n.saturating_sub(1)),
            "timestamp": hex(made.as_secs()),
            "transactions": [tx_hash(n)],
        })
    }
}

fn hex(n: u64) -> String {
    format!("0x{n:x}")
}

/// The hash of block `n`'s one transaction: `n`, 32 bytes big-endian.
fn tx_hash(n: u64) -> String {
    format!("0x{n:064x}")
}

/// The hash of block `n`: `0xbb` and `n` (unlike any transaction's).
fn block_hash(n: u64) -> String {
    format!("0xbb{n:062x}")
}

fn receipt(n: u64) -> Value {
    json!({
        "transactionHash": tx_hash(n),
        "transactionIndex": "0x0",
        "blockNumber": hex(n),
        "blockHash": block_hash(n),
        "status": "0x1",
        "gasUsed": "0x5208",
        "logs": [],
    })
}

fn transaction(n: u64) -> Value {
    json!({ "hash": tx_hash(n), "blockNumber": hex(n), "blockHash": block_hash(n), "transactionIndex": "0x0" })
}

fn log(n: u64) -> Value {
    json!({
        "address": format!("0x{:040x}", 0xe117u64),
        "topics": [],
        "data": "0x",
        "blockNumber": hex(n),
        "blockHash": block_hash(n),
        "transactionHash": tx_hash(n),
        "transactionIndex": "0x0",
        "logIndex": "0x0",
        "removed": false,
    })
}

/// A quantity (`0x..`), or `None`.
fn quantity(v: Option<&Value>) -> Option<u64> {
    u64::from_str_radix(v?.as_str()?.strip_prefix("0x")?, 16).ok()
}

/// A block parameter: a number, or the head for a tag (and when absent).
fn block_param(v: Option<&Value>, head: u64) -> Option<u64> {
    match v.and_then(Value::as_str) {
        None | Some("latest" | "pending" | "safe" | "finalized") => Some(head),
        Some("earliest") => Some(0),
        Some(_) => quantity(v),
    }
}

/// The block a hash names: a transaction's (`n`) or a block's (`0xbb` and `n`).
fn hashed(v: Option<&Value>, prefix: &str) -> Option<u64> {
    let text = v?.as_str()?.strip_prefix(prefix)?;
    u64::from_str_radix(text, 16).ok()
}

/// The result of one call to a provider at `head`: `Ok(result)` or `Err(message)` (an unknown
/// method or bad parameters).
fn result(method: &str, params: &[Value], chain: &Chain, head: u64) -> Result<Value, String> {
    let have = |n: u64| n <= head;
    let bad = || format!("invalid params for {method}");
    Ok(match method {
        "eth_chainId" => Value::from("0x1"),
        "eth_blockNumber" => Value::from(hex(head)),
        "eth_getBlockByNumber" => {
            let n = block_param(params.first(), head).ok_or_else(bad)?;
            if have(n) { chain.block(n) } else { Value::Null }
        }
        "eth_getBlockByHash" => {
            let n = hashed(params.first(), "0xbb").ok_or_else(bad)?;
            if have(n) { chain.block(n) } else { Value::Null }
        }
        "eth_getBlockReceipts" => {
            let n = block_param(params.first(), head).ok_or_else(bad)?;
            if have(n) { json!([receipt(n)]) } else { Value::Null }
        }
        "eth_getTransactionReceipt" | "eth_getTransactionByHash" => {
            let n = hashed(params.first(), "0x").ok_or_else(bad)?;
            match (have(n), method) {
                (false, _) => Value::Null,
                (true, "eth_getTransactionReceipt") => receipt(n),
                (true, _) => transaction(n),
            }
        }
        "eth_getLogs" => {
            let filter = params.first().ok_or_else(bad)?;
            let to = block_param(filter.get("toBlock"), head).ok_or_else(bad)?;
            let from = block_param(filter.get("fromBlock"), head).ok_or_else(bad)?;
            if !have(to) || from > to {
                json!([])
            } else {
                Value::Array((from.max(to.saturating_sub(1000))..=to).map(log).collect())
            }
        }
        _ => return Err(format!("the method {method} does not exist/is not available")),
    })
}

/// The JSON-RPC answer to one call by a provider at `head`, and whether it is empty.
fn one(call: &Value, chain: &Chain, head: u64) -> (Value, bool) {
    let id = call.get("id").cloned().unwrap_or_default();
    let method = call.get("method").and_then(Value::as_str).unwrap_or_default();
    let params = call.get("params").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    match result(method, params, chain, head) {
        Ok(result) => {
            let empty = result.is_null() || result.as_array().is_some_and(Vec::is_empty);
            (json!({"jsonrpc": "2.0", "id": id, "result": result}), empty)
        }
        Err(message) => {
            (json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": message}}), false)
        }
    }
}

/// The answer to a request (a call or a batch) by a provider `behind` blocks behind, and
/// whether any of its results is empty.
fn answer(req: &Received, chain: &Chain, behind: u64) -> (Value, bool) {
    let head = chain.head().saturating_sub(behind);
    match req.json() {
        Value::Array(calls) => {
            let answers: Vec<(Value, bool)> = calls.iter().map(|c| one(c, chain, head)).collect();
            let empty = answers.iter().any(|a| a.1);
            (Value::Array(answers.into_iter().map(|a| a.0).collect()), empty)
        }
        call => one(&call, chain, head),
    }
}

// ===== the providers =====

/// What a provider counts.
#[derive(Debug, Default)]
struct Counts {
    /// The monitor's probes.
    probes: AtomicU64,
    /// Every other request.
    requests: AtomicU64,
    /// Of those, the ones answered with an empty result.
    empties: AtomicU64,
}

fn serve(servers: &Servers, chain: Chain, behind: u64) -> Result<(String, Arc<Counts>), BoxError> {
    let counts = Arc::new(Counts::default());
    let counted = counts.clone();
    let handler: Handler = Arc::new(move |req: &Received| {
        let (body, empty) = answer(req, &chain, behind);
        let reply = Reply::new(200).json(body.to_string());
        if req.headers.get(reqwest::header::USER_AGENT).is_some_and(|v| v == PROBE_AGENT) {
            counted.probes.fetch_add(1, Relaxed);
        } else {
            counted.requests.fetch_add(1, Relaxed);
            if empty {
                counted.empties.fetch_add(1, Relaxed);
            }
        }
        Action::Reply(reply)
    });
    let server = servers.serve(handler)?;
    Ok((format!("http://{}/", server.addr()), counts))
}

// ===== the reads =====

/// How one read went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    Correct,
    Empty,
    Failed,
}

/// Read `i` at true head `head`: its method, its parameters, and the block it asks of.
fn read(i: usize, head: u64) -> (&'static str, Value, u64) {
    let n = head - (i / 3 % 3) as u64;
    match i % 3 {
        0 => ("eth_getTransactionReceipt", json!([tx_hash(n)]), n),
        1 => ("eth_getBlockByNumber", json!([hex(n), false]), n),
        _ => ("eth_getLogs", json!([{"fromBlock": hex(n), "toBlock": hex(n)}]), n),
    }
}

/// What an answer to a read of block `n` is.
fn judge(answer: &Value, n: u64) -> Verdict {
    let number = |v: &Value, key: &str| quantity(v.get(key));
    let right = match answer {
        Value::Null => return Verdict::Empty,
        Value::Array(logs) if logs.is_empty() => return Verdict::Empty,
        Value::Array(logs) => logs.len() == 1 && number(&logs[0], "blockNumber") == Some(n),
        block if block.get("number").is_some() => number(block, "number") == Some(n),
        receipt => number(receipt, "blockNumber") == Some(n),
    };
    if right { Verdict::Correct } else { Verdict::Failed }
}

/// One task's reads: `(latency ns, verdict)`.
async fn lane(
    client: RpcClient,
    chain: Chain,
    next: Arc<AtomicUsize>,
    total: usize,
    until: Instant,
) -> Vec<(u64, Verdict)> {
    let mut out = Vec::new();
    let mut tick = tokio::time::interval(GAP);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let i = next.fetch_add(1, Relaxed);
        if i >= total || Instant::now() >= until {
            break;
        }
        let started = Instant::now();
        let (method, params, n) = read(i, chain.head_at(started));
        let call = client.request::<Value, Value>(method, params);
        let verdict = match tokio::time::timeout(CALL_LIMIT, call).await {
            Ok(Ok(answer)) => judge(&answer, n),
            _ => Verdict::Failed,
        };
        out.push((started.elapsed().as_nanos() as u64, verdict));
    }
    out
}

async fn run_one(servers: &Servers, peer: Peer, reads: usize) -> Result<Row, BoxError> {
    let chain = Chain::new();
    let providers = [serve(servers, chain, BEHIND)?, serve(servers, chain, 0)?, serve(servers, chain, 0)?];
    let urls: Vec<&str> = providers.iter().map(|p| p.0.as_str()).collect();
    let endpoints: Vec<Endpoint> = ["primary", "secondary", "backup"]
        .iter()
        .zip(&urls)
        .map(|(id, url)| Endpoint::new(*id, *url))
        .collect();
    let http = |url: &str| -> Result<Http<reqwest::Client>, BoxError> {
        Ok(Http::with_client(reqwest_client()?, url.parse()?))
    };
    let spawned = Instant::now();
    let (client, monitor) = match peer {
        Peer::AlloyHttp => (RpcClient::new(http(urls[0])?, true), None),
        Peer::Fallback => {
            let https = urls.iter().map(|u| http(u)).collect::<Result<Vec<_>, _>>()?;
            (RpcClient::new(FallbackService::new(https, 3), true), None)
        }
        Peer::Failnext => {
            let transport = FailoverTransport::builder(endpoints).client(reqwest_client()?).build()?;
            (RpcClient::new(transport, true), None)
        }
        Peer::Paired2s | Peer::Paired5s => {
            let probe_client = reqwest::Client::builder().no_proxy().user_agent(PROBE_AGENT).build()?;
            let monitor = Monitor::builder(endpoints.clone()).client(probe_client).build()?;
            let schedule = monitor.spawn(peer.every().unwrap_or(Duration::from_secs(2)));
            // The first read once the monitor has a view, as an application starts.
            schedule.ready(Duration::from_secs(5)).await;
            let transport =
                FailoverTransport::builder(endpoints).client(reqwest_client()?).monitor(schedule).build()?;
            (RpcClient::new(transport, true), Some(monitor))
        }
    };
    let requests = || providers.iter().map(|p| p.1.requests.load(Relaxed)).sum::<u64>();
    let requests_before = requests();

    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..LANES {
        tasks.spawn(lane(client.clone(), chain, next.clone(), reads, Instant::now() + RUN_LIMIT));
    }
    let mut answers: Vec<(u64, Verdict)> = Vec::with_capacity(reads);
    while let Some(done) = tasks.join_next().await {
        answers.extend(done?);
    }
    let requests = requests() - requests_before;
    let probes: u64 = providers.iter().map(|p| p.1.probes.load(Relaxed)).sum();
    let probed_for = spawned.elapsed().as_secs_f64();
    let seen_lag = monitor.as_ref().and_then(|m| m.snapshot()?.lag("primary"));
    // The paired transport owns the monitor's schedule: dropping the client stops its probes.
    drop(client);

    let count = |v: Verdict| answers.iter().filter(|a| a.1 == v).count() as u64;
    let mut latencies: Vec<u64> = answers.iter().map(|a| a.0).collect();
    latencies.sort_unstable();
    Ok(Row {
        peer,
        reads: answers.len() as u64,
        correct: count(Verdict::Correct),
        empty: count(Verdict::Empty),
        failed: count(Verdict::Failed),
        requests_per_read: requests as f64 / answers.len().max(1) as f64,
        probes_per_provider_s: monitor.map(|_| probes as f64 / providers.len() as f64 / probed_for),
        seen_lag,
        p50_ms: quantile(&latencies, 0.50) / 1e6,
        p99_ms: quantile(&latencies, 0.99) / 1e6,
    })
}

// ===== the table =====

/// The table as markdown.
pub(crate) fn markdown(rows: &[Row], quick: bool) -> String {
    use std::fmt::Write as _;
    let mut md = String::new();
    let _ = writeln!(
        md,
        "### empty-behind: empty answers from a provider {BEHIND} blocks behind{}\n\n\
         Three loopback providers on a chain making a block every {} ms; `primary` is {BEHIND} blocks behind \
         and answers `null` / `[]` for what it has not got yet, `secondary` and `backup` are current. \
         {LANES} tasks each start a read every {} ms (open loop): `eth_getTransactionReceipt` of block \
         head−k's tx, `eth_getBlockByNumber(head−k)`, `eth_getLogs(head−k..=head−k)`, k in 0..=2, head the \
         true head at the read's start. Correct: that block's receipt / block / log. Empty: `null` or `[]` \
         returned while the current providers had the block. Failed: errors, other answers, no answer within \
         {} s. Reqs/read: requests the three providers received, the monitor's probes excluded. Probes: the \
         monitor's, per provider per second since its spawn. Seen lag: the primary's lag in the monitor's \
         last snapshot.\n",
        if quick { " (quick: too few reads to compare)" } else { "" },
        BLOCK_TIME.as_millis(),
        GAP.as_millis(),
        CALL_LIMIT.as_secs(),
    );
    md.push_str(
        "| client | correct | empty returned | failed | reqs/read | probes/provider/s | seen lag | p50 ms | p99 ms |\n\
         |---|--:|--:|--:|--:|--:|--:|--:|--:|\n",
    );
    for r in rows {
        let probes = r.probes_per_provider_s.map_or("–".to_owned(), |p| format!("{p:.2}"));
        let lag = r.seen_lag.map_or("–".to_owned(), |l| l.to_string());
        let _ = writeln!(
            md,
            "| {} | {}/{} ({:.1} %) | {} | {} | {:.2} | {probes} | {lag} | {:.2} | {:.2} |",
            r.peer.name(),
            r.correct,
            r.reads,
            100.0 * r.correct as f64 / r.reads.max(1) as f64,
            r.empty,
            r.failed,
            r.requests_per_read,
            r.p50_ms,
            r.p99_ms,
        );
    }
    md
}

/// The table as JSON rows.
pub(crate) fn json(rows: &[Row]) -> Value {
    Value::Array(
        rows.iter()
            .map(|r| {
                json!({
                    "client": r.peer.name(),
                    "reads": r.reads,
                    "correct": r.correct,
                    "empty_returned": r.empty,
                    "failed": r.failed,
                    "requests_per_read": r.requests_per_read,
                    "probes_per_provider_per_s": r.probes_per_provider_s,
                    "seen_lag": r.seen_lag,
                    "p50_ms": r.p50_ms,
                    "p99_ms": r.p99_ms,
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(method: &str, params: Value) -> Received {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
        Received { body: body.to_string().into(), ..Received::default() }
    }

    /// The result a provider `behind` blocks behind gives, now.
    fn ask(chain: &Chain, behind: u64, method: &str, params: Value) -> (Value, bool) {
        let (body, empty) = answer(&call(method, params), chain, behind);
        assert_eq!(body["id"], 7);
        (body["result"].clone(), empty)
    }

    #[test]
    fn the_behind_provider_answers_empty_for_what_the_current_ones_have() {
        let chain = Chain::new();
        let head = chain.head();
        for k in 0..=2 {
            let n = head - k;
            let reads = [
                ("eth_getTransactionReceipt", json!([tx_hash(n)])),
                ("eth_getTransactionByHash", json!([tx_hash(n)])),
                ("eth_getBlockByNumber", json!([hex(n), false])),
                ("eth_getBlockByHash", json!([block_hash(n), false])),
                ("eth_getLogs", json!([{"fromBlock": hex(n), "toBlock": hex(n)}])),
            ];
            for (method, params) in reads {
                let (current, empty) = ask(&chain, 0, method, params.clone());
                assert!(!empty, "{method} of block {n}: the current provider has it: {current}");
                let (behind, empty) = ask(&chain, BEHIND, method, params);
                assert!(empty, "{method} of block {n}: the behind provider has not: {behind}");
            }
            let (i, n) = (k as usize, head - k);
            let (method, params, asked) = read(3 * i, head);
            assert_eq!(asked, n);
            assert_eq!(judge(&ask(&chain, 0, method, params.clone()).0, n), Verdict::Correct, "{method}");
            assert_eq!(judge(&ask(&chain, BEHIND, method, params).0, n), Verdict::Empty, "{method}");
        }
    }

    #[test]
    fn the_behind_provider_reports_its_own_head_and_has_the_blocks_below_it() {
        let chain = Chain::new();
        let (number, _) = ask(&chain, BEHIND, "eth_blockNumber", json!([]));
        let head = quantity(Some(&number)).unwrap();
        assert!(head + BEHIND >= chain.head() && head + BEHIND <= chain.head() + 1, "{head}");
        let (latest, _) = ask(&chain, BEHIND, "eth_getBlockByNumber", json!(["latest", false]));
        assert!(quantity(latest.get("number")).unwrap() >= head);
        let (receipt, empty) = ask(&chain, BEHIND, "eth_getTransactionReceipt", json!([tx_hash(head - 1)]));
        assert!(!empty);
        assert_eq!(judge(&receipt, head - 1), Verdict::Correct);
        // The monitor's probe: a batch of the chain id and the latest block.
        let probe = r#"[{"jsonrpc":"2.0","id":2,"method":"eth_chainId","params":[]},{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["latest",false]}]"#;
        let (body, empty) = answer(&Received { body: probe.into(), ..Received::default() }, &chain, BEHIND);
        assert!(!empty);
        assert_eq!(body[0]["result"], "0x1");
        assert!(body[1]["result"]["timestamp"].is_string());
    }

    #[test]
    fn a_wrong_block_is_a_failed_read_not_a_correct_one() {
        assert_eq!(judge(&receipt(9), 10), Verdict::Failed);
        assert_eq!(judge(&json!([log(9)]), 10), Verdict::Failed);
        assert_eq!(judge(&json!([]), 10), Verdict::Empty);
        assert_eq!(judge(&Value::Null, 10), Verdict::Empty);
    }
}

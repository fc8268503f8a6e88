//! A provider that lies in well-formed ways among honest ones that fail (issue 31), and the
//! readers that count what gets through: the `liar` table of `cargo xtask bench` (the honest
//! providers down in turn, [`Weather::Turn`]) and of `cargo xtask soak` (each failing by its
//! own seeded spells, [`Weather::Seeded`]).
//!
//! Four loopback providers serve one chain of [`BLOCKS`] blocks whose headers are hashed as
//! alloy hashes them, one transaction with one log per block (its receipt hashed into the
//! header's receipts root), every account holding [`BALANCE`] wei. `liar`, first in every
//! contender's order, never down, answers fast and well-formed, and lies, one kind per run:
//!
//! - a block with one header field changed and its hash kept (a block that never existed);
//! - a balance one wei more, `null` for the receipt of a mined transaction, a receipt for a
//!   transaction nobody mined;
//! - the log of every fourth block dropped, a copy of another block's log added (blooms and
//!   headers untouched: only the receipts root shows it).
//!
//! `honest-a`, `honest-b` and `honest-c` tell the truth and fail as their [`Weather`] says. Each contender (an alloy `RpcClient` over a
//! failnext transport) reads, per round, every block by number, a balance, the receipt of
//! every block's transaction and of as many unknown transactions, and `eth_blockNumber` (a
//! plain read, never voted); and follows the chain from block 1 with a logs filter. A read is
//! wrong when it returns something else than the honest providers' answer; an error is counted
//! apart. Measured per contender: reads, wrong answers by kind, errors, requests per read
//! (counted at the four servers). Target: with block checks (on by default), logs proven by
//! the receipts root and consensus on balances and receipts, 0 wrong answers.

pub mod chain;

use std::sync::Arc;
use std::time::Duration;

use alloy::rpc::client::RpcClient;
use alloy::rpc::types::Filter;
use failnext::Endpoint;
use failnext::alloy::{ChainEvent, FailoverTransport, Quorum, Start};
use serde_json::{Value, json};

use chain::{BALANCE, BLOCKS, Chain, Lies};
pub use chain::{Fault, Weather};

/// The contenders: whether each proves logs and votes balances and receipts.
const CONTENDERS: [(&str, bool); 2] = [
    ("failnext (defaults)", false),
    ("failnext + logs proven + consensus 2 of 4 on balances and receipts", true),
];

/// What the liar lies about, per run, one kind at a time (a liar caught forging a block is
/// skipped for everything, which would hide what the other checks do).
const LIARS: [(&str, Lies); 3] = [
    ("forges blocks", Lies { blocks: true, state: false, logs: false }),
    ("lies about balances and receipts", Lies { blocks: false, state: true, logs: false }),
    ("drops and adds logs", Lies { blocks: false, state: false, logs: true }),
];

/// One contender's figures against one liar.
#[derive(Debug, Default)]
pub struct Row {
    /// What the liar lies about.
    pub liar: &'static str,
    /// The contender's configuration.
    pub contender: &'static str,
    /// Reads judged (blocks, balances, receipts, plain reads, blocks yielded).
    pub reads: u64,
    /// Blocks (read or yielded) that are not the chain's.
    pub wrong_blocks: u64,
    /// Balances that are not the account's.
    pub wrong_balances: u64,
    /// Receipts of mined transactions that are not theirs (`null` included).
    pub wrong_receipts: u64,
    /// Receipts returned for transactions nobody mined.
    pub wrong_unknown: u64,
    /// Blocks the follower yielded whose logs are not the block's.
    pub wrong_logs: u64,
    /// Reads that failed (an error, not an answer).
    pub errors: u64,
    /// Plain reads (`eth_blockNumber`) and how many were answered.
    pub plain: (u64, u64),
    /// HTTP requests the four servers received.
    pub requests: u64,
    /// Per kind of read (blocks, voted methods, logs): reads and calls the servers received.
    pub kinds: [(u64, u64); 3],
    /// Whether this contender must answer nothing wrong.
    pub must_be_right: bool,
}

impl Row {
    /// Every wrong answer returned.
    #[must_use]
    pub fn wrong(&self) -> u64 {
        self.wrong_blocks + self.wrong_balances + self.wrong_receipts + self.wrong_unknown + self.wrong_logs
    }
}

/// Runs every contender against every liar for `rounds` rounds, over fresh servers, the
/// honest providers (`0..3`) failing as `weather` says.
///
/// # Errors
///
/// When a transport cannot be built.
pub async fn run(rounds: u32, weather: impl Fn(u32) -> Weather) -> Result<Vec<Row>, String> {
    let chain = Arc::new(Chain::new());
    let mut rows = Vec::new();
    for (liar, lies) in LIARS {
        for (contender, verified) in CONTENDERS {
            let servers = [
                ("liar", chain.serve(lies, Weather::Fair).await),
                ("honest-a", chain.serve(Lies::NONE, weather(0)).await),
                ("honest-b", chain.serve(Lies::NONE, weather(1)).await),
                ("honest-c", chain.serve(Lies::NONE, weather(2)).await),
            ];
            let endpoints = servers.iter().map(|(id, s)| Endpoint::new(*id, s.url("/")));
            let mut builder = FailoverTransport::builder(endpoints);
            if verified {
                builder =
                    builder.consensus(["eth_getBalance", "eth_getTransactionReceipt"], Quorum::new(2, 4));
            }
            let transport = builder.build().map_err(|e| e.to_string())?;
            let client = RpcClient::new(transport.clone(), true);
            let mut row = Row { liar, contender, must_be_right: verified, ..Row::default() };
            for _ in 0..rounds {
                read_everything(&client, &chain, &mut row).await;
                follow(&transport, &chain, verified, &mut row).await;
            }
            for (_, server) in &servers {
                for received in server.take_log() {
                    row.requests += 1;
                    let calls = match received.json() {
                        Value::Array(calls) => calls,
                        call => vec![call],
                    };
                    for call in calls {
                        if let Some(kind) = kind_of(call["method"].as_str().unwrap_or_default()) {
                            row.kinds[kind].1 += 1;
                        }
                    }
                }
            }
            rows.push(row);
        }
    }
    Ok(rows)
}

/// The kind of read a method serves: 0 blocks, 1 the voted methods, 2 logs.
fn kind_of(method: &str) -> Option<usize> {
    match method {
        "eth_getBlockByNumber" | "eth_getBlockByHash" => Some(0),
        "eth_getBalance" | "eth_getTransactionReceipt" => Some(1),
        "eth_getLogs" | "eth_getBlockReceipts" => Some(2),
        _ => None,
    }
}

/// Counts one read: right, wrong (`wrong` incremented) or an error.
fn judge(answer: Result<Value, impl std::fmt::Debug>, truth: &Value, wrong: &mut u64, errors: &mut u64) {
    match answer {
        Ok(v) if v == *truth => {}
        Ok(_) => *wrong += 1,
        Err(_) => *errors += 1,
    }
}

/// Every block, a balance, the receipts of every block's transaction and of as many unknown
/// ones, and the head, each read once.
async fn read_everything(client: &RpcClient, chain: &Chain, row: &mut Row) {
    for n in 0..BLOCKS {
        let params = json!([format!("{n:#x}"), false]);
        let block = client.request::<_, Value>("eth_getBlockByNumber", params).await;
        judge(block, &chain.block(n), &mut row.wrong_blocks, &mut row.errors);
        let receipt = client.request::<_, Value>("eth_getTransactionReceipt", [chain.tx(n)]).await;
        judge(receipt, &chain.receipt(n), &mut row.wrong_receipts, &mut row.errors);
        let unknown = client.request::<_, Value>("eth_getTransactionReceipt", [chain.unknown_tx(n)]).await;
        judge(unknown, &Value::Null, &mut row.wrong_unknown, &mut row.errors);
        row.reads += 3;
        row.kinds[0].0 += 1;
        row.kinds[1].0 += 2;
    }
    let balance = client.request::<_, Value>("eth_getBalance", (chain::ACCOUNT, "latest")).await;
    judge(balance, &json!(format!("{BALANCE:#x}")), &mut row.wrong_balances, &mut row.errors);
    let head = client.request::<_, Value>("eth_blockNumber", ()).await;
    row.plain = (row.plain.0 + 1, row.plain.1 + u64::from(head.is_ok()));
    row.kinds[1].0 += 1;
    row.reads += 2;
}

/// Follows the chain from block 1 to its head with a logs filter (logs proven when
/// `proven`): each block yielded counts as a read, wrong when its hash is not the chain's, its
/// logs wrong when they are not the block's one log.
async fn follow(transport: &FailoverTransport, chain: &Chain, proven: bool, row: &mut Row) {
    let mut follower = transport
        .follow(Start::Number(1))
        .logs(Filter::new())
        .prove_logs(proven)
        .poll_every(Duration::from_millis(20));
    loop {
        let event = match tokio::time::timeout(Duration::from_secs(10), follower.next()).await {
            Ok(Ok(event)) => event,
            Ok(Err(_)) | Err(_) => {
                row.errors += 1;
                return;
            }
        };
        match event {
            ChainEvent::Block { block, .. } => {
                row.reads += 1;
                row.kinds[0].0 += 1;
                row.wrong_blocks += u64::from(block.hash != chain.hash(block.number));
            }
            ChainEvent::Logs { block, logs, .. } => {
                let truth = &chain.receipt(block.number)["logs"];
                let told = serde_json::to_value(&logs).unwrap_or_default();
                row.wrong_logs += u64::from(told != *truth);
                row.kinds[2].0 += 1;
                if block.number == BLOCKS - 1 {
                    return;
                }
            }
            _ => row.wrong_blocks += 1,
        }
    }
}

/// The table, in markdown.
pub fn markdown(rows: &[Row], about: &str) -> String {
    let mut md = format!(
        "### liar (a provider that lies in well-formed ways, three honest ones failing)\n\n{about}\n\n"
    );
    md.push_str(
        "| the liar | contender | reads | wrong blocks | wrong balances | wrong receipts | receipts of unknown txs | wrong logs | errors | plain reads answered | requests per read: all, blocks, voted, logs |\n",
    );
    md.push_str("| --- | --- | --: | --: | --: | --: | --: | --: | --: | --: | --: |\n");
    for r in rows {
        let per_read = r.requests as f64 / r.reads.max(1) as f64;
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {}/{} | {per_read:.2}, {} |\n",
            r.liar,
            r.contender,
            r.reads,
            r.wrong_blocks,
            r.wrong_balances,
            r.wrong_receipts,
            r.wrong_unknown,
            r.wrong_logs,
            r.errors,
            r.plain.1,
            r.plain.0,
            r.kinds.map(|(reads, calls)| format!("{:.2}", calls as f64 / reads.max(1) as f64)).join(", ")
        ));
    }
    md
}

/// The table, as JSON.
pub fn json(rows: &[Row]) -> Value {
    Value::Array(
        rows.iter()
            .map(|r| {
                json!({
                    "liar": r.liar,
                    "contender": r.contender,
                    "reads": r.reads,
                    "wrong_blocks": r.wrong_blocks,
                    "wrong_balances": r.wrong_balances,
                    "wrong_receipts": r.wrong_receipts,
                    "wrong_unknown_receipts": r.wrong_unknown,
                    "wrong_logs": r.wrong_logs,
                    "errors": r.errors,
                    "plain_reads": r.plain.0,
                    "plain_reads_answered": r.plain.1,
                    "requests": r.requests,
                    "calls_per_read": {
                        "blocks": r.kinds[0].1 as f64 / r.kinds[0].0.max(1) as f64,
                        "voted": r.kinds[1].1 as f64 / r.kinds[1].0.max(1) as f64,
                        "logs": r.kinds[2].1 as f64 / r.kinds[2].0.max(1) as f64,
                    },
                })
            })
            .collect(),
    )
}

//! The `liar` scenario: a provider that lies in well-formed ways (issue 31).
//!
//! Three loopback providers serve one chain of [`BLOCKS`] blocks whose headers are hashed as
//! alloy hashes them, one transaction per block, every account holding [`BALANCE`] wei.
//! `liar`, first in every contender's order, answers fast and well-formed, and lies:
//!
//! - a block with one header field changed and its hash kept (a block that never existed);
//! - a balance one wei more;
//! - `null` for the receipt of a mined transaction;
//! - a receipt for a transaction nobody mined.
//!
//! `honest-a` and `honest-b` tell the truth. Each contender (an alloy `RpcClient` over a
//! failnext transport) reads every block by number, a balance, the receipt of every block's
//! transaction and the receipt of as many unknown transactions. A read is wrong when it
//! returns something else than the honest providers' answer (or an error). Measured per
//! contender: reads, wrong answers by kind, requests per read (counted at the three servers).
//! Target: with block checks (on by default) and consensus on balances and receipts, 0 wrong
//! answers.

mod chain;

use std::sync::Arc;

use alloy::rpc::client::RpcClient;
use failnext::Endpoint;
use failnext::alloy::{FailoverTransport, Quorum};
use failnext_loopback::Server;
use serde_json::{Value, json};

use chain::{BALANCE, BLOCKS, Chain, Lies};

/// The contenders.
const CONTENDERS: [(&str, bool); 2] =
    [("failnext (defaults)", false), ("failnext + consensus 2 of 3 on balances and receipts", true)];

/// What the liar lies about, per run: its blocks alone, then its state alone (a liar caught
/// forging a block is skipped for everything, which would hide what consensus does).
const LIARS: [(&str, Lies); 2] = [
    ("forges blocks", Lies { blocks: true, state: false }),
    ("lies about balances and receipts", Lies { blocks: false, state: true }),
];

/// One contender's figures against one liar.
#[derive(Debug)]
pub(crate) struct Row {
    pub(crate) liar: &'static str,
    pub(crate) contender: &'static str,
    pub(crate) reads: u64,
    pub(crate) wrong_blocks: u64,
    pub(crate) wrong_balances: u64,
    pub(crate) wrong_receipts: u64,
    pub(crate) wrong_unknown: u64,
    pub(crate) requests: u64,
    /// Whether this contender must answer nothing wrong.
    pub(crate) must_be_right: bool,
}

impl Row {
    pub(crate) fn wrong(&self) -> u64 {
        self.wrong_blocks + self.wrong_balances + self.wrong_receipts + self.wrong_unknown
    }
}

/// Runs every contender over fresh servers.
pub(crate) async fn run(quick: bool) -> Result<Vec<Row>, String> {
    let chain = Arc::new(Chain::new());
    let rounds = if quick { 1 } else { 8 };
    let mut rows = Vec::new();
    for (liar, lies) in LIARS {
        for (contender, consensus) in CONTENDERS {
            let servers = [
                ("liar", chain.serve(lies).await),
                ("honest-a", chain.serve(Lies::NONE).await),
                ("honest-b", chain.serve(Lies::NONE).await),
            ];
            let endpoints = servers.iter().map(|(id, s)| Endpoint::new(*id, s.url("/")));
            let mut builder = FailoverTransport::builder(endpoints);
            if consensus {
                builder =
                    builder.consensus(["eth_getBalance", "eth_getTransactionReceipt"], Quorum::new(2, 3));
            }
            let transport = builder.build().map_err(|e| e.to_string())?;
            let client = RpcClient::new(transport, true);
            let mut row = Row {
                liar,
                contender,
                reads: 0,
                wrong_blocks: 0,
                wrong_balances: 0,
                wrong_receipts: 0,
                wrong_unknown: 0,
                requests: 0,
                must_be_right: consensus,
            };
            for _ in 0..rounds {
                read_everything(&client, &chain, &mut row).await;
            }
            row.requests = servers.iter().map(|(_, s): &(&str, Server)| s.take_log().len() as u64).sum();
            rows.push(row);
        }
    }
    Ok(rows)
}

/// Every block, a balance, and the receipts of every block's transaction and of as many
/// unknown ones, each read once.
async fn read_everything(client: &RpcClient, chain: &Chain, row: &mut Row) {
    let right = |answer: Result<Value, _>, truth: &Value| answer.is_ok_and(|v| v == *truth);
    for n in 0..BLOCKS {
        let params = json!([format!("{n:#x}"), false]);
        let block = client.request::<_, Value>("eth_getBlockByNumber", params).await;
        row.wrong_blocks += u64::from(!right(block, &chain.block(n)));
        let receipt = client.request::<_, Value>("eth_getTransactionReceipt", [chain.tx(n)]).await;
        row.wrong_receipts += u64::from(!right(receipt, &chain.receipt(n)));
        let unknown = client.request::<_, Value>("eth_getTransactionReceipt", [chain.unknown_tx(n)]).await;
        row.wrong_unknown += u64::from(!right(unknown, &Value::Null));
        row.reads += 3;
    }
    let balance = client.request::<_, Value>("eth_getBalance", (chain::ACCOUNT, "latest")).await;
    row.wrong_balances += u64::from(!right(balance, &json!(format!("{BALANCE:#x}"))));
    row.reads += 1;
}

/// The table, in markdown.
pub(crate) fn markdown(rows: &[Row], quick: bool) -> String {
    let mut md = String::from("### liar (a provider that lies in well-formed ways)\n\n");
    if quick {
        md.push_str("Quick run: one round.\n\n");
    }
    md.push_str(
        "| the liar | contender | reads | wrong blocks | wrong balances | wrong receipts | receipts of unknown txs | requests per read |\n",
    );
    md.push_str("| --- | --- | --: | --: | --: | --: | --: | --: |\n");
    for r in rows {
        let per_read = r.requests as f64 / r.reads.max(1) as f64;
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {per_read:.2} |\n",
            r.liar, r.contender, r.reads, r.wrong_blocks, r.wrong_balances, r.wrong_receipts, r.wrong_unknown
        ));
    }
    md
}

/// The table, as JSON.
pub(crate) fn json(rows: &[Row]) -> Value {
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
                    "requests": r.requests,
                })
            })
            .collect(),
    )
}

//! The head-with-hash probe (`eth_getBlockByNumber("latest", false)`, read within the 4 KiB
//! cap) and the head that eligible providers agree on, against loopback providers.

use std::sync::Arc;

use failnext_blocklag::{BlockHash, MAX_BODY, ProbeError, ProbeErrorKind};
use failnext_loopback::{Action, Handler, Received, Reply};

use crate::support::*;

const HEAD_REQUEST: &str =
    r#"{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["latest",false]}"#;

/// The hash made of 32 `byte`s.
fn hash(byte: u8) -> BlockHash {
    BlockHash::new([byte; 32])
}

/// 150 transaction hashes: 10 KiB, so any block carrying them is larger than the cap.
fn transactions() -> String {
    let hashes = vec![format!("\"{}\"", hash(0x7e)); 150].join(",");
    format!(r#""transactions":[{hashes}]"#)
}

/// A block as geth writes it: keys in alphabetical order, `hash` and `number` before
/// `parentHash` and the transactions.
fn geth_block(number: u64, hash: BlockHash) -> String {
    format!(
        r#"{{"baseFeePerGas":"0x3b9aca00","difficulty":"0x0","extraData":"0x","gasLimit":"0x1c9c380","gasUsed":"0xe4e1c0","hash":"{hash}","logsBloom":"0x{bloom}","miner":"0x{miner}","number":"{number:#x}","parentHash":"{parent}","size":"0x2a3b","timestamp":"{now:#x}",{txs},"uncles":[],"withdrawals":[]}}"#,
        bloom = "0".repeat(512),
        miner = "95".repeat(20),
        parent = self::hash(0xee),
        txs = transactions(),
        now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs(),
    )
}

/// A block as anvil and reth write it: `hash` first, `number` after `parentHash`, before the
/// transactions.
fn anvil_block(number: u64, hash: BlockHash) -> String {
    format!(
        r#"{{"hash":"{hash}","parentHash":"{parent}","sha3Uncles":"0x{zeros}","miner":"0x{miner}","logsBloom":"0x{bloom}","number":"{number:#x}","gasLimit":"0x1c9c380",{txs}}}"#,
        parent = self::hash(0xee),
        zeros = "0".repeat(64),
        miner = "95".repeat(20),
        bloom = "0".repeat(512),
        txs = transactions(),
    )
}

/// The JSON-RPC answer carrying `result` (JSON text) for request `id`.
fn envelope(id: &serde_json::Value, result: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)
}

/// A provider whose latest block is `block` (JSON text, the `result` of
/// `eth_getBlockByNumber`), at height `number` for `eth_blockNumber`, on chain 1.
fn serving(block: String, number: u64) -> Handler {
    Arc::new(move |req: &Received| {
        let call = req.json();
        let result = match call["method"].as_str() {
            Some("eth_getBlockByNumber") => block.clone(),
            Some("eth_blockNumber") => format!("\"{number:#x}\""),
            Some("eth_chainId") => "\"0x1\"".to_owned(),
            _ => return Action::Reply(Reply::new(400).closing()),
        };
        Action::Reply(Reply::new(200).json(envelope(&call["id"], &result)).closing())
    })
}

/// A provider whose latest block, in geth's order, is `number` with `hash`.
fn at(number: u64, hash: BlockHash) -> Handler {
    serving(geth_block(number, hash), number)
}

async fn provider(number: u64, hash: BlockHash) -> Server {
    Server::start(at(number, hash)).await
}

fn failing() -> Handler {
    Arc::new(|_: &Received| Action::Reply(Reply::new(503).closing()))
}

/// The agreed head of the monitor's latest snapshot: number, hash, provider ids.
fn agreed(monitor: &failnext_blocklag::Monitor) -> Option<(u64, BlockHash, Vec<String>)> {
    let snapshot = monitor.snapshot()?;
    let agreed = snapshot.agreed()?;
    Some((agreed.number(), agreed.hash(), agreed.providers().iter().map(ToString::to_string).collect()))
}

fn ids(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|id| (*id).to_owned()).collect()
}

#[tokio::test]
async fn the_head_probe_sends_get_block_by_number_latest_without_transactions() {
    let a = provider(100, hash(1)).await;
    let monitor = monitor([("a", a.url("/rpc"))]).head_with_hash().build().unwrap();
    monitor.check().await.unwrap();
    let sent: Vec<_> =
        a.take_log().into_iter().map(|r| String::from_utf8(r.body.to_vec()).unwrap()).collect();
    assert_eq!(sent, [HEAD_REQUEST]);
}

#[tokio::test]
async fn the_default_probe_still_sends_eth_block_number_and_reads_no_hash() {
    let (a, b) = (provider(100, hash(1)).await, provider(100, hash(1)).await);
    let monitor = monitor([("a", a.url("/rpc")), ("b", b.url("/rpc"))]).build().unwrap();
    monitor.check().await.unwrap();
    let sent: Vec<_> =
        a.take_log().into_iter().map(|r| String::from_utf8(r.body.to_vec()).unwrap()).collect();
    assert_eq!(sent, [r#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}"#]);
    let snapshot = monitor.snapshot().unwrap();
    assert_eq!(snapshot.height("a"), Some(100));
    assert_eq!(snapshot.entry("a").unwrap().head_hash(), None);
    assert!(snapshot.agreed().is_none(), "no hashes, no agreement");
}

#[tokio::test]
async fn number_and_hash_are_read_from_a_block_larger_than_4_kib_in_geth_and_anvil_order() {
    assert!(envelope(&1.into(), &geth_block(0x12a_05f2, hash(1))).len() > 2 * MAX_BODY);
    assert!(envelope(&1.into(), &anvil_block(0x12a_05f2, hash(2))).len() > 2 * MAX_BODY);
    let geth = provider(0x12a_05f2, hash(1)).await;
    let anvil = Server::start(serving(anvil_block(0x12a_05f2, hash(2)), 0)).await;
    let monitor =
        monitor([("geth", geth.url("/rpc")), ("anvil", anvil.url("/rpc"))]).head_with_hash().build().unwrap();

    monitor.check().await.unwrap();
    let snapshot = monitor.snapshot().unwrap();
    for (id, want) in [("geth", hash(1)), ("anvil", hash(2))] {
        let entry = snapshot.entry(id).unwrap();
        assert_eq!((entry.height(), entry.head_hash()), (Some(0x12a_05f2), Some(want)), "{id}");
        assert!(entry.is_eligible(), "{id}");
    }
}

#[tokio::test]
async fn parent_hash_and_a_transactions_hash_are_not_taken_for_the_head_hash() {
    // Full transaction objects (as for `true`) and `parentHash` before the block's own hash.
    let tx = format!(r#"{{"blockHash":"{}","hash":"{}"}}"#, hash(3), hash(4));
    let block = format!(
        r#"{{"parentHash":"{}","transactions":[{tx}],"number":"0x64","hash":"{}"}}"#,
        hash(2),
        hash(1)
    );
    let a = Server::start(serving(block, 100)).await;
    let monitor = monitor([("a", a.url("/rpc"))]).head_with_hash().build().unwrap();
    monitor.check().await.unwrap();
    assert_eq!(monitor.snapshot().unwrap().entry("a").unwrap().head_hash(), Some(hash(1)));
}

#[tokio::test]
async fn a_block_without_its_hash_fails_the_probe_with_a_typed_error_naming_the_endpoint() {
    let good = provider(100, hash(1)).await;
    // A `parentHash` and a transaction's `hash`, but no hash of its own.
    let block = format!(
        r#"{{"number":"0x64","parentHash":"{}","transactions":[{{"hash":"{}"}}]}}"#,
        hash(2),
        hash(3)
    );
    let nohash = Server::start(serving(block, 100)).await;
    let null = Server::start(serving("null".to_owned(), 100)).await;
    let monitor =
        monitor([("good", good.url("/rpc")), ("nohash", nohash.url("/rpc")), ("null", null.url("/rpc"))])
            .head_with_hash()
            .build()
            .unwrap();

    let err = monitor.check().await.unwrap_err();
    assert!(err.published());
    assert_eq!(failed_ids(&err), ["nohash", "null"]);
    let [missing, not_a_block] = err.failures() else { panic!("{err}") };
    assert!(matches!(missing.error(), ProbeError::MissingHeadField("hash")), "{err:?}");
    assert!(matches!(not_a_block.error(), ProbeError::NotABlock(shown) if shown == "null"), "{err:?}");
    assert_eq!(missing.method(), "eth_getBlockByNumber");
    let message = err.to_string();
    assert!(
        message.contains(r#"eth_getBlockByNumber of "nohash": block has no top-level "hash""#),
        "{message}"
    );
    assert!(message.contains(r#"eth_getBlockByNumber of "null": result null is not a block"#), "{message}");

    let snapshot = monitor.snapshot().unwrap();
    let entry = snapshot.entry("nohash").unwrap();
    assert!(!entry.is_eligible());
    assert_eq!(entry.height(), None, "no height without the hash");
    assert_eq!(entry.last_error_kind(), Some(ProbeErrorKind::MissingHeadField));
    assert_eq!(entry.last_failed_call(), Some("eth_getBlockByNumber"));
}

#[tokio::test]
async fn two_providers_at_one_height_with_different_hashes_and_a_third_agreeing_with_one_agree_on_it() {
    let (a, fork, c) =
        (provider(100, hash(1)).await, provider(100, hash(2)).await, provider(100, hash(1)).await);
    let monitor = monitor([("a", a.url("/rpc")), ("fork", fork.url("/rpc")), ("c", c.url("/rpc"))])
        .head_with_hash()
        .build()
        .unwrap();
    monitor.check().await.unwrap();
    assert_eq!(agreed(&monitor), Some((100, hash(1), ids(&["a", "c"]))));
    // The fork is at the reference height: it stays eligible, it just does not agree.
    assert!(monitor.eligible("fork"));
    assert_eq!(monitor.snapshot().unwrap().entry("fork").unwrap().head_hash(), Some(hash(2)));
}

#[tokio::test]
async fn when_heads_disagree_the_highest_height_with_k_matches_wins_or_there_is_none() {
    let servers = [
        provider(101, hash(1)).await,
        provider(101, hash(2)).await,
        provider(100, hash(9)).await,
        provider(100, hash(9)).await,
    ];
    let monitor = monitor_of(&servers).head_with_hash().max_lag(1).build().unwrap();

    monitor.check().await.unwrap();
    assert_eq!(agreed(&monitor), Some((100, hash(9), ids(&["c", "d"]))), "101 is split 1–1");

    // Every head different: nothing has 2 matching reports.
    servers[3].set_handler(at(100, hash(8)));
    monitor.check().await.unwrap();
    assert_eq!(agreed(&monitor), None);
}

#[tokio::test]
async fn agreement_k_needs_k_matching_reports() {
    let servers = [
        provider(101, hash(1)).await,
        provider(101, hash(2)).await,
        provider(100, hash(9)).await,
        provider(100, hash(9)).await,
    ];
    let monitor = monitor_of(&servers).head_with_hash().max_lag(1).agreement(3).build().unwrap();
    monitor.check().await.unwrap();
    assert_eq!(agreed(&monitor), None, "two at 100 are not three");

    servers[1].set_handler(at(100, hash(9)));
    monitor.check().await.unwrap();
    assert_eq!(agreed(&monitor), Some((100, hash(9), ids(&["b", "c", "d"]))));
}

/// The monitor builder of `a`, `b`, ... over `servers`.
fn monitor_of(servers: &[Server]) -> failnext_blocklag::MonitorBuilder {
    let ids = ["a", "b", "c", "d", "e"];
    monitor(ids.into_iter().zip(servers.iter().map(|s| s.url("/rpc"))))
}

#[tokio::test]
async fn an_ineligible_providers_report_does_not_count_towards_agreement() {
    let servers = [provider(100, hash(1)).await, provider(100, hash(2)).await, provider(100, hash(1)).await];
    let monitor = monitor_of(&servers).head_with_hash().readmit_after(2).build().unwrap();
    monitor.check().await.unwrap();
    assert_eq!(agreed(&monitor), Some((100, hash(1), ids(&["a", "c"]))));

    // "c" fails once: ineligible, then re-admitted only at its second good check in a row.
    servers[2].set_handler(failing());
    monitor.check().await.unwrap_err();
    assert_eq!(agreed(&monitor), None, "a and b disagree, c does not count");
    servers[2].set_handler(at(100, hash(1)));
    monitor.check().await.unwrap();
    let snapshot = monitor.snapshot().unwrap();
    let c = snapshot.entry("c").unwrap();
    assert_eq!((c.is_eligible(), c.head_hash()), (false, Some(hash(1))), "reported, not yet eligible");
    assert!(snapshot.agreed().is_none(), "{snapshot:?}");

    monitor.check().await.unwrap();
    assert_eq!(agreed(&monitor), Some((100, hash(1), ids(&["a", "c"]))));
}

#[tokio::test]
async fn one_provider_alone_agrees_with_its_own_head() {
    let a = provider(100, hash(1)).await;
    let monitor = monitor([("a", a.url("/rpc"))]).head_with_hash().build().unwrap();
    monitor.check().await.unwrap();
    assert_eq!(agreed(&monitor), Some((100, hash(1), ids(&["a"]))));
}

#[tokio::test]
async fn the_chain_check_runs_alongside_the_head_probe() {
    let a = provider(100, hash(1)).await;
    let monitor = monitor([("a", a.url("/rpc"))]).head_with_hash().expected_chain_id(1).build().unwrap();
    monitor.check().await.unwrap();
    let mut methods: Vec<String> =
        a.take_log().iter().map(|r| r.json()["method"].as_str().unwrap_or_default().to_owned()).collect();
    methods.sort();
    assert_eq!(methods, ["eth_chainId", "eth_getBlockByNumber"]);
    assert_eq!(monitor.snapshot().unwrap().entry("a").unwrap().head_hash(), Some(hash(1)));
}

#[test]
fn agreement_zero_is_rejected_naming_the_option() {
    let err = monitor([("a", "http://127.0.0.1:1".into())]).agreement(0).build().unwrap_err();
    assert!(err.to_string().contains("agreement"), "{err}");
}

#[tokio::test]
async fn a_block_larger_than_the_cap_is_drained_so_its_connection_is_reused() {
    // Keep-alive replies (the other tests' servers close every connection), and a block of
    // 1000 transaction hashes (68 KiB: many reads, not one).
    let hashes = vec![format!("\"{}\"", hash(0x7e)); 1000].join(",");
    let block = format!(
        r#"{{"hash":"{}","number":"0x64","parentHash":"{}","transactions":[{hashes}]}}"#,
        hash(0xab),
        hash(0xee)
    );
    let server = Server::start(Arc::new(move |req: &Received| {
        let call = req.json();
        Action::Reply(Reply::new(200).json(envelope(&call["id"], &block)))
    }))
    .await;
    let monitor = failnext_blocklag::Monitor::builder([failnext::Endpoint::new("big", server.url("/"))])
        .head_with_hash()
        .build()
        .unwrap();
    for _ in 0..4 {
        monitor.check().await.unwrap();
        let entry = monitor.snapshot().unwrap().entry("big").unwrap().clone();
        assert_eq!(entry.head_hash(), Some(hash(0xab)));
        // Let the background drain finish before the next check takes a connection.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(server.requests(), 4);
    assert_eq!(server.connections(), 1, "one connection for four checks of a 68 KiB block");
}

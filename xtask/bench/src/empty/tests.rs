//! The behind provider's answers and the reads' judging, checked on their own.

use failnext_loopback::Received;
use serde_json::{Value, json};

use super::chain::{Chain, answer, block_hash, hex, log, quantity, receipt, tx_hash};
use super::reads::{Verdict, judge, read};
use super::scenario::BEHIND;

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

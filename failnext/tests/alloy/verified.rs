//! Verified blocks: a block whose header does not hash to its hash, or that is not the block
//! asked for, is not an answer; a chain whose headers do not hash this way turns the check off.

use std::sync::{Arc, Mutex};

use alloy_primitives::B256;
use failnext::alloy::{Failure, FailureKind};
use serde_json::{Value, json};

use super::stubs::{node, ok};
use super::{configured, count, result, send, single};

/// Block `number` as a node answers it: a consensus header hashed by alloy.
fn block(number: u64) -> Value {
    let inner = alloy_consensus::Header {
        number,
        gas_limit: 30_000_000,
        gas_used: 21_000,
        timestamp: 1_700_000_000 + 12 * number,
        ..Default::default()
    };
    let mut block = serde_json::to_value(alloy_rpc_types_eth::Header::new(inner)).unwrap();
    block["transactions"] = json!([]);
    block["uncles"] = json!([]);
    block
}

/// Block `number` as a liar answers it: a field changed, the hash kept (a forged block).
fn forged(number: u64) -> Value {
    let mut block = block(number);
    block["gasUsed"] = json!("0x0");
    block
}

/// A block that hashes as no Ethereum header does, the same at every provider (a chain whose
/// headers hash another way).
fn foreign(number: u64) -> Value {
    let mut block = block(number);
    block["hash"] = json!(B256::repeat_byte(0xab));
    block
}

fn by_number(n: u64) -> Value {
    json!([format!("{n:#x}"), false])
}

/// The number the block called for by `params` (a hex quantity).
fn asked(params: &Value) -> u64 {
    u64::from_str_radix(params[0].as_str().unwrap_or("0x0").trim_start_matches("0x"), 16).unwrap_or(0)
}

fn events() -> (Arc<Mutex<Vec<String>>>, impl Fn(&failnext::Event<'_>) + Send + Sync + 'static) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let hook = {
        let seen = Arc::clone(&seen);
        move |event: &failnext::Event<'_>| match event {
            failnext::Event::ForgedBlock { endpoint, number } => {
                seen.lock().unwrap().push(format!("forged {endpoint} {number:?}"));
            }
            failnext::Event::BlocksUnverifiable { number } => {
                seen.lock().unwrap().push(format!("unverifiable {number:?}"));
            }
            _ => {}
        }
    };
    (seen, hook)
}

#[tokio::test]
async fn a_block_whose_header_does_not_hash_to_its_hash_is_not_returned_and_its_provider_is_put_off_the_chain()
 {
    let liar = node(|method, params| match method {
        "eth_getBlockByNumber" => ok(forged(asked(params))),
        _ => ok(json!("0x1")),
    })
    .await;
    let honest = node(|method, params| match method {
        "eth_getBlockByNumber" => ok(block(asked(params))),
        _ => ok(json!("0x2")),
    })
    .await;
    let (seen, hook) = events();
    let t =
        configured(&[("liar", liar.url("/")), ("honest", honest.url("/"))]).on_event(hook).build().unwrap();

    let answer = send(&t, single("eth_getBlockByNumber", by_number(7))).await.unwrap();
    assert_eq!(result(&answer), block(7), "the honest provider's block");
    assert_eq!(seen.lock().unwrap().as_slice(), ["forged liar Some(7)"]);
    // Off the chain: the next reads, blocks or not, go to the honest provider alone.
    let _ = count(&liar, "eth_getBlockByNumber");
    let answer = send(&t, single("eth_getBlockByNumber", by_number(8))).await.unwrap();
    assert_eq!(result(&answer), block(8));
    let answer = send(&t, single("eth_chainId", json!([]))).await.unwrap();
    assert_eq!(result(&answer), json!("0x2"));
    assert_eq!(liar.take_log().len(), 0, "the liar is skipped");
}

#[tokio::test]
async fn a_block_that_is_not_the_one_asked_for_is_a_forgery_on_any_chain() {
    let liar = node(|_, params| ok(block(asked(params) + 1))).await;
    let honest = node(|_, params| ok(block(asked(params)))).await;
    let t = configured(&[("liar", liar.url("/")), ("honest", honest.url("/"))]).build().unwrap();
    let answer = send(&t, single("eth_getBlockByNumber", by_number(7))).await.unwrap();
    assert_eq!(result(&answer), block(7));
    let hash = block(7)["hash"].clone();
    let liar_by_hash = node(|_, _| ok(block(9))).await;
    let honest_by_hash = node(|_, _| ok(block(7))).await;
    let t =
        configured(&[("liar", liar_by_hash.url("/")), ("honest", honest_by_hash.url("/"))]).build().unwrap();
    let answer = send(&t, single("eth_getBlockByHash", json!([hash, false]))).await.unwrap();
    assert_eq!(result(&answer), block(7));
}

#[tokio::test(start_paused = true)]
async fn a_chain_whose_headers_do_not_hash_this_way_turns_the_check_off_once_and_fails_no_read() {
    let first = node(|_, params| ok(foreign(asked(params)))).await;
    let second = node(|_, params| ok(foreign(asked(params)))).await;
    let (seen, hook) = events();
    let t =
        configured(&[("first", first.url("/")), ("second", second.url("/"))]).on_event(hook).build().unwrap();

    let answer = send(&t, single("eth_getBlockByNumber", by_number(7))).await.unwrap();
    assert_eq!(result(&answer), foreign(7), "the first provider's block, as the chain has it");
    let answer = send(&t, single("eth_getBlockByNumber", by_number(8))).await.unwrap();
    assert_eq!(result(&answer), foreign(8));
    assert_eq!(seen.lock().unwrap().as_slice(), ["unverifiable Some(7)"], "told once, nobody blamed");
    assert_eq!(count(&second, "eth_getBlockByNumber"), 1, "asked once, at the first block");
}

#[tokio::test]
async fn once_blocks_verify_every_provider_forging_fails_the_read_as_forged() {
    let forge = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let answer_with = |forge: Arc<std::sync::atomic::AtomicBool>| {
        move |_: &str, params: &Value| {
            let n = asked(params);
            ok(if forge.load(std::sync::atomic::Ordering::Relaxed) { forged(n) } else { block(n) })
        }
    };
    let a = node(answer_with(Arc::clone(&forge))).await;
    let b = node(answer_with(Arc::clone(&forge))).await;
    let t = configured(&[("a", a.url("/")), ("b", b.url("/"))]).build().unwrap();
    let answer = send(&t, single("eth_getBlockByNumber", by_number(5))).await.unwrap();
    assert_eq!(result(&answer), block(5), "a block verified: the chain's headers hash this way");
    forge.store(true, std::sync::atomic::Ordering::Relaxed);
    let err = send(&t, single("eth_getBlockByNumber", by_number(6))).await.unwrap_err();
    let failure = Failure::find(&err).expect("the transport's failure");
    assert_eq!(failure.kind(), FailureKind::Forged);
    let by: Vec<&str> = failure.forged_by().iter().map(|e| e.as_str()).collect();
    assert_eq!(by, ["a", "b"]);
    assert!(err.to_string().contains("block 6"), "{err}");
}

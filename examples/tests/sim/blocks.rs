//! Blocks with hashes: `eth_getBlockByNumber`/`ByHash`, EIP-1898 block parameters, forks,
//! nodes without archive state, and the count of reads not pinned by hash.

use failnext_examples::sim::{Behaviour, Chain, GET_RESERVES, START_HEAD};
use serde_json::json;

use crate::{one_provider, result, rpc};

const ACCOUNT: &str = "0x00000000000000000000000000000000000000aa";

#[tokio::test]
async fn a_block_has_a_hash_that_a_read_can_be_pinned_to() {
    let (chain, p) = one_provider().await;
    let latest = result(&p, "eth_getBlockByNumber", json!(["latest", false])).await;
    assert_eq!(latest["number"], format!("{START_HEAD:#x}"));
    let hash = latest["hash"].as_str().unwrap().to_owned();
    assert_eq!(hash.len(), 66);
    assert_eq!(hash, p.block_hash(START_HEAD));
    assert_eq!(latest["parentHash"], p.block_hash(START_HEAD - 1));
    assert_eq!(result(&p, "eth_getBlockByHash", json!([hash, false])).await["number"], latest["number"]);
    chain.advance(5);
    // Pinned by hash, the read runs against that block, not the new head.
    let pinned = json!({ "blockHash": hash, "requireCanonical": true });
    let word = result(&p, "eth_call", json!([{ "to": ACCOUNT, "data": GET_RESERVES }, pinned])).await;
    assert_eq!(word, hash, "getReserves() answers the hash of the block it ran against");
    let word = result(&p, "eth_call", json!([{ "to": ACCOUNT }, { "blockNumber": "0xf4241" }])).await;
    assert_eq!(word, format!("0x{:064x}", START_HEAD + 1));
    assert_eq!(p.unpinned_reads(), 1, "the read by number is not pinned by hash");
}

#[tokio::test]
async fn a_hash_from_another_fork_or_chain_is_not_found() {
    let chain = Chain::manual(1);
    let (ours, forked, other) = (
        chain.provider("a").await.unwrap(),
        chain.provider("b").await.unwrap(),
        chain.provider("c").await.unwrap(),
    );
    forked.set(Behaviour::Forked(7)).await.unwrap();
    other.set(Behaviour::WrongChain(5)).await.unwrap();
    assert_ne!(ours.block_hash(START_HEAD), forked.block_hash(START_HEAD), "same height, another hash");
    let pinned = json!({ "blockHash": ours.block_hash(START_HEAD) });
    for p in [&forked, &other] {
        let reply = rpc(p, "eth_getBalance", json!([ACCOUNT, pinned])).await;
        assert_eq!(reply["error"]["message"], "header for hash not found", "{}", p.id());
    }
    assert_eq!(result(&ours, "eth_getBalance", json!([ACCOUNT, pinned])).await, "0xde0b6b3a7640000");
    assert_eq!(ours.unpinned_reads() + forked.unpinned_reads(), 0);
}

#[tokio::test]
async fn a_node_without_archive_state_answers_current_reads_only() {
    let (chain, p) = one_provider().await;
    p.set(Behaviour::NoArchive(128)).await.unwrap();
    chain.advance(200);
    let old = format!("{:#x}", START_HEAD + 10);
    let reply = rpc(&p, "eth_call", json!([{ "to": ACCOUNT }, old])).await;
    assert!(reply["error"]["message"].as_str().unwrap().starts_with("missing trie node"), "{reply}");
    let recent = format!("{:#x}", START_HEAD + 150);
    assert_eq!(
        result(&p, "eth_call", json!([{ "to": ACCOUNT }, recent])).await,
        format!("0x{:064x}", START_HEAD + 150)
    );
    assert_eq!(result(&p, "eth_getBalance", json!([ACCOUNT])).await, "0xde0b6b3a7640000");
    assert_eq!(p.unpinned_reads(), 3);
}

//! The chain as providers show it: the head moves, lagging, stalled and wrong-chain views.

use std::time::Duration;

use failnext_examples::sim::{Behaviour, Chain, START_HEAD};
use serde_json::json;

use crate::{block_number, one_provider, result, rpc};

#[tokio::test]
async fn manual_advance_moves_the_head_every_provider_reports() {
    let chain = Chain::manual(1);
    let (a, b) = (chain.provider("a").await.unwrap(), chain.provider("b").await.unwrap());
    assert_eq!(chain.advance(3), START_HEAD + 3);
    assert_eq!(block_number(&a).await, START_HEAD + 3);
    assert_eq!(block_number(&b).await, START_HEAD + 3);
}

#[tokio::test]
async fn the_head_advances_on_the_tick() {
    let chain = Chain::start(1, Duration::from_millis(20));
    let p = chain.provider("p").await.unwrap();
    let moved = tokio::time::timeout(Duration::from_secs(5), async {
        while block_number(&p).await < START_HEAD + 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    moved.await.expect("two ticks within 5 s");
}

#[tokio::test]
async fn lagging_serves_the_chain_n_blocks_behind() {
    let (chain, p) = one_provider().await;
    chain.advance(10);
    p.set(Behaviour::Lagging(4)).await.unwrap();
    assert_eq!(block_number(&p).await, START_HEAD + 6);
    assert_eq!(p.head(), START_HEAD + 6);

    let at_head = format!("{:#x}", chain.head());
    let reply =
        rpc(&p, "eth_getBalance", json!(["0x0000000000000000000000000000000000000001", at_head])).await;
    assert_eq!(reply["error"]["message"], "header not found");
    let word =
        result(&p, "eth_call", json!([{ "to": "0x0000000000000000000000000000000000000001" }, "latest"]))
            .await;
    assert_eq!(word, format!("0x{:064x}", START_HEAD + 6), "eth_call runs against the lagging head");
}

#[tokio::test]
async fn stalled_freezes_at_the_height_it_showed() {
    let (chain, p) = one_provider().await;
    p.set(Behaviour::Lagging(2)).await.unwrap();
    p.set(Behaviour::Stalled).await.unwrap();
    chain.advance(50);
    assert_eq!(block_number(&p).await, START_HEAD - 2);
    p.set(Behaviour::Stalled).await.unwrap();
    assert_eq!(block_number(&p).await, START_HEAD - 2, "setting Stalled again keeps the frozen height");
    p.set(Behaviour::Healthy).await.unwrap();
    assert_eq!(block_number(&p).await, START_HEAD + 50);
}

#[tokio::test]
async fn wrong_chain_reports_the_other_chain_id() {
    let (_chain, p) = one_provider().await;
    assert_eq!(result(&p, "eth_chainId", json!([])).await, "0x7a69");
    p.set(Behaviour::WrongChain(1)).await.unwrap();
    assert_eq!(result(&p, "eth_chainId", json!([])).await, "0x1");
}

#[tokio::test]
async fn a_receipt_appears_once_the_provider_shows_the_including_block() {
    let chain = Chain::manual(1);
    let (fresh, late) = (chain.provider("fresh").await.unwrap(), chain.provider("late").await.unwrap());
    late.set(Behaviour::Lagging(1)).await.unwrap();

    let hash = result(&fresh, "eth_sendRawTransaction", json!(["0x02f8abcdef"])).await;
    let hash = hash.as_str().unwrap().to_owned();
    assert_eq!(hash.len(), 66);
    assert_eq!(
        result(&fresh, "eth_getTransactionReceipt", json!([hash])).await,
        json!(null),
        "not mined yet"
    );

    chain.advance(1);
    let receipt = result(&fresh, "eth_getTransactionReceipt", json!([hash])).await;
    assert_eq!(receipt["blockNumber"], format!("{:#x}", START_HEAD + 1));
    assert_eq!(receipt["status"], "0x1");
    assert_eq!(
        result(&late, "eth_getTransactionReceipt", json!([hash])).await,
        json!(null),
        "one block behind"
    );
    chain.advance(1);
    assert_eq!(result(&late, "eth_getTransactionReceipt", json!([hash])).await["transactionHash"], hash);

    let again = rpc(&late, "eth_sendRawTransaction", json!(["0x02f8abcdef"])).await;
    assert_eq!(again["error"]["message"], "already known");
}

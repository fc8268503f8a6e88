//! `expected_chain_id`: a provider on another chain is ineligible and says so.

use failnext_blocklag::ProbeError;
use serde_json::Value;

use crate::support::*;

#[tokio::test]
async fn provider_on_another_chain_is_ineligible_with_wrong_chain() {
    let (mainnet, other) = (Node::at(100).await, Node::at(110).await);
    other.set_chain(5);
    let monitor = monitor([("mainnet", mainnet.url()), ("other", other.url())])
        .max_lag(3)
        .expected_chain_id(1)
        .build()
        .unwrap();

    let err = monitor.check().await.unwrap_err();
    assert!(err.published());
    assert_eq!(failed_ids(&err), ["other"]);
    let failure = &err.failures()[0];
    assert_eq!(failure.method(), "eth_chainId");
    assert!(matches!(failure.error(), ProbeError::WrongChain { expected: 1, actual: 5 }));
    assert_eq!(failure.to_string(), "eth_chainId of \"other\": wrong chain (expected chain id 1, got 5)");

    // The other chain's height is not the reference: mainnet at 100 is the highest that counts.
    assert!(!monitor.eligible("other"));
    assert!(monitor.eligible("mainnet"));
    let snapshot = monitor.snapshot().unwrap();
    assert_eq!(snapshot.highest(), 100);
    assert_eq!(snapshot.height("other"), None);
}

#[tokio::test]
async fn chain_check_is_off_by_default() {
    let node = Node::at(100).await;
    node.set_chain(5);
    let monitor = monitor([("only", node.url())]).build().unwrap();
    monitor.check().await.unwrap();
    assert_eq!(node.methods().await, ["eth_blockNumber"]);
}

#[tokio::test]
async fn chain_id_is_verified_at_every_check() {
    let node = Node::at(100).await;
    let monitor = monitor([("only", node.url())]).expected_chain_id(1).build().unwrap();
    let chain_calls = || async { node.methods().await.iter().filter(|m| *m == "eth_chainId").count() };
    for _ in 0..3 {
        monitor.check().await.unwrap();
    }
    assert_eq!(chain_calls().await, 3, "verified at every check");
    assert_eq!(node.requests().await, 6);

    // Restarted on another chain between two checks: caught at the next one.
    node.set_chain(137);
    let err = monitor.check().await.unwrap_err();
    assert!(matches!(only_error(&err), ProbeError::WrongChain { expected: 1, actual: 137 }));
    assert_eq!(err.failures()[0].method(), "eth_chainId");
    assert_eq!(
        err.to_string(),
        "the provider's probe failed, previous snapshot kept: \
        eth_chainId of \"only\": wrong chain (expected chain id 1, got 137)"
    );
    node.set_chain(1);
    monitor.check().await.unwrap();
    assert!(monitor.eligible("only"));
}

#[tokio::test]
async fn failed_chain_id_call_makes_the_provider_ineligible() {
    let good = Node::at(100).await;
    let unverifiable = Node::replying(|request: &Value| match request["method"].as_str() {
        Some("eth_chainId") => error_reply(request, -32601, "method not found"),
        _ => result_reply(request, "0x64"),
    })
    .await;
    let monitor = monitor([("good", good.url()), ("unverifiable", unverifiable.url())])
        .expected_chain_id(1)
        .build()
        .unwrap();
    let err = monitor.check().await.unwrap_err();
    assert_eq!(failed_ids(&err), ["unverifiable"]);
    assert_eq!(err.failures()[0].method(), "eth_chainId");
    assert!(matches!(err.failures()[0].error(), ProbeError::JsonRpc { code: -32601, .. }));
    assert!(!monitor.eligible("unverifiable"));
    assert!(monitor.eligible("good"));
}

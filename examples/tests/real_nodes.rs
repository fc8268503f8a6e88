//! failnext-blocklag's monitor against real Ethereum nodes: anvil processes on loopback ports,
//! left behind (`anvil_mine` on the others) or started on another chain, as failnext's
//! eligibility through the reqwest middleware (no alloy). failnext's own real-node tests
//! (killed, hung) are in `failnext/tests/real_nodes.rs`.
//!
//! anvil comes from `cargo xtask anvil` (`cargo xtask ci` installs it and passes it in
//! `FAILNEXT_ANVIL`). Without it every test here fails with a message saying how to get it.
//! These tests run on real time (real processes, real sockets): their only time assertion is
//! that a bounded request ended.

#[path = "../../failnext/tests/shared/nodes.rs"]
mod nodes;

use failnext::{RequestBuilderExt, ResponseExt};
use failnext_blocklag::{Monitor, ProbeError};
use failnext_loopback::AnvilOptions;
use failnext_loopback::anvil::DEFAULT_CHAIN_ID;
use nodes::*;
use serde_json::json;

const CHAIN_ID: &str = r#"{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}"#;

#[tokio::test]
async fn the_monitor_rules_out_a_lagging_node() {
    let lagging = node(AnvilOptions::new()).await;
    let (second, third) = (node(AnvilOptions::new()).await, node(AnvilOptions::new()).await);
    let nodes = [("lagging", &lagging), ("second", &second), ("third", &third)];
    let monitor = Monitor::builder(endpoints(&nodes)).client(http()).max_lag(3).build().unwrap();
    monitor.check().await.unwrap();
    assert!(["lagging", "second", "third"].iter().all(|id| monitor.eligible(id)), "all at block 0");

    second.mine(20).await.unwrap();
    third.mine(20).await.unwrap();
    monitor.check().await.unwrap();
    assert!(!monitor.eligible("lagging"));
    assert!(monitor.eligible("second") && monitor.eligible("third"));
    let snapshot = monitor.snapshot().unwrap();
    assert_eq!((snapshot.highest(), snapshot.lag("lagging")), (20, Some(20)));

    // With the monitor as eligibility, reads skip the lagging node, denied failover or not.
    let client = client(failover(&nodes).eligible(monitor.clone()).build().unwrap());
    for _ in 0..3 {
        assert_eq!(read(&client, &lagging.url(), BLOCK_NUMBER).await, ("second".to_owned(), json!("0x14")));
    }
    let send = client.post(lagging.url()).header("content-type", "application/json").body(BLOCK_NUMBER);
    let resp = tokio::time::timeout(BOUND, send.deny_failover().send()).await.unwrap().unwrap();
    assert_eq!(resp.served_by().map(|id| id.to_string()).as_deref(), Some("second"));
}

#[tokio::test]
async fn the_monitor_rules_out_a_node_on_the_wrong_chain() {
    let (goerli, mainnet_like) =
        (node(AnvilOptions::new().chain_id(5)).await, node(AnvilOptions::new()).await);
    let nodes = [("primary", &goerli), ("backup", &mainnet_like)];
    let monitor = Monitor::builder(endpoints(&nodes))
        .client(http())
        .expected_chain_id(DEFAULT_CHAIN_ID)
        .build()
        .unwrap();
    let err = monitor.check().await.expect_err("the primary is on chain 5");
    assert!(err.published(), "the backup's answer is published");
    let failures: Vec<(String, &ProbeError)> =
        err.failures().iter().map(|f| (f.endpoint().to_string(), f.error())).collect();
    assert!(
        matches!(failures.as_slice(), [(id, ProbeError::WrongChain { expected: 31337, actual: 5 })] if id == "primary"),
        "{failures:?}"
    );
    assert!(!monitor.eligible("primary"));
    assert!(monitor.eligible("backup"));

    // Reads go to the node on the expected chain.
    let client = client(failover(&nodes).eligible(monitor.clone()).build().unwrap());
    assert_eq!(read(&client, &goerli.url(), CHAIN_ID).await, ("backup".to_owned(), json!("0x7a69")));
}

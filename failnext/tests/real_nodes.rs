//! failnext against real Ethereum nodes: anvil processes on loopback ports, killed (SIGKILL)
//! or hung (SIGSTOP), through the reqwest middleware (no alloy). The monitor's real-node tests
//! are in `examples/tests/real_nodes.rs`, the alloy transport's in `examples/tests/alloy_nodes.rs`.
//!
//! anvil comes from `cargo xtask anvil` (`cargo xtask ci` installs it and passes it in
//! `FAILNEXT_ANVIL`). Without it every test here fails with a message saying how to get it.
//! These tests run on real time (real processes, real sockets): their only time assertion is
//! that a bounded request ended.

#[path = "shared/nodes.rs"]
mod nodes;

use std::time::Duration;

use failnext::{Failover, RequestBuilderExt, ResponseExt};
use failnext_loopback::AnvilOptions;
use nodes::*;
use serde_json::json;

#[tokio::test]
async fn a_killed_primary_node_is_failed_over_to_the_backup_for_reads() {
    let (mut primary, backup) = (node(AnvilOptions::new()).await, node(AnvilOptions::new()).await);
    backup.mine(7).await.unwrap();
    let client = client(failover(&[("primary", &primary), ("backup", &backup)]).build().unwrap());
    // Alive, the primary serves (and leaves a pooled connection behind).
    assert_eq!(read(&client, &primary.url(), BLOCK_NUMBER).await, ("primary".to_owned(), json!("0x0")));

    primary.kill().unwrap();
    for _ in 0..3 {
        assert_eq!(read(&client, &primary.url(), BLOCK_NUMBER).await, ("backup".to_owned(), json!("0x7")));
    }
}

#[tokio::test]
async fn a_paused_primary_is_bounded_by_the_attempt_timeout() {
    let (primary, backup) = (node(AnvilOptions::new()).await, node(AnvilOptions::new()).await);
    backup.mine(7).await.unwrap();
    let failover = failover(&[("primary", &primary), ("backup", &backup)])
        .attempt_timeout(Duration::from_millis(500))
        .build()
        .unwrap();
    let client = client(failover);
    primary.pause().unwrap();

    // A read waits out the primary's attempt timeout, then the backup serves it.
    assert_eq!(read(&client, &primary.url(), BLOCK_NUMBER).await, ("backup".to_owned(), json!("0x7")));

    // A request that may not fail over ends with the primary's timeout.
    let send = client.post(primary.url()).header("content-type", "application/json").body(BLOCK_NUMBER);
    let ended = tokio::time::timeout(BOUND, send.deny_failover().send()).await;
    let err = ended.expect("the attempt timeout ended the request").expect_err("nothing answered");
    let failed = failnext::Error::from_middleware(&err).expect("a failnext error");
    let attempts: Vec<(String, bool)> =
        failed.attempts().iter().map(|a| (a.endpoint().to_string(), a.error().is_timeout())).collect();
    assert_eq!(attempts, [("primary".to_owned(), true)], "{failed:?}");
    assert!(failed.attempts()[0].to_string().starts_with("primary: "), "{}", failed.attempts()[0]);

    // Resumed, it answers again.
    primary.resume().unwrap();
    assert_eq!(read(&client, &primary.url(), BLOCK_NUMBER).await, ("primary".to_owned(), json!("0x0")));
}

/// The quick start's configuration (`Failover::builder(..).build()`, no attempt timeout set):
/// a node stopped with SIGSTOP accepts the connection and never answers; the 0.2 default
/// attempt timeout (10 s) ends the attempt, and a read fails over.
#[tokio::test]
async fn the_default_configuration_does_not_wait_forever_on_a_stopped_node() {
    let (primary, backup) = (node(AnvilOptions::new()).await, node(AnvilOptions::new()).await);
    backup.mine(7).await.unwrap();
    let failover =
        Failover::builder(endpoints(&[("primary", &primary), ("backup", &backup)])).build().unwrap();
    let client = client(failover);
    primary.pause().unwrap();
    let send = client.post(primary.url()).header("content-type", "application/json").body(BLOCK_NUMBER);
    let resp = tokio::time::timeout(Duration::from_secs(30), send.allow_failover().send())
        .await
        .expect("the default attempt timeout ended the primary's attempt")
        .expect("the backup answered");
    assert_eq!(resp.served_by().map(ToString::to_string).as_deref(), Some("backup"));
    primary.resume().unwrap();
}

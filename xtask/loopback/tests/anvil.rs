//! The anvil handle against a real anvil: it starts, answers, mines, dies, hangs and comes back
//! as its handle says. Without anvil these tests fail with the message that says how to get it.

use std::time::{Duration, Instant};

use failnext_loopback::anvil::{DEFAULT_CHAIN_ID, DEV_ADDRESSES, NOT_FOUND};
use failnext_loopback::{Anvil, AnvilError, AnvilOptions};
use serde_json::json;

async fn anvil(options: AnvilOptions) -> Anvil {
    match Anvil::start(options).await {
        Ok(anvil) => anvil,
        Err(e) => panic!("{e}"),
    }
}

/// A client of its own, with a short bound, to see a hang as a timeout.
fn impatient() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().timeout(Duration::from_millis(300)).build().unwrap()
}

async fn chain_id_with(client: &reqwest::Client, url: &str) -> Result<String, reqwest::Error> {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}"#;
    client.post(url).header("content-type", "application/json").body(body).send().await?.text().await
}

#[tokio::test]
async fn a_started_node_answers_its_chain_id_on_loopback() {
    let node = anvil(AnvilOptions::default()).await;
    assert_eq!(node.chain_id(), DEFAULT_CHAIN_ID);
    assert_eq!(node.url(), format!("http://127.0.0.1:{}/", node.port()));
    assert!(node.pid() > 0);
    assert_eq!(node.rpc("eth_chainId", json!([])).await.unwrap(), json!("0x7a69"));
    // The dev accounts are funded with 10 000 ether each and have sent nothing.
    let balance = node.rpc("eth_getBalance", json!([DEV_ADDRESSES[0], "latest"])).await.unwrap();
    assert_eq!(balance, json!("0x21e19e0c9bab2400000"));
    for address in DEV_ADDRESSES {
        assert_eq!(node.balance(address).await.unwrap(), 10_000 * 10_u128.pow(18));
        assert_eq!(node.nonce(address).await.unwrap(), 0);
    }
}

#[tokio::test]
async fn a_custom_chain_id_is_reported() {
    let node = anvil(AnvilOptions::new().chain_id(5)).await;
    assert_eq!(node.chain_id(), 5);
    assert_eq!(node.rpc("eth_chainId", json!([])).await.unwrap(), json!("0x5"));
}

#[tokio::test]
async fn mining_raises_the_block_number() {
    let node = anvil(AnvilOptions::default()).await;
    assert_eq!(node.block_number().await.unwrap(), 0);
    node.mine(20).await.unwrap();
    assert_eq!(node.block_number().await.unwrap(), 20);
}

#[tokio::test]
async fn a_block_time_mines_on_its_own() {
    let node = anvil(AnvilOptions::new().block_time(Duration::from_millis(200))).await;
    let started = Instant::now();
    while node.block_number().await.unwrap() < 2 {
        assert!(started.elapsed() < Duration::from_secs(10), "no blocks mined");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn an_unknown_method_is_a_json_rpc_error() {
    let node = anvil(AnvilOptions::default()).await;
    let err = node.rpc("no_such_method", json!([])).await.unwrap_err();
    assert!(matches!(err, AnvilError::Rpc { .. }), "{err:?}");
}

#[tokio::test]
async fn a_killed_node_refuses_connections() {
    let mut node = anvil(AnvilOptions::default()).await;
    let url = node.url();
    node.kill().unwrap();
    let err = chain_id_with(&impatient(), &url).await.unwrap_err();
    assert!(err.is_connect(), "{err:?}");
    let err = node.rpc("eth_chainId", json!([])).await.unwrap_err();
    assert!(matches!(&err, AnvilError::Http(e) if e.is_connect()), "{err:?}");
    // Killing again is a no-op; pausing a killed node is an error, not a signal to a stranger.
    node.kill().unwrap();
    assert!(matches!(node.pause(), Err(AnvilError::Signal { .. })));
}

#[tokio::test]
async fn a_paused_node_hangs_and_answers_again_after_resume() {
    let node = anvil(AnvilOptions::default()).await;
    node.pause().unwrap();
    let err = chain_id_with(&impatient(), &node.url()).await.unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    node.resume().unwrap();
    assert!(chain_id_with(&impatient(), &node.url()).await.unwrap().contains("0x7a69"));
    assert_eq!(node.block_number().await.unwrap(), 0);
}

#[tokio::test]
async fn a_paused_node_is_killed_and_reaped_on_drop() {
    let node = anvil(AnvilOptions::default()).await;
    let (pid, url) = (node.pid(), node.url());
    node.pause().unwrap();
    drop(node);
    // Reaped: no /proc entry is left, not even a zombie.
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "process {pid} is still there");
    assert!(chain_id_with(&impatient(), &url).await.unwrap_err().is_connect());
}

#[tokio::test]
async fn a_missing_binary_fails_with_how_to_get_it() {
    let err = Anvil::start(AnvilOptions::new().binary("/nonexistent/anvil")).await.unwrap_err();
    assert!(matches!(err, AnvilError::NotFound { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.starts_with(NOT_FOUND), "{message}");
    assert_eq!(
        NOT_FOUND,
        "anvil not found: run `cargo xtask anvil` (or `cargo xtask ci`, which installs it), or set \
         FAILNEXT_ANVIL to an anvil binary"
    );
}

#[tokio::test]
async fn two_nodes_run_side_by_side_on_their_own_ports() {
    let (a, b) = (anvil(AnvilOptions::default()).await, anvil(AnvilOptions::new().chain_id(5)).await);
    assert_ne!(a.port(), b.port());
    a.mine(3).await.unwrap();
    assert_eq!((a.block_number().await.unwrap(), b.block_number().await.unwrap()), (3, 0));
}

/// Runs one test of this file again in a child process, with `FAILNEXT_ANVIL` pointing nowhere.
#[test]
fn with_failnext_anvil_pointing_nowhere_a_node_test_fails_saying_how_to_get_anvil() {
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "a_started_node_answers_its_chain_id_on_loopback", "--test-threads", "1"])
        .env("FAILNEXT_ANVIL", "/nonexistent/anvil")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!output.status.success(), "{stdout}");
    assert!(stdout.contains(NOT_FOUND), "{stdout}");
    assert!(stdout.contains("/nonexistent/anvil"), "{stdout}");
    assert!(stdout.contains("0 passed; 1 failed"), "{stdout}");
}

#[tokio::test]
async fn a_node_that_exits_while_starting_reports_its_stderr() {
    let err = Anvil::start(AnvilOptions::new().arg("--no-such-flag")).await.unwrap_err();
    assert!(matches!(&err, AnvilError::Exited { status, .. } if !status.success()), "{err:?}");
    assert!(err.to_string().contains("--no-such-flag"), "{err}");
}

//! `failnext::alloy::FailoverTransport` under alloy's `Provider`, against real anvil nodes.
//!
//! Each node is started on its own loopback port and stopped by its handle. anvil comes from
//! the npm package `@foundry-rs/anvil-linux-amd64`, installed by `cargo xtask ci` (or `cargo
//! xtask anvil`); without it every test here fails with a message saying how to get it.
//! The nodes are independent chains, so a transaction's nonce tells on which node it landed.

use std::str::FromStr;
use std::time::Duration;

use alloy::eips::eip2718::Encodable2718;
use alloy::network::{Ethereum, EthereumWallet, NetworkTransactionBuilder, TransactionBuilder};
use alloy::primitives::{Address, B256, Bytes, U256};
use alloy::providers::{Provider, ProviderBuilder};
use alloy::rpc::client::RpcClient;
use alloy::rpc::types::TransactionRequest;
use alloy::signers::local::PrivateKeySigner;
use failnext::alloy::{
    BlockRef, CallExt, ChainEvent, Delivery, FailoverTransport, Failure, ServedByCell, Start,
};
use failnext::{Cooldown, Endpoint, Event};
use failnext_blocklag::Monitor;
use failnext_loopback::anvil::{DEFAULT_CHAIN_ID, DEV_ADDRESSES, DEV_PRIVATE_KEYS};
use failnext_loopback::{Anvil, AnvilOptions, AttemptLog};
use serde_json::json;

/// Every call of a test ends within this, or the test fails.
const BOUND: Duration = Duration::from_secs(20);

async fn node(options: AnvilOptions) -> Anvil {
    Anvil::start(options).await.unwrap_or_else(|e| panic!("{e}"))
}

fn endpoints(nodes: &[(&str, &Anvil)]) -> Vec<Endpoint> {
    nodes.iter().map(|(id, n)| Endpoint::new(*id, n.url())).collect()
}

/// A transport over `nodes` (cooldown off, so each call shows the rule under test), with a
/// per-attempt log of the endpoints reached.
fn transport(nodes: &[(&str, &Anvil)], eligible: Option<Monitor>) -> (FailoverTransport, AttemptLog) {
    let log = AttemptLog::default();
    let mut builder = FailoverTransport::builder(endpoints(nodes))
        .client(reqwest::Client::builder().no_proxy().build().unwrap())
        .cooldown(Cooldown::disabled())
        .attempt_timeout(Duration::from_secs(1))
        .no_deadline()
        .no_failover_budget()
        .attempt_middleware(log.clone());
    if let Some(monitor) = eligible {
        builder = builder.eligible(monitor);
    }
    (builder.build().unwrap(), log)
}

async fn within<F: std::future::IntoFuture>(f: F) -> F::Output {
    tokio::time::timeout(BOUND, f.into_future()).await.expect("the call ended within the bound")
}

/// A signed transfer of 1 wei from dev account `from` with `nonce`.
async fn transfer(from: usize, nonce: u64) -> (Bytes, B256) {
    let tx = TransactionRequest::default()
        .with_to(Address::from_str(DEV_ADDRESSES[4]).unwrap())
        .with_value(U256::from(1))
        .with_gas_limit(21_000);
    signed(from, nonce, tx).await
}

/// `tx` from dev account `from` with `nonce`, on the dev chain at fixed fees, signed: its
/// raw bytes and its hash.
async fn signed(from: usize, nonce: u64, tx: TransactionRequest) -> (Bytes, B256) {
    let wallet = EthereumWallet::from(PrivateKeySigner::from_str(DEV_PRIVATE_KEYS[from]).unwrap());
    let tx = tx
        .with_nonce(nonce)
        .with_chain_id(DEFAULT_CHAIN_ID)
        .with_max_fee_per_gas(20_000_000_000)
        .with_max_priority_fee_per_gas(1_000_000_000);
    let envelope =
        <TransactionRequest as NetworkTransactionBuilder<Ethereum>>::build(tx, &wallet).await.unwrap();
    (Bytes::from(envelope.encoded_2718()), *envelope.tx_hash())
}

/// Each node's pending nonce of dev account `from`: the transactions it has received from it,
/// mined or not (anvil mines right after it answers).
async fn nonces(nodes: &[&Anvil], from: usize) -> Vec<u64> {
    let mut out = Vec::new();
    for n in nodes {
        let answer = n.rpc("eth_getTransactionCount", json!([DEV_ADDRESSES[from], "pending"])).await.unwrap();
        out.push(u64::from_str_radix(answer.as_str().unwrap().trim_start_matches("0x"), 16).unwrap());
    }
    out
}

#[tokio::test]
async fn provider_builder_reads_from_the_backup_while_the_primary_is_down_in_five_lines() {
    let (mut primary, backup) = (node(AnvilOptions::new()).await, node(AnvilOptions::new()).await);
    backup.mine(7).await.unwrap();
    primary.kill().unwrap();
    let (primary_url, backup_url) = (primary.url(), backup.url());
    // The user's code: five lines.
    let transport =
        FailoverTransport::new([Endpoint::new("primary", primary_url), Endpoint::new("backup", backup_url)])
            .unwrap();
    let provider = ProviderBuilder::new().connect_client(RpcClient::new(transport, false));
    let block = within(provider.get_block_number()).await.unwrap();
    assert_eq!(block, 7, "the backup's height");
}

#[tokio::test]
async fn a_signed_transfer_lands_on_one_node_only_with_the_primary_alive_and_killed() {
    let (mut primary, backup) = (node(AnvilOptions::new()).await, node(AnvilOptions::new()).await);
    let (t, log) = transport(&[("primary", &primary), ("backup", &backup)], None);
    let provider = ProviderBuilder::new().connect_client(RpcClient::new(t, true));
    let (raw, hash) = transfer(0, 0).await;
    let pending = within(provider.send_raw_transaction(&raw)).await.unwrap();
    assert_eq!(*pending.tx_hash(), hash);
    assert_eq!(nonces(&[&primary, &backup], 0).await, [1, 0], "on the primary, never on the backup");
    assert_eq!(log.take(), [primary.url()], "one attempt");
    // The primary dies: the next transfer is not sent anywhere else. Signed once, sent once.
    primary.kill().unwrap();
    let (raw, hash) = transfer(0, 1).await;
    let err = within(provider.send_raw_transaction(&raw)).await.unwrap_err();
    let typed = Failure::find(&err)
        .filter(|f| f.is_never_sent() || f.is_possibly_submitted())
        .map(|f| f.hash())
        .unwrap_or_else(|| panic!("not a typed lost broadcast: {err}"));
    assert_eq!(typed, Some(hash), "the hash, computed locally");
    assert_eq!(nonces(&[&backup], 0).await, [0], "the backup never saw it");
    assert_eq!(log.take(), [primary.url()]);
}

#[tokio::test]
async fn a_killed_primarys_broadcast_is_never_sent_once_its_connections_are_gone() {
    let (mut primary, backup) = (node(AnvilOptions::new()).await, node(AnvilOptions::new()).await);
    primary.kill().unwrap();
    let (t, _) = transport(&[("primary", &primary), ("backup", &backup)], None);
    let provider = ProviderBuilder::new().connect_client(RpcClient::new(t, true));
    let (raw, hash) = transfer(1, 0).await;
    let err = within(provider.send_raw_transaction(&raw)).await.unwrap_err();
    let never =
        Failure::find(&err).filter(Failure::is_never_sent).unwrap_or_else(|| panic!("not NeverSent: {err}"));
    assert_eq!(never.hash(), Some(hash));
    assert_eq!(nonces(&[&backup], 1).await, [0]);
}

#[tokio::test]
async fn a_hung_primary_is_bounded_by_the_attempt_timeout_and_a_read_fails_over() {
    let (primary, backup) = (node(AnvilOptions::new()).await, node(AnvilOptions::new()).await);
    backup.mine(3).await.unwrap();
    let (t, log) = transport(&[("primary", &primary), ("backup", &backup)], None);
    let provider = ProviderBuilder::new().connect_client(RpcClient::new(t, true));
    primary.pause().unwrap();
    assert_eq!(within(provider.get_block_number()).await.unwrap(), 3);
    assert_eq!(log.take(), [primary.url(), backup.url()]);
    // A raw transaction to the hung primary: possibly submitted (it was written), never resent.
    let (raw, hash) = transfer(2, 0).await;
    let err = within(provider.send_raw_transaction(&raw)).await.unwrap_err();
    let lost = Failure::find(&err)
        .filter(Failure::is_possibly_submitted)
        .unwrap_or_else(|| panic!("not PossiblySubmitted: {err}"));
    assert_eq!(lost.hash(), Some(hash));
    assert_eq!(log.take(), [primary.url()]);
    primary.resume().unwrap();
    assert_eq!(nonces(&[&backup], 2).await, [0], "the backup never saw it");
}

#[tokio::test]
async fn the_monitor_keeps_reads_off_a_lagging_node_and_a_wrong_chain_node() {
    let lagging = node(AnvilOptions::new()).await;
    let wrong = node(AnvilOptions::new().chain_id(5)).await;
    let good = node(AnvilOptions::new()).await;
    good.mine(20).await.unwrap();
    wrong.mine(20).await.unwrap();
    let nodes = [("lagging", &lagging), ("wrong", &wrong), ("good", &good)];
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let monitor = Monitor::builder(endpoints(&nodes))
        .client(http)
        .max_lag(2)
        .expected_chain_id(DEFAULT_CHAIN_ID)
        .build()
        .unwrap();
    // The check reports the wrong chain as a failed probe, and publishes.
    let _ = within(monitor.check()).await;
    assert!(!monitor.eligible("lagging") && !monitor.eligible("wrong"));
    let (t, log) = transport(&nodes, Some(monitor));
    let provider = ProviderBuilder::new().connect_client(RpcClient::new(t, true));
    assert_eq!(within(provider.get_block_number()).await.unwrap(), 20);
    assert_eq!(within(provider.get_chain_id()).await.unwrap(), DEFAULT_CHAIN_ID);
    assert_eq!(log.take(), [good.url(), good.url()], "neither the lagging nor the wrong-chain node");
}

#[tokio::test]
async fn a_revert_is_returned_from_the_first_node_and_not_retried() {
    let (primary, backup) = (node(AnvilOptions::new()).await, node(AnvilOptions::new()).await);
    // PUSH1 0 PUSH1 0 REVERT at the same address on both nodes.
    let reverter = "0x00000000000000000000000000000000000000aa";
    for n in [&primary, &backup] {
        n.rpc("anvil_setCode", json!([reverter, "0x60006000fd"])).await.unwrap();
    }
    let (t, log) = transport(&[("primary", &primary), ("backup", &backup)], None);
    let provider = ProviderBuilder::new().connect_client(RpcClient::new(t, true));
    let call = TransactionRequest::default().with_to(Address::from_str(reverter).unwrap());
    let err = within(provider.call(call)).await.unwrap_err();
    let payload = err.as_error_resp().unwrap_or_else(|| panic!("not a JSON-RPC error: {err}"));
    assert_eq!(payload.code, 3, "{payload:?}");
    assert_eq!(log.take(), [primary.url()], "the backup was not asked");
}

#[tokio::test]
async fn a_batch_of_reads_fails_over_as_one_packet() {
    let (mut primary, backup) = (node(AnvilOptions::new()).await, node(AnvilOptions::new()).await);
    backup.mine(4).await.unwrap();
    primary.kill().unwrap();
    let (t, log) = transport(&[("primary", &primary), ("backup", &backup)], None);
    let client = RpcClient::new(t, true);
    let mut batch = client.new_batch();
    let number = batch.add_call::<_, alloy::primitives::U64>("eth_blockNumber", &()).unwrap();
    let chain = batch.add_call::<_, alloy::primitives::U64>("eth_chainId", &()).unwrap();
    within(batch.send()).await.unwrap();
    assert_eq!(within(number).await.unwrap().to::<u64>(), 4);
    assert_eq!(within(chain).await.unwrap().to::<u64>(), DEFAULT_CHAIN_ID);
    assert_eq!(log.take(), [primary.url(), backup.url()], "one packet, one failover");
}

#[tokio::test]
async fn watch_blocks_keeps_its_filter_while_other_reads_fail_back() {
    let (primary, backup) = (node(AnvilOptions::new()).await, node(AnvilOptions::new()).await);
    let (t, log) = transport(&[("primary", &primary), ("backup", &backup)], None);
    let provider = ProviderBuilder::new().connect_client(RpcClient::new(t, true));
    // The filter is created while the primary hangs: on the backup.
    primary.pause().unwrap();
    let watcher =
        within(provider.watch_blocks()).await.unwrap().with_poll_interval(Duration::from_millis(50));
    primary.resume().unwrap();
    let mut stream = watcher.into_stream();
    log.take();
    // Other reads go back to the primary; the filter's polls stay on the backup.
    primary.mine(2).await.unwrap();
    assert_eq!(within(provider.get_block_number()).await.unwrap(), 2, "the primary's height");
    backup.mine(1).await.unwrap();
    let hashes = within(futures::StreamExt::next(&mut stream)).await.expect("a block from the filter");
    let mined = backup.rpc("eth_getBlockByNumber", json!(["0x1", false])).await.unwrap();
    assert_eq!(
        hashes.first().map(ToString::to_string).as_deref(),
        mined["hash"].as_str(),
        "the backup's block"
    );
    let attempts = log.take();
    assert!(attempts.contains(&primary.url()) && attempts.contains(&backup.url()), "{attempts:?}");
}

#[tokio::test]
async fn a_receipt_and_the_pending_nonce_are_read_where_the_transaction_was_broadcast() {
    let (primary, backup) = (node(AnvilOptions::new()).await, node(AnvilOptions::new()).await);
    let (t, log) = transport(&[("primary", &primary), ("backup", &backup)], None);
    let provider = ProviderBuilder::new().connect_client(RpcClient::new(t, true));
    // Broadcast through the backup (a per-call preference), while the primary is healthy.
    let (raw, hash) = transfer(3, 0).await;
    let served = ServedByCell::new();
    let sent: B256 = within(
        provider
            .client()
            .request("eth_sendRawTransaction", (raw,))
            .map_meta(|meta| meta.prefer_endpoint("backup").record_served_by(&served)),
    )
    .await
    .unwrap();
    assert_eq!((sent, served.get().map(|e| e.to_string())), (hash, Some("backup".to_owned())));
    log.take();
    // The primary (another chain) has never heard of it: the lookups follow the broadcast.
    // anvil mines right after it answers: poll (bounded) as a bot would.
    let receipt = receipt_through(&provider, hash).await;
    assert!(receipt.is_some_and(|r| r.status()), "the backup's receipt");
    let nonce =
        within(provider.get_transaction_count(Address::from_str(DEV_ADDRESSES[3]).unwrap()).pending())
            .await
            .unwrap();
    assert_eq!(nonce, 1, "the backup's pending nonce, not the primary's 0");
    let attempts = log.take();
    assert!(!attempts.is_empty() && attempts.iter().all(|a| *a == backup.url()), "{attempts:?}");
    assert_eq!(nonces(&[&primary], 3).await, [0]);
}

/// Under alloy's `ClientBuilder::layer(RetryBackoffLayer)`: a provider's 429 reaches the layer
/// as an HTTP error it retries (as from alloy's `Http`), and the retry is answered. A loopback
/// stub, not anvil: anvil does not rate-limit.
#[tokio::test]
async fn retry_backoff_layer_retries_a_rate_limit_through_the_transport() {
    use alloy::rpc::client::ClientBuilder;
    use alloy::transports::layers::RetryBackoffLayer;
    use failnext_loopback::{Action, Received, Reply, Server};
    use std::sync::atomic::{AtomicUsize, Ordering};

    let seen = std::sync::Arc::new(AtomicUsize::new(0));
    let count = seen.clone();
    let stub = Server::start(std::sync::Arc::new(move |req: &Received| {
        let id = serde_json::from_slice::<serde_json::Value>(&req.body)
            .map(|v| v["id"].clone())
            .unwrap_or_default();
        if count.fetch_add(1, Ordering::SeqCst) == 0 {
            Action::Reply(Reply::new(429).text("Too Many Requests"))
        } else {
            Action::Reply(
                Reply::new(200).json(json!({"jsonrpc": "2.0", "id": id, "result": "0x2a"}).to_string()),
            )
        }
    }))
    .await;
    let transport = FailoverTransport::new([Endpoint::new("only", stub.url("/"))]).unwrap();
    let client =
        ClientBuilder::default().layer(RetryBackoffLayer::new(3, 10, 10_000)).transport(transport, true);
    let provider = ProviderBuilder::new().connect_client(client);
    assert_eq!(within(provider.get_block_number()).await.unwrap(), 42);
    assert_eq!(seen.load(Ordering::SeqCst), 2, "the 429, then the layer's retry");
}

alloy::sol! {
    /// The contract at [`PROBE`].
    #[sol(rpc)]
    interface Probe {
        function callerBalance() external view returns (uint256);
    }
}

/// Where [`CALLER_BALANCE`] is put.
const PROBE: &str = "0x00000000000000000000000000000000000000bb";

/// Runtime code `CALLER BALANCE PUSH1 0 MSTORE PUSH1 32 PUSH1 0 RETURN`: its caller's balance.
const CALLER_BALANCE: &str = "0x333160005260206000f3";

/// alloy's own call paths through a bundle, none naming a block: `Provider::call` and
/// `Provider::estimate_gas` send `"pending"`, a `sol!` contract's `call()` sends `"latest"`;
/// each is answered at the bundle's reference, while the plain provider reads the new block.
#[tokio::test]
async fn a_contract_call_through_a_bundle_by_alloys_default_call_reads_the_pinned_block() {
    use alloy::eips::BlockNumberOrTag;

    let n = node(AnvilOptions::new()).await;
    let probe = Address::from_str(PROBE).unwrap();
    n.rpc("anvil_setCode", json!([probe, CALLER_BALANCE])).await.unwrap();
    n.mine(1).await.unwrap();
    let (t, _) = transport(&[("only", &n)], None);
    let plain = ProviderBuilder::new().connect_client(RpcClient::new(t.clone(), false));
    let head = within(plain.get_block_by_number(BlockNumberOrTag::Latest)).await.unwrap().unwrap().header;
    let bundle = t.bundle(BlockRef::new(head.number, head.hash));
    let pinned = ProviderBuilder::new().connect_client(RpcClient::new(bundle.clone(), false));
    let caller = Address::from_str(DEV_ADDRESSES[0]).unwrap();
    let old = within(plain.get_balance(caller)).await.unwrap();

    // The caller pays for a transfer, mined in a later block.
    let (raw, hash) = transfer(0, 0).await;
    assert_eq!(*within(plain.send_raw_transaction(&raw)).await.unwrap().tx_hash(), hash);
    let mined = receipt_through(&plain, hash).await.expect("the transfer was mined");
    assert!(mined.block_number.is_some_and(|b| b > head.number), "in a later block: {mined:?}");
    let new = within(plain.get_balance(caller)).await.unwrap();
    assert!(new < old, "the caller paid: {old} -> {new}");

    // Through the bundle, by alloy's defaults: the pinned block's balance.
    let contract = Probe::new(probe, &pinned);
    assert_eq!(within(contract.callerBalance().from(caller).call()).await.unwrap(), old, "sol! call()");
    let tx = TransactionRequest::default().with_from(caller).with_to(probe);
    let answer = within(pinned.call(tx.clone())).await.unwrap();
    assert_eq!(U256::from_be_slice(&answer), old, "Provider::call, which asks for pending");
    let gas = within(pinned.estimate_gas(tx.clone())).await.unwrap();
    assert!(gas > 21_000, "Provider::estimate_gas, which asks for pending: {gas}");
    assert!(bundle.missed().is_empty());

    // The same calls on the plain provider: the new block's balance.
    let now = within(Probe::new(probe, &plain).callerBalance().from(caller).call()).await.unwrap();
    assert_eq!(now, new, "sol! call() on the plain provider");
    assert_eq!(U256::from_be_slice(&within(plain.call(tx)).await.unwrap()), new, "Provider::call");
}

/// The receipt of `hash` read through `provider` once it is mined (anvil mines right after it
/// answers: polled, bounded, as a bot would); `None` if it never is.
async fn receipt_through(
    provider: &impl Provider,
    hash: B256,
) -> Option<alloy::rpc::types::TransactionReceipt> {
    for _ in 0..100 {
        if let Some(receipt) = within(provider.get_transaction_receipt(hash)).await.unwrap() {
            return Some(receipt);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

/// A client for the builder's transport: no proxy on loopback.
fn loopback_client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// Whether `hash` is known to `node` (`eth_getTransactionByHash` asked of it directly).
async fn knows(node: &Anvil, hash: B256) -> bool {
    !node.rpc("eth_getTransactionByHash", json!([hash])).await.unwrap().is_null()
}

/// The receipt of `hash` on `node`, once it is mined (anvil mines right after it answers;
/// polled, bounded).
async fn receipt(node: &Anvil, hash: B256) -> serde_json::Value {
    for _ in 0..100 {
        let receipt = node.rpc("eth_getTransactionReceipt", json!([hash])).await.unwrap();
        if !receipt.is_null() {
            return receipt;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{hash} was not mined on {}", node.url());
}

/// Kills the primary, reads through `t` until the primary's breaker is open (every read
/// answered by the backup, at its height), then sends a signed transfer of dev account 0.
async fn transfer_while_the_primary_is_down(
    t: &FailoverTransport,
    primary: &mut Anvil,
    backup: &Anvil,
) -> (B256, alloy::transports::TransportResult<B256>) {
    backup.mine(5).await.unwrap();
    primary.kill().unwrap();
    let provider = ProviderBuilder::new().connect_client(RpcClient::new(t.clone(), true));
    let open = |t: &FailoverTransport| t.failover().health().endpoints()[0].open_until().is_some();
    for _ in 0..50 {
        if open(t) {
            break;
        }
        assert_eq!(within(provider.get_block_number()).await.unwrap(), 5, "the backup answers the reads");
    }
    assert!(open(t), "the primary's breaker is open: {:?}", t.failover().health());
    let (raw, hash) = transfer(0, 0).await;
    let sent = within(provider.client().request::<_, B256>("eth_sendRawTransaction", (raw,))).await;
    (hash, sent)
}

#[tokio::test]
async fn a_transfer_routed_to_the_primary_is_never_sent_to_the_backup_while_the_primary_is_down() {
    let (mut primary, backup) = (node(AnvilOptions::new()).await, node(AnvilOptions::new()).await);
    let t = FailoverTransport::builder(endpoints(&[("primary", &primary), ("backup", &backup)]))
        .client(loopback_client())
        .writes_to(["primary"])
        .build()
        .unwrap();
    let (hash, sent) = transfer_while_the_primary_is_down(&t, &mut primary, &backup).await;
    let err = sent.expect_err("no write endpoint is usable");
    match Failure::find(&err) {
        Some(never) if never.is_never_sent() => {
            assert_eq!(never.hash(), Some(hash), "the hash, computed locally")
        }
        other => panic!("not NeverSent: {other:?} ({err})"),
    }
    assert!(!knows(&backup, hash).await, "the backup never heard of it");
    assert_eq!(nonces(&[&backup], 0).await, [0], "the sender's nonce on the backup is unchanged");
}

/// The same set-up without `writes_to`: the transfer lands on the backup (a write goes to
/// the first usable endpoint, and the primary's breaker is open). What the test above would
/// see if `writes_to` did not hold.
#[tokio::test]
async fn without_writes_to_the_same_transfer_lands_on_the_backup() {
    let (mut primary, backup) = (node(AnvilOptions::new()).await, node(AnvilOptions::new()).await);
    let t = FailoverTransport::builder(endpoints(&[("primary", &primary), ("backup", &backup)]))
        .client(loopback_client())
        .build()
        .unwrap();
    let (hash, sent) = transfer_while_the_primary_is_down(&t, &mut primary, &backup).await;
    assert_eq!(sent.unwrap(), hash, "accepted by the backup");
    assert!(knows(&backup, hash).await);
    assert_eq!(nonces(&[&backup], 0).await, [1]);
}

/// The three nodes are independent chains with the same genesis accounts and chain id, so
/// one signed transfer is valid on each, and there is no shared mempool: each node mines its
/// own copy in its own block. "Mined once" is per chain: on each node the transfer has one
/// receipt, in block 1, the only block after genesis, whose only transaction it is; the
/// sender's nonce is exactly 1 and the recipient's balance rose by exactly the 1 wei sent.
/// The transport sent it to each node exactly once (one `Event::Attempt` per endpoint).
#[tokio::test]
async fn a_fanout_to_three_nodes_reaches_all_three_and_is_mined_once() {
    let a = node(AnvilOptions::new()).await;
    let b = node(AnvilOptions::new()).await;
    let c = node(AnvilOptions::new()).await;
    let nodes = [&a, &b, &c];
    let recipient = DEV_ADDRESSES[4];
    let mut before = Vec::new();
    for n in nodes {
        before.push(n.balance(recipient).await.unwrap());
    }
    let attempts = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = attempts.clone();
    let t = FailoverTransport::builder(endpoints(&[("a", &a), ("b", &b), ("c", &c)]))
        .client(loopback_client())
        .broadcast_to(["a", "b", "c"])
        .on_event(move |event| {
            if let Event::Attempt { endpoint, .. } = event {
                seen.lock().unwrap().push(endpoint.to_string());
            }
        })
        .build()
        .unwrap();
    let provider = ProviderBuilder::new().connect_client(RpcClient::new(t.clone(), true));
    let (raw, hash) = transfer(1, 0).await;
    let pending = within(provider.send_raw_transaction(&raw)).await.unwrap();
    assert_eq!(*pending.tx_hash(), hash);

    let outcome = t.broadcast_outcome(&hash).expect("the fan-out is remembered");
    assert_eq!(outcome.hash(), hash);
    let deliveries: Vec<(&str, &Delivery)> =
        outcome.deliveries().iter().map(|(e, d)| (e.as_str(), d)).collect();
    assert_eq!(
        deliveries,
        [("a", &Delivery::Accepted), ("b", &Delivery::Accepted), ("c", &Delivery::Accepted)]
    );
    let mut sent_to = attempts.lock().unwrap().clone();
    sent_to.sort();
    assert_eq!(sent_to, ["a", "b", "c"], "one attempt per endpoint");

    for (n, before) in nodes.into_iter().zip(before) {
        assert!(knows(n, hash).await, "{} knows it", n.url());
        let receipt = receipt(n, hash).await;
        assert_eq!(receipt["status"], "0x1");
        assert_eq!(receipt["blockNumber"], "0x1", "in block 1");
        assert_eq!(n.block_number().await.unwrap(), 1, "no other block was mined");
        let block = n.rpc("eth_getBlockByNumber", json!(["0x1", false])).await.unwrap();
        assert_eq!(block["transactions"], json!([hash]), "the block's only transaction");
        assert_eq!(n.nonce(DEV_ADDRESSES[1]).await.unwrap(), 1, "the sender's nonce is exactly 1");
        assert_eq!(n.balance(recipient).await.unwrap(), before + 1, "the recipient got 1 wei, once");
    }
}

/// Runtime code that emits one event (`LOG0`, no data) whenever it is called:
/// PUSH1 0 PUSH1 0 LOG0 STOP.
const EMIT: &str = "0x60006000a000";

const EMITTER: &str = "0x00000000000000000000000000000000000000ee";

#[tokio::test]
async fn an_anvil_reorg_of_depth_3_under_the_follower_drops_three_blocks_and_their_logs_then_the_new_branch()
{
    let n = node(AnvilOptions::new()).await;
    let emitter = Address::from_str(EMITTER).unwrap();
    n.rpc("anvil_setCode", json!([emitter, EMIT])).await.unwrap();
    // Automine: each call is a block of its own, 1 to 10, each with one event.
    for _ in 0..10 {
        n.rpc("eth_sendTransaction", json!([{"from": DEV_ADDRESSES[0], "to": emitter}])).await.unwrap();
    }
    let (t, _) = transport(&[("only", &n)], None);
    let filter = alloy::rpc::types::Filter::new().address(emitter);
    let mut follower = t.follow(Start::Number(1)).logs(filter).poll_every(Duration::from_millis(20));
    let mut yielded = Vec::new();
    while yielded.len() < 10 {
        if let ChainEvent::Logs { block, logs, .. } = within(follower.next()).await.unwrap() {
            assert_eq!(logs.len(), 1, "block {} has its one event", block.number);
            assert_eq!(logs[0].block_hash, Some(block.hash));
            yielded.push(block);
        }
    }
    assert_eq!(yielded.iter().map(|b| b.number).collect::<Vec<_>>(), (1..=10).collect::<Vec<_>>());

    n.rpc("anvil_reorg", json!([3, []])).await.unwrap();
    let ChainEvent::Reorg { depth, dropped, .. } = within(follower.next()).await.unwrap() else {
        panic!("a reorg, before anything of the new branch")
    };
    assert_eq!(depth, 3);
    let dropped_numbers: Vec<u64> = dropped.iter().map(|(b, _)| b.number).collect();
    assert_eq!(dropped_numbers, [10, 9, 8]);
    for (block, logs) in &dropped {
        assert_eq!(Some(block.hash), yielded.iter().find(|y| y.number == block.number).map(|y| y.hash));
        assert!(logs.len() == 1 && logs[0].removed, "block {}'s event is withdrawn", block.number);
    }
    // The new branch: blocks 8, 9, 10 again, other hashes, no event in them.
    for number in 8..=10 {
        let ChainEvent::Block { block, .. } = within(follower.next()).await.unwrap() else {
            panic!("block {number}")
        };
        assert_eq!(block.number, number);
        assert!(dropped.iter().all(|(d, _)| d.hash != block.hash), "block {number} is new");
        let ChainEvent::Logs { logs, .. } = within(follower.next()).await.unwrap() else {
            panic!("its logs")
        };
        assert!(logs.is_empty(), "the new block {number} has no event");
    }
}

/// The genesis timestamp of [`Network`]'s source node.
const GENESIS_TIME: u64 = 1_700_000_000;

/// The blocks of [`Network`]'s history: made on its source before the providers fork it.
const HISTORY: usize = 10;

/// Providers that make one chain. A source node holds the history (the emitter's code, and
/// blocks 1 to [`HISTORY`], each with one event); each provider is `anvil --fork-url` of it
/// at that block, so they share that history, and every later block is made on each running
/// provider from the same signed transaction at the same timestamp: a forked node's blocks
/// depend only on its fork point and what it is given, so every provider has the same block
/// (hash included) at each height. A provider started again forks the source again and is
/// given the blocks made since, before it rejoins, as a node resyncing; the source is never
/// stopped, and nothing but the forks reads it.
struct Network {
    source: Anvil,
    nodes: Vec<Option<Anvil>>,
    ports: Vec<u16>,
    /// The signed transaction of each block made, block 1 first.
    made: Vec<Bytes>,
}

impl Network {
    fn options() -> AnvilOptions {
        AnvilOptions::new().arg("--no-mining")
    }

    async fn start(count: usize) -> Network {
        let source = node(Network::options().arg("--timestamp").arg(GENESIS_TIME.to_string())).await;
        source.rpc("anvil_setCode", json!([EMITTER, EMIT])).await.unwrap();
        let mut network = Network { source, nodes: Vec::new(), ports: Vec::new(), made: Vec::new() };
        for number in 1..=HISTORY {
            let raw = emit_call(number as u64 - 1).await;
            Network::make_on(&network.source, number, &raw).await;
            network.made.push(raw);
        }
        for _ in 0..count {
            let n = network.fork(None).await;
            network.ports.push(n.port());
            network.nodes.push(Some(n));
        }
        network
    }

    /// A provider forking the source at the end of its history, on `port` when given.
    async fn fork(&self, port: Option<u16>) -> Anvil {
        let mut options = Network::options()
            .arg("--fork-url")
            .arg(self.source.url())
            .arg("--fork-block-number")
            .arg(HISTORY.to_string());
        if let Some(port) = port {
            options = options.port(port);
        }
        node(options).await
    }

    fn node(&self, i: usize) -> &Anvil {
        self.nodes[i].as_ref().expect("a running node")
    }

    /// Block `number` (from 1) on `n`: its transaction, then mined at its timestamp.
    async fn make_on(n: &Anvil, number: usize, raw: &Bytes) {
        n.rpc("eth_sendRawTransaction", json!([raw])).await.unwrap();
        n.rpc("evm_mine", json!([GENESIS_TIME + 2 * number as u64])).await.unwrap();
    }

    /// The next block, on every provider that is running and not paused (`skip`).
    async fn make(&mut self, skip: &[usize]) {
        let number = self.made.len() + 1;
        let raw = emit_call(number as u64 - 1).await;
        for (i, n) in self.nodes.iter().enumerate() {
            if let Some(n) = n.as_ref().filter(|_| !skip.contains(&i)) {
                Network::make_on(n, number, &raw).await;
            }
        }
        self.made.push(raw);
    }

    fn kill(&mut self, i: usize) {
        self.nodes[i] = None;
    }

    /// Provider `i` started again on its port, and given every block made since the history
    /// before it answers.
    async fn restart(&mut self, i: usize) {
        let n = self.fork(Some(self.ports[i])).await;
        self.replay(&n, HISTORY).await;
        self.nodes[i] = Some(n);
    }

    /// The blocks made since provider `i` was paused, given to it once it is resumed.
    async fn catch_up(&self, i: usize) {
        let n = self.node(i);
        let have = usize::try_from(n.block_number().await.unwrap()).unwrap();
        self.replay(n, have).await;
    }

    /// The blocks made after the first `have`, on `n`.
    async fn replay(&self, n: &Anvil, have: usize) {
        for (k, raw) in self.made.iter().enumerate().skip(have) {
            Network::make_on(n, k + 1, raw).await;
        }
    }
}

/// A signed call of the emitter by dev account 0 with `nonce`: one event.
async fn emit_call(nonce: u64) -> Bytes {
    let tx =
        TransactionRequest::default().with_to(Address::from_str(EMITTER).unwrap()).with_gas_limit(50_000);
    signed(0, nonce, tx).await.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::print_stdout, reason = "the figure of the run, for the closing note")]
async fn three_hundred_blocks_through_two_primary_restarts_and_a_stopped_backup_are_each_followed_once_with_their_logs()
 {
    let mut network = Network::start(2).await;
    let endpoints =
        vec![Endpoint::new("primary", network.node(0).url()), Endpoint::new("backup", network.node(1).url())];
    let transport =
        FailoverTransport::builder(endpoints).attempt_timeout(Duration::from_millis(300)).build().unwrap();
    let filter = alloy::rpc::types::Filter::new().address(Address::from_str(EMITTER).unwrap());
    let mut follower = transport.follow(Start::Number(1)).logs(filter).poll_every(Duration::from_millis(20));
    let follow = tokio::spawn(async move {
        let (mut blocks, mut logs, mut served) = (Vec::new(), Vec::new(), Vec::new());
        while blocks.len() < 300 {
            match tokio::time::timeout(Duration::from_secs(30), follower.next()).await {
                Ok(Ok(ChainEvent::Block { block, served_by })) => {
                    blocks.push(block);
                    served.push(served_by);
                }
                Ok(Ok(ChainEvent::Logs { block, logs: found, .. })) => logs.push((block, found)),
                Ok(Ok(other)) => panic!("the nodes make one chain, no reorg: {other:?}"),
                Ok(Err(err)) => panic!("the follower stopped: {err}"),
                Err(_) => panic!("no event for 30 s after block {}", blocks.len()),
            }
        }
        // The logs of the last block come after it.
        if logs.len() < blocks.len() {
            if let Ok(Ok(ChainEvent::Logs { block, logs: found, .. })) =
                tokio::time::timeout(Duration::from_secs(30), follower.next()).await
            {
                logs.push((block, found));
            }
        }
        (blocks, logs, served)
    });

    // Blocks 11 to 300, one every 10 ms: the primary killed at 60 and started again at 110
    // (the blocks it missed given to it first), the backup stopped (SIGSTOP: its connections
    // hang) from 150 to 200, the primary killed again from 230 to 270.
    for number in HISTORY + 1..=300 {
        match number {
            60 | 230 => network.kill(0),
            110 | 270 => network.restart(0).await,
            150 => network.node(1).pause().unwrap(),
            200 => {
                network.node(1).resume().unwrap();
                network.catch_up(1).await;
            }
            _ => {}
        }
        let paused = if (150..200).contains(&number) { vec![1] } else { vec![] };
        network.make(&paused).await;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (blocks, logs, served) = within(follow).await.unwrap();

    let numbers: Vec<u64> = blocks.iter().map(|b| b.number).collect();
    assert_eq!(numbers, (1..=300).collect::<Vec<_>>(), "every block once, in order");
    for (i, block) in blocks.iter().enumerate() {
        let params = json!([format!("{:#x}", block.number), false]);
        let primary = within(network.node(0).rpc("eth_getBlockByNumber", params.clone())).await.unwrap();
        let backup = within(network.node(1).rpc("eth_getBlockByNumber", params)).await.unwrap();
        assert_eq!(primary["hash"], backup["hash"], "the nodes agree on block {}", block.number);
        assert_eq!(
            primary["hash"].as_str(),
            Some(block.hash.to_string().as_str()),
            "block {} is the chain's",
            block.number
        );
        if i > 0 {
            assert_eq!(
                block.parent_hash,
                blocks[i - 1].hash,
                "block {} links to the one before",
                block.number
            );
        }
    }
    assert_eq!(logs.len(), 300, "the logs of every block");
    let mut seen = std::collections::HashSet::new();
    for ((of, found), block) in logs.iter().zip(&blocks) {
        assert_eq!(of.hash, block.hash, "block {}'s logs follow it", block.number);
        assert_eq!(found.len(), 1, "block {} has its one event", block.number);
        assert_eq!(found[0].block_hash, Some(block.hash));
        assert!(!found[0].removed);
        assert!(seen.insert(found[0].transaction_hash), "block {}'s event is yielded once", block.number);
    }
    let by_backup = served.iter().filter(|s| s.as_ref().is_some_and(|id| id.as_str() == "backup")).count();
    assert!(by_backup > 0, "the backup served the blocks the primary was down for");
    println!("follower through restarts: 300 blocks, {by_backup} served by the backup");
}

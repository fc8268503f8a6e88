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

/// Read bundles, archive state and anvil's own answers, through the alloy transport on real
/// anvil nodes (feature `alloy`).
///
/// anvil 1.7.1 answers a state read (`eth_getBalance`, `eth_call`, `eth_getCode`,
/// `eth_getStorageAt`, `eth_getTransactionCount`, `eth_getProof`, `eth_estimateGas`,
/// `eth_createAccessList`) at an EIP-1898 `blockHash` it does not know with
/// `{"code":-32001,"message":"Resource not found"}` (with or without `requireCanonical`), and
/// one at a block number above its head, or below what `--prune-history` keeps, with
/// `{"code":-32602,"message":"BlockOutOfRangeError: block height is H but requested was R"}`.
/// The JSON-RPC classifier judges the first a block it does not know, the second a block
/// above its head (`R > H`) or state it pruned (`R < H`).
///
/// Two anvil nodes have different genesis blocks unless started identically: the same
/// `--timestamp` and blocks mined with explicit timestamps (`evm_mine`) make their common
/// blocks identical, hash for hash (`anvil_mine` alone is not enough: its timestamps follow
/// the wall clock since start).
#[cfg(feature = "alloy")]
mod bundles {
    use std::sync::{Arc, Mutex};

    use alloy_json_rpc::{Id, Request, RequestPacket, ResponsePacket, ResponsePayload};
    use alloy_primitives::B256;
    use failnext::alloy::{BlockRef, Capability, FailoverTransport, FailoverTransportBuilder, Failure};
    use failnext_loopback::{Anvil, AnvilOptions, anvil::DEV_ADDRESSES};
    use reqwest_middleware::{Middleware, Next};
    use serde_json::{Value, json};
    use tower_service::Service;

    use super::nodes::*;

    /// The genesis timestamp of identically started nodes.
    const GENESIS: u64 = 1_700_000_000;

    /// What each attempt sent, by port: a per-attempt middleware after `Failover`.
    #[derive(Clone, Default)]
    struct Bodies(Arc<Mutex<Vec<(u16, Value)>>>);

    impl Bodies {
        fn take(&self) -> Vec<(u16, Value)> {
            std::mem::take(&mut *self.0.lock().unwrap())
        }
    }

    #[async_trait::async_trait]
    impl Middleware for Bodies {
        async fn handle(
            &self,
            req: reqwest::Request,
            ext: &mut http::Extensions,
            next: Next<'_>,
        ) -> reqwest_middleware::Result<reqwest::Response> {
            let port = req.url().port().unwrap_or_default();
            let body = req.body().and_then(|b| b.as_bytes()).and_then(|b| serde_json::from_slice(b).ok());
            self.0.lock().unwrap().push((port, body.unwrap_or(Value::Null)));
            next.run(req, ext).await
        }
    }

    /// A transport over `nodes` on a client chain that records every attempt's body.
    fn recorded(nodes: &[(&str, &Anvil)]) -> (FailoverTransportBuilder, Bodies) {
        let bodies = Bodies::default();
        (transport(nodes).attempt_middleware(bodies.clone()), bodies)
    }

    /// The transport over `nodes` with the settings of [`failover`]: no request deadline or
    /// failover budget, cooldown off.
    fn transport(nodes: &[(&str, &Anvil)]) -> FailoverTransportBuilder {
        FailoverTransport::builder(endpoints(nodes))
            .client(http())
            .cooldown(failnext::Cooldown::disabled())
            .no_deadline()
            .no_failover_budget()
    }

    fn single(method: &'static str, params: Value) -> RequestPacket {
        RequestPacket::Single(Request::new(method, Id::Number(1), params).serialize().unwrap())
    }

    async fn send<T>(t: &T, packet: RequestPacket) -> Result<Value, alloy_transport::TransportError>
    where
        T: Service<RequestPacket, Response = ResponsePacket, Error = alloy_transport::TransportError> + Clone,
    {
        let answer = tokio::time::timeout(BOUND, t.clone().call(packet)).await.expect("the read ended")?;
        let ResponsePacket::Single(r) = answer else { panic!("a batch") };
        match r.payload {
            ResponsePayload::Success(v) => Ok(serde_json::from_str(v.get()).unwrap()),
            ResponsePayload::Failure(e) => panic!("error response: {e:?}"),
        }
    }

    /// The node's block `number` (`"latest"` too) as a reference.
    async fn block(node: &Anvil, number: &str) -> BlockRef {
        let block = node.rpc("eth_getBlockByNumber", json!([number, false])).await.unwrap();
        let n = block["number"].as_str().and_then(|s| u64::from_str_radix(&s[2..], 16).ok()).unwrap();
        BlockRef::new(n, block["hash"].as_str().unwrap().parse().unwrap())
    }

    /// A node whose genesis is [`GENESIS`]: two of them mine identical blocks with [`mine_at`].
    async fn identical(extra: &[&str]) -> Anvil {
        let mut options = AnvilOptions::new().arg("--timestamp").arg(GENESIS.to_string());
        for arg in extra {
            options = options.arg(*arg);
        }
        node(options).await
    }

    /// Mines blocks `from..=to` at 12 s each after [`GENESIS`], explicitly.
    async fn mine_at(node: &Anvil, from: u64, to: u64) {
        for n in from..=to {
            node.rpc("evm_mine", json!([GENESIS + 12 * n])).await.unwrap();
        }
    }

    /// Each provider's head, as a monitor's snapshot would say it.
    type Heads = Arc<Mutex<Vec<(String, u64)>>>;

    /// A transport over `nodes`, attempts bounded by 500 ms and cooldown off (so a recovered
    /// node is used again at once), reading heads from `heads` when monotonic.
    fn recovering(nodes: &[(&str, &Anvil)], heads: Option<Heads>) -> FailoverTransport {
        let t = transport(nodes).attempt_timeout(std::time::Duration::from_millis(500));
        match heads {
            Some(heads) => t.monotonic_reads(move |id| {
                heads.lock().unwrap().iter().find(|(i, _)| i == id).map(|(_, h)| *h)
            }),
            None => t,
        }
        .build()
        .unwrap()
    }

    #[tokio::test]
    async fn a_recovered_primary_at_height_0_makes_the_head_go_backwards_unless_reads_are_monotonic() {
        // The primary is a node restarted from scratch (height 0) while the backup was at 5.
        let (primary, backup) = (node(AnvilOptions::new()).await, node(AnvilOptions::new()).await);
        backup.mine(5).await.unwrap();
        let nodes = [("primary", &primary), ("backup", &backup)];
        let head = || single("eth_blockNumber", json!([]));

        // Without monotonic reads: while the primary is stopped the client sees 5, then 0.
        let plain = recovering(&nodes, None);
        primary.pause().unwrap();
        assert_eq!(send(&plain, head()).await.unwrap(), json!("0x5"), "the backup, while the primary hangs");
        primary.resume().unwrap();
        assert_eq!(send(&plain, head()).await.unwrap(), json!("0x0"), "back on the primary: backwards");

        // Monotonic, heads unknown: the primary's answer below 5 is not returned.
        let monotonic = recovering(&nodes, Some(Arc::default()));
        primary.pause().unwrap();
        assert_eq!(send(&monotonic, head()).await.unwrap(), json!("0x5"));
        primary.resume().unwrap();
        for _ in 0..3 {
            assert_eq!(send(&monotonic, head()).await.unwrap(), json!("0x5"), "never below what was seen");
        }
        let from = DEV_ADDRESSES[0];
        let balance = send(&monotonic, single("eth_getBalance", json!([from, "latest"]))).await.unwrap();
        assert!(balance.is_string());

        // Monotonic with heads known (a monitor's snapshot): the primary is skipped unasked.
        let heads: Heads = Arc::new(Mutex::new(vec![("primary".to_owned(), 0), ("backup".to_owned(), 5)]));
        let (t, bodies) = recorded(&nodes);
        let known = {
            let heads = heads.clone();
            t.monotonic_reads(move |id| heads.lock().unwrap().iter().find(|(i, _)| i == id).map(|(_, h)| *h))
                .build()
                .unwrap()
        };
        known.observe_head(5);
        for _ in 0..3 {
            assert_eq!(
                send(&known, single("eth_getBalance", json!([from, "latest"]))).await.unwrap(),
                balance
            );
        }
        let sent = bodies.take();
        assert!(sent.iter().all(|(port, _)| *port == backup.port()), "the primary is below 5: not asked");
        // Once the primary has caught up, it serves again.
        primary.mine(6).await.unwrap();
        heads.lock().unwrap()[0].1 = 6;
        send(&known, single("eth_getBalance", json!([from, "latest"]))).await.unwrap();
        assert_eq!(bodies.take().first().map(|(port, _)| *port), Some(primary.port()));
    }

    fn names(params: &Value, reference: &BlockRef) -> bool {
        params.to_string().contains(&reference.hash.to_string())
    }

    #[tokio::test]
    async fn a_bundle_at_the_higher_nodes_head_pins_every_read_and_skips_the_lower_node() {
        let (primary, backup) = (node(AnvilOptions::new()).await, node(AnvilOptions::new()).await);
        primary.mine(2).await.unwrap();
        backup.mine(7).await.unwrap();
        let (t, bodies) = recorded(&[("primary", &primary), ("backup", &backup)]);
        let t = t.build().unwrap();
        let reference = block(&backup, "latest").await;
        assert_eq!(reference.number, 7);
        let bundle = t.bundle(reference);
        let (from, to) = (DEV_ADDRESSES[0], DEV_ADDRESSES[1]);
        let slot = format!("{}", B256::ZERO);
        let reads = [
            single("eth_getBalance", json!([from, "latest"])),
            single("eth_getTransactionCount", json!([from])),
            single("eth_getCode", json!([to, "latest"])),
            single("eth_getStorageAt", json!([to, slot])),
            single("eth_call", json!([{"from": from, "to": to, "data": "0x"}])),
            single("eth_estimateGas", json!([{"from": from, "to": to, "value": "0x1"}])),
            single("eth_createAccessList", json!([{"from": from, "to": to, "data": "0x"}])),
            single("eth_getProof", json!([from, [], "latest"])),
        ];
        for read in reads {
            send(&bundle, read).await.unwrap();
        }
        let sent = bodies.take();
        let to_primary: Vec<&Value> =
            sent.iter().filter(|(p, _)| *p == primary.port()).map(|(_, b)| b).collect();
        assert_eq!(to_primary.len(), 1, "the lower node, asked once: {to_primary:?}");
        assert_eq!(sent.len(), 9, "eight reads, one of them tried twice");
        assert!(sent.iter().all(|(_, body)| names(&body["params"], &reference)), "{sent:?}");
        assert_eq!(bundle.missed(), [failnext::EndpointId::from("primary")]);
        // Outside the bundle the lower node serves as before.
        assert_eq!(send(&t, single("eth_blockNumber", json!([]))).await.unwrap(), json!("0x2"));
    }

    #[tokio::test]
    async fn identically_started_nodes_share_their_common_blocks_so_a_reference_there_stays_on_the_primary() {
        let (primary, backup) = (identical(&[]).await, identical(&[]).await);
        mine_at(&primary, 1, 3).await;
        mine_at(&backup, 1, 5).await;
        let common = block(&primary, "0x3").await;
        assert_eq!(block(&backup, "0x3").await, common, "the same block 3, hash for hash");
        let (t, bodies) = recorded(&[("primary", &primary), ("backup", &backup)]);
        let t = t.build().unwrap();
        let shared = t.bundle(common);
        let balance = || single("eth_getBalance", json!([DEV_ADDRESSES[0]]));
        send(&shared, balance()).await.unwrap();
        let sent = bodies.take();
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].0, primary.port(), "the primary knows block 3: it answers");
        assert!(shared.missed().is_empty());

        let ahead = t.bundle(block(&backup, "latest").await);
        send(&ahead, balance()).await.unwrap();
        let ports: Vec<u16> = bodies.take().iter().map(|(p, _)| *p).collect();
        assert_eq!(ports, [primary.port(), backup.port()], "block 5 only the backup knows");
        assert_eq!(ahead.missed(), [failnext::EndpointId::from("primary")]);
    }

    #[tokio::test]
    async fn anvil_answers_an_unknown_block_hash_with_resource_not_found_and_a_bundle_there_fails_typed() {
        let only = node(AnvilOptions::new()).await;
        let unknown = json!({"blockHash": B256::repeat_byte(0x11), "requireCanonical": true});
        for (method, params) in [
            ("eth_getBalance", json!([DEV_ADDRESSES[0], unknown])),
            ("eth_call", json!([{"to": DEV_ADDRESSES[1], "data": "0x"}, unknown])),
        ] {
            let err = only.rpc(method, params).await.unwrap_err();
            let failnext_loopback::AnvilError::Rpc { error, .. } = err else { panic!("{err}") };
            assert_eq!(error, json!({"code": -32001, "message": "Resource not found"}), "{method}");
        }
        let t = transport(&[("only", &only)]).build().unwrap();
        let bundle = t.bundle(BlockRef::new(1, B256::repeat_byte(0x11)));
        let err = send(&bundle, single("eth_getBalance", json!([DEV_ADDRESSES[0]]))).await.unwrap_err();
        let typed = Failure::find(&err)
            .filter(Failure::is_reference_unknown)
            .unwrap_or_else(|| panic!("not ReferenceUnknown: {err}"));
        assert_eq!(typed.missed(), [failnext::EndpointId::from("only")]);
    }

    #[tokio::test]
    async fn a_pruned_node_is_found_to_lack_archive_state_and_still_serves_current_reads() {
        let (pruned, archive) = (identical(&["--prune-history", "2"]).await, identical(&[]).await);
        mine_at(&pruned, 1, 16).await;
        mine_at(&archive, 1, 16).await;
        let (t, bodies) = recorded(&[("pruned", &pruned), ("archive", &archive)]);
        let t = t.archive_depth(4).build().unwrap();
        assert_eq!(send(&t, single("eth_blockNumber", json!([]))).await.unwrap(), json!("0x10"));
        let old = || single("eth_getBalance", json!([DEV_ADDRESSES[0], "0x2"]));
        send(&t, old()).await.unwrap();
        assert_eq!(t.lacking("pruned"), [Capability::Archive], "found from its BlockOutOfRange answer");
        bodies.take();
        send(&t, old()).await.unwrap();
        let ports: Vec<u16> = bodies.take().iter().map(|(p, _)| *p).collect();
        assert_eq!(ports, [archive.port()], "the pruned node is skipped for historical reads");
        send(&t, single("eth_getBalance", json!([DEV_ADDRESSES[0], "latest"]))).await.unwrap();
        let ports: Vec<u16> = bodies.take().iter().map(|(p, _)| *p).collect();
        assert_eq!(ports, [pruned.port()], "and still serves current state");
    }
}

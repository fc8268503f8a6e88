//! The chain follower against loopback providers serving one simulated chain: every block
//! once and in order, its logs by its hash, reorgs reported with what they dropped, a
//! provider dying mid-stream costing nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alloy_primitives::{Address, B256, keccak256};
use alloy_rpc_types_eth::Filter;
use alloy_transport::TransportError;
use failnext::Endpoint;
use failnext::alloy::{BlockRef, ChainEvent, FailoverTransport, Failure, FailureKind, Follower, Start};
use failnext_loopback::{Action, Received, Reply, Server};
use serde_json::{Value, json};

#[path = "shared/stubs.rs"]
mod stubs;

#[path = "alloy_follow/verified.rs"]
mod verified;

const EMITTER: &str = "0x00000000000000000000000000000000000000ee";

/// A chain: block `n`'s hash is derived from `n` and the branch it was made on.
#[derive(Default)]
struct Chain {
    /// Per block number: the branch it was made on.
    branches: Vec<u64>,
    /// Blocks a reorg replaced, still known by their hash (as nodes keep them a while).
    replaced: Vec<(u64, u64)>,
    /// The chain id it answers `eth_chainId` with.
    id: u64,
}

impl Chain {
    fn with(blocks: u64) -> Arc<Mutex<Chain>> {
        Arc::new(Mutex::new(Chain { branches: vec![0; blocks as usize + 1], replaced: Vec::new(), id: 1 }))
    }

    fn hash(number: u64, branch: u64) -> B256 {
        keccak256([number.to_be_bytes(), branch.to_be_bytes()].concat())
    }

    fn hash_of(&self, number: u64) -> Option<B256> {
        self.branches.get(number as usize).map(|b| Chain::hash(number, *b))
    }

    fn head(&self) -> u64 {
        self.branches.len() as u64 - 1
    }

    fn header(&self, number: u64) -> Value {
        let Some(hash) = self.hash_of(number) else { return Value::Null };
        let parent = number.checked_sub(1).and_then(|p| self.hash_of(p)).unwrap_or_default();
        json!({
            "number": format!("{number:#x}"),
            "hash": hash,
            "parentHash": parent,
            "timestamp": format!("{:#x}", 1_700_000_000 + number * 12),
        })
    }

    fn number_of(&self, hash: B256) -> Option<u64> {
        (0..=self.head()).find(|n| self.hash_of(*n) == Some(hash))
    }

    /// One log per block, its data the block number.
    fn logs(&self, hash: B256) -> Value {
        let Some(number) = self.number_of(hash) else { return json!([]) };
        json!([{
            "address": EMITTER,
            "topics": [],
            "data": format!("0x{number:064x}"),
            "blockHash": hash,
            "blockNumber": format!("{number:#x}"),
            "transactionHash": keccak256(hash),
            "transactionIndex": "0x0",
            "logIndex": "0x0",
            "removed": false,
        }])
    }

    fn extend(&mut self, to: u64) {
        let branch = self.branches.last().copied().unwrap_or_default();
        while self.head() < to {
            self.branches.push(branch);
        }
    }

    /// Replaces the last `depth` blocks with blocks of a new branch.
    fn reorg(&mut self, depth: u64) {
        let branch = self.branches.iter().max().copied().unwrap_or_default() + 1;
        let head = self.head();
        for n in head + 1 - depth..=head {
            self.replaced.push((n, self.branches[n as usize]));
            self.branches[n as usize] = branch;
        }
    }
}

/// A provider serving `chain` (single calls and batches); answers 503 while `down` is set,
/// and refuses batches while `no_batches` is.
async fn provider(chain: Arc<Mutex<Chain>>, down: Arc<AtomicBool>) -> Server {
    provider_with(chain, down, Arc::default()).await
}

async fn provider_with(
    chain: Arc<Mutex<Chain>>,
    down: Arc<AtomicBool>,
    no_batches: Arc<AtomicBool>,
) -> Server {
    serve(Arc::new(move || chain.clone()), down, no_batches).await
}

/// A provider serving `chain`, or `other` while `switched` is set: a node moved onto another
/// chain (or a branch of its own), whose blocks no other provider has.
async fn switching(chain: Arc<Mutex<Chain>>, other: Arc<Mutex<Chain>>, switched: Arc<AtomicBool>) -> Server {
    let pick = move || if switched.load(Ordering::SeqCst) { other.clone() } else { chain.clone() };
    serve(Arc::new(pick), Arc::default(), Arc::default()).await
}

type Pick = Arc<dyn Fn() -> Arc<Mutex<Chain>> + Send + Sync>;

async fn serve(pick: Pick, down: Arc<AtomicBool>, no_batches: Arc<AtomicBool>) -> Server {
    Server::start(Arc::new(move |req: &Received| {
        if down.load(Ordering::SeqCst) {
            return Action::Reply(Reply::new(503).text("unavailable"));
        }
        let body = req.json();
        let chain = pick();
        let chain = chain.lock().unwrap();
        let answer = match &body {
            Value::Array(_) if no_batches.load(Ordering::SeqCst) => json!({
                "jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "batch requests are not supported"}
            }),
            Value::Array(calls) => Value::Array(calls.iter().map(|call| one(&chain, call)).collect()),
            call => one(&chain, call),
        };
        Action::Reply(Reply::new(200).json(answer.to_string()))
    }))
    .await
}

fn one(chain: &Chain, call: &Value) -> Value {
    let params = &call["params"];
    let result = match call["method"].as_str().unwrap_or_default() {
        "eth_blockNumber" => json!(format!("{:#x}", chain.head())),
        "eth_chainId" => json!(format!("{:#x}", chain.id)),
        "eth_getBlockByNumber" => {
            let n = u64::from_str_radix(params[0].as_str().unwrap_or("0x0").trim_start_matches("0x"), 16);
            n.map_or(Value::Null, |n| chain.header(n))
        }
        "eth_getBlockByHash" => {
            let hash: B256 = serde_json::from_value(params[0].clone()).unwrap_or_default();
            let replaced = chain.replaced.iter().find(|(n, b)| Chain::hash(*n, *b) == hash);
            match (chain.number_of(hash), replaced) {
                (Some(n), _) => chain.header(n),
                (None, Some((n, _))) => json!({
                    "number": format!("{n:#x}"),
                    "hash": hash,
                    "parentHash": B256::ZERO,
                    "timestamp": format!("{:#x}", 1_700_000_000 + n * 12),
                }),
                (None, None) => Value::Null,
            }
        }
        "eth_getLogs" => {
            let hash: B256 = serde_json::from_value(params[0]["blockHash"].clone()).unwrap_or_default();
            chain.logs(hash)
        }
        _ => Value::Null,
    };
    json!({"jsonrpc": "2.0", "id": call["id"], "result": result})
}

fn transport(servers: &[(&str, &Server)]) -> FailoverTransport {
    let endpoints = servers.iter().map(|(id, s)| Endpoint::new(*id, s.url("/")));
    FailoverTransport::builder(endpoints).attempt_timeout(Duration::from_secs(2)).build().unwrap()
}

fn filter() -> Filter {
    Filter::new().address(EMITTER.parse::<Address>().unwrap())
}

/// The next event, within 5 s.
async fn next(follower: &mut Follower) -> Result<ChainEvent, TransportError> {
    tokio::time::timeout(Duration::from_secs(5), follower.next()).await.expect("an event within 5 s")
}

/// Where a too-deep reorg says to follow again from.
fn restart_from(err: &TransportError) -> Option<u64> {
    Failure::find(err).filter(Failure::is_reorg_too_deep)?.restart_from()
}

/// Events until block `last` and its logs are out.
async fn until_block(follower: &mut Follower, last: u64) -> Vec<ChainEvent> {
    let mut events = Vec::new();
    loop {
        let event = next(follower).await.unwrap();
        let done = matches!(&event, ChainEvent::Logs { block, .. } if block.number == last);
        events.push(event);
        if done {
            return events;
        }
    }
}

fn blocks(events: &[ChainEvent]) -> Vec<u64> {
    events
        .iter()
        .filter_map(|e| match e {
            ChainEvent::Block { block: b, .. } => Some(b.number),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_follower_yields_every_block_once_in_order_each_with_its_own_logs() {
    let chain = Chain::with(10);
    let p = provider(chain.clone(), Arc::default()).await;
    let t = transport(&[("p", &p)]);
    let mut follower = t.follow(Start::Number(1)).logs(filter()).poll_every(Duration::from_millis(10));
    let events = until_block(&mut follower, 10).await;
    assert_eq!(blocks(&events), (1..=10).collect::<Vec<_>>());
    let mut parent = chain.lock().unwrap().hash_of(0).unwrap();
    for pair in events.chunks(2) {
        let [ChainEvent::Block { block, .. }, ChainEvent::Logs { block: of, logs, .. }] = pair else {
            panic!("a block, then its logs: {pair:?}")
        };
        assert_eq!(block.parent_hash, parent, "block {} links to the one before", block.number);
        parent = block.hash;
        assert_eq!(*of, block.block_ref());
        assert_eq!(logs.len(), 1);
        assert_eq!(logs[0].block_hash, Some(block.hash), "every log belongs to the block just yielded");
    }
    // New blocks are followed as they come.
    chain.lock().unwrap().extend(12);
    assert_eq!(blocks(&until_block(&mut follower, 12).await), [11, 12]);
    assert_eq!(follower.stats().blocks, 12);
}

#[tokio::test]
async fn a_reorg_of_depth_3_reports_the_dropped_blocks_and_their_logs_removed_then_the_new_branch() {
    let chain = Chain::with(10);
    let p = provider(chain.clone(), Arc::default()).await;
    let t = transport(&[("p", &p)]);
    let mut follower = t.follow(Start::Number(1)).logs(filter()).poll_every(Duration::from_millis(10));
    let before = until_block(&mut follower, 10).await;
    let old: Vec<B256> = before
        .iter()
        .filter_map(|e| match e {
            ChainEvent::Block { block: b, .. } if b.number >= 8 => Some(b.hash),
            _ => None,
        })
        .collect();
    {
        let mut chain = chain.lock().unwrap();
        chain.reorg(3);
        chain.extend(11);
    }
    let ChainEvent::Reorg { depth, dropped, .. } = next(&mut follower).await.unwrap() else {
        panic!("a reorg first")
    };
    assert_eq!(depth, 3);
    let numbers: Vec<u64> = dropped.iter().map(|(b, _)| b.number).collect();
    assert_eq!(numbers, [10, 9, 8], "newest first");
    let hashes: Vec<B256> = dropped.iter().rev().map(|(b, _)| b.hash).collect();
    assert_eq!(hashes, old);
    assert!(dropped.iter().all(|(_, logs)| logs.len() == 1 && logs.iter().all(|l| l.removed)));
    let after = until_block(&mut follower, 11).await;
    assert_eq!(blocks(&after), [8, 9, 10, 11], "then the new branch");
    let new_8 = chain.lock().unwrap().hash_of(8).unwrap();
    assert!(matches!(&after[0], ChainEvent::Block { block: b, .. } if b.hash == new_8));
}

#[tokio::test]
async fn a_reorg_deeper_than_the_blocks_remembered_is_a_typed_error_naming_where_to_restart() {
    let chain = Chain::with(10);
    let p = provider(chain.clone(), Arc::default()).await;
    let t = transport(&[("p", &p)]);
    let mut follower = t.follow(Start::Number(1)).depth(2).poll_every(Duration::from_millis(10));
    for _ in 1..=10 {
        next(&mut follower).await.unwrap();
    }
    chain.lock().unwrap().reorg(5);
    chain.lock().unwrap().extend(11);
    let err = next(&mut follower).await.unwrap_err();
    assert_eq!(restart_from(&err), Some(9), "too deep: {err}");
}

#[tokio::test]
async fn a_provider_dying_mid_stream_costs_no_block_and_no_log() {
    let chain = Chain::with(5);
    let down = Arc::new(AtomicBool::new(false));
    let primary = provider(chain.clone(), down.clone()).await;
    let backup = provider(chain.clone(), Arc::default()).await;
    let t = transport(&[("primary", &primary), ("backup", &backup)]);
    let mut follower = t.follow(Start::Number(1)).logs(filter()).poll_every(Duration::from_millis(10));
    let mut events = until_block(&mut follower, 5).await;
    down.store(true, Ordering::SeqCst);
    chain.lock().unwrap().extend(15);
    events.extend(until_block(&mut follower, 15).await);
    down.store(false, Ordering::SeqCst);
    chain.lock().unwrap().extend(20);
    events.extend(until_block(&mut follower, 20).await);
    assert_eq!(blocks(&events), (1..=20).collect::<Vec<_>>(), "every block once, in order");
    let logs =
        events.iter().filter(|e| matches!(e, ChainEvent::Logs { logs, .. } if logs.len() == 1)).count();
    assert_eq!(logs, 20, "every block's log once");
    let served = |n: u64| {
        events.iter().find_map(|e| match e {
            ChainEvent::Block { block, served_by } if block.number == n => {
                served_by.as_ref().map(|id| id.to_string())
            }
            _ => None,
        })
    };
    assert_eq!(served(1).as_deref(), Some("primary"), "each event names the endpoint that answered");
    assert_eq!(served(10).as_deref(), Some("backup"), "while the primary was down");
}

#[tokio::test]
async fn a_follower_started_at_a_hash_or_the_head_begins_there() {
    let chain = Chain::with(7);
    let p = provider(chain.clone(), Arc::default()).await;
    let t = transport(&[("p", &p)]);
    let five = chain.lock().unwrap().hash_of(5).unwrap();
    let mut by_hash = t.follow(Start::Hash(five)).poll_every(Duration::from_millis(10));
    assert!(
        matches!(next(&mut by_hash).await.unwrap(), ChainEvent::Block { block: b, .. } if b.number == 5 && b.hash == five)
    );
    let mut at_head = t.follow(Start::Head).poll_every(Duration::from_millis(10));
    assert!(matches!(next(&mut at_head).await.unwrap(), ChainEvent::Block { block: b, .. } if b.number == 7));
    let unknown = t.follow(Start::Hash(B256::repeat_byte(9))).next().await;
    let kind = unknown.as_ref().err().and_then(Failure::find).map(|f| f.kind());
    assert_eq!(kind, Some(FailureKind::StartUnknown), "{unknown:?}");
}

#[tokio::test]
async fn a_reorg_at_the_same_height_is_reported_without_waiting_for_a_new_block() {
    let chain = Chain::with(6);
    let p = provider(chain.clone(), Arc::default()).await;
    let t = transport(&[("p", &p)]);
    let mut follower = t.follow(Start::Number(1)).poll_every(Duration::from_millis(10));
    for _ in 1..=6 {
        next(&mut follower).await.unwrap();
    }
    chain.lock().unwrap().reorg(2);
    let ChainEvent::Reorg { depth, .. } = next(&mut follower).await.unwrap() else { panic!("a reorg") };
    assert_eq!(depth, 2);
    let new = chain.lock().unwrap().hash_of(5).unwrap();
    assert!(
        matches!(next(&mut follower).await.unwrap(), ChainEvent::Block { block: b, .. } if b.number == 5 && b.hash == new)
    );
}

#[tokio::test]
async fn a_follower_catching_up_reads_its_blocks_in_bounded_batches_or_one_by_one_where_batches_are_refused()
{
    let chain = Chain::with(100);
    let p = provider(chain.clone(), Arc::default()).await;
    let t = transport(&[("p", &p)]);
    let mut follower = t.follow(Start::Number(1)).logs(filter()).poll_every(Duration::from_millis(10));
    assert_eq!(blocks(&until_block(&mut follower, 100).await), (1..=100).collect::<Vec<_>>());
    let requests = follower.stats().requests;
    assert!(requests <= 2 * 100 / 32 + 6, "blocks and logs 32 at a time: {requests} requests for 100 blocks");

    let refusing = provider_with(chain.clone(), Arc::default(), Arc::new(AtomicBool::new(true))).await;
    let t = transport(&[("refusing", &refusing)]);
    let mut follower = t.follow(Start::Number(1)).logs(filter()).poll_every(Duration::from_millis(10));
    assert_eq!(blocks(&until_block(&mut follower, 20).await), (1..=20).collect::<Vec<_>>(), "one by one");
}

#[tokio::test]
async fn a_backfill_and_a_reorg_are_events_of_the_transport() {
    let chain = Chain::with(40);
    let p = provider(chain.clone(), Arc::default()).await;
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let t = FailoverTransport::builder([Endpoint::new("p", p.url("/"))])
        .on_event({
            let seen = seen.clone();
            move |event: &failnext::Event<'_>| match event {
                failnext::Event::Backfilled { from, blocks, endpoint } => {
                    seen.lock().unwrap().push(format!("backfilled {from}+{blocks} from {endpoint:?}"));
                }
                failnext::Event::Reorged { depth, kept, .. } => {
                    seen.lock().unwrap().push(format!("reorged {depth} after {kept}"));
                }
                _ => {}
            }
        })
        .build()
        .unwrap();
    let mut follower = t.follow(Start::Number(1)).poll_every(Duration::from_millis(10));
    for _ in 1..=40 {
        next(&mut follower).await.unwrap();
    }
    chain.lock().unwrap().reorg(2);
    assert!(matches!(next(&mut follower).await.unwrap(), ChainEvent::Reorg { depth: 2, .. }));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.first().map(String::as_str), Some("backfilled 1+32 from Some(\"p\")"), "{seen:?}");
    assert!(seen.contains(&"reorged 2 after 38".to_owned()), "{seen:?}");
}

/// A health source that admits every endpoint and knows each one's head.
struct Heads(Mutex<Vec<(&'static str, u64)>>);

impl failnext::HealthSource for Heads {
    fn eligible(&self, _: &failnext::EndpointId) -> bool {
        true
    }

    fn head_of(&self, id: &failnext::EndpointId) -> Option<u64> {
        self.0.lock().unwrap().iter().find(|(e, _)| *e == id.as_str()).map(|(_, h)| *h)
    }
}

#[tokio::test]
async fn a_paired_follower_goes_no_further_than_the_block_every_admitted_provider_has() {
    let chain = Chain::with(20);
    let (a, b) =
        (provider(chain.clone(), Arc::default()).await, provider(chain.clone(), Arc::default()).await);
    let heads = Arc::new(Heads(Mutex::new(vec![("a", 20), ("b", 10)])));
    let t = FailoverTransport::builder([Endpoint::new("a", a.url("/")), Endpoint::new("b", b.url("/"))])
        .monitor(heads.clone())
        .build()
        .unwrap();
    let mut follower = t.follow(Start::Number(1)).poll_every(Duration::from_millis(10));
    for n in 1..=10 {
        assert!(
            matches!(next(&mut follower).await.unwrap(), ChainEvent::Block { block, .. } if block.number == n)
        );
    }
    // a runs ahead: block 11 waits until b has it too.
    let early = tokio::time::timeout(Duration::from_millis(200), follower.next()).await;
    assert!(early.is_err(), "nothing past the agreed head: {early:?}");
    heads.0.lock().unwrap()[1].1 = 12;
    assert!(
        matches!(next(&mut follower).await.unwrap(), ChainEvent::Block { block, .. } if block.number == 11)
    );
}

/// Another chain of `blocks` blocks: every hash differs from [`Chain::with`]'s.
fn other_chain(blocks: u64) -> Arc<Mutex<Chain>> {
    Arc::new(Mutex::new(Chain { branches: vec![77; blocks as usize + 1], replaced: Vec::new(), id: 77 }))
}

#[tokio::test]
async fn a_provider_switching_chains_mid_stream_is_avoided_costing_no_block_and_no_false_reorg() {
    let chain = Chain::with(5);
    let switched = Arc::new(AtomicBool::new(false));
    let primary = switching(chain.clone(), other_chain(40), switched.clone()).await;
    let backup = provider(chain.clone(), Arc::default()).await;
    let t = transport(&[("primary", &primary), ("backup", &backup)]);
    let mut follower = t.follow(Start::Number(1)).logs(filter()).poll_every(Duration::from_millis(10));
    let mut events = until_block(&mut follower, 5).await;
    let before = primary.requests();
    switched.store(true, Ordering::SeqCst);
    chain.lock().unwrap().extend(20);
    events.extend(until_block(&mut follower, 20).await);
    assert!(events.iter().all(|e| !matches!(e, ChainEvent::Reorg { .. })), "no reorg: {events:?}");
    assert_eq!(blocks(&events), (1..=20).collect::<Vec<_>>(), "every block once, in order");
    for event in &events {
        if let ChainEvent::Block { block, .. } = event {
            assert_eq!(
                Some(block.hash),
                chain.lock().unwrap().hash_of(block.number),
                "block {} is the chain's",
                block.number
            );
        }
    }
    let logs =
        events.iter().filter(|e| matches!(e, ChainEvent::Logs { logs, .. } if logs.len() == 1)).count();
    assert_eq!(logs, 20, "every block's log once");
    let asked = primary.requests() - before;
    assert!(
        asked <= 3,
        "the provider off the chain is avoided once found: {asked} requests after it switched"
    );
}

#[tokio::test]
async fn a_provider_on_another_chain_at_the_start_is_outvoted_and_does_not_set_the_chain_followed() {
    let chain = Chain::with(10);
    let wrong = switching(chain.clone(), other_chain(10), Arc::new(AtomicBool::new(true))).await;
    let b = provider(chain.clone(), Arc::default()).await;
    let c = provider(chain.clone(), Arc::default()).await;
    let t = transport(&[("wrong", &wrong), ("b", &b), ("c", &c)]);
    let mut follower = t.follow(Start::Number(1)).poll_every(Duration::from_millis(10));
    for number in 1..=10 {
        let ChainEvent::Block { block, served_by } = next(&mut follower).await.unwrap() else {
            panic!("blocks only")
        };
        assert_eq!(block.number, number);
        assert_eq!(Some(block.hash), chain.lock().unwrap().hash_of(number), "block {number} is the chain's");
        assert_ne!(served_by.map(|id| id.to_string()).as_deref(), Some("wrong"));
    }
}

#[tokio::test]
async fn two_providers_disagreeing_on_the_first_block_start_nothing_until_they_agree() {
    let chain = Chain::with(3);
    let switched = Arc::new(AtomicBool::new(true));
    let wrong = switching(chain.clone(), other_chain(3), switched.clone()).await;
    let right = provider(chain.clone(), Arc::default()).await;
    let t = transport(&[("wrong", &wrong), ("right", &right)]);
    let mut follower = t.follow(Start::Number(1)).poll_every(Duration::from_millis(10));
    let waited = tokio::time::timeout(Duration::from_millis(300), follower.next()).await;
    assert!(waited.is_err(), "no block two providers disagree on: {waited:?}");
    switched.store(false, Ordering::SeqCst);
    let ChainEvent::Block { block, .. } = next(&mut follower).await.unwrap() else { panic!("a block") };
    assert_eq!(Some(block.hash), chain.lock().unwrap().hash_of(1));
}

#[tokio::test]
async fn a_reorg_two_providers_show_is_confirmed_by_the_second_and_reported_once() {
    let chain = Chain::with(8);
    let a = provider(chain.clone(), Arc::default()).await;
    let b = provider(chain.clone(), Arc::default()).await;
    let t = transport(&[("a", &a), ("b", &b)]);
    let mut follower = t.follow(Start::Number(1)).poll_every(Duration::from_millis(10));
    for _ in 1..=8 {
        next(&mut follower).await.unwrap();
    }
    {
        let mut chain = chain.lock().unwrap();
        chain.reorg(3);
        chain.extend(9);
    }
    let ChainEvent::Reorg { depth, .. } = next(&mut follower).await.unwrap() else { panic!("a reorg") };
    assert_eq!(depth, 3);
    for number in 6..=9 {
        let ChainEvent::Block { block, .. } = next(&mut follower).await.unwrap() else {
            panic!("block {number}")
        };
        assert_eq!((block.number, Some(block.hash)), (number, chain.lock().unwrap().hash_of(number)));
    }
    assert_eq!(follower.stats().reorgs, 1);
}

/// A loopback WebSocket provider of `newHeads` notifications: its first connection is closed
/// right after the subscription (a lost subscription), the next one is sent a notification
/// each time `announce` is notified.
#[cfg(feature = "ws")]
async fn new_heads(announce: Arc<tokio::sync::Notify>) -> (url::Url, Arc<std::sync::atomic::AtomicUsize>) {
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = url::Url::parse(&format!("ws://{}", listener.local_addr().unwrap())).unwrap();
    let connections = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = connections.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let first = count.fetch_add(1, Ordering::SeqCst) == 0;
            let announce = announce.clone();
            tokio::spawn(async move {
                let mut ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
                let Some(Ok(Message::Text(subscribe))) = ws.next().await else { return };
                assert!(subscribe.contains("newHeads"), "{subscribe}");
                let _ = ws.send(Message::text(r#"{"jsonrpc":"2.0","id":1,"result":"0x1"}"#)).await;
                if first {
                    let _ = ws.close(None).await;
                    return;
                }
                loop {
                    announce.notified().await;
                    let note = r#"{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"0x1","result":{}}}"#;
                    if ws.send(Message::text(note)).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (url, connections)
}

#[cfg(feature = "ws")]
#[tokio::test]
async fn a_new_head_announced_over_websocket_is_followed_at_once_and_a_lost_subscription_is_made_again() {
    let chain = Chain::with(3);
    let p = provider(chain.clone(), Arc::default()).await;
    let t = transport(&[("p", &p)]);
    let announce = Arc::new(tokio::sync::Notify::new());
    let (url, connections) = new_heads(announce.clone()).await;
    // Polling alone would wait an hour.
    let mut follower =
        t.follow(Start::Number(1)).poll_every(Duration::from_secs(3600)).wake_on_new_heads([url]);
    for _ in 1..=3 {
        next(&mut follower).await.unwrap();
    }
    let fourth = tokio::spawn(async move {
        let event = next(&mut follower).await.unwrap();
        (event, follower)
    });
    // The first subscription is closed by the provider; once the second one is up, a block.
    while connections.load(Ordering::SeqCst) < 2 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    chain.lock().unwrap().extend(4);
    let (event, follower) = loop {
        announce.notify_waiters();
        tokio::time::sleep(Duration::from_millis(20)).await;
        if fourth.is_finished() {
            break fourth.await.unwrap();
        }
    };
    assert!(matches!(event, ChainEvent::Block { block, .. } if block.number == 4), "{event:?}");
    assert!(follower.stats().woken >= 1);
}

#[tokio::test]
async fn a_reorg_shown_by_the_one_provider_still_answering_is_believed_after_three_tries() {
    let chain = Chain::with(6);
    let down = Arc::new(AtomicBool::new(false));
    let a = provider(chain.clone(), Arc::default()).await;
    let b = provider(chain.clone(), down.clone()).await;
    let t = transport(&[("a", &a), ("b", &b)]);
    let mut follower = t.follow(Start::Number(1)).poll_every(Duration::from_millis(10));
    for _ in 1..=6 {
        next(&mut follower).await.unwrap();
    }
    down.store(true, Ordering::SeqCst);
    {
        let mut chain = chain.lock().unwrap();
        chain.reorg(2);
        chain.extend(7);
    }
    let ChainEvent::Reorg { depth, .. } = next(&mut follower).await.unwrap() else { panic!("a reorg") };
    assert_eq!(depth, 2);
    let five = next(&mut follower).await.unwrap();
    assert!(
        matches!(&five, ChainEvent::Block { block, .. } if Some(block.hash) == chain.lock().unwrap().hash_of(5)),
        "{five:?}"
    );
}

#[tokio::test]
async fn a_follower_as_a_stream_yields_its_events_and_ends_after_an_error() {
    use futures::StreamExt;

    let chain = Chain::with(4);
    let p = provider(chain.clone(), Arc::default()).await;
    let t = transport(&[("p", &p)]);
    let stream = t.follow(Start::Number(1)).depth(2).poll_every(Duration::from_millis(10)).into_stream();
    let mut stream = Box::pin(stream);
    let mut numbers = Vec::new();
    for _ in 1..=4 {
        let event = tokio::time::timeout(Duration::from_secs(5), stream.next()).await.unwrap();
        if let Some(Ok(ChainEvent::Block { block, .. })) = event {
            numbers.push(block.number);
        }
    }
    assert_eq!(numbers, [1, 2, 3, 4]);
    chain.lock().unwrap().reorg(3);
    let err = tokio::time::timeout(Duration::from_secs(5), stream.next()).await.unwrap();
    let Some(Err(err)) = err else { panic!("an error: {err:?}") };
    assert_eq!(restart_from(&err), Some(3), "{err}");
    assert!(stream.next().await.is_none(), "the stream ends after its error");
}

#[tokio::test]
async fn a_follower_started_at_the_hash_of_a_replaced_block_says_it_is_not_on_the_chain() {
    let chain = Chain::with(6);
    let p = provider(chain.clone(), Arc::default()).await;
    let t = transport(&[("p", &p)]);
    let old_five = chain.lock().unwrap().hash_of(5).unwrap();
    chain.lock().unwrap().reorg(2);
    let err = t.follow(Start::Hash(old_five)).next().await;
    let Err(err) = err else { panic!("a start error: {err:?}") };
    assert!(Failure::find(&err).is_some_and(|f| f.is_start_unknown()), "{err}");
    assert!(err.to_string().contains("not on the chain"), "{err}");
}

#[tokio::test]
async fn a_follower_started_after_a_block_yields_the_next_one_or_says_where_to_restart_when_it_was_replaced()
{
    let chain = Chain::with(8);
    let p = provider(chain.clone(), Arc::default()).await;
    let t = transport(&[("p", &p)]);
    let five = BlockRef::new(5, chain.lock().unwrap().hash_of(5).unwrap());
    let mut after = t.follow(Start::After(five)).poll_every(Duration::from_millis(10));
    let ChainEvent::Block { block, .. } = next(&mut after).await.unwrap() else { panic!("a block") };
    assert_eq!((block.number, block.parent_hash), (6, five.hash), "the next block, chained on from it");

    chain.lock().unwrap().reorg(4);
    let err = t.follow(Start::After(five)).next().await;
    let Err(err) = err else { panic!("an error: {err:?}") };
    assert_eq!(restart_from(&err), Some(5), "{err}");
}

#[cfg(feature = "ws")]
#[test]
fn a_followers_debug_shows_no_websocket_url_or_its_key() {
    let t = FailoverTransport::new([Endpoint::new("p", "http://127.0.0.1:1/")]).unwrap();
    let url = url::Url::parse("wss://user:pass@ws.example/v3/SECRETKEY?apikey=QUERYKEY").unwrap();
    let follower = t.follow(Start::Head).wake_on_new_heads([url]);
    let shown = format!("{follower:?}");
    for secret in ["SECRETKEY", "QUERYKEY", "pass", "ws.example"] {
        assert!(!shown.contains(secret), "{secret} in {shown}");
    }
}

/// A provider serving `chain` whose logs name another block than the one asked for.
async fn lying_logs(chain: Arc<Mutex<Chain>>) -> Server {
    Server::start(Arc::new(move |req: &Received| {
        let chain = chain.lock().unwrap();
        let lie = |call: &Value| {
            let mut answer = one(&chain, call);
            if call["method"] == "eth_getLogs" {
                for log in answer["result"].as_array_mut().into_iter().flatten() {
                    log["blockHash"] = json!(B256::repeat_byte(0xab));
                }
            }
            answer
        };
        let answer = match req.json() {
            Value::Array(calls) => Value::Array(calls.iter().map(lie).collect()),
            call => lie(&call),
        };
        Action::Reply(Reply::new(200).json(answer.to_string()))
    }))
    .await
}

#[tokio::test]
async fn logs_that_name_another_block_are_never_yielded_and_their_provider_is_avoided() {
    let chain = Chain::with(6);
    let liar = lying_logs(chain.clone()).await;
    let honest = provider(chain.clone(), Arc::default()).await;
    let t = transport(&[("liar", &liar), ("honest", &honest)]);
    let mut follower = t.follow(Start::Number(1)).logs(filter()).poll_every(Duration::from_millis(10));
    let events = until_block(&mut follower, 6).await;
    assert_eq!(blocks(&events), (1..=6).collect::<Vec<_>>());
    for event in &events {
        if let ChainEvent::Logs { block, logs, served_by } = event {
            assert_eq!(logs.len(), 1);
            assert_eq!(logs[0].block_hash, Some(block.hash), "block {}'s own log", block.number);
            assert_eq!(served_by.as_ref().map(|id| id.as_str()), Some("honest"));
        }
    }
    assert!(follower.stats().off_chain >= 1);
}

#[tokio::test]
async fn a_reorg_two_providers_show_is_followed_while_the_first_provider_moves_onto_another_chain() {
    let chain = Chain::with(8);
    let switched = Arc::new(AtomicBool::new(false));
    let wrong = switching(chain.clone(), other_chain(40), switched.clone()).await;
    let a = provider(chain.clone(), Arc::default()).await;
    let b = provider(chain.clone(), Arc::default()).await;
    let t = transport(&[("wrong", &wrong), ("a", &a), ("b", &b)]);
    let mut follower = t.follow(Start::Number(1)).poll_every(Duration::from_millis(10));
    for _ in 1..=8 {
        next(&mut follower).await.unwrap();
    }
    switched.store(true, Ordering::SeqCst);
    {
        let mut chain = chain.lock().unwrap();
        chain.reorg(3);
        chain.extend(9);
    }
    let ChainEvent::Reorg { depth, served_by, .. } = next(&mut follower).await.unwrap() else {
        panic!("a reorg, not an error")
    };
    assert_eq!(depth, 3);
    assert_ne!(served_by.map(|id| id.to_string()).as_deref(), Some("wrong"));
    for number in 6..=9 {
        let ChainEvent::Block { block, .. } = next(&mut follower).await.unwrap() else {
            panic!("block {number}")
        };
        assert_eq!((block.number, Some(block.hash)), (number, chain.lock().unwrap().hash_of(number)));
    }
    assert!(follower.stats().off_chain >= 1, "the provider on another chain was put off it");
}

#[tokio::test]
async fn a_follower_on_a_provider_refusing_batches_follows_new_blocks_once_caught_up() {
    let chain = Chain::with(5);
    let refusing = provider_with(chain.clone(), Arc::default(), Arc::new(AtomicBool::new(true))).await;
    let t = transport(&[("refusing", &refusing)]);
    let mut follower = t.follow(Start::Number(1)).logs(filter()).poll_every(Duration::from_millis(10));
    assert_eq!(blocks(&until_block(&mut follower, 5).await), (1..=5).collect::<Vec<_>>());
    chain.lock().unwrap().extend(7);
    assert_eq!(blocks(&until_block(&mut follower, 7).await), [6, 7], "its head read alone");
    chain.lock().unwrap().reorg(1);
    let ChainEvent::Reorg { depth, .. } = next(&mut follower).await.unwrap() else { panic!("a reorg") };
    assert_eq!(depth, 1, "its last block re-checked alone");
}

#[tokio::test]
async fn an_idle_poll_reads_the_head_and_the_last_block_in_one_request() {
    let chain = Chain::with(3);
    let p = provider(chain.clone(), Arc::default()).await;
    let t = transport(&[("p", &p)]);
    let mut follower = t.follow(Start::Number(1)).poll_every(Duration::from_millis(10));
    for _ in 1..=3 {
        next(&mut follower).await.unwrap();
    }
    drop(p.take_log());
    let idle = tokio::time::timeout(Duration::from_millis(200), follower.next()).await;
    assert!(idle.is_err(), "nothing new");
    let polls = p.take_log();
    assert!(polls.len() >= 2, "it polled");
    for poll in &polls {
        let methods: Vec<String> = match poll.json() {
            Value::Array(calls) => {
                calls.iter().map(|c| c["method"].as_str().unwrap_or_default().to_owned()).collect()
            }
            call => vec![call["method"].as_str().unwrap_or_default().to_owned()],
        };
        assert_eq!(methods, ["eth_blockNumber", "eth_getBlockByNumber"], "one request per poll");
    }
}

#[tokio::test]
async fn two_providers_moving_onto_the_same_other_chain_are_not_a_reorg_while_a_third_keeps_the_chain() {
    let chain = Chain::with(6);
    let other = other_chain(40);
    let switched = Arc::new(AtomicBool::new(false));
    let a = switching(chain.clone(), other.clone(), switched.clone()).await;
    let b = switching(chain.clone(), other.clone(), switched.clone()).await;
    let c = provider(chain.clone(), Arc::default()).await;
    let t = transport(&[("a", &a), ("b", &b), ("c", &c)]);
    let mut follower = t.follow(Start::Number(1)).poll_every(Duration::from_millis(10));
    for _ in 1..=6 {
        next(&mut follower).await.unwrap();
    }
    switched.store(true, Ordering::SeqCst);
    chain.lock().unwrap().extend(10);
    for number in 7..=10 {
        match next(&mut follower).await {
            Ok(ChainEvent::Block { block, served_by }) => {
                assert_eq!((block.number, Some(block.hash)), (number, chain.lock().unwrap().hash_of(number)));
                assert_eq!(served_by.map(|id| id.to_string()).as_deref(), Some("c"));
            }
            other => panic!("block {number} of the chain, not {other:?}"),
        }
    }
    assert!(follower.stats().off_chain >= 2, "both put off the chain: {:?}", follower.stats());
    assert_eq!(follower.stats().reorgs, 0);
}

#[tokio::test]
async fn the_first_block_shown_by_the_one_provider_answering_is_taken_only_after_three_tries() {
    let chain = Chain::with(3);
    let a = provider(chain.clone(), Arc::default()).await;
    let b = provider(chain.clone(), Arc::new(AtomicBool::new(true))).await;
    let t = transport(&[("a", &a), ("b", &b)]);
    let mut follower = t.follow(Start::Number(1)).poll_every(Duration::from_millis(10));
    let ChainEvent::Block { block, .. } = next(&mut follower).await.unwrap() else { panic!("a block") };
    assert_eq!(block.number, 1);
    assert!(b.requests() >= 3, "the other provider was asked three times: {}", b.requests());
}

#[tokio::test]
async fn a_follower_given_its_chain_id_does_not_start_on_two_providers_agreeing_on_another_chain() {
    let chain = Chain::with(4);
    let other = other_chain(4);
    let on_other = Arc::new(AtomicBool::new(true));
    let a = switching(chain.clone(), other.clone(), on_other.clone()).await;
    let b = switching(chain.clone(), other.clone(), on_other.clone()).await;
    let c = provider(chain.clone(), Arc::default()).await;
    let t = transport(&[("a", &a), ("b", &b), ("c", &c)]);
    let mut follower = t.follow(Start::Number(1)).chain_id(1).poll_every(Duration::from_millis(10));
    for number in 1..=4 {
        let ChainEvent::Block { block, served_by } = next(&mut follower).await.unwrap() else {
            panic!("blocks only")
        };
        assert_eq!((block.number, Some(block.hash)), (number, chain.lock().unwrap().hash_of(number)));
        assert_eq!(served_by.map(|id| id.to_string()).as_deref(), Some("c"));
    }
    assert!(follower.stats().off_chain >= 1);
}

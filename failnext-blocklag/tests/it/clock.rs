//! Heads judged by the clock: a head's age from its block's timestamp (stale even when no peer
//! is ahead), implausible heads that never set the reference (`Reference::Plausible`, the
//! default), a stalled chain, and the chain id verified at every check. Paused time, loopback
//! providers on the test's runtime that serve the head block with its timestamp.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use failnext_blocklag::{Monitor, Reference};
use failnext_loopback::{Action, Handler, Received, Server};

use crate::support::*;

/// A provider's head: number and timestamp (Unix seconds), and its chain.
#[derive(Clone, Copy)]
struct Head {
    number: u64,
    timestamp: u64,
    chain: u64,
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// A provider at block `number`, stamped now, on chain 1.
fn current(number: u64) -> Head {
    Head { number, timestamp: unix_now(), chain: 1 }
}

/// A loopback provider serving `head`: the block for `eth_getBlockByNumber`, the chain for
/// `eth_chainId` (each call of a batch answered in order).
async fn provider(head: &Arc<Mutex<Head>>) -> Server {
    let head = Arc::clone(head);
    Server::start(Arc::new(move |req: &Received| {
        let h = *head.lock().unwrap();
        let answer = |call: &serde_json::Value| {
            let result = match call["method"].as_str() {
                Some("eth_chainId") => serde_json::json!(format!("{:#x}", h.chain)),
                Some("eth_getBlockByNumber") => serde_json::json!({
                    "number": format!("{:#x}", h.number),
                    "hash": format!("0x{:064x}", h.number),
                    "timestamp": format!("{:#x}", h.timestamp),
                }),
                _ => serde_json::json!(format!("{:#x}", h.number)),
            };
            serde_json::json!({"jsonrpc": "2.0", "id": call["id"], "result": result})
        };
        let body = match req.json() {
            serde_json::Value::Array(calls) => serde_json::Value::Array(calls.iter().map(answer).collect()),
            call => answer(&call),
        };
        Action::Reply(failnext_loopback::Reply::new(200).json(body.to_string()).closing())
    }) as Handler)
    .await
}

struct Providers {
    heads: Vec<Arc<Mutex<Head>>>,
    _servers: Vec<Server>,
    urls: Vec<String>,
}

impl Providers {
    async fn start(heads: &[Head]) -> Providers {
        let heads: Vec<_> = heads.iter().map(|h| Arc::new(Mutex::new(*h))).collect();
        let mut servers = Vec::new();
        for head in &heads {
            servers.push(provider(head).await);
        }
        let urls = servers.iter().map(|s| s.url("/rpc")).collect();
        Providers { heads, _servers: servers, urls }
    }

    fn set(&self, i: usize, head: Head) {
        *self.heads[i].lock().unwrap() = head;
    }

    /// A monitor of these providers reading the head block (`head_with_hash`), ids `p0`, `p1`, ...
    fn monitor(&self) -> failnext_blocklag::MonitorBuilder {
        let ids = ["p0", "p1", "p2", "p3"];
        let client = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
        monitor(ids.into_iter().zip(self.urls.iter().cloned())).client(client).head_with_hash()
    }
}

fn eligible(monitor: &Monitor) -> Vec<bool> {
    monitor.endpoints().iter().map(|e| monitor.eligible(e.id())).collect()
}

#[tokio::test(start_paused = true)]
async fn a_thousand_blocks_ahead_with_a_current_timestamp_evicts_no_one_else_and_is_itself_ineligible() {
    let providers = Providers::start(&[current(100), current(99), current(1_100)]).await;
    let monitor = providers.monitor().max_lag(2).build().unwrap();
    monitor.check().await.unwrap();
    let snapshot = monitor.snapshot().unwrap();
    assert_eq!(snapshot.highest(), 100, "the liar does not set the reference");
    assert_eq!(eligible(&monitor), [true, true, false]);
    assert!(snapshot.entry("p2").unwrap().is_implausible());
    assert!(!snapshot.entry("p0").unwrap().is_implausible());
}

#[tokio::test(start_paused = true)]
async fn without_timestamps_the_plausible_reference_is_the_highest_exactly() {
    // The default eth_blockNumber probe reads no timestamp: the 0.1 rule.
    let providers = Providers::start(&[current(100), current(1_100)]).await;
    let client = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let plain = monitor(["p0", "p1"].into_iter().zip(providers.urls.iter().cloned()))
        .client(client)
        .max_lag(2)
        .reference(Reference::Plausible)
        .build()
        .unwrap();
    plain.check().await.unwrap();
    assert_eq!(plain.snapshot().unwrap().highest(), 1_100);
    assert_eq!(eligible(&plain), [false, true]);
}

#[tokio::test(start_paused = true)]
async fn a_head_stamped_far_in_the_future_is_implausible() {
    let ahead = Head { timestamp: unix_now() + 60, ..current(101) };
    let providers = Providers::start(&[current(100), ahead]).await;
    let monitor = providers.monitor().max_lag(2).build().unwrap();
    monitor.check().await.unwrap();
    assert_eq!(eligible(&monitor), [true, false]);
    assert!(monitor.snapshot().unwrap().entry("p1").unwrap().is_implausible());
}

#[tokio::test(start_paused = true)]
async fn a_lone_provider_whose_head_stops_is_stale_after_max_head_age() {
    let providers = Providers::start(&[current(100)]).await;
    let monitor = providers.monitor().max_head_age(Duration::from_secs(30)).build().unwrap();
    monitor.check().await.unwrap();
    assert_eq!(eligible(&monitor), [true]);
    tokio::time::advance(Duration::from_secs(29)).await;
    monitor.check().await.unwrap();
    assert_eq!(eligible(&monitor), [true], "29 s old: not yet");
    tokio::time::advance(Duration::from_secs(2)).await;
    monitor.check().await.unwrap();
    let snapshot = monitor.snapshot().unwrap();
    let entry = snapshot.entry("p0").unwrap();
    assert!(entry.is_stale() && !entry.is_eligible());
    assert!(entry.head_age().unwrap() >= Duration::from_secs(31));
    // Its next block makes it current again.
    providers.set(0, current(101));
    monitor.check().await.unwrap();
    assert_eq!(eligible(&monitor), [true]);
}

#[tokio::test(start_paused = true)]
async fn a_head_already_old_when_first_seen_is_stale_at_once() {
    let old = Head { timestamp: unix_now() - 120, ..current(100) };
    let providers = Providers::start(&[old, current(100)]).await;
    let monitor = providers.monitor().max_head_age(Duration::from_secs(30)).build().unwrap();
    monitor.check().await.unwrap();
    assert_eq!(eligible(&monitor), [false, true]);
}

#[tokio::test(start_paused = true)]
async fn all_providers_stalled_are_reported_as_a_stalled_chain() {
    let providers = Providers::start(&[current(100), current(100)]).await;
    let monitor = providers.monitor().max_head_age(Duration::from_secs(30)).build().unwrap();
    monitor.check().await.unwrap();
    assert!(!monitor.snapshot().unwrap().chain_stalled());
    tokio::time::advance(Duration::from_secs(31)).await;
    monitor.check().await.unwrap();
    let snapshot = monitor.snapshot().unwrap();
    assert!(snapshot.chain_stalled() && snapshot.stalled());
    assert!(snapshot.entries().iter().all(|e| e.is_stale()));
}

#[tokio::test(start_paused = true)]
async fn the_default_head_age_follows_the_learned_block_time() {
    // Blocks of 12 s: the default is 60 s (five block times). The wall clock stands still
    // under paused time: the blocks are stamped so that the last one is current.
    let base = unix_now() - 36;
    let first = Head { timestamp: base, ..current(100) };
    let providers = Providers::start(&[first, first]).await;
    let monitor = providers.monitor().build().unwrap();
    monitor.check().await.unwrap();
    for n in 101..=103 {
        tokio::time::advance(Duration::from_secs(12)).await;
        let head = Head { timestamp: base + (n - 100) * 12, ..current(n) };
        providers.set(0, head);
        providers.set(1, head);
        monitor.check().await.unwrap();
    }
    assert_eq!(monitor.snapshot().unwrap().block_time(), Some(Duration::from_secs(12)));
    // Two seconds short of the limit, and three past it: the stamps are whole seconds of a
    // wall clock that keeps running while the test does (a busy machine took it past 60 s).
    tokio::time::advance(Duration::from_secs(58)).await;
    monitor.check().await.unwrap();
    assert_eq!(eligible(&monitor), [true, true]);
    tokio::time::advance(Duration::from_secs(5)).await;
    monitor.check().await.unwrap();
    assert_eq!(eligible(&monitor), [false, false], "{:#?}", monitor.snapshot());
    assert!(monitor.snapshot().unwrap().chain_stalled());
}

#[tokio::test(start_paused = true)]
async fn the_chain_id_is_verified_at_every_check() {
    let providers = Providers::start(&[current(100), current(100)]).await;
    let monitor = providers.monitor().expected_chain_id(1).build().unwrap();
    monitor.check().await.unwrap();
    assert_eq!(eligible(&monitor), [true, true]);
    // Restarted on another chain between two checks, at the same height.
    providers.set(1, Head { chain: 5, ..current(100) });
    monitor.check().await.unwrap_err();
    assert_eq!(eligible(&monitor), [true, false]);
    // As failnext's health source: on another chain, it serves nothing, not even a reserve.
    use failnext::HealthSource;
    assert!(monitor.never(&"p1".into()) && !monitor.never(&"p0".into()));
}

#[tokio::test(start_paused = true)]
async fn stale_and_implausible_heads_are_told_as_events_once() {
    let providers = Providers::start(&[current(100), current(100), current(1_100)]).await;
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let monitor = providers
        .monitor()
        .max_head_age(Duration::from_secs(30))
        .on_event(move |e| seen.lock().unwrap().push(e.clone()))
        .build()
        .unwrap();
    monitor.check().await.unwrap();
    monitor.check().await.unwrap();
    let implausible: Vec<_> = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, failnext_blocklag::MonitorEvent::HeadImplausible { .. }))
        .cloned()
        .collect();
    assert_eq!(
        implausible,
        [failnext_blocklag::MonitorEvent::HeadImplausible { endpoint: "p2".into(), head: 1_100 }],
        "once, by the check that saw it"
    );
    tokio::time::advance(Duration::from_secs(31)).await;
    providers.set(1, current(101));
    monitor.check().await.unwrap();
    let stale: Vec<_> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            failnext_blocklag::MonitorEvent::HeadStale { endpoint, head, .. } => {
                Some((endpoint.to_string(), *head))
            }
            _ => None,
        })
        .collect();
    assert_eq!(stale, [("p0".to_owned(), 100)]);
}

#[tokio::test(start_paused = true)]
async fn a_provider_switching_chains_serves_no_read_after_its_first_wrong_answer_and_one_probe() {
    use failnext::RequestBuilderExt;
    let providers = Providers::start(&[current(100), current(100)]).await;
    let ids = ["p0", "p1"];
    let client = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let endpoints: Vec<failnext::Endpoint> =
        ids.iter().zip(&providers.urls).map(|(id, url)| failnext::Endpoint::new(*id, url.clone())).collect();
    let monitor = Monitor::builder(endpoints.clone()).client(client).expected_chain_id(1).build().unwrap();
    let handle = monitor.spawn(Duration::from_secs(10));
    tokio::time::sleep(Duration::from_millis(50)).await;
    let failover =
        failnext::Failover::builder(endpoints).no_attempt_timeout().monitor(monitor.clone()).build().unwrap();
    let http = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let reads = reqwest_middleware::ClientBuilder::new(http).with(failover).build();
    let read = || async {
        let body = r#"{"jsonrpc":"2.0","id":7,"method":"eth_getBalance","params":["0x0","latest"]}"#;
        let resp = reads.post("http://127.0.0.1:9/").body(body).allow_failover().send().await.unwrap();
        resp.extensions().get::<failnext::ServedBy>().unwrap().0.to_string()
    };
    assert_eq!(read().await, "p0");
    // p0 restarts on another chain: its first answer cannot be told from a good one...
    providers.set(0, Head { chain: 5, ..current(100) });
    assert_eq!(read().await, "p0", "the first wrong answer");
    // ... until its next probe, which the schedule runs (here: check_now, as a contradiction would).
    failnext::HealthSource::check_now(&monitor, &"p0".into());
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!monitor.eligible("p0"));
    // From then on no read reaches it, not even as failnext's reserve: it is on another chain.
    assert!(failnext::HealthSource::never(&monitor, &"p0".into()));
    for _ in 0..5 {
        assert_eq!(read().await, "p1");
    }
    handle.stop().await;
}

//! A fleet on a real `redis-server` (feature `redis`): one quota per provider shared by
//! several failovers (each with its own Redis connection, as separate processes have), a
//! cooldown one of them sees cooling the provider for all, and Redis going away and coming
//! back costing no request.
//!
//! Each test starts its own `redis-server` (see `failnext_loopback::RedisServer`) and stops it
//! by its handle.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use failnext::fleet::{Fleet, FleetState, Rate};
use failnext::{Endpoint, Event, Failover, RequestBuilderExt};
use failnext_loopback::{Action, Received, RedisServer, Reply, Server};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};

const READ: &str = r#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}"#;

fn redis() -> RedisServer {
    match RedisServer::start() {
        Ok(server) => server,
        Err(e) => panic!("{e}"),
    }
}

async fn answering() -> Server {
    Server::start(Arc::new(|_: &Received| {
        Action::Reply(Reply::new(200).json(r#"{"jsonrpc":"2.0","id":1,"result":"0x10"}"#))
    }))
    .await
}

/// A client over `primary` then `backup` (429 a trigger), sharing `fleet`, its events heard by
/// `hook`.
fn client_hearing(
    fleet: Fleet,
    primary: &Server,
    backup: &Server,
    hook: impl Fn(&Event<'_>) + Send + Sync + 'static,
) -> ClientWithMiddleware {
    let failover = Failover::builder([
        Endpoint::new("primary", primary.url("/")),
        Endpoint::new("backup", backup.url("/")),
    ])
    .fleet(fleet)
    .additional_trigger_status_codes([http::StatusCode::TOO_MANY_REQUESTS])
    .on_event(hook)
    .build()
    .unwrap();
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    ClientBuilder::new(http).with(failover).build()
}

/// A client over `primary` then `backup`, sharing `fleet`; the fleet states it tells.
fn client(
    fleet: Fleet,
    primary: &Server,
    backup: &Server,
) -> (ClientWithMiddleware, Arc<Mutex<Vec<FleetState>>>) {
    let told = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&told);
    let client = client_hearing(fleet, primary, backup, move |event| {
        if let Event::Fleet { state } = event {
            seen.lock().unwrap().push(*state);
        }
    });
    (client, told)
}

/// The `FleetCooldown`s told: endpoint, reason, time left.
type Cooled = Arc<Mutex<Vec<(String, Option<failnext::Class>, Duration)>>>;

/// A client as [`client`] makes it, noting every `FleetCooldown` it is told in `cooled`.
fn noting_cooldowns(
    fleet: Fleet,
    primary: &Server,
    backup: &Server,
    cooled: &Cooled,
) -> ClientWithMiddleware {
    let cooled = Arc::clone(cooled);
    client_hearing(fleet, primary, backup, move |event| {
        if let Event::FleetCooldown { endpoint, reason, left } = event {
            cooled.lock().unwrap().push((endpoint.to_string(), *reason, *left));
        }
    })
}

async fn read(client: &ClientWithMiddleware, url: &str) -> String {
    let sent = client.post(url).header("content-type", "application/json").body(READ).allow_failover().send();
    let response =
        tokio::time::timeout(Duration::from_secs(5), sent).await.expect("answered in 5 s").unwrap();
    assert_eq!(response.status(), 200);
    failnext::ResponseExt::served_by(&response).unwrap().to_string()
}

fn fleet(server: &RedisServer, name: &str) -> Fleet {
    Fleet::connect(&server.url(), name).unwrap().budget("primary", Rate::per_second(1).burst(5))
}

#[tokio::test]
async fn failovers_sharing_a_fleet_send_the_provider_no_more_than_its_budget_together() {
    let mut redis = redis();
    let (primary, backup) = (answering().await, answering().await);
    // Three failovers, each with its own connection: three processes of one fleet.
    let clients: Vec<_> = (0..3).map(|_| client(fleet(&redis, "bots"), &primary, &backup).0).collect();
    let url = primary.url("/");
    let mut served = std::collections::HashMap::<String, usize>::new();
    for round in 0..20 {
        for client in &clients {
            *served.entry(read(client, &url).await).or_default() += 1;
        }
        let _ = round;
    }
    let to_primary = primary.take_log().len();
    assert!((5..=6).contains(&to_primary), "the burst of 5 (one more if a second passed): {to_primary}");
    assert_eq!(served.values().sum::<usize>(), 60, "every read answered");
    assert_eq!(backup.take_log().len(), 60 - to_primary, "the rest served by the backup, none lost");
    redis.stop();
}

#[tokio::test]
async fn another_fleet_name_is_another_budget() {
    let mut redis = redis();
    let (primary, backup) = (answering().await, answering().await);
    let (a, _) = client(fleet(&redis, "team-a"), &primary, &backup);
    let (b, _) = client(fleet(&redis, "team-b"), &primary, &backup);
    for _ in 0..5 {
        assert_eq!(read(&a, &primary.url("/")).await, "primary");
        assert_eq!(read(&b, &primary.url("/")).await, "primary");
    }
    redis.stop();
}

#[tokio::test]
async fn a_retry_after_one_failover_meets_cools_the_provider_for_the_whole_fleet() {
    let mut redis = redis();
    let limited = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&limited);
    let primary = Server::start(Arc::new(move |_: &Received| {
        count.fetch_add(1, Ordering::SeqCst);
        Action::Reply(Reply::new(429).header("retry-after", "5").text("Too Many Requests"))
    }))
    .await;
    let backup = answering().await;
    let roomy = |server: &RedisServer| {
        Fleet::connect(&server.url(), "bots").unwrap().budget("primary", Rate::per_second(100).burst(100))
    };
    let (first, _) = client(roomy(&redis), &primary, &backup);
    let (second, _) = client(roomy(&redis), &primary, &backup);
    assert_eq!(read(&first, &primary.url("/")).await, "backup", "the 429 failed over");
    assert_eq!(limited.load(Ordering::SeqCst), 1);
    for _ in 0..10 {
        assert_eq!(read(&second, &primary.url("/")).await, "backup");
    }
    assert_eq!(limited.load(Ordering::SeqCst), 1, "the second failover never met the 429 itself");
    redis.stop();
}

#[tokio::test]
async fn with_redis_gone_every_read_is_answered_the_fleet_says_so_once_and_rejoins_when_it_is_back() {
    let mut redis = redis();
    let port = redis.port();
    let (primary, backup) = (answering().await, answering().await);
    let roomy =
        Fleet::connect(&redis.url(), "bots").unwrap().budget("primary", Rate::per_second(1000).burst(1000));
    let (client, told) = client(roomy.timeout(Duration::from_millis(50)), &primary, &backup);
    let url = primary.url("/");
    for _ in 0..5 {
        assert_eq!(read(&client, &url).await, "primary");
    }
    redis.stop();
    for _ in 0..20 {
        assert_eq!(read(&client, &url).await, "primary", "admitted by the local budget");
    }
    assert_eq!(told.lock().unwrap().as_slice(), [FleetState::Unavailable], "told once");
    let mut redis = RedisServer::start_on(port).unwrap();
    // Back within a second of Redis's return (reconnections every 250 ms), bounded.
    for _ in 0..60 {
        read(&client, &url).await;
        if told.lock().unwrap().len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(told.lock().unwrap().as_slice(), [FleetState::Unavailable, FleetState::Rejoined]);
    redis.stop();
}

#[test]
fn no_debug_or_error_of_a_fleet_shows_its_redis_url_password_or_name() {
    let fleet = Fleet::connect("redis://:hunter2@10.0.0.7:6379/3", "secret-fleet").unwrap();
    let shown = format!("{fleet:?}");
    for secret in ["hunter2", "10.0.0.7", "secret-fleet"] {
        assert!(!shown.contains(secret), "{shown}");
    }
    let err = Fleet::connect("http://:hunter2@10.0.0.7/", "bots").unwrap_err();
    assert!(!err.to_string().contains("hunter2"), "{err}");
    assert!(Fleet::connect("redis://127.0.0.1", "a:b").is_err(), "a name that blurs the namespace");
}

#[tokio::test]
async fn the_fleets_redis_keys_name_endpoints_by_id_and_never_by_url() {
    let mut redis = redis();
    let (primary, backup) = (answering().await, answering().await);
    let (client, _) = client(fleet(&redis, "bots"), &primary, &backup);
    read(&client, &primary.url("/")).await;
    let keys = redis_keys(redis.port());
    assert!(keys.iter().any(|k| k == "failnext:bots:budget:primary"), "{keys:?}");
    for key in &keys {
        assert!(
            key.starts_with("failnext:bots:") && !key.contains("127.0.0.1") && !key.contains("http"),
            "{key}"
        );
    }
    redis.stop();
}

/// Every key of the server, by a raw `KEYS *`.
fn redis_keys(port: u16) -> Vec<String> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    stream.write_all(b"KEYS *\r\n").unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let mut buf = vec![0u8; 4096];
    let n = stream.read(&mut buf).unwrap();
    String::from_utf8_lossy(&buf[..n])
        .lines()
        .filter(|l| !l.starts_with('*') && !l.starts_with('$'))
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn a_provider_one_failover_finds_failing_is_avoided_by_the_others_within_a_round_trip() {
    let mut redis = redis();
    let failing = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (met, flag) = (Arc::new(AtomicUsize::new(0)), Arc::clone(&failing));
    let count = Arc::clone(&met);
    // No budget for it: only the published cooldown can keep the others away.
    let primary = Server::start(Arc::new(move |_: &Received| {
        if flag.load(Ordering::SeqCst) {
            count.fetch_add(1, Ordering::SeqCst);
            return Action::Reply(Reply::new(429).header("retry-after", "5").text("Too Many Requests"));
        }
        Action::Reply(Reply::new(200).json(r#"{"jsonrpc":"2.0","id":1,"result":"0x10"}"#))
    }))
    .await;
    let backup = answering().await;
    let plain = |server: &RedisServer| Fleet::connect(&server.url(), "bots").unwrap();
    let (first, _) = client(plain(&redis), &primary, &backup);
    let cooled = Arc::new(Mutex::new(Vec::new()));
    let others: Vec<_> =
        (0..3).map(|_| noting_cooldowns(plain(&redis), &primary, &backup, &cooled)).collect();
    let url = primary.url("/");
    for other in &others {
        assert_eq!(read(other, &url).await, "primary", "fit, before");
    }
    failing.store(true, Ordering::SeqCst);
    let started = tokio::time::Instant::now();
    assert_eq!(read(&first, &url).await, "backup", "the first meets the 429 and fails over");
    // Announced: every other failover cools it within a round trip, not at its next refresh
    // (every 100 ms).
    while cooled.lock().unwrap().len() < 3 && started.elapsed() < Duration::from_secs(1) {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let took = started.elapsed();
    assert!(took < Duration::from_millis(50), "every other failover told within {took:?}");
    for other in &others {
        for _ in 0..5 {
            assert_eq!(read(other, &url).await, "backup");
        }
    }
    assert_eq!(met.load(Ordering::SeqCst), 1, "no other failover met the 429 itself");
    let cooled = cooled.lock().unwrap().clone();
    assert_eq!(cooled.len(), 3, "each other failover told it once: {cooled:?}");
    for (endpoint, reason, left) in cooled {
        assert_eq!((endpoint.as_str(), reason), ("primary", Some(failnext::Class::Trigger)), "with why");
        assert!(
            left <= Duration::from_secs(5) && left >= Duration::from_secs(4),
            "{left:?} of the 5 s Retry-After left"
        );
    }
    redis.stop();
}

/// The alloy transport shares what it learns of the providers (feature `alloy`): the logs
/// range limits and the capability lacks.
#[cfg(feature = "alloy")]
mod alloy {
    use super::*;
    use alloy_json_rpc::{Id, Request, RequestPacket};
    use failnext::alloy::FailoverTransport;
    use serde_json::{Value, json};
    use tower_service::Service;

    /// A node answering `eth_getLogs` and `eth_getBlockReceipts` as `answer` says (the other
    /// methods with `"0x5000"`), counting the calls of those two methods it gets.
    async fn node(answer: fn(&Value) -> Value, asked: Arc<AtomicUsize>) -> Server {
        Server::start(Arc::new(move |req: &Received| {
            let call = req.json();
            let result = match call["method"].as_str() {
                Some("eth_getLogs" | "eth_getBlockReceipts") => {
                    asked.fetch_add(1, Ordering::SeqCst);
                    answer(&call)
                }
                _ => json!({"result": "0x5000"}),
            };
            let mut body = json!({"jsonrpc": "2.0", "id": call["id"]});
            body.as_object_mut()
                .into_iter()
                .for_each(|b| b.extend(result.as_object().cloned().unwrap_or_default()));
            Action::Reply(Reply::new(200).json(body.to_string()))
        }))
        .await
    }

    /// Refuses `eth_getLogs` ranges wider than 1 000 blocks, as real providers do.
    fn narrow(call: &Value) -> Value {
        let hex = |v: &Value| {
            u64::from_str_radix(v.as_str().unwrap_or("0x0").trim_start_matches("0x"), 16).unwrap_or(0)
        };
        let filter = &call["params"][0];
        if hex(&filter["toBlock"]) - hex(&filter["fromBlock"]) + 1 > 1000 {
            json!({"error": {"code": -32005, "message": "exceed maximum block range: 1000"}})
        } else {
            json!({"result": []})
        }
    }

    /// Has no `eth_getBlockReceipts`.
    fn lacking(_: &Value) -> Value {
        json!({"error": {"code": -32601, "message": "the method eth_getBlockReceipts does not exist/is not available"}})
    }

    /// Serves everything.
    fn full(_: &Value) -> Value {
        json!({"result": []})
    }

    /// Two transports of one fleet over a node answering `first` and a full one; the calls
    /// of the first node counted.
    async fn pair(
        redis: &RedisServer,
        first: fn(&Value) -> Value,
    ) -> (FailoverTransport, FailoverTransport, Arc<AtomicUsize>, Server, Server) {
        let asked = Arc::new(AtomicUsize::new(0));
        let (a, b) = (node(first, Arc::clone(&asked)).await, node(full, Arc::default()).await);
        let transport = || {
            FailoverTransport::builder([
                Endpoint::new("first", a.url("/")),
                Endpoint::new("full", b.url("/")),
            ])
            .client(reqwest::Client::builder().no_proxy().build().unwrap())
            .fleet(Fleet::connect(&redis.url(), "bots").unwrap())
            .build()
            .unwrap()
        };
        let (one, other) = (transport(), transport());
        (one, other, asked, a, b)
    }

    async fn call(t: &FailoverTransport, method: &'static str, params: Value) {
        let call = Request::new(method, Id::Number(1), params).serialize().unwrap();
        let answer =
            tokio::time::timeout(Duration::from_secs(5), t.clone().call(RequestPacket::Single(call))).await;
        assert!(answer.expect("answered in 5 s").is_ok());
    }

    fn range(from: u64, to: u64) -> Value {
        json!([{"fromBlock": format!("{from:#x}"), "toBlock": format!("{to:#x}")}])
    }

    /// One call: a method and its params.
    type Call = (&'static str, Value);

    /// What the second transport asks of the first node once the first transport learnt from
    /// it: the second makes `warm` (it listens from then on, subscribed a moment later), the
    /// first `learn`, the second `ask`.
    async fn asked_after(first: fn(&Value) -> Value, warm: Call, learn: Call, ask: Call) -> usize {
        let mut redis = redis();
        let (one, other, asked, _a, _b) = pair(&redis, first).await;
        call(&other, warm.0, warm.1).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        asked.store(0, Ordering::SeqCst);
        call(&one, learn.0, learn.1).await;
        assert_eq!(asked.swap(0, Ordering::SeqCst), 1, "the first transport learns it itself");
        tokio::time::sleep(Duration::from_millis(200)).await;
        call(&other, ask.0, ask.1).await;
        redis.stop();
        asked.load(Ordering::SeqCst)
    }

    #[tokio::test]
    async fn a_logs_range_one_transport_learns_a_provider_refuses_is_not_sent_there_by_another() {
        let warm = ("eth_getLogs", range(0, 10));
        let asked =
            asked_after(narrow, warm, ("eth_getLogs", range(0, 4999)), ("eth_getLogs", range(5000, 9999)))
                .await;
        assert_eq!(asked, 0, "the second sends the range straight to the full one");
    }

    #[tokio::test]
    async fn a_method_one_transport_finds_a_provider_lacks_is_not_asked_of_it_by_another() {
        let receipts = ("eth_getBlockReceipts", json!(["latest"]));
        let asked = asked_after(lacking, ("eth_chainId", json!([])), receipts.clone(), receipts).await;
        assert_eq!(asked, 0, "the second asks the full node straight away");
    }
}

#[tokio::test]
async fn a_raised_note_only_goes_up_each_new_value_heard_once_by_the_others_and_none_without_redis() {
    let mut server = redis();
    let (one, other) = (fleet(&server, "bots"), fleet(&server, "bots"));
    let heard = Arc::new(std::sync::Mutex::new(Vec::new()));
    let listening = {
        let heard = Arc::clone(&heard);
        let other = other.clone();
        tokio::spawn(async move {
            other.listen(|name, value| heard.lock().unwrap().push(format!("{name}={value}"))).await;
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let ttl = Duration::from_secs(10);
    let mut raised = Vec::new();
    for value in [20, 20, 19, 21] {
        raised.push(one.raise("head:a", value, ttl).await);
    }
    // The other process raising what it heard tells nobody again.
    raised.push(other.raise("head:a", 21, ttl).await);
    assert_eq!(raised, [Some(true), Some(false), Some(false), Some(true), Some(false)]);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(*heard.lock().unwrap(), ["head:a=20", "head:a=21"], "each new value once");
    assert_eq!(one.read("head:a").await, Some(Some("21".to_owned())));
    listening.abort();
    server.stop();
    assert_eq!(one.raise("head:a", 22, ttl).await, None, "Redis gone: the caller goes on alone");
}

//! One prober per provider per fleet (feature `redis`), on a real `redis-server`: monitors of
//! one fleet probe each provider from one process at a time and all see what it saw, a wrong
//! chain included; a holder that stops is replaced.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use failnext::fleet::Fleet;
use failnext::{Endpoint, EndpointId, HealthSource, Observation};
use failnext_blocklag::Monitor;
use failnext_loopback::{Action, Received, RedisServer, Reply, Server};
use serde_json::{Value, json};

/// A provider at block 16 whose chain id is `chain` (changeable); counts the probes it gets.
async fn provider(chain: Arc<AtomicU64>, probes: Arc<AtomicU64>) -> Server {
    Server::start(Arc::new(move |req: &Received| {
        probes.fetch_add(1, Ordering::Relaxed);
        let chain = chain.load(Ordering::Relaxed);
        let answer = |call: &Value| {
            let result = match call["method"].as_str() {
                Some("eth_chainId") => json!(format!("{chain:#x}")),
                Some("eth_getBlockByNumber") => json!({
                    "number": "0x10",
                    "hash": format!("0x{:064x}", 16),
                    "timestamp": format!("{:#x}", unix_now()),
                }),
                _ => json!("0x10"),
            };
            json!({"jsonrpc": "2.0", "id": call["id"], "result": result})
        };
        let body = match req.json() {
            Value::Array(calls) => Value::Array(calls.iter().map(answer).collect()),
            call => answer(&call),
        };
        Action::Reply(Reply::new(200).json(body.to_string()))
    }))
    .await
}

fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

fn monitor(a: &Server, b: &Server, fleet: Option<Fleet>) -> Monitor {
    let mut builder = Monitor::builder([Endpoint::new("a", a.url("/")), Endpoint::new("b", b.url("/"))])
        .expected_chain_id(1)
        .probe_timeout(Duration::from_millis(500));
    if let Some(fleet) = fleet {
        builder = builder.fleet(fleet);
    }
    builder.build().unwrap()
}

#[tokio::test]
async fn a_fleets_monitors_probe_each_provider_as_often_as_one_and_all_see_a_wrong_chain() {
    let mut redis = RedisServer::start().unwrap();
    let (chain_b, probes_a, probes_b) =
        (Arc::new(AtomicU64::new(1)), Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let a = provider(Arc::new(AtomicU64::new(1)), Arc::clone(&probes_a)).await;
    let b = provider(Arc::clone(&chain_b), Arc::clone(&probes_b)).await;
    let interval = Duration::from_millis(100);

    // One monitor alone, for one second: the probe load of one process.
    let alone = monitor(&a, &b, None);
    let handle = alone.spawn(interval);
    tokio::time::sleep(Duration::from_secs(1)).await;
    drop(handle);
    let one = probes_a.swap(0, Ordering::Relaxed);
    probes_b.store(0, Ordering::Relaxed);

    // Four monitors of one fleet, for one second.
    let monitors: Vec<_> =
        (0..4).map(|_| monitor(&a, &b, Some(Fleet::connect(&redis.url(), "bots").unwrap()))).collect();
    let handles: Vec<_> = monitors.iter().map(|m| m.spawn(interval)).collect();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let four = probes_a.load(Ordering::Relaxed);
    assert!(
        four as f64 <= one as f64 * 1.5 + 2.0,
        "the fleet probes a as one monitor does: {four} vs {one} alone"
    );
    for m in &monitors {
        assert!(m.eligible("a") && m.eligible("b"), "every monitor sees both fit");
    }

    // b moves onto another chain: every monitor sees it within a few intervals.
    chain_b.store(10, Ordering::Relaxed);
    let mut seen = false;
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(25)).await;
        if monitors.iter().all(|m| !m.eligible("b")) {
            seen = true;
            break;
        }
    }
    let views: Vec<_> =
        monitors.iter().map(|m| (m.eligible("b"), m.snapshot().map(|s| format!("{s:?}")))).collect();
    assert!(seen, "every monitor holds b out once its prober saw the wrong chain: {views:#?}");
    assert!(monitors.iter().all(|m| m.eligible("a")));

    // Three of the four stop (the holder of a's lease among them, or not): within a lease
    // (3 s) the one left probes a itself.
    let mut handles = handles;
    let last = handles.pop();
    drop(handles);
    tokio::time::sleep(Duration::from_secs(4)).await;
    probes_a.store(0, Ordering::Relaxed);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = probes_a.load(Ordering::Relaxed);
    assert!(after as f64 >= one as f64 * 0.5, "a is probed again by the monitor left: {after} in 1 s");
    drop(last);
    redis.stop();
}

#[tokio::test]
async fn a_wrong_chain_one_prober_sees_reaches_every_monitor_of_the_fleet_at_once() {
    let mut redis = RedisServer::start().unwrap();
    let chain_b = Arc::new(AtomicU64::new(1));
    let a = provider(Arc::new(AtomicU64::new(1)), Arc::default()).await;
    let b = provider(Arc::clone(&chain_b), Arc::default()).await;
    // Probes every second: without the news pushed, the others would see it at their own
    // next reading of b, up to a second later.
    let monitors: Vec<_> =
        (0..4).map(|_| monitor(&a, &b, Some(Fleet::connect(&redis.url(), "bots").unwrap()))).collect();
    let handles: Vec<_> = monitors.iter().map(|m| m.spawn(Duration::from_secs(1))).collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(monitors.iter().all(|m| m.eligible("b")));
    chain_b.store(10, Ordering::Relaxed);
    let (mut first, mut all) = (None, None);
    let started = tokio::time::Instant::now();
    while all.is_none() && started.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(5)).await;
        let out = monitors.iter().filter(|m| !m.eligible("b")).count();
        if out > 0 && first.is_none() {
            first = Some(started.elapsed());
        }
        if out == monitors.len() {
            all = Some(started.elapsed());
        }
    }
    let (first, all) = (first.expect("the prober saw it"), all.expect("every monitor saw it"));
    assert!(
        all - first <= Duration::from_millis(100),
        "the others within one round trip: {first:?} then {all:?}"
    );
    drop(handles);
    redis.stop();
}

#[tokio::test]
async fn a_head_one_process_saw_in_traffic_is_every_monitors_within_a_round_trip_unless_far_ahead() {
    let mut redis = RedisServer::start().unwrap();
    let a = provider(Arc::new(AtomicU64::new(1)), Arc::default()).await;
    let b = provider(Arc::new(AtomicU64::new(1)), Arc::default()).await;
    // Three monitors of one fleet and one alone, probing every 5 s: between probes, heads
    // come from traffic only.
    let mut monitors: Vec<_> =
        (0..3).map(|_| monitor(&a, &b, Some(Fleet::connect(&redis.url(), "bots").unwrap()))).collect();
    monitors.push(monitor(&a, &b, None));
    let handles: Vec<_> = monitors.iter().map(|m| m.spawn(Duration::from_secs(5))).collect();
    let id = EndpointId::from("a");
    let heads =
        |monitors: &[Monitor]| monitors.iter().map(|m| HealthSource::head_of(m, &id)).collect::<Vec<_>>();
    let started = tokio::time::Instant::now();
    while heads(&monitors).iter().any(|h| *h != Some(16)) && started.elapsed() < Duration::from_secs(3) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(heads(&monitors), vec![Some(16); 4], "every monitor probed a at 16");

    // The first process's reads see a at 20: the fleet's monitors know it within a round trip.
    HealthSource::observe(&monitors[0], &id, Observation::Answered { head: Some(20) });
    let started = tokio::time::Instant::now();
    while heads(&monitors[..3]).iter().any(|h| *h != Some(20)) && started.elapsed() < Duration::from_secs(1) {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let took = started.elapsed();
    assert_eq!(
        heads(&monitors),
        vec![Some(20), Some(20), Some(20), Some(16)],
        "the fleet's, not the lone one's"
    );
    assert!(took <= Duration::from_millis(100), "within one round trip: {took:?}");

    // Another process sees a far ahead (another chain's head, say): its own doubt, not shared.
    HealthSource::observe(&monitors[1], &id, Observation::Answered { head: Some(5_000) });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let others = [HealthSource::head_of(&monitors[0], &id), HealthSource::head_of(&monitors[2], &id)];
    assert_eq!(others, [Some(20), Some(20)], "5 000 stays with the process that saw it");
    drop(handles);
    redis.stop();
}

/// What a raw Redis connection answers to `commands`, pipelined, read until it has been quiet
/// for 200 ms (the test's own view of Redis, not the fleet's client).
fn raw_redis(port: u16, commands: &[Vec<String>]) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut sent = String::new();
    for args in commands {
        sent.push_str(&format!("*{}\r\n", args.len()));
        for arg in args {
            sent.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
        }
    }
    stream.write_all(sent.as_bytes()).unwrap();
    stream.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let (mut out, mut buf) = (Vec::new(), vec![0u8; 1 << 16]);
    while let Ok(n) = stream.read(&mut buf) {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_redis_key_value_announcement_event_or_error_of_a_fleet_shows_a_provider_url_or_key() {
    use failnext::fleet::Rate;
    use failnext::{RequestBuilderExt, ResponseExt};
    const KEY: &str = "S3CRETKEY";
    let mut redis = RedisServer::start().unwrap();
    // Every announcement, heard by a raw subscriber.
    let (heard, stop) = (Arc::new(std::sync::Mutex::new(String::new())), Arc::new(AtomicU64::new(0)));
    let listener = {
        let (heard, stop, port) = (Arc::clone(&heard), Arc::clone(&stop), redis.port());
        std::thread::spawn(move || {
            use std::io::{Read, Write};
            let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
            let channel = "failnext:bots:notes";
            let subscribe = format!("*2\r\n$9\r\nSUBSCRIBE\r\n${}\r\n{channel}\r\n", channel.len());
            stream.write_all(subscribe.as_bytes()).unwrap();
            stream.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
            let mut buf = vec![0u8; 1 << 16];
            while stop.load(Ordering::Relaxed) == 0 {
                if let Ok(n) = stream.read(&mut buf) {
                    heard.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            }
        })
    };
    // A provider limiting every request (429, Retry-After), one refusing connections, one
    // answering; each URL with a key in its path and query.
    let limited = Server::start(Arc::new(|_: &Received| {
        Action::Reply(Reply::new(429).header("retry-after", "1").text("Too Many Requests"))
    }))
    .await;
    let good = provider(Arc::new(AtomicU64::new(1)), Arc::default()).await;
    let keyed = |base: String| format!("{base}v2/{KEY}?apikey={KEY}");
    let endpoints = [
        Endpoint::new("limited", keyed(limited.url("/"))),
        Endpoint::new("down", keyed(failnext_loopback::refused_url("/"))),
        Endpoint::new("good", keyed(good.url("/"))),
    ];
    let fleet = || Fleet::connect(&redis.url(), "bots").unwrap();
    let told = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let (monitors, mut clients) = (Vec::new(), Vec::new());
    let mut monitors = monitors;
    for _ in 0..2 {
        let monitor = Monitor::builder(endpoints.clone())
            .expected_chain_id(1)
            .probe_timeout(Duration::from_millis(300))
            .fleet(fleet())
            .build()
            .unwrap();
        let seen = Arc::clone(&told);
        let failover = failnext::Failover::builder(endpoints.clone())
            .additional_trigger_status_codes([http::StatusCode::TOO_MANY_REQUESTS])
            .fleet(fleet().budget("limited", Rate::per_second(50).burst(5)))
            .monitor(monitor.clone())
            .classifier(failnext::jsonrpc::JsonRpcClassifier::default())
            .on_event(move |event| seen.lock().unwrap().push(format!("{event:?}")))
            .build()
            .unwrap();
        clients.push(reqwest_middleware::ClientBuilder::new(reqwest::Client::new()).with(failover).build());
        monitors.push((monitor.spawn(Duration::from_millis(100)), monitor));
    }
    let mut errors = Vec::new();
    for i in 0..40 {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}"#;
        let sent = clients[i % 2].post(keyed(limited.url("/"))).header("content-type", "application/json");
        match sent.body(body).allow_failover().send().await {
            Ok(response) => assert_eq!(response.served_by().map(EndpointId::as_str), Some("good")),
            Err(e) => errors.push(format!("{e} {e:?}")),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;

    let listing = raw_redis(redis.port(), &[vec!["KEYS".into(), "*".into()]]);
    let keys: Vec<String> =
        listing.lines().filter(|l| !l.starts_with('*') && !l.starts_with('$')).map(str::to_owned).collect();
    let reads: Vec<Vec<String>> = keys
        .iter()
        .flat_map(|k| {
            [
                vec!["GET".to_owned(), k.clone()],
                vec!["ZRANGE".to_owned(), k.clone(), "0".to_owned(), "-1".to_owned()],
                vec!["HGETALL".to_owned(), k.clone()],
            ]
        })
        .collect();
    let values = raw_redis(redis.port(), &reads);
    stop.store(1, Ordering::Relaxed);
    listener.join().unwrap();
    let heard = heard.lock().unwrap().clone();
    let told = told.lock().unwrap().join("\n");
    for key in [
        "failnext:bots:cool:limited",
        "failnext:bots:note:blocklag:probe:down",
        "failnext:bots:note:blocklag:head:good",
    ] {
        assert!(keys.iter().any(|k| k == key), "{key} written: {keys:?}");
    }
    assert!(values.contains("could not connect"), "the refused provider's probe note: {values}");
    assert!(heard.contains("blocklag:probe:down"), "announced: {heard}");
    // What is in Redis names providers by id only: no key, no URL, no host. Events and errors
    // name the endpoint by id too, and may show the address a connection was refused at
    // (hyper's connect error), never a URL or its key.
    for (what, text) in [("keys", keys.join("\n")), ("values", values), ("announcements", heard)] {
        for secret in [KEY, "127.0.0.1", "http://"] {
            assert!(!text.contains(secret), "{what} show {secret:?}:\n{text}");
        }
    }
    for (what, text) in [("events", told), ("errors", errors.join("\n"))] {
        for secret in [KEY, "http://", "/v2/"] {
            assert!(!text.contains(secret), "{what} show {secret:?}:\n{text}");
        }
    }
    drop(monitors);
    redis.stop();
}

#[tokio::test]
async fn a_process_whose_traffic_shows_a_provider_far_ahead_probes_it_itself_though_another_holds_its_lease()
{
    let mut redis = RedisServer::start().unwrap();
    let (chain_b, probes_b) = (Arc::new(AtomicU64::new(1)), Arc::new(AtomicU64::new(0)));
    let a = provider(Arc::new(AtomicU64::new(1)), Arc::default()).await;
    let b = provider(Arc::clone(&chain_b), Arc::clone(&probes_b)).await;
    // The first monitor takes every lease and keeps it (probing every 2 s, a lease lasting
    // 3 s); the others start after it.
    let monitors: Vec<_> =
        (0..4).map(|_| monitor(&a, &b, Some(Fleet::connect(&redis.url(), "bots").unwrap()))).collect();
    let mut handles = vec![monitors[0].spawn(Duration::from_secs(2))];
    tokio::time::sleep(Duration::from_millis(300)).await;
    handles.extend(monitors[1..].iter().map(|m| m.spawn(Duration::from_secs(2))));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(monitors.iter().all(|m| m.eligible("b")));

    // b moves onto another chain, higher up; the last monitor's reads see it far ahead.
    chain_b.store(10, Ordering::Relaxed);
    probes_b.store(0, Ordering::Relaxed);
    let started = tokio::time::Instant::now();
    HealthSource::observe(
        &monitors[3],
        &EndpointId::from("b"),
        Observation::Answered { head: Some(16 + 1_000) },
    );
    while monitors.iter().any(|m| m.eligible("b")) && started.elapsed() < Duration::from_secs(3) {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let took = started.elapsed();
    // Without probing it itself, it would wait for the holder's next probe (up to 2 s later).
    assert!(took < Duration::from_millis(200), "every monitor holds b out {took:?} after");
    assert!(probes_b.load(Ordering::Relaxed) >= 1, "probed by the process that doubted it");
    drop(handles);
    redis.stop();
}

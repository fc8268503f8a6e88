//! Hostile providers: loopback servers on 127.0.0.1 that misbehave below HTTP (the toolkit's
//! hyper server; raw bytes only for a head that never ends), against the blocklag probe and
//! against failnext.
//!
//! - a body that never ends (fast, or trickled a byte at a time),
//! - headers that never end (fast, or trickled),
//! - a 2 GB `Content-Length` followed by a trickle,
//! - a connection reset right after the headers.
//!
//! What must hold: the probe stops at its 4 KiB cap or its `probe_timeout` with the right
//! `ProbeError`; failnext ends every attempt within `attempt_timeout`, failing over to a
//! healthy backup or returning the (retained) response, whose body read is bounded too; and
//! memory stays flat over many such requests.
//!
//! Time is only asserted as generous upper bounds that prove boundedness, and every test runs
//! under an outer deadline so a regression fails instead of hanging.

use std::time::{Duration, Instant};

use failnext::{Endpoint, Failover, RequestBuilderExt, ResponseExt};
use failnext_blocklag::{Monitor, ProbeError};
use failnext_examples::sim::{Behaviour, Chain, Provider};
use failnext_loopback::{Action, End, RawServer, Reply, Script};
use reqwest_middleware::ClientWithMiddleware;

/// Slack added to every deadline: a loaded 2-core CI machine is slow, but not this slow.
const SLACK: Duration = Duration::from_secs(3);
/// failnext's per-attempt deadline in these tests.
const ATTEMPT_TIMEOUT: Duration = Duration::from_millis(300);
/// Outer bound of every test.
const TEST_BOUND: Duration = Duration::from_secs(90);

/// How a hostile provider answers every request, after reading it.
#[derive(Clone, Copy, Debug)]
enum Hostile {
    /// Status line and chunked headers, then `chunk`-byte chunks every `every`, forever.
    EndlessBody { status: u16, chunk: usize, every: Duration },
    /// A status line, then header lines every `every`, forever.
    EndlessHeaders { every: Duration },
    /// `Content-Length: 2147483648`, then `chunk` bytes every `every`, forever.
    HugeLength { status: u16, chunk: usize, every: Duration },
    /// Complete headers announcing 1000 bytes, a short pause, then a TCP reset.
    ResetAfterHeaders { status: u16 },
    /// Headers announcing a small body of 1000 bytes, which then trickles a byte every `every`
    /// (50 s in all at 50 ms).
    SmallTrickle { status: u16, every: Duration },
}

const FAST: Duration = Duration::ZERO;
const TRICKLE: Duration = Duration::from_millis(50);

/// A hostile server (the loopback toolkit's); stops (and drops its connections) when dropped.
enum Server {
    /// hyper: everything that is still HTTP.
    Http(failnext_loopback::Server),
    /// Raw bytes: a head that never ends is not HTTP, hyper cannot write it.
    Raw(RawServer),
}

impl Server {
    async fn start(behaviour: Hostile) -> Server {
        let json = |status: u16| Reply::new(status).content_type("application/json");
        let reply = match behaviour {
            Hostile::EndlessBody { status, chunk, every } => json(status).forever(vec![b' '; chunk], every),
            Hostile::EndlessHeaders { every } => {
                let head = Script::new()
                    .send("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n")
                    .forever(format!("x-hostile: {}\r\n", "h".repeat(64)), every);
                return Server::Raw(RawServer::start(head).await);
            }
            Hostile::HugeLength { status, chunk, every } => {
                json(status).length(2_147_483_648).forever(vec![b' '; chunk], every)
            }
            // Let the client read the headers before the reset discards its receive queue.
            Hostile::ResetAfterHeaders { status } => {
                json(status).length(1000).pause(Duration::from_millis(50)).end(End::Reset)
            }
            // Complete, at last: the client may keep the connection.
            Hostile::SmallTrickle { status, every } => {
                (0..1000).fold(json(status).length(1000), |reply, _| reply.send(" ").pause(every))
            }
        };
        Server::Http(failnext_loopback::Server::always(Action::Reply(reply)).await)
    }

    fn url(&self) -> String {
        match self {
            Server::Http(s) => s.url("/"),
            Server::Raw(s) => s.url("/"),
        }
    }

    fn accepted(&self) -> usize {
        match self {
            Server::Http(s) => s.connections(),
            Server::Raw(s) => s.connections(),
        }
    }

    /// Connections being served now.
    fn open(&self) -> usize {
        match self {
            Server::Http(s) => s.open_connections(),
            Server::Raw(s) => s.open_connections(),
        }
    }
}

/// Runs a test body under the outer bound.
async fn bounded<F: Future<Output = ()>>(body: F) {
    tokio::time::timeout(TEST_BOUND, body).await.expect("test exceeded its outer bound: something hung");
}

// ===== blocklag probe =====

/// The kinds of probe failure hostile providers can cause.
#[derive(Debug, PartialEq, Eq)]
enum Failed {
    Timeout,
    BodyTooLarge,
    Transport,
}

/// One check of a monitor over the single hostile `server`; returns how the probe failed and
/// how long the check took.
async fn probe(server: &Server, probe_timeout: Duration) -> (Failed, Duration) {
    let monitor = Monitor::builder([Endpoint::new("hostile", server.url())])
        .probe_timeout(probe_timeout)
        .build()
        .unwrap();
    let started = Instant::now();
    let err = monitor.check().await.expect_err("a hostile provider cannot pass a probe");
    let took = started.elapsed();
    assert!(!err.published());
    assert!(monitor.snapshot().is_none());
    let failure = err.failures().first().expect("the hostile provider is named");
    assert_eq!(failure.endpoint().as_str(), "hostile");
    let kind = match failure.error() {
        ProbeError::Timeout => Failed::Timeout,
        ProbeError::BodyTooLarge => Failed::BodyTooLarge,
        ProbeError::Transport(e) => {
            assert!(e.url().is_none(), "transport errors carry no URL");
            Failed::Transport
        }
        other => panic!("unexpected probe error {other:?}"),
    };
    (kind, took)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_stops_an_endless_body_at_the_4_kib_cap() {
    bounded(async {
        let server = Server::start(Hostile::EndlessBody { status: 200, chunk: 16 * 1024, every: FAST }).await;
        // A probe timeout far beyond the bound asserted: the cap, not the timeout, ends it.
        let (err, took) = probe(&server, Duration::from_secs(30)).await;
        assert_eq!(err, Failed::BodyTooLarge);
        assert!(took < Duration::from_secs(10), "took {took:?}");
        // Also a body that trickles in small chunks but never ends: still the cap.
        let server =
            Server::start(Hostile::EndlessBody { status: 200, chunk: 256, every: Duration::from_millis(1) })
                .await;
        let (err, took) = probe(&server, Duration::from_secs(30)).await;
        assert_eq!(err, Failed::BodyTooLarge);
        assert!(took < Duration::from_secs(10), "took {took:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_times_out_on_a_slow_trickle_body() {
    bounded(async {
        let timeout = Duration::from_millis(500);
        let server = Server::start(Hostile::EndlessBody { status: 200, chunk: 1, every: TRICKLE }).await;
        let (err, took) = probe(&server, timeout).await;
        assert_eq!(err, Failed::Timeout);
        assert!(took < timeout + SLACK, "took {took:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_is_bounded_by_endless_headers() {
    bounded(async {
        // Fast: hyper refuses a head beyond its limit long before the timeout.
        let server = Server::start(Hostile::EndlessHeaders { every: FAST }).await;
        let (err, took) = probe(&server, Duration::from_secs(30)).await;
        assert_eq!(err, Failed::Transport);
        assert!(took < Duration::from_secs(10), "took {took:?}");
        // Trickled: the probe timeout ends it.
        let timeout = Duration::from_millis(500);
        let server = Server::start(Hostile::EndlessHeaders { every: TRICKLE }).await;
        let (err, took) = probe(&server, timeout).await;
        assert_eq!(err, Failed::Timeout);
        assert!(took < timeout + SLACK, "took {took:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_refuses_a_2_gb_content_length_without_reading_it() {
    bounded(async {
        let server = Server::start(Hostile::HugeLength { status: 200, chunk: 1, every: TRICKLE }).await;
        let (err, took) = probe(&server, Duration::from_secs(30)).await;
        assert_eq!(err, Failed::BodyTooLarge);
        assert!(took < Duration::from_secs(10), "took {took:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_reports_a_reset_after_the_headers_as_transport() {
    bounded(async {
        let server = Server::start(Hostile::ResetAfterHeaders { status: 200 }).await;
        let (err, took) = probe(&server, Duration::from_secs(30)).await;
        assert_eq!(err, Failed::Transport);
        assert!(took < Duration::from_secs(10), "took {took:?}");
    })
    .await;
}

// ===== failnext =====

/// A healthy simulated provider, and one that is down (connection refused).
struct Backups {
    _chain: Chain,
    healthy: Provider,
    down: Provider,
}

async fn backups() -> Backups {
    let chain = Chain::manual(31337);
    let healthy = chain.provider("backup").await.unwrap();
    let down = chain.provider("down").await.unwrap();
    down.set(Behaviour::Down).await.unwrap();
    Backups { _chain: chain, healthy, down }
}

/// A client over `hostile` then `backup`, with a short attempt timeout.
fn failover_client(hostile: &Server, backup: &Provider, attempt_timeout: Duration) -> ClientWithMiddleware {
    let failover = Failover::builder([Endpoint::new("hostile", hostile.url()), backup.endpoint()])
        .attempt_timeout(attempt_timeout)
        .cooldown(failnext::Cooldown::disabled())
        .build()
        .unwrap();
    reqwest_middleware::ClientBuilder::new(reqwest::Client::new()).with(failover).build()
}

const READ: &str = r#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}"#;

async fn read(client: &ClientWithMiddleware, url: &str) -> reqwest_middleware::Result<reqwest::Response> {
    client.post(url).header("content-type", "application/json").body(READ).allow_failover().send().await
}

/// Reads a body chunk by chunk, keeping nothing; returns the error that ended it, if any.
async fn drain(mut resp: reqwest::Response) -> Option<reqwest::Error> {
    loop {
        match resp.chunk().await {
            Ok(Some(_)) => {}
            Ok(None) => return None,
            Err(e) => return Some(e),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failnext_fails_over_from_endless_headers_within_the_attempt_timeout() {
    bounded(async {
        let b = backups().await;
        for every in [TRICKLE, FAST] {
            let hostile = Server::start(Hostile::EndlessHeaders { every }).await;
            let client = failover_client(&hostile, &b.healthy, ATTEMPT_TIMEOUT);
            let started = Instant::now();
            let resp = read(&client, &hostile.url()).await.expect("the backup answers");
            let took = started.elapsed();
            assert_eq!(resp.served_by().map(|s| s.as_str()), Some("backup"), "every={every:?}");
            assert_eq!(resp.status(), 200);
            assert!(took < ATTEMPT_TIMEOUT + SLACK, "every={every:?}: took {took:?}");
            assert!(resp.text().await.unwrap().contains("result"));
            assert_eq!(hostile.accepted(), 1);
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failnext_returns_an_endless_200_and_its_body_read_is_bounded() {
    bounded(async {
        let b = backups().await;
        for (chunk, every) in [(1, TRICKLE), (16 * 1024, FAST)] {
            let hostile = Server::start(Hostile::EndlessBody { status: 200, chunk, every }).await;
            let client = failover_client(&hostile, &b.healthy, ATTEMPT_TIMEOUT);
            let started = Instant::now();
            // A 200 is not a trigger: failnext returns it at once, without reading its body.
            let resp = read(&client, &hostile.url()).await.expect("the hostile 200 is returned");
            assert_eq!(resp.served_by().map(|s| s.as_str()), Some("hostile"));
            // The attempt timeout also bounds reading that body.
            let err = drain(resp).await.expect("an endless body cannot end");
            let took = started.elapsed();
            assert!(err.is_timeout(), "{err:?}");
            assert!(took < ATTEMPT_TIMEOUT + SLACK, "chunk={chunk}: took {took:?}");
        }
        assert_eq!(b.healthy.total(), 0, "nothing failed over");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failnext_fails_over_from_an_endless_503_without_reading_it() {
    bounded(async {
        let b = backups().await;
        for (chunk, every) in [(1, TRICKLE), (16 * 1024, FAST)] {
            let hostile = Server::start(Hostile::EndlessBody { status: 503, chunk, every }).await;
            let client = failover_client(&hostile, &b.healthy, ATTEMPT_TIMEOUT);
            let started = Instant::now();
            let resp = read(&client, &hostile.url()).await.expect("the backup answers");
            assert_eq!(resp.served_by().map(|s| s.as_str()), Some("backup"));
            assert!(resp.text().await.unwrap().contains("result"));
            assert!(started.elapsed() < ATTEMPT_TIMEOUT + SLACK);
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failnext_with_a_2_gb_content_length_is_bounded() {
    bounded(async {
        let b = backups().await;
        // A 200: returned at once; reading its body ends at the attempt timeout.
        let hostile = Server::start(Hostile::HugeLength { status: 200, chunk: 1, every: TRICKLE }).await;
        let client = failover_client(&hostile, &b.healthy, ATTEMPT_TIMEOUT);
        let started = Instant::now();
        let resp = read(&client, &hostile.url()).await.unwrap();
        assert_eq!(resp.served_by().map(|s| s.as_str()), Some("hostile"));
        assert_eq!(resp.content_length(), Some(2_147_483_648));
        let err = drain(resp).await.expect("2 GB do not arrive");
        assert!(err.is_timeout(), "{err:?}");
        assert!(started.elapsed() < ATTEMPT_TIMEOUT + SLACK);

        // A 503 with a healthy backup: failover, the huge response dropped unread.
        let hostile = Server::start(Hostile::HugeLength { status: 503, chunk: 1, every: TRICKLE }).await;
        let client = failover_client(&hostile, &b.healthy, ATTEMPT_TIMEOUT);
        let started = Instant::now();
        let resp = read(&client, &hostile.url()).await.unwrap();
        assert_eq!(resp.served_by().map(|s| s.as_str()), Some("backup"));
        assert!(started.elapsed() < ATTEMPT_TIMEOUT + SLACK);

        // A 503 whose backup is down: the retained 503 is returned, its body read bounded.
        let client = failover_client(&hostile, &b.down, ATTEMPT_TIMEOUT);
        let started = Instant::now();
        let resp = read(&client, &hostile.url()).await.expect("the retained 503 is returned");
        assert_eq!(resp.status(), 503);
        assert_eq!(resp.served_by().map(|s| s.as_str()), Some("hostile"));
        let err = drain(resp).await.expect("2 GB do not arrive");
        assert!(err.is_timeout(), "{err:?}");
        assert!(started.elapsed() < ATTEMPT_TIMEOUT + SLACK);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failnext_survives_a_reset_after_the_headers() {
    bounded(async {
        let b = backups().await;
        // A 503 then a reset: failover to the backup.
        let hostile = Server::start(Hostile::ResetAfterHeaders { status: 503 }).await;
        let client = failover_client(&hostile, &b.healthy, ATTEMPT_TIMEOUT);
        let started = Instant::now();
        let resp = read(&client, &hostile.url()).await.unwrap();
        assert_eq!(resp.served_by().map(|s| s.as_str()), Some("backup"));
        assert!(started.elapsed() < ATTEMPT_TIMEOUT + SLACK);

        // A 200 then a reset: the 200 is returned and its body fails, quickly. (Should the reset
        // overtake the headers, the attempt is an error and the backup answers instead.)
        let hostile = Server::start(Hostile::ResetAfterHeaders { status: 200 }).await;
        let client = failover_client(&hostile, &b.healthy, ATTEMPT_TIMEOUT);
        let started = Instant::now();
        let resp = read(&client, &hostile.url()).await.unwrap();
        match resp.served_by().map(|s| s.as_str().to_owned()).as_deref() {
            Some("hostile") => {
                let err = drain(resp).await.expect("the body was cut short");
                assert!(!err.is_timeout(), "a reset is not a timeout: {err:?}");
            }
            Some("backup") => assert_eq!(resp.status(), 200),
            other => panic!("served by {other:?}"),
        }
        assert!(started.elapsed() < ATTEMPT_TIMEOUT + SLACK);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failnext_gives_up_a_trickling_superseded_503_within_its_drain_bound() {
    bounded(async {
        let b = backups().await;
        let hostile = Server::start(Hostile::SmallTrickle { status: 503, every: TRICKLE }).await;
        let client = failover_client(&hostile, &b.healthy, Duration::from_secs(60));
        // The 503 is kept while the backup is tried; the backup's 200 supersedes it, and
        // failnext reads the small body in the background so that its connection could be
        // reused. The caller does not wait for that.
        let started = Instant::now();
        let resp = read(&client, &hostile.url()).await.unwrap();
        assert_eq!(resp.served_by().map(|s| s.as_str()), Some("backup"));
        assert!(resp.text().await.unwrap().contains("result"));
        assert!(started.elapsed() < SLACK, "the caller waited for the superseded body");
        // The body would take 50 s; the background read gives up after its bound (1 s) and
        // drops the connection, even though this attempt timeout (60 s) would allow more.
        let deadline = Instant::now() + Duration::from_secs(1) + SLACK;
        while hostile.open() > 0 {
            assert!(Instant::now() < deadline, "the superseded response's connection is still open");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(hostile.accepted(), 1);
    })
    .await;
}

// ===== memory =====

/// One round of every hostile provider against failnext (each with a healthy backup) and one
/// monitor check over all of them.
async fn hostile_round(servers: &[Server], clients: &[ClientWithMiddleware], monitor: &Monitor) {
    for (server, client) in servers.iter().zip(clients) {
        if let Ok(resp) = read(client, &server.url()).await {
            // Read whatever comes back, keeping nothing: an endless body ends at the timeout.
            let _ = drain(resp).await;
        }
    }
    assert!(monitor.check().await.is_err(), "hostile providers cannot all pass");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::print_stderr)] // the figures, for `--nocapture`
async fn memory_stays_flat_under_hostile_providers() {
    bounded(async {
        let b = backups().await;
        let kinds = [
            Hostile::EndlessBody { status: 200, chunk: 16 * 1024, every: FAST },
            Hostile::EndlessBody { status: 503, chunk: 16 * 1024, every: FAST },
            Hostile::EndlessHeaders { every: FAST },
            Hostile::HugeLength { status: 200, chunk: 16 * 1024, every: FAST },
            Hostile::HugeLength { status: 503, chunk: 16 * 1024, every: FAST },
            Hostile::ResetAfterHeaders { status: 200 },
            Hostile::ResetAfterHeaders { status: 503 },
            Hostile::SmallTrickle { status: 503, every: TRICKLE },
        ];
        let mut servers = Vec::new();
        for kind in kinds {
            servers.push(Server::start(kind).await);
        }
        // A short attempt timeout: the endless 200s are read until it fires.
        let clients: Vec<_> = servers.iter().map(|s| failover_client(s, &b.healthy, Duration::from_millis(100))).collect();
        let monitor = Monitor::builder(servers.iter().enumerate().map(|(i, s)| Endpoint::new(format!("h{i}"), s.url())))
            .probe_timeout(Duration::from_millis(500))
            .build()
            .unwrap();

        // Warm up pools and allocator before the baseline.
        for _ in 0..3 {
            hostile_round(&servers, &clients, &monitor).await;
        }
        let before = failnext_loopback::resources::rss_bytes().expect("RSS is readable on Linux");
        let rounds = 50;
        for _ in 0..rounds {
            hostile_round(&servers, &clients, &monitor).await;
        }
        let after = failnext_loopback::resources::rss_bytes().unwrap();
        let grown = after.saturating_sub(before);
        let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
        eprintln!(
            "hostile memory: RSS {:.1} MiB before, {:.1} MiB after {rounds} rounds of {} hostile requests + 1 check each (grew {:.2} MiB)",
            mib(before),
            mib(after),
            servers.len(),
            mib(grown)
        );
        // Each round pulls megabytes through the endless bodies; buffering any of it would
        // grow by far more than this.
        assert!(grown < 32 * 1024 * 1024, "RSS grew by {grown} bytes over {rounds} rounds ({before} -> {after})");
        assert!(servers.iter().all(|s| s.accepted() >= rounds), "every hostile provider was reached");
    })
    .await;
}

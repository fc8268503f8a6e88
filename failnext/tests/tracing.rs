//! With the `tracing` feature, every attempt, skip and result is a `tracing` event carrying the
//! endpoint id, attempt number, status or error kind and elapsed time, and never a URL; each
//! attempt's event is followed by one saying how it was judged.
#![cfg(feature = "tracing")]

use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use failnext::{Endpoint, Failover, RequestBuilderExt};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};
use wiremock::matchers::any;
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A subscriber that keeps every event as `message field=value ...`.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<String>>>);

struct Line(String);

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        if field.name() == "message" {
            self.0.insert_str(0, &format!("{value:?}"));
        } else {
            self.0.push_str(&format!(" {}={value:?}", field.name()));
        }
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut line = Line(String::new());
        event.record(&mut line);
        self.0.lock().unwrap().push(line.0);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// A client over two key-bearing endpoints: "down" refuses connections, "backup" answers 200.
/// The refused port and the server live as long as the returned guards.
async fn down_then_backup()
-> (reqwest_middleware::ClientWithMiddleware, failnext_loopback::Refused, MockServer) {
    let refused = failnext_loopback::Refused::new();
    let down = format!("http://user:SECRET1@{}/v3/SECRET2?key=SECRET3", refused.addr());
    let backup = MockServer::start().await;
    Mock::given(any()).respond_with(ResponseTemplate::new(200)).mount(&backup).await;
    let failover = Failover::builder([
        Endpoint::new("down", down),
        Endpoint::new("backup", format!("{}/rpc/SECRET4?key=SECRET5", backup.uri())),
    ])
    .build()
    .unwrap();
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new()).with(failover).build();
    (client, refused, backup)
}

#[tokio::test]
async fn one_tracing_event_per_attempt_and_result_without_urls() {
    let (client, _refused, _backup) = down_then_backup().await;

    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());
    let resp = client.post("http://127.0.0.1:9/").body("{}").allow_failover().send().await.unwrap();
    assert_eq!(resp.status(), 200);

    let all_lines: Vec<String> =
        capture.0.lock().unwrap().iter().filter(|l| l.contains("failnext")).cloned().collect();
    assert_eq!(all_lines.len(), 5, "{all_lines:#?}");
    // Right after each attempt's event, how it was judged.
    assert!(all_lines[1].starts_with("failnext judged attempt"), "{all_lines:#?}");
    assert!(
        all_lines[1].contains("endpoint=\"down\"") && all_lines[1].contains("class=Transport"),
        "{}",
        all_lines[1]
    );
    assert!(all_lines[3].starts_with("failnext judged attempt"), "{all_lines:#?}");
    assert!(
        all_lines[3].contains("endpoint=\"backup\"") && all_lines[3].contains("class=Answer"),
        "{}",
        all_lines[3]
    );
    assert!(
        all_lines[3].contains("verdict=Return") && all_lines[3].contains("attempt=2"),
        "{}",
        all_lines[3]
    );
    let lines: Vec<String> = all_lines.into_iter().filter(|l| !l.contains("judged")).collect();
    assert_eq!(lines.len(), 3, "{lines:#?}");
    assert!(lines[0].contains("endpoint=\"down\"") && lines[0].contains("attempt=1"), "{}", lines[0]);
    assert!(lines[0].contains("error_kind=\"connect\"") && lines[0].contains("elapsed_us="), "{}", lines[0]);
    assert!(lines[1].contains("endpoint=\"backup\"") && lines[1].contains("status=200"), "{}", lines[1]);
    assert!(lines[2].contains("result") && lines[2].contains("endpoint=\"backup\""), "{}", lines[2]);
    let all = capture.0.lock().unwrap().join("\n");
    assert!(!all.contains("SECRET"), "a secret reached tracing: {all}");
}

#[tokio::test]
async fn breaker_transitions_are_tracing_events_without_urls() {
    let (client, _refused, _backup) = down_then_backup().await;

    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());
    for _ in 0..3 {
        client.get("http://127.0.0.1:9/").send().await.unwrap();
    }
    let lines = capture.0.lock().unwrap().clone();
    let breaker: Vec<&String> = lines.iter().filter(|l| l.contains("failnext breaker")).collect();
    assert_eq!(breaker.len(), 1, "{lines:#?}");
    assert!(breaker[0].contains("endpoint=\"down\"") && breaker[0].contains("state=Open"), "{}", breaker[0]);
    assert!(!lines.join("\n").contains("SECRET"), "a secret reached tracing: {lines:#?}");
}

#[tokio::test]
async fn a_hedge_is_a_tracing_event_naming_both_endpoints_without_urls() {
    let slow = MockServer::start().await;
    Mock::given(any())
        .respond_with(ResponseTemplate::new(200).set_delay(std::time::Duration::from_secs(5)))
        .mount(&slow)
        .await;
    let fast = MockServer::start().await;
    Mock::given(any()).respond_with(ResponseTemplate::new(200)).mount(&fast).await;
    let failover = Failover::builder([
        Endpoint::new("primary", format!("{}/rpc/SECRET1?key=SECRET2", slow.uri())),
        Endpoint::new("backup", format!("{}/rpc/SECRET3", fast.uri())),
    ])
    .hedge(failnext::Hedge::after(std::time::Duration::from_millis(10)))
    .build()
    .unwrap();
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new()).with(failover).build();

    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());
    let resp = client.get("http://127.0.0.1:9/").allow_failover().send().await.unwrap();
    assert_eq!(resp.status(), 200);

    let lines = capture.0.lock().unwrap().clone();
    let hedges: Vec<&String> = lines.iter().filter(|l| l.starts_with("failnext hedge")).collect();
    assert_eq!(hedges.len(), 1, "{lines:#?}");
    assert!(
        hedges[0].contains("endpoint=\"backup\"")
            && hedges[0].contains("first=\"primary\"")
            && hedges[0].contains("attempt=2")
            && hedges[0].contains("after_us=10000"),
        "{}",
        hedges[0]
    );
    assert!(!lines.join("\n").contains("SECRET"), "a secret reached tracing: {lines:#?}");
}

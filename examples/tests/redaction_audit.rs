//! Redaction audit: no API key configured in an endpoint URL ever reaches text that failnext
//! or failnext-blocklag produce.
//!
//! Every endpoint URL carries keys in four places, each a distinct marker: the path
//! (`KEYPATH123`), the query (`KEYQUERY456`), the userinfo user (`KEYUSER789`) and password
//! (`KEYPASS012`). Every failure path of both crates is run with such URLs, and everything that
//! could be printed is captured:
//!
//! - a global `tracing` subscriber (written here, no extra dependency) recording every event's
//!   fields and every span's name and fields at TRACE level, from every crate and thread;
//! - an `on_event` hook formatting every event with `{:?}`, and its errors' whole source chains;
//! - `Debug` and `Display` of every public type: `Failover`, `FailoverBuilder`, `Endpoint`,
//!   `EndpointId`, `ConfigError`, `failnext::Error` with its whole `source()` chain, `Attempt`,
//!   `Event`, the `reqwest_middleware::Error` the caller gets; blocklag's `Monitor`,
//!   `MonitorBuilder`, `CheckError`, `ProbeFailure`, `ProbeError`, `Snapshot`, `SnapshotEntry`
//!   and `ConfigError`.
//!
//! The captured text must contain none of the markers, in any letter case, nor the Base64 of
//! the credentials (failnext sends userinfo as a Basic `Authorization` header). Positive
//! controls check that the capture really saw the events and errors it audits.
//!
//! Out of scope, by design and documented: `reqwest::Response::url()` of a response failnext
//! returns (and its `Debug`) is the endpoint's full URL. Also not captured: reqwest's own
//! `log` records (it uses the `log` crate, not `tracing`; they name only host and port).

use std::error::Error as StdError;
use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use failnext::{
    AttemptOutcome, Cooldown, Endpoint, EndpointId, Event, ExcludedEndpoints, Failover, FailoverBuilder,
    Permission, PreferredEndpoint, RequestBuilderExt, ResultOutcome, ServedBy,
};
use failnext_blocklag::{Monitor, ProbeError};
use failnext_loopback::{Action, Received, Refused, Reply, Server, lock, response};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Metadata, Subscriber};

const MARKERS: [&str; 4] = ["KEYPATH123", "KEYQUERY456", "KEYUSER789", "KEYPASS012"];

/// `KEYUSER789:KEYPASS012` in Base64, as a Basic `Authorization` header would carry it.
const CREDENTIALS_BASE64: &str = "S0VZVVNFUjc4OTpLRVlQQVNTMDEy";

/// An endpoint URL at `addr` with a key in each of path, query, user and password.
fn keyed(addr: std::net::SocketAddr) -> String {
    format!("http://KEYUSER789:KEYPASS012@{addr}/v3/KEYPATH123/rpc?apikey=KEYQUERY456&x=1")
}

// ===== capture =====

/// A `tracing` subscriber that keeps every event and span, fields included, as text.
#[derive(Clone, Default)]
struct Capture {
    lines: Arc<Mutex<Vec<String>>>,
    next_id: Arc<AtomicU64>,
}

struct Fields(String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.push_str(&format!(" {}={value:?}", field.name()));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push_str(&format!(" {}={value}", field.name()));
    }
}

impl Subscriber for Capture {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        Interest::always()
    }

    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::TRACE)
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let meta = span.metadata();
        let mut fields = Fields(format!("span {} target={}", meta.name(), meta.target()));
        span.record(&mut fields);
        lock(&self.lines).push(fields.0);
        Id::from_u64(self.next_id.fetch_add(1, Ordering::Relaxed) + 1)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        let mut fields = Fields(format!("span {} record", span.into_u64()));
        values.record(&mut fields);
        lock(&self.lines).push(fields.0);
    }

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &tracing::Event<'_>) {
        let meta = event.metadata();
        let mut fields =
            Fields(format!("event {} target={} level={}", meta.name(), meta.target(), meta.level()));
        event.record(&mut fields);
        lock(&self.lines).push(fields.0);
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

/// The process-wide capture, installed once, before any test sends anything.
fn tracing_capture() -> &'static Capture {
    static CAPTURE: OnceLock<Capture> = OnceLock::new();
    CAPTURE.get_or_init(|| {
        let capture = Capture::default();
        tracing::subscriber::set_global_default(capture.clone()).expect("no other global subscriber");
        capture
    })
}

/// Everything one test printed, to be audited at the end.
#[derive(Clone, Default)]
struct Printed(Arc<Mutex<Vec<String>>>);

impl Printed {
    fn push(&self, text: String) {
        lock(&self.0).push(text);
    }

    fn debug(&self, what: &str, value: &dyn Debug) {
        self.push(format!("{what}: {value:?} / {value:#?}"));
    }

    fn both<T: Debug + std::fmt::Display + ?Sized>(&self, what: &str, value: &T) {
        self.push(format!("{what}: {value} / {value:?} / {value:#?}"));
    }

    /// `Display` and `Debug` of `err` and of every error in its `source()` chain.
    fn chain(&self, what: &str, err: &(dyn StdError + 'static)) {
        let mut next = Some(err);
        let mut depth = 0;
        while let Some(e) = next {
            self.push(format!("{what} source {depth}: {e} / {e:?}"));
            next = e.source();
            depth += 1;
        }
    }

    fn text(&self) -> String {
        lock(&self.0).join("\n")
    }
}

/// Fails if any key marker, in any case, or the Base64 credentials appear in `text`.
fn assert_clean(what: &str, text: &str) {
    // ASCII upper-casing keeps byte offsets, so `at` indexes `text` too.
    let upper = text.to_ascii_uppercase();
    for marker in MARKERS {
        if let Some(at) = upper.find(marker) {
            let (mut start, mut end) = (at.saturating_sub(300), (at + 300).min(text.len()));
            while !text.is_char_boundary(start) {
                start -= 1;
            }
            while !text.is_char_boundary(end) {
                end += 1;
            }
            panic!("{what}: key marker {marker} leaked here:\n…{}…", &text[start..end]);
        }
    }
    assert!(!text.contains(CREDENTIALS_BASE64), "{what}: Base64 credentials leaked");
}

/// Audits this test's printed text and everything `tracing` captured so far.
fn audit(printed: &Printed) {
    assert_clean("printed by the test", &printed.text());
    let traced = lock(&tracing_capture().lines).join("\n");
    assert_clean("captured by tracing", &traced);
}

// ===== failnext =====

/// An `on_event` hook printing every event, and every error inside it, into `printed`.
fn hook(printed: &Printed) -> impl Fn(&Event<'_>) + Send + Sync + 'static {
    let printed = printed.clone();
    move |event: &Event<'_>| {
        printed.debug("event", event);
        match event {
            Event::Attempt { outcome: AttemptOutcome::Error(e), .. } => printed.chain("attempt error", *e),
            Event::Result { outcome: ResultOutcome::Error(e), .. } => printed.chain("result error", *e),
            _ => {}
        }
    }
}

/// Prints everything about a request's outcome that an application could print.
async fn print_outcome(printed: &Printed, what: &str, result: reqwest_middleware::Result<reqwest::Response>) {
    match result {
        Ok(resp) => {
            // The response's url() is the endpoint's, keys included, by design: not printed.
            printed.push(format!("{what}: status {}", resp.status()));
            printed.debug("served by", &resp.extensions().get::<ServedBy>());
            let body = resp.text().await.unwrap_or_default();
            printed.push(format!("{what}: body {body}"));
        }
        Err(err) => {
            printed.both(what, &err);
            printed.chain(what, &err);
            let failnext = failnext::Error::from_middleware(&err).expect("a failnext error");
            printed.both("failnext::Error", failnext);
            printed.chain("failnext::Error", failnext);
            printed.debug("unknown endpoint", &failnext.unknown_endpoint());
            for attempt in failnext.attempts() {
                printed.both("attempt", attempt);
                printed.both("attempt endpoint", attempt.endpoint());
                printed.chain("attempt error", attempt.error());
            }
        }
    }
}

fn client(failover: Failover) -> reqwest_middleware::ClientWithMiddleware {
    reqwest_middleware::ClientBuilder::new(reqwest::Client::new()).with(failover).build()
}

fn builder(printed: &Printed, endpoints: Vec<Endpoint>) -> FailoverBuilder {
    Failover::builder(endpoints).on_event(hook(printed)).cooldown(Cooldown::disabled())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failnext_failure_paths_print_no_key() {
    let capture = tracing_capture();
    let printed = Printed::default();

    let refused = Refused::new();
    let closed = Server::always(Action::Close).await;
    let reset = Server::always(Action::Reset).await;
    let hang = Server::always(Action::Hang).await;
    let unavailable = Server::replying(503, b"busy").await;
    let ok = Server::replying(200, br#"{"jsonrpc":"2.0","id":1,"result":"0x1"}"#).await;
    // A redirect loop to a keyed location, and a redirect to a keyed refused address.
    let looping = Server::start(Arc::new(|r: &Received| {
        let to = format!("{}&again=KEYQUERY456", r.target);
        Action::Reply(Reply::new(302).header("location", to).closing())
    }))
    .await;
    // The location keeps the path and query keys; userinfo in a provider's Location header
    // would be the provider's doing (hyper-util traces it as part of its pool key).
    let moved_to = format!("http://{}/v3/KEYPATH123/rpc?apikey=KEYQUERY456", Refused::new().addr());
    let moving = Server::start(Arc::new(move |_: &Received| {
        Action::Reply(Reply::new(307).header("location", &moved_to).closing())
    }))
    .await;

    let ep = |name: &str, addr| Endpoint::new(name, keyed(addr));
    let all = vec![
        ep("refused", refused.addr()),
        ep("closed", closed.addr()),
        ep("reset", reset.addr()),
        ep("hang", hang.addr()),
        ep("looping", looping.addr()),
        ep("moving", moving.addr()),
    ];

    // Every transport failure in one request: refused, closed, reset, timeout, redirects.
    let builder_all = builder(&printed, all.clone()).attempt_timeout(Duration::from_millis(300));
    printed.debug("FailoverBuilder", &builder_all);
    let failover = builder_all.build().expect("valid");
    printed.debug("Failover", &failover);
    for endpoint in failover.endpoints() {
        printed.both("Endpoint", endpoint);
        printed.both("EndpointId", endpoint.id());
        printed.push(format!("redacted {}", endpoint.redacted_url()));
    }
    let keyed_request_url = keyed(refused.addr());
    let result = client(failover.clone()).get(&keyed_request_url).send().await;
    let err = result.as_ref().err().and_then(failnext::Error::from_middleware).expect("failover error");
    assert_eq!(err.attempts().len(), 6, "{err:?}");
    print_outcome(&printed, "all transport failures", result).await;

    // A 503 retained while the rest fail; a 503 returned under deny; success.
    let f = builder(&printed, vec![ep("busy", unavailable.addr()), ep("refused", refused.addr())])
        .build()
        .expect("valid");
    print_outcome(&printed, "retained 503", client(f.clone()).get(&keyed_request_url).send().await).await;
    print_outcome(&printed, "denied 503", client(f).post(&keyed_request_url).body("{}").send().await).await;
    let f =
        builder(&printed, vec![ep("refused", refused.addr()), ep("ok", ok.addr())]).build().expect("valid");
    print_outcome(&printed, "failover to ok", client(f).get(&keyed_request_url).send().await).await;

    // Cooldown skip, then everything cooling: no usable endpoint.
    let f = builder(&printed, vec![ep("refused", refused.addr()), ep("busy", unavailable.addr())])
        .cooldown(Cooldown::new(1, Duration::from_secs(3600)))
        .build()
        .expect("valid");
    let c = client(f.clone());
    for round in 0..3 {
        print_outcome(&printed, &format!("cooldown round {round}"), c.get(&keyed_request_url).send().await)
            .await;
    }
    assert!(f.is_cooling_down("refused") && f.is_cooling_down("busy"));
    printed.debug("Failover with cooldown", &f);

    // A streaming body that cannot be replayed, after a 503 and after a refusal.
    for first in [ep("busy", unavailable.addr()), ep("refused", refused.addr())] {
        let f = builder(&printed, vec![first, ep("ok", ok.addr())]).build().expect("valid");
        let stream = futures::stream::iter([Ok::<_, std::io::Error>(b"{\"id\":1}".to_vec())]);
        let result = client(f)
            .post(&keyed_request_url)
            .body(reqwest::Body::wrap_stream(stream))
            .allow_failover()
            .send()
            .await;
        print_outcome(&printed, "not replayable", result).await;
    }

    // No usable endpoint (all ineligible, all excluded) and unknown endpoints.
    let f = builder(&printed, vec![ep("refused", refused.addr()), ep("ok", ok.addr())])
        .eligible(|_: &EndpointId| false)
        .build()
        .expect("valid");
    print_outcome(&printed, "ineligible", client(f).get(&keyed_request_url).send().await).await;
    let f =
        builder(&printed, vec![ep("refused", refused.addr()), ep("ok", ok.addr())]).build().expect("valid");
    let c = client(f);
    print_outcome(
        &printed,
        "excluded",
        c.get(&keyed_request_url).exclude_endpoints(["refused", "ok"]).send().await,
    )
    .await;
    print_outcome(
        &printed,
        "unknown excluded",
        c.get(&keyed_request_url).exclude_endpoints(["nope"]).send().await,
    )
    .await;
    print_outcome(
        &printed,
        "unknown preferred",
        c.get(&keyed_request_url).prefer_endpoint("nope").send().await,
    )
    .await;

    // Request-scoped option types and small public types.
    printed.debug(
        "options",
        &(Permission::Allow, ExcludedEndpoints(vec!["a".into()]), PreferredEndpoint("b".into())),
    );
    printed.debug("cooldown", &Cooldown::default());

    // Positive controls: the capture saw what is audited.
    let text = printed.text();
    for expected in
        ["CooldownSkip", "NotReplayable", "no usable endpoint", "unknown endpoint", "Connection refused"]
    {
        assert!(text.contains(expected), "the audit did not exercise {expected:?}");
    }
    assert!(text.contains("timed out") || text.contains("TimedOut"), "no timeout was printed");
    let traced = lock(&capture.lines).join("\n");
    assert!(traced.contains("failnext attempt failed"), "tracing captured no failnext event");
    audit(&printed);
}

#[test]
fn config_errors_print_no_key() {
    tracing_capture();
    let printed = Printed::default();
    let host = "127.0.0.1:8545";
    let bad_urls = [
        format!(" http://KEYUSER789:KEYPASS012@{host}/KEYPATH123?k=KEYQUERY456"),
        format!("http://KEYUSER789:KEYPASS012@{host}/KEYPATH123?k=KEYQUERY456\n"),
        format!("http://KEYUSER789:KEYPASS012@{host}/KEYPATH123\t?k=KEYQUERY456"),
        format!("http://KEYUSER789:KEYPASS012@{host}/KEYPATH123%zz?k=KEYQUERY456"),
        "http://KEYUSER789:KEYPASS012@127.0.0.1:99999/KEYPATH123?k=KEYQUERY456".to_owned(),
        "http://KEYUSER789:KEYPASS012@[::1/KEYPATH123?k=KEYQUERY456".to_owned(),
        format!("KEYUSER789:KEYPASS012@{host}/KEYPATH123?k=KEYQUERY456"),
        format!("//KEYUSER789:KEYPASS012@{host}/KEYPATH123?k=KEYQUERY456"),
        format!("{host}/KEYPATH123?k=KEYQUERY456"),
        format!("ftp://KEYUSER789:KEYPASS012@{host}/KEYPATH123?k=KEYQUERY456"),
        format!("mailto:KEYUSER789:KEYPASS012@{host}?k=KEYQUERY456"),
        format!("https:KEYUSER789:KEYPASS012@{host}/KEYPATH123?k=KEYQUERY456"),
        "https://KEYUSER789:KEYPASS012@:8080/KEYPATH123?k=KEYQUERY456".to_owned(),
        "https://KEYUSER789:KEYPASS012@/KEYPATH123?k=KEYQUERY456".to_owned(),
        format!("http://KEYUSER789:KEYPASS012@{host}/KEYPATH123?k=KEYQUERY456#frag"),
        format!("http://KEYUSER789:KEYPASS012@{host}/rpc#KEYPATH123"),
    ];
    let good = format!("http://KEYUSER789:KEYPASS012@{host}/KEYPATH123?k=KEYQUERY456");
    let mut configs: Vec<Vec<Endpoint>> =
        bad_urls.iter().map(|u| vec![Endpoint::new("bad", u.clone())]).collect();
    configs.push(vec![]);
    configs.push(vec![Endpoint::new("", good.clone())]);
    configs.push(vec![Endpoint::new("twice", good.clone()), Endpoint::new("twice", good.clone())]);

    for endpoints in &configs {
        for endpoint in endpoints {
            printed.both("Endpoint", endpoint);
            printed.push(format!("redacted {}", endpoint.redacted_url()));
        }
        let failnext_builder = Failover::builder(endpoints.clone());
        printed.debug("FailoverBuilder", &failnext_builder);
        let err = failnext_builder.build().expect_err("invalid configuration");
        printed.both("ConfigError", &err);
        printed.chain("ConfigError", &err);
        printed.debug("ConfigError endpoint", &(err.endpoint_id(), err.endpoint_index()));
        let err = failnext::validate_endpoints(endpoints).expect_err("invalid configuration");
        printed.both("validate_endpoints", &err);
        let monitor_builder = Monitor::builder(endpoints.clone());
        printed.debug("MonitorBuilder", &monitor_builder);
        let err = monitor_builder.build().expect_err("invalid configuration");
        printed.both("blocklag ConfigError", &err);
        printed.chain("blocklag ConfigError", &err);
        printed.debug("blocklag ConfigError endpoint", &(err.endpoint_id(), err.endpoint_index()));
    }
    // Rules beyond the endpoints.
    let valid = || vec![Endpoint::new("ok", good.clone())];
    for (what, result) in [
        ("threshold", Failover::builder(valid()).cooldown(Cooldown::new(0, Duration::from_secs(1))).build()),
        ("duration", Failover::builder(valid()).cooldown(Cooldown::new(1, Duration::ZERO)).build()),
        ("attempt timeout", Failover::builder(valid()).attempt_timeout(Duration::ZERO).build()),
    ] {
        let err = result.expect_err(what);
        printed.both(what, &err);
    }
    let err =
        Monitor::builder(valid()).probe_timeout(Duration::ZERO).build().expect_err("zero probe timeout");
    printed.both("probe timeout", &err);
    printed.chain("probe timeout", &err);

    assert!(printed.text().contains("invalid url"), "no URL rule error was printed");
    audit(&printed);
}

// ===== failnext-blocklag =====

/// The JSON-RPC request a probe sent: its method and id.
fn rpc(r: &Received) -> (String, u64) {
    let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap_or_default();
    (body["method"].as_str().unwrap_or_default().to_owned(), body["id"].as_u64().unwrap_or_default())
}

/// A provider that answers every probe with `status` and `body`.
fn fixed(status: u16, body: impl AsRef<[u8]>) -> failnext_loopback::Handler {
    let reply = response(status, body.as_ref());
    Arc::new(move |_: &Received| Action::Reply(reply.clone()))
}

fn json_reply(body: String) -> Action {
    Action::Reply(response(200, body.as_bytes()))
}

/// A provider at block 0x100 on chain `chain`, answering both probe methods.
fn provider(chain: u64) -> failnext_loopback::Handler {
    Arc::new(move |r: &Received| {
        let (method, id) = rpc(r);
        let result = if method == "eth_chainId" { format!("{chain:#x}") } else { "0x100".to_owned() };
        json_reply(format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"{result}"}}"#))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocklag_failure_paths_print_no_key() {
    let capture = tracing_capture();
    let printed = Printed::default();

    let chunked_big = (0..6).fold(Reply::new(200).chunked().closing(), |r, _| r.send(vec![b' '; 0x400]));
    let handlers: Vec<(&str, failnext_loopback::Handler)> = vec![
        ("healthy", provider(1)),
        ("lagging", fixed(200, r#"{"jsonrpc":"2.0","id":1,"result":"0x1"}"#)),
        ("closed", Arc::new(|_: &Received| Action::Close)),
        ("reset", Arc::new(|_: &Received| Action::Reset)),
        ("hang", Arc::new(|_: &Received| Action::Hang)),
        ("status", fixed(503, "busy")),
        ("redirect", fixed(302, "")),
        ("too-large", fixed(200, " ".repeat(5000))),
        ("too-large-chunked", Arc::new(move |_: &Received| Action::Reply(chunked_big.clone()))),
        ("invalid-json", fixed(200, "<html>busy</html>")),
        ("not-json-rpc", fixed(200, r#"{"jsonrpc":"1.0","id":1,"result":"0x1"}"#)),
        ("id-mismatch", fixed(200, r#"{"jsonrpc":"2.0","id":9,"result":"0x1"}"#)),
        (
            "json-rpc-error",
            fixed(200, r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"limit"}}"#),
        ),
        ("invalid-quantity", fixed(200, r#"{"jsonrpc":"2.0","id":1,"result":"0x0064"}"#)),
        ("wrong-chain", provider(5)),
    ];
    let mut servers = Vec::new();
    for (name, handler) in handlers {
        servers.push((name, Server::start(handler).await));
    }
    let refused = Refused::new();
    let mut endpoints: Vec<Endpoint> =
        servers.iter().map(|(name, s)| Endpoint::new(*name, keyed(s.addr()))).collect();
    endpoints.push(Endpoint::new("refused", keyed(refused.addr())));

    // Without a chain check: every probe rejection at once, and a published snapshot.
    // With one: the wrong chain, and the chain call failing on the broken providers.
    for chain in [None, Some(1)] {
        let mut builder =
            Monitor::builder(endpoints.clone()).probe_timeout(Duration::from_millis(500)).max_lag(2);
        if let Some(chain) = chain {
            builder = builder.expected_chain_id(chain);
        }
        printed.debug("MonitorBuilder", &builder);
        let monitor = builder.build().expect("valid");
        printed.debug("Monitor before", &monitor);
        let err = monitor.check().await.expect_err("most probes fail");
        assert!(err.published(), "the healthy provider publishes");
        printed.both("CheckError", &err);
        printed.chain("CheckError", &err);
        for failure in err.failures() {
            printed.both("ProbeFailure", failure);
            printed.chain("ProbeFailure", failure);
            printed.both("ProbeError", failure.error());
            printed.chain("ProbeError", failure.error());
            printed.push(format!("{} {}", failure.endpoint(), failure.method()));
        }
        let snapshot = monitor.snapshot().expect("published");
        printed.debug("Snapshot", &snapshot);
        for entry in snapshot.entries() {
            printed.debug("SnapshotEntry", entry);
            if let Some(error) = entry.error() {
                printed.both("entry error", error);
            }
        }
        printed.debug("Monitor after", &monitor);
        let kinds = err.failures().iter().map(|f| format!("{:?}", f.error())).collect::<Vec<_>>().join(" ");
        let expected: &[&str] = if chain.is_some() {
            &["WrongChain", "Transport", "Timeout"]
        } else {
            &[
                "Transport",
                "Timeout",
                "Status(503)",
                "Status(302)",
                "BodyTooLarge",
                "InvalidJson",
                "NotJsonRpc",
                "IdMismatch",
                "JsonRpc",
                "InvalidQuantity",
            ]
        };
        for kind in expected {
            assert!(kinds.contains(kind), "no {kind} failure among {kinds}");
        }
    }

    // Every probe failing: nothing published, previous (fail-open) eligibility kept.
    let broken = vec![
        Endpoint::new("refused", keyed(refused.addr())),
        Endpoint::new("status", keyed(servers[5].1.addr())),
    ];
    let monitor = Monitor::builder(broken).build().expect("valid");
    let err = monitor.check().await.expect_err("every probe fails");
    assert!(!err.published());
    printed.both("CheckError unpublished", &err);
    printed.debug("Monitor unpublished", &monitor);

    // A ProbeError that still holds a URL (built outside blocklag) must not print it either.
    let with_url = reqwest::Client::new().get(keyed(refused.addr())).send().await.expect_err("refused");
    let outside = ProbeError::Transport(with_url);
    printed.both("ProbeError with url", &outside);
    printed.chain("ProbeError with url", &outside);

    let traced = lock(&capture.lines).join("\n");
    assert!(!traced.is_empty(), "tracing captured nothing");
    audit(&printed);
}

// ===== regression tests for bugs this audit found =====

/// Bug: an `http(s)` URL whose `//` or host is missing (`https:///KEY…`, `https:KEY…`,
/// `https:/KEY…`, `http:\\KEY…`) is rejected by validation for having no host, but the `url`
/// crate repairs it by taking the first path segment (here the key) as the host, and
/// `Endpoint::redacted_url` shows that repaired host: `Endpoint`'s `Display`/`Debug`, the
/// `ConfigError` message of failnext and blocklag and the builders' `Debug` print
/// `https://keypath123/…` (while saying "no host"). An empty host variable in
/// `format!("https://{host}/{key}")` is enough to print the key.
#[test]
fn bug_hostless_url_redaction_prints_the_path_as_host() {
    tracing_capture();
    let printed = Printed::default();
    for raw in [
        "https:///KEYPATH123/rpc?apikey=KEYQUERY456",
        "https:KEYPATH123/rpc",
        "https:/KEYPATH123/rpc",
        "http:\\\\KEYPATH123\\rpc",
        "https:KEYUSER789:KEYPASS012@KEYPATH123/x",
    ] {
        let endpoint = Endpoint::new("bad", raw);
        printed.both("Endpoint", &endpoint);
        let builder = Failover::builder([endpoint.clone()]);
        printed.debug("FailoverBuilder", &builder);
        let err = builder.build().expect_err("no host");
        printed.both("ConfigError", &err);
        let monitor_builder = Monitor::builder([endpoint]);
        printed.debug("MonitorBuilder", &monitor_builder);
        let err = monitor_builder.build().expect_err("no host");
        printed.both("blocklag ConfigError", &err);
        printed.chain("blocklag ConfigError", &err);
    }
    audit(&printed);
}

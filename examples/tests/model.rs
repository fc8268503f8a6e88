//! Model-based property tests of the failover middleware.
//!
//! Each generated case is a set of 1-5 endpoints (each either refusing connections or served
//! by a loopback server that follows a per-endpoint script of outcomes), a cooldown setting
//! (disabled, or a threshold of 1-3 with a one-hour duration so nothing expires within a case),
//! additional trigger statuses, an optional permission policy, and a sequence of 1-4 requests
//! sent through the same `Failover` (so cooldown state carries over), each with its own
//! eligibility answers, method, explicit permission, exclusions, preference (sometimes of an
//! unknown id) and body kind (none, bytes, stream).
//!
//! Every request runs through the real middleware against the real servers, and what happened
//! is compared with what the rules oracle (`failnext_examples::oracle`, the pure statement of
//! the rules in the crate documentation and the Go behaviour catalogue) says, driven by
//! [`Model`] (script positions and cooldown state across requests): the attempt sequence (a per-attempt middleware logs every
//! attempt, refused ones included), the exact event sequence from `on_event`, the result
//! (status, `ServedBy` and the body of the very response the model expects, or the error kind
//! with its attempt list), the eligibility questions asked, the policy calls, what each server
//! received (destination path, full body on every replay), and afterwards
//! `Failover::is_cooling_down` for every endpoint.
//!
//! Default: 256 cases (about a second in debug). `PROPTEST_CASES=n` runs `n` instead.
//!
//! Deliberately out of the model: cooldown expiry (the duration is one hour; the clock rules
//! are unit-tested in `failnext::cooldown`), concurrency between requests, cancellation,
//! timeouts and Host handling (the fuzz and redaction tests cover the last two).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use failnext::{
    AttemptOutcome, Cooldown, Endpoint, EndpointId, Event, Failover, Permission, RequestBuilderExt,
    ResultOutcome, ServedBy,
};
use failnext_examples::oracle::{
    self, Attempted, CooldownState, Expected, PermissionQuery, Plan, Triggers, Walk,
};
use failnext_loopback::{Action, AttemptLog, Received, Refused, Server, lock, response};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

const MAX_ENDPOINTS: usize = 5;
const COOLDOWN: Duration = Duration::from_secs(3600);

// ===== generated cases =====

/// One scripted answer of a live endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Status(u16),
    /// Read the request, close without answering.
    Close,
}

#[derive(Clone, Debug)]
enum Behaviour {
    /// Nothing listens: every connection is refused.
    Down,
    /// A server answering hit `h` with `script[h % script.len()]`.
    Up(Vec<Step>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Policy {
    Absent,
    Returns(Permission),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BodyKind {
    None,
    Bytes,
    Stream,
}

#[derive(Clone, Debug)]
struct Req {
    post: bool,
    explicit: Option<Permission>,
    excluded: Vec<String>,
    preferred: Option<String>,
    eligible: Vec<bool>,
    body: BodyKind,
}

#[derive(Clone, Debug)]
struct Case {
    endpoints: Vec<Behaviour>,
    threshold: Option<u32>,
    extra_triggers: Vec<u16>,
    policy: Policy,
    requests: Vec<Req>,
}

fn id(i: usize) -> String {
    format!("e{i}")
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => Just(Step::Status(200)),
        1 => Just(Step::Status(404)),
        1 => Just(Step::Status(500)),
        1 => Just(Step::Status(429)),
        2 => Just(Step::Status(502)),
        2 => Just(Step::Status(503)),
        1 => Just(Step::Status(504)),
        2 => Just(Step::Close),
    ]
}

fn behaviour() -> impl Strategy<Value = Behaviour> {
    prop_oneof![1 => Just(Behaviour::Down), 4 => prop::collection::vec(step(), 1..=4).prop_map(Behaviour::Up)]
}

fn permission() -> impl Strategy<Value = Permission> {
    prop_oneof![Just(Permission::Allow), Just(Permission::Deny), Just(Permission::Defer)]
}

/// An id for request options: usually a configured one, sometimes one that is not.
fn option_id(n: usize) -> impl Strategy<Value = String> {
    prop_oneof![
        20 => (0..n).prop_map(id),
        1 => prop_oneof![Just(id(n)), Just("E0".to_owned()), Just(String::new())],
    ]
}

fn request(n: usize) -> impl Strategy<Value = Req> {
    (
        any::<bool>(),
        prop_oneof![
            2 => Just(None),
            4 => Just(Some(Permission::Allow)),
            1 => Just(Some(Permission::Deny)),
            1 => Just(Some(Permission::Defer)),
        ],
        prop_oneof![4 => Just(Vec::new()), 1 => prop::collection::vec(option_id(n), 1..=2)],
        prop_oneof![3 => Just(None), 2 => option_id(n).prop_map(Some)],
        prop::collection::vec(prop::bool::weighted(0.85), n),
        prop_oneof![Just(BodyKind::None), Just(BodyKind::Bytes), Just(BodyKind::Stream)],
    )
        .prop_map(|(post, explicit, excluded, preferred, eligible, body)| Req {
            post,
            explicit,
            excluded,
            preferred,
            eligible,
            body,
        })
}

fn case() -> impl Strategy<Value = Case> {
    (1..=MAX_ENDPOINTS).prop_flat_map(|n| {
        (
            prop::collection::vec(behaviour(), n),
            prop_oneof![1 => Just(None), 3 => (1..=3u32).prop_map(Some)],
            prop::sample::subsequence(vec![429u16, 500], 0..=2),
            prop_oneof![2 => Just(Policy::Absent), 1 => permission().prop_map(Policy::Returns)],
            prop::collection::vec(request(n), 1..=4),
        )
            .prop_map(|(endpoints, threshold, extra_triggers, policy, requests)| Case {
                endpoints,
                threshold,
                extra_triggers,
                policy,
                requests,
            })
    })
}

// ===== what is compared =====

#[derive(Clone, Debug, PartialEq, Eq)]
enum AttemptResult {
    Status(u16),
    /// A connection error (`is_connect`).
    Connect,
    /// Any other error (here: the connection closed without an answer).
    OtherError,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    /// A response from endpoint `endpoint`, produced by its hit number `hit` with `status`.
    Response {
        endpoint: usize,
        hit: usize,
        status: u16,
    },
    NoUsable,
    Unknown(String),
    /// A failover error listing the endpoints of its failed attempts.
    Failover(Vec<usize>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Ev {
    Attempt(usize, u32, AttemptResult),
    /// A cooldown skip; the flag is `is_cooling_down` as seen from the hook (always true).
    Skip(usize, bool),
    NotReplayable(usize),
    /// `Result`: the endpoint and the outcome class (the body is checked on the response).
    Result(Option<usize>, Outcome),
}

#[derive(Debug, PartialEq, Eq)]
struct Observed {
    asked: Vec<usize>,
    policy_calls: usize,
    attempts: Vec<usize>,
    events: Vec<Ev>,
    outcome: Outcome,
}

// ===== the reference model =====

/// The state the rules need across requests: per-endpoint script positions and cooldowns.
/// What each request must do comes from the rules oracle.
struct Model<'a> {
    case: &'a Case,
    hits: Vec<usize>,
    cooldown: Vec<CooldownState>,
}

impl<'a> Model<'a> {
    fn new(case: &'a Case) -> Model<'a> {
        let n = case.endpoints.len();
        Model { case, hits: vec![0; n], cooldown: vec![CooldownState::new(case.threshold); n] }
    }

    /// What one request must do, updating cooldown state and script positions.
    fn request(&mut self, req: &Req) -> Observed {
        let n = self.case.endpoints.len();
        let mut out = Observed {
            asked: vec![],
            policy_calls: 0,
            attempts: vec![],
            events: vec![],
            outcome: Outcome::NoUsable,
        };
        let ids: Vec<String> = (0..n).map(id).collect();
        let excluded = req.excluded.iter().map(String::as_str);
        let selection = match oracle::resolve(&ids, excluded, req.preferred.as_deref()) {
            Ok(selection) => selection,
            Err(unknown) => return self.finish(out, Outcome::Unknown(unknown.to_owned())),
        };
        let plan = Plan::new(n, &selection, |i| req.eligible[i]);
        out.asked = plan.asked().to_vec();
        let policy = match self.case.policy {
            Policy::Absent => None,
            Policy::Returns(answer) => Some(answer),
        };
        let method = if req.post { "POST" } else { "GET" };
        let permission = PermissionQuery { explicit: req.explicit, policy, method };
        let triggers = Triggers::new(self.case.extra_triggers.iter().copied());
        let mut walk = Walk::new(&plan, permission, req.body != BodyKind::Stream, triggers);
        let mut hits = Vec::new();
        let finish = loop {
            match walk.next(|i| self.cooldown[i].is_cooling()) {
                oracle::Step::Skip(i) => out.events.push(Ev::Skip(i, true)),
                oracle::Step::Attempt { endpoint, number } => {
                    out.attempts.push(endpoint);
                    let (result, hit) = self.attempt(endpoint);
                    out.events.push(Ev::Attempt(endpoint, number, result.clone()));
                    let attempted = match result {
                        AttemptResult::Status(s) => Attempted::Status(s),
                        AttemptResult::Connect | AttemptResult::OtherError => Attempted::Error,
                    };
                    self.cooldown[endpoint].record(oracle::cooldown_evidence(attempted));
                    walk.record(attempted);
                    hits.push(hit);
                }
                oracle::Step::NotReplayable(i) => out.events.push(Ev::NotReplayable(i)),
                oracle::Step::Finish(finish) => break finish,
            }
        };
        out.policy_calls = walk.settlement().map_or(0, |s| usize::from(s.policy_asked));
        let outcome = match finish.result {
            Expected::Response { attempt, endpoint, status } => {
                Outcome::Response { endpoint, hit: hits[attempt], status }
            }
            Expected::NoUsableEndpoint => Outcome::NoUsable,
            Expected::Failover(endpoints) => Outcome::Failover(endpoints),
        };
        self.finish(out, outcome)
    }

    fn attempt(&mut self, i: usize) -> (AttemptResult, usize) {
        match &self.case.endpoints[i] {
            Behaviour::Down => (AttemptResult::Connect, 0),
            Behaviour::Up(script) => {
                let hit = self.hits[i];
                self.hits[i] += 1;
                match script[hit % script.len()] {
                    Step::Status(s) => (AttemptResult::Status(s), hit),
                    Step::Close => (AttemptResult::OtherError, hit),
                }
            }
        }
    }

    fn finish(&self, mut out: Observed, outcome: Outcome) -> Observed {
        let endpoint = match outcome {
            Outcome::Response { endpoint, .. } => Some(endpoint),
            _ => None,
        };
        out.events.push(Ev::Result(endpoint, outcome.clone()));
        out.outcome = outcome;
        out
    }

    fn is_cooling(&self, i: usize) -> bool {
        self.cooldown[i].is_cooling()
    }
}

// ===== running a case for real =====

/// Loopback servers and refused addresses, started once and reconfigured per case.
struct Pool {
    servers: Vec<Server>,
    refused: Vec<Refused>,
    client: reqwest::Client,
}

impl Pool {
    async fn start() -> Pool {
        let mut servers = Vec::new();
        for _ in 0..MAX_ENDPOINTS {
            servers.push(Server::always(Action::Close).await);
        }
        let refused = (0..MAX_ENDPOINTS).map(|_| Refused::new()).collect();
        // No pooled connections: every attempt is one fresh connection, so a closed one can
        // never be retried by hyper behind failnext's back.
        let client = reqwest::Client::builder().pool_max_idle_per_host(0).build().expect("client");
        Pool { servers, refused, client }
    }
}

fn path(i: usize) -> String {
    format!("/ep{i}/rpc?key=k{i}")
}

fn body_text(endpoint: usize, hit: usize, status: u16) -> String {
    format!("e{endpoint}#{hit}:{status}")
}

const STREAM_CHUNKS: [&[u8]; 3] = [b"{\"jsonrpc\":", b"\"2.0\",\"id\":7,", b"\"method\":\"eth_call\"}"];

fn request_body(kind: BodyKind, number: usize) -> Vec<u8> {
    match kind {
        BodyKind::None => Vec::new(),
        BodyKind::Bytes => format!("{{\"id\":{number},\"method\":\"eth_blockNumber\"}}").into_bytes(),
        BodyKind::Stream => STREAM_CHUNKS.concat(),
    }
}

/// Shared state the hooks write into during one request.
#[derive(Default)]
struct Probe {
    eligible: Mutex<Vec<bool>>,
    asked: Mutex<Vec<usize>>,
    policy_calls: AtomicUsize,
    events: Mutex<Vec<Ev>>,
}

fn index_of(endpoint: &EndpointId) -> usize {
    endpoint.strip_prefix('e').and_then(|i| i.parse().ok()).expect("ids are e<index>")
}

fn classify(err: &reqwest_middleware::Error) -> Outcome {
    match failnext::Error::from_middleware(err) {
        Some(e) if e.is_no_usable_endpoint() => Outcome::NoUsable,
        Some(e) if e.is_unknown_endpoint() => {
            Outcome::Unknown(e.unknown_endpoint().map(|id| id.to_string()).unwrap_or_default())
        }
        Some(e) if e.is_failover() => {
            Outcome::Failover(e.attempts().iter().map(|a| index_of(a.endpoint())).collect())
        }
        _ => Outcome::Unknown(format!("not a failnext error: {err}")),
    }
}

fn attempt_result(outcome: &AttemptOutcome<'_>) -> AttemptResult {
    match outcome {
        AttemptOutcome::Status(s) => AttemptResult::Status(s.as_u16()),
        AttemptOutcome::Error(e) if e.is_connect() => AttemptResult::Connect,
        AttemptOutcome::Error(_) => AttemptResult::OtherError,
    }
}

fn build(case: &Case, pool: &Pool, probe: &Arc<Probe>) -> Failover {
    let endpoints = case.endpoints.iter().enumerate().map(|(i, b)| {
        let url = match b {
            Behaviour::Down => pool.refused[i].url(&path(i)),
            Behaviour::Up(_) => pool.servers[i].url(&path(i)),
        };
        Endpoint::new(id(i), url)
    });
    let cooldown = case.threshold.map_or(Cooldown::disabled(), |t| Cooldown::new(t, COOLDOWN));
    let triggers = case.extra_triggers.iter().map(|&c| http::StatusCode::from_u16(c).expect("valid status"));
    let mut builder =
        Failover::builder(endpoints).cooldown(cooldown).additional_trigger_status_codes(triggers);
    if let Policy::Returns(answer) = case.policy {
        let p = probe.clone();
        builder = builder.permission_policy(move |_: &reqwest::Request| {
            p.policy_calls.fetch_add(1, Ordering::SeqCst);
            answer
        });
    }
    let p = probe.clone();
    builder = builder.eligible(move |id: &EndpointId| {
        let i = index_of(id);
        lock(&p.asked).push(i);
        lock(&p.eligible)[i]
    });
    let handle: Arc<OnceLock<Failover>> = Arc::default();
    let (p, h) = (probe.clone(), handle.clone());
    builder = builder.on_event(move |event: &Event<'_>| {
        let ev = match event {
            Event::Attempt { endpoint, attempt, outcome, .. } => {
                // Answers are frozen at request start: changing them now must change nothing.
                lock(&p.eligible).iter_mut().for_each(|e| *e = false);
                Ev::Attempt(index_of(endpoint), *attempt, attempt_result(outcome))
            }
            Event::CooldownSkip { endpoint } => {
                let cooling = h.get().is_some_and(|f| f.is_cooling_down(endpoint));
                Ev::Skip(index_of(endpoint), cooling)
            }
            Event::NotReplayable { endpoint } => Ev::NotReplayable(index_of(endpoint)),
            Event::Result { endpoint, outcome } => {
                let outcome = match outcome {
                    // The hit is unknown here; the returned response's body pins it.
                    ResultOutcome::Status(s) => Outcome::Response {
                        endpoint: endpoint.map_or(usize::MAX, index_of),
                        hit: usize::MAX,
                        status: s.as_u16(),
                    },
                    ResultOutcome::Error(e) => classify(e),
                    ResultOutcome::Cancelled => Outcome::Unknown("cancelled".to_owned()),
                };
                Ev::Result(endpoint.map(index_of), outcome)
            }
            _ => return,
        };
        lock(&p.events).push(ev);
    });
    let failover = builder.build().expect("generated configurations are valid");
    let _ = handle.set(failover.clone());
    failover
}

fn script_handler(i: usize, script: Vec<Step>) -> failnext_loopback::Handler {
    let hits = AtomicUsize::new(0);
    Arc::new(move |_: &Received| {
        let hit = hits.fetch_add(1, Ordering::SeqCst);
        match script[hit % script.len()] {
            Step::Status(s) => Action::Reply(response(s, body_text(i, hit, s).as_bytes())),
            Step::Close => Action::Close,
        }
    })
}

/// Hides the hit of response outcomes in events, which the hook cannot know.
fn without_hits(events: &[Ev]) -> Vec<Ev> {
    events
        .iter()
        .map(|ev| match ev {
            Ev::Result(e, Outcome::Response { endpoint, status, .. }) => {
                Ev::Result(*e, Outcome::Response { endpoint: *endpoint, hit: usize::MAX, status: *status })
            }
            other => other.clone(),
        })
        .collect()
}

/// How often each path of the rules was taken, to show the generator reaches all of them.
type Coverage = Mutex<BTreeMap<&'static str, usize>>;

fn count(coverage: &Coverage, expected: &Observed) {
    let mut c = lock(coverage);
    let mut hit = |path: &'static str, taken: bool| *c.entry(path).or_default() += usize::from(taken);
    let last = expected.attempts.last().copied();
    hit("response returned", matches!(expected.outcome, Outcome::Response { .. }));
    hit(
        "retained response returned",
        matches!(expected.outcome, Outcome::Response { endpoint, .. } if Some(endpoint) != last),
    );
    hit("failover error", matches!(expected.outcome, Outcome::Failover(_)));
    hit(
        "failover error after several attempts",
        matches!(&expected.outcome, Outcome::Failover(a) if a.len() > 1),
    );
    hit("no usable endpoint", expected.outcome == Outcome::NoUsable);
    hit("unknown endpoint", matches!(expected.outcome, Outcome::Unknown(_)));
    hit("cooldown skip", expected.events.iter().any(|e| matches!(e, Ev::Skip(..))));
    hit("not replayable", expected.events.iter().any(|e| matches!(e, Ev::NotReplayable(_))));
    hit("three or more attempts", expected.attempts.len() >= 3);
    hit("policy called", expected.policy_calls > 0);
}

async fn run_case(pool: &Pool, case: &Case, coverage: &Coverage) -> Result<(), TestCaseError> {
    let probe = Arc::new(Probe::default());
    for (i, b) in case.endpoints.iter().enumerate() {
        pool.servers[i].take_log();
        if let Behaviour::Up(script) = b {
            pool.servers[i].set_handler(script_handler(i, script.clone()));
        }
    }
    let failover = build(case, pool, &probe);
    let log = AttemptLog::default();
    let client = reqwest_middleware::ClientBuilder::new(pool.client.clone())
        .with(failover.clone())
        .with(log.clone())
        .build();
    let mut model = Model::new(case);

    for (number, req) in case.requests.iter().enumerate() {
        *lock(&probe.eligible) = req.eligible.clone();
        lock(&probe.asked).clear();
        lock(&probe.events).clear();
        probe.policy_calls.store(0, Ordering::SeqCst);
        let expected = model.request(req);
        count(coverage, &expected);

        let method = if req.post { reqwest::Method::POST } else { reqwest::Method::GET };
        let mut builder = client.request(method, "http://127.0.0.1:9/original/path?old=1");
        builder = match req.body {
            BodyKind::None => builder,
            BodyKind::Bytes => builder.body(request_body(BodyKind::Bytes, number)),
            BodyKind::Stream => {
                let chunks = STREAM_CHUNKS.iter().map(|c| Ok::<_, std::io::Error>(c.to_vec()));
                builder.body(reqwest::Body::wrap_stream(futures::stream::iter(chunks)))
            }
        };
        builder = match req.explicit {
            Some(Permission::Allow) => builder.allow_failover(),
            Some(Permission::Deny) => builder.deny_failover(),
            Some(Permission::Defer) => builder.with_extension(Permission::Defer),
            None => builder,
        };
        if !req.excluded.is_empty() {
            builder = builder.exclude_endpoints(req.excluded.iter().map(String::as_str));
        }
        if let Some(p) = &req.preferred {
            builder = builder.prefer_endpoint(p.as_str());
        }
        let sent = tokio::time::timeout(Duration::from_secs(20), builder.send()).await;
        let Ok(result) = sent else { return Err(TestCaseError::fail(format!("request {number} hung"))) };

        let outcome = match result {
            Ok(resp) => {
                let served_by = resp.extensions().get::<ServedBy>().map(|s| index_of(&s.0));
                let status = resp.status().as_u16();
                let body = resp.text().await.unwrap_or_else(|e| format!("<body error: {e}>"));
                match &expected.outcome {
                    Outcome::Response { endpoint, hit, status: s } => {
                        prop_assert_eq!(served_by, Some(*endpoint), "ServedBy of request {}", number);
                        prop_assert_eq!(&body, &body_text(*endpoint, *hit, *s), "body of request {}", number);
                        Outcome::Response { endpoint: *endpoint, hit: *hit, status }
                    }
                    _ => Outcome::Unknown(format!("unexpected response {status} from {served_by:?}: {body}")),
                }
            }
            Err(err) => classify(&err),
        };
        let attempts: Vec<usize> = log
            .take()
            .iter()
            .map(|url| {
                (0..MAX_ENDPOINTS)
                    .find(|&i| url.ends_with(&path(i)) && url.starts_with("http://127.0.0.1:"))
                    .unwrap_or(usize::MAX)
            })
            .collect();
        let observed = Observed {
            asked: std::mem::take(&mut *lock(&probe.asked)),
            policy_calls: probe.policy_calls.load(Ordering::SeqCst),
            attempts,
            events: std::mem::take(&mut *lock(&probe.events)),
            outcome,
        };
        let expected = Observed { events: without_hits(&expected.events), ..expected };
        prop_assert_eq!(&observed, &expected, "request {} of {:#?}", number, case);

        // What reached the servers: one request per attempt at a live endpoint, to the
        // endpoint's complete URL, with the whole body every time.
        for (i, server) in pool.servers.iter().enumerate().take(case.endpoints.len()) {
            let received = server.take_log();
            let want = observed.attempts.iter().filter(|&&a| a == i).count();
            let live = matches!(case.endpoints[i], Behaviour::Up(_));
            prop_assert_eq!(received.len(), if live { want } else { 0 }, "requests at e{}", i);
            for r in &received {
                prop_assert_eq!(&r.target, &path(i));
                // hyper sends no body for a GET whose stream has no known length.
                let want = if req.body == BodyKind::Stream && !req.post {
                    vec![]
                } else {
                    request_body(req.body, number)
                };
                prop_assert_eq!(&r.body, &want, "body at e{}", i);
            }
        }
        for i in 0..case.endpoints.len() {
            prop_assert_eq!(
                failover.is_cooling_down(&id(i)),
                model.is_cooling(i),
                "cooldown of e{} after request {}",
                i,
                number
            );
        }
    }
    Ok(())
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
}

#[test]
fn middleware_matches_the_reference_model() {
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let pool = rt.block_on(Pool::start());
    let config =
        Config { cases: cases(), failure_persistence: None, max_shrink_iters: 2048, ..Config::default() };
    let mut runner = TestRunner::new(config);
    let coverage = Coverage::default();
    let result = runner.run(&case(), |case| rt.block_on(run_case(&pool, &case, &coverage)));
    if let Err(err) = result {
        panic!("{err}");
    }
    if cases() >= 64 {
        let coverage = lock(&coverage);
        assert!(coverage.values().all(|&n| n > 0), "a path of the rules was never taken: {coverage:#?}");
    }
}

//! `FailoverBuilder::monitor`: a paired health source's eligibility is advice (a reserve, not a
//! wall), `eth_blockNumber` answers are judged against the best known head, and every judged
//! attempt is evidence told back to the source (feature `jsonrpc`: heads are read by the
//! JSON-RPC classifier).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use failnext::jsonrpc::JsonRpcClassifier;
use failnext::{EndpointId, Head, HealthSource, LatencyFeed, Observation, RequestBuilderExt, ServedBy};
use reqwest_middleware::ClientWithMiddleware;
use serde_json::json;
use wiremock::matchers::any;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::*;

/// A source whose answers the test sets, recording what failnext tells it.
#[derive(Default)]
struct Fake {
    ruled_out: Mutex<Vec<&'static str>>,
    never: Mutex<Vec<&'static str>>,
    head: Mutex<Option<Head>>,
    observed: Mutex<Vec<(String, Observation)>>,
    checks: Mutex<Vec<String>>,
    paired: Mutex<Option<LatencyFeed>>,
}

impl HealthSource for Fake {
    fn eligible(&self, id: &EndpointId) -> bool {
        !self.ruled_out.lock().unwrap().contains(&id.as_str())
    }
    fn never(&self, id: &EndpointId) -> bool {
        self.never.lock().unwrap().contains(&id.as_str())
    }
    fn head(&self) -> Option<Head> {
        *self.head.lock().unwrap()
    }
    fn pair(&self, feed: LatencyFeed) {
        *self.paired.lock().unwrap() = Some(feed);
    }
    fn observe(&self, id: &EndpointId, observation: Observation) {
        self.observed.lock().unwrap().push((id.to_string(), observation));
    }
    fn check_now(&self, id: &EndpointId) {
        self.checks.lock().unwrap().push(id.to_string());
    }
}

impl Fake {
    fn ruling_out(ids: &[&'static str]) -> Arc<Fake> {
        let fake = Fake::default();
        *fake.ruled_out.lock().unwrap() = ids.to_vec();
        Arc::new(fake)
    }
    fn observed(&self) -> Vec<(String, Observation)> {
        self.observed.lock().unwrap().clone()
    }
    fn checks(&self) -> Vec<String> {
        self.checks.lock().unwrap().clone()
    }
}

/// A provider answering every call with `status` and `body`.
async fn provider(status: u16, body: serde_json::Value) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(any()).respond_with(ResponseTemplate::new(status).set_body_json(body)).mount(&server).await;
    server
}

/// A provider whose head is `n`.
async fn at_block(n: u64) -> MockServer {
    provider(200, json!({"jsonrpc": "2.0", "id": 1, "result": format!("{n:#x}")})).await
}

/// Paused-time safe: no attempt timeout and no pool, so the clock moves only when a test
/// advances it.
fn paired(servers: &[(&str, &MockServer)], source: Arc<Fake>) -> ClientWithMiddleware {
    let failover = builder(servers.iter().map(|(id, s)| (*id, format!("{}/rpc", s.uri()))))
        .classifier(JsonRpcClassifier::new())
        .cooldown(failnext::Cooldown::disabled())
        .no_attempt_timeout()
        .monitor(source)
        .build()
        .unwrap();
    let http = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    reqwest_middleware::ClientBuilder::new(http).with(failover).build()
}

async fn call(
    client: &ClientWithMiddleware,
    method: &str,
) -> Result<reqwest::Response, reqwest_middleware::Error> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": []});
    client
        .post("http://127.0.0.1:9/")
        .header("content-type", "application/json")
        .body(body.to_string())
        .allow_failover()
        .send()
        .await
}

fn served_by(resp: &reqwest::Response) -> String {
    resp.extensions().get::<ServedBy>().unwrap().0.to_string()
}

#[tokio::test]
async fn an_endpoint_the_monitor_rules_out_is_tried_once_every_admitted_one_has_failed() {
    let (a, b, c) = (provider(503, json!({})).await, at_block(7).await, provider(503, json!({})).await);
    let source = Fake::ruling_out(&["b"]);
    let client = paired(&[("a", &a), ("b", &b), ("c", &c)], source.clone());
    let resp = call(&client, "eth_call").await.unwrap();
    assert_eq!(served_by(&resp), "b", "the reserve answers after a and c failed");
    assert_eq!(
        (a.received_requests().await.unwrap().len(), c.received_requests().await.unwrap().len()),
        (1, 1)
    );
    let told: Vec<(String, bool)> = source.observed().into_iter().map(|(id, o)| (id, o.is_bad())).collect();
    assert_eq!(told, [("a".into(), true), ("c".into(), true), ("b".into(), false)]);
}

#[tokio::test]
async fn a_monitor_that_admits_no_endpoint_still_reaches_its_reserve() {
    let (a, b) = (at_block(7).await, at_block(7).await);
    let client = paired(&[("a", &a), ("b", &b)], Fake::ruling_out(&["a", "b"]));
    let resp = call(&client, "eth_call").await.unwrap();
    assert_eq!(served_by(&resp), "a");
}

#[tokio::test]
async fn a_write_reaches_one_provider_even_through_the_reserve() {
    let (a, b) = (provider(503, json!({})).await, at_block(7).await);
    let client = paired(&[("a", &a), ("b", &b)], Fake::ruling_out(&["b"]));
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "eth_sendRawTransaction", "params": ["0x00"]});
    let resp =
        client.post("http://127.0.0.1:9/").body(body.to_string()).deny_failover().send().await.unwrap();
    assert_eq!(resp.status(), 503);
    assert_eq!(b.received_requests().await.unwrap().len(), 0);
}

#[tokio::test]
async fn the_plain_eligibility_hook_still_rules_an_endpoint_out_entirely() {
    let (a, b) = (provider(503, json!({})).await, at_block(7).await);
    let failover = builder([("a", format!("{}/rpc", a.uri())), ("b", format!("{}/rpc", b.uri()))])
        .eligible(|id: &EndpointId| id.as_str() != "b")
        .monitor(Fake::ruling_out(&[]))
        .build()
        .unwrap();
    let resp = call(&client(failover), "eth_call").await.unwrap();
    assert_eq!(resp.status(), 503);
    assert_eq!(b.received_requests().await.unwrap().len(), 0);
}

#[tokio::test]
async fn a_block_number_below_the_best_known_head_fails_over_and_asks_for_a_check() {
    let (behind, current) = (at_block(90).await, at_block(100).await);
    let source = Fake::ruling_out(&[]);
    *source.head.lock().unwrap() = Some(Head::new(100, tokio::time::Instant::now()).tolerance(3));
    let client = paired(&[("behind", &behind), ("current", &current)], source.clone());
    let resp = call(&client, "eth_blockNumber").await.unwrap();
    assert_eq!(served_by(&resp), "current");
    assert_eq!(
        source.observed(),
        [
            ("behind".into(), Observation::Behind { head: 90, floor: 97 }),
            ("current".into(), Observation::Answered { head: Some(100) })
        ]
    );
    assert_eq!(source.checks(), ["behind"]);
}

#[tokio::test]
async fn a_block_number_within_the_tolerance_is_an_answer() {
    let (close, current) = (at_block(97).await, at_block(100).await);
    let source = Fake::ruling_out(&[]);
    *source.head.lock().unwrap() = Some(Head::new(100, tokio::time::Instant::now()).tolerance(3));
    let client = paired(&[("close", &close), ("current", &current)], source.clone());
    assert_eq!(served_by(&call(&client, "eth_blockNumber").await.unwrap()), "close");
}

#[tokio::test(start_paused = true)]
async fn a_block_number_above_the_plausible_head_fails_over_as_implausible() {
    let (ahead, current) = (at_block(1_100).await, at_block(101).await);
    let source = Fake::ruling_out(&[]);
    let head = Head::new(100, tokio::time::Instant::now()).block_time(Duration::from_secs(12)).tolerance(2);
    *source.head.lock().unwrap() = Some(head);
    // 24 s later two blocks were made, and the limit allows twice as many (a learnt block time
    // may be longer than the chain's): 100 + 4 + 1 + 3 (the tolerance, at least the default).
    tokio::time::advance(Duration::from_secs(24)).await;
    let client = paired(&[("ahead", &ahead), ("current", &current)], source.clone());
    assert_eq!(served_by(&call(&client, "eth_blockNumber").await.unwrap()), "current");
    assert_eq!(source.observed()[0], ("ahead".into(), Observation::Implausible { head: 1_100, limit: 108 }));
}

#[tokio::test]
async fn the_highest_head_seen_in_answers_raises_the_best_known_head() {
    let (first, second) = (at_block(100).await, at_block(90).await);
    let source = Fake::ruling_out(&[]);
    let client = paired(&[("first", &first), ("second", &second)], source.clone());
    assert_eq!(served_by(&call(&client, "eth_blockNumber").await.unwrap()), "first");
    // The first endpoint is excluded now: the second answers 10 below what was seen.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "eth_blockNumber", "params": []});
    let resp = client
        .post("http://127.0.0.1:9/")
        .body(body.to_string())
        .allow_failover()
        .exclude_endpoints(["first"])
        .send()
        .await
        .unwrap();
    assert_eq!(served_by(&resp), "second", "nothing better: the flagged answer is returned");
    assert_eq!(source.observed()[1], ("second".into(), Observation::Behind { head: 90, floor: 97 }));
}

#[tokio::test]
async fn a_quantity_that_is_not_a_head_is_not_judged_as_one() {
    let (low, other) = (at_block(1).await, at_block(100).await);
    let source = Fake::ruling_out(&[]);
    *source.head.lock().unwrap() = Some(Head::new(100, tokio::time::Instant::now()));
    let client = paired(&[("low", &low), ("other", &other)], source.clone());
    assert_eq!(served_by(&call(&client, "eth_getBalance").await.unwrap()), "low");
    assert_eq!(source.observed(), [("low".into(), Observation::Answered { head: None })]);
}

#[tokio::test]
async fn pairing_hands_the_source_a_latency_feed_of_the_failover() {
    let a = at_block(1).await;
    let source = Fake::ruling_out(&[]);
    let failover = builder([("a", format!("{}/rpc", a.uri()))]).monitor(source.clone()).build().unwrap();
    let feed = source.paired.lock().unwrap().clone().expect("paired at build");
    assert!(feed.observe("a", Duration::from_millis(5)));
    drop(failover);
    assert!(!feed.observe("a", Duration::from_millis(5)), "the feed does not keep the failover alive");
}

#[tokio::test]
async fn an_endpoint_the_monitor_says_can_never_serve_is_not_even_a_reserve() {
    let (a, other_chain) = (provider(503, json!({})).await, at_block(7).await);
    let source = Fake::ruling_out(&["other_chain"]);
    *source.never.lock().unwrap() = vec!["other_chain"];
    let client = paired(&[("a", &a), ("other_chain", &other_chain)], source);
    let resp = call(&client, "eth_call").await.unwrap();
    assert_eq!(resp.status(), 503, "nothing better than the failure: the other chain is never asked");
    assert_eq!(other_chain.received_requests().await.unwrap().len(), 0);
}

/// A source that admits every provider and learns, once `a` fails, that `b` is on another
/// chain (its probe of `b` ended while the read was out at `a`).
#[derive(Default)]
struct LearnsWhileReading(Mutex<bool>);

impl HealthSource for LearnsWhileReading {
    fn eligible(&self, _: &EndpointId) -> bool {
        true
    }
    fn never(&self, id: &EndpointId) -> bool {
        id.as_str() == "b" && *self.0.lock().unwrap()
    }
    fn observe(&self, id: &EndpointId, observation: Observation) {
        if id.as_str() == "a" && observation.is_bad() {
            *self.0.lock().unwrap() = true;
        }
    }
}

#[tokio::test]
async fn a_provider_found_on_another_chain_while_a_read_is_out_is_not_its_next_attempt() {
    let (a, b, c) = (provider(503, json!({})).await, at_block(7).await, at_block(7).await);
    let failover = builder([("a", &a), ("b", &b), ("c", &c)].map(|(id, s)| (id, format!("{}/rpc", s.uri()))))
        .classifier(JsonRpcClassifier::new())
        .no_attempt_timeout()
        .monitor(Arc::new(LearnsWhileReading::default()))
        .build()
        .unwrap();
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new()).with(failover).build();
    let resp = call(&client, "eth_call").await.unwrap();
    assert_eq!(served_by(&resp), "c", "b was admitted when the read began, on another chain at its turn");
    assert_eq!(b.received_requests().await.unwrap().len(), 0);
}

/// Two servers, in this order, paired with a source that rules none out, every read hedged
/// after 20 ms.
fn hedged(servers: [(&str, &MockServer); 2]) -> (Arc<Fake>, reqwest_middleware::ClientWithMiddleware) {
    let source = Fake::ruling_out(&[]);
    let failover = builder(servers.map(|(id, server)| (id, format!("{}/rpc", server.uri()))))
        .no_attempt_timeout()
        .hedge(failnext::Hedge::after(Duration::from_millis(20)))
        .monitor(source.clone())
        .build()
        .unwrap();
    let http = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    (source, reqwest_middleware::ClientBuilder::new(http).with(failover).build())
}

#[tokio::test(start_paused = true)]
async fn a_first_attempt_outrun_by_its_hedge_is_told_to_the_monitor() {
    let (slow, fast) = (MockServer::start().await, at_block(7).await);
    Mock::given(any())
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(5)))
        .mount(&slow)
        .await;
    let (source, client) = hedged([("slow", &slow), ("fast", &fast)]);
    let resp = call(&client, "eth_call").await.unwrap();
    assert_eq!(served_by(&resp), "fast");
    let observed = source.observed();
    assert!(
        observed.iter().any(|(id, o)| id == "slow" && matches!(o, Observation::Outrun { .. }) && o.is_bad()),
        "{observed:?}"
    );
    assert!(source.checks().is_empty(), "the monitor decides whether to probe: {:?}", source.checks());
}

#[tokio::test(start_paused = true)]
async fn a_hedge_that_loses_to_the_first_attempt_tells_the_monitor_nothing() {
    let (first, slow) = (MockServer::start().await, MockServer::start().await);
    let block = serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": "0x7"});
    Mock::given(any())
        .respond_with(ResponseTemplate::new(200).set_body_json(block).set_delay(Duration::from_millis(30)))
        .mount(&first)
        .await;
    Mock::given(any())
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(5)))
        .mount(&slow)
        .await;
    let (source, client) = hedged([("first", &first), ("slow", &slow)]);
    let resp = call(&client, "eth_call").await.unwrap();
    assert_eq!(served_by(&resp), "first");
    let observed = source.observed();
    assert!(
        !observed.iter().any(|(id, _)| id == "slow"),
        "the hedge ran 10 ms, less than the answer: {observed:?}"
    );
}

/// An admitted endpoint `admitted` answering block 7 after `delay`, and a reserve (ruled out
/// by the source) answering at once, hedged after 20 ms, with no attempt timeout: the client
/// and the two servers (kept alive by the caller: a dropped one would close the attempt).
async fn admitted_and_reserve(delay: Duration) -> (ClientWithMiddleware, MockServer, MockServer) {
    let (admitted, reserve) = (MockServer::start().await, at_block(7).await);
    Mock::given(any())
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"jsonrpc": "2.0", "id": 1, "result": "0x7"}))
                .set_delay(delay),
        )
        .mount(&admitted)
        .await;
    let failover = builder([
        ("admitted", format!("{}/rpc", admitted.uri())),
        ("reserve", format!("{}/rpc", reserve.uri())),
    ])
    .no_attempt_timeout()
    .hedge(failnext::Hedge::after(Duration::from_millis(20)))
    .monitor(Fake::ruling_out(&["reserve"]))
    .build()
    .unwrap();
    let http = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    (reqwest_middleware::ClientBuilder::new(http).with(failover).build(), admitted, reserve)
}

#[tokio::test]
async fn a_slow_admitted_endpoint_is_never_hedged_with_a_reserve() {
    let (client, _admitted, reserve) = admitted_and_reserve(Duration::from_millis(200)).await;
    let resp = call(&client, "eth_call").await.unwrap();
    assert_eq!(served_by(&resp), "admitted", "the admitted endpoint answers, late");
    assert_eq!(reserve.received_requests().await.unwrap().len(), 0, "the reserve was not raced against it");
}

#[tokio::test]
async fn an_admitted_attempt_out_long_enough_to_look_hung_is_raced_by_the_reserve() {
    let (client, _admitted, reserve) = admitted_and_reserve(Duration::from_secs(30)).await;
    let started = std::time::Instant::now();
    let resp = call(&client, "eth_call").await.unwrap();
    assert_eq!(served_by(&resp), "reserve", "the reserve answers while the admitted one hangs");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "not the hung attempt's 30 s: {:?}",
        started.elapsed()
    );
    assert_eq!(reserve.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn paired_latency_ordering_does_not_explore_unless_asked() {
    let (fast, slow) = (at_block(1).await, MockServer::start().await);
    Mock::given(any())
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"jsonrpc": "2.0", "id": 1, "result": "0x1"}))
                .set_delay(Duration::from_millis(30)),
        )
        .mount(&slow)
        .await;
    let source = Fake::ruling_out(&[]);
    let failover =
        builder([("slow", format!("{}/rpc", slow.uri())), ("fast", format!("{}/rpc", fast.uri()))])
            .latency_ordering(failnext::LatencyOrdering::new(Duration::from_millis(5)))
            .monitor(source.clone())
            .build()
            .unwrap();
    // The monitor's probes measured both: the fast one is first for every read.
    let feed = source.paired.lock().unwrap().clone().unwrap();
    feed.observe("slow", Duration::from_millis(30));
    feed.observe("fast", Duration::from_millis(1));
    let client = client(failover);
    for _ in 0..40 {
        assert_eq!(served_by(&call(&client, "eth_call").await.unwrap()), "fast");
    }
    assert_eq!(
        slow.received_requests().await.unwrap().len(),
        0,
        "no read sent first to the slow one to measure it"
    );
}

/// A scope that knows `behind`'s head below its floor (as the alloy transport's monotonic reads
/// know a monitor's old head), and `lacking`'s lack of a method.
struct Known {
    behind: &'static str,
    lacking: &'static str,
}

impl failnext::Scope for Known {
    fn unfit(&self, endpoint: &EndpointId) -> Option<failnext::Unfit> {
        if endpoint.as_str() == self.behind {
            Some(failnext::Unfit::BelowFloor { head: Some(90), floor: 100 })
        } else if endpoint.as_str() == self.lacking {
            Some(failnext::Unfit::Lacks("the method".into()))
        } else {
            None
        }
    }
}

#[tokio::test]
async fn a_read_skips_no_provider_for_an_old_head_below_the_floor_it_tries_it_last() {
    let (down, behind, lacking) = (provider(503, json!({})).await, at_block(100).await, at_block(100).await);
    let client =
        paired(&[("behind", &behind), ("down", &down), ("lacking", &lacking)], Fake::ruling_out(&[]));
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "eth_call", "params": []});
    let resp = client
        .post("http://127.0.0.1:9/")
        .header("content-type", "application/json")
        .body(body.to_string())
        .allow_failover()
        .with_extension(failnext::RequestScope::new(Known { behind: "behind", lacking: "lacking" }))
        .send()
        .await
        .unwrap();
    // Its known head was old: it went behind "down", and its answer came when "down" failed.
    assert_eq!(served_by(&resp), "behind");
    assert_eq!(down.received_requests().await.unwrap().len(), 1);
    // What it lacks rules a provider out for good.
    assert!(lacking.received_requests().await.unwrap().is_empty());
}

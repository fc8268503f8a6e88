//! Catalogue §I: retained (fallback) responses, C98-C106.
//!
//! "Body closed" in the Go cases maps to "dropped": a Rust response that failnext does not
//! return is dropped with its body, so these tests pin which response (status, body and
//! `ServedBy`) the caller receives. C104 (context cancellation beats a retained response) maps
//! to dropping the request future: the caller then gets nothing, and the single `Result` event
//! says `Cancelled`, not the retained response.

use std::time::Duration;

use failnext::{Cooldown, ServedBy};
use reqwest::Response;

use crate::support::events::*;
use crate::support::*;
use failnext_loopback::{Action, Reply, Server, refused_url};

const BOUND: Duration = Duration::from_secs(20);

/// Status, `ServedBy` and body of the response the caller got.
async fn received(resp: Response) -> (u16, String, String) {
    let status = resp.status().as_u16();
    let served_by = resp.extensions().get::<ServedBy>().map(|s| s.0.to_string()).unwrap_or_default();
    let body = resp.text().await.expect("the returned body is readable");
    (status, served_by, body)
}

fn first_body(status: u16) -> String {
    format!("status {status} from call 0")
}

// C98
#[tokio::test]
async fn trigger_response_is_superseded_by_a_later_success() {
    let (unavailable, healthy) = (status(503).await, status(200).await);
    let rec = Recorder::new();
    let failover =
        builder([("e1", unavailable.url()), ("e2", healthy.url())]).on_event(rec.hook()).build().unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(received(resp).await, (200, "e2".into(), first_body(200)));
    assert_eq!(rec.shapes(), [attempt("e1", 1, 503), attempt("e2", 2, 200), result("e2", 200)]);
}

// C99
#[tokio::test]
async fn retained_503_survives_later_connect_error() {
    let unavailable = status(503).await;
    let rec = Recorder::new();
    let failover = builder([("e1", unavailable.url()), ("e2", refused_url("/rpc"))])
        .on_event(rec.hook())
        .build()
        .unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(received(resp).await, (503, "e1".into(), first_body(503)));
    assert_eq!(rec.shapes(), [attempt("e1", 1, 503), attempt_err("e2", 2), result("e1", 503)]);
}

// C99, C102: a closed or reset connection after a trigger response leaves the response.
#[tokio::test]
async fn retained_503_survives_later_closed_or_reset_connection() {
    for behaviour in [Action::Close, Action::Reset] {
        let unavailable = status(503).await;
        let broken = Server::always(behaviour.clone()).await;
        let rec = Recorder::new();
        let failover = builder([("e1", unavailable.url()), ("e2", broken.url("/rpc"))])
            .on_event(rec.hook())
            .build()
            .unwrap();
        let resp = client(failover).get("http://127.0.0.1:9/").send().await.unwrap();
        assert_eq!(received(resp).await, (503, "e1".into(), first_body(503)), "{behaviour:?}");
        assert_eq!(
            rec.shapes(),
            [attempt("e1", 1, 503), attempt_err("e2", 2), result("e1", 503)],
            "{behaviour:?}"
        );
        assert_eq!(broken.requests(), 1, "{behaviour:?}");
    }
}

// C100
#[tokio::test]
async fn later_http_response_outranks_an_earlier_transport_error() {
    let unavailable = status(503).await;
    let failover = builder([("e1", refused_url("/rpc")), ("e2", unavailable.url())]).build().unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(received(resp).await, (503, "e2".into(), first_body(503)));
}

// C101
#[tokio::test]
async fn newer_trigger_response_replaces_the_older_one() {
    let (first, second) = (status(503).await, status(504).await);
    let failover = builder([("e1", first.url()), ("e2", second.url())]).build().unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(received(resp).await, (504, "e2".into(), first_body(504)));
}

// C102
#[tokio::test]
async fn latest_trigger_response_survives_a_later_transport_error() {
    let (first, second) = (status(503).await, status(504).await);
    let closing = Server::always(Action::Close).await;
    let rec = Recorder::new();
    let failover = builder([("e1", first.url()), ("e2", second.url()), ("e3", closing.url("/rpc"))])
        .on_event(rec.hook())
        .build()
        .unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(received(resp).await, (504, "e2".into(), first_body(504)));
    assert_eq!(
        rec.shapes(),
        [attempt("e1", 1, 503), attempt("e2", 2, 504), attempt_err("e3", 3), result("e2", 504)]
    );
}

// C103
#[tokio::test]
async fn exhaustion_returns_the_latest_trigger_response() {
    let (a, b, c) = (status(503).await, status(502).await, status(504).await);
    let failover = builder([("e1", a.url()), ("e2", b.url()), ("e3", c.url())]).build().unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(received(resp).await, (504, "e3".into(), first_body(504)));
    assert_eq!((a.hits(), b.hits(), c.hits()), (1, 1, 1));
}

// C105
#[tokio::test]
async fn newer_non_trigger_response_of_any_status_replaces_the_retained_one() {
    for code in [500, 404, 429] {
        let (unavailable, other) = (status(503).await, status(code).await);
        let failover = builder([("e1", unavailable.url()), ("e2", other.url())]).build().unwrap();
        let resp = client(failover).get("http://127.0.0.1:9/").send().await.unwrap();
        assert_eq!(received(resp).await, (code, "e2".into(), first_body(code)));
    }
}

// C106
#[tokio::test]
async fn result_for_a_retained_response_names_the_endpoint_that_produced_it() {
    let unavailable = status(503).await;
    let rec = Recorder::new();
    let failover =
        builder([("e1", refused_url("/rpc")), ("e2", unavailable.url()), ("e3", refused_url("/rpc"))])
            .on_event(rec.hook())
            .build()
            .unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(received(resp).await, (503, "e2".into(), first_body(503)));
    assert_eq!(
        rec.shapes(),
        [attempt_err("e1", 1), attempt("e2", 2, 503), attempt_err("e3", 3), result("e2", 503)]
    );
}

// §4.2: an added trigger status is retained and returned like a built-in one.
#[tokio::test]
async fn retained_additional_trigger_response_is_returned_when_the_rest_fail() {
    let limited = status(429).await;
    let failover = builder([("e1", limited.url()), ("e2", refused_url("/rpc"))])
        .additional_trigger_status_codes([http::StatusCode::TOO_MANY_REQUESTS])
        .build()
        .unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(received(resp).await, (429, "e1".into(), first_body(429)));
}

// §4.2: a trigger response is returned itself when continuation is denied.
#[tokio::test]
async fn trigger_response_is_returned_when_continuation_is_denied() {
    let (unavailable, healthy) = (status(503).await, status(200).await);
    let failover = builder([("e1", unavailable.url()), ("e2", healthy.url())]).build().unwrap();
    let resp = client(failover).post("http://127.0.0.1:9/").body("{}").send().await.unwrap();
    assert_eq!(received(resp).await, (503, "e1".into(), first_body(503)));
    assert_eq!(healthy.hits(), 0);
}

// C104 mapped: dropping the request future while a later attempt runs discards the retained
// response; the only Result event is `Cancelled`, and the interrupted attempt records nothing.
#[tokio::test]
async fn dropping_the_request_discards_the_retained_response() {
    let unavailable = status(503).await;
    let hanging = Server::always(Action::Hang).await;
    let rec = Recorder::new();
    let failover = builder([("e1", unavailable.url()), ("e2", hanging.url("/rpc"))])
        .cooldown(Cooldown::new(1, Duration::from_secs(3600)))
        .on_event(rec.hook())
        .build()
        .unwrap();
    let client = client(failover.clone());
    let send = client.get("http://127.0.0.1:9/").send();
    tokio::time::timeout(BOUND, async {
        tokio::select! {
            res = send => panic!("the hanging endpoint answered: {res:?}"),
            _ = hanging.wait_for_requests(1) => {}
        }
    })
    .await
    .expect("the second attempt reached the hanging endpoint");
    assert_eq!(rec.shapes(), [attempt("e1", 1, 503), Ev::Result(None, Res::Cancelled)]);
    assert!(failover.is_cooling_down("e1"), "the completed 503 attempt was recorded");
    assert!(!failover.is_cooling_down("e2"), "the interrupted attempt recorded nothing");
}

/// A keep-alive server answering every request with a small 503 whose body follows its
/// headers 2 ms later (separate writes, as a proxy in front of a provider often sends them).
async fn keep_alive_503() -> Server {
    let reply = Reply::new(503).length(2048).pause(Duration::from_millis(2)).send(vec![b'x'; 2048]);
    Server::always(Action::Reply(reply)).await
}

// Beyond the reference: a superseded trigger response with a small body is read to its end
// (in the background when the body is still on its way), so its keep-alive connection goes
// back to the pool instead of closing.
#[tokio::test]
async fn superseded_503_keeps_its_connection_alive() {
    let primary = keep_alive_503().await;
    let healthy = status(200).await;
    let failover = builder([("e1", primary.url("/rpc")), ("e2", healthy.url())])
        .cooldown(Cooldown::disabled())
        .build()
        .unwrap();
    let client = client(failover);
    for _ in 0..20 {
        let resp =
            tokio::time::timeout(BOUND, client.get("http://127.0.0.1:9/").send()).await.unwrap().unwrap();
        assert_eq!(resp.status(), 200);
        // The body arrives 2 ms after the headers and is drained on a spawned task; let that
        // finish so the next request finds the connection idle in the pool. (Without draining,
        // every request opens a new connection, whatever the pause.)
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    let opened = primary.connections();
    assert!(opened <= 2, "20 requests opened {opened} connections to the 503 endpoint");
}

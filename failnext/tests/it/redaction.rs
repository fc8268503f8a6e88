//! Endpoint URLs carry API keys in their path, query and userinfo; none may appear in any
//! Debug or Display failnext produces: errors (whole `source()` chain), attempts, events, the
//! middleware, its builder, endpoints and configuration errors. Userinfo is sent as HTTP Basic
//! `Authorization` to its endpoint, and removed from the URL.

use std::error::Error as StdError;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use failnext::{
    AttemptOutcome, ConfigError, Cooldown, Endpoint, EndpointId, Event, Failover, RequestBuilderExt,
    ResultOutcome,
};
use http::Extensions;
use http::header::AUTHORIZATION;
use reqwest::{Request, Response};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware, Middleware, Next};

use crate::support::*;
use failnext_loopback::{Action, Server, refused_url};

const SECRETS: [&str; 5] = ["KEYUSER", "KEYPASS", "KEYPATH", "KEYQUERY", "KEYFRAG"];
const BOUND: Duration = Duration::from_secs(20);

/// `http://127.0.0.1:PORT/rpc` with keys added in userinfo, path and query.
fn keyed(url: &str) -> String {
    let authority = url.trim_start_matches("http://").split('/').next().unwrap();
    format!("http://KEYUSER:KEYPASS@{authority}/v3/KEYPATH?key=KEYQUERY")
}

fn assert_clean(what: &str, text: &str) {
    for secret in SECRETS {
        assert!(!text.contains(secret), "{what} shows {secret}: {text}");
    }
}

/// Display and Debug of `err` and of every error in its source chain.
fn chain_text(err: &(dyn StdError + 'static)) -> String {
    let mut out = String::new();
    let mut next = Some(err);
    while let Some(e) = next {
        out.push_str(&format!("{e}\n{e:?}\n"));
        next = e.source();
    }
    out
}

/// Everything printable about an error a request returned.
fn error_text(err: &reqwest_middleware::Error) -> String {
    let mut out = chain_text(err);
    if let Some(fe) = failnext::Error::from_middleware(err) {
        out.push_str(&chain_text(fe));
        for attempt in fe.attempts() {
            out.push_str(&format!("{attempt:?}\n"));
            out.push_str(&chain_text(attempt.error()));
        }
    }
    out
}

/// Every event's Debug text, plus the full chain of the errors events carry.
#[derive(Clone, Default)]
struct EventText(Arc<Mutex<Vec<String>>>);

impl EventText {
    fn hook(&self) -> impl Fn(&Event<'_>) + Send + Sync + 'static {
        let out = self.0.clone();
        move |ev: &Event<'_>| {
            let mut text = format!("{ev:?}\n");
            match ev {
                Event::Attempt { outcome: AttemptOutcome::Error(e), .. } => text.push_str(&chain_text(*e)),
                Event::Result { outcome: ResultOutcome::Error(e), .. } => text.push_str(&chain_text(*e)),
                _ => {}
            }
            out.lock().unwrap().push(text);
        }
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

fn assert_events_clean(events: &EventText, path: &str) {
    let events = events.take();
    assert!(!events.is_empty(), "{path}: no events were recorded");
    for text in events {
        assert_clean(&format!("{path}: event"), &text);
    }
}

fn assert_config_clean(failover: &Failover) {
    assert_clean("Failover", &format!("{failover:?}"));
    for ep in failover.endpoints() {
        assert_clean("Endpoint", &format!("{ep:?} {ep} {:?}", ep.id()));
        assert!(ep.url().contains("KEYQUERY"), "the verbatim URL is still available");
    }
}

#[tokio::test]
async fn no_key_appears_in_any_output_on_any_failure_path() {
    let unavailable = status(503).await;
    let closing = Server::always(Action::Close).await;
    let resetting = Server::always(Action::Reset).await;
    let refused = refused_url("/rpc");
    let events = EventText::default();
    let builder = builder([
        ("refused", keyed(&refused)),
        ("closed", keyed(&closing.url("/rpc"))),
        ("reset", keyed(&resetting.url("/rpc"))),
        ("busy", keyed(&unavailable.url())),
    ])
    .cooldown(Cooldown::new(1, Duration::from_secs(3600)))
    .on_event(events.hook());
    assert_clean("FailoverBuilder", &format!("{builder:?}"));
    let failover = builder.build().unwrap();
    assert_config_clean(&failover);
    let c = client(failover.clone());
    let send = |req: reqwest_middleware::RequestBuilder| async move {
        tokio::time::timeout(BOUND, req.send()).await.expect("bounded")
    };

    // Refused, closed and reset connections: a failover error with three attempts.
    let err = send(c.get("http://127.0.0.1:9/").exclude_endpoints(["busy"])).await.unwrap_err();
    assert_eq!(failnext_error(&err).attempts().len(), 3);
    assert_clean("failover error", &error_text(&err));
    assert_events_clean(&events, "transport failures");
    assert_eq!((closing.requests(), resetting.requests()), (1, 1));

    // Everything cooling now except `busy`: skips, then a retained 503.
    let resp = send(c.get("http://127.0.0.1:9/")).await.unwrap();
    assert_eq!(resp.status(), 503);
    assert_events_clean(&events, "skips and a retained 503");

    // All cooling: no usable endpoint.
    let err = send(c.get("http://127.0.0.1:9/")).await.unwrap_err();
    assert!(failnext_error(&err).is_no_usable_endpoint());
    assert_clean("no usable endpoint", &error_text(&err));
    assert_events_clean(&events, "no usable endpoint");

    // Unknown endpoints.
    for req in [
        c.get("http://127.0.0.1:9/").prefer_endpoint("missing"),
        c.get("http://127.0.0.1:9/").exclude_endpoints(["x"]),
    ] {
        let err = send(req).await.unwrap_err();
        assert!(failnext_error(&err).is_unknown_endpoint());
        assert_clean("unknown endpoint", &error_text(&err));
    }
    assert_events_clean(&events, "unknown endpoint");
    assert_config_clean(&failover);
}

#[tokio::test]
async fn no_key_appears_when_a_retained_503_survives_a_later_failure() {
    let unavailable = status(503).await;
    let events = EventText::default();
    let failover = builder([("busy", keyed(&unavailable.url())), ("refused", keyed(&refused_url("/rpc")))])
        .on_event(events.hook())
        .build()
        .unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(resp.status(), 503);
    assert_events_clean(&events, "retained 503");
}

#[tokio::test]
async fn no_key_appears_in_a_single_denied_attempt_error() {
    let events = EventText::default();
    let closed = Server::always(Action::Close).await;
    let failover = builder([("closed", keyed(&closed.url("/rpc")))]).on_event(events.hook()).build().unwrap();
    let err = client(failover).post("http://127.0.0.1:9/").body("{}").send().await.unwrap_err();
    assert_clean("single attempt error", &error_text(&err));
    assert_events_clean(&events, "single attempt");
}

// A streaming body cannot be sent twice: the `NotReplayable` stop prints no key either.
#[tokio::test]
async fn no_key_appears_when_a_streaming_body_stops_failover() {
    let healthy = status(200).await;
    let events = EventText::default();
    let failover = builder([("refused", keyed(&refused_url("/rpc"))), ("ok", keyed(&healthy.url()))])
        .on_event(events.hook())
        .build()
        .unwrap();
    let body = reqwest::Body::wrap_stream(futures::stream::iter([Ok::<_, std::io::Error>("{}")]));
    let req = client(failover).post("http://127.0.0.1:9/").body(body).allow_failover();
    let err = tokio::time::timeout(BOUND, req.send()).await.expect("bounded").unwrap_err();
    assert_clean("not replayable error", &error_text(&err));
    let texts = events.take();
    assert!(texts.iter().any(|t| t.starts_with("NotReplayable")), "{texts:?}");
    for text in texts {
        assert_clean("not replayable event", &text);
    }
    assert_eq!(healthy.hits(), 0);
}

// The attempt timeout path, under paused time (the hanging server runs on this runtime).
#[tokio::test(start_paused = true)]
async fn no_key_appears_in_a_timeout_error() {
    let hanging = Server::always(Action::Hang).await;
    let events = EventText::default();
    let failover = builder([("hang", keyed(&hanging.url("/rpc")))])
        .attempt_timeout(Duration::from_secs(5))
        .on_event(events.hook())
        .build()
        .unwrap();
    let http = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let c = ClientBuilder::new(http).with(failover).build();
    let sent = tokio::time::timeout(Duration::from_secs(3600), c.get("http://127.0.0.1:9/").send()).await;
    let err = sent.expect("bounded by the attempt timeout").unwrap_err();
    assert!(failnext_error(&err).attempts()[0].error().is_timeout());
    assert_clean("timeout error", &error_text(&err));
    assert_events_clean(&events, "timeout");
}

fn config_error(url: &str) -> (ConfigError, String) {
    let builder = Failover::builder([Endpoint::new("ok", "http://127.0.0.1:1/"), Endpoint::new("bad", url)]);
    let builder_text = format!("{builder:?}");
    (builder.build().expect_err(url), builder_text)
}

#[test]
fn configuration_errors_never_show_a_url_key() {
    for url in [
        "ftp://KEYUSER:KEYPASS@127.0.0.1/KEYPATH?key=KEYQUERY",
        "http://KEYUSER:KEYPASS@127.0.0.1/KEYPATH?key=KEYQUERY#KEYFRAG",
        " http://KEYUSER:KEYPASS@127.0.0.1/KEYPATH?key=KEYQUERY",
        "http://KEYUSER:KEYPASS@127.0.0.1/KEYPATH?key=KEYQUERY\n",
        "http://KEYUSER:KEYPASS@127.0.0.1/KEYPATH%zz?key=KEYQUERY",
        "http://KEYUSER:KEYPASS@/KEYPATH?key=KEYQUERY",
        "https:KEYUSER:KEYPASS@127.0.0.1/KEYPATH?key=KEYQUERY",
        "https:///KEYUSER:KEYPASS@127.0.0.1/KEYPATH?key=KEYQUERY",
        "http://KEYUSER:KEYPASS@127.0.0.1:99999/KEYPATH?key=KEYQUERY",
        "http://KEYUSER:KEYPASS@[::1/KEYPATH?key=KEYQUERY",
        "//KEYUSER:KEYPASS@127.0.0.1/KEYPATH?key=KEYQUERY",
        "127.0.0.1/KEYPATH?key=KEYQUERY",
        "mailto:KEYUSER@example.com?subject=KEYQUERY",
    ] {
        let (err, builder_text) = config_error(url);
        assert_eq!(err.endpoint_id().map(EndpointId::as_str), Some("bad"), "{url:?}: {err}");
        assert_clean(&format!("config error for {url:?}"), &chain_text(&err));
        assert_clean(&format!("FailoverBuilder for {url:?}"), &builder_text);
        let ep = Endpoint::new("bad", url);
        assert_clean(&format!("Endpoint for {url:?}"), &format!("{ep:?} {ep}"));
        let err = failnext::validate_endpoints(&[ep]).unwrap_err();
        assert_clean(&format!("validate_endpoints for {url:?}"), &chain_text(&err));
    }
}

// Without a scheme, the text before the first ':' *is* the scheme and is named by the error;
// the password, path and query after it stay hidden.
#[test]
fn schemeless_userinfo_hides_everything_after_the_scheme() {
    let (err, _) = config_error("KEYUSER:KEYPASS@127.0.0.1/KEYPATH?key=KEYQUERY");
    let text = chain_text(&err);
    for secret in ["KEYPASS", "KEYPATH", "KEYQUERY"] {
        assert!(!text.contains(secret), "shows {secret}: {text}");
    }
}

/// An attempt's URL username and password, and its `Authorization` header.
type Seen = (String, Option<String>, Option<String>);

/// Records, per attempt, the URL's userinfo and the `Authorization` header.
#[derive(Clone, Default)]
struct Spy(Arc<Mutex<Vec<Seen>>>);

#[async_trait::async_trait]
impl Middleware for Spy {
    async fn handle(
        &self,
        req: Request,
        ext: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        let auth = req.headers().get(AUTHORIZATION).map(|v| v.to_str().unwrap().to_owned());
        // The credentials are marked sensitive, so printing the headers does not show them.
        if let Some(auth) = &auth {
            let printed = format!("{:?}", req.headers());
            assert!(!printed.contains(auth.trim_start_matches("Basic ")), "{printed}");
        }
        let userinfo = (req.url().username().to_owned(), req.url().password().map(str::to_owned));
        self.0.lock().unwrap().push((userinfo.0, userinfo.1, auth));
        next.run(req, ext).await
    }
}

fn spied_client(failover: Failover) -> (ClientWithMiddleware, Spy) {
    let spy = Spy::default();
    (ClientBuilder::new(reqwest::Client::new()).with(failover).with(spy.clone()).build(), spy)
}

fn authorization(requests: &[wiremock::Request]) -> Vec<Option<String>> {
    requests.iter().map(|r| r.headers.get(AUTHORIZATION).map(|v| v.to_str().unwrap().to_owned())).collect()
}

#[tokio::test]
async fn endpoint_userinfo_is_sent_as_basic_authorization_to_that_endpoint_only() {
    let (plain, secured, last) = (status(503).await, status(503).await, status(200).await);
    let failover =
        builder([("plain", plain.url()), ("secured", keyed(&secured.url())), ("last", last.url())])
            .build()
            .unwrap();
    let (c, spy) = spied_client(failover);
    let resp = c.get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.url().username(), "");
    let basic = Some("Basic S0VZVVNFUjpLRVlQQVNT".to_owned());
    assert_eq!(authorization(&plain.requests().await), [None]);
    assert_eq!(authorization(&secured.requests().await), std::slice::from_ref(&basic));
    assert_eq!(authorization(&last.requests().await), [None]);
    // The URL each attempt is sent to carries no userinfo; the secured one keeps its path/query.
    let seen = spy.0.lock().unwrap().clone();
    assert_eq!(
        seen,
        [(String::new(), None, None), (String::new(), None, basic), (String::new(), None, None)]
    );
    let secured_urls: Vec<_> = secured
        .requests()
        .await
        .iter()
        .map(|r| (r.url.path().to_owned(), r.url.query().map(str::to_owned)))
        .collect();
    assert_eq!(secured_urls, [("/v3/KEYPATH".to_owned(), Some("key=KEYQUERY".to_owned()))]);
}

#[tokio::test]
async fn userinfo_is_percent_decoded_and_a_missing_password_is_empty() {
    let server = status(200).await;
    let authority = server.server.address().to_string();
    for (url, expected) in [
        (format!("http://us%40er:p%3Ass@{authority}/rpc"), "Basic dXNAZXI6cDpzcw=="),
        (format!("http://KEYUSER@{authority}/rpc"), "Basic S0VZVVNFUjo="),
    ] {
        let failover = builder([("only", url)]).build().unwrap();
        client(failover).get("http://127.0.0.1:9/").send().await.unwrap();
        let requests = server.requests().await;
        let got = requests.last().and_then(|r| r.headers.get(AUTHORIZATION)).map(|v| v.to_str().unwrap());
        assert_eq!(got, Some(expected));
    }
}

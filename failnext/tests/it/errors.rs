//! Catalogue §1 (configuration validation, V1-V21) and §J (errors, C107-C114).
//!
//! Not applicable in Rust: V11/V12 (negative threshold or duration: `u32` and `Duration` cannot
//! be negative), V13 (`Cooldown::disabled()` carries no threshold or duration to conflict
//! with), the `failnext:` message prefix (Rust errors are lowercase phrases without a crate
//! prefix), V20's default base transport (the reqwest client is the base), C109 (no GetBody
//! factory, so no replay error), C111's context errors and C113 (no context, no nil request).

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use failnext::{ConfigError, Cooldown, Endpoint, EndpointId, Failover, RequestBuilderExt, ServedBy};
use http::{Extensions, StatusCode};
use reqwest::{Request, Response};
use reqwest_middleware::{ClientBuilder, Middleware, Next};

use crate::support::*;
use failnext_loopback::{Action, Server, refused_url};

const OK_URL: &str = "http://127.0.0.1:8545/rpc";

/// Builds a `Failover` over `(id, url)` pairs and returns the configuration error.
fn config_error(endpoints: &[(&str, &str)]) -> ConfigError {
    Failover::builder(endpoints.iter().map(|&(id, url)| Endpoint::new(id, url)))
        .build()
        .expect_err("configuration was accepted")
}

fn builds(endpoints: &[(&str, &str)]) -> bool {
    Failover::builder(endpoints.iter().map(|&(id, url)| Endpoint::new(id, url))).build().is_ok()
}

fn served_by(resp: &Response) -> Option<&str> {
    resp.extensions().get::<ServedBy>().map(|s| s.0.as_str())
}

fn ids(err: &failnext::Error) -> Vec<&str> {
    err.attempts().iter().map(|a| a.endpoint().as_str()).collect()
}

// ===== §1 configuration validation =====

// V1
#[test]
fn empty_endpoint_list_is_rejected() {
    let err = config_error(&[]);
    assert!(err.to_string().contains("no endpoints"), "{err}");
    assert_eq!((err.endpoint_id(), err.endpoint_index()), (None, None));
}

// V2
#[test]
fn empty_id_is_rejected_naming_its_index() {
    let err = config_error(&[("a", OK_URL), ("", OK_URL)]);
    assert_eq!(err.endpoint_index(), Some(1));
    assert_eq!(err.endpoint_id(), None);
    let msg = err.to_string();
    assert!(msg.contains("index 1") && msg.contains("empty id"), "{msg}");
}

// V3
#[test]
fn duplicate_id_is_rejected_quoting_it() {
    let err = config_error(&[("same", OK_URL), ("other", OK_URL), ("same", OK_URL)]);
    assert_eq!(err.endpoint_index(), Some(2));
    assert_eq!(err.endpoint_id().map(EndpointId::as_str), Some("same"));
    assert!(err.to_string().contains("\"same\""), "{err}");
}

// V3
#[test]
fn ids_compare_case_sensitively() {
    assert!(builds(&[("A", OK_URL), ("a", OK_URL)]));
}

/// Every rejected URL names the endpoint (id and index) and the rule it breaks.
fn assert_url_rejected(url: &str, rule: &str) {
    let err = config_error(&[("good", OK_URL), ("bad", url)]);
    assert_eq!(err.endpoint_id().map(EndpointId::as_str), Some("bad"), "{url:?}: {err}");
    assert_eq!(err.endpoint_index(), Some(1), "{url:?}: {err}");
    let msg = err.to_string();
    assert!(msg.contains("\"bad\""), "{url:?}: {msg}");
    assert!(msg.contains(rule), "{url:?}: expected rule {rule:?} in {msg:?}");
}

// V4
#[test]
fn unparsable_url_is_rejected_naming_id_and_rule() {
    assert_url_rejected("https://host/rpc%zz", "malformed percent escape");
    assert_url_rejected(" https://host", "whitespace");
    assert_url_rejected("https://host ", "whitespace");
    assert_url_rejected("https://ho\nst/", "control character");
    assert_url_rejected("http://h:99999/", "does not parse");
    assert_url_rejected("http://[::1/rpc", "does not parse");
}

// V4: the parser's error is reachable as the source.
#[test]
fn parse_failure_keeps_the_parser_error_as_source() {
    let err = config_error(&[("bad", "http://h:99999/")]);
    let source = err.source().expect("parser error as source");
    assert!(source.downcast_ref::<url::ParseError>().is_some(), "{source:?}");
}

// V4, V5
#[test]
fn relative_url_is_rejected_as_not_absolute() {
    for url in ["://", "u1.test/rpc", "//host/rpc"] {
        assert_url_rejected(url, "not absolute");
    }
}

// V6
#[test]
fn non_http_scheme_is_rejected_without_quoting_it() {
    // The scheme is not quoted: in `KEY:secret@host/rpc` (no scheme written) it is the key.
    assert_url_rejected("ftp://u1.test/rpc", "scheme is not http or https");
    assert_url_rejected("ws://host", "scheme is not http or https");
    let err = config_error(&[("bad", "KEY:secret@host/rpc")]);
    assert!(!format!("{err} {err:?}").to_lowercase().contains("key"), "{err:?}");
}

// V6
#[test]
fn scheme_is_accepted_in_any_case() {
    assert!(builds(&[("a", "HTTPS://Host.Example/rpc"), ("b", "Http://127.0.0.1:1/")]));
}

// V7, including the Go leniency `https://:8080/rpc`, which the Rust port rejects.
#[test]
fn url_without_host_is_rejected() {
    for url in ["https:///rpc", "https:host", "https://:8080/rpc"] {
        assert_url_rejected(url, "no host");
    }
    assert!(builds(&[("v6", "http://[::1]:8545")]));
}

// V8
#[test]
fn hash_anywhere_in_url_is_rejected_even_an_empty_fragment() {
    for url in ["https://u1.test/rpc#fragment", "https://h/p#", "https://h/p?#"] {
        assert_url_rejected(url, "'#'");
    }
}

// V9
#[test]
fn query_userinfo_and_path_are_accepted() {
    assert!(builds(&[
        ("query", "https://p.test/rpc?key=abc"),
        ("userinfo", "https://user:pass@h/rpc"),
        ("path", "http://127.0.0.1:8545/a/b/c"),
        ("space", "http://127.0.0.1:8545/a b"),
    ]));
}

// Validation order: all checks of one endpoint before the next, id checks before the URL.
#[test]
fn each_endpoint_is_checked_fully_before_the_next() {
    let err = config_error(&[("a", "ftp://x/"), ("a", OK_URL)]);
    assert_eq!(err.endpoint_index(), Some(0), "{err}");
    assert!(err.to_string().contains("scheme"), "{err}");

    let err = config_error(&[("a", OK_URL), ("", "ftp://x/")]);
    assert!(err.to_string().contains("empty id"), "{err}");

    let err = config_error(&[("a", OK_URL), ("a", "ftp://x/")]);
    assert!(err.to_string().contains("repeats"), "{err}");
}

// Validation order: endpoints, then cooldown, then the attempt timeout.
#[test]
fn endpoint_errors_come_before_cooldown_and_timeout_errors() {
    let err = Failover::builder([Endpoint::new("bad", "ftp://x/")])
        .cooldown(Cooldown::new(0, Duration::ZERO))
        .attempt_timeout(Duration::ZERO)
        .build()
        .unwrap_err();
    assert_eq!(err.endpoint_id().map(EndpointId::as_str), Some("bad"));

    let ok = || Failover::builder([Endpoint::new("a", OK_URL)]);
    let err = ok().cooldown(Cooldown::new(0, Duration::ZERO)).attempt_timeout(Duration::ZERO).build();
    assert!(err.unwrap_err().to_string().contains("threshold"));
    let err = ok().cooldown(Cooldown::new(1, Duration::ZERO)).attempt_timeout(Duration::ZERO).build();
    assert!(err.unwrap_err().to_string().contains("duration"));
}

// V10
#[tokio::test]
async fn same_url_under_two_ids_gives_two_independent_endpoints() {
    let server = Scripted::start(&[503, 200]).await;
    let failover = builder([("primary", server.url()), ("backup", server.url())])
        .cooldown(Cooldown::new(1, Duration::from_secs(3600)))
        .build()
        .unwrap();
    let resp = client(failover.clone()).get(server.url()).send().await.unwrap();
    assert_eq!((resp.status().as_u16(), served_by(&resp)), (200, Some("backup")));
    assert!(failover.is_cooling_down("primary"));
    assert!(!failover.is_cooling_down("backup"));
    assert_eq!(server.hits(), 2);
}

// V11, V12 mapped: a zero threshold or duration is a build error naming the rule.
#[test]
fn zero_cooldown_threshold_or_duration_is_rejected() {
    let build = |cooldown| Failover::builder([Endpoint::new("a", OK_URL)]).cooldown(cooldown).build();
    let err = build(Cooldown::new(0, Duration::from_secs(30))).unwrap_err();
    assert!(err.to_string().contains("threshold"), "{err}");
    assert_eq!((err.endpoint_id(), err.endpoint_index()), (None, None));
    let err = build(Cooldown::new(3, Duration::ZERO)).unwrap_err();
    assert!(err.to_string().contains("duration"), "{err}");
    assert!(build(Cooldown::disabled()).is_ok());
}

// V14 mapped: the zero value of the Go config is enabled, 3 failures, 30 seconds. Since 0.2 the
// default is the adaptive breaker: it opens after 3 failures and stays open at most 30 s.
#[test]
fn default_cooldown_is_three_failures_for_thirty_seconds() {
    assert_eq!(Cooldown::default(), Cooldown::adaptive());
    assert_ne!(Cooldown::default(), Cooldown::new(3, Duration::from_secs(30)));
    assert_eq!(Cooldown::default().threshold(), Some(3));
    assert_eq!(Cooldown::default().duration(), Some(Duration::from_secs(30)));
    assert!(Cooldown::disabled().is_disabled());
    assert_eq!((Cooldown::disabled().threshold(), Cooldown::disabled().duration()), (None, None));
}

// V15
#[test]
fn threshold_one_and_tiny_durations_are_legal() {
    for cooldown in [
        Cooldown::new(1, Duration::from_secs(3600)),
        Cooldown::new(1, Duration::from_nanos(1)),
        Cooldown::new(u32::MAX, Duration::MAX),
    ] {
        assert!(Failover::builder([Endpoint::new("a", OK_URL)]).cooldown(cooldown).build().is_ok());
    }
}

// Rust mapping of the Go attempt deadline: zero is a build error.
#[test]
fn zero_attempt_timeout_is_rejected() {
    let err = Failover::builder([Endpoint::new("a", OK_URL)]).attempt_timeout(Duration::ZERO).build();
    let err = err.unwrap_err();
    assert!(err.to_string().contains("attempt timeout"), "{err}");
    let ok = Failover::builder([Endpoint::new("a", OK_URL)]).attempt_timeout(Duration::from_nanos(1)).build();
    assert!(ok.is_ok());
}

// V16 mapped: codes are `StatusCode`, so out-of-range codes cannot be configured at all; the
// bounds of the range are accepted.
#[test]
fn out_of_range_status_codes_cannot_exist_and_bounds_are_accepted() {
    for code in [0, 99, 1000] {
        assert!(StatusCode::from_u16(code).is_err(), "{code}");
    }
    let bounds = [StatusCode::from_u16(100).unwrap(), StatusCode::from_u16(999).unwrap()];
    let built =
        Failover::builder([Endpoint::new("a", OK_URL)]).additional_trigger_status_codes(bounds).build();
    assert!(built.is_ok());
}

// V17
#[test]
fn duplicate_and_builtin_additional_codes_are_accepted() {
    let codes =
        [StatusCode::INTERNAL_SERVER_ERROR, StatusCode::INTERNAL_SERVER_ERROR, StatusCode::BAD_GATEWAY];
    let built =
        Failover::builder([Endpoint::new("a", OK_URL)]).additional_trigger_status_codes(codes).build();
    assert!(built.is_ok());
}

// V18
#[tokio::test]
async fn success_code_may_be_added_as_a_trigger() {
    let (first, second) = (status(200).await, status(204).await);
    let failover = builder([("e1", first.url()), ("e2", second.url())])
        .additional_trigger_status_codes([StatusCode::OK])
        .build()
        .unwrap();
    let resp = client(failover).get(first.url()).send().await.unwrap();
    assert_eq!((resp.status().as_u16(), served_by(&resp)), (204, Some("e2")));
    assert_eq!((first.hits(), second.hits()), (1, 1));
}

// V19: the builder takes its own copy; changing the caller's list afterwards changes nothing.
#[test]
fn endpoint_list_is_copied_at_configuration() {
    let mut list = [Endpoint::new("a", "http://127.0.0.1:1/a"), Endpoint::new("b", "http://127.0.0.1:2/b")];
    let failover = Failover::builder(list.iter().cloned()).build().unwrap();
    list[0] = Endpoint::new("changed", "http://127.0.0.1:3/changed");
    list.reverse();
    let configured: Vec<_> = failover.endpoints().iter().map(|e| (e.id().as_str(), e.url())).collect();
    assert_eq!(configured, [("a", "http://127.0.0.1:1/a"), ("b", "http://127.0.0.1:2/b")]);
}

// V20: callbacks are held, not copied: state they capture is read live on every request.
#[tokio::test]
async fn callbacks_are_held_not_snapshotted() {
    let (first, second) = (status(200).await, status(200).await);
    let first_allowed = Arc::new(AtomicBool::new(true));
    let flag = first_allowed.clone();
    let failover = builder([("e1", first.url()), ("e2", second.url())])
        .eligible(move |id: &EndpointId| id.as_str() != "e1" || flag.load(Ordering::SeqCst))
        .build()
        .unwrap();
    let client = client(failover);
    let resp = client.get(first.url()).send().await.unwrap();
    assert_eq!(served_by(&resp), Some("e1"));
    first_allowed.store(false, Ordering::SeqCst);
    let resp = client.get(first.url()).send().await.unwrap();
    assert_eq!(served_by(&resp), Some("e2"));
}

// V21
#[test]
fn configured_url_is_kept_verbatim() {
    let raw = "HTTP://user:pa%20ss@127.0.0.1:8545/a b/rpc?key=abc&x=%41";
    let failover = Failover::builder([Endpoint::new("a", raw)]).build().unwrap();
    assert_eq!(failover.endpoints()[0].url(), raw);
    assert_eq!(failover.endpoints()[0].id().as_str(), "a");
}

// `validate_endpoints` applies the same rules and returns the parsed destinations in order.
#[test]
fn validate_endpoints_applies_the_build_rules() {
    let urls = failnext::validate_endpoints(&[
        Endpoint::new("a", "http://user:pw@127.0.0.1:1/a?k=v"),
        Endpoint::new("b", "https://h.example/b"),
    ])
    .unwrap();
    let urls: Vec<_> = urls.iter().map(url::Url::as_str).collect();
    // As configured, userinfo included: a probing crate sends it as Basic credentials.
    assert_eq!(urls, ["http://user:pw@127.0.0.1:1/a?k=v", "https://h.example/b"]);
    let err = failnext::validate_endpoints(&[Endpoint::new("a", OK_URL), Endpoint::new("a", OK_URL)]);
    let err = err.unwrap_err();
    assert_eq!((err.endpoint_index(), err.endpoint_id().map(EndpointId::as_str)), (Some(1), Some("a")));
}

// ===== §J errors =====

// C107
#[tokio::test]
async fn failover_error_lists_failed_attempts_in_order() {
    let refused = refused_url("/rpc");
    let closing = Server::always(Action::Close).await;
    let resetting = Server::always(Action::Reset).await;
    let failover = builder([("e1", refused), ("e2", closing.url("/rpc")), ("e3", resetting.url("/rpc"))])
        .build()
        .unwrap();
    let err = client(failover).get("http://127.0.0.1:9/").send().await.unwrap_err();
    let fe = failnext_error(&err);
    assert!(fe.is_failover() && !fe.is_no_usable_endpoint() && !fe.is_unknown_endpoint());
    assert_eq!(ids(fe), ["e1", "e2", "e3"]);
    assert!(fe.attempts()[0].error().is_connect(), "{:?}", fe.attempts()[0]);
    assert!(!fe.attempts()[1].error().is_connect(), "{:?}", fe.attempts()[1]);
    assert_eq!((closing.requests(), resetting.requests()), (1, 1));
}

// C107, C108: `source()` is the very error of the last attempt.
#[tokio::test]
async fn source_is_the_last_attempts_error() {
    let closing = Server::always(Action::Close).await;
    let refused = refused_url("/rpc");
    let failover = builder([("first", closing.url("/rpc")), ("second", refused)]).build().unwrap();
    let err = client(failover).get("http://127.0.0.1:9/").send().await.unwrap_err();
    let fe = failnext_error(&err);
    let last = fe.attempts().last().unwrap().error();
    let source = fe.source().expect("terminal cause");
    assert!(std::ptr::addr_eq(source, last), "source is not the last attempt's error");
    let cause = source.downcast_ref::<reqwest_middleware::Error>().expect("a reqwest_middleware error");
    assert!(cause.is_connect(), "the terminal cause is the second (refused) failure: {cause:?}");
    assert!(!fe.attempts()[0].error().is_connect());
}

// C61, §4.1: one failed attempt is still reported as a failover error naming the endpoint.
#[tokio::test]
async fn single_failed_attempt_is_still_a_failover_error() {
    let failover = builder([("only", refused_url("/rpc"))]).build().unwrap();
    let err = client(failover).get("http://127.0.0.1:9/").send().await.unwrap_err();
    let fe = failnext_error(&err);
    assert!(fe.is_failover());
    assert_eq!(ids(fe), ["only"]);
    assert!(fe.source().is_some());
}

// C45, §4.1: a denied continuation reports its one failed attempt the same way.
#[tokio::test]
async fn denied_continuation_reports_its_one_failed_attempt() {
    let healthy = status(200).await;
    let failover = builder([("e1", refused_url("/rpc")), ("e2", healthy.url())]).build().unwrap();
    let err = client(failover).post("http://127.0.0.1:9/").body("{}").send().await.unwrap_err();
    let fe = failnext_error(&err);
    assert_eq!(ids(fe), ["e1"]);
    assert_eq!(healthy.hits(), 0);
}

// C110: an HTTP response is never turned into an error, and a failover error only holds
// attempts that produced no response.
#[tokio::test]
async fn failover_error_only_arises_without_an_http_response() {
    let unavailable = status(503).await;
    let failover =
        builder([("e1", refused_url("/rpc")), ("e2", unavailable.url()), ("e3", refused_url("/rpc"))])
            .build()
            .unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!((resp.status().as_u16(), served_by(&resp)), (503, Some("e2")));

    let closing = Server::always(Action::Close).await;
    let failover = builder([("e1", refused_url("/rpc")), ("e2", closing.url("/rpc"))]).build().unwrap();
    let err = client(failover).get("http://127.0.0.1:9/").send().await.unwrap_err();
    let fe = failnext_error(&err);
    assert!(!fe.attempts().is_empty());
    assert!(fe.attempts().iter().all(|a| a.error().status().is_none()));
}

// C111 mapped: nothing attempted is its own error, distinct from a failover error.
#[tokio::test]
async fn no_usable_endpoint_is_not_a_failover_error() {
    let healthy = status(200).await;
    let failover = builder([("e1", healthy.url()), ("e2", healthy.url())]).build().unwrap();
    let err = client(failover).get(healthy.url()).exclude_endpoints(["e1", "e2"]).send().await.unwrap_err();
    let fe = failnext_error(&err);
    assert!(fe.is_no_usable_endpoint());
    assert!(!fe.is_failover() && !fe.is_unknown_endpoint());
    assert!(fe.attempts().is_empty() && fe.source().is_none() && fe.unknown_endpoint().is_none());
    assert!(fe.to_string().contains("no usable endpoint"), "{fe}");
    assert_eq!(healthy.hits(), 0);
}

// C111 mapped, C19, C31: an unknown id is its own error and names the id.
#[tokio::test]
async fn unknown_endpoint_error_names_the_id() {
    let healthy = status(200).await;
    let failover = builder([("e1", healthy.url())]).build().unwrap();
    let client = client(failover);
    for req in [
        client.get(healthy.url()).prefer_endpoint("missing"),
        client.get(healthy.url()).exclude_endpoints(["missing"]),
    ] {
        let err = req.send().await.unwrap_err();
        let fe = failnext_error(&err);
        assert!(fe.is_unknown_endpoint());
        assert!(!fe.is_failover() && !fe.is_no_usable_endpoint());
        assert_eq!(fe.unknown_endpoint().map(EndpointId::as_str), Some("missing"));
        assert!(fe.to_string().contains("\"missing\""), "{fe}");
        assert!(fe.attempts().is_empty() && fe.source().is_none());
    }
    assert_eq!(healthy.hits(), 0);
}

// C112 mapped: the text says failover ended without a response, counts the attempts and names
// the last endpoint; the cause is not repeated (it is the source).
#[tokio::test]
async fn failover_error_display_counts_attempts_and_names_the_last_endpoint() {
    let closing = Server::always(Action::Close).await;
    let failover = builder([("e1", refused_url("/rpc")), ("e2", closing.url("/rpc"))]).build().unwrap();
    let err = client(failover).get("http://127.0.0.1:9/").send().await.unwrap_err();
    let fe = failnext_error(&err);
    let text = fe.to_string();
    assert!(text.contains("without an http response"), "{text}");
    assert!(text.contains("2 failed attempts") && text.contains("\"e2\""), "{text}");
    assert!(!text.contains(&fe.source().unwrap().to_string()), "{text}");

    let failover = builder([("solo", refused_url("/rpc"))]).build().unwrap();
    let err = client(failover).get("http://127.0.0.1:9/").send().await.unwrap_err();
    let text = failnext_error(&err).to_string();
    assert!(text.contains("1 failed attempt,") && text.contains("\"solo\""), "{text}");
}

// Issue 28: a failed request's error says, beside its attempts, why each provider it sent
// nothing to was passed over.
#[tokio::test]
async fn a_failed_requests_error_names_why_each_untried_provider_was_passed_over() {
    use failnext::{NotTried, TraceStep};
    let healthy = status(200).await;
    let endpoints = [
        ("a", refused_url("/rpc")),
        ("b", refused_url("/rpc")),
        ("c", refused_url("/rpc")),
        ("d", healthy.url()),
    ];
    let failover = builder(endpoints).cooldown(Cooldown::new(1, Duration::from_secs(30))).build().unwrap();
    let client = client(failover);
    let passed = |fe: &failnext::Error| -> Vec<(String, TraceStep)> {
        fe.passed_over().iter().map(|p| (p.endpoint().as_str().to_owned(), p.why().clone())).collect()
    };

    // a and b fail; c and d were excluded by the request.
    let err = client.get(healthy.url()).exclude_endpoints(["c", "d"]).send().await.unwrap_err();
    let fe = failnext_error(&err);
    assert_eq!(ids(fe), ["a", "b"]);
    assert_eq!(passed(fe), [("c".into(), TraceStep::Excluded), ("d".into(), TraceStep::Excluded)]);
    assert!(fe.to_string().contains(r#"passed over: "c": excluded by the request, "d": excluded"#), "{fe}");

    // Now a and b cool down: a request that may not fail over passes them, fails at c, and
    // never reaches d.
    let err = client.get(healthy.url()).deny_failover().send().await.unwrap_err();
    let fe = failnext_error(&err);
    assert_eq!(ids(fe), ["c"]);
    let passed = passed(fe);
    assert!(
        matches!(&passed[..], [(a, TraceStep::Cooling(left_a)), (b, TraceStep::Cooling(_)), (d, TraceStep::NotTried(NotTried::MayNotFailOver))]
            if a == "a" && b == "b" && d == "d" && *left_a > Duration::from_secs(25)),
        "{passed:?}"
    );
    let text = fe.to_string();
    assert!(
        text.contains(r#""a": cooling down for"#)
            && text.contains(r#""d": not tried: the request may not fail over"#),
        "{text}"
    );
    assert_eq!(healthy.hits(), 0);

    // Nothing usable at all: every provider is named, with why.
    let err = client.get(healthy.url()).exclude_endpoints(["a", "b", "c", "d"]).send().await.unwrap_err();
    let fe = failnext_error(&err);
    assert!(fe.is_no_usable_endpoint());
    assert_eq!(fe.passed_over().len(), 4);
    assert!(fe.passed_over().iter().all(|p| *p.why() == TraceStep::Excluded), "{fe}");
}

// The error reaches the caller as `reqwest_middleware::Error::Middleware`.
#[tokio::test]
async fn failnext_errors_are_middleware_errors() {
    let failover = builder([("e1", refused_url("/rpc"))]).build().unwrap();
    let err = client(failover).get("http://127.0.0.1:9/").send().await.unwrap_err();
    assert!(err.is_middleware(), "{err:?}");
    fn assert_error<E: StdError + Send + Sync + 'static>() {}
    assert_error::<failnext::Error>();
    assert_error::<ConfigError>();
}

/// A middleware error type that keeps the inner error as its source.
#[derive(Debug)]
struct Wrapped(reqwest_middleware::Error);

impl fmt::Display for Wrapped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("outer layer failed")
    }
}

impl StdError for Wrapped {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&self.0)
    }
}

/// Wraps every error from the rest of the chain in `Wrapped`.
struct WrapErrors;

#[async_trait::async_trait]
impl Middleware for WrapErrors {
    async fn handle(
        &self,
        req: Request,
        ext: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        next.run(req, ext).await.map_err(|e| reqwest_middleware::Error::middleware(Wrapped(e)))
    }
}

/// Adds anyhow context to every middleware error from the rest of the chain.
struct AddContext;

#[async_trait::async_trait]
impl Middleware for AddContext {
    async fn handle(
        &self,
        req: Request,
        ext: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        next.run(req, ext).await.map_err(|e| match e {
            reqwest_middleware::Error::Middleware(e) => {
                reqwest_middleware::Error::Middleware(e.context("outer context"))
            }
            other => other,
        })
    }
}

// C114
#[tokio::test]
async fn from_middleware_finds_the_error_under_wrapping_middlewares() {
    let closing = Server::always(Action::Close).await;
    let failover =
        builder([("primary", refused_url("/rpc")), ("backup", closing.url("/rpc"))]).build().unwrap();
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(AddContext)
        .with(WrapErrors)
        .with(failover.clone())
        .build();
    let err = client.get("http://127.0.0.1:9/").send().await.unwrap_err();
    let reqwest_middleware::Error::Middleware(outer) = &err else { panic!("{err:?}") };
    assert!(outer.downcast_ref::<failnext::Error>().is_none(), "the error was not wrapped");
    let fe = failnext::Error::from_middleware(&err).expect("failnext error under the wrappers");
    assert_eq!(ids(fe), ["primary", "backup"]);

    let only_wrapped = ClientBuilder::new(reqwest::Client::new()).with(WrapErrors).with(failover).build();
    let err = only_wrapped.get("http://127.0.0.1:9/").send().await.unwrap_err();
    assert_eq!(ids(failnext_error(&err)), ["primary", "backup"]);
}

// `from_middleware` does not claim errors failnext did not produce.
#[tokio::test]
async fn from_middleware_ignores_other_errors() {
    let plain = ClientBuilder::new(reqwest::Client::new()).build();
    let err = plain.get(refused_url("/rpc")).send().await.unwrap_err();
    assert!(failnext::Error::from_middleware(&err).is_none());
}

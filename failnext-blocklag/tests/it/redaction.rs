//! Attribution and secrecy: every failure names its endpoint id, and no part of a key-bearing
//! URL beyond `scheme://host:port` appears in any error or `Debug` output.

use std::error::Error;
use std::fmt::Write as _;
use std::time::Duration;

use failnext::Endpoint;
use failnext_blocklag::{CheckError, Monitor};
use serde_json::Value;
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::*;

/// `url` (an `http://host:port/...` URL) with a password, a key in the path and one in the
/// query.
fn keyed(url: &str) -> String {
    let authority = url.trim_start_matches("http://").split('/').next().unwrap();
    format!("http://user:SECRETPASS@{authority}/v3/SECRETPATH?apikey=SECRETQUERY")
}

/// Display and Debug of `error` and of every error in its source chain.
fn chain_text(error: &(dyn Error + 'static)) -> String {
    let mut text = String::new();
    let mut next = Some(error);
    while let Some(e) = next {
        write!(text, "{e} | {e:?} | ").unwrap();
        next = e.source();
    }
    text
}

fn check_error_text(err: &CheckError) -> String {
    let mut text = chain_text(err);
    for failure in err.failures() {
        text += &chain_text(failure);
        text += &chain_text(failure.error());
    }
    text
}

fn assert_no_secret(text: &str) {
    assert!(!text.contains("SECRET"), "a URL secret leaked: {text}");
    assert!(!text.contains("apikey"), "a URL query leaked: {text}");
}

#[tokio::test]
async fn probe_failures_and_debug_output_never_show_url_secrets() {
    let good = Node::at(100).await;
    let unavailable = Node::at(1).await;
    unavailable.set_failing(true);
    let garbage = Node::replying(|_: &Value| ResponseTemplate::new(200).set_body_string("SECRET? no")).await;
    let hanging = hanging().await;
    let endless = endless().await;
    let endpoints = [
        Endpoint::new("good", keyed(&good.url())),
        Endpoint::new("unavailable", keyed(&unavailable.url())),
        Endpoint::new("garbage", keyed(&garbage.url())),
        Endpoint::new("hanging", keyed(&hanging.url(""))),
        Endpoint::new("endless", keyed(&endless.url(""))),
        Endpoint::new("refused", keyed(&refused_url("/rpc"))),
    ];
    let builder = Monitor::builder(endpoints).max_lag(3).probe_timeout(Duration::from_secs(1));
    let mut text = format!("{builder:?}");
    let monitor = builder.build().unwrap();
    text += &format!("{monitor:?}");

    let err = monitor.check().await.unwrap_err();
    assert_eq!(failed_ids(&err), ["unavailable", "garbage", "hanging", "endless", "refused"]);
    text += &check_error_text(&err);
    let snapshot = monitor.snapshot().unwrap();
    text += &format!("{snapshot:?}{monitor:?}");
    for entry in snapshot.entries() {
        text += &format!("{entry:?}");
        if let Some(error) = entry.error() {
            text += &chain_text(error);
        }
    }
    assert_no_secret(&text);
    assert!(text.contains("127.0.0.1"), "the host may be shown: {text}");
}

#[test]
fn config_errors_never_show_url_secrets() {
    for url in [
        "ftp://user:SECRETPASS@h.example/v3/SECRETPATH?apikey=SECRETQUERY",
        "https://user:SECRETPASS@h.example/v3/SECRETPATH?apikey=SECRETQUERY#frag",
        "https://user:SECRETPASS@h.example/v3/SECRETPATH%zz?apikey=SECRETQUERY",
    ] {
        let builder = Monitor::builder([Endpoint::new("keyed", url)]);
        let mut text = format!("{builder:?}");
        let err = builder.build().unwrap_err();
        text += &chain_text(&err);
        assert_no_secret(&text);
        assert_eq!(err.endpoint_id().map(|id| id.as_str()), Some("keyed"));
    }
}

#[tokio::test]
async fn every_probe_failure_names_its_endpoint_id() {
    let unavailable = Node::at(1).await;
    unavailable.set_failing(true);
    let wrong_chain = Node::at(1).await;
    wrong_chain.set_chain(10);
    let ids = ["refused-one", "unavailable-two", "wrong-chain-three"];
    let urls = [refused_url("/rpc"), unavailable.url(), wrong_chain.url()];
    let monitor = monitor(ids.into_iter().zip(urls)).expected_chain_id(1).build().unwrap();

    let err = monitor.check().await.unwrap_err();
    assert_eq!(failed_ids(&err), ids);
    let message = err.to_string();
    for (failure, id) in err.failures().iter().zip(ids) {
        assert_eq!(failure.endpoint().as_str(), id);
        let named = format!("{} of \"{id}\": ", failure.method());
        assert!(failure.to_string().starts_with(&named), "{failure}");
        assert!(format!("{failure:?}").contains(id));
        assert!(message.contains(&format!("\"{id}\"")), "{message}");
    }
}

#[tokio::test]
async fn userinfo_path_and_query_reach_the_provider_as_configured() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v3/SECRETPATH"))
        .and(query_param("apikey", "SECRETQUERY"))
        .and(header("authorization", "Basic dXNlcjpTRUNSRVRQQVNT"))
        .respond_with(|request: &wiremock::Request| {
            let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
            result_reply(&body, "0x2a")
        })
        .mount(&server)
        .await;
    let monitor = Monitor::builder([Endpoint::new("keyed", keyed(&server.uri()))]).build().unwrap();
    monitor.check().await.unwrap();
    assert_eq!(monitor.snapshot().unwrap().height("keyed"), Some(42));
}

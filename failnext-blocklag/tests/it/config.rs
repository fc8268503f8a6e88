//! Building a monitor: the endpoint rules are failnext's own, the rest is the monitor's.

use std::error::Error as _;
use std::time::Duration;

use failnext::{Endpoint, Failover};
use failnext_blocklag::Monitor;

use crate::support::*;

#[test]
fn empty_endpoint_list_is_rejected_with_failnext_error_as_source() {
    let err = Monitor::builder([]).build().unwrap_err();
    let source = err.source().and_then(|s| s.downcast_ref::<failnext::ConfigError>());
    assert!(source.is_some(), "{err:?}");
}

#[test]
fn duplicate_id_is_rejected_naming_the_endpoint() {
    let err = monitor([("a", "http://127.0.0.1:1".into()), ("a", "http://127.0.0.1:2".into())])
        .build()
        .unwrap_err();
    assert_eq!(err.endpoint_id().map(|id| id.as_str()), Some("a"));
    assert_eq!(err.endpoint_index(), Some(1));
}

#[test]
fn endpoints_are_accepted_and_rejected_exactly_as_failnext_does() {
    let urls = [
        "http://127.0.0.1:8545",
        "https://user:pass@h.example/rpc?key=k",
        "HTTP://Host.Example/rpc",
        "ftp://h.example/rpc",
        "ws://h.example",
        "h.example/rpc",
        "https:///rpc",
        "https://h.example/rpc#frag",
        " https://h.example",
        "https://h.example/%zz",
        "",
    ];
    for url in urls {
        let ours = Monitor::builder([Endpoint::new("e", url)]).build().map(drop).map_err(|e| {
            e.source().and_then(|s| s.downcast_ref::<failnext::ConfigError>()).map(ToString::to_string)
        });
        let theirs =
            Failover::builder([Endpoint::new("e", url)]).build().map(drop).map_err(|e| Some(e.to_string()));
        assert_eq!(ours, theirs, "{url:?}");
    }
    let empty_id = Monitor::builder([Endpoint::new("", "http://127.0.0.1:1")]).build().unwrap_err();
    assert_eq!(empty_id.endpoint_index(), Some(0));
}

#[test]
fn zero_probe_timeout_is_rejected() {
    let err =
        monitor([("a", "http://127.0.0.1:1".into())]).probe_timeout(Duration::ZERO).build().unwrap_err();
    assert_eq!(err.to_string(), "probe timeout must be non-zero");
    assert!(err.source().is_none());
}

#[test]
fn zero_max_lag_is_allowed() {
    assert!(monitor([("a", "http://127.0.0.1:1".into())]).max_lag(0).build().is_ok());
}

#[tokio::test]
async fn a_custom_client_sends_the_probes() {
    let node = Node::at(7).await;
    let client = reqwest::Client::builder().user_agent("blocklag-test/1").build().unwrap();
    let monitor = monitor([("only", node.url())]).client(client).build().unwrap();
    monitor.check().await.unwrap();
    let received = node.received().await;
    assert_eq!(received[0].headers.get("user-agent").unwrap(), "blocklag-test/1");
}

#[tokio::test]
async fn the_monitor_keeps_its_own_copy_of_the_endpoints() {
    let node = Node::at(7).await;
    let mut endpoints = vec![Endpoint::new("only", node.url())];
    let monitor = Monitor::builder(endpoints.clone()).build().unwrap();
    endpoints.clear();
    assert_eq!(monitor.endpoints().len(), 1);
    assert_eq!(monitor.endpoints()[0].id().as_str(), "only");
    monitor.check().await.unwrap();
    assert!(monitor.eligible("only"));
}

#[test]
fn zero_grace_and_zero_max_age_are_rejected_naming_the_option() {
    let a = || monitor([("a", "http://127.0.0.1:1".into())]);
    assert_eq!(a().grace(Duration::ZERO).build().unwrap_err().to_string(), "grace must be non-zero");
    assert_eq!(a().max_age(Duration::ZERO).build().unwrap_err().to_string(), "max age must be non-zero");
    a().grace(Duration::from_nanos(1)).max_age(Duration::from_nanos(1)).fail_closed().build().unwrap();
}

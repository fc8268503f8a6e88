//! Every way a probe answer is rejected. Each bad provider is checked beside a healthy one:
//! the bad one is named and ineligible, the healthy one still publishes.

use std::time::Duration;

use failnext_blocklag::{CheckError, Monitor, ProbeError};
use serde_json::{Value, json};
use wiremock::ResponseTemplate;

use crate::support::*;

/// Checks `bad` beside a healthy provider and returns the error, after asserting that only
/// `bad` failed and that the rest published.
async fn rejected(bad: String) -> CheckError {
    rejected_by(monitor_for(bad, Duration::from_secs(5)).await).await
}

async fn monitor_for(bad: String, probe_timeout: Duration) -> (Monitor, Node) {
    let good = Node::at(100).await;
    let monitor = monitor([("bad", bad), ("good", good.url())])
        .max_lag(1000)
        .probe_timeout(probe_timeout)
        .build()
        .unwrap();
    (monitor, good)
}

async fn rejected_by((monitor, _good): (Monitor, Node)) -> CheckError {
    let err = monitor.check().await.unwrap_err();
    assert!(err.published(), "{err}");
    assert_eq!(failed_ids(&err), ["bad"]);
    assert_eq!(err.failures()[0].method(), "eth_blockNumber");
    assert!(!monitor.eligible("bad"));
    assert!(monitor.eligible("good"));
    assert_eq!(monitor.snapshot().unwrap().height("bad"), None);
    err
}

/// A provider whose answer to every request is `body` (with the request's id where `{id}`
/// appears), with status 200.
async fn answering(body: &'static str) -> Node {
    Node::replying(move |request: &Value| {
        ResponseTemplate::new(200)
            .set_body_raw(body.replace("{id}", &request["id"].to_string()), "application/json")
    })
    .await
}

#[tokio::test]
async fn status_other_than_200_is_rejected() {
    for status in [201, 204, 400, 404, 429, 500, 502, 503] {
        let node = Node::replying(move |request: &Value| {
            let json = json!({ "jsonrpc": "2.0", "id": request["id"], "result": "0x1" });
            ResponseTemplate::new(status).set_body_json(json)
        })
        .await;
        let err = rejected(node.url()).await;
        assert!(matches!(only_error(&err), ProbeError::Status(s) if s.as_u16() == status), "{err}");
    }
}

#[tokio::test]
async fn redirect_is_a_failure_and_is_not_followed() {
    for status in [301, 302, 307, 308] {
        let target = Node::at(500).await;
        let location = target.url();
        let redirecting = Node::replying(move |_: &Value| {
            ResponseTemplate::new(status).insert_header("location", location.as_str())
        })
        .await;
        let err = rejected(redirecting.url()).await;
        assert!(matches!(only_error(&err), ProbeError::Status(s) if s.as_u16() == status), "{err}");
        assert_eq!(target.requests().await, 0, "the redirect target must receive nothing");
    }
}

#[tokio::test]
async fn non_json_body_is_rejected() {
    for body in ["<html>bad gateway</html>", "", "0x64", "{\"jsonrpc\":\"2.0\","] {
        let err = rejected(answering(body).await.url()).await;
        assert!(matches!(only_error(&err), ProbeError::InvalidJson), "{body}: {err}");
    }
}

#[tokio::test]
async fn json_rpc_error_object_is_rejected_with_its_code_and_message() {
    let node = Node::replying(|request: &Value| error_reply(request, -32005, "limit exceeded")).await;
    let err = rejected(node.url()).await;
    match only_error(&err) {
        ProbeError::JsonRpc { code, message } => {
            assert_eq!((*code, message.as_str()), (-32005, "limit exceeded"))
        }
        other => panic!("expected JsonRpc, got {other:?}"),
    }
    assert!(err.to_string().contains("json-rpc error -32005"), "{err}");
}

#[tokio::test]
async fn wrong_id_is_rejected() {
    for body in [
        r#"{"jsonrpc":"2.0","id":999,"result":"0x64"}"#,
        r#"{"jsonrpc":"2.0","id":"{id}","result":"0x64"}"#,
        r#"{"jsonrpc":"2.0","id":null,"result":"0x64"}"#,
        r#"{"jsonrpc":"2.0","result":"0x64"}"#,
    ] {
        let err = rejected(answering(body).await.url()).await;
        assert!(matches!(only_error(&err), ProbeError::IdMismatch), "{body}: {err}");
    }
}

#[tokio::test]
async fn missing_result_is_rejected() {
    let err = rejected(answering(r#"{"jsonrpc":"2.0","id":{id}}"#).await.url()).await;
    assert!(matches!(only_error(&err), ProbeError::NotJsonRpc), "{err}");
}

#[tokio::test]
async fn jsonrpc_member_other_than_2_0_is_rejected() {
    for body in [
        r#"{"jsonrpc":"1.0","id":{id},"result":"0x64"}"#,
        r#"{"jsonrpc":2.0,"id":{id},"result":"0x64"}"#,
        r#"{"id":{id},"result":"0x64"}"#,
        r#"[{"jsonrpc":"2.0","id":{id},"result":"0x64"}]"#,
        r#""0x64""#,
    ] {
        let err = rejected(answering(body).await.url()).await;
        assert!(matches!(only_error(&err), ProbeError::NotJsonRpc), "{body}: {err}");
    }
}

#[tokio::test]
async fn every_non_canonical_quantity_is_rejected() {
    let forms = [
        ("0x", "bare prefix"),
        ("64", "missing prefix"),
        ("0x064", "leading zero"),
        ("0x00", "leading zero on zero"),
        ("-0x64", "sign"),
        ("+0x64", "sign"),
        ("0x-64", "sign after prefix"),
        (" 0x64", "leading whitespace"),
        ("0x64 ", "trailing whitespace"),
        ("0x6 4", "inner whitespace"),
        ("0X64", "upper-case prefix"),
        ("0x6E", "upper-case digit"),
        ("0xzz", "not hex"),
        ("", "empty"),
    ];
    for (form, why) in forms {
        let node = Node::replying(move |request: &Value| result_reply(request, form)).await;
        let err = rejected(node.url()).await;
        assert!(
            matches!(only_error(&err), ProbeError::InvalidQuantity(shown) if shown == form),
            "{form:?} ({why}): {err:?}"
        );
    }
    for (result, shown) in [(json!(100), "100"), (json!(null), "null"), (json!({"n": 1}), "{\"n\":1}")] {
        let node = Node::replying(move |request: &Value| result_reply(request, result.clone())).await;
        let err = rejected(node.url()).await;
        assert!(matches!(only_error(&err), ProbeError::InvalidQuantity(s) if s == shown), "{err:?}");
    }
}

#[tokio::test]
async fn quantity_beyond_u64_is_rejected() {
    for form in ["0x10000000000000000", "0xffffffffffffffff0"] {
        let node = Node::replying(move |request: &Value| result_reply(request, form)).await;
        let err = rejected(node.url()).await;
        assert!(matches!(only_error(&err), ProbeError::InvalidQuantity(_)), "{form}: {err}");
    }
}

#[tokio::test]
async fn canonical_quantities_up_to_u64_max_are_accepted() {
    for (form, height) in [("0x0", 0), ("0x1", 1), ("0xffffffffffffffff", u64::MAX)] {
        let node = Node::replying(move |request: &Value| result_reply(request, form)).await;
        let monitor = monitor([("only", node.url())]).build().unwrap();
        monitor.check().await.unwrap();
        assert_eq!(monitor.snapshot().unwrap().height("only"), Some(height));
    }
}

#[tokio::test]
async fn five_kib_body_is_rejected() {
    let node = Node::replying(|request: &Value| {
        let json = format!(r#"{{"jsonrpc":"2.0","id":{},"result":"0x64"}}"#, request["id"]);
        let padded = format!("{json}{}", " ".repeat(5 * 1024 - json.len()));
        ResponseTemplate::new(200).set_body_raw(padded, "application/json")
    })
    .await;
    let err = rejected(node.url()).await;
    assert!(matches!(only_error(&err), ProbeError::BodyTooLarge), "{err}");
}

#[tokio::test]
async fn body_of_exactly_4_kib_is_accepted() {
    let node = Node::replying(|request: &Value| {
        let json = format!(r#"{{"jsonrpc":"2.0","id":{},"result":"0x64"}}"#, request["id"]);
        let padded = format!("{json}{}", " ".repeat(4096 - json.len()));
        ResponseTemplate::new(200).set_body_raw(padded, "application/json")
    })
    .await;
    let monitor = monitor([("only", node.url())]).build().unwrap();
    monitor.check().await.unwrap();
    assert_eq!(monitor.snapshot().unwrap().height("only"), Some(100));
}

#[tokio::test]
async fn endless_body_is_cut_off_and_its_connection_closed() {
    let endless = endless().await;
    let err = rejected(endless.url("/rpc")).await;
    assert!(matches!(only_error(&err), ProbeError::BodyTooLarge), "{err}");
    // The response was dropped half-read, which closes its connection rather than pooling it.
    wait_until("the client closed the endless connection", || async { endless.abandoned() == 1 }).await;
}

#[tokio::test]
async fn provider_that_never_answers_times_out_and_the_others_publish() {
    let hanging = hanging().await;
    let err = rejected_by(monitor_for(hanging.url("/rpc"), Duration::from_secs(1)).await).await;
    assert!(matches!(only_error(&err), ProbeError::Timeout), "{err}");
    assert!(err.to_string().contains("probe timeout"), "{err}");
    wait_until("the timed-out connection was closed", || async { hanging.abandoned() == 1 }).await;
}

#[tokio::test]
async fn refused_connection_is_a_transport_error_without_url() {
    let err = rejected(refused_url("/rpc")).await;
    match only_error(&err) {
        ProbeError::Transport(e) => {
            assert!(e.url().is_none());
            assert!(e.is_connect());
        }
        other => panic!("expected Transport, got {other:?}"),
    }
    let failure = &err.failures()[0];
    assert_eq!(failure.to_string(), "eth_blockNumber of \"bad\": could not connect");
    assert!(std::error::Error::source(failure).is_some(), "the reqwest error is the source");
}

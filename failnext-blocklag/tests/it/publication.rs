//! The failure table: what each check outcome does to eligibility and what `check()` returns.

use std::sync::Arc;
use std::time::SystemTime;

use failnext_blocklag::ProbeError;
use serde_json::Value;

use crate::support::*;

#[tokio::test]
async fn every_configured_endpoint_is_eligible_before_the_first_publication() {
    let monitor = monitor([("primary", refused_url("/rpc")), ("backup", refused_url("/rpc"))])
        .max_lag(3)
        .build()
        .unwrap();
    assert!(monitor.snapshot().is_none());
    assert!(monitor.eligible("primary"));
    assert!(monitor.eligible("backup"));
    assert!(!monitor.eligible("other"));
}

#[tokio::test]
async fn all_probes_succeeding_publish_and_return_ok() {
    let (a, b, c) = (Node::at(100).await, Node::at(110).await, Node::at(108).await);
    let monitor = monitor([("a", a.url()), ("b", b.url()), ("c", c.url())]).max_lag(3).build().unwrap();
    let before = SystemTime::now();
    monitor.check().await.unwrap();
    let after = SystemTime::now();

    assert!(!monitor.eligible("a"));
    assert!(monitor.eligible("b"));
    assert!(monitor.eligible("c"));
    let snapshot = monitor.snapshot().unwrap();
    assert_eq!(snapshot.highest(), 110);
    assert_eq!(
        (snapshot.height("a"), snapshot.height("b"), snapshot.height("c")),
        (Some(100), Some(110), Some(108))
    );
    assert_eq!((snapshot.lag("a"), snapshot.lag("c")), (Some(10), Some(2)));
    assert_eq!(snapshot.max_lag(), 3);
    assert!(before <= snapshot.taken_at() && snapshot.taken_at() <= after);
    let order: Vec<_> = snapshot.entries().iter().map(|e| e.endpoint().to_string()).collect();
    assert_eq!(order, ["a", "b", "c"]);
    assert!(snapshot.entries().iter().all(|e| e.error().is_none()));
}

#[tokio::test]
async fn some_probes_failing_publish_and_name_the_failed_endpoints() {
    let ok = Node::at(100).await;
    let unavailable = Node::at(200).await;
    unavailable.set_failing(true);
    let monitor =
        monitor([("refused", refused_url("/rpc")), ("ok", ok.url()), ("unavailable", unavailable.url())])
            .build()
            .unwrap();

    let err = monitor.check().await.unwrap_err();
    assert!(err.published());
    assert_eq!(failed_ids(&err), ["refused", "unavailable"]);
    assert!(matches!(err.failures()[0].error(), ProbeError::Transport(_)));
    assert!(matches!(err.failures()[1].error(), ProbeError::Status(s) if s.as_u16() == 503));
    let message = err.to_string();
    assert!(message.contains("\"refused\"") && message.contains("\"unavailable\""), "{message}");

    // The one success is the reference and is eligible; the failures are not.
    assert!(monitor.eligible("ok"));
    assert!(!monitor.eligible("refused"));
    assert!(!monitor.eligible("unavailable"));
    let snapshot = monitor.snapshot().unwrap();
    assert_eq!(snapshot.highest(), 100);
    assert_eq!(snapshot.height("unavailable"), None);
    assert!(matches!(snapshot.entry("unavailable").unwrap().error(), Some(ProbeError::Status(_))));
}

#[tokio::test]
async fn all_probes_failing_keep_the_previous_snapshot() {
    let (a, b) = (Node::at(100).await, Node::at(110).await);
    let monitor = monitor([("a", a.url()), ("b", b.url())]).max_lag(3).build().unwrap();
    monitor.check().await.unwrap();
    let previous = monitor.snapshot().unwrap();

    a.set_failing(true);
    b.set_failing(true);
    let err = monitor.check().await.unwrap_err();
    assert!(!err.published());
    assert_eq!(failed_ids(&err), ["a", "b"]);
    assert!(err.to_string().contains("previous snapshot kept"), "{err}");
    assert!(Arc::ptr_eq(&previous, &monitor.snapshot().unwrap()));
    assert!(!monitor.eligible("a"));
    assert!(monitor.eligible("b"));
}

#[tokio::test]
async fn all_probes_failing_before_the_first_publication_stay_fail_open() {
    let monitor = monitor([("a", refused_url("/rpc")), ("b", refused_url("/rpc"))]).build().unwrap();
    let err = monitor.check().await.unwrap_err();
    assert!(!err.published());
    assert_eq!(failed_ids(&err), ["a", "b"]);
    assert!(monitor.snapshot().is_none());
    assert!(monitor.eligible("a"));
    assert!(monitor.eligible("b"));
    assert!(!monitor.eligible("c"));
}

#[tokio::test]
async fn unknown_ids_are_never_eligible() {
    let a = Node::at(5).await;
    let monitor = monitor([("primary", a.url())]).build().unwrap();
    let unknown = ["", "Primary", "primary ", " primary", "backup"];
    assert!(unknown.iter().all(|id| !monitor.eligible(id)));
    monitor.check().await.unwrap();
    assert!(monitor.eligible("primary"));
    assert!(unknown.iter().all(|id| !monitor.eligible(id)));
    let snapshot = monitor.snapshot().unwrap();
    assert!(unknown.iter().all(|id| !snapshot.is_eligible(id) && snapshot.height(id).is_none()));
}

#[tokio::test]
async fn a_later_check_restores_an_ineligible_endpoint() {
    let (a, b) = (Node::at(100).await, Node::at(110).await);
    let monitor = monitor([("a", a.url()), ("b", b.url())]).max_lag(3).build().unwrap();
    monitor.check().await.unwrap();
    assert!(!monitor.eligible("a"));
    a.set_height(109);
    monitor.check().await.unwrap();
    assert!(monitor.eligible("a"));

    // A failed endpoint comes back the same way.
    b.set_failing(true);
    assert!(monitor.check().await.unwrap_err().published());
    assert!(!monitor.eligible("b"));
    b.set_failing(false);
    monitor.check().await.unwrap();
    assert!(monitor.eligible("b"));
}

#[tokio::test]
async fn lag_threshold_is_inclusive() {
    let (a, b, c) = (Node::at(107).await, Node::at(110).await, Node::at(106).await);
    let monitor = monitor([("a", a.url()), ("b", b.url()), ("c", c.url())]).max_lag(3).build().unwrap();
    monitor.check().await.unwrap();
    assert!(monitor.eligible("a"), "exactly max_lag behind is eligible");
    assert!(!monitor.eligible("c"), "max_lag + 1 behind is not");
}

#[tokio::test]
async fn zero_max_lag_accepts_only_the_highest_height() {
    let (a, b, c) = (Node::at(110).await, Node::at(109).await, Node::at(110).await);
    let monitor = monitor([("a", a.url()), ("b", b.url()), ("c", c.url())]).max_lag(0).build().unwrap();
    monitor.check().await.unwrap();
    assert!(monitor.eligible("a"));
    assert!(!monitor.eligible("b"));
    assert!(monitor.eligible("c"));
}

#[tokio::test]
async fn each_check_sends_one_block_number_post_per_provider_without_retry() {
    let (ok, failing) = (Node::at(1).await, Node::at(1).await);
    failing.set_failing(true);
    let monitor = monitor([("ok", ok.url()), ("failing", failing.url())]).build().unwrap();
    let _ = monitor.check().await;
    let _ = monitor.check().await;

    for node in [&ok, &failing] {
        let received = node.received().await;
        assert_eq!(received.len(), 2, "one request per check, no retry");
        for request in received {
            assert_eq!(request.method.as_str(), "POST");
            assert_eq!(request.url.path(), "/rpc");
            assert_eq!(request.headers.get("content-type").unwrap(), "application/json");
            let body: Value = serde_json::from_slice(&request.body).unwrap();
            assert_eq!(body["jsonrpc"], "2.0");
            assert_eq!(body["method"], "eth_blockNumber");
            assert_eq!(body["params"], serde_json::json!([]));
            assert!(body["id"].is_u64());
        }
    }
}

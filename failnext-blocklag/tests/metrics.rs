//! Metrics (feature `metrics`): each published check's heights, lag, probe latency,
//! eligibility and probe failures, labelled by endpoint id.

use std::sync::Arc;

use failnext::Endpoint;
use failnext_blocklag::Monitor;
use failnext_loopback::metrics::{Kept, Rec};
use failnext_loopback::{Action, Received, Reply, Server, refused_url};

#[test]
fn a_check_publishes_heights_lag_eligibility_and_failures_as_metrics() {
    let kept = Arc::new(Kept::default());
    let recorder = Rec(kept.clone());
    metrics::with_local_recorder(&recorder, || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let height = |h: &'static str| {
                Arc::new(move |req: &Received| {
                    let id = serde_json::from_slice::<serde_json::Value>(&req.body)
                        .map(|v| v["id"].clone())
                        .unwrap_or_default();
                    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": h}).to_string();
                    Action::Reply(Reply::new(200).json(body))
                })
            };
            let (ahead, behind) = (Server::start(height("0x20")).await, Server::start(height("0x10")).await);
            let monitor = Monitor::builder([
                Endpoint::new("ahead", ahead.url("/")),
                Endpoint::new("behind", behind.url("/")),
                Endpoint::new("down", refused_url("/")),
            ])
            .max_lag(2)
            .build()
            .unwrap();
            let _ = monitor.check().await;
        });
    });
    assert_eq!(kept.get("failnext_blocklag_height{endpoint=ahead}"), 32_000, "{:?}", kept.names());
    assert_eq!(kept.get("failnext_blocklag_lag_blocks{endpoint=behind}"), 16_000);
    assert_eq!(kept.get("failnext_blocklag_eligible{endpoint=ahead}"), 1_000);
    assert_eq!(kept.get("failnext_blocklag_eligible{endpoint=behind}"), 0);
    assert_eq!(kept.get("failnext_blocklag_probe_failures_total{call=eth_blockNumber,endpoint=down}"), 1);
}

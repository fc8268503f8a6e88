//! The monitor as failnext's eligibility hook.

use failnext::{Endpoint, Failover, RequestBuilderExt, ServedBy};
use reqwest_middleware::ClientBuilder;

use crate::support::*;

#[tokio::test]
async fn failnext_skips_a_lagging_provider_until_a_check_restores_it() {
    let (primary, backup) = (Node::at(100).await, Node::at(110).await);
    let endpoints = [Endpoint::new("primary", primary.url()), Endpoint::new("backup", backup.url())];
    let monitor = failnext_blocklag::Monitor::builder(endpoints.clone()).max_lag(3).build().unwrap();
    let failover = Failover::builder(endpoints).eligible(monitor.clone()).build().unwrap();
    let client = ClientBuilder::new(reqwest::Client::new()).with(failover).build();
    let read = || {
        client
            .post("http://127.0.0.1:9/ignored")
            .header("content-type", "application/json")
            .body(r#"{"jsonrpc":"2.0","id":7,"method":"eth_getBalance","params":["0x0","latest"]}"#)
            .allow_failover()
            .send()
    };
    let served_by =
        |response: &reqwest::Response| response.extensions().get::<ServedBy>().map(|s| s.0.to_string());

    // Fail-open before the first check: the primary serves.
    assert_eq!(served_by(&read().await.unwrap()).as_deref(), Some("primary"));

    monitor.check().await.unwrap();
    assert_eq!(served_by(&read().await.unwrap()).as_deref(), Some("backup"));
    assert_eq!(primary.methods().await.iter().filter(|m| *m == "eth_getBalance").count(), 1);

    primary.set_height(110);
    monitor.check().await.unwrap();
    assert_eq!(served_by(&read().await.unwrap()).as_deref(), Some("primary"));
}

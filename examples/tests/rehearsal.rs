//! The multi-RPC article's rehearsal ([`failnext_examples::rehearsal`]): a quote bot reading
//! through read bundles while its providers are on a fork, on the wrong chain, behind, rate
//! limited and without archive state.

use failnext_examples::rehearsal::{Plan, rehearse};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_quote_bot_never_combines_references_nor_reads_an_unpinned_latest_within_its_budget() {
    let r = rehearse(Plan::default()).await.unwrap();
    assert!(r.quotes >= 70, "{r}");
    assert_eq!(r.mixed, 0, "no quote from two references: {r}");
    assert_eq!(r.unpinned, 0, "no read at an unpinned latest: {r}");
    assert_eq!(r.failed, 0, "{r}");
    assert!(r.requests <= r.request_budget(), "request budget: {r}");
    assert!(r.elapsed <= r.time_budget(), "time budget: {r}");
    assert!(r.historical > 0 && r.historical_failed == 0, "{r}");
    assert!(r.full_lacks_archive, "the full node was found to lack archive state: {r}");
    assert!(r.full_calls > 0, "and still served current reads: {r}");
    assert!(r.holds(), "{r}");
}

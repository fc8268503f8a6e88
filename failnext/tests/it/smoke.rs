use crate::support::events::*;
use crate::support::*;
use failnext::{RequestBuilderExt, ServedBy};
use failnext_loopback::{Action, Server, refused_url};

#[tokio::test]
async fn refused_then_503_then_healthy_reaches_healthy_with_one_attempt_each() {
    let refused = refused_url("/rpc");
    let unavailable = status(503).await;
    let healthy = status(200).await;
    let rec = Recorder::new();
    let failover =
        builder([("refused", refused), ("unavailable", unavailable.url()), ("healthy", healthy.url())])
            .on_event(rec.hook())
            .build()
            .unwrap();
    let resp =
        client(failover).post("http://127.0.0.1:9/ignored").body("{}").allow_failover().send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.extensions().get::<ServedBy>().map(|s| s.0.as_str()), Some("healthy"));
    assert_eq!((unavailable.hits(), healthy.hits()), (1, 1));
    assert_eq!(
        rec.shapes(),
        [
            attempt_err("refused", 1),
            attempt("unavailable", 2, 503),
            attempt("healthy", 3, 200),
            result("healthy", 200)
        ]
    );
}

#[tokio::test]
async fn closed_connection_is_a_transport_error_that_fails_over() {
    let closing = Server::always(Action::Close).await;
    let healthy = status(200).await;
    let failover = builder([("closing", closing.url("/rpc")), ("healthy", healthy.url())]).build().unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(closing.requests(), 1);
}

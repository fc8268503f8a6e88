//! Every fault of the toolkit, seen from reqwest and from raw TCP.

use std::sync::Arc;
use std::time::Duration;

use failnext_loopback::{Action, End, RawServer, Received, Refused, Reply, Script, Server, refused_url};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(5)).build().unwrap()
}

async fn bounded<T>(step: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), step).await.expect("step did not finish")
}

#[tokio::test]
async fn replies_and_records_the_request() {
    let server = Server::replying(201, b"{}").await;
    let resp = client().post(server.url("/rpc?key=1")).header("x-a", "1").body("hello").send().await.unwrap();
    assert_eq!(resp.status(), 201);
    assert_eq!(resp.headers()["content-type"], "application/json");
    assert_eq!(resp.headers()["connection"], "close");
    assert_eq!(resp.bytes().await.unwrap(), "{}");
    let log = server.take_log();
    assert_eq!(log.len(), 1);
    assert_eq!((log[0].method.as_str(), log[0].target.as_str()), ("POST", "/rpc?key=1"));
    assert_eq!(log[0].header_values("x-a"), [b"1"]);
    assert_eq!(log[0].body, "hello");
    assert_eq!((server.requests(), server.connections()), (1, 1));
}

#[tokio::test]
async fn a_chunked_request_body_is_read_whole() {
    let server =
        Server::start(Arc::new(|r: &Received| Action::Reply(Reply::new(200).send(r.body.clone())))).await;
    let chunks: Vec<Result<&'static str, std::io::Error>> = vec![Ok("{\"a\":"), Ok("1}")];
    let body = reqwest::Body::wrap_stream(futures::stream::iter(chunks));
    let resp = client().post(server.url("/")).body(body).send().await.unwrap();
    assert_eq!(resp.text().await.unwrap(), "{\"a\":1}");
    assert_eq!(server.take_log()[0].header_values("transfer-encoding"), [b"chunked"]);
}

#[tokio::test]
async fn keep_alive_serves_many_requests_on_one_connection() {
    let server = Server::always(Action::Reply(Reply::new(200).json("{}"))).await;
    let client = client();
    for _ in 0..5 {
        assert_eq!(client.get(server.url("/")).send().await.unwrap().bytes().await.unwrap(), "{}");
    }
    assert_eq!((server.requests(), server.connections()), (5, 1));
}

#[tokio::test]
async fn close_answers_nothing() {
    let server = Server::always(Action::Close).await;
    let err = client().get(server.url("/")).send().await.unwrap_err();
    assert!(!err.is_timeout() && !err.is_connect(), "{err:?}");
    assert_eq!(server.requests(), 1);
}

#[tokio::test]
async fn reset_resets_the_connection() {
    let server = Server::always(Action::Reset).await;
    let mut stream = TcpStream::connect(server.addr()).await.unwrap();
    stream.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n").await.unwrap();
    let mut buf = [0u8; 64];
    let err = bounded(stream.read(&mut buf)).await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionReset);
}

#[tokio::test]
async fn hang_never_answers_and_counts_the_abandoned_request() {
    let server = Server::always(Action::Hang).await;
    let quick = reqwest::Client::builder().timeout(Duration::from_millis(200)).build().unwrap();
    let err = quick.get(server.url("/")).send().await.unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    bounded(async {
        while server.abandoned() != 1 || server.open_connections() != 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn wait_for_requests_returns_once_they_arrived() {
    let server = Server::always(Action::Hang).await;
    let url = server.url("/");
    let send = tokio::spawn(async move { client().get(url).send().await });
    bounded(server.wait_for_requests(1)).await;
    send.abort();
}

#[tokio::test]
async fn a_body_short_of_its_length_is_truncated() {
    let server =
        Server::always(Action::Reply(Reply::new(200).length(100).send("0123456789").end(End::Close))).await;
    let resp = client().get(server.url("/")).send().await.unwrap();
    assert_eq!(resp.content_length(), Some(100));
    let err = resp.bytes().await.unwrap_err();
    assert!(err.is_body() || err.is_decode(), "{err:?}");
}

#[tokio::test]
async fn a_reset_mid_body_breaks_off_after_the_first_bytes() {
    let reply = Reply::new(200).length(20).send("0123456789").end(End::Reset);
    let server = Server::always(Action::Reply(reply)).await;
    let mut stream = TcpStream::connect(server.addr()).await.unwrap();
    stream.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n").await.unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 1024];
    let end = bounded(async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) => return Ok(()),
                Ok(n) => seen.extend_from_slice(&buf[..n]),
                Err(e) => return Err(e),
            }
        }
    })
    .await;
    let text = String::from_utf8_lossy(&seen);
    assert!(text.starts_with("HTTP/1.1 200 OK") && text.contains("content-length: 20"), "{text}");
    assert!(text.ends_with("0123456789"), "{text}");
    assert_eq!(end.unwrap_err().kind(), std::io::ErrorKind::ConnectionReset);
}

#[tokio::test]
async fn a_stalled_body_keeps_the_connection_open() {
    let server =
        Server::always(Action::Reply(Reply::new(200).length(100).send("0123456789").end(End::Stall))).await;
    let quick = reqwest::Client::builder().timeout(Duration::from_millis(300)).build().unwrap();
    let resp = quick.get(server.url("/")).send().await.unwrap();
    let err = resp.bytes().await.unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
}

#[tokio::test]
async fn an_endless_body_is_abandoned_when_the_client_goes() {
    let reply = Reply::new(200).forever(vec![b' '; 1024], Duration::ZERO);
    let server = Server::always(Action::Reply(reply)).await;
    let mut resp = client().get(server.url("/")).send().await.unwrap();
    let mut read = 0;
    while read < 64 * 1024 {
        read += resp.chunk().await.unwrap().unwrap().len();
    }
    drop(resp);
    bounded(async {
        while server.abandoned() != 1 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn a_paused_body_arrives_in_pieces() {
    let reply = Reply::new(200).send("a").pause(Duration::from_millis(20)).send("b").chunked();
    let server = Server::always(Action::Reply(reply)).await;
    let resp = client().get(server.url("/")).send().await.unwrap();
    assert_eq!(resp.headers()["transfer-encoding"], "chunked");
    assert_eq!(resp.text().await.unwrap(), "ab");
}

#[tokio::test]
async fn a_too_long_body_gets_413() {
    let server = Server::builder()
        .max_body(4)
        .serve(Arc::new(|_: &Received| Action::Hang) as failnext_loopback::Handler)
        .unwrap();
    let resp = client().post(server.url("/")).body("too long").send().await.unwrap();
    assert_eq!(resp.status(), 413);
}

#[tokio::test]
async fn stop_refuses_and_restart_serves_the_same_port() {
    let mut server = Server::replying(200, b"{}").await;
    server.stop().await;
    let err = TcpStream::connect(server.addr()).await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
    server.restart().unwrap();
    assert_eq!(client().get(server.url("/")).send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn a_handler_can_be_replaced_and_decide_later() {
    let server = Server::always(Action::Close).await;
    server.set_handler(Arc::new(|r: &Received| {
        let reply = r.rpc_result("0x9");
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            Action::Reply(reply)
        }) as failnext_loopback::Later
    }) as failnext_loopback::LaterHandler);
    let resp = client().post(server.url("/")).body(r#"{"id":7}"#).send().await.unwrap();
    assert_eq!(resp.text().await.unwrap(), r#"{"jsonrpc":"2.0","id":7,"result":"0x9"}"#);
    assert_eq!(server.max_in_flight(), 1);
}

#[tokio::test]
async fn refused_ports_refuse() {
    let refused = Refused::new();
    let err = TcpStream::connect(refused.addr()).await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
    let err = client().get(refused_url("/rpc")).send().await.unwrap_err();
    assert!(err.is_connect(), "{err:?}");
}

#[tokio::test]
async fn garbage_before_the_status_line_is_not_http() {
    let server =
        RawServer::start(Script::new().send("garbage\r\nHTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")).await;
    let err = client().get(server.url("/")).send().await.unwrap_err();
    assert!(!err.is_timeout() && !err.is_connect(), "{err:?}");
    assert_eq!(server.connections(), 1);
}

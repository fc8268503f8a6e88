//! Each fault behaviour, and switching back to healthy.

use std::time::{Duration, Instant};

use failnext_examples::sim::{Behaviour, OVERSIZED_LEN, START_HEAD};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::{block_number, call_body, one_provider, post, rpc};

/// Bounds a test step that is expected to finish by itself.
async fn bounded<T>(step: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(5), step).await.expect("step did not finish in 5 s")
}

#[tokio::test]
async fn down_refuses_connections_and_healthy_rebinds_the_same_port() {
    let (_chain, p) = one_provider().await;
    let url = p.url().to_owned();
    p.set(Behaviour::Down).await.unwrap();

    let err = post(&p, &call_body("eth_blockNumber", json!([]))).await.unwrap_err();
    assert!(err.is_connect(), "{err:?}");
    let refused = TcpStream::connect(p.addr()).await.unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
    assert_eq!(p.total(), 0, "a down provider receives nothing");

    p.set(Behaviour::Healthy).await.unwrap();
    assert_eq!(p.url(), url);
    assert_eq!(block_number(&p).await, START_HEAD);
}

#[tokio::test]
async fn down_closes_open_connections() {
    let (_chain, p) = one_provider().await;
    let mut stream = TcpStream::connect(p.addr()).await.unwrap();
    let body = call_body("eth_chainId", json!([])).to_string();
    let request = format!("POST / HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\n\r\n{body}", body.len());
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut buf = [0u8; 1024];
    let n = bounded(stream.read(&mut buf)).await.unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200 OK"));

    p.set(Behaviour::Down).await.unwrap();
    // The kept-alive connection is closed: the next read sees end of stream (or a reset).
    let after = bounded(stream.read(&mut buf)).await;
    assert!(matches!(after, Ok(0) | Err(_)), "{after:?}");
}

#[tokio::test]
async fn down_fails_a_client_that_pooled_a_connection_at_once() {
    let (_chain, p) = one_provider().await;
    let client = crate::client();
    let body = call_body("eth_blockNumber", json!([])).to_string();
    let send = || client.post(p.url()).header("content-type", "application/json").body(body.clone()).send();
    assert_eq!(send().await.unwrap().status(), 200);

    p.set(Behaviour::Down).await.unwrap();
    // The pooled connection is closed: the client either notices and is refused a new one,
    // or sends on the closed one and fails; it does not wait for its timeout.
    let err = send().await.unwrap_err();
    assert!(!err.is_timeout(), "{err:?}");
}

#[tokio::test]
async fn hang_holds_the_request_until_the_client_times_out() {
    let (_chain, p) = one_provider().await;
    p.set(Behaviour::Hang).await.unwrap();
    let started = Instant::now();
    let err = bounded(post(&p, &call_body("eth_blockNumber", json!([])))).await.unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(p.count("eth_blockNumber"), 1, "the request arrived; it was never answered");
}

#[tokio::test]
async fn status_answers_that_http_status_with_a_text_body() {
    let (_chain, p) = one_provider().await;
    for code in [502u16, 503, 504] {
        p.set(Behaviour::Status(code)).await.unwrap();
        let resp = post(&p, &call_body("eth_blockNumber", json!([]))).await.unwrap();
        assert_eq!(resp.status().as_u16(), code);
        assert!(resp.text().await.unwrap().starts_with(&code.to_string()));
    }
    assert_eq!(p.count("eth_blockNumber"), 3);
}

#[tokio::test]
async fn rate_limited_answers_429_with_retry_after() {
    let (_chain, p) = one_provider().await;
    p.set(Behaviour::RateLimited { retry_after_secs: 7 }).await.unwrap();
    let resp = post(&p, &call_body("eth_blockNumber", json!([]))).await.unwrap();
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["retry-after"], "7");
}

#[tokio::test]
async fn json_rpc_error_answers_200_with_that_error_for_each_call() {
    let (_chain, p) = one_provider().await;
    let (code, message) = (-32005, "limit exceeded".to_owned());
    p.set(Behaviour::JsonRpcError { code, message: message.clone() }).await.unwrap();

    let reply = rpc(&p, "eth_blockNumber", json!([])).await;
    assert_eq!(reply, json!({ "jsonrpc": "2.0", "id": 1, "error": { "code": code, "message": message } }));

    let batch = json!([call_body("eth_chainId", json!([])), { "jsonrpc": "2.0", "id": 2, "method": "eth_blockNumber" }]);
    let resp = post(&p, &batch).await.unwrap();
    assert_eq!(resp.status(), 200);
    let replies: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
    assert_eq!(replies[0]["error"]["code"], code);
    assert_eq!(replies[1]["id"], 2);
    assert_eq!(replies[1]["error"]["message"], "limit exceeded");
}

#[tokio::test]
async fn malformed_answers_200_with_a_body_that_is_not_json() {
    let (_chain, p) = one_provider().await;
    p.set(Behaviour::Malformed).await.unwrap();
    let resp = post(&p, &call_body("eth_blockNumber", json!([]))).await.unwrap();
    assert_eq!(resp.status(), 200);
    let body = resp.bytes().await.unwrap();
    assert!(serde_json::from_slice::<Value>(&body).is_err());
}

#[tokio::test]
async fn oversized_answers_the_correct_reply_padded_past_5_kib() {
    let (_chain, p) = one_provider().await;
    p.set(Behaviour::Oversized).await.unwrap();
    let resp = post(&p, &call_body("eth_blockNumber", json!([]))).await.unwrap();
    assert_eq!(resp.status(), 200);
    let body = resp.bytes().await.unwrap();
    assert!(body.len() > 5 * 1024);
    assert_eq!(body.len(), OVERSIZED_LEN);
    let reply: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(reply["result"], format!("{START_HEAD:#x}"));
}

#[tokio::test]
async fn reset_mid_body_breaks_off_after_the_headers() {
    let (_chain, p) = one_provider().await;
    p.set(Behaviour::ResetMidBody).await.unwrap();
    let resp = post(&p, &call_body("eth_blockNumber", json!([]))).await.unwrap();
    assert_eq!(resp.status(), 200);
    let err = resp.bytes().await.unwrap_err();
    assert!(err.is_body() || err.is_decode(), "{err:?}");
}

#[tokio::test]
async fn truncated_announces_the_full_length_sends_half_and_closes() {
    let (_chain, p) = one_provider().await;
    p.set(Behaviour::Truncated).await.unwrap();
    let resp = post(&p, &call_body("eth_blockNumber", json!([]))).await.unwrap();
    assert_eq!(resp.status(), 200);
    let announced = resp.content_length().unwrap();
    let err = resp.bytes().await.unwrap_err();
    assert!(err.is_body() || err.is_decode(), "{err:?}");

    // On raw TCP: the headers announce more than the body holds, then a clean end of stream.
    let mut stream = TcpStream::connect(p.addr()).await.unwrap();
    let body = call_body("eth_blockNumber", json!([])).to_string();
    let request = format!("POST / HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\n\r\n{body}", body.len());
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    let read = bounded(stream.read_to_end(&mut raw)).await;
    assert!(read.is_ok(), "a clean close (FIN), not a reset: {read:?}");
    let text = String::from_utf8_lossy(&raw);
    let (_, sent) = text.split_once("\r\n\r\n").unwrap();
    assert!(text.to_ascii_lowercase().contains(&format!("content-length: {announced}")), "{text}");
    assert!((sent.len() as u64) < announced, "{text}");
    assert!(!sent.is_empty(), "{text}");
}

#[tokio::test]
async fn json_rpc_error_can_be_an_internal_error() {
    let (_chain, p) = one_provider().await;
    p.set(Behaviour::JsonRpcError { code: -32603, message: "internal error".to_owned() }).await.unwrap();
    let reply =
        rpc(&p, "eth_call", json!([{ "to": "0x000000000000000000000000000000000000dead" }, "latest"])).await;
    assert_eq!(reply["error"]["code"], -32603);
    assert!(reply.get("result").is_none(), "{reply}");
}

#[tokio::test]
async fn slow_answers_correctly_after_the_delay() {
    let (_chain, p) = one_provider().await;
    p.set(Behaviour::Slow(Duration::from_millis(150))).await.unwrap();
    let started = Instant::now();
    assert_eq!(block_number(&p).await, START_HEAD);
    assert!(started.elapsed() >= Duration::from_millis(150));
}

#[tokio::test]
async fn every_fault_is_undone_by_switching_back_to_healthy() {
    let (_chain, p) = one_provider().await;
    let faults = [
        Behaviour::Down,
        Behaviour::Status(503),
        Behaviour::RateLimited { retry_after_secs: 1 },
        Behaviour::JsonRpcError { code: -32000, message: "boom".to_owned() },
        Behaviour::Lagging(3),
        Behaviour::Stalled,
        Behaviour::Slow(Duration::from_millis(10)),
        Behaviour::Hang,
        Behaviour::WrongChain(1),
        Behaviour::Malformed,
        Behaviour::Oversized,
        Behaviour::ResetMidBody,
        Behaviour::Truncated,
    ];
    for fault in faults {
        p.set(fault.clone()).await.unwrap();
        let _ = post(&p, &call_body("eth_blockNumber", json!([]))).await;
        p.set(Behaviour::Healthy).await.unwrap();
        assert_eq!(block_number(&p).await, START_HEAD, "after {fault:?}");
        let chain_id = crate::result(&p, "eth_chainId", json!([])).await;
        assert_eq!(chain_id, "0x7a69", "after {fault:?}");
    }
}

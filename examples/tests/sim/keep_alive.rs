//! Connections are kept alive, pipelined requests are answered in order, and
//! `Connection: close` is honoured.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::one_provider;

fn request(id: u32, extra_header: &str) -> String {
    let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"eth_chainId"}}"#);
    format!("POST / HTTP/1.1\r\nhost: x\r\n{extra_header}content-length: {}\r\n\r\n{body}", body.len())
}

/// Reads from `stream` until `count` complete replies (each a JSON object with an id) arrived,
/// or the stream ends.
async fn read_replies(stream: &mut TcpStream, count: usize) -> String {
    let mut text = String::new();
    let mut buf = [0u8; 4096];
    while text.matches("\"id\":").count() < count {
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf)).await.unwrap().unwrap();
        if n == 0 {
            break;
        }
        text.push_str(std::str::from_utf8(&buf[..n]).unwrap());
    }
    text
}

#[tokio::test]
async fn one_connection_serves_sequential_and_pipelined_requests() {
    let (_chain, p) = one_provider().await;
    let mut stream = TcpStream::connect(p.addr()).await.unwrap();

    stream.write_all(request(1, "").as_bytes()).await.unwrap();
    let first = read_replies(&mut stream, 1).await;
    assert!(first.starts_with("HTTP/1.1 200 OK") && first.contains("\"id\":1"), "{first}");
    assert!(!first.contains("connection: close"));

    let pipelined = request(2, "") + &request(3, "");
    stream.write_all(pipelined.as_bytes()).await.unwrap();
    let both = read_replies(&mut stream, 2).await;
    let (two, three) = (both.find("\"id\":2").unwrap(), both.find("\"id\":3").unwrap());
    assert!(two < three, "answered in order: {both}");
    assert_eq!(p.total(), 3);
}

#[tokio::test]
async fn connection_close_is_honoured() {
    let (_chain, p) = one_provider().await;
    let mut stream = TcpStream::connect(p.addr()).await.unwrap();
    stream.write_all(request(1, "connection: close\r\n").as_bytes()).await.unwrap();
    let reply = read_replies(&mut stream, 1).await;
    assert!(reply.contains("connection: close"), "{reply}");
    let mut buf = [0u8; 16];
    let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf)).await.unwrap().unwrap();
    assert_eq!(n, 0, "closed after the reply");
}

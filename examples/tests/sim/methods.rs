//! The JSON-RPC surface: methods, batches, errors, and the counts by method.

use failnext_examples::sim::START_HEAD;
use serde_json::{Value, json};

use crate::{call_body, one_provider, post, result, rpc};

#[tokio::test]
async fn reads_answer_from_the_chain() {
    let (_chain, p) = one_provider().await;
    let account = "0x00000000000000000000000000000000000000aa";
    assert_eq!(result(&p, "eth_getBalance", json!([account, "latest"])).await, "0xde0b6b3a7640000");
    assert_eq!(result(&p, "eth_getBalance", json!([account])).await, "0xde0b6b3a7640000");
    let word = result(&p, "eth_call", json!([{ "to": account, "data": "0x" }, "latest"])).await;
    assert_eq!(word, format!("0x{START_HEAD:064x}"));
}

#[tokio::test]
async fn bad_calls_get_json_rpc_errors() {
    let (_chain, p) = one_provider().await;
    assert_eq!(rpc(&p, "eth_mine", json!([])).await["error"]["code"], -32601);
    assert_eq!(rpc(&p, "eth_getBalance", json!(["nope"])).await["error"]["code"], -32602);
    let future = format!("{:#x}", START_HEAD + 1);
    assert_eq!(rpc(&p, "eth_call", json!([{}, future])).await["error"]["message"], "header not found");

    let resp = post(&p, &json!("not a call")).await.unwrap();
    assert_eq!(body_of(resp).await["error"]["code"], -32600);
    let resp = crate::client().post(p.url()).body("{").send().await.unwrap();
    assert_eq!(body_of(resp).await["error"]["code"], -32700);
    let resp = post(&p, &json!([])).await.unwrap();
    assert_eq!(body_of(resp).await["error"]["code"], -32600);
}

#[tokio::test]
async fn a_batch_is_answered_call_by_call_without_notifications() {
    let (_chain, p) = one_provider().await;
    let batch = json!([
        { "jsonrpc": "2.0", "id": "a", "method": "eth_blockNumber" },
        { "jsonrpc": "2.0", "method": "eth_blockNumber" },
        { "jsonrpc": "2.0", "id": 7, "method": "eth_chainId", "params": [] },
        { "jsonrpc": "2.0", "id": 8, "method": "nope" },
    ]);
    let replies = body_of(post(&p, &batch).await.unwrap()).await;
    let replies = replies.as_array().unwrap();
    assert_eq!(replies.len(), 3, "the notification gets no reply");
    assert_eq!(replies[0], json!({ "jsonrpc": "2.0", "id": "a", "result": format!("{START_HEAD:#x}") }));
    assert_eq!(replies[1], json!({ "jsonrpc": "2.0", "id": 7, "result": "0x7a69" }));
    assert_eq!(replies[2]["error"]["code"], -32601);
}

#[tokio::test]
async fn counts_are_by_method_and_total_is_by_http_request() {
    let (_chain, p) = one_provider().await;
    rpc(&p, "eth_blockNumber", json!([])).await;
    rpc(&p, "eth_blockNumber", json!([])).await;
    rpc(&p, "eth_chainId", json!([])).await;
    let batch = json!([call_body("eth_blockNumber", json!([])), call_body("eth_getBalance", json!([]))]);
    post(&p, &batch).await.unwrap();

    assert_eq!(p.count("eth_blockNumber"), 3);
    assert_eq!(p.count("eth_chainId"), 1);
    assert_eq!(p.count("eth_getBalance"), 1, "counted even though its params were invalid");
    assert_eq!(p.count("eth_call"), 0);
    assert_eq!(p.total(), 4);
    p.reset_counts();
    assert_eq!((p.total(), p.count("eth_blockNumber")), (0, 0));
}

async fn body_of(resp: reqwest::Response) -> Value {
    serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap()
}

#[tokio::test]
async fn a_chunked_post_is_answered() {
    let (_chain, p) = one_provider().await;
    let call = call_body("eth_blockNumber", json!([])).to_string();
    let (first, second) = call.split_at(call.len() / 2);
    let chunks: Vec<Result<String, std::io::Error>> = vec![Ok(first.to_owned()), Ok(second.to_owned())];
    // A stream of unknown length: reqwest sends it with `Transfer-Encoding: chunked`.
    let body = reqwest::Body::wrap_stream(futures::stream::iter(chunks));
    let resp = crate::client()
        .post(p.url())
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(body_of(resp).await["result"], format!("{START_HEAD:#x}"));
    assert_eq!(p.count("eth_blockNumber"), 1);
}

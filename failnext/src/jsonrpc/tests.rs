//! Unit tests of the JSON-RPC classifier: one per row of the table and per body situation.
//! Test code only: declared `#[cfg(test)] mod tests;` in `mod.rs`, and test-only by itself.

#![cfg(test)]

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::Frame;
use reqwest::{Response, ResponseBuilderExt};

use super::JsonRpcClassifier;
use crate::{Class, Classified, Classifier, EndpointId, Evidence, Judgement, Verdict};

const URL: &str = "http://user:pass@127.0.0.1:9/v3/SECRETKEY?apikey=SECRETQUERY";

// ===== support =====

/// A body that yields its chunks, then optionally an error (a truncated or reset body).
struct TestBody {
    chunks: VecDeque<Bytes>,
    then: Option<io::ErrorKind>,
}

impl http_body::Body for TestBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        if let Some(chunk) = self.chunks.pop_front() {
            return Poll::Ready(Some(Ok(Frame::data(chunk))));
        }
        Poll::Ready(self.then.take().map(|kind| Err(io::Error::new(kind, "body cut"))))
    }
}

#[derive(Clone, Copy, Debug)]
struct Marker(u32);

fn response(
    status: u16,
    content_type: Option<&str>,
    chunks: &[&[u8]],
    then: Option<io::ErrorKind>,
) -> Response {
    let mut builder = http::Response::builder()
        .status(status)
        .url(url::Url::parse(URL).unwrap())
        .header("x-kept", "yes")
        .extension(Marker(7));
    if let Some(content_type) = content_type {
        builder = builder.header("content-type", content_type);
    }
    let chunks = chunks.iter().map(|c| Bytes::copy_from_slice(c)).collect();
    Response::from(builder.body(reqwest::Body::wrap(TestBody { chunks, then })).unwrap())
}

fn json(status: u16, chunks: &[&[u8]]) -> Response {
    response(status, Some("application/json"), chunks, None)
}

async fn classify_with(classifier: &JsonRpcClassifier, response: Response) -> Classified {
    classifier.classify(&EndpointId::from("p"), response).await
}

async fn classify(response: Response) -> Classified {
    classify_with(&JsonRpcClassifier::new(), response).await
}

/// Judges `body` (status 200) in one chunk and in 3-byte chunks; both must agree, and the
/// rebuilt response must hand back the same bytes.
async fn judge(body: &str) -> Judgement {
    judge_status(200, body).await
}

async fn judge_status(status: u16, body: &str) -> Judgement {
    let whole = expect_response(classify(json(status, &[body.as_bytes()])).await, body).await;
    let pieces: Vec<&[u8]> = body.as_bytes().chunks(3).collect();
    let split = expect_response(classify(json(status, &pieces)).await, body).await;
    assert_eq!(whole, split, "one chunk and many chunks judge alike: {body}");
    whole
}

async fn expect_response(classified: Classified, body: &str) -> Judgement {
    match classified {
        Classified::Response(response, judgement) => {
            assert_eq!(response.text().await.unwrap(), body);
            judgement
        }
        Classified::Failed(error, judgement) => panic!("failed: {error} {judgement:?}"),
    }
}

fn error(code: i64, message: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":1,"error":{{"code":{code},"message":"{message}"}}}}"#)
}

fn definitive() -> Judgement {
    Judgement::new(Verdict::Return, Evidence::Neutral, Class::Definitive)
}

fn capacity(cool_for: Option<Duration>) -> Judgement {
    Judgement::new(Verdict::FailOver { cool_for }, Evidence::Failure, Class::Capacity)
}

fn stale() -> Judgement {
    Judgement::new(Verdict::FailOver { cool_for: None }, Evidence::Neutral, Class::Stale)
}

fn broken() -> Judgement {
    Judgement::new(Verdict::FailOver { cool_for: None }, Evidence::Failure, Class::Broken)
}

fn unrecognised() -> Judgement {
    Judgement::new(Verdict::Return, Evidence::Neutral, Class::Answer)
}

// ===== the table, row by row =====

#[tokio::test]
async fn revert_code_3_is_definitive_and_returned() {
    let body = r#"{"jsonrpc":"2.0","id":1,"error":{"code":3,"message":"execution reverted: no","data":"0x08c379a0"}}"#;
    assert_eq!(judge(body).await, definitive());
}

#[tokio::test]
async fn execution_reverted_message_is_definitive_whatever_the_code() {
    assert_eq!(judge(&error(-32000, "execution reverted")).await, definitive());
    assert_eq!(judge(&error(-32603, "Execution Reverted")).await, definitive());
    let alchemy = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"x","data":"Reverted 0x"}}"#;
    assert_eq!(judge(alchemy).await, definitive());
}

#[tokio::test]
async fn a_revert_reason_that_says_rate_limit_is_returned_not_failed_over() {
    assert_eq!(judge(&error(3, "execution reverted: rate limit exceeded")).await, definitive());
}

#[tokio::test]
async fn invalid_params_invalid_request_and_parse_error_are_definitive() {
    for code in [-32602, -32600, -32700] {
        assert_eq!(judge(&error(code, "bad")).await, definitive(), "{code}");
    }
}

#[tokio::test]
async fn txpool_and_gas_errors_are_definitive() {
    for message in [
        "nonce too low",
        "nonce too high",
        "insufficient funds for gas * price + value",
        "already known",
        "replacement transaction underpriced",
        "intrinsic gas too low",
        "max fee per gas less than block base fee",
        "gas required exceeds allowance (30000000)",
        "invalid argument 0: hex string has length 3",
    ] {
        assert_eq!(judge(&error(-32000, message)).await, definitive(), "{message}");
    }
}

#[tokio::test]
async fn infura_32005_fails_over_as_capacity() {
    assert_eq!(judge(&error(-32005, "project ID request rate exceeded")).await, capacity(None));
}

#[tokio::test]
async fn rate_limit_with_backoff_seconds_fails_over_and_cools_for_the_hint() {
    let body = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"daily request count exceeded, request rate limited","data":{"see":"https://infura.io","rate":{"allowed_rps":1,"backoff_seconds":30,"current_rps":1.5}}}}"#;
    assert_eq!(judge(body).await, capacity(Some(Duration::from_secs(30))));
}

#[tokio::test]
async fn a_backoff_above_five_minutes_is_capped_at_five_minutes() {
    let body = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"limit","data":{"rate":{"backoff_seconds":86400}}}}"#;
    assert_eq!(judge(body).await, capacity(Some(Duration::from_secs(300))));
}

#[tokio::test]
async fn quicknode_request_limit_and_credits_are_capacity() {
    assert_eq!(judge(&error(-32007, "100/second request limit reached")).await, capacity(None));
    assert_eq!(judge(&error(-32012, "credits limited to 6000/sec")).await, capacity(None));
}

#[tokio::test]
async fn alchemy_32016_rate_limit_and_code_429_are_capacity() {
    assert_eq!(judge(&error(-32016, "Your IP has exceeded its rate limit")).await, capacity(None));
    assert_eq!(
        judge(&error(429, "Your app has exceeded its compute units per second capacity")).await,
        capacity(None)
    );
}

#[tokio::test]
async fn rate_limit_message_with_try_again_in_ms_cools_for_the_hint() {
    let body = error(-32000, "Too many requests, try again in 250ms");
    assert_eq!(judge(&body).await, capacity(Some(Duration::from_millis(250))));
    let body = error(-32099, "rate limit exceeded, retry after 2 s");
    assert_eq!(judge(&body).await, capacity(Some(Duration::from_secs(2))));
}

#[tokio::test]
async fn a_hint_in_a_data_string_is_used_when_the_message_has_none() {
    let body = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"limit exceeded","data":"try again in 2s"}}"#;
    assert_eq!(judge(body).await, capacity(Some(Duration::from_secs(2))));
}

#[tokio::test]
async fn capacity_error_on_200_with_retry_after_cools_for_it() {
    let body = error(-32005, "limit exceeded");
    let mut response = json(200, &[body.as_bytes()]);
    response.headers_mut().insert("retry-after", "5".parse().unwrap());
    let judgement = expect_response(classify(response).await, &body).await;
    assert_eq!(judgement, capacity(Some(Duration::from_secs(5))));
}

#[tokio::test]
async fn the_body_hint_wins_over_retry_after() {
    let body = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"x","data":{"rate":{"backoff_seconds":1}}}}"#;
    let mut response = json(200, &[body.as_bytes()]);
    response.headers_mut().insert("retry-after", "9".parse().unwrap());
    let judgement = expect_response(classify(response).await, body).await;
    assert_eq!(judgement, capacity(Some(Duration::from_secs(1))));
}

#[tokio::test]
async fn http_429_is_capacity_whatever_the_body() {
    assert_eq!(judge_status(429, r#"{"jsonrpc":"2.0","id":1,"result":"0x1"}"#).await, capacity(None));
    assert_eq!(judge_status(429, "not json at all").await, capacity(None));
    let text = response(429, Some("text/plain"), &[b"slow down"], None);
    assert_eq!(expect_response(classify(text).await, "slow down").await, capacity(None));
    let none = response(429, None, &[b""], None);
    assert_eq!(expect_response(classify(none).await, "").await, capacity(None));
}

#[tokio::test]
async fn http_429_retry_after_in_seconds_or_as_an_http_date_is_the_hint_capped() {
    let mut seconds = response(429, Some("text/plain"), &[b"x"], None);
    seconds.headers_mut().insert("retry-after", "3".parse().unwrap());
    assert_eq!(expect_response(classify(seconds).await, "x").await, capacity(Some(Duration::from_secs(3))));
    let mut date = response(429, Some("text/plain"), &[b"x"], None);
    date.headers_mut().insert("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap());
    assert_eq!(expect_response(classify(date).await, "x").await, capacity(None), "a date in the past");
    let mut long = response(429, Some("text/plain"), &[b"x"], None);
    long.headers_mut().insert("retry-after", "3600".parse().unwrap());
    assert_eq!(expect_response(classify(long).await, "x").await, capacity(Some(Duration::from_secs(300))));
    let mut far = response(429, Some("text/plain"), &[b"x"], None);
    far.headers_mut().insert("retry-after", "Thu, 01 Jan 2099 00:00:00 GMT".parse().unwrap());
    assert_eq!(expect_response(classify(far).await, "x").await, capacity(Some(Duration::from_secs(300))));
}

#[tokio::test]
async fn a_capacity_error_takes_an_http_date_retry_after_as_its_hint() {
    let body = error(-32005, "limit exceeded");
    let mut response = json(200, &[body.as_bytes()]);
    let in_two_minutes = std::time::SystemTime::now() + Duration::from_secs(120);
    response.headers_mut().insert("retry-after", httpdate::fmt_http_date(in_two_minutes).parse().unwrap());
    let judgement = expect_response(classify(response).await, &body).await;
    let Verdict::FailOver { cool_for: Some(cool_for) } = judgement.verdict else {
        panic!("capacity with a hint: {judgement:?}")
    };
    assert!((Duration::from_secs(110)..=Duration::from_secs(120)).contains(&cool_for), "{cool_for:?}");
    assert_eq!((judgement.class, judgement.evidence), (Class::Capacity, Evidence::Failure));
}

#[tokio::test]
async fn header_not_found_and_missing_trie_node_fail_over_as_stale_without_blame() {
    for message in [
        "header not found",
        "missing trie node 1a2b (path )",
        "unknown block",
        "block not found",
        "historical state unavailable",
    ] {
        assert_eq!(judge(&error(-32000, message)).await, stale(), "{message}");
    }
}

#[tokio::test]
async fn method_not_found_fails_over_as_stale_without_blame() {
    assert_eq!(
        judge(&error(-32601, "the method debug_traceCall does not exist/is not available")).await,
        stale()
    );
    assert_eq!(judge(&error(-32000, "Unsupported method: trace_block")).await, stale());
}

#[tokio::test]
async fn internal_error_32603_fails_over_as_broken() {
    assert_eq!(judge(&error(-32603, "internal error")).await, broken());
}

#[tokio::test]
async fn an_unrecognised_error_is_returned_and_says_nothing() {
    assert_eq!(judge(&error(-32000, "something only this call says")).await, unrecognised());
    assert_eq!(judge(&error(12345, "vendor")).await, unrecognised());
    let no_code = r#"{"jsonrpc":"2.0","id":1,"error":{"message":"odd"}}"#;
    assert_eq!(judge(no_code).await, unrecognised());
}

#[tokio::test]
async fn a_result_is_an_answer_and_a_success() {
    let deep = format!(r#"{{"jsonrpc":"2.0","id":"a","result":{}{}}}"#, "[".repeat(300), "]".repeat(300));
    for body in [
        r#"{"jsonrpc":"2.0","id":1,"result":"0x2a"}"#,
        r#"{"id":1,"result":{"a":[1,2,{"b":"c\"d"}]},"jsonrpc":"2.0","extra":true}"#,
        &deep,
    ] {
        assert_eq!(judge(body).await, Judgement::answer(), "{body}");
    }
}

#[tokio::test]
async fn result_null_is_an_answer_not_stale() {
    assert_eq!(judge(r#"{"jsonrpc":"2.0","id":1,"result":null}"#).await, Judgement::answer());
    assert_eq!(judge(r#"{"jsonrpc":"2.0","id":1,"result":null,"error":null}"#).await, Judgement::answer());
}

#[tokio::test]
async fn malformed_json_trailing_garbage_and_an_empty_body_are_broken() {
    for body in [
        r#"{"jsonrpc":"2.0","id":1,"result":"0x2"#,
        r#"{"jsonrpc":"2.0","id":1,"result":1} x"#,
        "",
        "<html>502</html>",
    ] {
        assert_eq!(judge(body).await, broken(), "{body:?}");
    }
}

#[tokio::test]
async fn an_answer_that_is_not_json_rpc_2_is_broken() {
    for body in [
        r#"{"id":1,"result":"0x1"}"#,
        r#"{"jsonrpc":"1.0","id":1,"result":"0x1"}"#,
        r#"{"jsonrpc":"2.0","id":1}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":"odd"}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}"#,
        r#"{"message":"Internal server error"}"#,
        r#""ok""#,
        "42",
        "null",
    ] {
        assert_eq!(judge(body).await, broken(), "{body}");
    }
}

/// Judges `body` (status 200) in one chunk and split at every byte; all must agree and hand
/// back the same bytes.
async fn judge_bytes(body: &[u8]) -> Judgement {
    let whole = judge_chunks(200, &[body]).await;
    for at in 1..body.len() {
        let (a, b) = body.split_at(at);
        assert_eq!(judge_chunks(200, &[a, b]).await, whole, "split at {at}: {body:?}");
    }
    whole
}

async fn judge_chunks(status: u16, chunks: &[&[u8]]) -> Judgement {
    match classify(json(status, chunks)).await {
        Classified::Response(response, judgement) => {
            assert_eq!(response.bytes().await.unwrap(), chunks.concat());
            judgement
        }
        Classified::Failed(error, judgement) => panic!("failed: {error} {judgement:?}"),
    }
}

#[tokio::test]
async fn a_byte_that_is_not_utf8_in_a_skipped_string_is_broken() {
    for body in [
        &b"{\"jsonrpc\":\"2.0\",\"result\":\"\xff\"}"[..],
        b"{\"jsonrpc\":\"2.0\",\"id\":\"\xc3\",\"result\":1}",
        b"{\"jsonrpc\":\"2.0\",\"result\":{\"\xe2\x82\":1}}",
        b"{\"jsonrpc\":\"2.0\",\"x\":[\"\xed\xa0\x80\"],\"result\":1}",
    ] {
        assert_eq!(judge_bytes(body).await, broken(), "{body:?}");
    }
    let fine = "{\"jsonrpc\":\"2.0\",\"result\":\"é € 𝄞\"}";
    assert_eq!(judge_bytes(fine.as_bytes()).await, Judgement::answer());
}

#[tokio::test]
async fn a_lone_surrogate_escape_anywhere_is_broken_and_a_pair_is_not() {
    for body in [
        r#"{"jsonrpc":"2.0","result":"\ud800"}"#,
        r#"{"jsonrpc":"2.0","result":"\udc00x"}"#,
        r#"{"jsonrpc":"2.0","id":"\ud834\u0041","result":1}"#,
        r#"{"jsonrpc":"2.0","error":{"code":3,"message":"\ud800"}}"#,
    ] {
        assert_eq!(judge(body).await, broken(), "{body}");
    }
    assert_eq!(judge(r#"{"jsonrpc":"2.0","result":"\ud834\udd1e \\ud800"}"#).await, Judgement::answer());
}

#[tokio::test]
async fn an_error_that_is_an_array_is_broken() {
    for error in ["[]", "[3]", "[-32005]", r#"[-32005,"odd"]"#] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":1,"error":{error}}}"#);
        assert_eq!(judge(&body).await, broken(), "{body}");
    }
}

#[tokio::test]
async fn an_error_that_is_a_string_number_or_boolean_is_broken_and_null_is_no_error() {
    for error in [r#""x""#, "-32005", "true", "1.5"] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":1,"error":{error}}}"#);
        assert_eq!(judge(&body).await, broken(), "{body}");
    }
    assert_eq!(judge(r#"{"jsonrpc":"2.0","id":1,"error":null}"#).await, broken(), "neither result nor error");
}

#[tokio::test]
async fn a_code_that_is_not_an_i64_integer_or_a_message_that_is_not_a_string_is_broken() {
    for error in [
        r#"{"code":"-32005","message":"x"}"#,
        r#"{"code":-32005.0,"message":"x"}"#,
        r#"{"code":3e0,"message":"x"}"#,
        r#"{"code":9223372036854775808,"message":"x"}"#,
        r#"{"code":[3],"message":"x"}"#,
        r#"{"code":-32005,"message":5}"#,
        r#"{"code":-32005,"message":["odd"]}"#,
        r#"{"code":-32005,"message":{}}"#,
    ] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":1,"error":{error}}}"#);
        assert_eq!(judge(&body).await, broken(), "{body}");
    }
    let null_code = r#"{"jsonrpc":"2.0","id":1,"error":{"code":null,"message":null}}"#;
    assert_eq!(judge(null_code).await, unrecognised(), "null is absent");
    let big = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-9223372036854775808,"message":"x"}}"#;
    assert_eq!(judge(big).await, unrecognised());
}

#[tokio::test]
async fn anvils_block_out_of_range_in_data_is_stale_before_the_invalid_params_rule() {
    let future = r#"{"jsonrpc":"2.0","error":{"code":-32602,"message":"","data":"BlockOutOfRangeError: block height is 0 but requested was 1"}}"#;
    assert_eq!(judge(future).await, stale());
    let pruned = r#"{"jsonrpc":"2.0","error":{"code":-32602,"message":"","data":"BlockOutOfRangeError: block height is 16 but requested was 2"}}"#;
    assert_eq!(judge(pruned).await, stale());
    let long = format!(
        r#"{{"jsonrpc":"2.0","error":{{"code":-32602,"message":"","data":"BlockOutOfRangeError: block height is 0 but requested was 1{}"}}}}"#,
        " ".repeat(512)
    );
    assert_eq!(judge(&long).await, definitive(), "a data string over 512 bytes is not read");
}

#[tokio::test]
async fn a_duplicate_key_counts_with_its_last_value() {
    for (body, expected) in [
        (r#"{"jsonrpc":"1.0","jsonrpc":"2.0","result":1}"#, Judgement::answer()),
        (r#"{"jsonrpc":"2.0","jsonrpc":"1.0","result":1}"#, broken()),
        (r#"{"jsonrpc":"2.0","result":1,"result":[2]}"#, Judgement::answer()),
        (r#"{"jsonrpc":"2.0","error":[],"error":{"code":-32005,"message":"x"}}"#, capacity(None)),
        (r#"{"jsonrpc":"2.0","error":{"code":-32005,"message":"x"},"error":[]}"#, broken()),
        (
            r#"{"jsonrpc":"2.0","error":{"code":-32005,"message":"x"},"error":null,"result":1}"#,
            Judgement::answer(),
        ),
        (r#"{"jsonrpc":"2.0","error":{"code":"x","code":-32603,"message":1,"message":"m"}}"#, broken()),
        (r#"{"jsonrpc":"2.0","error":{"code":-32603,"code":3,"message":"m"}}"#, definitive()),
        (
            r#"{"jsonrpc":"2.0","error":{"code":-32005,"data":{"rate":{"backoff_seconds":9}},"data":{"rate":{"backoff_seconds":2}}}}"#,
            capacity(Some(Duration::from_secs(2))),
        ),
    ] {
        assert_eq!(judge(body).await, expected, "{body}");
    }
}

#[tokio::test]
async fn a_number_beyond_f64_is_skipped_unread_in_a_result_and_breaks_a_field_judging_reads() {
    assert_eq!(judge(r#"{"jsonrpc":"2.0","id":1,"result":[1e400]}"#).await, Judgement::answer());
    for body in [
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":1e400,"message":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"data":{"rate":{"backoff_seconds":1e400}}}}"#,
    ] {
        assert_eq!(judge(body).await, broken(), "{body}");
    }
}

// ===== batches =====

const OK: &str = r#"{"jsonrpc":"2.0","id":1,"result":"0x1"}"#;

fn batch(items: &[&str]) -> String {
    format!("[{}]", items.join(","))
}

#[tokio::test]
async fn a_batch_of_results_is_an_answer() {
    assert_eq!(judge(&batch(&[OK, OK, OK])).await, Judgement::answer());
}

#[tokio::test]
async fn a_batch_with_one_capacity_item_fails_over_as_a_whole_with_the_longest_hint() {
    let short = error(-32005, "rate limited, try again in 1s");
    let long = error(-32005, "rate limited, try again in 4s");
    let broken_item = error(-32603, "internal error");
    let body = batch(&[OK, &short, &broken_item, &long]);
    assert_eq!(judge(&body).await, capacity(Some(Duration::from_secs(4))));
}

#[tokio::test]
async fn a_batch_with_a_broken_or_stale_item_fails_over() {
    assert_eq!(judge(&batch(&[OK, &error(-32603, "boom")])).await, broken());
    assert_eq!(judge(&batch(&[OK, &error(-32000, "header not found")])).await, stale());
    assert_eq!(judge(&batch(&[&error(-32000, "header not found"), &error(-32603, "x")])).await, broken());
}

#[tokio::test]
async fn a_batch_with_a_capacity_answer_and_a_malformed_one_is_capacity_with_the_hint() {
    let limited = r#"{"jsonrpc":"2.0","error":{"code":-32005,"message":"try again in 30s"}}"#;
    let body = batch(&[limited, r#"{"jsonrpc":"2.0","error":"x"}"#]);
    assert_eq!(judge(&body).await, capacity(Some(Duration::from_secs(30))));
    assert_eq!(judge_status(429, &body).await, capacity(Some(Duration::from_secs(30))));
    let body =
        batch(&[r#"{"jsonrpc":"2.0","error":[-32005]}"#, OK, r#"{"jsonrpc":"2.0","error":{"code":"1"}}"#]);
    assert_eq!(judge(&body).await, broken(), "a malformed answer is broken, not the batch");
}

#[tokio::test]
async fn a_batch_that_is_not_json_is_broken_as_a_whole_even_after_a_capacity_answer() {
    let limited = r#"{"jsonrpc":"2.0","error":{"code":-32005,"message":"try again in 30s"}}"#;
    for body in [format!("[{limited},"), format!("[{limited},{{\"jsonrpc\":\"2.0\",\"result\":\"\u{1}\"}}]")]
    {
        assert_eq!(judge(&body).await, broken(), "{body}");
    }
}

#[tokio::test]
async fn a_batch_item_that_is_not_an_object_is_broken() {
    for item in ["1", r#""x""#, "null", "[1,[2]]", "true"] {
        assert_eq!(judge(&batch(&[OK, item])).await, broken(), "{item}");
    }
}

#[tokio::test]
async fn a_batch_of_results_and_definitive_errors_is_returned_as_definitive() {
    let revert = error(3, "execution reverted");
    let judgement = judge(&batch(&[OK, &revert])).await;
    assert_eq!(judgement, Judgement::new(Verdict::Return, Evidence::Success, Class::Definitive));
    assert_eq!(judge(&batch(&[&revert, &error(-32602, "bad")])).await, definitive());
    assert_eq!(judge(&batch(&[OK, &error(-32000, "odd")])).await, Judgement::answer());
}

#[tokio::test]
async fn an_empty_batch_is_returned_neutral() {
    assert_eq!(judge("[]").await, unrecognised());
}

// ===== the body =====

#[tokio::test]
async fn json_under_another_content_type_is_judged_as_json() {
    let body = error(-32005, "rate limited");
    for content_type in [Some("text/plain"), Some("application/jsonx"), Some("json"), None] {
        let response = response(200, content_type, &[body.as_bytes()], None);
        assert_eq!(
            expect_response(classify(response).await, &body).await,
            capacity(None),
            "{content_type:?}"
        );
    }
}

#[tokio::test]
async fn a_body_that_is_not_json_is_never_an_answer_and_its_words_say_why() {
    let judged = |status: u16, content_type: &'static str, body: &'static str| async move {
        let response = response(status, Some(content_type), &[body.as_bytes()], None);
        expect_response(classify(response).await, body).await
    };
    assert_eq!(judged(200, "text/html", "<html><body>It works</body></html>").await, broken());
    assert_eq!(judged(200, "text/plain", "").await, broken());
    assert_eq!(judged(200, "text/plain", "error code: 1015").await, capacity(None), "Cloudflare");
    let over = "Too Many Requests, [code:OVER_LIMIT current_limit:{requests_per_unit:1500 unit:MINUTE}]";
    assert_eq!(judged(429, "text/plain", over).await, capacity(None));
    let unauthorized =
        Judgement::new(Verdict::FailOver { cool_for: None }, Evidence::Failure, Class::Unauthorized);
    assert_eq!(judged(401, "text/plain", "invalid project id\n").await, unauthorized, "Infura");
    assert_eq!(judged(200, "text/plain", "App is inactive.").await, unauthorized, "words alone");
    assert_eq!(judged(403, "text/html", "<html>Request blocked.</html>").await, unauthorized);
    let payment = Judgement::new(Verdict::FailOver { cool_for: None }, Evidence::Failure, Class::Payment);
    assert_eq!(judged(402, "text/plain", "").await, payment);
    let limit = Judgement::new(Verdict::FailOver { cool_for: None }, Evidence::Neutral, Class::Limit);
    assert_eq!(judged(413, "text/plain", "").await, limit);
    assert_eq!(judged(500, "text/plain", "oops").await, broken());
}

#[tokio::test]
async fn statuses_name_the_account_and_the_limit_unless_the_body_says_more() {
    let judged = |status: u16, body: String| async move {
        let response = json(status, &[body.as_bytes()]);
        expect_response(classify(response).await, &body).await
    };
    let fail_over = |evidence, class| Judgement::new(Verdict::FailOver { cool_for: None }, evidence, class);
    // A JSON-RPC error the table returns is overruled by the status.
    let unauthorized = fail_over(Evidence::Failure, Class::Unauthorized);
    assert_eq!(judged(401, error(-32000, "odd")).await, unauthorized);
    assert_eq!(judged(403, error(-32600, "odd")).await, unauthorized);
    assert_eq!(judged(410, error(-32000, "odd")).await, unauthorized);
    assert_eq!(judged(413, error(-32000, "odd")).await, fail_over(Evidence::Neutral, Class::Limit));
    assert_eq!(judged(405, error(-32000, "odd")).await.class, Class::Stale);
    // A body that says more keeps its word: a monthly quota under 403 or 429 is payment.
    let quota = error(-32600, "Monthly capacity limit exceeded. Visit the billing page");
    assert_eq!(judged(403, quota.clone()).await, fail_over(Evidence::Failure, Class::Payment));
    assert_eq!(judged(429, quota).await, fail_over(Evidence::Failure, Class::Payment));
    // 400 is how many nodes send invalid params: the body decides.
    assert_eq!(judged(400, error(-32602, "invalid argument 0")).await, definitive());
}

#[tokio::test]
async fn limits_on_the_request_are_not_capacity_even_under_the_rate_limit_code() {
    let limit = Judgement::new(Verdict::FailOver { cool_for: None }, Evidence::Neutral, Class::Limit);
    for (code, message) in [
        (-32005, "query returned more than 10000 results"),
        (-32602, "range 1000000 exceeds limit of 10000"),
        (-32000, "exceed maximum block range: 5000"),
        (-32005, "batch size exceed limit 500"),
        (-32000, "batch limit 100 exceeded: 142 requests given"),
    ] {
        assert_eq!(judge(&error(code, message)).await, limit, "{message}");
    }
    // A revert that speaks of a block range is still a revert.
    assert_eq!(judge(&error(3, "execution reverted: block range")).await, definitive());
}

#[tokio::test]
async fn a_bare_error_object_without_the_envelope_is_judged_by_its_code_and_message() {
    let quicknode =
        r#"{"code":-32007,"message":"100/second request limit reached - reduce calls per second"}"#;
    assert_eq!(judge(quicknode).await, capacity(None));
    let nested = r#"{"error":{"code":-32602,"message":"Invalid params"}}"#;
    assert_eq!(judge(nested).await, definitive());
    assert_eq!(judge(r#"{"error":{"code":-32000,"message":"odd"}}"#).await, broken(), "unknown: broken");
}

#[tokio::test]
async fn json_with_parameters_and_plus_json_types_are_read() {
    let body = error(-32005, "rate limited");
    for content_type in ["application/json; charset=utf-8", "Application/JSON", "application/vnd.api+json"] {
        let response = response(200, Some(content_type), &[body.as_bytes()], None);
        assert_eq!(expect_response(classify(response).await, &body).await, capacity(None), "{content_type}");
    }
}

#[tokio::test]
async fn the_rebuilt_response_keeps_status_version_headers_extensions_url_and_bytes() {
    let chunks: [&[u8]; 3] = [br#"{"jsonrpc":"2.0","#, br#""id":1,"result""#, br#":"0x\u00e9"}"#];
    let original = json(201, &chunks);
    let (url, version) = (original.url().clone(), original.version());
    let Classified::Response(rebuilt, judgement) = classify(original).await else { panic!("failed") };
    assert_eq!(judgement, Judgement::answer());
    assert_eq!(rebuilt.status(), 201);
    assert_eq!(rebuilt.version(), version);
    assert_eq!(rebuilt.url(), &url);
    assert_eq!(rebuilt.headers()["x-kept"], "yes");
    assert_eq!(rebuilt.headers()["content-type"], "application/json");
    assert_eq!(rebuilt.extensions().get::<Marker>().map(|m| m.0), Some(7));
    assert_eq!(rebuilt.content_length(), Some(chunks.iter().map(|c| c.len() as u64).sum()));
    assert_eq!(rebuilt.bytes().await.unwrap(), chunks.concat());
}

#[tokio::test]
async fn the_rebuilt_body_hands_out_the_same_chunks_without_copying() {
    let body = Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"result":"0x1"}"#);
    let (first, second) = (body.slice(..10), body.slice(10..));
    let original = Response::from(
        http::Response::builder()
            .header("content-type", "application/json")
            .body(reqwest::Body::wrap(TestBody {
                chunks: [first.clone(), second.clone()].into(),
                then: None,
            }))
            .unwrap(),
    );
    let Classified::Response(mut rebuilt, _) = classify(original).await else { panic!("failed") };
    let again = rebuilt.chunk().await.unwrap().unwrap();
    assert_eq!(again.as_ptr(), first.as_ptr(), "the very bytes read, not a copy");
    assert_eq!(rebuilt.chunk().await.unwrap().unwrap().as_ptr(), second.as_ptr());
    assert!(rebuilt.chunk().await.unwrap().is_none());
}

#[tokio::test]
async fn over_the_cap_the_response_is_returned_unjudged_with_every_byte() {
    // Judged, this body would fail over (capacity); above the cap it is not judged.
    let body = error(-32005, "rate limited");
    let pieces: Vec<&[u8]> = body.as_bytes().chunks(4).collect();
    let classifier = JsonRpcClassifier::new().max_body(10);
    let judgement = expect_response(classify_with(&classifier, json(200, &pieces)).await, &body).await;
    assert_eq!(judgement, Judgement::answer());
}

#[tokio::test]
async fn over_the_cap_a_429_stays_capacity() {
    let body = error(-32005, "rate limited");
    let classifier = JsonRpcClassifier::new().max_body(4);
    let judgement =
        expect_response(classify_with(&classifier, json(429, &[body.as_bytes()])).await, &body).await;
    assert_eq!(judgement, capacity(None));
}

#[tokio::test]
async fn over_the_cap_an_error_later_in_the_stream_reaches_the_caller() {
    let classifier = JsonRpcClassifier::new().max_body(4);
    let response = response(
        200,
        Some("application/json"),
        &[b"{\"jsonrpc\"", b":"],
        Some(io::ErrorKind::ConnectionReset),
    );
    let Classified::Response(mut rebuilt, judgement) = classify_with(&classifier, response).await else {
        panic!("over the cap is returned")
    };
    assert_eq!(judgement, Judgement::answer());
    assert_eq!(rebuilt.chunk().await.unwrap().unwrap(), &b"{\"jsonrpc\""[..]);
    assert_eq!(rebuilt.chunk().await.unwrap().unwrap(), &b":"[..]);
    assert!(rebuilt.chunk().await.is_err());
}

#[tokio::test]
async fn a_content_length_above_the_cap_is_not_read() {
    let body = error(-32005, "rate limited");
    // A body from bytes has an exact size: `content_length()` is known before any read.
    let original = Response::from(
        http::Response::builder()
            .header("content-type", "application/json")
            .body(reqwest::Body::from(body.clone()))
            .unwrap(),
    );
    assert_eq!(original.content_length(), Some(body.len() as u64));
    let classifier = JsonRpcClassifier::new().max_body(body.len() - 1);
    assert_eq!(expect_response(classify_with(&classifier, original).await, &body).await, Judgement::answer());
}

#[tokio::test]
async fn a_body_exactly_at_the_cap_is_judged() {
    let body = error(-32005, "rate limited");
    let at_the_cap = JsonRpcClassifier::new().max_body(body.len());
    let response = json(200, &[body.as_bytes()]);
    assert_eq!(expect_response(classify_with(&at_the_cap, response).await, &body).await, capacity(None));
}

#[tokio::test]
async fn a_truncated_body_fails_over_as_broken_without_the_url() {
    for kind in [io::ErrorKind::UnexpectedEof, io::ErrorKind::ConnectionReset] {
        let response = response(200, Some("application/json"), &[br#"{"jsonrpc":"2.0","#], Some(kind));
        let Classified::Failed(error, judgement) = classify(response).await else {
            panic!("{kind:?} must fail")
        };
        assert_eq!(judgement, broken());
        let shown = format!("{error} {error:?}");
        assert!(!shown.contains("SECRET") && !shown.contains("pass"), "{shown}");
        assert!(matches!(&error, reqwest_middleware::Error::Reqwest(e) if e.url().is_none()));
    }
}

#[tokio::test]
async fn the_default_cap_is_4_mib_and_configurable() {
    assert_eq!(JsonRpcClassifier::new().max_body_len(), 4 << 20);
    assert_eq!(JsonRpcClassifier::default().max_body_len(), JsonRpcClassifier::DEFAULT_MAX_BODY);
    assert_eq!(JsonRpcClassifier::new().max_body(1).max_body_len(), 1);
}

#[tokio::test]
async fn a_zero_cap_reads_nothing_and_judges_only_the_status() {
    let classifier = JsonRpcClassifier::new().max_body(0);
    let body = error(-32005, "rate limited");
    let reset = response(200, Some("application/json"), &[], Some(io::ErrorKind::ConnectionReset));
    let Classified::Response(_, judgement) = classify_with(&classifier, reset).await else {
        panic!("not read")
    };
    assert_eq!(judgement, Judgement::answer());
    let limited = json(429, &[body.as_bytes()]);
    assert_eq!(expect_response(classify_with(&classifier, limited).await, &body).await, capacity(None));
}

#[tokio::test]
async fn a_large_result_in_many_chunks_is_judged_an_answer_byte_for_byte() {
    let mut body = String::from(r#"{"jsonrpc":"2.0","id":7,"result":["#);
    for i in 0..20_000 {
        body.push_str(&format!(r#"{{"blockNumber":"0x{i:x}","data":"0x{}"}},"#, "ab".repeat(16)));
    }
    body.push_str(r#"null]}"#);
    assert!(body.len() > 1 << 20);
    let pieces: Vec<&[u8]> = body.as_bytes().chunks(8 * 1024).collect();
    let judgement = expect_response(classify(json(200, &pieces)).await, &body).await;
    assert_eq!(judgement, Judgement::answer());
}

#[tokio::test]
async fn a_real_response_keeps_its_url_and_remote_address() {
    use wiremock::{Mock, MockServer, ResponseTemplate, matchers::any};
    let server = MockServer::start().await;
    let body = error(-32603, "internal error");
    Mock::given(any())
        .respond_with(ResponseTemplate::new(200).set_body_raw(body.clone(), "application/json"))
        .mount(&server)
        .await;
    let url = format!("{}/v3/key", server.uri());
    let original = reqwest::Client::new().post(&url).send().await.unwrap();
    let (remote, url) = (original.remote_addr(), original.url().clone());
    let Classified::Response(rebuilt, judgement) = classify(original).await else { panic!("failed") };
    assert_eq!(judgement, broken());
    assert_eq!(rebuilt.url(), &url);
    assert_eq!(rebuilt.remote_addr(), remote);
    assert_eq!(rebuilt.content_length(), Some(body.len() as u64));
    assert_eq!(rebuilt.text().await.unwrap(), body);
}

// ===== over real connections (the loopback toolkit) =====

mod loopback {
    use failnext_loopback::{Action, End, Reply, Server};

    use super::*;

    async fn fetch(reply: Reply) -> (Server, Response) {
        let server = Server::always(Action::Reply(reply)).await;
        let response =
            reqwest::Client::new().post(server.url("/v3/SECRETKEY?k=SECRETQUERY")).send().await.unwrap();
        (server, response)
    }

    #[tokio::test]
    async fn a_body_shorter_than_its_length_fails_over_as_broken_without_the_url() {
        let reply = Reply::new(200).json(&br#"{"jsonrpc":"2.0","id":1,"res"#[..]).length(400).end(End::Close);
        let (_server, response) = fetch(reply).await;
        let Classified::Failed(error, judgement) = classify(response).await else {
            panic!("truncated must fail")
        };
        assert_eq!(judgement, broken());
        let shown = format!("{error} {error:?}");
        assert!(!shown.contains("SECRET"), "{shown}");
    }

    #[tokio::test]
    async fn a_body_reset_mid_way_fails_over_as_broken() {
        let reply =
            Reply::new(200).json(&br#"{"jsonrpc":"2.0","id":1,"result":["#[..]).chunked().end(End::Reset);
        let (_server, response) = fetch(reply).await;
        let Classified::Failed(_, judgement) = classify(response).await else { panic!("reset must fail") };
        assert_eq!(judgement, broken());
    }

    #[tokio::test]
    async fn a_chunked_body_over_the_cap_reaches_the_caller_whole() {
        let piece = format!(r#"{{"n":"{}"}},"#, "7".repeat(1000));
        let mut reply = Reply::new(200)
            .content_type("application/json")
            .chunked()
            .send(&br#"{"jsonrpc":"2.0","id":1,"result":["#[..]);
        let mut expected = String::from(r#"{"jsonrpc":"2.0","id":1,"result":["#);
        for _ in 0..64 {
            reply = reply.send(piece.clone()).pause(Duration::from_millis(1));
            expected.push_str(&piece);
        }
        reply = reply.send(&b"null]}"[..]);
        expected.push_str("null]}");
        let (_server, response) = fetch(reply).await;
        let url = response.url().clone();
        let classifier = JsonRpcClassifier::new().max_body(4 * 1024);
        let Classified::Response(rebuilt, judgement) = classify_with(&classifier, response).await else {
            panic!("over the cap is returned")
        };
        assert_eq!(judgement, Judgement::answer());
        assert_eq!(rebuilt.url(), &url);
        assert_eq!(rebuilt.text().await.unwrap(), expected);
    }

    #[tokio::test]
    async fn a_chunked_answer_within_the_cap_is_judged_and_returned_whole() {
        let reply = Reply::new(200)
            .content_type("application/json")
            .chunked()
            .send(&br#"{"jsonrpc":"2.0","id":1,"#[..])
            .pause(Duration::from_millis(5))
            .send(&br#""error":{"code":-32005,"message":"limit"}}"#[..]);
        let (_server, response) = fetch(reply).await;
        let body = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"limit"}}"#;
        assert_eq!(expect_response(classify(response).await, body).await, capacity(None));
    }
}

// ===== the result, when it is a quantity =====

/// Classifies `body` with `status` in one chunk, in 3-byte chunks, in 1-byte chunks and split
/// in two at every byte: all must agree on the judgement and on the quantity its findings
/// carry, and hand back the same bytes.
async fn quantity_of(status: u16, body: &str) -> (Judgement, Option<u64>) {
    let bytes = body.as_bytes();
    let mut chunkings: Vec<Vec<&[u8]>> =
        vec![vec![bytes], bytes.chunks(3).collect(), bytes.chunks(1).collect()];
    chunkings.extend((1..bytes.len()).map(|at| {
        let (a, b) = bytes.split_at(at);
        vec![a, b]
    }));
    let mut seen = None;
    for chunks in chunkings {
        let Classified::Response(response, judgement) = classify(json(status, &chunks)).await else {
            panic!("failed: {body}");
        };
        let quantity = judgement.findings().quantity;
        assert_eq!(response.bytes().await.unwrap(), bytes);
        let this = (judgement, quantity);
        assert_eq!(*seen.get_or_insert(this), this, "{} chunks: {body}", chunks.len());
    }
    seen.unwrap()
}

fn answer(result: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#)
}

#[tokio::test]
async fn a_single_answer_whose_result_is_a_quantity_carries_it_on_the_response() {
    for (body, value) in [
        (answer(r#""0x1b4""#), 0x1b4),
        (answer(r#""0x0""#), 0),
        (answer(r#""0xffffffffffffffff""#), u64::MAX),
        (r#"{"result" : "0x10","jsonrpc":"2.0"}"#.to_owned(), 0x10),
        (" {\n\"jsonrpc\":\"2.0\",\"result\"\t:\r\n\"0x2\" ,\"id\":\"x\"}\n".to_owned(), 2),
        (r#"{"jsonrpc":"2.0","id":1,"error":null,"result":"0x5"}"#.to_owned(), 5),
    ] {
        assert_eq!(quantity_of(200, &body).await, (Judgement::answer(), Some(value)), "{body}");
    }
}

#[tokio::test]
async fn a_quantity_in_upper_case_or_with_leading_zeros_is_read_leniently() {
    for (result, value) in [(r#""0X1B4""#, 0x1b4), (r#""0x0000000000000001""#, 1), (r#""0x00""#, 0)] {
        assert_eq!(quantity_of(200, &answer(result)).await, (Judgement::answer(), Some(value)), "{result}");
    }
}

#[tokio::test]
async fn a_batch_or_a_long_result_carries_no_quantity() {
    let hash = format!(r#""0x{}""#, "ab".repeat(32));
    for body in [
        batch(&[&answer(r#""0x1""#)]),
        batch(&[&answer(r#""0x1""#), &answer(r#""0x2""#)]),
        answer(r#""0x00000000000000001""#),
        answer(r#""0x10000000000000000""#),
        answer(&hash),
    ] {
        assert_eq!(quantity_of(200, &body).await, (Judgement::answer(), None), "{body}");
    }
}

#[tokio::test]
async fn a_result_that_is_not_a_quantity_is_still_an_answer() {
    for result in [
        r#""latest""#,
        r#""0x""#,
        r#""""#,
        r#""1b4""#,
        r#""0xg""#,
        r#""0x1 ""#,
        r#""-0x1""#,
        r#""\u0030x1""#,
        r#""0x1\u0030""#,
        "1",
        "1e400",
        "null",
        "true",
        r#"["0x1"]"#,
        r#"{"result":"0x1"}"#,
    ] {
        assert_eq!(quantity_of(200, &answer(result)).await, (Judgement::answer(), None), "{result}");
    }
}

#[tokio::test]
async fn a_key_written_with_an_escape_carries_no_quantity() {
    let body = r#"{"jsonrpc":"2.0","id":1,"\u0072esult":"0x1"}"#;
    assert_eq!(quantity_of(200, body).await, (Judgement::answer(), None));
}

#[tokio::test]
async fn the_last_of_duplicate_results_decides_the_quantity() {
    let last = r#"{"jsonrpc":"2.0","result":"0x1","result":"0x2"}"#;
    assert_eq!(quantity_of(200, last).await, (Judgement::answer(), Some(2)));
    let not_last = r#"{"jsonrpc":"2.0","result":"0x1","result":[]}"#;
    assert_eq!(quantity_of(200, not_last).await, (Judgement::answer(), None));
}

#[tokio::test]
async fn an_error_or_a_broken_answer_carries_no_quantity() {
    let revert =
        r#"{"jsonrpc":"2.0","id":1,"result":"0x1","error":{"code":3,"message":"execution reverted"}}"#;
    assert_eq!(quantity_of(200, revert).await, (definitive(), None));
    let unknown = r#"{"jsonrpc":"2.0","id":1,"result":"0x1","error":{"code":-1}}"#;
    assert_eq!(quantity_of(200, unknown).await, (unrecognised(), None));
    for body in [
        r#"{"jsonrpc":"1.0","id":1,"result":"0x1"}"#,
        r#"{"id":1,"result":"0x1"}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":"0x1","error":[]}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":"0x1"} x"#,
        r#"{"jsonrpc":"2.0","id":1,"result":"0x1""#,
        r#"{"jsonrpc":"2.0","id":1,"result":"0x1","x":"\ud800"}"#,
    ] {
        assert_eq!(quantity_of(200, body).await, (broken(), None), "{body}");
    }
}

#[tokio::test]
async fn http_429_keeps_the_bodys_quantity_and_stays_capacity() {
    assert_eq!(quantity_of(429, &answer(r#""0x7""#)).await, (capacity(None), Some(7)));
}

#[tokio::test]
async fn a_body_that_is_not_read_carries_no_quantity() {
    let body = answer(r#""0x7""#);
    for (classifier, response) in [
        (JsonRpcClassifier::new().max_body(4), json(200, &[body.as_bytes()])),
        (JsonRpcClassifier::new().max_body(0), json(200, &[body.as_bytes()])),
    ] {
        let Classified::Response(response, judgement) = classify_with(&classifier, response).await else {
            panic!("failed");
        };
        assert_eq!(judgement, Judgement::answer());
        assert_eq!(judgement.findings().quantity, None);
        drop(response);
    }
}

proptest::proptest! {
    #[test]
    fn a_short_result_string_carries_exactly_what_parse_lenient_reads_in_any_chunking(
        text in "(0[xX])?[+0-9a-fA-Fg]{0,20}",
        at in proptest::prelude::any::<proptest::sample::Index>(),
    ) {
        let body = answer(&format!("\"{text}\""));
        let expected = if text.len() <= 18 { crate::quantity::parse_lenient(&text).ok() } else { None };
        let bytes = Bytes::from(body.clone());
        let whole = super::parse::tally(std::slice::from_ref(&bytes));
        proptest::prop_assert_eq!(whole.quantity(), expected);
        proptest::prop_assert_eq!(whole.judgement(), Judgement::answer());
        let at = at.index(bytes.len() + 1);
        let split = super::parse::tally(&[bytes.slice(..at), bytes.slice(at..)]);
        proptest::prop_assert_eq!(split, whole, "split at {}", at);
    }
}

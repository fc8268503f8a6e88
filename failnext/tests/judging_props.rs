//! Property tests of JSON-RPC judging against a reference judge built on `serde_json`.
//!
//! The reference (test code only, [`reference`] below) parses the body with
//! `serde_json::from_slice::<serde_json::Value>` and applies the table, the batch rule and
//! the `Retry-After` rule of the `failnext::jsonrpc` module docs, written again from the docs
//! (its pattern lists are the docs' table, not the parser's). Every property drives the
//! public [`JsonRpcClassifier`] through the public [`Classifier`] trait on a
//! `reqwest::Response` whose body is split into random chunks, and checks that:
//!
//! - the classifier's judgement (class, verdict with its `cool_for` hint, evidence) is the
//!   reference's;
//! - the response handed back holds the very bytes it was given;
//! - nothing panics (a panic fails the property like a wrong verdict).
//!
//! **Where the parser and `serde_json::Value` could part**, by a documented rule:
//!
//! - a key that appears twice: both count it with its last value, so the reference is plain
//!   `Value` (`malformed_fields_and_duplicate_keys_are_judged_as_the_reference_says`);
//! - depth: `Value` stops at 128 levels, while the parser skips a value at any depth, so
//!   `depth_never_changes_a_verdict` compares a deep body with the reference's verdict on
//!   the same body with the deep value made shallow (bodies at most 100 deep are also
//!   compared as they are);
//! - a number beyond the range of an `f64` (`1e400`) in a value judging skips: `Value`
//!   rejects it, the parser does not read it (the docs say so); such numbers are generated
//!   only where judging reads them (`error.code`, `backoff_seconds`), where both judge the
//!   body broken.
//!
//! **Case counts.** Each property uses proptest's own configuration, so the
//! `PROPTEST_CASES` environment variable sets every property's count; unset, each runs a
//! count small enough for CI (`cheap(..)` below: the whole file in a few seconds on two
//! cores). The full profile:
//!
//! ```text
//! cargo xtask props   # PROPTEST_CASES=10000 cargo test --release -p failnext --features jsonrpc --test judging_props
//! ```

use std::cell::RefCell;
use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use failnext::jsonrpc::JsonRpcClassifier;
use failnext::{Class, Classified, Classifier, EndpointId, Evidence, Judgement, Verdict};
use http_body::Frame;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::{Map, Value};

/// The judge's cap on every hint.
const MAX_HINT: Duration = Duration::from_secs(300);

/// proptest's default configuration (which reads `PROPTEST_CASES`), with `cases` when the
/// variable is unset, and no regression files written into the source tree.
fn cheap(cases: u32) -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = cases;
    }
    config.failure_persistence = None;
    config
}

// ===== the reference judge =====

/// The docs' table, row by row: the phrases each row matches (lower case).
const REVERT: &[&str] = &["revert", "vm execution error", "vm exception"];
const LIMIT: &[&str] = &[
    "query returned more than",
    "block range",
    "exceeds limit of",
    "range limit",
    "is limited to a",
    "response size",
    "batch size",
    "batch limit",
    "batch too large",
    "specified in query",
];
const PAYMENT: &[&str] = &["capacity limit", "reached the free tier", "ran out of cu", "payment required"];
const CAPACITY: &[&str] = &[
    "rate limit",
    "rate exceeded",
    "too many requests",
    "credits limited",
    "request limit",
    "requests limited to",
    "daily request count exceeded",
    "exceeded the quota",
    "reached the quota",
    "under too much load",
    "compute units per second",
    "throughput limit",
    "api usage limit",
    "concurrent requests",
    "over_limit",
    "error code: 1015",
];
const UNAUTHORIZED: &[&str] = &[
    "unauthorized",
    "must authenticate",
    "invalid project id",
    "project id is required",
    "project id not provided",
    "project id settings",
    "does not have access",
    "not on whitelist",
    "not allowed to access",
    "invalid api key",
    "app is inactive",
    "application not found",
    "secretkey does not match",
    "invalid host specified",
    "no longer allowed",
    "request blocked",
];
const BLOCK_MISSING: &[&str] = &[
    "header not found",
    "header for hash not found",
    "unknown block",
    "block not found",
    "could not find block",
    "cannot query unfinalized",
    "height is not available",
    "resource not found",
    "not currently canonical",
    "requested block height",
    "could not be found",
];
const STATE_MISSING: &[&str] = &[
    "missing trie node",
    "historical state",
    "state not available",
    "state is not available",
    "no state available",
    "state pruning",
    "before txnum",
    "due to pruning",
];
const DEFINITIVE: &[&str] = &[
    "nonce too low",
    "nonce too high",
    "insufficient funds",
    "insufficient balance",
    "already known",
    "known transaction",
    "transaction underpriced",
    "gas too low",
    "out of gas",
    "exceeds block gas limit",
    "less than block base fee",
    "exceeds the configured cap",
    "gas required exceeds allowance",
    "invalid sender",
    "invalid argument",
    "invalid params",
    "wrong transaction nonce",
    "not proper json",
];
const UNSUPPORTED: &[&str] = &[
    "method not found",
    "unsupported method",
    "method is not whitelisted",
    "is not included in your current plan",
    "does not support",
    "not available on freetier",
];
const TIMEOUT: &[&str] = &["timeout", "timed out"];
const UNAVAILABLE: &[&str] = &[
    "no backend is currently healthy",
    "relay attempts exhausted",
    "unable to complete request",
    "cannot fulfill request",
    "method handler crashed",
    "internal service failure",
    "service temporarily unavailable",
    "service unavailable",
    "bad gateway",
    "gateway time",
];

/// How the reference judged one answer.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Said {
    Result,
    Definitive,
    Capacity(Option<Duration>),
    Stale,
    Broken,
    Unrecognised,
    Unauthorized,
    Payment,
    Limit,
    Timeout,
}

/// The judgement the docs give a response with `status`, `body` and a `Retry-After` worth
/// `retry_after` (already read by the docs' rule and capped).
fn reference(status: u16, body: &[u8], retry_after: Option<Duration>) -> Judgement {
    reference_worded(status, body, body, retry_after)
}

/// [`reference`] with the words of a body that is no JSON-RPC answer read from `sent` (the
/// bytes as sent: the 4 KiB window is of those), the rest from `body`.
fn reference_worded(status: u16, body: &[u8], sent: &[u8], retry_after: Option<Duration>) -> Judgement {
    let mut said = Vec::new();
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(answer)) => said.push(judge_answer(&answer)),
        Ok(Value::Array(items)) => said.extend(items.iter().map(|item| match item {
            Value::Object(answer) => judge_answer(answer),
            _ => Said::Broken,
        })),
        _ => said.push(Said::Broken),
    }
    // A body that is no JSON-RPC answer at all: its first 4 KiB of words may say why.
    let only_broken =
        said.contains(&Said::Broken) && said.iter().all(|s| matches!(s, Said::Broken | Said::Unrecognised));
    if only_broken {
        if let Some(by_words) = words(sent) {
            said = vec![by_words];
        }
    }
    // The status rule: what the status names, unless the body said something more specific.
    let top =
        [Said::Unauthorized, Said::Payment, Said::Capacity(None), Said::Limit, Said::Timeout, Said::Stale]
            .into_iter()
            .find(|t| said.iter().any(|s| std::mem::discriminant(s) == std::mem::discriminant(t)));
    let specific = top.is_some();
    let by_status = match status {
        429 if !matches!(top, Some(Said::Unauthorized | Said::Payment | Said::Limit)) => {
            Some(Said::Capacity(None))
        }
        401 | 403 | 407 | 410 if !specific => Some(Said::Unauthorized),
        402 if !specific => Some(Said::Payment),
        413 | 414 | 431 if !specific => Some(Said::Limit),
        405 if !specific => Some(Said::Stale),
        _ => None,
    };
    if let Some(kind) = by_status {
        // A body that is no JSON-RPC answer (broken, its errors unrecognised) and whose words
        // named nothing: the status names it.
        if said.contains(&Said::Broken) && said.iter().all(|s| matches!(s, Said::Broken | Said::Unrecognised))
        {
            said.clear();
        }
        said.push(kind);
    }
    let fail_over = |cool_for| Verdict::FailOver { cool_for };
    let any = |wanted: Said| said.contains(&wanted);
    if any(Said::Unauthorized) {
        return Judgement::new(fail_over(None), Evidence::Failure, Class::Unauthorized);
    }
    if any(Said::Payment) {
        return Judgement::new(fail_over(None), Evidence::Failure, Class::Payment);
    }
    let capacity: Vec<Option<Duration>> =
        said.iter().filter_map(|s| if let Said::Capacity(h) = s { Some(*h) } else { None }).collect();
    if !capacity.is_empty() {
        let hint = capacity.into_iter().flatten().max().or(retry_after);
        return Judgement::new(fail_over(hint), Evidence::Failure, Class::Capacity);
    }
    if any(Said::Broken) {
        return Judgement::new(fail_over(None), Evidence::Failure, Class::Broken);
    }
    if any(Said::Timeout) {
        return Judgement::new(fail_over(None), Evidence::Neutral, Class::Broken);
    }
    if any(Said::Limit) {
        return Judgement::new(fail_over(None), Evidence::Neutral, Class::Limit);
    }
    if any(Said::Stale) {
        return Judgement::new(fail_over(None), Evidence::Neutral, Class::Stale);
    }
    let evidence = if any(Said::Result) { Evidence::Success } else { Evidence::Neutral };
    let class = if any(Said::Definitive) { Class::Definitive } else { Class::Answer };
    Judgement::new(Verdict::Return, evidence, class)
}

/// The words of a body that is no JSON-RPC answer: its first 4 KiB, lower-cased; a block or
/// state missing, or a backend down, leave it broken.
fn words(body: &[u8]) -> Option<Said> {
    let text = String::from_utf8_lossy(&body[..body.len().min(4096)]).to_ascii_lowercase();
    let said = |phrases: &[&str]| phrases.iter().any(|p| text.contains(p));
    if said(LIMIT) {
        Some(Said::Limit)
    } else if said(PAYMENT) {
        Some(Said::Payment)
    } else if said(CAPACITY) {
        Some(Said::Capacity(None))
    } else if said(UNAUTHORIZED) {
        Some(Said::Unauthorized)
    } else if said(BLOCK_MISSING) || said(STATE_MISSING) {
        None
    } else if said(TIMEOUT) {
        Some(Said::Timeout)
    } else {
        None
    }
}

/// One answer object: `jsonrpc` must be `"2.0"` (without it, an `error` object the table
/// knows is judged, anything else is broken); an `error` that is not `null` decides (an
/// object, else malformed); else a `result` (even `null`) is an answer.
fn judge_answer(answer: &Map<String, Value>) -> Said {
    if answer.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return match answer.get("error") {
            Some(Value::Object(error)) => match judge_error(error) {
                Said::Unrecognised | Said::Result => Said::Broken,
                said => said,
            },
            _ => Said::Broken,
        };
    }
    match answer.get("error") {
        Some(Value::Object(error)) => judge_error(error),
        Some(Value::Null) | None if answer.contains_key("result") => Said::Result,
        _ => Said::Broken,
    }
}

fn judge_error(error: &Map<String, Value>) -> Said {
    let code = match error.get("code") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) if n.as_i64().is_some() => n.as_i64(),
        Some(_) => return Said::Broken,
    };
    let message = match error.get("message") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.to_ascii_lowercase(),
        Some(_) => return Said::Broken,
    };
    let (data, backoff) = match error.get("data") {
        Some(Value::String(s)) if s.len() <= 512 => (s.to_ascii_lowercase(), None),
        Some(Value::Object(data)) => {
            let backoff = data.get("rate").and_then(Value::as_object).and_then(|r| r.get("backoff_seconds"));
            let mut text = String::new();
            for key in ["reason", "payload", "message", "details"] {
                if let Some(Value::String(s)) = data.get(key) {
                    if s.len() <= 512 && text.len() + s.len() < 512 {
                        text.push_str(&s.to_ascii_lowercase());
                        text.push(' ');
                    }
                }
            }
            (text, backoff.and_then(Value::as_f64))
        }
        _ => (String::new(), None),
    };
    let said = |phrases: &[&str]| phrases.iter().any(|p| message.contains(p) || data.contains(p));
    if code == Some(3) || said(REVERT) {
        return Said::Definitive;
    }
    if said(LIMIT) {
        return Said::Limit;
    }
    if said(PAYMENT) {
        return Said::Payment;
    }
    if matches!(code, Some(-32005 | -32007 | 429))
        || (code == Some(-32012) && said(&["credit"]))
        || backoff.is_some()
        || said(CAPACITY)
    {
        let from_data =
            backoff.filter(|s| s.is_finite() && *s >= 0.0).map(|s| Duration::from_secs_f64(s.min(300.0)));
        return Said::Capacity(from_data.or_else(|| text_hint(&message)).or_else(|| text_hint(&data)));
    }
    if said(UNAUTHORIZED) {
        return Said::Unauthorized;
    }
    if said(&["blockoutofrange"]) || (said(UNSUPPORTED) && code != Some(-32602)) {
        return Said::Stale;
    }
    if code == Some(-32001) || said(BLOCK_MISSING) || said(STATE_MISSING) {
        return Said::Stale;
    }
    if message.starts_with("state 0x") && message.ends_with("is not available") {
        return Said::Stale;
    }
    if matches!(code, Some(-32602 | -32600 | -32700)) || said(DEFINITIVE) {
        return Said::Definitive;
    }
    if matches!(code, Some(-32601 | -32004)) {
        return Said::Stale;
    }
    if said(TIMEOUT) {
        return Said::Timeout;
    }
    if code == Some(-32603) || said(UNAVAILABLE) {
        return Said::Broken;
    }
    Said::Unrecognised
}

/// The docs' hint in a text: the first of the phrases, in the docs' order, that the text
/// holds; then a decimal number (digits and dots) and an optional unit; capped.
fn text_hint(text: &str) -> Option<Duration> {
    let phrase = ["try again in", "try again after", "retry after", "retry in"]
        .into_iter()
        .find(|p| text.contains(p))?;
    let (_, rest) = text.split_once(phrase)?;
    let rest = rest.trim_start();
    let end = rest.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(rest.len());
    let number: f64 = rest[..end].parse().ok()?;
    let unit = rest[end..].trim_start();
    let seconds = if unit.starts_with("ms") || unit.starts_with("milli") {
        number / 1000.0
    } else if unit.starts_with('m') && !unit.starts_with("mo") {
        number * 60.0
    } else if unit.starts_with('h') {
        number * 3600.0
    } else {
        number
    };
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds.min(300.0)))
}

// ===== driving the classifier =====

/// A body that yields its chunks in order.
struct Chunks(VecDeque<Bytes>);

impl http_body::Body for Chunks {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        Poll::Ready(self.0.pop_front().map(|chunk| Ok(Frame::data(chunk))))
    }
}

thread_local! {
    static RUNTIME: RefCell<tokio::runtime::Runtime> = RefCell::new(
        tokio::runtime::Builder::new_current_thread().build().expect("a current-thread runtime"),
    );
}

/// `body` cut into chunks of the sizes in `sizes`, cycled (one chunk when `sizes` is empty).
fn split(body: &[u8], sizes: &[usize]) -> VecDeque<Bytes> {
    if sizes.is_empty() {
        return [Bytes::copy_from_slice(body)].into();
    }
    let mut chunks = VecDeque::new();
    let mut rest = body;
    for size in sizes.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (chunk, tail) = rest.split_at((*size).min(rest.len()));
        chunks.push_back(Bytes::copy_from_slice(chunk));
        rest = tail;
    }
    chunks
}

/// What the response says besides its body.
#[derive(Clone, Debug)]
struct Head {
    status: u16,
    content_type: &'static str,
    retry_after: RetryAfter,
    sizes: Vec<usize>,
}

/// A `Retry-After` header, and the hint the docs' rule reads from it.
#[derive(Clone, Debug)]
enum RetryAfter {
    None,
    Seconds(u64),
    /// 2099: beyond the cap whenever the test runs.
    FarFuture,
    Past,
    Garbage(&'static str),
}

impl RetryAfter {
    fn value(&self) -> Option<String> {
        match self {
            RetryAfter::None => None,
            RetryAfter::Seconds(n) => Some(n.to_string()),
            RetryAfter::FarFuture => Some("Thu, 01 Jan 2099 00:00:00 GMT".into()),
            RetryAfter::Past => Some("Sunday, 06-Nov-94 08:49:37 GMT".into()),
            RetryAfter::Garbage(g) => Some((*g).into()),
        }
    }

    fn hint(&self) -> Option<Duration> {
        match self {
            RetryAfter::Seconds(n) => Some(Duration::from_secs(*n).min(MAX_HINT)),
            RetryAfter::FarFuture => Some(MAX_HINT),
            RetryAfter::None | RetryAfter::Past | RetryAfter::Garbage(_) => None,
        }
    }
}

fn head() -> impl Strategy<Value = Head> {
    let status = prop_oneof![
        12 => Just(200u16),
        4 => Just(429u16),
        2 => Just(500u16),
        2 => Just(404u16),
        1 => Just(401u16),
        1 => Just(403u16),
        1 => Just(413u16),
    ];
    let content_type = prop::sample::select(vec![
        "application/json",
        "application/json",
        "application/json; charset=utf-8",
        "application/vnd.api+json",
        "text/plain",
    ]);
    let retry_after = prop_oneof![
        4 => Just(RetryAfter::None),
        2 => (0u64..1000).prop_map(RetryAfter::Seconds),
        1 => Just(RetryAfter::FarFuture),
        1 => Just(RetryAfter::Past),
        1 => prop::sample::select(vec!["-5", "1.5", "5s", "soon", "Wed, 21 Oct 2099 07:28:00"]).prop_map(RetryAfter::Garbage),
    ];
    let sizes = prop_oneof![2 => Just(Vec::new()), 3 => prop::collection::vec(1usize..48, 1..4)];
    (status, content_type, retry_after, sizes).prop_map(|(status, content_type, retry_after, sizes)| Head {
        status,
        content_type,
        retry_after,
        sizes,
    })
}

/// The classifier's judgement of `body` under `head`; fails when the bytes handed back differ.
fn classify(head: &Head, body: &[u8]) -> Result<Judgement, TestCaseError> {
    let mut builder = http::Response::builder().status(head.status).header("content-type", head.content_type);
    if let Some(value) = head.retry_after.value() {
        builder = builder.header("retry-after", value);
    }
    let response = builder
        .body(reqwest::Body::wrap(Chunks(split(body, &head.sizes))))
        .map_err(|e| TestCaseError::fail(format!("building the response: {e}")))?;
    let response = reqwest::Response::from(response);
    RUNTIME.with(|runtime| {
        runtime.borrow().block_on(async {
            match JsonRpcClassifier::new().classify(&EndpointId::from("p"), response).await {
                Classified::Response(response, judgement) => {
                    let bytes = response.bytes().await.map_err(|e| TestCaseError::fail(e.to_string()))?;
                    prop_assert_eq!(&bytes[..], body, "the bytes handed back");
                    Ok(judgement)
                }
                Classified::Failed(error, judgement) => {
                    Err(TestCaseError::fail(format!("a complete body failed: {error} {judgement:?}")))
                }
            }
        })
    })
}

/// The classifier and the reference agree on `body` under `head` (the classifier hands the
/// bytes back and does not panic, always).
fn agree(head: &Head, body: &[u8]) -> Result<(), TestCaseError> {
    let judged = classify(head, body)?;
    if beyond_f64(body) {
        // The documented difference: the reference cannot say (see the file's docs).
        return Ok(());
    }
    let expected = reference(head.status, body, head.retry_after.hint());
    prop_assert_eq!(judged, expected, "body {:?}", String::from_utf8_lossy(body));
    Ok(())
}

/// `Value` rejects `body` for a number beyond the range of an `f64`, which the parser leaves
/// unread in a value it skips: there the reference cannot say what the docs rule.
fn beyond_f64(body: &[u8]) -> bool {
    serde_json::from_slice::<Value>(body).is_err_and(|e| e.to_string().starts_with("number out of range"))
}

// ===== JSON text, duplicates and raw bytes allowed =====

/// A JSON value written as text: objects may repeat a key; `Raw` is a string whose bytes
/// are written as they are (bytes that are not UTF-8, escapes).
#[derive(Clone, Debug)]
enum J {
    Null,
    Bool(bool),
    Num(String),
    Str(String),
    Raw(Vec<u8>),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
    /// `depth` nested arrays (`[[...]]`) or objects (`{"a":{"a":...}}`) around `1`.
    Deep {
        depth: usize,
        objects: bool,
    },
}

impl J {
    fn text(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut Vec<u8>) {
        match self {
            J::Null => out.extend_from_slice(b"null"),
            J::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            J::Num(n) => out.extend_from_slice(n.as_bytes()),
            J::Str(s) => out.extend_from_slice(serde_json::to_string(s).unwrap_or_default().as_bytes()),
            J::Raw(bytes) => {
                out.push(b'"');
                out.extend_from_slice(bytes);
                out.push(b'"');
            }
            J::Arr(items) => {
                out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    item.write(out);
                }
                out.push(b']');
            }
            J::Obj(entries) => {
                out.push(b'{');
                for (i, (key, value)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    J::Str(key.clone()).write(out);
                    out.push(b':');
                    value.write(out);
                }
                out.push(b'}');
            }
            J::Deep { depth, objects: false } => {
                out.extend(std::iter::repeat_n(b'[', *depth));
                out.push(b'1');
                out.extend(std::iter::repeat_n(b']', *depth));
            }
            J::Deep { depth, objects: true } => {
                for _ in 0..*depth {
                    out.extend_from_slice(br#"{"a":"#);
                }
                out.push(b'1');
                out.extend(std::iter::repeat_n(b'}', *depth));
            }
        }
    }

    /// The same value with every deep value made shallow.
    fn shallow(&self) -> J {
        match self {
            J::Deep { .. } => J::Arr(Vec::new()),
            J::Arr(items) => J::Arr(items.iter().map(J::shallow).collect()),
            J::Obj(entries) => J::Obj(entries.iter().map(|(k, v)| (k.clone(), v.shallow())).collect()),
            other => other.clone(),
        }
    }

    fn depth(&self) -> usize {
        match self {
            J::Deep { depth, .. } => *depth,
            J::Arr(items) => 1 + items.iter().map(J::depth).max().unwrap_or(0),
            J::Obj(entries) => 1 + entries.iter().map(|(_, v)| v.depth()).max().unwrap_or(0),
            _ => 0,
        }
    }
}

fn num(n: impl ToString) -> J {
    J::Num(n.to_string())
}

fn s(text: &str) -> J {
    J::Str(text.into())
}

/// Phrases from every row of the table, and hints, as providers write them.
const PHRASES: &[&str] = &[
    "execution reverted",
    "Execution Reverted: rate limit exceeded",
    "Reverted 0x",
    "VM Exception while processing",
    "project ID request rate exceeded",
    "daily request count exceeded, request rate limited",
    "Your app has exceeded its compute units per second capacity",
    "100/second request limit reached",
    "credits limited to 6000/sec",
    "not enough credit",
    "Too Many Requests",
    "Monthly capacity limit",
    "header not found",
    "header for hash not found",
    "unknown block",
    "Resource not found",
    "hash 0xab is not currently canonical",
    "BlockOutOfRangeError: block height is 0 but requested was 153",
    "BlockOutOfRangeError: block height is 16 but requested was 2",
    "missing trie node 1a2b (path )",
    "historical state unavailable",
    "state is not available",
    "nonce too low",
    "insufficient funds for gas * price + value",
    "replacement transaction underpriced",
    "intrinsic gas too low",
    "invalid argument 0: hex string has length 3",
    "the method debug_traceCall does not exist/is not available",
    "Method not found",
    "unsupported method: trace_block",
    "internal error",
    "something only this call says",
    "",
];

const HINTS: &[&str] = &[
    "",
    "",
    ", try again in 250ms",
    ", retry after 2 s",
    ", try again in 1.5 seconds",
    ", retry in 3",
    ", try again after 2 minutes",
    ", try again in 1 hour",
    ", retry after 100000 s",
    ", try again later",
    ", retry in x",
    ", try again in 5.5.5s",
    " (retry in 7 months)",
];

/// An error message or data text: a phrase, a hint, in some case.
fn text() -> impl Strategy<Value = String> {
    (prop::sample::select(PHRASES), prop::sample::select(HINTS), 0u8..4, "[ -~]{0,6}").prop_map(
        |(phrase, hint, case, noise)| {
            let text = format!("{phrase}{hint}");
            match case {
                0 => text.to_ascii_uppercase(),
                1 => format!("{noise}{text}"),
                2 => format!("{text}{noise}"),
                _ => text,
            }
        },
    )
}

/// Any small JSON value (what a `result` or `id` may hold).
fn any_value() -> impl Strategy<Value = J> {
    let leaf = prop_oneof![
        Just(J::Null),
        any::<bool>().prop_map(J::Bool),
        any::<i64>().prop_map(num),
        any::<u64>().prop_map(num),
        (-1e300f64..1e300).prop_map(|f| num(format!("{f:e}"))),
        prop::sample::select(vec!["0", "-0", "1.5", "1e3", "-2E-7", "12345678901234567890123"]).prop_map(num),
        ".{0,12}".prop_map(J::Str),
        "0x[0-9a-f]{0,16}".prop_map(J::Str),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(J::Arr),
            prop::collection::vec(("[a-z]{0,6}", inner), 0..4).prop_map(J::Obj),
        ]
    })
}

fn code() -> impl Strategy<Value = J> {
    let table = prop::sample::select(vec![
        3i64, -32005, -32007, 429, -32012, -32016, -32001, -32602, -32600, -32700, -32601, -32603, -32000,
        12345,
    ]);
    prop_oneof![
        8 => table.prop_map(num),
        1 => any::<i64>().prop_map(num),
        2 => prop::sample::select(vec![
            J::Null,
            s("-32005"),
            num("-32005.0"),
            num("3e0"),
            num("-0"),
            num("9223372036854775808"),
            num("-9223372036854775809"),
            num("1e400"),
            J::Arr(vec![num(3)]),
            J::Bool(true),
        ]),
    ]
}

fn message() -> impl Strategy<Value = J> {
    prop_oneof![
        8 => text().prop_map(J::Str),
        1 => prop::sample::select(vec![J::Null, num(5), J::Arr(vec![s("rate limit")]), J::Obj(Vec::new())]),
    ]
}

fn backoff() -> impl Strategy<Value = J> {
    prop::sample::select(vec![
        num(30),
        num(1.5),
        num(-1),
        num(0),
        num(86400),
        num("1e3"),
        num("1e400"),
        num("18446744073709551615"),
        s("5"),
        J::Null,
    ])
}

fn data() -> impl Strategy<Value = J> {
    prop_oneof![
        3 => text().prop_map(J::Str),
        1 => (text(), 500usize..530).prop_map(|(t, n)| J::Str(format!("{t}{}", "x".repeat(n)))),
        2 => (backoff(), any_value()).prop_map(|(b, other)| J::Obj(vec![
            ("see".into(), other),
            ("rate".into(), J::Obj(vec![("allowed_rps".into(), num(1)), ("backoff_seconds".into(), b)])),
        ])),
        1 => backoff().prop_map(|b| J::Obj(vec![("backoff_seconds".into(), b)])),
        1 => any_value(),
    ]
}

/// An error object: `code`, `message`, `data` each maybe present; with `noisy`, repeated and
/// unknown keys too, in any order.
fn error_object(noisy: bool) -> impl Strategy<Value = J> {
    let extra = prop_oneof![
        code().prop_map(|v| ("code".to_string(), v)),
        message().prop_map(|v| ("message".to_string(), v)),
        data().prop_map(|v| ("data".to_string(), v)),
        any_value().prop_map(|v| ("stack".to_string(), v)),
    ];
    (
        prop::option::weighted(0.9, code()),
        prop::option::weighted(0.9, message()),
        prop::option::weighted(0.4, data()),
        prop::collection::vec(extra, if noisy { 0..4 } else { 0..1 }),
    )
        .prop_flat_map(|(code, message, data, extra)| {
            let mut entries: Vec<(String, J)> = Vec::new();
            entries.extend(code.map(|v| ("code".to_string(), v)));
            entries.extend(message.map(|v| ("message".to_string(), v)));
            entries.extend(data.map(|v| ("data".to_string(), v)));
            entries.extend(extra);
            Just(entries).prop_shuffle()
        })
        .prop_map(J::Obj)
}

fn error(noisy: bool) -> impl Strategy<Value = J> {
    prop_oneof![
        8 => error_object(noisy),
        2 => prop::sample::select(vec![
            J::Arr(Vec::new()),
            J::Arr(vec![num(3)]),
            J::Arr(vec![num(-32005)]),
            J::Arr(vec![num(-32005), s("rate limited")]),
            s("x"),
            s("rate limited"),
            num(-32005),
            J::Bool(false),
            J::Null,
        ]),
    ]
}

fn version() -> impl Strategy<Value = J> {
    prop_oneof![
        12 => Just(s("2.0")),
        1 => prop::sample::select(vec![s("1.0"), s("2.0 "), s(""), num(2), num("2.0"), J::Null, J::Arr(vec![s("2.0")])]),
    ]
}

/// One answer object: `jsonrpc`, `id`, then a `result`, an `error`, both or neither; with
/// `noisy`, repeated and unknown keys too, in any order.
fn answer(noisy: bool) -> impl Strategy<Value = J> {
    let body = prop_oneof![
        5 => any_value().prop_map(|r| vec![("result".to_string(), r)]),
        5 => error(noisy).prop_map(|e| vec![("error".to_string(), e)]),
        1 => (any_value(), error(noisy)).prop_map(|(r, e)| vec![("result".to_string(), r), ("error".to_string(), e)]),
        1 => Just(Vec::new()),
    ];
    let extra = prop_oneof![
        version().prop_map(|v| ("jsonrpc".to_string(), v)),
        any_value().prop_map(|v| ("result".to_string(), v)),
        error(noisy).prop_map(|v| ("error".to_string(), v)),
        any_value().prop_map(|v| ("id".to_string(), v)),
        any_value().prop_map(|v| ("extra".to_string(), v)),
    ];
    (
        prop::option::weighted(0.97, version()),
        prop::option::weighted(0.8, any_value()),
        body,
        prop::collection::vec(extra, if noisy { 0..4 } else { 0..1 }),
        any::<bool>(),
    )
        .prop_flat_map(|(version, id, body, extra, shuffle)| {
            let mut entries: Vec<(String, J)> = Vec::new();
            entries.extend(version.map(|v| ("jsonrpc".to_string(), v)));
            entries.extend(id.map(|v| ("id".to_string(), v)));
            entries.extend(body);
            entries.extend(extra);
            let entries = Just(entries);
            if shuffle { entries.prop_shuffle().boxed() } else { entries.boxed() }
        })
        .prop_map(J::Obj)
}

/// A batch: answers, now and then an element that is not an object.
fn batch(noisy: bool) -> impl Strategy<Value = J> {
    let item = prop_oneof![
        9 => answer(noisy),
        1 => prop::sample::select(vec![num(1), s("x"), J::Null, J::Arr(vec![num(1), J::Arr(vec![num(2)])]), J::Bool(true)]),
    ];
    prop::collection::vec(item, 0..6).prop_map(J::Arr)
}

/// A single answer or a batch.
fn body(noisy: bool) -> impl Strategy<Value = J> {
    prop_oneof![3 => answer(noisy), 1 => batch(noisy)]
}

/// Bytes for a string: valid multi-byte UTF-8, bytes that are not UTF-8, escapes (paired
/// surrogates, lone ones, an escaped backslash before `u`).
fn raw_string() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop::sample::select(vec![
        &b"ok"[..],
        "é".as_bytes(),
        "€".as_bytes(),
        "𝄞".as_bytes(),
        b"\xff",
        b"\xc3",
        b"\xe2\x82",
        b"\xed\xa0\x80",
        b"\xf4\x90\x80\x80",
        b"\xc0\xaf",
        b"\x80",
        br"\ud834\udd1e",
        br"\ud800",
        br"\udc00",
        br"\ud800\u0041",
        br"\\ud800",
        br"\u00e9",
        br"\n\t\/",
    ]);
    prop::collection::vec(piece, 1..4).prop_map(|pieces| pieces.concat())
}

/// Puts a raw string somewhere in an answer: in `result`, `id`, an unknown field, the
/// message or the data.
fn with_raw(answer: J, raw: Vec<u8>, at: usize) -> J {
    let J::Obj(mut entries) = answer else { return answer };
    let raw = J::Raw(raw);
    match at % 5 {
        0 => entries.push(("result".into(), J::Arr(vec![raw]))),
        1 => entries.insert(0, ("id".into(), raw)),
        2 => entries.push(("x".into(), J::Obj(vec![("k".into(), raw)]))),
        _ => {
            let key = if at % 5 == 3 { "message" } else { "data" };
            entries.push(("error".into(), J::Obj(vec![("code".into(), num(-32000)), (key.into(), raw)])));
        }
    }
    J::Obj(entries)
}

/// A near miss: `body` with one byte changed, inserted or removed, or cut off.
fn mutate(body: &[u8], op: u8, at: usize, byte: u8) -> Vec<u8> {
    let mut out = body.to_vec();
    if out.is_empty() {
        out.push(byte);
        return out;
    }
    let at = at % out.len();
    match op % 4 {
        0 => out[at] = byte,
        1 => out.insert(at, byte),
        2 => {
            out.remove(at);
        }
        _ => out.truncate(at),
    }
    out
}

/// Bytes a near miss puts in: JSON's punctuation, escapes, control and non-ASCII bytes.
fn near_byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        prop::sample::select(b"{}[]\",:\\ 0-.eE\x00\x01\x1f\x7f\x80\xbf\xc3\xed\xf4\xffntu".to_vec()),
        any::<u8>(),
    ]
}

/// A deep value in a place judging skips (or reads and finds the wrong type).
fn deep_body() -> impl Strategy<Value = J> {
    (1usize..3000, any::<bool>(), 0u8..6, answer(false)).prop_map(|(depth, objects, place, answer)| {
        let deep = J::Deep { depth, objects };
        let J::Obj(mut entries) = answer else { return answer };
        match place {
            0 => entries.push(("result".into(), deep)),
            1 => entries.insert(0, ("id".into(), deep)),
            2 => entries.push(("extra".into(), J::Arr(vec![deep]))),
            3 => entries.push((
                "error".into(),
                J::Obj(vec![
                    ("code".into(), num(-32005)),
                    ("data".into(), J::Obj(vec![("rate".into(), deep)])),
                ]),
            )),
            4 => entries.push(("error".into(), J::Obj(vec![("code".into(), num(3)), ("data".into(), deep)]))),
            _ => {
                return J::Arr(vec![
                    J::Obj(entries),
                    J::Obj(vec![("jsonrpc".into(), s("2.0")), ("result".into(), deep)]),
                ]);
            }
        }
        J::Obj(entries)
    })
}

// ===== the properties =====

proptest! {
    #![proptest_config(cheap(256))]

    #[test]
    fn well_formed_answers_are_judged_as_the_table_says(head in head(), answer in answer(false)) {
        agree(&head, &answer.text())?;
    }

    #[test]
    fn batches_are_judged_as_the_batch_rule_says(head in head(), batch in batch(false)) {
        agree(&head, &batch.text())?;
    }

    #[test]
    fn malformed_fields_and_duplicate_keys_are_judged_as_the_reference_says(head in head(), body in body(true)) {
        agree(&head, &body.text())?;
    }

    #[test]
    fn bytes_that_are_not_utf8_and_lone_surrogates_are_judged_as_serde_json_reads_them(
        head in head(),
        answer in answer(false),
        raw in raw_string(),
        at in any::<usize>(),
        in_batch in any::<bool>(),
    ) {
        let mut body = with_raw(answer, raw, at);
        if in_batch {
            body = J::Arr(vec![J::Obj(vec![("jsonrpc".into(), s("2.0")), ("result".into(), num(1))]), body]);
        }
        agree(&head, &body.text())?;
    }

    #[test]
    fn near_miss_bodies_are_judged_as_the_reference_says(
        head in head(),
        body in body(true),
        edits in prop::collection::vec((any::<u8>(), any::<usize>(), near_byte()), 1..3),
    ) {
        let mut bytes = body.text();
        for (op, at, byte) in edits {
            bytes = mutate(&bytes, op, at, byte);
        }
        agree(&head, &bytes)?;
    }

    #[test]
    fn arbitrary_bytes_are_judged_as_the_reference_says(
        head in head(),
        bytes in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..64),
            prop::collection::vec(near_byte(), 0..64),
        ],
    ) {
        agree(&head, &bytes)?;
    }
}

proptest! {
    #![proptest_config(cheap(32))]

    #[test]
    fn truncation_at_every_byte_is_judged_as_the_reference_says(head in head(), body in body(false)) {
        let bytes = body.text();
        for end in 0..=bytes.len() {
            agree(&head, &bytes[..end])?;
        }
    }

    #[test]
    fn depth_never_changes_a_verdict(head in head(), body in deep_body()) {
        let bytes = body.text();
        let judged = classify(&head, &bytes)?;
        let shallow = body.shallow().text();
        if !beyond_f64(&shallow) {
            // The words of a body that is no answer are read in its first 4 KiB as sent.
            let expected = reference_worded(head.status, &shallow, &bytes, head.retry_after.hint());
            prop_assert_eq!(judged, expected, "depth {}", body.depth());
        }
        if body.depth() <= 100 {
            agree(&head, &bytes)?;
        }
        // Cut inside the deep value: broken whatever the depth (unless 429).
        let cut = &bytes[..bytes.len() / 2];
        agree(&head, cut)?;
    }
}

proptest! {
    #![proptest_config(cheap(6))]

    #[test]
    fn large_bodies_are_judged_as_the_reference_says(
        head in head(),
        item in any_value(),
        count in 1usize..4_000,
        tail in body(false),
        chunk in prop_oneof![Just(8 * 1024), 1usize..70_000],
    ) {
        let J::Obj(mut entries) = tail else { return Ok(()) };
        let big = J::Arr(std::iter::repeat_n(item, count).collect());
        entries.insert(0, ("extra".into(), big));
        let bytes = J::Obj(entries).text();
        let head = Head { sizes: vec![chunk], ..head };
        agree(&head, &bytes)?;
    }
}

/// Found by `batches_are_judged_as_the_batch_rule_says` (CI, 2026-12-04): a batch with one
/// element that is no answer and one unrecognised error is no JSON-RPC answer, so the status
/// names it: HTTP 413 is a limit (neutral), as for a body of junk under 413.
#[test]
fn a_broken_batch_under_413_is_a_limit_as_the_status_says() {
    let head =
        Head { status: 413, content_type: "application/json", retry_after: RetryAfter::None, sizes: vec![] };
    let body =
        br#"[{"error":{"message":null}},{"jsonrpc":"2.0","id":[1,[2],-4.1e299],"error":{"message":null}}]"#;
    agree(&head, body).unwrap();
    assert_eq!(
        classify(&head, body).unwrap(),
        Judgement::new(Verdict::FailOver { cool_for: None }, Evidence::Neutral, Class::Limit)
    );
}

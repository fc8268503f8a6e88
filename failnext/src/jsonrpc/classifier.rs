//! [`JsonRpcClassifier`]: the JSON-RPC [`Classifier`].

use std::time::SystemTime;

use http::HeaderMap;
use http::header::CONTENT_TYPE;
use reqwest::{Response, StatusCode};

use super::body::{self, Outcome};
use super::parse;
use super::table::Kind;
use super::tally::Tally;
use crate::judge::MAX_HINT;
use crate::{Class, Classified, Classifier, EndpointId, Evidence, Judgement, Verdict};

/// Judges JSON-RPC answers by their body: rate limits, internal errors, missing data,
/// malformed or truncated bodies fail over; reverts and other definitive errors are returned
/// at once. See the [module docs](super) for the table, the batch rule and the body rules.
///
/// ```
/// use failnext::jsonrpc::JsonRpcClassifier;
///
/// // The default: bodies up to 4 MiB are judged.
/// let classifier = JsonRpcClassifier::new();
/// assert_eq!(classifier.max_body_len(), 4 * 1024 * 1024);
///
/// // Judge bodies up to 16 MiB (wide `eth_getLogs`, full blocks); larger ones are returned
/// // unjudged, unread beyond the cap.
/// let classifier = JsonRpcClassifier::new().max_body(16 * 1024 * 1024);
/// # let _ = classifier;
/// ```
#[derive(Clone, Debug)]
pub struct JsonRpcClassifier {
    max_body: usize,
}

// ===== impl JsonRpcClassifier =====

impl JsonRpcClassifier {
    /// The default cap on the body read for judging: 4 MiB.
    ///
    /// JSON-RPC errors are small (well under 1 KiB); what the cap decides is how large an
    /// answer can still be checked for truncation and well-formedness, and how much of a body
    /// is held before the caller sees its first byte. 4 MiB covers the answers a bot reads
    /// (blocks with their transactions, receipts, moderate `eth_getLogs`) while bounding
    /// what one request can hold; traces and wide log queries above it pass through unjudged.
    pub const DEFAULT_MAX_BODY: usize = 4 * 1024 * 1024;

    /// A classifier with the default cap, [`DEFAULT_MAX_BODY`](Self::DEFAULT_MAX_BODY).
    pub const fn new() -> JsonRpcClassifier {
        JsonRpcClassifier { max_body: Self::DEFAULT_MAX_BODY }
    }

    /// Judges bodies of at most `bytes` bytes. A larger body (by its `content-length`, or
    /// once more than `bytes` have arrived) is returned unjudged as an answer: its body is
    /// rebuilt from the bytes read so far followed by the rest of the stream, nothing lost
    /// or copied. `0` reads no body at all (then only HTTP 429 fails over).
    pub const fn max_body(self, bytes: usize) -> JsonRpcClassifier {
        JsonRpcClassifier { max_body: bytes }
    }

    /// The cap on the body read for judging, in bytes.
    pub const fn max_body_len(&self) -> usize {
        self.max_body
    }
}

impl Default for JsonRpcClassifier {
    fn default() -> Self {
        JsonRpcClassifier::new()
    }
}

#[async_trait::async_trait]
impl Classifier for JsonRpcClassifier {
    async fn classify(&self, _endpoint: &EndpointId, response: Response) -> Classified {
        let status = response.status();
        if self.max_body == 0 || status == StatusCode::NO_CONTENT || !is_json(response.headers()) {
            let judgement = by_status(status, response.headers());
            return Classified::Response(response, judgement);
        }
        match body::read(response, self.max_body).await {
            Outcome::OverCap(response) => {
                let judgement = by_status(status, response.headers());
                Classified::Response(response, judgement)
            }
            Outcome::Failed(error) => Classified::Failed(
                reqwest_middleware::Error::Reqwest(error.without_url()),
                Judgement::new(Verdict::FailOver { cool_for: None }, Evidence::Failure, Class::Broken),
            ),
            Outcome::Complete(parts, chunks) => {
                let mut tally = parse::tally(chunks.as_slice());
                if status == StatusCode::TOO_MANY_REQUESTS {
                    tally.add(Kind::Capacity(None));
                }
                let response = body::rebuild(parts, chunks, None);
                let judgement = with_retry_after(tally, response.headers());
                Classified::Response(response, judgement)
            }
        }
    }
}

/// The judgement of a response whose body is not judged: HTTP 429 is capacity, anything else
/// an answer (the status rule already let it through).
fn by_status(status: StatusCode, headers: &HeaderMap) -> Judgement {
    if status == StatusCode::TOO_MANY_REQUESTS {
        let mut tally = Tally::default();
        tally.add(Kind::Capacity(None));
        return with_retry_after(tally, headers);
    }
    Judgement::answer()
}

/// The tally's judgement; a capacity failover without a hint from the body takes its
/// `cool_for` from the response's `Retry-After` (delta-seconds or an HTTP-date, read by the
/// crate's one rule, [`crate::retry_after`]), capped at [`MAX_HINT`] like every hint.
fn with_retry_after(tally: Tally, headers: &HeaderMap) -> Judgement {
    let mut judgement = tally.judgement();
    if let (Class::Capacity, Verdict::FailOver { cool_for: cool_for @ None }) =
        (judgement.class, &mut judgement.verdict)
    {
        *cool_for = crate::retry_after::from_headers(headers, SystemTime::now()).map(|d| d.min(MAX_HINT));
    }
    judgement
}

/// `content-type` is `application/json` or a `+json` type (parameters such as `charset`
/// allowed, case-insensitive).
fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or("").trim();
    let Some((_, subtype)) = essence.split_once('/') else {
        return false;
    };
    essence.eq_ignore_ascii_case("application/json")
        || (subtype.len() > 5 && subtype.as_bytes()[subtype.len() - 5..].eq_ignore_ascii_case(b"+json"))
}

//! [`JsonRpcClassifier`]: the JSON-RPC [`Classifier`].

use std::time::SystemTime;

use http::HeaderMap;
use reqwest::{Response, StatusCode};

use super::body::{self, Outcome};
use super::parse;
use super::table::{self, Kind};
use super::tally::Tally;
use crate::judging::judge::MAX_HINT;
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
    /// or copied. `0` reads no body at all (then only the status is judged: 429, 401, 403, ...).
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
        if self.max_body == 0 || status == StatusCode::NO_CONTENT {
            let judgement = by_status(status, response.headers(), None);
            return Classified::Response(response, judgement);
        }
        // A body that is not JSON by its content type is read and parsed too: some nodes send
        // JSON under another type, and to a JSON-RPC call anything else is never an answer
        // (its words say why: a key refused, a rate limit, a gateway's page).
        match body::read(response, self.max_body).await {
            Outcome::OverCap(response) => {
                let judgement = by_status(status, response.headers(), None);
                Classified::Response(response, judgement)
            }
            Outcome::Failed(error) => Classified::Failed(
                reqwest_middleware::Error::Reqwest(error.without_url()),
                Judgement::new(Verdict::FailOver { cool_for: None }, Evidence::Failure, Class::Broken),
            ),
            Outcome::Complete(parts, chunks) => {
                let mut tally = parse::tally(chunks.as_slice());
                if tally.only_broken() {
                    if let Some(kind) = words(chunks.as_slice()) {
                        tally = Tally::broken_for(kind);
                    }
                }
                let response = body::rebuild(parts, chunks, None);
                let judgement = by_status(status, response.headers(), Some(tally));
                Classified::Response(response, judgement)
            }
        }
    }
}

/// The most of a body whose words are matched, when it is not a JSON-RPC answer.
const MAX_WORDS: usize = 4 * 1024;

/// What the first [`MAX_WORDS`] bytes of a body that is not a JSON-RPC answer say, by the
/// table's words ([`table::classify_text`]): copied lower-cased, only on this (failing) path.
fn words(chunks: &[bytes::Bytes]) -> Option<Kind> {
    let mut text = Vec::with_capacity(MAX_WORDS.min(chunks.iter().map(|c| c.len()).sum()));
    for chunk in chunks {
        let take = (MAX_WORDS - text.len()).min(chunk.len());
        text.extend_from_slice(&chunk[..take]);
        if text.len() == MAX_WORDS {
            break;
        }
    }
    text.make_ascii_lowercase();
    table::classify_text(&String::from_utf8_lossy(&text))
}

/// The judgement of a response from its status and, when the body was judged, its tally.
///
/// - HTTP 429 is capacity, whatever the body (unless the body names the account or a limit).
/// - 401, 403, 407 and 410 are credentials refused ([`Class::Unauthorized`]), 402 payment
///   ([`Class::Payment`]), 413, 414 and 431 a request too large ([`Class::Limit`]), 405 a
///   method not served (stale, as `-32601`), unless the body said something more specific
///   that fails over (a quota, a rate limit, a limit).
/// - Any other status is judged by the body alone; a body that was not judged (over the
///   cap, none) is an answer with a 2xx status (the status rule let it through).
fn by_status(status: StatusCode, headers: &HeaderMap, tally: Option<Tally>) -> Judgement {
    let said = tally.map_or(Kind::Unrecognised, |t| t.said());
    let kind = match status.as_u16() {
        429 if !matches!(said, Kind::Unauthorized | Kind::Payment | Kind::Limit) => {
            Some(Kind::Capacity(None))
        }
        401 | 403 | 407 | 410 if !said.fails_over() => Some(Kind::Unauthorized),
        402 if !said.fails_over() => Some(Kind::Payment),
        413 | 414 | 431 if !said.fails_over() => Some(Kind::Limit),
        405 if !said.fails_over() => Some(Kind::Unsupported),
        _ => None,
    };
    let mut tally = match tally {
        // The status names what a body that is no JSON-RPC answer did not.
        Some(tally) if kind.is_some() && tally.only_broken() => Tally::default(),
        Some(tally) => tally,
        None if kind.is_none() => return Judgement::answer(),
        None => Tally::default(),
    };
    if let Some(kind) = kind {
        tally.add(kind);
    }
    with_retry_after(tally, headers)
}

/// The tally's judgement; a capacity failover without a hint from the body takes its
/// `cool_for` from the response's `Retry-After` (delta-seconds or an HTTP-date, read by the
/// crate's one rule, [`crate::judging::retry_after`]), capped at [`MAX_HINT`] like every hint.
fn with_retry_after(tally: Tally, headers: &HeaderMap) -> Judgement {
    let mut judgement = tally.judgement();
    if let (Class::Capacity, Verdict::FailOver { cool_for: cool_for @ None }) =
        (judgement.class, &mut judgement.verdict)
    {
        *cool_for =
            crate::judging::retry_after::from_headers(headers, SystemTime::now()).map(|d| d.min(MAX_HINT));
    }
    judgement
}

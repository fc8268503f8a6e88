//! Consensus reads: for the methods named with
//! [`FailoverTransportBuilder::consensus`](super::FailoverTransportBuilder::consensus), a read
//! goes to several providers at once and returns only an answer enough of them gave.
//!
//! How a read is voted: the quorum's `agree` providers are asked at once (the first usable
//! ones in the transport's order, never one twice; each is asked alone, so a hedge is never a
//! vote); when their answers differ, more are asked, as many as are missing for a majority of
//! `agree`, up to `of` in all. Answers are compared after normalisation (the result as JSON,
//! object keys in any order, hex strings in any case, a block by its hash, a receipt by the
//! fields the chain decides so that a client's own fields do not count; never the request
//! id); a JSON-RPC error that is an answer (a revert, invalid params, one no rule knows)
//! by its code; a provider that did not answer, or answered an error that blames it (a rate
//! limit, an internal error, a block it does not know: what a plain read fails over from),
//! casts no vote, so two providers rate-limited alike never agree on a rate limit. The first answer `agree`
//! providers gave is returned. Each provider whose answer differed from it is told as
//! [`Event::Disagreed`](crate::Event::Disagreed); one that disagrees
//! [`DISSENTS`] times in a row on a method is ruled out for that method (found to lack it,
//! for the transport's lack period). When no answer reaches `agree`, the read fails with
//! [`FailureKind::NoConsensus`](super::FailureKind::NoConsensus), whose
//! [`ballots`](super::Failure::ballots) give each provider's answer digest. Writes are never
//! voted. Cost: `agree` requests per read while the providers agree.

use std::sync::Mutex;

use alloy_json_rpc::{RequestPacket, Response, ResponsePayload};
use serde_json::Value;

use crate::EndpointId;

/// How many disagreements in a row rule a provider out for a method.
pub const DISSENTS: u32 = 3;

/// How many providers must give the same answer (`agree`) out of how many may be asked (`of`).
///
/// ```
/// use failnext::alloy::Quorum;
///
/// let two_of_three = Quorum::new(2, 3);
/// assert_eq!((two_of_three.agree(), two_of_three.of()), (2, 3));
/// assert_eq!(Quorum::majority(5).agree(), 3);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quorum {
    agree: usize,
    of: usize,
}

impl Quorum {
    /// `agree` providers of at most `of` asked must give the same answer. `agree` is at least
    /// 1 and `of` at least `agree` (smaller values are raised to that).
    pub fn new(agree: usize, of: usize) -> Quorum {
        let agree = agree.max(1);
        Quorum { agree, of: of.max(agree) }
    }

    /// A majority of `of`: `of / 2 + 1` must agree.
    pub fn majority(of: usize) -> Quorum {
        Quorum::new(of / 2 + 1, of)
    }

    /// How many must agree.
    pub fn agree(&self) -> usize {
        self.agree
    }

    /// How many may be asked, at most.
    pub fn of(&self) -> usize {
        self.of
    }
}

/// The transport's consensus setting and what it learnt of each provider.
#[derive(Debug)]
pub(crate) struct Consensus {
    methods: Vec<String>,
    pub(crate) quorum: Quorum,
    /// Disagreements in a row, per provider and method.
    streaks: Mutex<Vec<(EndpointId, String, u32)>>,
}

impl Consensus {
    pub(crate) fn new(methods: Vec<String>, quorum: Quorum) -> Consensus {
        Consensus { methods, quorum, streaks: Mutex::default() }
    }

    /// The method of `packet` when it is voted: a single call of a method named.
    pub(crate) fn covers<'p>(&self, packet: &'p RequestPacket) -> Option<&'p str> {
        let RequestPacket::Single(req) = packet else { return None };
        self.methods.iter().any(|m| m == req.method()).then(|| req.method())
    }

    /// `endpoint` answered as the quorum did (`true`) or otherwise on `method`; `true` when
    /// that makes [`DISSENTS`] disagreements in a row.
    pub(crate) fn voted(&self, endpoint: &EndpointId, method: &str, agreed: bool) -> bool {
        let mut streaks = self.streaks.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let at = streaks.iter().position(|(e, m, _)| e == endpoint && m == method);
        match (at, agreed) {
            (Some(i), true) => {
                streaks.swap_remove(i);
                false
            }
            (None, true) => false,
            (Some(i), false) => {
                streaks[i].2 += 1;
                if streaks[i].2 >= DISSENTS {
                    streaks.swap_remove(i);
                    return true;
                }
                false
            }
            (None, false) => {
                streaks.push((endpoint.clone(), method.to_owned(), 1));
                DISSENTS <= 1
            }
        }
    }
}

/// What a provider's answer to `method` says, normalised: its result (as JSON, hex in lower
/// case, only what the chain decides for a block or a receipt) or its JSON-RPC error code.
/// Equal digests are the same answer.
pub(crate) fn digest(method: &str, response: &Response) -> String {
    match &response.payload {
        ResponsePayload::Success(raw) => match serde_json::from_str::<Value>(raw.get()) {
            Ok(value) => normalised(decided(method, value)).to_string(),
            Err(_) => raw.get().to_owned(),
        },
        ResponsePayload::Failure(error) => format!("error {}", error.code),
    }
}

/// The fields of a receipt the chain decides (others are a client's: `l1Fee`, a log's
/// `blockTimestamp`, ...), and of each of its logs.
const RECEIPT_FIELDS: [&str; 10] = [
    "transactionHash",
    "transactionIndex",
    "blockHash",
    "blockNumber",
    "status",
    "root",
    "cumulativeGasUsed",
    "gasUsed",
    "contractAddress",
    "logs",
];
const LOG_FIELDS: [&str; 4] = ["address", "topics", "data", "logIndex"];

/// What of `value`, the result of `method`, the chain decides: a block by its hash (which
/// commits to its header), a receipt by [`RECEIPT_FIELDS`]; any other result whole. Two
/// honest providers that add fields of their own then agree.
fn decided(method: &str, value: Value) -> Value {
    let keep = |value: &Value, fields: &[&str]| -> serde_json::Map<String, Value> {
        fields.iter().filter_map(|f| value.get(*f).map(|v| ((*f).to_owned(), v.clone()))).collect()
    };
    match method {
        "eth_getBlockByNumber" | "eth_getBlockByHash" if value.is_object() => {
            Value::Object(keep(&value, &["hash"]))
        }
        "eth_getTransactionReceipt" if value.is_object() => {
            let mut receipt = keep(&value, &RECEIPT_FIELDS);
            if let Some(Value::Array(logs)) = receipt.get_mut("logs") {
                for log in logs.iter_mut() {
                    *log = Value::Object(keep(log, &LOG_FIELDS));
                }
            }
            Value::Object(receipt)
        }
        _ => value,
    }
}

/// `value` with every `0x` string in lower case (object keys are sorted by `serde_json`).
fn normalised(value: Value) -> Value {
    match value {
        Value::String(s) if s.starts_with("0x") || s.starts_with("0X") => {
            Value::String(s.to_ascii_lowercase())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(normalised).collect()),
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, normalised(v))).collect()),
        other => other,
    }
}

/// A short, stable name of a digest for failures and events: its Keccak-256, first 8 bytes.
pub(crate) fn short(digest: &str) -> String {
    let hash = alloy_primitives::keccak256(digest.as_bytes());
    hash[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// The digest `agree` of `ballots` share, if one does (the first to get there).
pub(crate) fn winner(ballots: &[(EndpointId, Option<String>)], agree: usize) -> Option<&str> {
    ballots
        .iter()
        .filter_map(|(_, d)| d.as_deref())
        .find(|d| ballots.iter().filter(|(_, other)| other.as_deref() == Some(*d)).count() >= agree)
}

/// How many more must be asked for a digest to reach `agree`: what the best one lacks.
pub(crate) fn missing(ballots: &[(EndpointId, Option<String>)], agree: usize) -> usize {
    let best = ballots
        .iter()
        .filter_map(|(_, d)| d.as_deref())
        .map(|d| ballots.iter().filter(|(_, other)| other.as_deref() == Some(d)).count())
        .max()
        .unwrap_or(0);
    agree.saturating_sub(best)
}

#[cfg(test)]
mod tests {
    use alloy_json_rpc::Id;
    use serde_json::value::RawValue;

    use super::*;

    fn ok(json: &str) -> Response {
        Response {
            id: Id::Number(1),
            payload: ResponsePayload::Success(RawValue::from_string(json.into()).unwrap()),
        }
    }

    fn ballot(id: &str, digest: Option<&str>) -> (EndpointId, Option<String>) {
        (EndpointId::from(id), digest.map(str::to_owned))
    }

    #[test]
    fn answers_differing_only_in_key_order_hex_case_or_spacing_are_the_same_vote() {
        let a = ok(r#"{"balance":"0xAB","nonce":"0x1"}"#);
        let b = ok(r#"{ "nonce": "0x1", "balance": "0xab" }"#);
        assert_eq!(digest("eth_call", &a), digest("eth_call", &b));
        assert_ne!(digest("eth_call", &ok(r#""0xab""#)), digest("eth_call", &ok(r#""0xac""#)));
        assert_eq!(short(&digest("eth_call", &a)).len(), 16);
    }

    #[test]
    fn receipts_compare_by_what_the_chain_decides_and_blocks_by_their_hash() {
        let plain = ok(
            r#"{"transactionHash":"0x1","status":"0x1","logs":[{"address":"0xaa","data":"0x","topics":[],"logIndex":"0x0"}]}"#,
        );
        let extra = ok(
            r#"{"transactionHash":"0x1","status":"0x1","l1Fee":"0x5","logs":[{"address":"0xaa","data":"0x","topics":[],"logIndex":"0x0","blockTimestamp":"0x6"}]}"#,
        );
        let failed = ok(r#"{"transactionHash":"0x1","status":"0x0","logs":[]}"#);
        let method = "eth_getTransactionReceipt";
        assert_eq!(digest(method, &plain), digest(method, &extra), "a client's own fields");
        assert_ne!(digest(method, &plain), digest(method, &failed));
        assert_ne!(digest("eth_call", &plain), digest("eth_call", &extra), "other results whole");
        let block = |size: &str| ok(&format!(r#"{{"hash":"0xbb","number":"0x1","size":"{size}"}}"#));
        assert_eq!(
            digest("eth_getBlockByNumber", &block("0x1")),
            digest("eth_getBlockByNumber", &block("0x2"))
        );
        assert_eq!(digest(method, &ok("null")), "null");
    }

    #[test]
    fn the_winner_is_the_first_answer_enough_gave_and_missing_counts_what_the_best_lacks() {
        let ballots = [ballot("a", Some("x")), ballot("b", Some("y")), ballot("c", Some("y"))];
        assert_eq!(winner(&ballots, 2), Some("y"));
        assert_eq!(winner(&ballots[..2], 2), None);
        assert_eq!(missing(&ballots[..2], 2), 1);
        assert_eq!(missing(&[ballot("a", None), ballot("b", None)], 2), 2);
    }

    #[test]
    fn a_provider_is_ruled_out_after_three_disagreements_in_a_row_and_one_agreement_forgives() {
        let c = Consensus::new(vec!["eth_call".into()], Quorum::new(2, 3));
        let e = EndpointId::from("e");
        assert!(!c.voted(&e, "eth_call", false));
        assert!(!c.voted(&e, "eth_call", false));
        assert!(!c.voted(&e, "eth_call", true), "forgiven");
        assert!(!c.voted(&e, "eth_call", false));
        assert!(!c.voted(&e, "eth_call", false));
        assert!(!c.voted(&e, "eth_getBalance", false), "per method");
        assert!(c.voted(&e, "eth_call", false));
    }

    #[test]
    fn a_quorum_asks_at_least_as_many_as_must_agree() {
        assert_eq!(Quorum::new(3, 2), Quorum::new(3, 3));
        assert_eq!(Quorum::new(0, 0), Quorum::new(1, 1));
        assert_eq!(Quorum::majority(3), Quorum::new(2, 3));
    }
}

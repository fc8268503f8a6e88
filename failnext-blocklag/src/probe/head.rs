//! The head-with-hash probe's pure half: the rules an `eth_getBlockByNumber("latest", false)`
//! answer must meet, read from at most its first [`MAX_BODY`] bytes.
//!
//! A block with its transaction hashes is often larger than the cap, so the body is not parsed
//! whole. A small scanner walks what was read, tracking strings and bracket depth, and picks
//! out the members the rules need: the envelope's `jsonrpc`, `id`, `error` and `result`, and
//! the `result` object's own `number` and `hash`. It never descends into another value, so a
//! `parentHash`, a transaction's `hash` or a `"hash":` inside a string is never taken. Each
//! picked value is then parsed on its own with serde_json. Nothing here does I/O, and nothing
//! here may panic, whatever bytes a provider sends.

use std::ops::Range;

use serde_json::Value;

use crate::probe::block_hash::BlockHash;
use crate::probe::parse::{invalid_quantity, parse_quantity, rpc_error, shortened};
use crate::probe::probe_error::ProbeError;
use crate::probe::rpc::MAX_BODY;

/// Reads a JSON-RPC 2.0 answer to `eth_getBlockByNumber("latest", false)` to the number and
/// hash of the block in its `result`, looking at no more than its first [`MAX_BODY`] bytes.
///
/// This is the [head-with-hash](crate::MonitorBuilder::head_with_hash) probe's own parser,
/// public so that other code (and fuzzers) can apply exactly the rules a check applies. It
/// never panics, whatever the bytes. `body` is the body as received, or any part of it longer
/// than [`MAX_BODY`] bytes (the probe reads one byte more than the cap, to know whether the
/// body goes on); the bytes after the first [`MAX_BODY`] are never looked at.
///
/// A body of at most [`MAX_BODY`] bytes is *whole*; a longer one is *cut* at that size. The
/// checks run in this order, and the first one broken is the error:
///
/// 1. a whole body is valid JSON; of a cut one, what was read is the start of a JSON object
///    as far as the scanner checks it (strings, brackets, and `,` and `:` between members;
///    numbers and literals inside skipped values are not checked)
///    ([`ProbeError::InvalidJson`]);
/// 2. an object with `"jsonrpc": "2.0"` within what was read ([`ProbeError::NotJsonRpc`]);
/// 3. a non-null `error` member, when the `id` is the expected one, `null`, or cut off:
///    [`ProbeError::JsonRpc`], or [`ProbeError::NotJsonRpc`] when it is not an object with an
///    integer `code`;
/// 4. `id` is the number `expected_id` ([`ProbeError::IdMismatch`]). In a cut body an `id`
///    that comes after the `result` is not read, and is not required: some clients
///    (Nethermind) write it last;
/// 5. a `result` member within what was read ([`ProbeError::NotJsonRpc`]);
/// 6. the `result` is an object ([`ProbeError::NotABlock`], for `null` too);
/// 7. the object has a top-level `number` and a top-level `hash` whose values end within what
///    was read ([`ProbeError::MissingHeadField`]); members nested deeper (the `hash` of a
///    transaction object) and other names (`parentHash`) do not count;
/// 8. the `number` is a string holding a canonical quantity ([`ProbeError::InvalidQuantity`];
///    see [`parse_quantity`]);
/// 9. the `hash` is a string of `0x` and 64 lower-case hex digits ([`ProbeError::InvalidHash`]).
///
/// When a member name repeats, the last one read counts, as serde_json (and so
/// [`parse_response`](crate::parse_response)) does for a whole body.
///
/// ```
/// use failnext_blocklag::{MAX_BODY, parse_head_response};
///
/// // geth writes a block's keys in alphabetical order: `hash` and `number` come before
/// // `transactions`, which here makes the body much larger than the cap.
/// let hash = format!("0x{}", "ab".repeat(32));
/// let transactions = vec![format!("0x{}", "cd".repeat(32)); 200];
/// let body = serde_json::json!({
///     "jsonrpc": "2.0", "id": 1,
///     "result": { "hash": hash, "number": "0x64", "parentHash": "0x00", "transactions": transactions },
/// })
/// .to_string();
/// assert!(body.len() > 3 * MAX_BODY);
/// let (number, head) = parse_head_response(body.as_bytes(), 1)?;
/// assert_eq!((number, head.to_string()), (100, hash));
/// # Ok::<(), failnext_blocklag::ProbeError>(())
/// ```
pub fn parse_head_response(body: &[u8], expected_id: u64) -> Result<(u64, BlockHash), ProbeError> {
    let whole = body.len() <= MAX_BODY;
    let read = body.get(..MAX_BODY).unwrap_or(body);
    parse_head(read, whole, expected_id).map(|head| (head.number, head.hash))
}

/// What a head answer says: the block's number, hash and timestamp (Unix seconds; `None`
/// when the block has no readable `timestamp`, which is not an error).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HeadAnswer {
    pub(crate) number: u64,
    pub(crate) hash: BlockHash,
    pub(crate) timestamp: Option<u64>,
}

/// [`parse_head_response`]'s rules over `read`, whole or cut (`whole`), with the block's
/// timestamp too.
pub(crate) fn parse_head(read: &[u8], whole: bool, expected_id: u64) -> Result<HeadAnswer, ProbeError> {
    if whole && serde_json::from_slice::<Value>(read).is_err() {
        return Err(ProbeError::InvalidJson);
    }
    let found = scan(read, whole)?;
    let parsed = |span: Range<usize>| {
        read.get(span)
            .and_then(|text| serde_json::from_slice::<Value>(text).ok())
            .ok_or(ProbeError::InvalidJson)
    };

    if found.jsonrpc.map(parsed).transpose()?.as_ref().and_then(Value::as_str) != Some("2.0") {
        return Err(ProbeError::NotJsonRpc);
    }
    let id = found.id.map(parsed).transpose()?;
    let id_matches = match &id {
        Some(id) => id.as_u64() == Some(expected_id),
        None => found.cut,
    };
    if let Some(error) = found.error.map(parsed).transpose()?.filter(|e| !e.is_null()) {
        if id_matches || matches!(id, Some(Value::Null)) {
            return Err(rpc_error(&error));
        }
    }
    if !id_matches {
        return Err(ProbeError::IdMismatch);
    }
    let block = match found.result {
        None => return Err(ProbeError::NotJsonRpc),
        Some(Found::Block(block)) => block,
        Some(Found::Other(span)) => return Err(ProbeError::NotABlock(shortened(&parsed(span)?.to_string()))),
        Some(Found::CutOther(start)) => {
            let text = String::from_utf8_lossy(read.get(start..).unwrap_or_default());
            let mut shown = shortened(&text);
            if !shown.ends_with('…') {
                shown.push('…');
            }
            return Err(ProbeError::NotABlock(shown));
        }
    };
    let number = match block.number.map(parsed).transpose()? {
        None => return Err(ProbeError::MissingHeadField("number")),
        Some(Value::String(text)) => parse_quantity(&text).ok_or_else(|| invalid_quantity(&text))?,
        Some(other) => return Err(invalid_quantity(&other.to_string())),
    };
    let hash = match block.hash.map(parsed).transpose()? {
        None => return Err(ProbeError::MissingHeadField("hash")),
        Some(Value::String(text)) => {
            BlockHash::parse(&text, true).ok_or_else(|| ProbeError::InvalidHash(shortened(&text)))?
        }
        Some(other) => return Err(ProbeError::InvalidHash(shortened(&other.to_string()))),
    };
    let timestamp = match block.timestamp.map(parsed).transpose()? {
        Some(Value::String(text)) => parse_quantity(&text),
        _ => None,
    };
    Ok(HeadAnswer { number, hash, timestamp })
}

/// The two answers of the head probe's batch (`[eth_chainId, eth_getBlockByNumber]`, ids
/// [`CHAIN_ID`] and [`HEAD_ID`]), from `read` (the first bytes of the body, `whole` when
/// they are all of it): each answer's own result, or [`BatchRefused`] when the body is not a
/// batch answer the probe can read this way (not an array, answers in another order, cut
/// before the block). The chain id's answer is parsed by the `eth_chainId` rules
/// ([`parse_response`](crate::parse_response)), the block's by the head rules.
pub(crate) fn parse_batch(read: &[u8], whole: bool) -> Result<BatchAnswers, BatchRefused> {
    let mut s = Scanner { bytes: read, pos: 0 };
    s.skip_whitespace();
    if s.peek() != Some(b'[') {
        // A provider that refuses batches answers with one JSON object (an error); anything
        // else that is not a batch is a broken answer, not a refusal.
        let object = whole && s.peek() == Some(b'{') && serde_json::from_slice::<Value>(read).is_ok();
        return Err(if object { BatchRefused::Refused } else { BatchRefused::Broken });
    }
    s.pos += 1;
    s.skip_whitespace();
    // A whole body that does not scan is broken; a cut one may just be long.
    let unreadable = || if whole { BatchRefused::Broken } else { BatchRefused::Refused };
    let first = s.value().map_err(|_| unreadable())?;
    let chain = read.get(first).unwrap_or_default();
    if !chain.starts_with(b"{") || !id_is(chain, CHAIN_ID) {
        return Err(BatchRefused::Refused);
    }
    let chain = crate::probe::parse::parse_response(chain, CHAIN_ID);
    s.skip_whitespace();
    if s.peek() != Some(b',') {
        return Err(BatchRefused::Refused);
    }
    s.pos += 1;
    s.skip_whitespace();
    let rest = read.get(s.pos..).unwrap_or_default();
    let block = if whole {
        // The block's answer, then the closing bracket.
        let mut t = Scanner { bytes: rest, pos: 0 };
        let span = t.value().map_err(|_| unreadable())?;
        t.skip_whitespace();
        if t.peek() != Some(b']') {
            return Err(unreadable());
        }
        parse_head(rest.get(span).unwrap_or_default(), true, HEAD_ID)
    } else {
        parse_head(rest, false, HEAD_ID)
    };
    Ok((chain, block))
}

/// The two answers of the head probe's batch: the chain id's, and the head's.
pub(crate) type BatchAnswers = (Result<u64, ProbeError>, Result<HeadAnswer, ProbeError>);

/// The JSON-RPC id of the head call in the probe's batch.
pub(crate) const HEAD_ID: u64 = 1;
/// The JSON-RPC id of the chain-id call in the probe's batch.
pub(crate) const CHAIN_ID: u64 = 2;

/// Why the body was not a batch answer the head probe can read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BatchRefused {
    /// The provider answers batches otherwise (one JSON object, answers in another order):
    /// it is then probed with separate calls.
    Refused,
    /// Not JSON at all (a malformed or cut body): the probe failed
    /// ([`ProbeError::InvalidJson`]).
    Broken,
}

/// Whether the whole JSON object `object` has the number `id` as its `id`.
fn id_is(object: &[u8], id: u64) -> bool {
    serde_json::from_slice::<Value>(object).is_ok_and(|v| v.get("id").and_then(Value::as_u64) == Some(id))
}

/// The members the rules read, each as the span of its value in what was read: the last one
/// of each name (as serde_json keeps for a whole body), and only values that ended within it.
#[derive(Debug, Default)]
struct Members {
    jsonrpc: Option<Range<usize>>,
    id: Option<Range<usize>>,
    error: Option<Range<usize>>,
    result: Option<Found>,
    /// What was read ended inside the envelope: the body goes on beyond it.
    cut: bool,
}

/// The envelope's `result`.
#[derive(Debug)]
enum Found {
    /// An object, with its own members the rules read (so far, if it was cut).
    Block(Block),
    /// Any other value, whole.
    Other(Range<usize>),
    /// Any other value, cut off: where it starts.
    CutOther(usize),
}

/// A block's `number`, `hash` and `timestamp`, where their values ended within what was read.
#[derive(Debug, Default)]
struct Block {
    number: Option<Range<usize>>,
    hash: Option<Range<usize>>,
    timestamp: Option<Range<usize>>,
}

/// Why the scanner stopped before the end of the envelope.
#[derive(Debug)]
enum Stop {
    /// Not JSON.
    Invalid,
    /// The end of what was read.
    Cut,
}

/// Walks `read` (a whole body when `whole`, else the first [`MAX_BODY`] bytes of one).
fn scan(read: &[u8], whole: bool) -> Result<Members, ProbeError> {
    let mut scanner = Scanner { bytes: read, pos: 0 };
    scanner.skip_whitespace();
    match scanner.peek() {
        Some(b'{') => scanner.pos += 1,
        // The start of some other JSON value.
        Some(b'[' | b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n') => return Err(ProbeError::NotJsonRpc),
        _ => return Err(ProbeError::InvalidJson),
    }
    let mut found = Members::default();
    match envelope(&mut scanner, &mut found) {
        Ok(()) => {
            scanner.skip_whitespace();
            if scanner.pos < read.len() {
                return Err(ProbeError::InvalidJson);
            }
        }
        Err(Stop::Cut) if !whole => found.cut = true,
        Err(Stop::Cut | Stop::Invalid) => return Err(ProbeError::InvalidJson),
    }
    Ok(found)
}

/// The envelope's members, the scanner just past its `{`.
fn envelope(s: &mut Scanner<'_>, found: &mut Members) -> Result<(), Stop> {
    let mut first = true;
    while let Some(key) = s.next_key(first)? {
        first = false;
        if s.key_is(&key, "result") {
            result(s, found)?;
        } else if s.key_is(&key, "jsonrpc") {
            found.jsonrpc = Some(s.value()?);
        } else if s.key_is(&key, "id") {
            found.id = Some(s.value()?);
        } else if s.key_is(&key, "error") {
            found.error = Some(s.value()?);
        } else {
            s.value()?;
        }
    }
    Ok(())
}

/// The envelope's `result`, the scanner at its value. Records what it finds as it goes, so a
/// block cut off after its `number` and `hash` still yields them.
fn result(s: &mut Scanner<'_>, found: &mut Members) -> Result<(), Stop> {
    if s.peek_or_cut()? != b'{' {
        found.result = Some(Found::CutOther(s.pos));
        found.result = Some(Found::Other(s.value()?));
        return Ok(());
    }
    s.pos += 1;
    let block = match found.result.insert(Found::Block(Block::default())) {
        Found::Block(block) => block,
        Found::Other(_) | Found::CutOther(_) => return Err(Stop::Invalid),
    };
    let mut first = true;
    while let Some(key) = s.next_key(first)? {
        first = false;
        if s.key_is(&key, "number") {
            block.number = Some(s.value()?);
        } else if s.key_is(&key, "hash") {
            block.hash = Some(s.value()?);
        } else if s.key_is(&key, "timestamp") {
            block.timestamp = Some(s.value()?);
        } else {
            s.value()?;
        }
    }
    Ok(())
}

/// A cursor over what was read.
struct Scanner<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn peek_or_cut(&self) -> Result<u8, Stop> {
        self.peek().ok_or(Stop::Cut)
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    /// In an object, just past its `{` (`first`) or past a member's value: the span of the
    /// next member's key, quotes included, with the scanner at the member's value; `None`
    /// past the closing `}`.
    fn next_key(&mut self, first: bool) -> Result<Option<Range<usize>>, Stop> {
        self.skip_whitespace();
        match self.peek_or_cut()? {
            b'}' => {
                self.pos += 1;
                return Ok(None);
            }
            b',' if !first => {
                self.pos += 1;
                self.skip_whitespace();
            }
            _ if first => {}
            _ => return Err(Stop::Invalid),
        }
        let key = self.string()?;
        self.skip_whitespace();
        if self.peek_or_cut()? != b':' {
            return Err(Stop::Invalid);
        }
        self.pos += 1;
        self.skip_whitespace();
        Ok(Some(key))
    }

    /// Whether the key at `span` (quotes included) is `name`, escapes decoded.
    fn key_is(&self, span: &Range<usize>, name: &str) -> bool {
        let raw = self.bytes.get(span.start + 1..span.end.saturating_sub(1)).unwrap_or_default();
        if !raw.contains(&b'\\') {
            return raw == name.as_bytes();
        }
        let quoted = self.bytes.get(span.clone()).unwrap_or_default();
        serde_json::from_slice::<String>(quoted).is_ok_and(|key| key == name)
    }

    /// A string, the scanner at its opening quote: its span, quotes included.
    fn string(&mut self) -> Result<Range<usize>, Stop> {
        let start = self.pos;
        if self.peek_or_cut()? != b'"' {
            return Err(Stop::Invalid);
        }
        self.pos += 1;
        loop {
            match self.peek_or_cut()? {
                b'"' => {
                    self.pos += 1;
                    return Ok(start..self.pos);
                }
                // The escaped byte cannot end the string; what it escapes is serde_json's
                // concern, for the values that are parsed.
                b'\\' => self.pos += 2,
                0x00..=0x1f => return Err(Stop::Invalid),
                _ => self.pos += 1,
            }
        }
    }

    /// Skips one value, the scanner at its first byte: its span. Strings are skipped whole and
    /// brackets matched; nothing else inside a nested value is checked.
    fn value(&mut self) -> Result<Range<usize>, Stop> {
        let start = self.pos;
        // The closing bracket each open one expects, innermost last.
        let mut open = Vec::new();
        loop {
            match self.peek_or_cut()? {
                b'"' => {
                    self.string()?;
                }
                b'{' => {
                    open.push(b'}');
                    self.pos += 1;
                }
                b'[' => {
                    open.push(b']');
                    self.pos += 1;
                }
                close @ (b'}' | b']') => {
                    if open.pop() != Some(close) {
                        return Err(Stop::Invalid);
                    }
                    self.pos += 1;
                }
                b',' | b':' | b' ' | b'\t' | b'\n' | b'\r' if !open.is_empty() => self.pos += 1,
                b',' | b':' => return Err(Stop::Invalid),
                _ => self.scalar()?,
            }
            if open.is_empty() {
                return Ok(start..self.pos);
            }
        }
    }

    /// Skips a number or literal: up to the next delimiter, which must be within what was
    /// read (else the token may go on).
    fn scalar(&mut self) -> Result<(), Stop> {
        while let Some(byte) = self.peek() {
            if matches!(byte, b',' | b':' | b'{' | b'}' | b'[' | b']' | b'"' | b' ' | b'\t' | b'\n' | b'\r') {
                return Ok(());
            }
            self.pos += 1;
        }
        Err(Stop::Cut)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HASH: &str = "0x1111111111111111111111111111111111111111111111111111111111111111";
    const PARENT: &str = "0x2222222222222222222222222222222222222222222222222222222222222222";
    const TX: &str = "0x3333333333333333333333333333333333333333333333333333333333333333";

    fn parse(body: &str) -> Result<(u64, String), String> {
        parse_head_response(body.as_bytes(), 1).map(|(n, h)| (n, h.to_string())).map_err(|e| format!("{e:?}"))
    }

    /// `{"jsonrpc":"2.0","id":1,"result":{<members>}}`.
    fn block(members: &str) -> String {
        format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{{members}}}}}"#)
    }

    fn transactions(n: usize) -> String {
        let hashes = vec![format!("\"{TX}\""); n].join(",");
        format!(r#""transactions":[{hashes}]"#)
    }

    #[test]
    fn number_and_hash_are_read_from_a_block_larger_than_the_cap_in_geth_and_anvil_order() {
        let bloom = format!("0x{}", "0".repeat(512));
        let geth = block(&format!(
            r#""baseFeePerGas":"0x7","hash":"{HASH}","logsBloom":"{bloom}","number":"0x12a05f2","parentHash":"{PARENT}",{},"uncles":[]"#,
            transactions(200)
        ));
        let anvil = block(&format!(
            r#""hash":"{HASH}","parentHash":"{PARENT}","logsBloom":"{bloom}","number":"0x12a05f2",{},"uncles":[]"#,
            transactions(200)
        ));
        for body in [geth, anvil] {
            assert!(body.len() > 3 * MAX_BODY);
            assert_eq!(parse(&body), Ok((0x12a_05f2, HASH.to_owned())));
        }
    }

    #[test]
    fn parent_hash_a_nested_hash_and_a_hash_inside_a_string_are_not_the_hash() {
        let nested = r#"{"hash":"0x4444444444444444444444444444444444444444444444444444444444444444"}"#;
        let tricky = r#""extraData":"\"hash\":\"0x5555555555555555555555555555555555555555555555555555555555555555\"""#;
        let body = block(&format!(
            r#""parentHash":"{PARENT}",{tricky},"transactions":[{nested}],"uncles":[[{nested}]],"number":"0x1","hash":"{HASH}""#
        ));
        assert_eq!(parse(&body), Ok((1, HASH.to_owned())));
        // Without a top-level hash, none of them is taken.
        let body =
            block(&format!(r#""parentHash":"{PARENT}",{tricky},"transactions":[{nested}],"number":"0x1""#));
        assert_eq!(parse(&body), Err(r#"MissingHeadField("hash")"#.to_owned()));
    }

    #[test]
    fn a_number_or_hash_beyond_the_cap_is_missing() {
        let late_hash = block(&format!(r#""number":"0x1",{},"hash":"{HASH}""#, transactions(100)));
        assert_eq!(parse(&late_hash), Err(r#"MissingHeadField("hash")"#.to_owned()));
        let late_number = block(&format!(r#""hash":"{HASH}",{},"number":"0x1""#, transactions(100)));
        assert_eq!(parse(&late_number), Err(r#"MissingHeadField("number")"#.to_owned()));
        // A value cut off at the cap does not count either: here the cap falls inside the hash.
        let head = r#"{"jsonrpc":"2.0","id":1,"result":{"number":"0x1","extraData":""#;
        let key = r#"","hash":""#;
        let pad = MAX_BODY + 2 - head.len() - key.len() - HASH.len();
        let body = format!(r#"{head}{}{key}{HASH}"}}}}"#, "a".repeat(pad));
        assert_eq!(body.find(&format!(r#"{HASH}""#)).map(|at| at + HASH.len()), Some(MAX_BODY + 2));
        assert_eq!(parse(&body), Err(r#"MissingHeadField("hash")"#.to_owned()));
    }

    #[test]
    fn each_rule_has_its_error() {
        let ok = format!(r#""number":"0x1","hash":"{HASH}""#);
        let cases = [
            ("".to_owned(), "InvalidJson"),
            ("<html>".to_owned(), "InvalidJson"),
            ("[]".to_owned(), "NotJsonRpc"),
            (format!(r#"{{"id":1,"result":{{{ok}}}}}"#), "NotJsonRpc"),
            (format!(r#"{{"jsonrpc":"1.0","id":1,"result":{{{ok}}}}}"#), "NotJsonRpc"),
            (r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"x"}}"#.to_owned(), "JsonRpc"),
            (r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#.to_owned(), "JsonRpc"),
            (r#"{"jsonrpc":"2.0","id":1,"error":"boom"}"#.to_owned(), "NotJsonRpc"),
            (format!(r#"{{"jsonrpc":"2.0","id":2,"result":{{{ok}}}}}"#), "IdMismatch"),
            (format!(r#"{{"jsonrpc":"2.0","result":{{{ok}}}}}"#), "IdMismatch"),
            (r#"{"jsonrpc":"2.0","id":1}"#.to_owned(), "NotJsonRpc"),
            (r#"{"jsonrpc":"2.0","id":1,"result":null}"#.to_owned(), r#"NotABlock("null")"#),
            (r#"{"jsonrpc":"2.0","id":1,"result":"0x64"}"#.to_owned(), r#"NotABlock("\"0x64\"")"#),
            (block(&format!(r#""hash":"{HASH}""#)), r#"MissingHeadField("number")"#),
            (block(r#""number":"0x1""#), r#"MissingHeadField("hash")"#),
            (block(&format!(r#""number":"0x01","hash":"{HASH}""#)), r#"InvalidQuantity("0x01")"#),
            (block(&format!(r#""number":1,"hash":"{HASH}""#)), r#"InvalidQuantity("1")"#),
            (block(r#""number":"0x1","hash":"0x11""#), r#"InvalidHash("0x11")"#),
            (block(&format!(r#""number":"0x1","hash":"0x{}""#, "AB".repeat(32))), "InvalidHash"),
            (block(&format!(r#""number":"0x1","hash":"{}""#, &HASH[2..])), "InvalidHash"),
            (block(r#""number":"0x1","hash":null"#), r#"InvalidHash("null")"#),
            // Whole bodies are JSON or nothing.
            (format!("{}x", block(&ok)), "InvalidJson"),
            (block(&ok).replace("}}", "}"), "InvalidJson"),
        ];
        for (body, want) in cases {
            let got = parse(&body).unwrap_err();
            assert!(got.starts_with(want), "{body}: got {got}, want {want}");
        }
    }

    #[test]
    fn an_id_after_the_result_is_required_in_a_whole_body_and_not_in_a_cut_one() {
        let members = format!(r#""number":"0x1","hash":"{HASH}""#);
        let last =
            |members: &str, id: u64| format!(r#"{{"jsonrpc":"2.0","result":{{{members}}},"id":{id}}}"#);
        assert_eq!(parse(&last(&members, 1)), Ok((1, HASH.to_owned())));
        assert!(parse(&last(&members, 7)).unwrap_err().starts_with("IdMismatch"));
        let long = format!("{members},{}", transactions(100));
        assert_eq!(parse(&last(&long, 7)), Ok((1, HASH.to_owned())), "the id is beyond the cap");
        // An id before the result is read, cut body or not.
        let first = format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{{long}}}}}"#);
        assert!(parse(&first).unwrap_err().starts_with("IdMismatch"));
    }

    #[test]
    fn escaped_keys_count_and_the_last_of_a_repeated_member_wins() {
        let body = block(&format!(r#""num\u0062er":"0x2","\u0068ash":"{HASH}""#));
        assert_eq!(parse(&body), Ok((2, HASH.to_owned())));
        let body = block(&format!(r#""number":"0x1","number":"0x3","hash":"{PARENT}","hash":"{HASH}""#));
        assert_eq!(parse(&body), Ok((3, HASH.to_owned())));
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"number":"0x1","hash":"{HASH}"}},"result":null}}"#
        );
        assert_eq!(parse(&body), Err(r#"NotABlock("null")"#.to_owned()));
    }

    #[test]
    fn a_body_cut_before_its_result_or_inside_another_value_is_not_a_block() {
        let padding = "x".repeat(MAX_BODY);
        let before = format!(r#"{{"jsonrpc":"2.0","id":1,"note":"{padding}","result":{{}}}}"#);
        assert!(parse(&before).unwrap_err().starts_with("NotJsonRpc"));
        let array = format!(r#"{{"jsonrpc":"2.0","id":1,"result":[{}]}}"#, vec!["1"; MAX_BODY].join(","));
        let got = parse(&array).unwrap_err();
        assert!(got.starts_with("NotABlock(\"[1,1,1") && got.ends_with("…\")"), "{got}");
        let spaces = " ".repeat(MAX_BODY + 1);
        assert!(parse(&spaces).unwrap_err().starts_with("InvalidJson"));
        let html = format!("<html>{padding}");
        assert!(parse(&html).unwrap_err().starts_with("InvalidJson"));
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let valid =
            block(&format!(r#""hash":"{HASH}","number":"0x64","parentHash":"{PARENT}",{}"#, transactions(3)));
        let mut bodies = crate::probe::parse::Bodies::new();
        for round in 0..20_000 {
            let mut body = bodies.body(valid.as_bytes(), round);
            if round % 3 == 0 {
                body.resize(MAX_BODY + 1 + (bodies.next() % 8) as usize, b'"');
            }
            let _ = parse_head_response(&body, 1);
        }
        for deep in ["[".repeat(MAX_BODY + 1), format!(r#"{{"result":{}"#, "{\"a\":".repeat(2_000))] {
            assert!(parse_head_response(deep.as_bytes(), 1).is_err());
        }
    }

    fn stamped_block(number: u64, extra: &str) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"number":"{number:#x}","hash":"0x{:064x}","timestamp":"0x6553f100"{extra}}}}}"#,
            number
        )
    }

    const CHAIN: &str = r#"{"jsonrpc":"2.0","id":2,"result":"0x1"}"#;

    #[test]
    fn a_batch_answer_in_order_gives_the_chain_id_and_the_stamped_head() {
        let body = format!("[{CHAIN}, {}]", stamped_block(100, ""));
        let (chain, head) = parse_batch(body.as_bytes(), true).unwrap();
        assert_eq!(chain.unwrap(), 1);
        let head = head.unwrap();
        assert_eq!((head.number, head.timestamp), (100, Some(0x6553_f100)));
    }

    #[test]
    fn a_batch_cut_inside_the_block_still_gives_its_head() {
        let txs =
            format!(r#","transactions":[{}]"#, vec![format!("\"0x{}\"", "ab".repeat(32)); 200].join(","));
        let body = format!("[{CHAIN},{}]", stamped_block(7, &txs));
        assert!(body.len() > MAX_BODY);
        let (chain, head) = parse_batch(&body.as_bytes()[..MAX_BODY], false).unwrap();
        assert_eq!((chain.unwrap(), head.unwrap().number), (1, 7));
    }

    #[test]
    fn an_object_or_answers_out_of_order_refuse_the_batch_and_what_is_not_json_is_broken() {
        let refused = [
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"batch not supported"}}"#
                .to_owned(),
            format!("[{}, {CHAIN}]", stamped_block(100, "")),
            format!("[{CHAIN}]"),
        ];
        for body in refused {
            assert_eq!(parse_batch(body.as_bytes(), true).map(|_| ()), Err(BatchRefused::Refused), "{body}");
        }
        // What is not JSON (a malformed or truncated body) is a broken answer, not a refusal.
        let half = format!("[{CHAIN}, {}]", stamped_block(100, ""));
        for body in ["[".to_owned(), String::new(), "<html>".to_owned(), half[..half.len() / 2].to_owned()] {
            assert_eq!(parse_batch(body.as_bytes(), true).map(|_| ()), Err(BatchRefused::Broken), "{body}");
        }
        // A well-formed batch whose answers are errors is an answer, not a refusal.
        let errors = r#"[{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"x"}},{"jsonrpc":"2.0","id":1,"result":null}]"#;
        let (chain, head) = parse_batch(errors.as_bytes(), true).unwrap();
        assert!(chain.is_err() && head.is_err());
    }
}

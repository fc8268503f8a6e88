//! The probe's pure half: the rules a response body must meet.
//!
//! Nothing here does I/O, and nothing here may panic, whatever bytes a provider sends.

use serde_json::{Map, Value};

use crate::probe::probe_error::ProbeError;
use crate::probe::rpc::MAX_BODY;

/// How much of an offending `result` an [`ProbeError::InvalidQuantity`] keeps, in characters.
const SHOWN_CHARS: usize = 40;

/// Reads a JSON-RPC 2.0 response body to the quantity in its `result`.
///
/// This is the probe's own parser, public so that other code (and fuzzers) can apply exactly
/// the rules a check applies. It never panics, whatever the bytes.
///
/// The checks run in this order, and the first one broken is the error:
///
/// 1. at most [`MAX_BODY`] bytes ([`ProbeError::BodyTooLarge`]);
/// 2. valid JSON ([`ProbeError::InvalidJson`]);
/// 3. an object with `"jsonrpc": "2.0"` ([`ProbeError::NotJsonRpc`]);
/// 4. a non-null `error` member, when the `id` is the expected one or `null` (the JSON-RPC
///    answer to a request the server could not read): [`ProbeError::JsonRpc`], or
///    [`ProbeError::NotJsonRpc`] when it is not an object with an integer `code`;
/// 5. `id` is the number `expected_id` ([`ProbeError::IdMismatch`]);
/// 6. a `result` member ([`ProbeError::NotJsonRpc`]);
/// 7. the `result` is a string holding a canonical quantity ([`ProbeError::InvalidQuantity`];
///    see [`parse_quantity`]).
pub fn parse_response(body: &[u8], expected_id: u64) -> Result<u64, ProbeError> {
    if body.len() > MAX_BODY {
        return Err(ProbeError::BodyTooLarge);
    }
    let value: Value = serde_json::from_slice(body).map_err(|_| ProbeError::InvalidJson)?;
    let Value::Object(object) = value else { return Err(ProbeError::NotJsonRpc) };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(ProbeError::NotJsonRpc);
    }
    let id = object.get("id");
    let id_matches = id.and_then(Value::as_u64) == Some(expected_id);
    if let Some(error) = object.get("error").filter(|e| !e.is_null()) {
        if id_matches || matches!(id, Some(Value::Null)) {
            return Err(rpc_error(error));
        }
    }
    if !id_matches {
        return Err(ProbeError::IdMismatch);
    }
    match object.get("result") {
        None => Err(ProbeError::NotJsonRpc),
        Some(Value::String(text)) => parse_quantity(text).ok_or_else(|| invalid_quantity(text)),
        Some(other) => Err(invalid_quantity(&other.to_string())),
    }
}

/// Parses a canonical Ethereum quantity: `0x0`, or `0x` followed by 1 to 16 lower-case hex
/// digits, the first of which is not `0`. This is the `uint` pattern of the Ethereum
/// execution API specification, restricted to values that fit in `u64`.
///
/// Rejected: a bare `0x`, a missing or upper-case (`0X`) prefix, upper-case digits, leading
/// zeros, signs, whitespace anywhere, and values above `u64::MAX`.
///
/// The rule is failnext's [`failnext::quantity::parse`], which also says why a text was
/// rejected ([`failnext::quantity::QuantityError`]); this is that parser's answer without
/// the reason, the form the probe's rules use.
pub fn parse_quantity(text: &str) -> Option<u64> {
    failnext::quantity::parse(text).ok()
}

pub(crate) fn rpc_error(error: &Value) -> ProbeError {
    let fields = error.as_object().and_then(|e: &Map<String, Value>| {
        let code = e.get("code")?.as_i64()?;
        let message = e.get("message").and_then(Value::as_str).unwrap_or_default();
        Some((code, message.to_owned()))
    });
    match fields {
        Some((code, message)) => ProbeError::JsonRpc { code, message },
        None => ProbeError::NotJsonRpc,
    }
}

pub(crate) fn invalid_quantity(text: &str) -> ProbeError {
    ProbeError::InvalidQuantity(shortened(text))
}

/// `text` cut to [`SHOWN_CHARS`] characters, with `…` when something was cut.
pub(crate) fn shortened(text: &str) -> String {
    let mut shown: String = text.chars().take(SHOWN_CHARS).collect();
    if text.chars().nth(SHOWN_CHARS).is_some() {
        shown.push('…');
    }
    shown
}

/// A deterministic stream of bodies for the parsers' never-panic tests, drawn from a seeded
/// [`failnext::Jitter`]: the valid body (even rounds) or random bytes, with up to three bytes
/// changed.
#[cfg(test)]
pub(crate) struct Bodies(failnext::Jitter);

#[cfg(test)]
impl Bodies {
    pub(crate) fn new() -> Bodies {
        Bodies(failnext::Jitter::from_seed(0x9e37_79b9_7f4a_7c15))
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Round `round`'s body, made from `valid`.
    pub(crate) fn body(&mut self, valid: &[u8], round: usize) -> Vec<u8> {
        let mut body = if round % 2 == 0 {
            valid.to_vec()
        } else {
            (0..self.next() % 64).map(|_| self.next() as u8).collect()
        };
        for _ in 0..self.next() % 4 {
            if body.is_empty() {
                break;
            }
            let at = (self.next() % body.len() as u64) as usize;
            body[at] = self.next() as u8;
        }
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::rpc::Method;

    fn parse(body: &str) -> Result<u64, String> {
        parse_response(body.as_bytes(), 1).map_err(|e| format!("{e:?}"))
    }

    #[test]
    fn canonical_quantities_parse() {
        assert_eq!(parse_quantity("0x0"), Some(0));
        assert_eq!(parse_quantity("0x1"), Some(1));
        assert_eq!(parse_quantity("0x64"), Some(100));
        assert_eq!(parse_quantity("0x1234abcd"), Some(0x1234_abcd));
        assert_eq!(parse_quantity("0xffffffffffffffff"), Some(u64::MAX));
    }

    #[test]
    fn non_canonical_quantities_are_rejected() {
        for bad in [
            "",
            "0x",
            "0",
            "64",
            "x64",
            "0x00",
            "0x064",
            "0x0000000000000001",
            "0X64",
            "0x6E",
            "0xAB",
            "-0x1",
            "+0x1",
            "0x-1",
            "0x+1",
            " 0x64",
            "0x64 ",
            "0x 64",
            "0x64\n",
            "\t0x1",
            "0x6 4",
            "0xg",
            "0x1.5",
            "0x1_0",
            "0x10000000000000000",
            "0xfffffffffffffffff",
            "١",
            "0x١",
            "0xｆ",
            "0x64\u{0}",
        ] {
            assert_eq!(parse_quantity(bad), None, "{bad:?} was accepted");
        }
    }

    #[test]
    fn valid_response_yields_the_height() {
        assert_eq!(parse(r#"{"jsonrpc":"2.0","id":1,"result":"0x64"}"#), Ok(100));
        assert_eq!(parse(r#" {"result":"0x0","id":1,"jsonrpc":"2.0","extra":[1,2]} "#), Ok(0));
    }

    #[test]
    fn each_rule_has_its_error() {
        let cases = [
            ("", "InvalidJson"),
            ("<html>", "InvalidJson"),
            (r#"{"jsonrpc":"2.0","id":1,"result":"0x1""#, "InvalidJson"),
            ("[]", "NotJsonRpc"),
            (r#"[{"jsonrpc":"2.0","id":1,"result":"0x1"}]"#, "NotJsonRpc"),
            (r#""0x1""#, "NotJsonRpc"),
            (r#"{"id":1,"result":"0x1"}"#, "NotJsonRpc"),
            (r#"{"jsonrpc":"1.0","id":1,"result":"0x1"}"#, "NotJsonRpc"),
            (r#"{"jsonrpc":2.0,"id":1,"result":"0x1"}"#, "NotJsonRpc"),
            (r#"{"jsonrpc":"2.0","id":1}"#, "NotJsonRpc"),
            (r#"{"jsonrpc":"2.0","id":2,"result":"0x1"}"#, "IdMismatch"),
            (r#"{"jsonrpc":"2.0","id":"1","result":"0x1"}"#, "IdMismatch"),
            (r#"{"jsonrpc":"2.0","id":1.0,"result":"0x1"}"#, "IdMismatch"),
            (r#"{"jsonrpc":"2.0","result":"0x1"}"#, "IdMismatch"),
            (r#"{"jsonrpc":"2.0","id":null,"result":"0x1"}"#, "IdMismatch"),
            (r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"x"}}"#, "IdMismatch"),
            (r#"{"jsonrpc":"2.0","id":1,"error":"boom"}"#, "NotJsonRpc"),
            (r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}"#, "NotJsonRpc"),
            (r#"{"jsonrpc":"2.0","id":1,"error":{"code":1.5}}"#, "NotJsonRpc"),
            (r#"{"jsonrpc":"2.0","id":1,"result":100}"#, "InvalidQuantity(\"100\")"),
            (r#"{"jsonrpc":"2.0","id":1,"result":null}"#, "InvalidQuantity(\"null\")"),
            (r#"{"jsonrpc":"2.0","id":1,"result":"0x064"}"#, "InvalidQuantity(\"0x064\")"),
        ];
        for (body, want) in cases {
            let got = parse(body).unwrap_err();
            assert!(got.starts_with(want), "{body}: got {got}, want {want}");
        }
    }

    #[test]
    fn error_object_wins_over_result_and_accepts_null_id() {
        let body = r#"{"jsonrpc":"2.0","id":1,"result":"0x1","error":{"code":-32005,"message":"limit"}}"#;
        assert_eq!(parse(body), Err("JsonRpc { code: -32005, message: \"limit\" }".to_owned()));
        let body = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}"#;
        assert_eq!(parse(body), Err("JsonRpc { code: -32700, message: \"parse error\" }".to_owned()));
        let body = r#"{"jsonrpc":"2.0","id":1,"error":{"code":3}}"#;
        assert_eq!(parse(body), Err("JsonRpc { code: 3, message: \"\" }".to_owned()));
        let body = r#"{"jsonrpc":"2.0","id":1,"error":null,"result":"0x2"}"#;
        assert_eq!(parse(body), Ok(2));
    }

    #[test]
    fn offending_result_is_shortened() {
        let long = format!(r#"{{"jsonrpc":"2.0","id":1,"result":"0x{}"}}"#, "f".repeat(100));
        let Err(ProbeError::InvalidQuantity(shown)) = parse_response(long.as_bytes(), 1) else {
            panic!("expected InvalidQuantity")
        };
        assert_eq!(shown.chars().count(), SHOWN_CHARS + 1);
        assert!(shown.ends_with('…'));
    }

    #[test]
    fn body_limit_is_inclusive_at_4096_bytes() {
        let json = r#"{"jsonrpc":"2.0","id":1,"result":"0x7"}"#;
        let exact = format!("{json}{}", " ".repeat(MAX_BODY - json.len()));
        assert_eq!(parse_response(exact.as_bytes(), 1).ok(), Some(7));
        let over = format!("{exact} ");
        assert!(matches!(parse_response(over.as_bytes(), 1), Err(ProbeError::BodyTooLarge)));
    }

    #[test]
    fn expected_id_is_per_method() {
        let body = br#"{"jsonrpc":"2.0","id":2,"result":"0x1"}"#;
        assert_eq!(parse_response(body, Method::ChainId.request_id()).ok(), Some(1));
        for method in [Method::BlockNumber, Method::BlockByNumber, Method::ChainId] {
            let sent: Value = serde_json::from_str(method.request_body()).unwrap();
            assert_eq!(sent["id"].as_u64(), Some(method.request_id()));
            assert_eq!(sent["method"].as_str(), Some(method.name()));
            assert_eq!(sent["jsonrpc"].as_str(), Some("2.0"));
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        // A deterministic xorshift stream of bodies: random bytes, and mutations of a valid
        // response (the parser's interesting neighbourhood).
        let valid = br#"{"jsonrpc":"2.0","id":1,"result":"0x64","error":{"code":1,"message":"m"}}"#;
        let mut bodies = Bodies::new();
        for round in 0..20_000 {
            let body = bodies.body(valid, round);
            let _ = parse_response(&body, 1);
        }
        let deep = format!("{}{}", "[".repeat(2_000), "]".repeat(2_000));
        assert!(matches!(parse_response(deep.as_bytes(), 1), Err(ProbeError::InvalidJson)));
        let deep = "[".repeat(4096);
        assert!(parse_response(deep.as_bytes(), 1).is_err());
    }
}

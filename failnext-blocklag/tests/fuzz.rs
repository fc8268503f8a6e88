//! Property-based fuzzing of the probe parsers, which read network input.
//!
//! - `parse_response` on arbitrary bytes (random, mutated valid responses, bodies around the
//!   4 KiB cap) and on generated JSON values (random trees and near-valid JSON-RPC responses):
//!   it never panics and agrees with a reference statement of its documented rules
//!   ([`reference_response`]).
//! - `parse_head_response` (the head-with-hash probe, which scans at most the first 4 KiB):
//!   on generated `eth_getBlockByNumber` answers (members in any order, missing, repeated or
//!   escaped; nested and `parentHash` decoys) it agrees with serde_json reading the whole body
//!   ([`reference_head`]); a block cut at the cap inside its transactions yields what the whole
//!   block yields; arbitrary bytes never make it panic.
//! - `parse_quantity` against [`reference_quantity`], an independent rule (canonical
//!   lower-case hex, `0x0` or no leading zero, fits `u64`), on arbitrary strings and generated
//!   near-misses (prefix variants, leading zeros, upper case, whitespace, signs, separators,
//!   non-ASCII digits, values around 2^64); every `u64` round-trips.
//!
//! Each test runs `FAILNEXT_FUZZ_CASES` cases, 25 000 by default. The full profile, a million
//! cases per test:
//!
//! ```text
//! FAILNEXT_FUZZ_CASES=1000000 cargo test --release -p failnext-blocklag --test fuzz
//! ```

use failnext_blocklag::{
    BlockHash, MAX_BODY, ProbeError, parse_head_response, parse_quantity, parse_response,
};
use failnext_loopback::cases::{check, pure_cases};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

// ===== parse_quantity =====

/// The quantity rule, written from the specification: `0x`, then either the single digit `0`
/// or lower-case hex digits not starting with `0`, whose value fits in a `u64`.
fn reference_quantity(text: &str) -> Option<u64> {
    let digits = text.as_bytes().strip_prefix(b"0x")?;
    if digits.is_empty() || (digits.len() > 1 && digits[0] == b'0') {
        return None;
    }
    let mut value: u64 = 0;
    for &b in digits {
        let digit = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            _ => return None,
        };
        value = value.checked_mul(16)?.checked_add(u64::from(digit))?;
    }
    Some(value)
}

/// Strings near the canonical form: prefix variants, digits from a hostile alphabet, suffixes.
fn near_miss_quantity() -> impl Strategy<Value = String> {
    let prefix = prop::sample::select(vec![
        "0x", "0x", "0x", "0X", "x", "", "0", "00x", "0x0x", " 0x", "+0x", "-0x", "0x-", "0x+", "\t0x",
        "0ｘ", "0x ", "0x_",
    ]);
    let alphabet: Vec<char> = "0123456789abcdef0123456789abcdefABCDEFgxX +-_.\t\n\u{0}١ｆ".chars().collect();
    let digits = prop::collection::vec(prop::sample::select(alphabet), 0..=20);
    let suffix = prop::sample::select(vec!["", "", "", " ", "\n", "\u{0}", "h", "0", "\u{feff}"]);
    (prefix, digits, suffix).prop_map(|(p, d, s)| format!("{p}{}{s}", d.into_iter().collect::<String>()))
}

/// Values around 2^64 and 0, written canonically and not quite.
fn boundary_quantity() -> impl Strategy<Value = String> {
    let near_max = (0u128..4096).prop_map(|k| (1u128 << 64) - 2048 + k);
    let far = prop_oneof![Just(0u128), Just(1), any::<u64>().prop_map(u128::from), any::<u128>(), near_max];
    let form = prop::sample::select(vec!["{:x}", "{:X}", "0{:x}", "00{:x}", "{:x} ", "{:x}0"]);
    (far, form).prop_map(|(v, form)| {
        let hex = format!("{v:x}");
        let body = match form {
            "{:X}" => format!("{v:X}"),
            "0{:x}" => format!("0{hex}"),
            "00{:x}" => format!("00{hex}"),
            "{:x} " => format!("{hex} "),
            "{:x}0" => format!("{hex}0"),
            _ => hex,
        };
        format!("0x{body}")
    })
}

fn any_quantity_text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => near_miss_quantity(),
        2 => boundary_quantity(),
        1 => any::<String>(),
        1 => any::<u64>().prop_map(|v| format!("{v:#x}")),
    ]
}

#[test]
fn parse_quantity_agrees_with_the_reference_rule() {
    check(pure_cases(), any_quantity_text(), |text| {
        let got = parse_quantity(&text);
        prop_assert_eq!(got, reference_quantity(&text), "{:?}", text);
        if let Some(v) = got {
            // Canonical means exactly one spelling per value.
            prop_assert_eq!(format!("{v:#x}"), text);
        }
        Ok(())
    });
    check(pure_cases() / 10, any::<u64>(), |v| {
        prop_assert_eq!(parse_quantity(&format!("{v:#x}")), Some(v));
        prop_assert_eq!(parse_quantity(&format!("0x0{v:x}")), None);
        Ok(())
    });
}

// ===== parse_response =====

/// What a response body must yield, restated from the documented rules of `parse_response`.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Verdict {
    Height(u64),
    BodyTooLarge,
    InvalidJson,
    NotJsonRpc,
    IdMismatch,
    JsonRpc(i64, String),
    InvalidQuantity(String),
    /// Any variant parsing must never produce (transport, timeout, status, chain).
    Other(String),
}

fn verdict(result: Result<u64, ProbeError>) -> Verdict {
    match result {
        Ok(height) => Verdict::Height(height),
        Err(ProbeError::BodyTooLarge) => Verdict::BodyTooLarge,
        Err(ProbeError::InvalidJson) => Verdict::InvalidJson,
        Err(ProbeError::NotJsonRpc) => Verdict::NotJsonRpc,
        Err(ProbeError::IdMismatch) => Verdict::IdMismatch,
        Err(ProbeError::JsonRpc { code, message }) => Verdict::JsonRpc(code, message),
        Err(ProbeError::InvalidQuantity(shown)) => Verdict::InvalidQuantity(shown),
        Err(other) => Verdict::Other(format!("{other:?}")),
    }
}

/// The first 40 characters, with `…` when something was cut.
fn shown(text: &str) -> String {
    let mut out: String = text.chars().take(40).collect();
    if text.chars().count() > 40 {
        out.push('…');
    }
    out
}

fn reference_response(body: &[u8], expected_id: u64) -> Verdict {
    // 1. size, 2. JSON, 3. a JSON-RPC 2.0 object.
    if body.len() > 4096 {
        return Verdict::BodyTooLarge;
    }
    let Ok(value) = serde_json::from_slice::<Value>(body) else { return Verdict::InvalidJson };
    let Value::Object(object) = value else { return Verdict::NotJsonRpc };
    if !matches!(object.get("jsonrpc"), Some(Value::String(v)) if v == "2.0") {
        return Verdict::NotJsonRpc;
    }
    // 4. an error object answering this request (or an unreadable one: id null).
    let id = object.get("id");
    let id_is_ours = matches!(id, Some(Value::Number(n)) if n.as_u64() == Some(expected_id));
    let error = object.get("error").filter(|e| !e.is_null());
    if let Some(error) = error.filter(|_| id_is_ours || id == Some(&Value::Null)) {
        let Value::Object(error) = error else { return Verdict::NotJsonRpc };
        let Some(code) = error.get("code").and_then(Value::as_i64) else { return Verdict::NotJsonRpc };
        let message = match error.get("message") {
            Some(Value::String(m)) => m.clone(),
            _ => String::new(),
        };
        return Verdict::JsonRpc(code, message);
    }
    // 5. the id, 6. a result, 7. a canonical quantity.
    if !id_is_ours {
        return Verdict::IdMismatch;
    }
    match object.get("result") {
        None => Verdict::NotJsonRpc,
        Some(Value::String(text)) => {
            reference_quantity(text).map_or_else(|| Verdict::InvalidQuantity(shown(text)), Verdict::Height)
        }
        Some(other) => Verdict::InvalidQuantity(shown(&other.to_string())),
    }
}

const VALID: &[u8] = br#"{"jsonrpc":"2.0","id":1,"result":"0x64","error":{"code":-32000,"message":"m"}}"#;

/// Byte strings: random, mutated valid responses, and bodies around the 4 KiB cap.
fn body_bytes() -> impl Strategy<Value = Vec<u8>> {
    let edit = (any::<prop::sample::Index>(), any::<u8>(), 0..3u8);
    let mutated = (
        prop::sample::select(vec![VALID, br#"{"jsonrpc":"2.0","id":1,"result":"0x0"}"#]),
        prop::collection::vec(edit, 1..6),
    )
        .prop_map(|(base, edits)| {
            let mut body = base.to_vec();
            for (at, byte, op) in edits {
                let i = at.index(body.len() + 1);
                match op {
                    0 if i < body.len() => body[i] = byte,
                    1 => body.insert(i, byte),
                    _ if i < body.len() => {
                        body.remove(i);
                    }
                    _ => body.push(byte),
                }
            }
            body
        });
    let around_cap = (MAX_BODY - 8..MAX_BODY + 8, any::<bool>()).prop_map(|(len, valid_start)| {
        let mut body =
            if valid_start { br#"{"jsonrpc":"2.0","id":1,"result":"0x7"}"#.to_vec() } else { b"[".to_vec() };
        body.resize(len.max(body.len()), b' ');
        body
    });
    prop_oneof![
        3 => prop::collection::vec(any::<u8>(), 0..64),
        1 => prop::collection::vec(any::<u8>(), 0..1024),
        4 => mutated,
        1 => around_cap,
        1 => (1usize..3000).prop_map(|depth| [vec![b'['; depth], vec![b']'; depth]].concat()),
    ]
}

fn expected_id() -> impl Strategy<Value = u64> {
    prop_oneof![4 => Just(1u64), 2 => Just(2u64), 1 => any::<u64>()]
}

#[test]
fn parse_response_on_arbitrary_bytes_follows_the_rules() {
    check(pure_cases(), (body_bytes(), expected_id()), |(body, id)| {
        prop_assert_eq!(verdict(parse_response(&body, id)), reference_response(&body, id));
        Ok(())
    });
}

/// Arbitrary JSON trees with keys that matter to JSON-RPC.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        any_quantity_text().prop_map(Value::String),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|members| Value::Object(members.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec!["jsonrpc", "id", "result", "error", "code", "message", "data"]).prop_map(str::to_owned),
        1 => any::<String>(),
    ]
}

/// A member that is sometimes absent.
fn member(value: impl Strategy<Value = Value>) -> impl Strategy<Value = Option<Value>> {
    prop_oneof![1 => Just(None), 4 => value.prop_map(Some)]
}

/// JSON-RPC responses that are valid or one or two mistakes away from it.
fn near_valid_response() -> impl Strategy<Value = Value> {
    let jsonrpc = prop_oneof![
        6 => Just(json!("2.0")),
        1 => prop::sample::select(vec![json!("2"), json!("1.0"), json!(2.0), json!("2.0 "), json!(null)]),
    ];
    let id = prop_oneof![
        6 => Just(json!(1)),
        1 => prop::sample::select(vec![json!(2), json!("1"), json!(1.0), json!(null), json!(-1), json!(u64::MAX)]),
        1 => any::<u64>().prop_map(Value::from),
    ];
    let result = prop_oneof![
        6 => any_quantity_text().prop_map(Value::String),
        1 => json_value(),
    ];
    let code = prop_oneof![
        any::<i64>().prop_map(Value::from),
        Just(json!(-32000)),
        Just(json!(u64::MAX)),
        Just(json!(1.5)),
        Just(json!("-32000")),
        Just(json!(null)),
    ];
    let message = prop_oneof![any::<String>().prop_map(Value::String), json_value()];
    let error = prop_oneof![
        4 => Just(None),
        1 => Just(Some(json!(null))),
        3 => (member(code), member(message)).prop_map(|(code, message)| {
            let mut e = Map::new();
            e.extend(code.map(|c| ("code".to_owned(), c)));
            e.extend(message.map(|m| ("message".to_owned(), m)));
            Some(Value::Object(e))
        }),
        1 => json_value().prop_map(Some),
    ];
    let extra = prop::collection::vec((key(), json_value()), 0..2);
    (member(jsonrpc), member(id), member(result), error, extra).prop_map(
        |(jsonrpc, id, result, error, extra)| {
            let mut object: Map<String, Value> = extra.into_iter().collect();
            for (name, value) in [("jsonrpc", jsonrpc), ("id", id), ("result", result), ("error", error)] {
                if let Some(value) = value {
                    object.insert(name.to_owned(), value);
                }
            }
            Value::Object(object)
        },
    )
}

/// Serialised compactly, pretty, or padded with whitespace.
fn json_body() -> impl Strategy<Value = Vec<u8>> {
    let value = prop_oneof![3 => near_valid_response(), 1 => json_value()];
    (value, 0..4u8, 0usize..4200).prop_map(|(value, form, pad)| match form {
        0 => serde_json::to_vec(&value).unwrap_or_default(),
        1 => serde_json::to_vec_pretty(&value).unwrap_or_default(),
        2 => {
            let mut body = serde_json::to_vec(&value).unwrap_or_default();
            body.resize(body.len().max(pad), b' ');
            body
        }
        _ => [b" \t\r\n".as_slice(), &serde_json::to_vec(&value).unwrap_or_default(), b"\n"].concat(),
    })
}

#[test]
fn parse_response_on_generated_json_follows_the_rules() {
    check(pure_cases(), (json_body(), expected_id()), |(body, id)| {
        prop_assert_eq!(verdict(parse_response(&body, id)), reference_response(&body, id));
        Ok(())
    });
}

// ===== parse_head_response =====

/// What an `eth_getBlockByNumber` answer must yield, restated from the documented rules of
/// `parse_head_response`.
#[derive(Clone, Debug, PartialEq, Eq)]
enum HeadVerdict {
    Head(u64, String),
    InvalidJson,
    NotJsonRpc,
    IdMismatch,
    JsonRpc(i64, String),
    InvalidQuantity(String),
    NotABlock(String),
    MissingHeadField(&'static str),
    InvalidHash(String),
    /// Any variant parsing must never produce.
    Other(String),
}

fn head_verdict(result: Result<(u64, BlockHash), ProbeError>) -> HeadVerdict {
    match result {
        Ok((number, hash)) => HeadVerdict::Head(number, hash.to_string()),
        Err(ProbeError::InvalidJson) => HeadVerdict::InvalidJson,
        Err(ProbeError::NotJsonRpc) => HeadVerdict::NotJsonRpc,
        Err(ProbeError::IdMismatch) => HeadVerdict::IdMismatch,
        Err(ProbeError::JsonRpc { code, message }) => HeadVerdict::JsonRpc(code, message),
        Err(ProbeError::InvalidQuantity(shown)) => HeadVerdict::InvalidQuantity(shown),
        Err(ProbeError::NotABlock(shown)) => HeadVerdict::NotABlock(shown),
        Err(ProbeError::MissingHeadField(field)) => HeadVerdict::MissingHeadField(field),
        Err(ProbeError::InvalidHash(shown)) => HeadVerdict::InvalidHash(shown),
        Err(other) => HeadVerdict::Other(format!("{other:?}")),
    }
}

/// The rules for a whole body, on serde_json's reading of all of it.
fn reference_head(body: &[u8], expected_id: u64) -> HeadVerdict {
    let Ok(value) = serde_json::from_slice::<Value>(body) else { return HeadVerdict::InvalidJson };
    let Value::Object(object) = value else { return HeadVerdict::NotJsonRpc };
    if !matches!(object.get("jsonrpc"), Some(Value::String(v)) if v == "2.0") {
        return HeadVerdict::NotJsonRpc;
    }
    let id = object.get("id");
    let id_is_ours = matches!(id, Some(Value::Number(n)) if n.as_u64() == Some(expected_id));
    let error = object.get("error").filter(|e| !e.is_null());
    if let Some(error) = error.filter(|_| id_is_ours || id == Some(&Value::Null)) {
        let Value::Object(error) = error else { return HeadVerdict::NotJsonRpc };
        let Some(code) = error.get("code").and_then(Value::as_i64) else { return HeadVerdict::NotJsonRpc };
        let message = match error.get("message") {
            Some(Value::String(m)) => m.clone(),
            _ => String::new(),
        };
        return HeadVerdict::JsonRpc(code, message);
    }
    if !id_is_ours {
        return HeadVerdict::IdMismatch;
    }
    let block = match object.get("result") {
        None => return HeadVerdict::NotJsonRpc,
        Some(Value::Object(block)) => block,
        Some(other) => return HeadVerdict::NotABlock(shown(&other.to_string())),
    };
    let number = match block.get("number") {
        None => return HeadVerdict::MissingHeadField("number"),
        Some(Value::String(text)) => match reference_quantity(text) {
            Some(number) => number,
            None => return HeadVerdict::InvalidQuantity(shown(text)),
        },
        Some(other) => return HeadVerdict::InvalidQuantity(shown(&other.to_string())),
    };
    let lower_hex = |text: &str| {
        text.strip_prefix("0x")
            .is_some_and(|d| d.len() == 64 && d.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
    };
    match block.get("hash") {
        None => HeadVerdict::MissingHeadField("hash"),
        Some(Value::String(text)) if lower_hex(text) => HeadVerdict::Head(number, text.clone()),
        Some(Value::String(text)) => HeadVerdict::InvalidHash(shown(text)),
        Some(other) => HeadVerdict::InvalidHash(shown(&other.to_string())),
    }
}

/// A value that is sometimes absent.
fn maybe<S: Strategy>(value: S) -> impl Strategy<Value = Option<S::Value>>
where
    S::Value: Clone,
{
    prop_oneof![1 => Just(None), 4 => value.prop_map(Some)]
}

/// `"name"`, sometimes with its first character escaped (`"\u0068ash"`), which is the same key.
fn spelled(name: &'static str) -> impl Strategy<Value = String> {
    let escaped = format!("\"\\u{:04x}{}\"", name.as_bytes()[0], &name[1..]);
    prop_oneof![5 => Just(format!("\"{name}\"")), 1 => Just(escaped)]
}

/// `{` members `}` as JSON text, in the order given.
fn object_text(members: Vec<(String, String)>) -> String {
    let members: Vec<String> = members.into_iter().map(|(key, value)| format!("{key}:{value}")).collect();
    format!("{{{}}}", members.join(","))
}

fn hash_value() -> impl Strategy<Value = Value> {
    let hex = |bytes: [u8; 32]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    prop_oneof![
        6 => prop::array::uniform32(any::<u8>()).prop_map(move |b| Value::String(format!("0x{}", hex(b)))),
        1 => prop::array::uniform32(any::<u8>()).prop_map(move |b| Value::String(format!("0x{}", hex(b).to_uppercase()))),
        1 => prop::array::uniform32(any::<u8>()).prop_map(move |b| Value::String(hex(b))),
        1 => prop::sample::select(vec!["0x", "0x12", "0x0", ""]).prop_map(|s| Value::String(s.to_owned())),
        1 => json_value(),
    ]
}

/// A block's members as JSON text (key, value), some missing, repeated or escaped, in any
/// order, with nested hashes (transaction objects) that must not count.
fn block_members() -> impl Strategy<Value = Vec<(String, String)>> {
    let number = prop_oneof![
        5 => any::<u64>().prop_map(|n| Value::String(format!("{n:#x}"))),
        1 => any_quantity_text().prop_map(Value::String),
        1 => json_value(),
    ];
    let tx = prop_oneof![hash_value(), hash_value().prop_map(|h| json!({ "hash": h, "number": "0x1" })),];
    let transactions = prop::collection::vec(tx, 0..4).prop_map(Value::Array);
    let named = |name: &'static str, value: BoxedStrategy<Value>| {
        maybe((spelled(name), value).prop_map(|(key, value)| (key, value.to_string())))
    };
    let extra_key = prop_oneof![
        prop::sample::select(vec!["\"parentHash\"", "\"Hash\"", "\"hash \"", "\"blockHash\"", "\"numbers\""])
            .prop_map(str::to_owned),
        spelled("hash"),
        spelled("number"),
        key().prop_map(|k| Value::String(k).to_string()),
    ];
    let extras = prop::collection::vec((extra_key, json_value()).prop_map(|(k, v)| (k, v.to_string())), 0..3);
    (
        named("number", number.boxed()),
        named("hash", hash_value().boxed()),
        named("parentHash", hash_value().boxed()),
        named("transactions", transactions.boxed()),
        extras,
    )
        .prop_map(|(number, hash, parent, txs, extras)| {
            [number, hash, parent, txs].into_iter().flatten().chain(extras).collect::<Vec<_>>()
        })
        .prop_shuffle()
}

/// The envelope's members but `result`, as JSON text, some missing or wrong.
fn envelope_members() -> impl Strategy<Value = Vec<(String, String)>> {
    let jsonrpc = prop_oneof![6 => Just(json!("2.0")), 1 => prop::sample::select(vec![json!("1.0"), json!(2.0), json!(null)])];
    let id = prop_oneof![
        6 => Just(json!(1)),
        1 => prop::sample::select(vec![json!(2), json!("1"), json!(1.0), json!(null)]),
    ];
    let error = prop_oneof![
        1 => Just(json!(null)),
        2 => (any::<i64>(), any::<String>()).prop_map(|(code, message)| json!({ "code": code, "message": message })),
        1 => json_value(),
    ];
    let text = |name: &'static str, value: BoxedStrategy<Value>| {
        (spelled(name), value).prop_map(|(key, value)| (key, value.to_string()))
    };
    (
        maybe(text("jsonrpc", jsonrpc.boxed())),
        maybe(text("id", id.boxed())),
        prop_oneof![4 => Just(None), 1 => text("error", error.boxed()).prop_map(Some)],
    )
        .prop_map(|(jsonrpc, id, error)| [jsonrpc, id, error].into_iter().flatten().collect::<Vec<_>>())
        .prop_shuffle()
}

/// A whole `eth_getBlockByNumber` answer: the envelope's members and a `result` (a block, or
/// any value) in any order.
fn head_body() -> impl Strategy<Value = Vec<u8>> {
    let result = prop_oneof![
        6 => block_members().prop_map(object_text),
        1 => json_value().prop_map(|v| v.to_string()),
    ];
    (envelope_members(), maybe(result), any::<prop::sample::Index>()).prop_map(|(mut members, result, at)| {
        if let Some(result) = result {
            members.insert(at.index(members.len() + 1), ("\"result\"".to_owned(), result));
        }
        object_text(members).into_bytes()
    })
}

#[test]
fn parse_head_response_on_whole_bodies_agrees_with_serde_json_reading_all_of_it() {
    check(pure_cases(), (head_body(), expected_id()), |(body, id)| {
        prop_assume!(body.len() <= MAX_BODY);
        prop_assert_eq!(head_verdict(parse_head_response(&body, id)), reference_head(&body, id));
        Ok(())
    });
    // Arbitrary bytes and the parse_response corpus: never a panic, never a foreign variant.
    check(pure_cases() / 5, (prop_oneof![body_bytes(), json_body()], expected_id()), |(body, id)| {
        let got = head_verdict(parse_head_response(&body, id));
        prop_assert!(!matches!(got, HeadVerdict::Other(_)), "{:?}", got);
        if body.len() <= MAX_BODY {
            prop_assert_eq!(got, reference_head(&body, id));
        }
        Ok(())
    });
}

#[test]
fn a_block_cut_at_the_cap_inside_its_transactions_yields_what_the_whole_block_yields() {
    // The envelope's `result` last, and the block's `transactions` last: what the rules read
    // all comes before the padding.
    let body = (envelope_members(), block_members(), 0usize..20_000);
    check(pure_cases() / 5, (body, expected_id()), |((mut envelope, mut block, pad), id)| {
        block.retain(|(key, _)| !key.contains("transactions"));
        let long_envelope = envelope.clone();
        // In the cut body no `id` is read, so none is required: as if it were the one sent.
        if !envelope.iter().any(|(key, _)| serde_json::from_str::<String>(key).is_ok_and(|k| k == "id")) {
            envelope.push(("\"id\"".to_owned(), id.to_string()));
        }
        let whole = |envelope: &[(String, String)], txs: &str| {
            let mut block = block.clone();
            block.push(("\"transactions\"".to_owned(), txs.to_owned()));
            let mut members = envelope.to_vec();
            members.push(("\"result\"".to_owned(), object_text(block)));
            object_text(members).into_bytes()
        };
        let short = whole(&envelope, "[]");
        prop_assume!(short.len() + 80 < MAX_BODY);
        let hashes = vec![format!("\"0x{}\"", "ab".repeat(32)); 60 + pad / 64].join(",");
        let long = whole(&long_envelope, &format!("[{hashes}]"));
        prop_assert!(long.len() > MAX_BODY);
        prop_assert_eq!(head_verdict(parse_head_response(&long, id)), reference_head(&short, id));
        Ok(())
    });
}

//! Parsing: a single or batch JSON-RPC answer, read from the body's chunks, reduced to a
//! [`Tally`] of how its answers were judged.
//!
//! Only what judging needs is deserialised: `jsonrpc`, whether `result` is present (its value
//! is skipped as [`IgnoredAny`], however large or deep), and `error.code`, `error.message`,
//! `error.data` (a short string, or `rate.backoff_seconds`). `id` and every other field are
//! skipped. serde_json skips values without copying them and without a depth limit, so the
//! only allocations are the error's message and short data string, and the parser's small
//! scratch buffer.

use std::fmt;
use std::io::{self, Read};
use std::time::Duration;

use bytes::Bytes;
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::table::{self, ErrorFacts, Kind, Missed, Missing};
use super::text;
use crate::{Class, Evidence, Judgement, Verdict};

/// A `data` string longer than this is not matched against the table (it is revert data or a
/// stack trace, not a provider's message) and is not kept.
const MAX_DATA_TEXT: usize = 512;

// ===== Tally =====

/// How the answers of one response were judged (one answer for a single response).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Tally {
    results: bool,
    definitive: bool,
    unsupported: bool,
    stale: bool,
    broken: bool,
    capacity: bool,
    hint: Option<Duration>,
    /// What the stale and unsupported answers said was missing.
    missed: Missed,
}

impl Tally {
    /// Counts one answer.
    pub(crate) fn add(&mut self, kind: Kind) {
        match kind {
            Kind::Answer => self.results = true,
            Kind::Unrecognised => {}
            Kind::Definitive => self.definitive = true,
            Kind::Unsupported => {
                self.unsupported = true;
                self.missed.add(Missing::Method);
            }
            Kind::Stale(missing) => {
                self.stale = true;
                self.missed.add(missing);
            }
            Kind::Broken => self.broken = true,
            Kind::Capacity(hint) => {
                self.capacity = true;
                self.hint = self.hint.max(hint);
            }
        }
    }

    /// What the stale and unsupported answers said was missing (empty for most responses).
    pub(crate) fn missed(&self) -> Missed {
        self.missed
    }

    /// The response is broken as a whole (malformed JSON, not JSON-RPC).
    pub(crate) fn broken() -> Tally {
        Tally { broken: true, ..Tally::default() }
    }

    /// The response's judgement: any capacity, broken, stale or unsupported answer fails the
    /// whole response over (capacity first, as it carries the hint); else it is returned.
    pub(crate) fn judgement(&self) -> Judgement {
        let fail_over = |cool_for| Verdict::FailOver { cool_for };
        if self.capacity {
            return Judgement::new(fail_over(self.hint), Evidence::Failure, Class::Capacity);
        }
        if self.broken {
            return Judgement::new(fail_over(None), Evidence::Failure, Class::Broken);
        }
        if self.stale || self.unsupported {
            return Judgement::new(fail_over(None), Evidence::Neutral, Class::Stale);
        }
        let evidence = if self.results { Evidence::Success } else { Evidence::Neutral };
        let class = if self.definitive { Class::Definitive } else { Class::Answer };
        Judgement::new(Verdict::Return, evidence, class)
    }
}

/// Parses a whole body (its chunks in order) and tallies its answers. Malformed JSON,
/// trailing garbage, or a value that is neither an object nor an array tallies as broken.
pub(crate) fn tally(chunks: &[Bytes]) -> Tally {
    if !text::is_unicode(chunks) {
        return Tally::broken();
    }
    let parsed = match chunks {
        [] => return Tally::broken(),
        [one] => parse(&mut serde_json::Deserializer::from_slice(one)),
        many => parse(&mut serde_json::Deserializer::from_reader(ChunkReader::new(many))),
    };
    parsed.unwrap_or_else(|_| Tally::broken())
}

fn parse<'de, R: serde_json::de::Read<'de>>(
    de: &mut serde_json::Deserializer<R>,
) -> serde_json::Result<Tally> {
    let tally = de.deserialize_any(BodyVisitor)?;
    de.end()?;
    Ok(tally)
}

// ===== ChunkReader =====

/// `Read` over a list of chunks, in order, without joining them. serde_json reads a byte at
/// a time, so the chunk being read is kept as a slice: most reads are one bounds check.
#[derive(Debug)]
pub(crate) struct ChunkReader<'a> {
    current: &'a [u8],
    next: &'a [Bytes],
}

impl<'a> ChunkReader<'a> {
    pub(crate) fn new(chunks: &'a [Bytes]) -> Self {
        ChunkReader { current: &[], next: chunks }
    }
}

impl Read for ChunkReader<'_> {
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.current.is_empty() {
            let Some((chunk, rest)) = self.next.split_first() else {
                return Ok(0);
            };
            self.current = chunk;
            self.next = rest;
        }
        let n = self.current.len().min(buf.len());
        buf[..n].copy_from_slice(&self.current[..n]);
        self.current = &self.current[n..];
        Ok(n)
    }
}

// ===== skipping what judging does not read =====

/// The visit methods for the JSON values a visitor does not read: each returns `$value`
/// (`null`, booleans and numbers as they come; `$str` adds strings; `$nested` adds arrays and
/// objects, skipped to their end unread).
macro_rules! otherwise {
    ($value:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($value)
        }
    };
    ($value:expr, str) => {
        otherwise!($value);
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok($value)
        }
    };
    ($value:expr, nested) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok($value)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok($value)
        }
    };
}

// ===== the body: a single answer or a batch =====

struct BodyVisitor;

impl<'de> Visitor<'de> for BodyVisitor {
    type Value = Tally;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC answer or batch")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Tally, A::Error> {
        let mut tally = Tally::default();
        tally.add(answer(map)?.kind());
        Ok(tally)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Tally, A::Error> {
        let mut tally = Tally::default();
        while let Some(item) = seq.next_element::<BatchItem>()? {
            tally.add(item.0);
        }
        Ok(tally)
    }

    // Any other JSON value (a string, number, bool or null) is not JSON-RPC.
    otherwise!(Tally::broken(), str);
}

/// One element of a batch, judged: an answer object's kind, or broken for anything else.
struct BatchItem(Kind);

impl<'de> Deserialize<'de> for BatchItem {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ItemVisitor;
        impl<'de> Visitor<'de> for ItemVisitor {
            type Value = BatchItem;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON-RPC answer")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<BatchItem, A::Error> {
                Ok(BatchItem(answer(map)?.kind()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<BatchItem, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(BatchItem(Kind::Broken))
            }
            otherwise!(BatchItem(Kind::Broken), str);
        }
        d.deserialize_any(ItemVisitor)
    }
}

// ===== one answer =====

/// A field's value as judging sees it. A key that appears more than once counts with its
/// last value (as in `serde_json::Value`): each later value replaces the earlier one.
#[derive(Default)]
enum Field<T> {
    /// Absent, or `null`.
    #[default]
    Absent,
    /// A value of the type judging reads there.
    Value(T),
    /// A value of any other type: the answer is malformed.
    Malformed,
}

/// The fields of one answer object that judging needs.
#[derive(Default)]
struct Answer {
    /// `true` when `jsonrpc` is exactly `"2.0"`.
    jsonrpc: bool,
    /// `true` when `result` is present (even `null`: a valid result, never flagged).
    result: bool,
    /// `error`: absent or `null`, an object, or anything else (malformed).
    error: Field<ErrorObject>,
}

/// Reads one answer object from its entries; only syntax errors fail.
fn answer<'de, A: MapAccess<'de>>(mut map: A) -> Result<Answer, A::Error> {
    let mut answer = Answer::default();
    while let Some(key) = map.next_key::<Key>()? {
        match key.0 {
            Some("jsonrpc") => answer.jsonrpc = map.next_value::<Version>()?.0,
            Some("result") => {
                map.next_value::<IgnoredAny>()?;
                answer.result = true;
            }
            Some("error") => answer.error = map.next_value::<ErrorField>()?.0,
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
    }
    Ok(answer)
}

impl Answer {
    fn kind(self) -> Kind {
        if !self.jsonrpc {
            return Kind::Broken;
        }
        match self.error {
            Field::Value(error) => error.kind(),
            Field::Malformed => Kind::Broken,
            Field::Absent if self.result => Kind::Answer,
            Field::Absent => Kind::Broken,
        }
    }
}

/// `jsonrpc`: `true` when it is the string `"2.0"`; any other value is `false`.
struct Version(bool);

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Version;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a version string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Version, E> {
                Ok(Version(v == "2.0"))
            }
            otherwise!(Version(false));
            otherwise!(Version(false), nested);
        }
        d.deserialize_any(V)
    }
}

/// `error`: `null` is no error, an object is read, anything else is malformed.
struct ErrorField(Field<ErrorObject>);

impl<'de> Deserialize<'de> for ErrorField {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ErrorField;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an error object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ErrorField, A::Error> {
                error_object(map).map(|error| ErrorField(Field::Value(error)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ErrorField, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(ErrorField(Field::Malformed))
            }
            fn visit_unit<E: de::Error>(self) -> Result<ErrorField, E> {
                Ok(ErrorField(Field::Absent))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<ErrorField, E> {
                Ok(ErrorField(Field::Malformed))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<ErrorField, E> {
                Ok(ErrorField(Field::Malformed))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<ErrorField, E> {
                Ok(ErrorField(Field::Malformed))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<ErrorField, E> {
                Ok(ErrorField(Field::Malformed))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<ErrorField, E> {
                Ok(ErrorField(Field::Malformed))
            }
        }
        d.deserialize_any(V)
    }
}

/// What judging reads of an error object.
#[derive(Default)]
struct ErrorObject {
    /// `code`: an integer in the range of an `i64`.
    code: Field<i64>,
    /// `message`: a string, lower-cased.
    message: Field<String>,
    data: Data,
}

/// Reads one error object from its entries; only syntax errors fail.
fn error_object<'de, A: MapAccess<'de>>(mut map: A) -> Result<ErrorObject, A::Error> {
    let mut error = ErrorObject::default();
    while let Some(key) = map.next_key::<Key>()? {
        match key.0 {
            Some("code") => error.code = map.next_value::<Code>()?.0,
            Some("message") => error.message = map.next_value::<Message>()?.0,
            Some("data") => error.data = map.next_value::<Data>()?,
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
    }
    Ok(error)
}

impl ErrorObject {
    fn kind(self) -> Kind {
        let code = match self.code {
            Field::Absent => None,
            Field::Value(code) => Some(code),
            Field::Malformed => return Kind::Broken,
        };
        let message = match self.message {
            Field::Absent => String::new(),
            Field::Value(message) => message,
            Field::Malformed => return Kind::Broken,
        };
        let Data { text, backoff_seconds } = self.data;
        table::classify(&ErrorFacts { code, message: &message, data: &text, backoff_seconds })
    }
}

/// `error.code`: an integer that fits an `i64`; `null` is no code; anything else (a
/// fraction, `1.0`, a larger integer, a string) is malformed.
struct Code(Field<i64>);

impl<'de> Deserialize<'de> for Code {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Code;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an error code")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Code, E> {
                Ok(Code(Field::Value(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Code, E> {
                Ok(Code(i64::try_from(v).map_or(Field::Malformed, Field::Value)))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Code, E> {
                Ok(Code(Field::Absent))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Code, E> {
                Ok(Code(Field::Malformed))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Code, E> {
                Ok(Code(Field::Malformed))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Code, E> {
                Ok(Code(Field::Malformed))
            }
            otherwise!(Code(Field::Malformed), nested);
        }
        d.deserialize_any(V)
    }
}

/// `error.message`: a string (kept lower-cased); `null` is no message; anything else is
/// malformed.
struct Message(Field<String>);

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Message;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an error message")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Message, E> {
                Ok(Message(Field::Value(v.to_ascii_lowercase())))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Message, E> {
                Ok(Message(Field::Absent))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Message, E> {
                Ok(Message(Field::Malformed))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Message, E> {
                Ok(Message(Field::Malformed))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Message, E> {
                Ok(Message(Field::Malformed))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Message, E> {
                Ok(Message(Field::Malformed))
            }
            otherwise!(Message(Field::Malformed), nested);
        }
        d.deserialize_any(V)
    }
}

/// What `error.data` may say: a short string (lower-cased, for the table), or Infura's
/// `{"rate": {"backoff_seconds": n}}`. Anything else is skipped.
#[derive(Default)]
struct Data {
    text: String,
    backoff_seconds: Option<f64>,
}

impl<'de> Deserialize<'de> for Data {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DataVisitor { rate_level: false })
    }
}

/// Visits `data` (`rate_level: false`) or `data.rate` (`true`).
struct DataVisitor {
    rate_level: bool,
}

impl<'de> Visitor<'de> for DataVisitor {
    type Value = Data;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("error data")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Data, E> {
        if self.rate_level || v.len() > MAX_DATA_TEXT {
            return Ok(Data::default());
        }
        Ok(Data { text: v.to_ascii_lowercase(), backoff_seconds: None })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Data, A::Error> {
        let mut data = Data::default();
        let wanted = if self.rate_level { "backoff_seconds" } else { "rate" };
        while let Some(key) = map.next_key::<Key>()? {
            if key.0 != Some(wanted) {
                map.next_value::<IgnoredAny>()?;
            } else if self.rate_level {
                data.backoff_seconds = map.next_value::<Number>()?.0;
            } else {
                data.backoff_seconds = map.next_value_seed(DataSeed)?.backoff_seconds;
            }
        }
        Ok(data)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Data, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Data::default())
    }
    otherwise!(Data::default());
}

/// Deserialises `data.rate` with [`DataVisitor`] at the rate level.
struct DataSeed;

impl<'de> de::DeserializeSeed<'de> for DataSeed {
    type Value = Data;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Data, D::Error> {
        d.deserialize_any(DataVisitor { rate_level: true })
    }
}

/// Every key judging looks for, at any level (a key read at the wrong level is skipped).
const KEYS: &[&str] = &["jsonrpc", "result", "error", "code", "message", "data", "rate", "backoff_seconds"];

/// A map key, kept only when it is one judging looks for (no allocation for the others).
struct Key(Option<&'static str>);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct K;
        impl Visitor<'_> for K {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                Ok(Key(KEYS.iter().copied().find(|k| *k == v)))
            }
        }
        d.deserialize_str(K)
    }
}

/// A number, or `None` for any other value (skipped).
struct Number(Option<f64>);

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct N;
        impl<'de> Visitor<'de> for N {
            type Value = Number;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Number, E> {
                Ok(Number(Some(v as f64)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Number, E> {
                Ok(Number(Some(v as f64)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Number, E> {
                Ok(Number(Some(v)))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Number, E> {
                Ok(Number(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Number, E> {
                Ok(Number(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Number, E> {
                Ok(Number(None))
            }
            otherwise!(Number(None), nested);
        }
        d.deserialize_any(N)
    }
}

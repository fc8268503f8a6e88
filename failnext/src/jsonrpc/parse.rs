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

// ===== the body: a single answer or a batch =====

struct BodyVisitor;

impl<'de> Visitor<'de> for BodyVisitor {
    type Value = Tally;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC answer or batch")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Tally, A::Error> {
        let mut tally = Tally::default();
        tally.add(Answer::deserialize(de::value::MapAccessDeserializer::new(map))?.kind());
        Ok(tally)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Tally, A::Error> {
        let mut tally = Tally::default();
        while let Some(item) = seq.next_element::<BatchItem>()? {
            tally.add(match item {
                BatchItem::Object(answer) => answer.kind(),
                BatchItem::NotObject => Kind::Broken,
            });
        }
        Ok(tally)
    }

    // Any other JSON value (a string, number, bool or null) is not JSON-RPC.
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Tally, E> {
        Ok(Tally::broken())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Tally, E> {
        Ok(Tally::broken())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Tally, E> {
        Ok(Tally::broken())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Tally, E> {
        Ok(Tally::broken())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Tally, E> {
        Ok(Tally::broken())
    }
    fn visit_unit<E: de::Error>(self) -> Result<Tally, E> {
        Ok(Tally::broken())
    }
}

/// One element of a batch: an answer object, or anything else (broken).
enum BatchItem {
    Object(Answer),
    NotObject,
}

impl<'de> Deserialize<'de> for BatchItem {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ItemVisitor;
        impl<'de> Visitor<'de> for ItemVisitor {
            type Value = BatchItem;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON-RPC answer")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<BatchItem, A::Error> {
                Answer::deserialize(de::value::MapAccessDeserializer::new(map)).map(BatchItem::Object)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<BatchItem, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(BatchItem::NotObject)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<BatchItem, E> {
                Ok(BatchItem::NotObject)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<BatchItem, E> {
                Ok(BatchItem::NotObject)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<BatchItem, E> {
                Ok(BatchItem::NotObject)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<BatchItem, E> {
                Ok(BatchItem::NotObject)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<BatchItem, E> {
                Ok(BatchItem::NotObject)
            }
            fn visit_unit<E: de::Error>(self) -> Result<BatchItem, E> {
                Ok(BatchItem::NotObject)
            }
        }
        d.deserialize_any(ItemVisitor)
    }
}

// ===== one answer =====

/// The fields of one answer object that judging needs.
#[derive(Deserialize)]
struct Answer {
    /// `true` when `jsonrpc` is exactly `"2.0"`.
    #[serde(default, deserialize_with = "version_2")]
    jsonrpc: bool,
    /// `true` when `result` is present (even `null`: a valid result, never flagged).
    #[serde(default, deserialize_with = "present")]
    result: bool,
    /// `error`, when present and not `null`.
    #[serde(default)]
    error: Option<ErrorObject>,
}

impl Answer {
    fn kind(self) -> Kind {
        if !self.jsonrpc {
            return Kind::Broken;
        }
        match self.error {
            Some(error) => error.kind(),
            None if self.result => Kind::Answer,
            None => Kind::Broken,
        }
    }
}

fn version_2<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    struct V;
    impl Visitor<'_> for V {
        type Value = bool;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a version string")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
            Ok(v == "2.0")
        }
    }
    d.deserialize_str(V)
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    IgnoredAny::deserialize(d).map(|_| true)
}

#[derive(Deserialize)]
struct ErrorObject {
    #[serde(default)]
    code: Option<i64>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    data: Option<Data>,
}

impl ErrorObject {
    fn kind(self) -> Kind {
        let mut message = self.message.unwrap_or_default();
        message.make_ascii_lowercase();
        let (text, backoff_seconds) = match self.data {
            Some(Data { text, backoff_seconds }) => (text, backoff_seconds),
            None => (String::new(), None),
        };
        table::classify(&ErrorFacts { code: self.code, message: &message, data: &text, backoff_seconds })
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
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Data, E> {
        Ok(Data::default())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Data, E> {
        Ok(Data::default())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Data, E> {
        Ok(Data::default())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Data, E> {
        Ok(Data::default())
    }
    fn visit_unit<E: de::Error>(self) -> Result<Data, E> {
        Ok(Data::default())
    }
}

/// Deserialises `data.rate` with [`DataVisitor`] at the rate level.
struct DataSeed;

impl<'de> de::DeserializeSeed<'de> for DataSeed {
    type Value = Data;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Data, D::Error> {
        d.deserialize_any(DataVisitor { rate_level: true })
    }
}

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
                Ok(Key(["rate", "backoff_seconds"].into_iter().find(|k| *k == v)))
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
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Number, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Number(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Number, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Number(None))
            }
        }
        d.deserialize_any(N)
    }
}

//! The serde visitors for one answer object and its error object: what judging reads of an
//! answer, and nothing more.
//!
//! Only `jsonrpc`, whether `result` is present (its value is skipped as [`IgnoredAny`],
//! however large or deep), and `error.code`, `error.message`, `error.data` (a short string,
//! or `rate.backoff_seconds`) are deserialised. `id` and every other field are skipped.
//! serde_json skips values without copying them and without a depth limit, so the only
//! allocations are the error's message and short data string, and the parser's small
//! scratch buffer. An answer is reduced to its [`Kind`] by the code table
//! ([`super::table`]); whether it is one answer or an element of a batch is the driver's
//! business ([`super::parse`]).

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::result::{ResultKey, Source};
use super::table::{self, ErrorFacts, Kind};

/// A `data` string longer than this is not matched against the table (it is revert data or a
/// stack trace, not a provider's message) and is not kept.
const MAX_DATA_TEXT: usize = 512;

/// The visit methods for the JSON values a visitor does not read: each returns `$value`
/// (`null`, booleans and numbers as they come; `$str` adds strings; `$nested` adds arrays and
/// objects, skipped to their end unread).
macro_rules! otherwise {
    ($value:expr) => {
        fn visit_bool<E: ::serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_i64<E: ::serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_u64<E: ::serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_f64<E: ::serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_unit<E: ::serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok($value)
        }
    };
    ($value:expr, str) => {
        otherwise!($value);
        fn visit_str<E: ::serde::de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok($value)
        }
    };
    ($value:expr, nested) => {
        fn visit_seq<A: ::serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<::serde::de::IgnoredAny>()?.is_some() {}
            Ok($value)
        }
        fn visit_map<A: ::serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<::serde::de::IgnoredAny, ::serde::de::IgnoredAny>()?.is_some() {}
            Ok($value)
        }
    };
}
pub(crate) use otherwise;

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
pub(crate) struct Answer {
    /// `true` when `jsonrpc` is exactly `"2.0"`.
    jsonrpc: bool,
    /// `true` when `result` is present (even `null`: a valid result, never flagged).
    result: bool,
    /// `error`: absent or `null`, an object, or anything else (malformed).
    error: Field<ErrorObject>,
    /// The last `result`'s value, when it is a quantity and the answer is read with a
    /// [`Source`] (a single answer); see [`super::result`].
    quantity: Option<u64>,
    /// The last `result` was `null` or `[]` (read only with a [`Source`]).
    empty: bool,
}

/// Reads one answer object from its entries; only syntax errors fail. With `source` (a
/// single answer, not an element of a batch), a `result` that is a quantity is kept too: its
/// value is still skipped as [`IgnoredAny`], and the quantity read in place from the body.
pub(crate) fn answer<'de, A: MapAccess<'de>>(
    mut map: A,
    source: Option<Source<'_>>,
) -> Result<Answer, A::Error> {
    let mut answer = Answer::default();
    while let Some(key) = map.next_key::<Key<'de>>()? {
        match key.name {
            Some("jsonrpc") => answer.jsonrpc = map.next_value::<Version>()?.0,
            Some("result") => {
                let found = source.and_then(|source| source.result_key(key.borrowed));
                map.next_value::<IgnoredAny>()?;
                answer.result = true;
                answer.quantity = found.and_then(ResultKey::quantity);
                answer.empty = found.is_some_and(ResultKey::empty);
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
    /// The `result`'s quantity (read only for a single answer), whatever the answer's kind.
    pub(crate) const fn quantity(&self) -> Option<u64> {
        self.quantity
    }

    /// Whether the `result` (read only for a single answer) is `null` or `[]`.
    pub(crate) const fn empty(&self) -> bool {
        self.empty
    }

    /// How the table judges this answer.
    pub(crate) fn kind(self) -> Kind {
        if !self.jsonrpc {
            // An error object without the envelope (some gateways send one) is judged by its
            // code and message; one the table does not know, like anything else that is not
            // JSON-RPC, is broken.
            return match self.error {
                Field::Value(error) => match error.kind() {
                    Kind::Unrecognised | Kind::Answer => Kind::Broken,
                    kind => kind,
                },
                _ => Kind::Broken,
            };
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
    while let Some(key) = map.next_key::<Key<'de>>()? {
        match key.name {
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
        while let Some(key) = map.next_key::<Key<'de>>()? {
            if !self.rate_level && key.name.is_some_and(|k| DATA_TEXT_KEYS.contains(&k)) {
                if let ShortText(Some(text)) = map.next_value::<ShortText>()? {
                    if data.text.len() + text.len() < MAX_DATA_TEXT {
                        data.text.push_str(&text);
                        data.text.push(' ');
                    }
                }
            } else if key.name != Some(wanted) {
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
const KEYS: &[&str] = &[
    "jsonrpc",
    "result",
    "error",
    "code",
    "message",
    "data",
    "rate",
    "backoff_seconds",
    "reason",
    "payload",
    "details",
];

/// The keys of a `data` object whose short strings are read as its text (Infura's `reason`,
/// a gateway's `payload`, `message` or `details`).
const DATA_TEXT_KEYS: &[&str] = &["reason", "payload", "message", "details"];

/// A map key, kept only when it is one judging looks for (no allocation for the others).
struct Key<'de> {
    name: Option<&'static str>,
    /// The key's text when the parser borrowed it from the body (a slice, no escape): where
    /// the key is, for [`Source::result_key`].
    borrowed: Option<&'de str>,
}

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct K;
        impl<'de> Visitor<'de> for K {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key { name: known(v), borrowed: Some(v) })
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key { name: known(v), borrowed: None })
            }
        }
        d.deserialize_str(K)
    }
}

/// The key judging looks for that `key` is, if any.
fn known(key: &str) -> Option<&'static str> {
    KEYS.iter().copied().find(|k| *k == key)
}

/// A string of at most [`MAX_DATA_TEXT`] bytes, lower-cased; `None` for any other value
/// (skipped).
struct ShortText(Option<String>);

impl<'de> Deserialize<'de> for ShortText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct T;
        impl<'de> Visitor<'de> for T {
            type Value = ShortText;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a short string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ShortText, E> {
                Ok(ShortText((v.len() <= MAX_DATA_TEXT).then(|| v.to_ascii_lowercase())))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ShortText, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(ShortText(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ShortText, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(ShortText(None))
            }
            otherwise!(ShortText(None));
        }
        d.deserialize_any(T)
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

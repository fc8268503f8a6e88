//! The serde visitors for an answer's error object: its `code`, its `message` and its `data`
//! (a short string, or `rate.backoff_seconds`), reduced to a [`Kind`] by the code table
//! ([`super::table`]). Everything else is skipped unread.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::table::{self, ErrorFacts, Kind};
use super::visit::{Field, Key, otherwise};

/// A `data` string longer than this is not matched against the table (it is revert data or a
/// stack trace, not a provider's message) and is not kept.
const MAX_DATA_TEXT: usize = 512;

/// What judging reads of an error object.
#[derive(Default)]
pub(crate) struct ErrorObject {
    /// `code`: an integer in the range of an `i64`.
    code: Field<i64>,
    /// `message`: a string, lower-cased.
    message: Field<String>,
    data: Data,
}

/// Reads one error object from its entries; only syntax errors fail.
pub(crate) fn error_object<'de, A: MapAccess<'de>>(mut map: A) -> Result<ErrorObject, A::Error> {
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
    pub(crate) fn kind(self) -> Kind {
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

/// Whether an error object already parsed elsewhere (alloy's `ErrorPayload`: its code,
/// message and raw `data`), judged by the code table as the body visitor judges it, blames
/// the provider: what a read fails over from (out of capacity, broken, timed out, refused
/// credentials, out of quota, over a limit, missing the data, not serving the method), not an
/// answer about the request (a revert, invalid params, an error no rule knows).
#[cfg(feature = "alloy")]
pub(crate) fn blames_provider(code: i64, message: &str, data: Option<&str>) -> bool {
    let data = data.and_then(|d| serde_json::from_str::<Data>(d).ok()).unwrap_or_default();
    let error =
        ErrorObject { code: Field::Value(code), message: Field::Value(message.to_ascii_lowercase()), data };
    let kind = error.kind();
    kind.fails_over() || kind == Kind::Broken
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

/// The keys of a `data` object whose short strings are read as its text (Infura's `reason`,
/// a gateway's `payload`, `message` or `details`).
const DATA_TEXT_KEYS: &[&str] = &["reason", "payload", "message", "details"];

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

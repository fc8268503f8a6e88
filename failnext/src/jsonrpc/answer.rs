//! The serde visitors for one answer object (its error object is [`super::error_object`]):
//! what judging reads of an answer, and nothing more.
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

use super::error_object::{ErrorObject, error_object};
use super::result::{ResultKey, Source};
use super::table::Kind;
use super::visit::{Field, Key, otherwise};

// ===== one answer =====

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

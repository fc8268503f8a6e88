//! What every visitor of an answer shares: the visit methods for the values it does not read
//! ([`otherwise`]), a field's value as judging sees it ([`Field`]), and the map keys judging
//! looks for ([`Key`]), kept without allocating.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

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

/// A field's value as judging sees it. A key that appears more than once counts with its
/// last value (as in `serde_json::Value`): each later value replaces the earlier one.
#[derive(Default)]
pub(crate) enum Field<T> {
    /// Absent, or `null`.
    #[default]
    Absent,
    /// A value of the type judging reads there.
    Value(T),
    /// A value of any other type: the answer is malformed.
    Malformed,
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

/// A map key, kept only when it is one judging looks for (no allocation for the others).
pub(crate) struct Key<'de> {
    pub(crate) name: Option<&'static str>,
    /// The key's text when the parser borrowed it from the body (a slice, no escape): where
    /// the key is, for [`Source::result_key`].
    pub(crate) borrowed: Option<&'de str>,
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

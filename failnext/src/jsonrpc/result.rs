//! The result, when it is a quantity: the number in a single answer's `result` when that is a
//! short hex string (`"0x1b4"`), for the alloy transport's monotonic reads
//! (in the findings of the judgement the classifier hands back).
//!
//! serde cannot look at a value before it chooses how to deserialise it, and reading `result`
//! as anything but [`IgnoredAny`](serde::de::IgnoredAny) would cost: a long string copied out
//! of a body in several chunks, a number converted (and `1e400` refused, which would change a
//! judgement). So the parser skips `result` exactly as before, and this module reads the few
//! bytes that follow the key `"result"` in the body itself, in place, nothing copied.
//!
//! **The rule.** A quantity is read when the key is written `"result"` (no escape) and its value
//! is a string written without escapes of at most [`MAX_TEXT`] bytes (`0x` and 16 hex digits)
//! that [`crate::quantity::parse_lenient`] reads: `0x` or `0X`, hex digits of either case,
//! leading zeros allowed (and, as that reader allows, one `+` after the prefix), the value
//! fitting a `u64`. Anything else (a longer string, an escape, any other JSON type) is no
//! quantity; at most 19 bytes of the value are looked at, whatever it is (and the whitespace
//! around the `:`). Which answers carry one (a single answer, not a batch; a `result`, not an
//! error) is the parser's and the tally's business ([`super::parse`], [`super::tally`]).
//!
//! **Finding the key in the body.** One chunk is parsed as a slice: serde_json borrows a key
//! written without escapes from it, so the key's address says where it is. Several chunks are
//! read through a `Read` that counts the bytes it hands out, one at a time as serde_json asks
//! for them: right after a key, the count is the end of its closing quote; right after the
//! value is skipped, the end of the string's. The bytes there are checked (`"result"`, then the
//! string ending where serde_json stopped), so a position that is off gives no quantity, never
//! a wrong one.

use std::cell::Cell;

use bytes::Bytes;

/// The longest quantity text read: `0x` and 16 hex digits.
pub(crate) const MAX_TEXT: usize = 18;

/// The key, as it must be written for its value to be read.
const KEY: &[u8; 8] = b"\"result\"";

/// Where the parser reads the body from.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Source<'a> {
    /// One chunk, parsed as a slice.
    Slice(&'a [u8]),
    /// Several chunks, read in order through a `Read` that adds to `pulled` each byte it hands
    /// out.
    Chunks {
        /// The body.
        chunks: &'a [Bytes],
        /// How many bytes the parser has taken so far.
        pulled: &'a Cell<usize>,
    },
}

impl<'a> Source<'a> {
    /// The key `result` the parser has just read (before its value): where it starts in the
    /// body. `borrowed` is the key's text when the parser borrowed it from the body.
    pub(crate) fn result_key(self, borrowed: Option<&str>) -> Option<ResultKey<'a>> {
        let at = match self {
            Source::Slice(slice) => {
                let key = borrowed?;
                let offset = key.as_ptr().addr().checked_sub(slice.as_ptr().addr())?;
                if offset.checked_add(key.len())? > slice.len() {
                    return None;
                }
                // The opening quote.
                offset.checked_sub(1)?
            }
            Source::Chunks { pulled, .. } => pulled.get().checked_sub(KEY.len())?,
        };
        Some(ResultKey { source: self, at })
    }
}

/// A key `result` found in the body, at byte `at` (its opening quote).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ResultKey<'a> {
    source: Source<'a>,
    at: usize,
}

impl ResultKey<'_> {
    /// Once the parser has skipped the value: whether it is `null` or an empty array `[]`
    /// (what a provider answers for a block, a transaction, a receipt or logs it has not got).
    pub(crate) fn empty(self) -> bool {
        match self.source {
            Source::Slice(slice) => {
                slice.get(self.at..).is_some_and(|rest| scan_empty(rest.iter().copied()).is_some())
            }
            Source::Chunks { chunks, pulled } => scan_empty(bytes_from(chunks, self.at))
                .is_some_and(|len| self.at.checked_add(len) == Some(pulled.get())),
        }
    }

    /// Once the parser has skipped the value: the quantity it is, if it is one.
    pub(crate) fn quantity(self) -> Option<u64> {
        match self.source {
            Source::Slice(slice) => scan(slice.get(self.at..)?.iter().copied()).map(|(value, _)| value),
            Source::Chunks { chunks, pulled } => {
                let (value, len) = scan(bytes_from(chunks, self.at))?;
                // The string must end where the parser stopped skipping the value.
                (self.at.checked_add(len)? == pulled.get()).then_some(value)
            }
        }
    }
}

/// The bytes of `chunks`, in order, from byte `at` on.
fn bytes_from(chunks: &[Bytes], mut at: usize) -> impl Iterator<Item = u8> + '_ {
    chunks.iter().flat_map(move |chunk| {
        let skip = at.min(chunk.len());
        at -= skip;
        chunk.get(skip..).unwrap_or_default().iter().copied()
    })
}

/// Reads `"result"`, whitespace, `:`, whitespace and a quantity string from `bytes`: its value
/// and how many bytes it took, up to and including the string's closing quote.
pub(crate) fn scan(bytes: impl Iterator<Item = u8>) -> Option<(u64, usize)> {
    let mut cursor = Cursor { bytes, taken: 0 };
    for &expected in KEY {
        if cursor.next()? != expected {
            return None;
        }
    }
    if cursor.next_token()? != b':' || cursor.next_token()? != b'"' {
        return None;
    }
    let mut text = [0u8; MAX_TEXT];
    let mut len = 0;
    loop {
        match cursor.next()? {
            b'"' => break,
            b'\\' => return None,
            byte => {
                // A 19th byte: too long to be a quantity.
                *text.get_mut(len)? = byte;
                len += 1;
            }
        }
    }
    let text = std::str::from_utf8(text.get(..len)?).ok()?;
    let value = crate::quantity::parse_lenient(text).ok()?;
    Some((value, cursor.taken))
}

/// Reads `"result"`, whitespace, `:`, whitespace and `null` or `[` whitespace `]` from
/// `bytes`: how many bytes it took, up to and including the value's last byte.
pub(crate) fn scan_empty(bytes: impl Iterator<Item = u8>) -> Option<usize> {
    let mut cursor = Cursor { bytes, taken: 0 };
    for &expected in KEY {
        if cursor.next()? != expected {
            return None;
        }
    }
    if cursor.next_token()? != b':' {
        return None;
    }
    match cursor.next_token()? {
        b'n' => (cursor.next()? == b'u' && cursor.next()? == b'l' && cursor.next()? == b'l')
            .then_some(cursor.taken),
        b'[' => (cursor.next_token()? == b']').then_some(cursor.taken),
        _ => None,
    }
}

/// Bytes taken one at a time, counted.
struct Cursor<I> {
    bytes: I,
    taken: usize,
}

impl<I: Iterator<Item = u8>> Cursor<I> {
    fn next(&mut self) -> Option<u8> {
        let byte = self.bytes.next()?;
        self.taken += 1;
        Some(byte)
    }

    /// The next byte that is not JSON whitespace.
    fn next_token(&mut self) -> Option<u8> {
        loop {
            match self.next()? {
                b' ' | b'\t' | b'\n' | b'\r' => {}
                byte => return Some(byte),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Option<u64> {
        scan(text.bytes()).map(|(value, _)| value)
    }

    #[test]
    fn a_short_hex_string_after_the_key_is_read_as_its_value_and_its_length() {
        assert_eq!(scan(br#""result":"0x1b4","id":1"#.iter().copied()), Some((0x1b4, 16)));
        assert_eq!(read("\"result\" \t\r\n: \n\"0x0\""), Some(0));
        assert_eq!(read(r#""result":"0xffffffffffffffff""#), Some(u64::MAX));
    }

    #[test]
    fn null_and_an_empty_array_after_the_key_are_empty_results() {
        assert_eq!(scan_empty(br#""result":null,"id":1"#.iter().copied()), Some(13));
        assert_eq!(scan_empty(br#""result" : [ ] "#.iter().copied()), Some(14));
        for text in [
            r#""result":[1]"#,
            r#""result":"0x0""#,
            r#""result":nul"#,
            r#""result":{}"#,
            r#""result":"null""#,
        ] {
            assert_eq!(scan_empty(text.bytes()), None, "{text}");
        }
    }

    #[test]
    fn upper_case_and_leading_zeros_are_read_leniently() {
        assert_eq!(read(r#""result":"0X1B4""#), Some(0x1b4));
        assert_eq!(read(r#""result":"0x0000000000000001""#), Some(1));
        assert_eq!(read(r#""result":"0x+1""#), Some(1), "as quantity::parse_lenient reads it");
    }

    #[test]
    fn a_string_over_18_bytes_an_escape_or_another_type_is_no_quantity() {
        for text in [
            r#""result":"0x00000000000000001""#,
            r#""result":"0x10000000000000000""#,
            r#""result":"\u0030x1""#,
            r#""result":"0x1\n""#,
            r#""result":1"#,
            r#""result":["0x1"]"#,
            r#""result":{"a":"0x1"}"#,
            r#""result":null"#,
            r#""result":"""#,
            r#""result":"0x""#,
            r#""result":"1b4""#,
            r#""result":"0x1b4 ""#,
            r#""result":"0xé""#,
        ] {
            assert_eq!(read(text), None, "{text}");
        }
    }

    #[test]
    fn bytes_that_are_not_the_key_or_end_early_are_no_quantity() {
        for text in [
            "",
            r#""resul"#,
            r#""Result":"0x1""#,
            r#""result""#,
            r#""result":"#,
            r#""result":"0x1"#,
            r#""result""0x1""#,
        ] {
            assert_eq!(read(text), None, "{text}");
        }
    }

    #[test]
    fn bytes_from_an_offset_cross_chunks_in_order() {
        let chunks = [Bytes::from_static(b"ab"), Bytes::new(), Bytes::from_static(b"cde")];
        for at in 0..=6 {
            let expected: Vec<u8> = b"abcde".iter().copied().skip(at).collect();
            assert_eq!(bytes_from(&chunks, at).collect::<Vec<u8>>(), expected, "{at}");
        }
    }

    #[test]
    fn a_key_not_borrowed_from_the_slice_or_a_count_before_a_key_is_not_found() {
        let body = br#"{"result":"0x1"}"#.to_vec();
        assert!(Source::Slice(&body).result_key(None).is_none());
        let elsewhere = String::from("result");
        assert!(Source::Slice(&body).result_key(Some(&elsewhere)).is_none(), "a key elsewhere in memory");
        let pulled = Cell::new(3);
        let chunks = [Bytes::from(body)];
        assert!(Source::Chunks { chunks: &chunks, pulled: &pulled }.result_key(None).is_none());
    }

    #[test]
    fn a_value_that_does_not_end_where_the_parser_stopped_is_no_quantity() {
        let chunks = [Bytes::from_static(br#"{"result":"0x1"}"#)];
        let pulled = Cell::new(9);
        let Some(key) = (Source::Chunks { chunks: &chunks, pulled: &pulled }).result_key(None) else {
            panic!("a key ends at 9");
        };
        pulled.set(15);
        assert_eq!(key.quantity(), Some(1));
        pulled.set(16);
        assert_eq!(key.quantity(), None);
    }
}

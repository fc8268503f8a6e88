//! Whether a body's bytes are Unicode text as JSON requires, before it is parsed.
//!
//! serde_json checks the strings it reads (keys, `jsonrpc`, `error.message`, a `data`
//! string) but not the strings inside values it skips (`result`, `id`, anything else), so
//! the parser alone would judge `{"jsonrpc":"2.0","result":"\xff"}` an answer. This check
//! makes the rule the same for every byte of the body, and the same as
//! `serde_json::from_slice::<serde_json::Value>`: the body must be UTF-8 (RFC 8259 §8.1) and
//! every `\u` escape of a surrogate must be a high one immediately followed by a low one.
//!
//! Cost: one UTF-8 validation of each chunk (no copy; a character split between two chunks
//! is checked through a 4-byte buffer), and a scan for escapes only when a chunk holds a
//! backslash (a body of hex strings has none).

use bytes::Bytes;

/// `true` when `chunks`, in order, are UTF-8 with no lone surrogate escape. The JSON syntax
/// itself is the parser's to check: on a body that is not JSON the answer does not matter.
pub(crate) fn is_unicode(chunks: &[Bytes]) -> bool {
    is_utf8(chunks) && !has_lone_surrogate(chunks)
}

/// `true` when the concatenation of `chunks` is UTF-8, checked chunk by chunk.
fn is_utf8(chunks: &[Bytes]) -> bool {
    // The start of a character the previous chunk ended in, and how many bytes of it.
    let mut pending = [0u8; 4];
    let mut pending_len = 0;
    for chunk in chunks {
        let mut rest: &[u8] = chunk;
        if pending_len > 0 {
            let width = match pending[0] {
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                _ => 4,
            };
            let take = (width - pending_len).min(rest.len());
            pending[pending_len..pending_len + take].copy_from_slice(&rest[..take]);
            pending_len += take;
            rest = &rest[take..];
            if pending_len < width {
                continue;
            }
            if std::str::from_utf8(&pending[..width]).is_err() {
                return false;
            }
            pending_len = 0;
        }
        if let Err(error) = std::str::from_utf8(rest) {
            if error.error_len().is_some() {
                return false;
            }
            // A character cut by the end of the chunk: at most 3 bytes, a valid start.
            let tail = &rest[error.valid_up_to()..];
            pending[..tail.len()].copy_from_slice(tail);
            pending_len = tail.len();
        }
    }
    pending_len == 0
}

/// `true` when a `\u` escape of a surrogate is not part of a pair (a high surrogate
/// immediately followed by an escaped low one), as serde_json rejects in a string it reads.
fn has_lone_surrogate(chunks: &[Bytes]) -> bool {
    if !chunks.iter().any(|chunk| chunk.contains(&b'\\')) {
        return false;
    }
    let mut bytes = chunks.iter().flat_map(|chunk| chunk.iter().copied());
    // The last escape was a high surrogate, waiting for its low one.
    let mut high = false;
    while let Some(byte) = bytes.next() {
        if byte != b'\\' {
            if high {
                return true;
            }
            continue;
        }
        let Some(b'u') = bytes.next() else {
            if high {
                return true;
            }
            continue;
        };
        let mut unit = 0u32;
        for _ in 0..4 {
            match bytes.next().and_then(|b| char::from(b).to_digit(16)) {
                Some(digit) => unit = unit * 16 + digit,
                // Not a `\u` escape: not JSON, which the parser reports.
                None => return false,
            }
        }
        match unit {
            0xD800..=0xDBFF if high => return true,
            0xD800..=0xDBFF => high = true,
            0xDC00..=0xDFFF if high => high = false,
            0xDC00..=0xDFFF => return true,
            _ if high => return true,
            _ => {}
        }
    }
    high
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(body: &[u8], at: &[usize]) -> Vec<Bytes> {
        let mut chunks = Vec::new();
        let mut start = 0;
        for &end in at.iter().chain([&body.len()]) {
            chunks.push(Bytes::copy_from_slice(&body[start..end]));
            start = end;
        }
        chunks
    }

    #[test]
    fn utf8_split_between_chunks_at_any_byte_is_utf8() {
        let body = "\"é € 𝄞 x\"".as_bytes();
        for a in 0..=body.len() {
            for b in a..=body.len() {
                assert!(is_unicode(&split(body, &[a, b])), "{a} {b}");
            }
        }
        assert!(is_unicode(&[]));
    }

    #[test]
    fn bytes_that_are_not_utf8_are_found_in_any_chunking() {
        for body in [&b"\"\xff\""[..], b"\"\xe2\x82\"", b"\"\xf0\x9d\x84", b"\"\xc0\xaf\"", b"\xed\xa0\x80"] {
            for a in 0..=body.len() {
                assert!(!is_unicode(&split(body, &[a])), "{body:?} split at {a}");
            }
        }
    }

    #[test]
    fn a_lone_surrogate_escape_is_found_and_a_pair_is_not() {
        for ok in [r#""\ud834\udd1e""#, r#""\\ud800""#, r#""\u00e9\n\"""#, r#""\uD834\uDD1E""#] {
            let body = ok.as_bytes();
            for a in 0..=body.len() {
                assert!(is_unicode(&split(body, &[a])), "{ok} split at {a}");
            }
        }
        for lone in [
            r#""\ud800""#,
            r#""\udc00""#,
            r#""\ud800x""#,
            r#""\ud800\n""#,
            r#""\ud800\ud800""#,
            r#""\ud800\u0041""#,
        ] {
            assert!(!is_unicode(&split(lone.as_bytes(), &[3])), "{lone}");
        }
    }
}

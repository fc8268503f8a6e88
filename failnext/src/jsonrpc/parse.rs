//! The driver: a whole body, read from its chunks, parsed as a single JSON-RPC answer or a
//! batch, and reduced to a [`Tally`] of how its answers were judged.
//!
//! The body is checked to be Unicode text first ([`super::text`]); one chunk is parsed as a
//! slice, several through a [`ChunkReader`] over the list (never joined). Each answer object
//! is read by the visitors of [`super::answer`]; anything else where an answer should be (a
//! string, a number, an array in a batch) is a broken answer, and a body that is not JSON is
//! broken as a whole. A single answer (not a batch) is read with the body's [`Source`], so
//! that a `result` that is a quantity is kept on its tally ([`super::result`]).

use std::cell::Cell;
use std::fmt;
use std::io::{self, Read};

use bytes::Bytes;
use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::answer::answer;
use super::result::Source;
use super::table::Kind;
use super::tally::Tally;
use super::text;
use super::visit::otherwise;

/// Parses a whole body (its chunks in order) and tallies its answers. Malformed JSON,
/// trailing garbage, or a value that is neither an object nor an array tallies as broken.
pub(crate) fn tally(chunks: &[Bytes]) -> Tally {
    if !text::is_unicode(chunks) {
        return Tally::broken();
    }
    let parsed = match chunks {
        [] => return Tally::broken(),
        [one] => parse(&mut serde_json::Deserializer::from_slice(one), Source::Slice(one)),
        chunks => {
            let pulled = Cell::new(0);
            let reader = ChunkReader { current: &[], next: chunks, pulled: &pulled };
            parse(
                &mut serde_json::Deserializer::from_reader(reader),
                Source::Chunks { chunks, pulled: &pulled },
            )
        }
    };
    parsed.unwrap_or_else(|_| Tally::broken())
}

fn parse<'de, R: serde_json::de::Read<'de>>(
    de: &mut serde_json::Deserializer<R>,
    source: Source<'_>,
) -> serde_json::Result<Tally> {
    let tally = de.deserialize_any(BodyVisitor { source })?;
    de.end()?;
    Ok(tally)
}

// ===== ChunkReader =====

/// `Read` over a list of chunks, in order, without joining them. serde_json reads a byte at
/// a time, so the chunk being read is kept as a slice: most reads are one bounds check. It
/// counts the bytes it hands out (`pulled`): where the parser is, for [`Source::Chunks`].
#[derive(Debug)]
struct ChunkReader<'a> {
    current: &'a [u8],
    next: &'a [Bytes],
    pulled: &'a Cell<usize>,
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
        self.pulled.set(self.pulled.get() + n);
        Ok(n)
    }
}

// ===== the body: a single answer or a batch =====

/// The body: a single answer (read with its `source`, for a `result` that is a quantity) or a
/// batch (its answers read without).
struct BodyVisitor<'a> {
    source: Source<'a>,
}

impl<'de> Visitor<'de> for BodyVisitor<'_> {
    type Value = Tally;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC answer or batch")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Tally, A::Error> {
        let answer = answer(map, Some(self.source))?;
        Ok(Tally::single(answer.quantity(), answer.empty(), answer.kind()))
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
                Ok(BatchItem(answer(map, None)?.kind()))
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

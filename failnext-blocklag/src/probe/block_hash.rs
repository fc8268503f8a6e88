//! `BlockHash`: the 32-byte hash of a block, as the head-with-hash probe reads it.

use std::fmt;
use std::str::FromStr;

/// The hash of a block: 32 bytes, written `0x` and 64 hex digits.
///
/// The monitor reads one per provider when it probes with
/// [`head_with_hash`](crate::MonitorBuilder::head_with_hash)
/// ([`SnapshotEntry::head_hash`](crate::SnapshotEntry::head_hash)), and
/// [`Snapshot::agreed`](crate::Snapshot::agreed) names the head providers agree on by it.
/// `Display` writes `0x` and 64 lower-case hex digits, the form a JSON-RPC call such as an
/// EIP-1898 block parameter (`{"blockHash": "0x…"}`) takes; `Debug` writes the same inside
/// `BlockHash(…)`. This crate has no alloy dependency: convert with
/// [`into_bytes`](BlockHash::into_bytes) (`alloy_primitives::B256::from(hash.into_bytes())`).
///
/// ```
/// use failnext_blocklag::BlockHash;
///
/// let text = "0xd4e56740f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3";
/// let hash: BlockHash = text.parse()?;
/// assert_eq!(hash.to_string(), text);
/// assert_eq!(hash.as_bytes()[0], 0xd4);
/// # Ok::<(), failnext_blocklag::ParseBlockHashError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlockHash([u8; 32]);

/// A text that is not a [`BlockHash`]: not `0x` followed by exactly 64 hex digits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseBlockHashError(());

// ===== impl BlockHash =====

impl BlockHash {
    /// The hash made of these 32 bytes.
    pub const fn new(bytes: [u8; 32]) -> Self {
        BlockHash(bytes)
    }

    /// The 32 bytes.
    pub const fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The 32 bytes, by value.
    pub const fn into_bytes(self) -> [u8; 32] {
        self.0
    }

    /// Parses `0x` and 64 hex digits, lower-case only when `lower_only` (the form the
    /// Ethereum execution API specifies for data, which the probe requires).
    pub(crate) fn parse(text: &str, lower_only: bool) -> Option<Self> {
        let digits = text.strip_prefix("0x")?.as_bytes();
        if digits.len() != 64 {
            return None;
        }
        let mut bytes = [0; 32];
        for (byte, pair) in bytes.iter_mut().zip(digits.chunks_exact(2)) {
            *byte = (nibble(pair[0], lower_only)? << 4) | nibble(pair[1], lower_only)?;
        }
        Some(BlockHash(bytes))
    }
}

/// The value of one hex digit, by failnext's reading of hex
/// ([`failnext::quantity::lower_hex_digit`], or [`failnext::quantity::hex_digit`] for either
/// case).
fn nibble(digit: u8, lower_only: bool) -> Option<u8> {
    if lower_only { failnext::quantity::lower_hex_digit(digit) } else { failnext::quantity::hex_digit(digit) }
}

impl From<[u8; 32]> for BlockHash {
    fn from(bytes: [u8; 32]) -> Self {
        BlockHash(bytes)
    }
}

impl From<BlockHash> for [u8; 32] {
    fn from(hash: BlockHash) -> Self {
        hash.0
    }
}

/// Accepts `0x` followed by exactly 64 hex digits, in either case (the probe itself accepts
/// only the lower-case form providers send). Rejected: a missing or upper-case (`0X`) prefix,
/// any other length, whitespace, and any other character.
impl FromStr for BlockHash {
    type Err = ParseBlockHashError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        BlockHash::parse(text, false).ok_or(ParseBlockHashError(()))
    }
}

impl fmt::Display for BlockHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("0x")?;
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for BlockHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BlockHash({self})")
    }
}

/// Serializes as its `Display` text (feature `serde`).
#[cfg(feature = "serde")]
impl serde::Serialize for BlockHash {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Deserializes from the text [`FromStr`] accepts (feature `serde`).
#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for BlockHash {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Text;
        impl serde::de::Visitor<'_> for Text {
            type Value = BlockHash;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("0x and 64 hex digits")
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<BlockHash, E> {
                text.parse().map_err(E::custom)
            }
        }
        deserializer.deserialize_str(Text)
    }
}

// ===== impl ParseBlockHashError =====

impl fmt::Display for ParseBlockHashError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("invalid block hash: expected 0x and 64 hex digits")
    }
}

impl std::error::Error for ParseBlockHashError {}

#[cfg(test)]
mod tests {
    use super::*;

    const GENESIS: &str = "0xd4e56740f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3";

    #[test]
    fn display_round_trips_through_from_str_in_lower_case() {
        let hash: BlockHash = GENESIS.parse().unwrap();
        assert_eq!(hash.to_string(), GENESIS);
        assert_eq!(format!("{hash:?}"), format!("BlockHash({GENESIS})"));
        let upper = format!("0x{}", GENESIS[2..].to_uppercase());
        assert_eq!(upper.parse::<BlockHash>(), Ok(hash));
        assert_eq!(BlockHash::parse(&upper, true), None, "the probe takes lower case only");
        assert_eq!(BlockHash::new(hash.into_bytes()), hash);
        assert_eq!(<[u8; 32]>::from(hash), *hash.as_bytes());
        assert_eq!(BlockHash::from([0xab; 32]).to_string(), format!("0x{}", "ab".repeat(32)));
    }

    #[test]
    fn anything_but_0x_and_64_hex_digits_is_rejected() {
        let digits = &GENESIS[2..];
        for bad in [
            String::new(),
            "0x".to_owned(),
            digits.to_owned(),
            format!("0X{digits}"),
            format!("0x{}", &digits[1..]),
            format!("0x{digits}0"),
            format!(" {GENESIS}"),
            format!("{GENESIS} "),
            format!("0x{}g", &digits[1..]),
            format!("0x{}é", &digits[2..]),
            format!("0x{}", "0".repeat(62) + "+1"),
        ] {
            assert!(bad.parse::<BlockHash>().is_err(), "{bad:?} was accepted");
        }
        let err = "0x1".parse::<BlockHash>().unwrap_err();
        assert_eq!(err.to_string(), "invalid block hash: expected 0x and 64 hex digits");
    }

    #[cfg(feature = "serde")]
    #[test]
    fn serializes_as_its_text() {
        let hash: BlockHash = GENESIS.parse().unwrap();
        let json = serde_json::to_string(&hash).unwrap();
        assert_eq!(json, format!("\"{GENESIS}\""));
        assert_eq!(serde_json::from_str::<BlockHash>(&json).unwrap(), hash);
        assert!(serde_json::from_str::<BlockHash>("\"0x12\"").is_err());
    }
}

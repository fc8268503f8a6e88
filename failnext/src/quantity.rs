//! Ethereum JSON-RPC quantities (`0x` and hex digits) read as `u64`: the one parser of the
//! workspace, and the hex digit it is made of.
//!
//! [`parse`] applies the canonical rule of the Ethereum execution API (the `uint` pattern):
//! `0x0`, or `0x` followed by lower-case hex digits without a leading zero, here restricted to
//! values that fit in `u64`. What it refuses, it names with a [`QuantityError`]. failnext's
//! alloy transport reads the block numbers of requests with a lenient form of the same parser
//! (a request is the application's own text, not a provider's answer); failnext-blocklag
//! reads providers' heights with [`parse`].
//!
//! Nothing here allocates or panics, whatever the text.
//!
//! ```
//! use failnext::quantity::{self, QuantityError};
//!
//! assert_eq!(quantity::parse("0x64"), Ok(100));
//! assert_eq!(quantity::parse("0x064"), Err(QuantityError::LeadingZero));
//! assert_eq!(quantity::parse("64"), Err(QuantityError::MissingPrefix));
//! ```

/// Why a text is not a canonical quantity ([`parse`]).
///
/// When a text breaks several rules, the first in this order names it: empty, prefix, each
/// character (upper case, not hex), leading zero, overflow.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// Nothing to read: an empty text, or `0x` without digits.
    #[error("not a quantity: no hex digits")]
    Empty,
    /// The text does not start with `0x`.
    #[error("not a quantity: it does not start with 0x")]
    MissingPrefix,
    /// An upper-case `0X` prefix or an upper-case hex digit: quantities are written in lower
    /// case.
    #[error("not a quantity: upper-case hex (0X or A-F) is not canonical")]
    UpperCase,
    /// A character that is not a hex digit after the prefix: a sign, whitespace, a `.`, an
    /// `_`, any other character.
    #[error("not a quantity: a character that is not a hex digit")]
    NotHex,
    /// More than one digit, the first of which is `0` (`0x0` alone is zero).
    #[error("not a quantity: a leading zero is not canonical")]
    LeadingZero,
    /// A value above `u64::MAX`.
    #[error("not a quantity: the value does not fit in 64 bits")]
    Overflow,
}

/// Parses a canonical Ethereum quantity: `0x0`, or `0x` followed by lower-case hex digits, the
/// first of which is not `0`, whose value fits in `u64` (so 1 to 16 digits).
///
/// # Errors
///
/// A [`QuantityError`] naming the first rule the text breaks: [`Empty`](QuantityError::Empty)
/// (`""`, `"0x"`), [`MissingPrefix`](QuantityError::MissingPrefix) (`"64"`, `" 0x64"`),
/// [`UpperCase`](QuantityError::UpperCase) (`"0X64"`, `"0xAB"`),
/// [`NotHex`](QuantityError::NotHex) (`"0x+1"`, `"0x64 "`, `"0xg"`),
/// [`LeadingZero`](QuantityError::LeadingZero) (`"0x00"`, `"0x064"`) and
/// [`Overflow`](QuantityError::Overflow) (`"0x10000000000000000"`).
pub fn parse(text: &str) -> Result<u64, QuantityError> {
    read(text, Rules::CANONICAL)
}

/// Parses a quantity as failnext's alloy transport reads a request's block number: `0x` or
/// `0X`, an optional `+`, then hex digits of either case, leading zeros allowed, the value
/// fitting in `u64`. It accepts exactly what `u64::from_str_radix(digits, 16)` accepts after
/// either prefix, which is what that reader has always accepted.
///
/// # Errors
///
/// As [`parse`], but never [`UpperCase`](QuantityError::UpperCase) or
/// [`LeadingZero`](QuantityError::LeadingZero).
#[cfg_attr(
    not(feature = "jsonrpc"),
    allow(dead_code, reason = "only the alloy reader and the JSON-RPC result reader are lenient")
)]
pub(crate) fn parse_lenient(text: &str) -> Result<u64, QuantityError> {
    read(text, Rules::LENIENT)
}

/// The value of a hex digit of either case (`0`–`9`, `a`–`f`, `A`–`F`); `None` for any
/// other byte.
///
/// ```
/// assert_eq!(failnext::quantity::hex_digit(b'B'), Some(11));
/// assert_eq!(failnext::quantity::hex_digit(b'g'), None);
/// ```
pub const fn hex_digit(byte: u8) -> Option<u8> {
    match byte {
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => lower_hex_digit(byte),
    }
}

/// The value of a lower-case hex digit (`0`–`9`, `a`–`f`), the form the Ethereum execution
/// API specifies for quantities and data; `None` for any other byte, upper-case digits
/// included.
///
/// ```
/// assert_eq!(failnext::quantity::lower_hex_digit(b'b'), Some(11));
/// assert_eq!(failnext::quantity::lower_hex_digit(b'B'), None);
/// ```
pub const fn lower_hex_digit(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        _ => None,
    }
}

/// What a reading allows beyond the canonical form.
#[derive(Clone, Copy)]
struct Rules {
    /// `0X` and `A`–`F`.
    upper_case: bool,
    /// One `+` right after the prefix.
    plus_sign: bool,
    /// Digits after a first `0`.
    leading_zeros: bool,
}

impl Rules {
    const CANONICAL: Rules = Rules { upper_case: false, plus_sign: false, leading_zeros: false };
    const LENIENT: Rules = Rules { upper_case: true, plus_sign: true, leading_zeros: true };
}

/// The one reading both forms share: the checks in the order [`QuantityError`] documents.
fn read(text: &str, rules: Rules) -> Result<u64, QuantityError> {
    if text.is_empty() {
        return Err(QuantityError::Empty);
    }
    let digits = match (text.strip_prefix("0x"), text.strip_prefix("0X")) {
        (Some(digits), _) => digits,
        (None, Some(digits)) if rules.upper_case => digits,
        (None, Some(_)) => return Err(QuantityError::UpperCase),
        (None, None) => return Err(QuantityError::MissingPrefix),
    };
    let digits = match digits.strip_prefix('+') {
        Some(unsigned) if rules.plus_sign => unsigned,
        _ => digits,
    };
    if digits.is_empty() {
        return Err(QuantityError::Empty);
    }
    let mut value: u64 = 0;
    let mut overflow = false;
    for byte in digits.bytes() {
        let digit = match (lower_hex_digit(byte), hex_digit(byte)) {
            (Some(digit), _) => digit,
            (None, Some(digit)) if rules.upper_case => digit,
            (None, Some(_)) => return Err(QuantityError::UpperCase),
            (None, None) => return Err(QuantityError::NotHex),
        };
        match value.checked_mul(16).and_then(|v| v.checked_add(u64::from(digit))) {
            Some(next) => value = next,
            // Keep looking: a later character that is not a digit is the first broken rule.
            None => overflow = true,
        }
    }
    if !rules.leading_zeros && digits.len() > 1 && digits.starts_with('0') {
        return Err(QuantityError::LeadingZero);
    }
    if overflow { Err(QuantityError::Overflow) } else { Ok(value) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_quantities_parse_to_their_value() {
        assert_eq!(parse("0x0"), Ok(0));
        assert_eq!(parse("0x1"), Ok(1));
        assert_eq!(parse("0x64"), Ok(100));
        assert_eq!(parse("0x1234abcd"), Ok(0x1234_abcd));
        assert_eq!(parse("0xffffffffffffffff"), Ok(u64::MAX));
    }

    #[test]
    fn an_empty_text_or_a_bare_prefix_is_refused_as_empty() {
        assert_eq!(parse(""), Err(QuantityError::Empty));
        assert_eq!(parse("0x"), Err(QuantityError::Empty));
    }

    #[test]
    fn a_quantity_without_its_0x_prefix_is_refused_naming_why() {
        for bad in ["0", "64", "x64", " 0x64", "\t0x1", "-0x1", "+0x1", "١"] {
            assert_eq!(parse(bad), Err(QuantityError::MissingPrefix), "{bad:?}");
        }
    }

    #[test]
    fn a_quantity_in_upper_case_is_refused_naming_why() {
        for bad in ["0X64", "0x6E", "0xAB", "0X"] {
            assert_eq!(parse(bad), Err(QuantityError::UpperCase), "{bad:?}");
        }
    }

    #[test]
    fn a_quantity_with_a_character_that_is_not_hex_is_refused_naming_why() {
        for bad in [
            "0x-1",
            "0x+1",
            "0x64 ",
            "0x 64",
            "0x64\n",
            "0x6 4",
            "0xg",
            "0x1.5",
            "0x1_0",
            "0x١",
            "0xｆ",
            "0x64\u{0}",
        ] {
            assert_eq!(parse(bad), Err(QuantityError::NotHex), "{bad:?}");
        }
    }

    #[test]
    fn a_quantity_with_a_leading_zero_is_refused_naming_why() {
        for bad in ["0x00", "0x064", "0x0000000000000001", "0x00000000000000000000001"] {
            assert_eq!(parse(bad), Err(QuantityError::LeadingZero), "{bad:?}");
        }
    }

    #[test]
    fn a_quantity_beyond_u64_is_refused_as_an_overflow() {
        for bad in ["0x10000000000000000", "0xfffffffffffffffff", &format!("0x{}", "f".repeat(1000))] {
            assert_eq!(parse(bad), Err(QuantityError::Overflow), "{bad:?}");
        }
    }

    #[test]
    fn the_first_broken_rule_names_the_error() {
        // Upper case and not hex come before a leading zero, which comes before an overflow.
        assert_eq!(parse("0x0A"), Err(QuantityError::UpperCase));
        assert_eq!(parse("0x0g"), Err(QuantityError::NotHex));
        assert_eq!(parse("0x1ffffffffffffffffg"), Err(QuantityError::NotHex));
        assert_eq!(parse("0x01ffffffffffffffff"), Err(QuantityError::LeadingZero));
    }

    #[test]
    fn each_error_says_what_was_wrong() {
        assert_eq!(QuantityError::LeadingZero.to_string(), "not a quantity: a leading zero is not canonical");
        assert_eq!(QuantityError::MissingPrefix.to_string(), "not a quantity: it does not start with 0x");
        assert_eq!(QuantityError::Overflow.to_string(), "not a quantity: the value does not fit in 64 bits");
    }

    /// The reader the alloy transport had: either prefix, then `from_str_radix`.
    fn from_str_radix_rule(text: &str) -> Option<u64> {
        let digits = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X"))?;
        u64::from_str_radix(digits, 16).ok()
    }

    #[test]
    fn the_lenient_form_accepts_exactly_what_from_str_radix_accepted_after_either_prefix() {
        let texts = [
            "",
            "0x",
            "0X",
            "0x0",
            "0x00",
            "0x064",
            "0X64",
            "0xAB",
            "0xaB",
            "0x+1",
            "0x+",
            "0x++1",
            "0x-1",
            "+0x1",
            "64",
            "0x 1",
            "0x1 ",
            "0xg",
            "0xffffffffffffffff",
            "0x10000000000000000",
            "0x00000000000000000000000001",
            "0x١",
            "0x+ffffffffffffffff",
        ];
        for text in texts {
            assert_eq!(parse_lenient(text).ok(), from_str_radix_rule(text), "{text:?}");
        }
        assert_eq!(parse_lenient("0x064"), Ok(100), "a leading zero is a value");
        assert_eq!(parse_lenient("0x"), Err(QuantityError::Empty));
        assert_eq!(parse_lenient("64"), Err(QuantityError::MissingPrefix));
    }

    proptest::proptest! {
        #[test]
        fn the_lenient_form_agrees_with_from_str_radix_on_any_text(
            text in "(0[xX])?[+-]{0,2}[0-9a-fA-Fg_ ]{0,24}",
        ) {
            proptest::prop_assert_eq!(parse_lenient(&text).ok(), from_str_radix_rule(&text));
        }

        #[test]
        fn every_u64_written_canonically_parses_back_and_with_a_leading_zero_is_refused(v: u64) {
            proptest::prop_assert_eq!(parse(&format!("{v:#x}")), Ok(v));
            proptest::prop_assert_eq!(parse(&format!("0x0{v:x}")), Err(QuantityError::LeadingZero));
            proptest::prop_assert_eq!(parse_lenient(&format!("0X0{v:X}")), Ok(v));
        }
    }

    #[test]
    fn hex_digits_are_read_in_either_case_or_lower_case_only() {
        for (byte, value) in [(b'0', 0), (b'9', 9), (b'a', 10), (b'f', 15)] {
            assert_eq!(hex_digit(byte), Some(value));
            assert_eq!(lower_hex_digit(byte), Some(value));
        }
        assert_eq!(hex_digit(b'F'), Some(15));
        assert_eq!(lower_hex_digit(b'F'), None);
        for byte in [b'g', b'G', b'x', b' ', b'/', b':', b'@', b'`', 0, 0xff] {
            assert_eq!(hex_digit(byte), None, "{byte}");
            assert_eq!(lower_hex_digit(byte), None, "{byte}");
        }
    }
}

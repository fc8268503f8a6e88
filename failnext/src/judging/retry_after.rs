//! `Retry-After` (RFC 9110 §10.2.3), read here and nowhere else, by one rule.
//!
//! **The rule.** The response's first `Retry-After` field line, as visible ASCII, trimmed of
//! surrounding whitespace, is one of:
//!
//! - **delta-seconds**, one or more ASCII digits and nothing else (`120`): that many seconds
//!   (`0` is [`Duration::ZERO`]); more digits than a `u64` holds is [`Duration::MAX`], "a very
//!   long time", which each caller's cap bounds;
//! - an **HTTP-date** in any of the three forms RFC 9110 §5.6.7 has a recipient accept, as
//!   `httpdate` parses them: IMF-fixdate (`Wed, 21 Oct 2015 07:28:00 GMT`) and the two
//!   obsolete forms, RFC 850 (`Wednesday, 21-Oct-15 07:28:00 GMT`) and asctime
//!   (`Wed Oct 21 07:28:00 2015`): the time from `now` until that date; a date not after
//!   `now` gives `None` (nothing to wait for);
//! - anything else (a sign, a fraction, a unit, a date without its zone, bytes that are not
//!   visible ASCII, no header at all): `None`.
//!
//! **Policy is the caller's.** No status is looked at and no cap applied here:
//!
//! - the judge (`judge::retry_after`, the health hint) reads it on 429 and 503 only and caps it
//!   at `judge::MAX_HINT`;
//! - the JSON-RPC classifier reads it for a capacity verdict whose body gave no hint, on any
//!   status, and caps it at `MAX_HINT`;
//! - the alloy transport hands it, uncapped and on any status, to
//!   `TransportErrorKind::http_error_with_retry_after`.

use std::time::{Duration, SystemTime};

use http::HeaderMap;
use http::header::RETRY_AFTER;

/// The `Retry-After` of a response with `headers`, as a duration from `now`, by the rule in
/// the module docs (uncapped, whatever the status).
pub(crate) fn from_headers(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    parse(headers.get(RETRY_AFTER)?.to_str().ok()?, now)
}

/// One `Retry-After` value, as a duration from `now`, by the rule in the module docs.
pub(crate) fn parse(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Some(delay) = delta_seconds(value) {
        return Some(delay);
    }
    let at = httpdate::parse_http_date(value).ok()?;
    at.duration_since(now).ok().filter(|d| !d.is_zero())
}

/// delta-seconds: one or more ASCII digits, nothing else. Too many digits for a `u64` is
/// still "a very long time": [`Duration::MAX`].
fn delta_seconds(value: &str) -> Option<Duration> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(value.parse().map_or(Duration::MAX, Duration::from_secs))
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    /// 2015-10-21T07:28:00Z, as seconds since the epoch.
    const OCT_21_2015: u64 = 1_445_412_480;

    #[test]
    fn retry_after_parses_delta_seconds() {
        let now = at(OCT_21_2015);
        assert_eq!(parse("120", now), Some(Duration::from_secs(120)));
        assert_eq!(parse(" 5 ", now), Some(Duration::from_secs(5)));
        assert_eq!(parse("0", now), Some(Duration::ZERO));
        assert_eq!(parse("99999999999999999999999", now), Some(Duration::MAX));
        for bad in ["", "-5", "1.5", "5s", "soon", "+5"] {
            assert_eq!(parse(bad, now), None, "{bad:?}");
        }
    }

    #[test]
    fn retry_after_parses_http_dates_in_all_three_forms() {
        let now = at(OCT_21_2015 - 90);
        for date in
            ["Wed, 21 Oct 2015 07:28:00 GMT", "Wednesday, 21-Oct-15 07:28:00 GMT", "Wed Oct 21 07:28:00 2015"]
        {
            assert_eq!(parse(date, now), Some(Duration::from_secs(90)), "{date}");
        }
    }

    #[test]
    fn retry_after_date_not_in_the_future_is_none() {
        let date = "Wed, 21 Oct 2015 07:28:00 GMT";
        assert_eq!(parse(date, at(OCT_21_2015)), None);
        assert_eq!(parse(date, at(OCT_21_2015 + 1)), None);
        assert_eq!(parse("Wed, 21 Oct 2015 07:28:00", at(0)), None, "no zone: not an HTTP-date");
    }

    fn headers(values: &[&[u8]]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for value in values {
            h.append(RETRY_AFTER, HeaderValue::from_bytes(value).unwrap());
        }
        h
    }

    #[test]
    fn from_headers_reads_the_first_field_line_uncapped_on_any_response() {
        let now = at(OCT_21_2015 - 3600);
        assert_eq!(from_headers(&headers(&[b"86400"]), now), Some(Duration::from_secs(86_400)));
        assert_eq!(from_headers(&headers(&[b"7", b"9"]), now), Some(Duration::from_secs(7)));
        assert_eq!(
            from_headers(&headers(&[b"Wed, 21 Oct 2015 07:28:00 GMT"]), now),
            Some(Duration::from_secs(3600))
        );
        assert_eq!(from_headers(&HeaderMap::new(), now), None);
    }

    #[test]
    fn a_value_that_is_not_visible_ascii_is_none() {
        assert_eq!(from_headers(&headers(&[b"5\xff"]), at(0)), None);
        assert_eq!(from_headers(&headers(&[b"\xe9"]), at(0)), None);
    }
}

//! Decision 3, judging an attempt's outcome: the verdict for the request, the evidence for the
//! endpoint's health and the class, decided together, here and nowhere else.
//!
//! The rules, in order:
//!
//! 1. an error from the rest of the chain (no HTTP response) fails over, a failure of the
//!    endpoint, class [`Class::Transport`];
//! 2. 502, 503 and 504 fail over, failures of the endpoint, class [`Class::Trigger`]; the body
//!    is not read;
//! 3. an added trigger status fails over, but the endpoint answered: success, class
//!    [`Class::Trigger`]; the body is not read;
//! 4. any other response goes to the configured [`Classifier`](crate::Classifier), whose
//!    judgement decides (see `middleware::classify` for a classifier that fails or panics);
//! 5. with no classifier, it is returned, a success, class [`Class::Answer`] (0.1's rule).
//!
//! What the endpoint's health is told with the evidence, the *hint*, comes from
//! [`hint`]: the verdict's `cool_for`, else a `Retry-After` on a 429 or 503.

use std::time::{Duration, SystemTime};

use http::header::RETRY_AFTER;
use http::{HeaderMap, StatusCode};

use crate::classify::{Class, Evidence, Judgement, Verdict};

/// The longest time a hint may keep an endpoint out of rotation.
pub(crate) const MAX_HINT: Duration = Duration::from_secs(5 * 60);

/// Fail over, and leave the open time to the endpoint's health.
const FAIL_OVER: Verdict = Verdict::FailOver { cool_for: None };

/// The judgement on an attempt that ended without an HTTP response (rule 1).
pub(crate) const TRANSPORT: Judgement = Judgement::new(FAIL_OVER, Evidence::Failure, Class::Transport);

/// The judgement on a response whose status settles it (rules 2 and 3), or `None` when the
/// status is not a trigger and the response goes on to the classifier, if any (rules 4, 5).
pub(crate) fn by_status(triggers: &Triggers, status: StatusCode) -> Option<Judgement> {
    if is_builtin(status) {
        Some(Judgement::new(FAIL_OVER, Evidence::Failure, Class::Trigger))
    } else if triggers.contains(status) {
        Some(Judgement::new(FAIL_OVER, Evidence::Success, Class::Trigger))
    } else {
        None
    }
}

/// 502, 503 and 504: always triggers, and the only statuses that count against an endpoint.
fn is_builtin(status: StatusCode) -> bool {
    matches!(status.as_u16(), 502..=504)
}

/// How long the endpoint should take no traffic, as far as this attempt says: the verdict's
/// `cool_for`, else the response's `Retry-After` (`retry_after`, read by [`retry_after`]);
/// capped at [`MAX_HINT`].
pub(crate) fn hint(verdict: Verdict, retry_after: Option<Duration>) -> Option<Duration> {
    let hint = match verdict {
        Verdict::FailOver { cool_for: Some(d) } => Some(d),
        _ => retry_after,
    };
    hint.map(|d| d.min(MAX_HINT))
}

/// The `Retry-After` of a 429 or 503 response, as a duration from now, capped at
/// [`MAX_HINT`]; `None` for any other status, a missing or unparsable header, or a date in the
/// past. Costs one comparison (and reads no clock) for every other status.
pub(crate) fn retry_after(status: StatusCode, headers: &HeaderMap) -> Option<Duration> {
    if status != StatusCode::TOO_MANY_REQUESTS && status != StatusCode::SERVICE_UNAVAILABLE {
        return None;
    }
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?;
    parse_retry_after(value, SystemTime::now()).map(|d| d.min(MAX_HINT))
}

/// A `Retry-After` value (RFC 9110 §10.2.3): delta-seconds (`120`) or an HTTP-date
/// (`Wed, 21 Oct 2015 07:28:00 GMT`, and the two obsolete date forms), as a duration from
/// `now`. A date not in the future is `None`, as is anything else.
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Some(delay) = parse_delta_seconds(value) {
        return Some(delay);
    }
    let at = httpdate::parse_http_date(value).ok()?;
    at.duration_since(now).ok().filter(|d| !d.is_zero())
}

/// `Retry-After: <delta-seconds>` (surrounding whitespace allowed), uncapped; `None` for
/// anything else. Too many digits for a `u64` is still "a very long time": `Duration::MAX`.
pub(crate) fn parse_delta_seconds(value: &str) -> Option<Duration> {
    let value = value.trim();
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(value.parse().map_or(Duration::MAX, Duration::from_secs))
}

/// The statuses that trigger failover: 502, 503, 504 and any configured additions.
#[derive(Clone)]
pub(crate) struct Triggers {
    /// One bit per status code 0..=1023.
    bits: [u64; 16],
}

impl Triggers {
    pub(crate) fn new(additional: impl IntoIterator<Item = StatusCode>) -> Triggers {
        let mut t = Triggers { bits: [0; 16] };
        let builtin = [StatusCode::BAD_GATEWAY, StatusCode::SERVICE_UNAVAILABLE, StatusCode::GATEWAY_TIMEOUT];
        for code in builtin.into_iter().chain(additional) {
            let c = usize::from(code.as_u16());
            t.bits[c / 64] |= 1 << (c % 64);
        }
        t
    }

    fn contains(&self, status: StatusCode) -> bool {
        let c = usize::from(status.as_u16());
        self.bits.get(c / 64).is_some_and(|w| w & (1 << (c % 64)) != 0)
    }

    /// The configured additions, in ascending order, without the built-in three.
    pub(crate) fn additional(&self) -> impl Iterator<Item = u16> + '_ {
        (100..1000u16)
            .filter(|&c| !(502..=504).contains(&c) && self.bits[usize::from(c) / 64] & (1 << (c % 64)) != 0)
    }
}

impl std::fmt::Debug for Triggers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.additional()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(c: u16) -> StatusCode {
        StatusCode::from_u16(c).unwrap()
    }

    /// Verdict and evidence of a response with status `c`, no classifier configured.
    fn status(t: &Triggers, c: u16) -> (Verdict, Evidence) {
        let j = by_status(t, s(c)).unwrap_or(Judgement::answer());
        (j.verdict, j.evidence)
    }

    #[test]
    fn builtin_triggers_are_502_503_504_only() {
        let t = Triggers::new([]);
        for c in [502, 503, 504] {
            assert_eq!(status(&t, c), (FAIL_OVER, Evidence::Failure));
            assert_eq!(by_status(&t, s(c)).map(|j| j.class), Some(Class::Trigger));
        }
        for c in [200, 404, 429, 500, 501, 505, 999] {
            assert_eq!(status(&t, c), (Verdict::Return, Evidence::Success));
            assert_eq!(by_status(&t, s(c)), None, "{c} goes on to the classifier");
        }
    }

    #[test]
    fn additional_codes_extend_never_replace() {
        let t = Triggers::new([s(500), s(429), s(200), s(500), s(503)]);
        for c in [200, 429, 500, 502, 503, 504] {
            assert_eq!(status(&t, c).0, FAIL_OVER);
        }
        assert_eq!(status(&t, 501).0, Verdict::Return);
        assert_eq!(t.additional().collect::<Vec<_>>(), [200, 429, 500]);
    }

    #[test]
    fn only_builtin_statuses_count_for_cooldown() {
        let t = Triggers::new([s(429), s(500)]);
        assert_eq!(status(&t, 503).1, Evidence::Failure);
        assert_eq!(status(&t, 429), (FAIL_OVER, Evidence::Success));
        assert_eq!(status(&t, 500), (FAIL_OVER, Evidence::Success));
    }

    #[test]
    fn an_error_always_fails_over_and_is_a_failure() {
        assert_eq!(
            (TRANSPORT.verdict, TRANSPORT.evidence, TRANSPORT.class),
            (FAIL_OVER, Evidence::Failure, Class::Transport)
        );
    }

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    /// 2015-10-21T07:28:00Z, as seconds since the epoch.
    const OCT_21_2015: u64 = 1_445_412_480;

    #[test]
    fn retry_after_parses_delta_seconds() {
        let now = at(OCT_21_2015);
        assert_eq!(parse_retry_after("120", now), Some(Duration::from_secs(120)));
        assert_eq!(parse_retry_after(" 5 ", now), Some(Duration::from_secs(5)));
        assert_eq!(parse_retry_after("0", now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("99999999999999999999999", now), Some(Duration::MAX));
        for bad in ["", "-5", "1.5", "5s", "soon", "+5"] {
            assert_eq!(parse_retry_after(bad, now), None, "{bad:?}");
        }
    }

    #[test]
    fn retry_after_parses_http_dates_in_all_three_forms() {
        let now = at(OCT_21_2015 - 90);
        for date in
            ["Wed, 21 Oct 2015 07:28:00 GMT", "Wednesday, 21-Oct-15 07:28:00 GMT", "Wed Oct 21 07:28:00 2015"]
        {
            assert_eq!(parse_retry_after(date, now), Some(Duration::from_secs(90)), "{date}");
        }
    }

    #[test]
    fn retry_after_date_not_in_the_future_is_none() {
        let date = "Wed, 21 Oct 2015 07:28:00 GMT";
        assert_eq!(parse_retry_after(date, at(OCT_21_2015)), None);
        assert_eq!(parse_retry_after(date, at(OCT_21_2015 + 1)), None);
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00", at(0)), None, "no zone: not an HTTP-date");
    }

    fn headers(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, value.parse().unwrap());
        h
    }

    #[test]
    fn retry_after_is_read_on_429_and_503_only_and_capped() {
        let h = headers("7");
        assert_eq!(retry_after(s(429), &h), Some(Duration::from_secs(7)));
        assert_eq!(retry_after(s(503), &h), Some(Duration::from_secs(7)));
        for c in [200, 500, 502, 504] {
            assert_eq!(retry_after(s(c), &h), None, "{c}");
        }
        assert_eq!(retry_after(s(429), &HeaderMap::new()), None);
        assert_eq!(retry_after(s(429), &headers("86400")), Some(MAX_HINT));
        assert_eq!(retry_after(s(503), &headers("Thu, 01 Jan 2099 00:00:00 GMT")), Some(MAX_HINT));
        assert_eq!(retry_after(s(503), &headers("Thu, 01 Jan 1970 00:00:00 GMT")), None);
    }

    #[test]
    fn hint_prefers_the_verdicts_cool_for_and_is_capped() {
        let ra = Some(Duration::from_secs(7));
        let cool = |d| Verdict::FailOver { cool_for: Some(Duration::from_secs(d)) };
        assert_eq!(hint(cool(3), ra), Some(Duration::from_secs(3)));
        assert_eq!(hint(FAIL_OVER, ra), ra);
        assert_eq!(hint(Verdict::Return, ra), ra);
        assert_eq!(hint(FAIL_OVER, None), None);
        assert_eq!(hint(cool(3600), None), Some(MAX_HINT));
    }
}

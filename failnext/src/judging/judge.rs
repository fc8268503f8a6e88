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

use http::{HeaderMap, StatusCode};

use crate::judging::classify::{Class, Evidence, Judgement, Verdict};

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

/// The `Retry-After` of a 429 or 503 response, as a duration from now (read by the one rule
/// of [`crate::judging::retry_after`]), capped at [`MAX_HINT`]; `None` for any other status, a missing
/// or unparsable header, or a date not in the future. The status gate and the cap are
/// judging's policy, kept here; the reading is not. Costs one comparison (and reads no clock)
/// for every other status.
pub(crate) fn retry_after(status: StatusCode, headers: &HeaderMap) -> Option<Duration> {
    if status != StatusCode::TOO_MANY_REQUESTS && status != StatusCode::SERVICE_UNAVAILABLE {
        return None;
    }
    crate::judging::retry_after::from_headers(headers, SystemTime::now()).map(|d| d.min(MAX_HINT))
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
    use http::header::RETRY_AFTER;

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

//! Decision 3, judging an attempt's outcome: the verdict for the request and the evidence for
//! the endpoint's health, decided together, here and nowhere else.

use http::StatusCode;

use crate::classify::Evidence;
use crate::event::AttemptOutcome;

/// What the request does with an attempt's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Return the response at once, whatever its body says.
    Return,
    /// Try the next endpoint if allowed; a response is kept meanwhile.
    FailOver,
}

/// The judge's answer for one attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Judgement {
    pub(crate) verdict: Verdict,
    pub(crate) evidence: Evidence,
}

/// Judges one attempt's outcome.
///
/// - Any error from the rest of the chain (connect, timeout, reset, ...) fails over, and is a
///   failure of the endpoint.
/// - 502, 503 and 504 fail over, and are failures of the endpoint.
/// - A configured additional trigger status fails over, but the endpoint answered: success.
/// - Every other response is returned, and is a success.
pub(crate) fn judge(triggers: &Triggers, outcome: AttemptOutcome<'_>) -> Judgement {
    let (verdict, evidence) = match outcome {
        AttemptOutcome::Error(_) => (Verdict::FailOver, Evidence::Failure),
        AttemptOutcome::Status(status) if is_builtin(status) => (Verdict::FailOver, Evidence::Failure),
        AttemptOutcome::Status(status) if triggers.contains(status) => (Verdict::FailOver, Evidence::Success),
        AttemptOutcome::Status(_) => (Verdict::Return, Evidence::Success),
    };
    Judgement { verdict, evidence }
}

/// 502, 503 and 504: always triggers, and the only statuses that count against an endpoint.
fn is_builtin(status: StatusCode) -> bool {
    matches!(status.as_u16(), 502..=504)
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

    fn status(t: &Triggers, c: u16) -> (Verdict, Evidence) {
        let j = judge(t, AttemptOutcome::Status(s(c)));
        (j.verdict, j.evidence)
    }

    #[test]
    fn builtin_triggers_are_502_503_504_only() {
        let t = Triggers::new([]);
        for c in [502, 503, 504] {
            assert_eq!(status(&t, c), (Verdict::FailOver, Evidence::Failure));
        }
        for c in [200, 404, 429, 500, 501, 505, 999] {
            assert_eq!(status(&t, c), (Verdict::Return, Evidence::Success));
        }
    }

    #[test]
    fn additional_codes_extend_never_replace() {
        let t = Triggers::new([s(500), s(429), s(200), s(500), s(503)]);
        for c in [200, 429, 500, 502, 503, 504] {
            assert_eq!(status(&t, c).0, Verdict::FailOver);
        }
        assert_eq!(status(&t, 501).0, Verdict::Return);
        assert_eq!(t.additional().collect::<Vec<_>>(), [200, 429, 500]);
    }

    #[test]
    fn only_builtin_statuses_count_for_cooldown() {
        let t = Triggers::new([s(429), s(500)]);
        assert_eq!(status(&t, 503).1, Evidence::Failure);
        assert_eq!(status(&t, 429), (Verdict::FailOver, Evidence::Success));
        assert_eq!(status(&t, 500), (Verdict::FailOver, Evidence::Success));
    }

    #[test]
    fn an_error_always_fails_over_and_is_a_failure() {
        let err = reqwest_middleware::Error::middleware(std::io::Error::other("x"));
        let j = judge(&Triggers::new([]), AttemptOutcome::Error(&err));
        assert_eq!((j.verdict, j.evidence), (Verdict::FailOver, Evidence::Failure));
    }
}

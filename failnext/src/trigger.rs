//! Decision 3, does the outcome trigger failover, and what cooldown learns from it.

use http::StatusCode;

/// What one attempt's HTTP response means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Not a trigger: return the response at once, whatever its body says.
    Return,
    /// A trigger: keep the response and try the next endpoint if allowed.
    Failover,
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

    pub(crate) fn classify(&self, status: StatusCode) -> Verdict {
        let c = usize::from(status.as_u16());
        match self.bits.get(c / 64) {
            Some(w) if w & (1 << (c % 64)) != 0 => Verdict::Failover,
            _ => Verdict::Return,
        }
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

/// Whether a response counts as a cooldown failure: only 502, 503 and 504, whatever the
/// configured triggers are.
pub(crate) fn is_cooldown_failure(status: StatusCode) -> bool {
    matches!(status.as_u16(), 502..=504)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(c: u16) -> StatusCode {
        StatusCode::from_u16(c).unwrap()
    }

    #[test]
    fn builtin_triggers_are_502_503_504_only() {
        let t = Triggers::new([]);
        for c in [502, 503, 504] {
            assert_eq!(t.classify(s(c)), Verdict::Failover);
        }
        for c in [200, 404, 429, 500, 501, 505, 999] {
            assert_eq!(t.classify(s(c)), Verdict::Return);
        }
    }

    #[test]
    fn additional_codes_extend_never_replace() {
        let t = Triggers::new([s(500), s(429), s(200), s(500), s(503)]);
        for c in [200, 429, 500, 502, 503, 504] {
            assert_eq!(t.classify(s(c)), Verdict::Failover);
        }
        assert_eq!(t.classify(s(501)), Verdict::Return);
        assert_eq!(t.additional().collect::<Vec<_>>(), [200, 429, 500]);
    }

    #[test]
    fn only_builtin_statuses_count_for_cooldown() {
        assert!(is_cooldown_failure(s(503)));
        assert!(!is_cooldown_failure(s(429)));
        assert!(!is_cooldown_failure(s(500)));
    }
}

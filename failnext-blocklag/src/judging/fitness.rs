//! `Fitness`: why an endpoint is or is not eligible, and the lag rule that decides it.
//!
//! Every eligibility answer the crate gives is a [`Fitness`] turned into a `bool`: the
//! snapshot records one per endpoint when a check is compared, and
//! [`Monitor::eligible`](crate::Monitor::eligible) answers from the published ones (or from
//! [`Unchecked`](Fitness::Unchecked) and [`Unknown`](Fitness::Unknown), which need no check).
//! Crate-private for now, so that a later version can show the reasons without committing to
//! them today.

/// Why an endpoint is eligible or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fitness {
    /// No check has published yet: every configured endpoint is eligible (fail-open).
    Unchecked,
    /// Its probe succeeded, `behind` blocks behind the highest height, at most `max_lag`.
    Fit {
        /// Blocks behind the highest height of the check.
        behind: u64,
    },
    /// Its probe succeeded, but it is more than `max_lag` blocks behind the highest height.
    Lagging {
        /// Blocks behind the highest height of the check.
        behind: u64,
    },
    /// Its probe failed in the published check: it has no height to compare.
    ProbeFailed,
    /// Within `max_lag` in this check, but it was ineligible before and has not yet had the
    /// [`readmit_after`](crate::MonitorBuilder::readmit_after) consecutive good checks that
    /// re-admit it: `good` of them so far.
    Readmitting {
        /// Blocks behind the reference height of the check.
        behind: u64,
        /// Consecutive good checks so far, this one included.
        good: u32,
    },
    /// Its head is older than the maximum head age, by its block's timestamp and the
    /// monitor's clock ([`max_head_age`](crate::MonitorBuilder::max_head_age)): stale, even
    /// when no other provider is ahead.
    Stale {
        /// How old its head was.
        age: std::time::Duration,
    },
    /// Its head is impossible for its timestamp (ahead of the clock beyond the tolerance, or
    /// higher than the chain could have made since the others' heads): it never sets the
    /// reference ([`Reference::Plausible`](crate::Reference::Plausible)).
    Implausible,
    /// Not one of the monitor's endpoints: never eligible.
    Unknown,
    /// No check has published yet (or the snapshot is older than the maximum age) and the
    /// monitor is fail-closed: not eligible.
    Closed,
    /// Fit in the snapshot, but its last good probe is older than the grace (or it never
    /// answered): not eligible.
    Unheard,
    /// Its probe succeeded within the lag threshold, but it was ineligible before and its
    /// recent evidence (probes and real traffic, [`crate::judging::evidence`]) was bad too often for one
    /// good probe to re-admit it (spawned schedule only).
    Doubted {
        /// Blocks behind the reference height.
        behind: u64,
    },
    /// A real-traffic answer ([`failnext::Observation::Behind`] or
    /// [`Implausible`](failnext::Observation::Implausible)) contradicted the view that admitted
    /// it: not eligible until its next probe.
    Contradicted(failnext::Observation),
}

impl Fitness {
    /// The lag rule, for an endpoint whose probe succeeded: fit iff
    /// `highest - height <= max_lag` (inclusive; `max_lag` 0 accepts only the highest).
    ///
    /// `highest` is the check's reference height ([`Reference`](crate::Reference)); an
    /// endpoint above it (possible under `Corroborated`) counts as 0 behind.
    pub(crate) fn of_height(height: u64, highest: u64, max_lag: u64) -> Fitness {
        let behind = highest.saturating_sub(height);
        if behind <= max_lag { Fitness::Fit { behind } } else { Fitness::Lagging { behind } }
    }

    /// Whether an endpoint of this fitness may be used.
    pub(crate) const fn is_eligible(self) -> bool {
        matches!(self, Fitness::Unchecked | Fitness::Fit { .. })
    }

    /// Which kind of fitness this is, as a number (its fields left out): the schedule's
    /// backoff grows only while a provider stays unfit the same way.
    pub(crate) const fn kind(self) -> u32 {
        match self {
            Fitness::Unchecked => 0,
            Fitness::Fit { .. } => 1,
            Fitness::Lagging { .. } => 2,
            Fitness::ProbeFailed => 3,
            Fitness::Readmitting { .. } => 4,
            Fitness::Stale { .. } => 5,
            Fitness::Implausible => 6,
            Fitness::Unknown => 7,
            Fitness::Closed => 8,
            Fitness::Unheard => 9,
            Fitness::Doubted { .. } => 10,
            Fitness::Contradicted(_) => 11,
        }
    }

    /// Blocks behind the highest height, when the endpoint was measured.
    pub(crate) fn behind(self) -> Option<u64> {
        match self {
            Fitness::Fit { behind } | Fitness::Lagging { behind } | Fitness::Readmitting { behind, .. } => {
                Some(behind)
            }
            Fitness::Doubted { behind } => Some(behind),
            Fitness::Unchecked
            | Fitness::ProbeFailed
            | Fitness::Stale { .. }
            | Fitness::Implausible
            | Fitness::Unknown
            | Fitness::Closed
            | Fitness::Unheard
            | Fitness::Contradicted(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lag_rule_is_inclusive_and_says_how_far_behind() {
        assert_eq!(Fitness::of_height(100, 100, 0), Fitness::Fit { behind: 0 });
        assert_eq!(Fitness::of_height(97, 100, 3), Fitness::Fit { behind: 3 });
        assert_eq!(Fitness::of_height(96, 100, 3), Fitness::Lagging { behind: 4 });
        assert_eq!(Fitness::of_height(0, u64::MAX, u64::MAX), Fitness::Fit { behind: u64::MAX });
        assert_eq!(Fitness::of_height(0, u64::MAX, u64::MAX - 1), Fitness::Lagging { behind: u64::MAX });
    }

    #[test]
    fn only_unchecked_and_fit_are_eligible() {
        assert!(Fitness::Unchecked.is_eligible());
        assert!(Fitness::Fit { behind: 2 }.is_eligible());
        assert!(!Fitness::Lagging { behind: 2 }.is_eligible());
        assert!(!Fitness::ProbeFailed.is_eligible());
        assert!(!Fitness::Readmitting { behind: 0, good: 1 }.is_eligible());
        assert!(!Fitness::Unknown.is_eligible());
        assert!(!Fitness::Closed.is_eligible());
        assert!(!Fitness::Unheard.is_eligible());
        assert!(!Fitness::Doubted { behind: 0 }.is_eligible());
        assert!(!Fitness::Contradicted(failnext::Observation::Behind { head: 1, floor: 9 }).is_eligible());
    }

    #[test]
    fn only_measured_endpoints_are_behind() {
        assert_eq!(Fitness::Fit { behind: 2 }.behind(), Some(2));
        assert_eq!(Fitness::Lagging { behind: 5 }.behind(), Some(5));
        let unmeasured =
            [Fitness::Unchecked, Fitness::ProbeFailed, Fitness::Unknown, Fitness::Closed, Fitness::Unheard];
        for unmeasured in unmeasured {
            assert_eq!(unmeasured.behind(), None);
        }
    }
}

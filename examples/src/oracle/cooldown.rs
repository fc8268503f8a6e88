//! What one endpoint's cooldown becomes, attempt after attempt.

use super::Attempted;

/// What an attempt tells the cooldown of its endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Evidence {
    /// It extends the streak of consecutive failures.
    Failure,
    /// It restarts the streak (it does not end an active cooldown).
    Success,
}

/// The cooldown evidence of an outcome: errors and 502/503/504 are failures; any other
/// response is a success, added trigger statuses included.
pub fn cooldown_evidence(outcome: Attempted) -> Evidence {
    match outcome {
        Attempted::Error => Evidence::Failure,
        Attempted::Status(502..=504) => Evidence::Failure,
        Attempted::Status(_) => Evidence::Success,
    }
}

/// One endpoint's cooldown under `Cooldown::new(threshold, duration)` (or disabled), shared by
/// every request of one `Failover`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CooldownState {
    threshold: Option<u32>,
    streak: u32,
    cooling: bool,
}

impl CooldownState {
    /// A fresh endpoint: no streak, not cooling. `threshold` is `None` when cooldown is
    /// disabled.
    pub fn new(threshold: Option<u32>) -> CooldownState {
        CooldownState { threshold, streak: 0, cooling: false }
    }

    /// Records one attempt's evidence: `threshold` consecutive failures start a cooldown (and
    /// restart the streak); failures while cooling neither extend nor restart it; a success
    /// restarts the streak and leaves an active cooldown alone.
    pub fn record(&mut self, evidence: Evidence) {
        let Some(threshold) = self.threshold else { return };
        match evidence {
            Evidence::Success => self.streak = 0,
            Evidence::Failure if self.cooling => {}
            Evidence::Failure => {
                self.streak += 1;
                if self.streak >= threshold {
                    self.streak = 0;
                    self.cooling = true;
                }
            }
        }
    }

    /// The cooldown's duration ran out: not cooling, and the failures seen while cooling are
    /// forgotten.
    pub fn expire(&mut self) {
        if self.cooling {
            self.cooling = false;
            self.streak = 0;
        }
    }

    /// Whether the endpoint is skipped when its turn comes.
    pub fn is_cooling(&self) -> bool {
        self.threshold.is_some() && self.cooling
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trips_at_threshold_and_a_success_only_restarts_the_streak() {
        let mut c = CooldownState::new(Some(2));
        c.record(cooldown_evidence(Attempted::Error));
        c.record(cooldown_evidence(Attempted::Status(429)));
        c.record(cooldown_evidence(Attempted::Status(503)));
        assert!(!c.is_cooling());
        c.record(Evidence::Failure);
        assert!(c.is_cooling());
        c.record(Evidence::Success);
        assert!(c.is_cooling());
        c.expire();
        c.record(Evidence::Failure);
        assert!(!c.is_cooling());
        let mut off = CooldownState::new(None);
        (0..5).for_each(|_| off.record(Evidence::Failure));
        assert!(!off.is_cooling());
    }
}

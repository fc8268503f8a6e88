//! The failover budget (opt-in): failover attempts limited to a share of recent requests,
//! with a floor, shared by a `Failover` and its clones.

use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

/// A failover budget, for [`FailoverBuilder::failover_budget`](crate::FailoverBuilder::failover_budget):
/// the shape of tower's retry budget, so that an outage does not multiply the load.
///
/// Every request deposits `ratio` of a token; every failover attempt (an attempt after the
/// first) withdraws one; `min_per_sec` tokens are added each second whatever the traffic (the
/// floor), and the balance never exceeds `max_balance` (old deposits do not pile up into a
/// burst). When a failover attempt finds less than one token, the request sends nothing more:
/// it ends with its first attempt's outcome (a retained trigger response, else an error that
/// [`is_budget_spent`](crate::Error::is_budget_spent)). The first attempt of a request never
/// needs a token.
///
/// ```
/// use failnext::{Budget, Endpoint, Failover};
///
/// // At most one failover attempt per five requests, plus one a second.
/// let failover = Failover::builder([Endpoint::new("a", "http://127.0.0.1:8545")])
///     .failover_budget(Budget::new(0.2).min_per_sec(1))
///     .build()?;
/// # drop(failover);
/// # Ok::<(), failnext::ConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Budget {
    pub(crate) ratio: f64,
    pub(crate) min_per_sec: u32,
    pub(crate) max_balance: u32,
}

impl Budget {
    /// Failover attempts may be up to `ratio` of the requests (0.2: one per five requests).
    /// Defaults: a floor of 10 per second, a balance of at most 100 tokens.
    pub const fn new(ratio: f64) -> Budget {
        Budget { ratio, min_per_sec: 10, max_balance: 100 }
    }

    /// Tokens added each second whatever the traffic (default 10).
    #[must_use]
    pub const fn min_per_sec(mut self, n: u32) -> Budget {
        self.min_per_sec = n;
        self
    }

    /// The most tokens the budget holds (default 100).
    #[must_use]
    pub const fn max_balance(mut self, n: u32) -> Budget {
        self.max_balance = n;
        self
    }

    pub(crate) fn is_valid(&self) -> bool {
        self.ratio.is_finite() && self.ratio >= 0.0 && self.max_balance >= 1
    }
}

/// One token, in the milli-tokens the balance counts.
const TOKEN: i64 = 1000;

/// The balance of one `Failover`'s budget.
#[derive(Debug)]
pub(crate) struct Tokens {
    rule: Budget,
    milli: AtomicI64,
    /// When the floor was last added.
    refilled: Mutex<Instant>,
}

impl Tokens {
    /// A budget that starts full.
    pub(crate) fn new(rule: Budget) -> Tokens {
        let full = i64::from(rule.max_balance) * TOKEN;
        Tokens { rule, milli: AtomicI64::new(full), refilled: Mutex::new(Instant::now()) }
    }

    fn cap(&self) -> i64 {
        i64::from(self.rule.max_balance) * TOKEN
    }

    fn add(&self, milli: i64) {
        let cap = self.cap();
        let _ = self.milli.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| Some((b + milli).min(cap)));
    }

    /// A request started: its share.
    pub(crate) fn deposit(&self) {
        let share = (self.rule.ratio * TOKEN as f64) as i64;
        if share > 0 && self.milli.load(Ordering::Relaxed) < self.cap() {
            self.add(share);
        }
    }

    /// A failover attempt wants a token: whether it got one (after adding the floor).
    pub(crate) fn withdraw(&self) -> bool {
        {
            let mut refilled = self.refilled.lock().unwrap_or_else(|p| p.into_inner());
            let now = Instant::now();
            let elapsed = now.saturating_duration_since(*refilled);
            let floor = (elapsed.as_secs_f64() * f64::from(self.rule.min_per_sec) * TOKEN as f64) as i64;
            if floor > 0 {
                self.add(floor);
                *refilled = now;
            } else if elapsed > Duration::from_secs(60) {
                *refilled = now;
            }
        }
        self.milli
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| (b >= TOKEN).then_some(b - TOKEN))
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn deposits_pay_for_failovers_and_the_floor_refills() {
        let t = Tokens::new(Budget::new(0.5).min_per_sec(0).max_balance(2));
        assert!(t.withdraw() && t.withdraw(), "starts full");
        assert!(!t.withdraw());
        t.deposit();
        assert!(!t.withdraw(), "half a token");
        t.deposit();
        assert!(t.withdraw(), "two requests pay for one failover");
        let t = Tokens::new(Budget::new(0.0).min_per_sec(2).max_balance(1));
        assert!(t.withdraw() && !t.withdraw());
        tokio::time::advance(Duration::from_millis(500)).await;
        assert!(t.withdraw(), "the floor: two a second");
        tokio::time::advance(Duration::from_secs(100)).await;
        assert!(t.withdraw() && !t.withdraw(), "capped at the balance");
    }
}

//! The scripted faults of a simulated run, as fractions of its duration.

use std::time::Duration;

use crate::sim::Behaviour;

/// Provider indexes, in priority order.
pub(crate) const PRIMARY: usize = 0;
pub(crate) const BACKUP: usize = 1;

/// One switch of one simulated provider's behaviour.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    /// When, as a fraction of the run's duration.
    pub(crate) at: f64,
    /// Which provider, by index.
    pub(crate) provider: usize,
    /// Its new behaviour.
    pub(crate) behaviour: Behaviour,
    /// What happens, for the log.
    pub(crate) note: String,
}

/// The timeline: the primary goes down, comes back lagging, the backup rate-limits for a
/// while, then both recover. The third provider stays healthy throughout.
pub(crate) fn script(lag_blocks: u64) -> Vec<Step> {
    let step = |at, provider, behaviour, note: &str| Step { at, provider, behaviour, note: note.to_owned() };
    vec![
        step(0.15, PRIMARY, Behaviour::Down, "primary goes down (connection refused)"),
        step(
            0.40,
            PRIMARY,
            Behaviour::Lagging(lag_blocks),
            &format!("primary comes back, {lag_blocks} blocks behind"),
        ),
        step(
            0.50,
            BACKUP,
            Behaviour::RateLimited { retry_after_secs: 2 },
            "backup rate-limits (429, Retry-After: 2)",
        ),
        step(0.75, BACKUP, Behaviour::Healthy, "backup stops rate-limiting"),
        step(0.80, PRIMARY, Behaviour::Healthy, "primary catches up with the chain"),
    ]
}

/// When a step at fraction `at` of `duration` happens: at the last monitor check before
/// that point, plus a quarter of the check interval. Each fault then lasts most of a check
/// interval before the monitor notices it, so failnext's own failover and cooldown show
/// first, and the monitor's eligibility takes over after.
pub(crate) fn when(at: f64, duration: Duration, check_interval: Duration) -> Duration {
    let point = duration.mul_f64(at);
    if check_interval.is_zero() {
        return point;
    }
    // The epsilon keeps a point that is a whole number of checks (1.2 s / 0.4 s) on that check.
    let checks = (point.as_secs_f64() / check_interval.as_secs_f64() + 1e-9).floor();
    check_interval.mul_f64(checks) + check_interval / 4
}

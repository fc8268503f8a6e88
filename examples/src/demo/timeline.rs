//! The scripted faults of a simulated run, as fractions of its duration.

use std::time::Duration;

use crate::sim::Behaviour;

/// Provider indexes, in priority order.
pub(crate) const PRIMARY: usize = 0;
pub(crate) const BACKUP: usize = 1;
pub(crate) const THIRD: usize = 2;

/// How much slower the primary answers while it is slow, at most: 200 ms.
pub(crate) const SLOW_BY: Duration = Duration::from_millis(200);

/// How much slower the primary answers while it is slow, in a run with this block time:
/// [`SLOW_BY`], but no more than one block. A slow provider's answers are computed when they
/// leave, so they are that much fresher than the others': more than a few blocks and the slow
/// primary alone would look eligible (the 0.1 reference is the highest height), and its slow
/// probes would push the monitor's checks off their schedule. Compressed runs have short
/// blocks, so their primary is slow by less.
pub(crate) fn slow_by(block_time: Duration) -> Duration {
    SLOW_BY.min(block_time)
}

/// How far ahead of the chain the outlier reports its head, in blocks.
pub(crate) const AHEAD_BY: u64 = 1000;

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

/// The timeline: the primary is slow for a while, then goes down, comes back lagging; the
/// third stalls while the primary is down and follows the chain again; the backup rate-limits
/// for a while, then both recover; at the end the backup reports a head far ahead of the
/// chain (an outlier) and then the true one again.
pub(crate) fn script(lag_blocks: u64, block_time: Duration) -> Vec<Step> {
    let step = |at, provider, behaviour, note: &str| Step { at, provider, behaviour, note: note.to_owned() };
    let slow = slow_by(block_time);
    let slow_ms = slow.as_millis();
    vec![
        step(0.04, PRIMARY, Behaviour::Slow(slow), &format!("primary slows down (+{slow_ms} ms)")),
        step(0.10, PRIMARY, Behaviour::Healthy, "primary is fast again"),
        step(0.15, PRIMARY, Behaviour::Down, "primary goes down (connection refused)"),
        step(0.20, THIRD, Behaviour::Stalled, "third stalls (its head stops moving)"),
        step(0.35, THIRD, Behaviour::Healthy, "third follows the chain again"),
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
        step(
            0.86,
            BACKUP,
            Behaviour::Ahead(AHEAD_BY),
            &format!("backup reports a head {AHEAD_BY} blocks ahead (an outlier)"),
        ),
        step(0.95, BACKUP, Behaviour::Healthy, "backup reports the true head again"),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_in_order_and_apart_at_every_length() {
        for secs in [3, 6, 20, 60] {
            let duration = Duration::from_secs(secs);
            let config = crate::demo::Config::simulated(duration);
            let check = config.check_interval;
            let times: Vec<Duration> =
                script(20, config.block_time).iter().map(|s| when(s.at, duration, check)).collect();
            for pair in times.windows(2) {
                assert!(pair[0] < pair[1], "{secs} s: steps collide: {times:?}");
            }
            assert!(times.iter().all(|t| *t < duration), "{secs} s: {times:?}");
        }
    }
}

#[cfg(test)]
mod slow {
    use super::*;

    #[test]
    fn the_primary_is_slow_by_200_ms_at_full_length_and_by_a_block_at_most() {
        let full = crate::demo::Config::simulated(crate::demo::DEFAULT_DURATION);
        assert_eq!(slow_by(full.block_time), Duration::from_millis(200));
        let short = crate::demo::Config::simulated(Duration::from_secs(3));
        assert_eq!(slow_by(short.block_time), short.block_time);
    }
}

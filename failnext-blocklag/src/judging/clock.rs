//! Heads judged by the clock: how old a provider's head is, from its block's timestamp and
//! the monitor's own clock, and whether a head is plausible for its timestamp and the chain's
//! block time. Pure: the round applies it.
//!
//! A block's timestamp is wall-clock time (Unix seconds) as its producer saw it. A head's age
//! is measured once, when a provider first shows that head ([`Stamped::after`]): the wall
//! clock's lead over the timestamp, then the monitor's own (Tokio) clock from there. So a head
//! that stops ages, whatever the provider's clock says afterwards, and the rules run under
//! paused time.

use std::time::{Duration, SystemTime};

use tokio::time::Instant;

/// How far in the future a block's timestamp may be before the head is implausible: clocks
/// drift, and producers stamp blocks ahead of time (geth accepts 15 s).
pub(crate) const FUTURE_TOLERANCE: Duration = Duration::from_secs(15);

/// The default [`max_head_age`](crate::MonitorBuilder::max_head_age) is this many block
/// times...
pub(crate) const HEAD_AGE_BLOCKS: u32 = 5;

/// ...and at least this long (block timestamps are whole seconds, and chains skip slots).
pub(crate) const MIN_HEAD_AGE: Duration = Duration::from_secs(10);

/// The default head age before a block time is learned.
pub(crate) const UNLEARNED_HEAD_AGE: Duration = Duration::from_secs(60);

/// The block time assumed for plausibility before one is learned: faster than any chain the
/// monitor is meant for, so that it only rules out what no chain could make.
pub(crate) const FASTEST_BLOCK_TIME: Duration = Duration::from_millis(100);

/// The whole blocks a chain of `block_time` made in `since`: the credit a height as old as
/// `since` is given (a block time under 1 ms counts as 1 ms).
pub(crate) fn blocks_made(since: Duration, block_time: Duration) -> u64 {
    (since.as_nanos() / block_time.max(Duration::from_millis(1)).as_nanos()) as u64
}

/// A provider's head at `at`: its probe's `height` (probed at `checked`) and the head its good
/// answers showed (`vouched`, and when), each credited with the blocks a chain of
/// `block_time` made since (none without a block time, or for a height not yet timed); the
/// higher of the two.
pub(crate) fn newest_head(
    probed: Option<(u64, Option<Instant>)>,
    vouched: Option<(u64, Instant)>,
    at: Instant,
    block_time: Option<Duration>,
) -> Option<u64> {
    let credited = |height: u64, seen: Option<Instant>| {
        let since = seen.map(|seen| at.saturating_duration_since(seen));
        height.saturating_add(since.zip(block_time).map_or(0, |(since, bt)| blocks_made(since, bt)))
    };
    let probed = probed.map(|(height, checked)| credited(height, checked));
    let vouched = vouched.map(|(head, seen)| credited(head, Some(seen)));
    probed.max(vouched)
}

/// The head the chain has surely reached at `at`, by a provider's `height` seen at `seen`:
/// credited with the blocks a chain of `block_time` made since, less an eighth of them and
/// [`failnext::DEFAULT_TOLERANCE`] (a block time learnt from a few samples may be short, and a
/// head credited too far would hold honest providers out). `None` without a block time, or
/// when the credit adds nothing.
pub(crate) fn credited_floor(
    height: u64,
    seen: Instant,
    at: Instant,
    block_time: Option<Duration>,
) -> Option<u64> {
    let made = blocks_made(at.saturating_duration_since(seen), block_time?);
    let credit = (made - made / 8).checked_sub(failnext::DEFAULT_TOLERANCE)?;
    (credit > 0).then(|| height.saturating_add(credit))
}

/// One provider's head with its timestamp, as the clock sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamped {
    /// The head's number.
    pub(crate) number: u64,
    /// Its block's timestamp, Unix seconds.
    pub(crate) timestamp: u64,
    /// When the provider first showed this head, on the Tokio clock.
    pub(crate) first_seen: Instant,
    /// How old the block was then, by the wall clock (zero for a timestamp ahead of it).
    pub(crate) age_then: Duration,
}

impl Stamped {
    /// The head `number` stamped `timestamp`, seen at `now` (Tokio) and `wall` (the wall
    /// clock): the same head as `before` keeps the age it was first measured with.
    pub(crate) fn after(
        before: Option<Stamped>,
        number: u64,
        timestamp: u64,
        now: Instant,
        wall: SystemTime,
    ) -> Stamped {
        match before {
            Some(b) if b.number == number && b.timestamp == timestamp => b,
            _ => {
                let block = SystemTime::UNIX_EPOCH + Duration::from_secs(timestamp);
                let age_then = wall.duration_since(block).unwrap_or(Duration::ZERO);
                Stamped { number, timestamp, first_seen: now, age_then }
            }
        }
    }

    /// How old the head is at `now` (Tokio clock).
    pub(crate) fn age(&self, now: Instant) -> Duration {
        self.age_then.saturating_add(now.saturating_duration_since(self.first_seen))
    }

    /// Whether its timestamp is further ahead of `wall` than [`FUTURE_TOLERANCE`].
    pub(crate) fn stamped_ahead(&self, wall: SystemTime) -> bool {
        let block = SystemTime::UNIX_EPOCH + Duration::from_secs(self.timestamp);
        block.duration_since(wall).is_ok_and(|ahead| ahead > FUTURE_TOLERANCE)
    }
}

/// The head age beyond which a head is stale: `configured`, else [`HEAD_AGE_BLOCKS`] block
/// times with a floor of [`MIN_HEAD_AGE`], or [`UNLEARNED_HEAD_AGE`] before a block time is
/// known.
pub(crate) fn max_head_age(configured: Option<Duration>, block_time: Option<Duration>) -> Duration {
    configured.unwrap_or_else(|| match block_time {
        Some(block_time) => block_time.saturating_mul(HEAD_AGE_BLOCKS).max(MIN_HEAD_AGE),
        None => UNLEARNED_HEAD_AGE,
    })
}

/// Which of `heads` (one per provider that answered with a timestamp, any order) are
/// implausible: stamped further in the future than [`FUTURE_TOLERANCE`], or higher than the
/// anchor (the lower median of the heads) by more than the chain could make between the two
/// timestamps: twice the blocks of `block_time` (or [`FASTEST_BLOCK_TIME`]) in the time
/// between them plus a second, and `slack` blocks more. One provider far ahead with a current
/// timestamp is implausible; honest heads, whose numbers follow their timestamps, never are,
/// however far behind the anchor or one another they are. Returns one flag per head, same
/// order.
pub(crate) fn implausible(
    heads: &[Stamped],
    wall: SystemTime,
    block_time: Option<Duration>,
    slack: u64,
) -> Vec<bool> {
    let mut by_number: Vec<&Stamped> = heads.iter().filter(|h| !h.stamped_ahead(wall)).collect();
    by_number.sort_by_key(|h| h.number);
    let anchor = by_number.get(by_number.len().saturating_sub(1) / 2).copied().copied();
    let block_time = block_time.unwrap_or(FASTEST_BLOCK_TIME).max(Duration::from_millis(1));
    heads
        .iter()
        .map(|head| {
            if head.stamped_ahead(wall) {
                return true;
            }
            let Some(anchor) = anchor else { return false };
            if head.number <= anchor.number {
                return false;
            }
            let between = Duration::from_secs(head.timestamp.saturating_sub(anchor.timestamp) + 1);
            let makeable = (between.as_nanos() / block_time.as_nanos()) as u64;
            head.number - anchor.number > makeable.saturating_mul(2).saturating_add(slack)
        })
        .collect()
}

/// [`implausible`] over one stamp per entry (`None`: no timestamp, never implausible), when
/// the rule applies (`on`: under [`Reference::Plausible`](crate::Reference::Plausible));
/// otherwise none is.
pub(crate) fn implausible_entries(
    stamps: &[Option<Stamped>],
    on: bool,
    wall: SystemTime,
    block_time: Option<Duration>,
    slack: u64,
) -> Vec<bool> {
    if !on {
        return vec![false; stamps.len()];
    }
    let heads: Vec<Stamped> = stamps.iter().flatten().copied().collect();
    let mut flags = implausible(&heads, wall, block_time, slack).into_iter();
    stamps.iter().map(|s| s.is_some() && flags.next().unwrap_or(false)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECS: fn(u64) -> Duration = Duration::from_secs;
    const NOW_UNIX: u64 = 1_800_000_000;

    fn wall() -> SystemTime {
        SystemTime::UNIX_EPOCH + SECS(NOW_UNIX)
    }

    fn head(number: u64, timestamp: u64) -> Stamped {
        Stamped::after(None, number, timestamp, Instant::now(), wall())
    }

    #[test]
    fn a_head_that_stops_ages_on_the_monitors_clock() {
        let t0 = Instant::now();
        let first = Stamped::after(None, 100, NOW_UNIX - 2, t0, wall());
        assert_eq!(first.age(t0), SECS(2));
        // The same head 30 s later, however the wall clock moved: 32 s old.
        let again = Stamped::after(Some(first), 100, NOW_UNIX - 2, t0 + SECS(30), wall());
        assert_eq!(again.age(t0 + SECS(30)), SECS(32));
        // A new head is measured afresh.
        let next = Stamped::after(Some(again), 101, NOW_UNIX + 28, t0 + SECS(30), wall() + SECS(30));
        assert_eq!(next.age(t0 + SECS(30)), SECS(2));
    }

    #[test]
    fn a_timestamp_ahead_of_the_clock_is_zero_old_and_implausible_beyond_the_tolerance() {
        assert_eq!(head(100, NOW_UNIX + 5).age_then, SECS(0));
        assert!(!head(100, NOW_UNIX + 15).stamped_ahead(wall()));
        assert!(head(100, NOW_UNIX + 16).stamped_ahead(wall()));
    }

    #[test]
    fn a_thousand_blocks_ahead_with_a_current_timestamp_is_implausible_and_honest_heads_are_not() {
        let bt = Some(Duration::from_millis(250));
        let heads =
            [head(1_000, NOW_UNIX), head(999, NOW_UNIX), head(2_000, NOW_UNIX), head(900, NOW_UNIX - 25)];
        assert_eq!(implausible(&heads, wall(), bt, 3), [false, false, true, false]);
        // Alone, or with one honest peer, the liar is still out: the anchor is the lower median.
        assert_eq!(
            implausible(&[head(1_000, NOW_UNIX), head(2_000, NOW_UNIX)], wall(), bt, 3),
            [false, true]
        );
        assert_eq!(implausible(&[head(2_000, NOW_UNIX)], wall(), bt, 3), [false]);
        // Without a learned block time, only what no chain could make.
        assert_eq!(
            implausible(&[head(1_000, NOW_UNIX), head(1_020, NOW_UNIX)], wall(), None, 3),
            [false, false]
        );
        assert_eq!(
            implausible(&[head(1_000, NOW_UNIX), head(1_100, NOW_UNIX)], wall(), None, 3),
            [false, true]
        );
    }

    #[test]
    fn a_lagging_head_is_plausible_however_far_behind() {
        let bt = Some(SECS(12));
        let heads = [head(100, NOW_UNIX - 1_200), head(200, NOW_UNIX), head(201, NOW_UNIX + 12)];
        assert_eq!(implausible(&heads, wall(), bt, 0), [false, false, false]);
    }

    #[test]
    fn the_default_head_age_is_five_block_times_with_a_floor() {
        assert_eq!(max_head_age(None, Some(SECS(12))), SECS(60));
        assert_eq!(max_head_age(None, Some(Duration::from_millis(250))), SECS(10));
        assert_eq!(max_head_age(None, None), SECS(60));
        assert_eq!(max_head_age(Some(SECS(3)), Some(SECS(12))), SECS(3));
    }
}

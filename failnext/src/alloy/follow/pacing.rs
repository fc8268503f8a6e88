//! Pacing and the wake: the block time learnt from the blocks' timestamps, and the pause
//! between two polls.

use std::time::Duration;

use super::reads::Header;
use super::{FollowedBlock, Follower, by_number};

/// How many blocks back the block time is learnt over.
const LEARN_WINDOW: usize = 32;

/// The mean time between `older` and `newer`, from their timestamps; `None` when they share a
/// second (or are out of order).
pub(super) fn block_time(older: &FollowedBlock, newer: &FollowedBlock) -> Option<Duration> {
    let blocks = newer.number.checked_sub(older.number).filter(|n| *n > 0)?;
    let seconds = newer.timestamp.checked_sub(older.timestamp).filter(|s| *s > 0)?;
    Some(Duration::from_millis(seconds.saturating_mul(1000) / blocks))
}

impl Follower {
    /// The block time, from the last (up to [`LEARN_WINDOW`]) blocks yielded: the span of
    /// their timestamps over their count, so that blocks faster than a second (whose
    /// timestamps, in whole seconds, repeat) are learnt too. Kept while the span is 0.
    pub(super) fn learn_block_time(&mut self) {
        let (Some((newer, _)), Some((older, _))) = (
            self.ring.back(),
            self.ring.iter().rev().nth(LEARN_WINDOW.min(self.ring.len().saturating_sub(1))),
        ) else {
            return;
        };
        if let Some(learnt) = block_time(older, newer) {
            self.block_time = Some(learnt);
        }
    }

    /// Before the first block, when no poll interval was set: the block time from two blocks
    /// before the start ([`LEARN_WINDOW`] apart), in one request, so that the first polls
    /// already follow it. Nothing is learnt when the request fails.
    pub(super) async fn learn_from_history(&mut self) {
        let Some(older) = self.next.checked_sub(1 + LEARN_WINDOW as u64) else { return };
        let params = vec![by_number(older), by_number(self.next - 1)];
        let headers = self.read_batch::<Option<Header>, _>("eth_getBlockByNumber", params).await;
        if let [Some(Some(older)), Some(Some(newer))] = headers.as_slice() {
            self.block_time = block_time(&older.block(), &newer.block()).or(self.block_time);
        }
    }

    /// Waits the poll interval, or less when a subscribed provider announces a new head.
    pub(super) async fn pause(&mut self) {
        let interval = self.interval();
        #[cfg(feature = "ws")]
        if let Some(wake) = &mut self.wake {
            if wake.wait(interval).await {
                self.stats.woken += 1;
            }
            return;
        }
        tokio::time::sleep(interval).await;
    }

    pub(super) fn interval(&self) -> Duration {
        self.poll.unwrap_or_else(|| {
            self.block_time.map_or(Duration::from_secs(1), |t| (t / 2).max(Duration::from_millis(50)))
        })
    }
}

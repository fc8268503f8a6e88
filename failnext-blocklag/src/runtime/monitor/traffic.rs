//! What real traffic tells the monitor ([`failnext::HealthSource::observe`]): evidence, a
//! contradiction of the view, a provider resumed after a silence; and what the spawned
//! schedule asks of the view between its checks.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use failnext::Observation;
use tokio::time::Instant;

use crate::judging::evidence::Counts;
use crate::judging::fitness::Fitness;
use crate::runtime::wake::Gap;

use super::Inner;

/// How many attempts in a row outrun by a hedge (with no good answer between) contradict the
/// view of an admitted provider: one is the tail latency a hedge cuts off (at a p95 hedge, one
/// read in twenty), three in a row a provider that may be hanging.
pub(crate) const OUTRUN_STREAK: u32 = 3;

/// How many blocks beyond where the chain can be an answer's head must be to have its
/// provider's chain probed at once ([`Inner::far_ahead`]).
pub(crate) const FAR_AHEAD: u64 = 64;

/// How many other admitted providers let a provider held out wait for its idle re-check
/// ([`Inner::needed`]): the one serving, and one to fail over to.
pub(crate) const SPARES: usize = 2;

/// How long nothing heard of a provider (no good answer, no probe answered) makes its next
/// good answer a resumption ([`Inner::resumes`]): long enough for a restart (a node's process,
/// a listener rebound), which may change its chain. Reads a provider serves in a row come far
/// closer together; a provider that serves now and then resumes at most once per interval.
pub(crate) const QUIET: Duration = Duration::from_millis(200);

impl Inner {
    /// Endpoint `i`'s evidence now.
    pub(crate) fn counts(&self, i: usize) -> Counts {
        self.evidence.get(i).map_or_else(Counts::default, |e| e.counts(self.now_ms(), self.half_life()))
    }

    /// Records what real traffic showed of endpoint `i` (from [`HealthSource::observe`]
    /// (failnext::HealthSource::observe)): the evidence, and for a head behind or implausible
    /// while the view admits it, a contradiction that makes it ineligible at once. Returns
    /// whether it contradicted the view.
    pub(crate) fn observe(&self, i: usize, observation: Observation) -> bool {
        let Some(evidence) = self.evidence.get(i) else { return false };
        // An attempt outrun by a hedge is the slow tail the hedge is there to cut off, until
        // it happens [`OUTRUN_STREAK`] times without a good answer between: then the provider
        // may be hanging: it counts as bad evidence, and the view is contradicted as for a
        // failure. (The tail is no evidence against the provider.)
        if let (Observation::Outrun { .. }, Some(outrun)) = (observation, self.outrun.get(i)) {
            if outrun.fetch_add(1, Ordering::Relaxed).saturating_add(1) < OUTRUN_STREAK {
                return false;
            }
        }
        let now_ms = self.now_ms();
        evidence.record(!observation.is_bad(), now_ms, self.half_life());
        if let Observation::Answered { head } = observation {
            self.resumes(i, now_ms);
            if let Some(outrun) = self.outrun.get(i) {
                if outrun.load(Ordering::Relaxed) != 0 {
                    outrun.store(0, Ordering::Relaxed);
                }
            }
            let far = head.is_some_and(|head| self.far_ahead(head));
            if far {
                self.doubt(i);
                self.wake(i, Gap::Interval);
            }
            if let (Some(head), Some(at)) = (head, self.answered.get(i)) {
                at.store(now_ms.saturating_add(1), Ordering::Release);
                // A new head is the fleet's too, unless it is far ahead: a head its probe has
                // yet to confirm is this process's to doubt alone.
                if self.raise_head(i, head, now_ms) && !far {
                    self.share_head(i, head);
                }
            }
            // A provider held out for a failure that answers well is probed now: it is admitted
            // again within a probe's latency of its first good answer, not an interval later.
            // (A good answer says nothing against a lag, a stale head or its doubted record.)
            if self.held_out(i) && self.held_out_for_failing(i) {
                self.wake(i, Gap::Recheck);
            }
            return false;
        }
        // A failed attempt contradicts the view only when a spawned schedule re-checks the
        // provider soon (its backoff); checks run by hand may come an interval later.
        let rechecked = self.schedule.load().is_some();
        if (observation == Observation::Failed && !rechecked) || self.held_out(i) {
            return false;
        }
        self.contradicted[i].store(Some(Arc::new(observation)));
        if let Some(bits) = &self.bits {
            bits.fetch_and(!(1 << i), Ordering::SeqCst);
        }
        // Published here when no publication is under way; else the one under way applies it,
        // or the provider's probe does before it starts.
        if let Ok(_publishing) = self.publishing.try_lock() {
            self.republish();
        }
        // Its probe runs now, whatever `check_now` allowed lately (a contradiction happens at
        // most once per re-admission), when the reads need it back; otherwise the schedule
        // checks it once they do, or an interval after its last check ([`Inner::needed`]).
        self.wake(i, Gap::Recheck);
        true
    }

    /// Endpoint `i` showed `head` at `now_ms` (its answer, or another process's of the fleet):
    /// the highest head it showed, and when it first showed it, move on when it is higher.
    /// Returns whether it was.
    pub(super) fn raise_head(&self, i: usize, head: u64, now_ms: u64) -> bool {
        let (Some(highest), Some(first)) = (self.answered_head.get(i), self.answered_head_at.get(i)) else {
            return false;
        };
        if head <= highest.load(Ordering::Acquire) {
            return false;
        }
        first.store(now_ms.saturating_add(1), Ordering::Release);
        highest.fetch_max(head, Ordering::AcqRel) < head
    }

    /// Endpoint `i` showed a new `head` in this process's traffic: announced to its fleet
    /// (feature `redis`) in the background, once per head fleet-wide
    /// ([`Fleet::raise`](failnext::fleet::Fleet::raise)), never on the request's way; nothing
    /// without a fleet.
    fn share_head(&self, i: usize, head: u64) {
        #[cfg(feature = "redis")]
        if let (Some(fleet), Some(ep), Ok(runtime)) =
            (&self.settings.fleet, self.settings.endpoints.get(i), tokio::runtime::Handle::try_current())
        {
            let (fleet, name) = (fleet.clone(), crate::runtime::fleet::head_name(ep.id()));
            runtime.spawn(async move { fleet.raise(&name, head, crate::runtime::fleet::HEAD_FOR).await });
        }
        #[cfg(not(feature = "redis"))]
        let _ = (i, head);
    }

    /// Whether an answer's `head` is further ahead of the view's highest height than the chain
    /// can have moved since (its age over the learnt block time, else none), by more than
    /// [`FAR_AHEAD`] blocks: what a provider moved onto another chain (one higher up) shows,
    /// answering well. Its probe, which asks `eth_chainId`, is then pulled forward to now, at
    /// most once per interval ([`Gap::Interval`]: the probe moves, it is not added); without
    /// it, traffic stands in for the probe for up to four intervals, every read going to the
    /// other chain meanwhile.
    pub(super) fn far_ahead(&self, head: u64) -> bool {
        let Some(snapshot) = self.published.load_full() else { return false };
        let moved = match snapshot.block_time() {
            Some(block) if !block.is_zero() => {
                u64::try_from(snapshot.age().as_nanos() / block.as_nanos()).unwrap_or(u64::MAX)
            }
            _ => 0,
        };
        head > snapshot.highest().saturating_add(moved).saturating_add(FAR_AHEAD)
    }

    /// Endpoint `i`'s chain is to be checked by this process's next probe of it, whoever holds
    /// its lease in a fleet ([`Inner::doubted`]).
    fn doubt(&self, i: usize) {
        if let Some(doubted) = self.doubted.get(i) {
            doubted.store(true, Ordering::Release);
        }
    }

    /// Endpoint `i` answered well at `now_ms`: when nothing was heard of it for [`QUIET`] or
    /// more before (since its latest probe answered), it may have restarted unseen, possibly
    /// onto another chain, which its answers do not show. Its probe (which asks `eth_chainId`)
    /// is pulled forward to now: at most once per interval while the view admits it
    /// ([`Gap::Interval`]: the probe moves, it is not added), as evidence against the view
    /// while it holds it out (the reads reach it as their reserve: nothing else was left).
    /// Traffic does not stand in for its probe until one answers.
    pub(super) fn resumes(&self, i: usize, now_ms: u64) {
        let (Some(contact), Some(resumed)) = (self.contact.get(i), self.resumed.get(i)) else { return };
        let before = contact.swap(now_ms.saturating_add(1), Ordering::AcqRel);
        let quiet_ms = u64::try_from(QUIET.as_millis()).unwrap_or(u64::MAX);
        if before != 0 && now_ms.saturating_sub(before - 1) >= quiet_ms {
            resumed.store(true, Ordering::Release);
            self.doubt(i);
            self.wake(i, if self.held_out(i) { Gap::Recheck } else { Gap::Interval });
        }
    }

    /// Endpoint `i`'s probe answered (fit or not, on its chain or not: it said so): a sign of
    /// life, and its chain is known again.
    pub(super) fn probe_answered(&self, i: usize) {
        if let (Some(contact), Some(resumed)) = (self.contact.get(i), self.resumed.get(i)) {
            contact.fetch_max(self.now_ms().saturating_add(1), Ordering::AcqRel);
            resumed.store(false, Ordering::Release);
        }
    }

    /// Whether reads need endpoint `i`, held out, back soon: fewer than [`SPARES`] other
    /// providers are admitted. While enough others serve, a provider held out is re-checked
    /// at the idle interval, not on its short backoff: the re-checks are paid requests, and
    /// the reads have providers to go to (and still try this one last).
    pub(crate) fn needed(&self, i: usize) -> bool {
        let n = self.evidence.len();
        let admitted = (0..n).filter(|&j| j != i && !self.held_out(j)).count();
        admitted < SPARES
    }

    /// Whether the view holds endpoint `i` out (contradicted, or not admitted by the latest
    /// snapshot; time rules aside): one atomic load with the bitmask (at most 64 endpoints),
    /// which every contradiction clears at once; observed on every judged attempt.
    pub(crate) fn held_out(&self, i: usize) -> bool {
        match &self.bits {
            Some(bits) => bits.load(Ordering::Acquire) & (1 << i) == 0,
            None => self.is_contradicted(i) || !self.admits(self.published.load().as_deref(), i),
        }
    }

    /// Whether endpoint `i`, held out, is held out because it failed (its probe, or an
    /// attempt failed or was outrun): what a good answer disproves.
    pub(super) fn held_out_for_failing(&self, i: usize) -> bool {
        if let Some(observation) = self.contradicted.get(i).and_then(|c| c.load_full()) {
            return matches!(*observation, Observation::Failed | Observation::Outrun { .. });
        }
        self.published.load().as_deref().is_some_and(|s| s.fitness_at(i) == Fitness::ProbeFailed)
    }

    /// Wakes endpoint `i`'s probe in the spawned schedule (see [`Link::wake`]), unless one was
    /// woken within `gap`; nothing without a schedule.
    ///
    /// [`Link::wake`]: crate::runtime::wake::Link::wake
    pub(super) fn wake(&self, i: usize, gap: Gap) {
        if let Some(link) = &*self.schedule.load() {
            link.wake(i, self.now_ms(), gap);
        }
    }

    /// How long ago endpoint `i` last answered well with its head, as real traffic told
    /// ([`Inner::observe`]); `None` when it never did.
    pub(crate) fn answered_ago(&self, i: usize) -> Option<Duration> {
        if self.resumed.get(i)?.load(Ordering::Acquire) {
            return None;
        }
        let at = self.answered.get(i)?.load(Ordering::Acquire).checked_sub(1)?;
        Some(Duration::from_millis(self.now_ms().saturating_sub(at)))
    }

    /// The highest head real traffic showed of endpoint `i`, and when it first showed it
    /// (the chain had reached that head by then; a later answer with the same head says
    /// nothing newer).
    pub(crate) fn answered(&self, i: usize) -> Option<(u64, Instant)> {
        let head = self.answered_head.get(i)?.load(Ordering::Acquire);
        let at = self.answered_head_at.get(i)?.load(Ordering::Acquire).checked_sub(1)?;
        let ago = Duration::from_millis(self.now_ms().saturating_sub(at));
        let now = Instant::now();
        (head != 0).then(|| (head, now.checked_sub(ago).unwrap_or(now)))
    }

    /// Asks the spawned schedule to probe endpoint `i` now (see [`Link::wake`]; the
    /// schedule runs it when the reads need it, [`Inner::needed`]); nothing without a
    /// schedule.
    ///
    /// [`Link::wake`]: crate::runtime::wake::Link::wake
    pub(crate) fn check_now(&self, i: usize) {
        self.wake(i, Gap::Interval);
    }
}

//! Decision 1, which endpoint: the request's consideration order, frozen at request start,
//! and why each endpoint is passed over.
//!
//! No I/O and no locks of its own. Exclusion and eligibility are settled when the plan is made;
//! cooldown (or the breaker) is checked live, when a candidate's turn comes ([`admit`]); the
//! plan remembers the candidates it passed over because their breaker was open (or half-open
//! with its trial taken), for the last resort ([`Plan::last_resort`]).

use std::time::Duration;

use tokio::time::Instant;

use crate::flow::slot::{Slot, position};
use crate::health::Admit;
use crate::health::eligibility::Eligibility;
use crate::health::latency::{Ordered, faster_than};
use crate::health::skip::Skip;
use crate::health::source::HealthSource;
use crate::request::endpoint::EndpointId;
use crate::request::options::RequestOptions;

/// What the last resort chose.
#[derive(Debug)]
pub(crate) enum LastResort<T> {
    /// This candidate, admitted as `T` (its trial).
    Take(usize, T),
    /// Wait for this candidate's trial, held by another request, to end, then ask again.
    Wait(usize),
}

/// The request's consideration order over `slots`.
///
/// Every request-scoped id is checked before eligibility is asked anything: exclusions first,
/// in order, then the preference; an id that is not configured is returned as the error.
/// Then eligibility is asked exactly once per non-excluded endpoint, in configured order.
///
/// A paired [`HealthSource`] (`advice`) is asked next, once per endpoint the hook left: an
/// endpoint it rules out goes to the plan's reserve, tried only after every other candidate
/// ([`Plan::next`]).
pub(crate) fn plan(
    slots: &[Slot],
    opts: &RequestOptions<'_>,
    eligible: Option<&dyn Eligibility>,
    advice: Option<&dyn HealthSource>,
    ordering: Option<&Ordered>,
) -> Result<Plan, EndpointId> {
    if let Some(unknown) = opts.excluded.iter().find(|id| position(slots, id).is_none()) {
        return Err(unknown.clone());
    }
    let preferred = match opts.preferred {
        None => None,
        Some(id) => Some(position(slots, id).ok_or_else(|| id.clone())?),
    };
    let mut plan =
        Plan::new(slots.len(), preferred, |i| skip_at_start(&slots[i], opts.excluded, eligible, advice));
    if let Some(ordered) = ordering {
        plan.order_by_latency(ordered, |i| slots[i].latency.get());
    }
    Ok(plan)
}

/// The plan of a request that named no endpoint, under a builder with no eligibility
/// predicate, health source or ordering: every endpoint usable, in configured order.
pub(crate) fn plain(len: usize) -> Plan {
    Plan::new(len, None, |_| None)
}

/// Why `slot` is out of the request from its start, or `None` when it is usable. Eligibility
/// is asked only of an endpoint the request did not exclude, and its answer is told to the
/// endpoint's breaker ([`Health::saw_eligibility`](crate::health::Health::saw_eligibility)).
fn skip_at_start(
    slot: &Slot,
    excluded: &[EndpointId],
    eligible: Option<&dyn Eligibility>,
    advice: Option<&dyn HealthSource>,
) -> Option<Skip> {
    let id = slot.id();
    if excluded.iter().any(|e| e == id) {
        return Some(Skip::Excluded);
    }
    if let Some(eligible) = eligible {
        let eligible = eligible.is_eligible(id);
        if !eligible || advice.is_none() {
            slot.health.saw_eligibility(eligible);
        }
        if !eligible {
            return Some(Skip::Ineligible);
        }
    }
    let advice = advice?;
    let advised = advice.eligible(id);
    slot.health.saw_eligibility(advised);
    slot.health.saw_good(|| advice.last_good(id));
    match advised {
        true => None,
        false if advice.never(id) => Some(Skip::Ineligible),
        false => Some(Skip::Reserve),
    }
}

/// Whether a candidate whose turn has come may be sent to now (with a trial permit when it is
/// its breaker's trial), or why it is passed over.
pub(crate) fn admit(slot: &Slot) -> Result<Admit<'_>, Skip> {
    slot.health.admit()
}

/// The endpoints a request may use, in the order it considers them.
///
/// Built once per request from the configured order, the request's exclusions, the
/// eligibility answers and the preferred endpoint. Allocation-free for up to 64 endpoints.
#[derive(Debug)]
pub(crate) struct Plan {
    usable: Mask,
    preferred: Option<usize>,
    preferred_done: bool,
    /// Next configured index to look at once the preferred endpoint (if any) is done.
    cursor: usize,
    remaining: usize,
    len: usize,
    /// Candidates passed over because their breaker was open (or half-open, its trial taken),
    /// not attempted since: the last resort's choice.
    passed_open: Mask,
    /// Candidates whose trial (held by another request) this request waited for once, and
    /// twice: a request waits at most twice per endpoint. The first wait may be for a trial
    /// that began before this request (its failure is older news than the request); the
    /// second is for a trial that began while it waited.
    waited: [Mask; 2],
    /// Candidates the plan has returned, so that a preference set later
    /// ([`Plan::hedge_to_fastest`]) never returns one twice.
    taken: Mask,
    /// Candidates a paired health source advised against: tried, in configured order, once
    /// every other candidate has been returned.
    reserve: Mask,
    /// Of the reserve, the candidates the health source admits but the request's scope knows
    /// below its floor (an old head, perhaps): tried before those the source advised against
    /// (the first 64 endpoints; the others keep configured order).
    demoted: u64,
    /// For the error's [`PassedOver`](crate::PassedOver), the first 64 endpoints only (one
    /// word each, so that the healthy path's future does not grow): those the request
    /// excluded, and those its health passed over (cooling down, breaker open, trial taken,
    /// given up by the last resort).
    excluded: u64,
    passed_by_health: u64,
}

impl Plan {
    /// `skip` is asked exactly once for every index, in configured order: `None` makes the
    /// index usable. `preferred` moves to the front if it is usable.
    fn new(len: usize, preferred: Option<usize>, mut skip: impl FnMut(usize) -> Option<Skip>) -> Plan {
        let mut usable = Mask::new(len);
        let mut reserve = Mask::empty(len);
        let mut excluded = 0;
        let mut remaining = 0;
        for i in 0..len {
            match skip(i) {
                None => {
                    usable.set(i);
                    remaining += 1;
                }
                Some(Skip::Reserve) => reserve.set(i),
                Some(Skip::Excluded) => excluded |= bit(i),
                Some(_) => {}
            }
        }
        let preferred = preferred.filter(|&p| p < len && usable.get(p));
        let passed_open = Mask::empty(len);
        let waited = [Mask::empty(len), Mask::empty(len)];
        let taken = Mask::empty(len);
        Plan {
            usable,
            preferred,
            preferred_done: false,
            cursor: 0,
            remaining,
            len,
            passed_open,
            waited,
            taken,
            reserve,
            demoted: 0,
            excluded,
            passed_by_health: 0,
        }
    }

    /// Latency-aware ordering: the first usable candidate in configured order gives its place
    /// to the fastest usable one when that is faster by more than the margin, unless the request
    /// prefers an endpoint of its own (that wins) or explores (then each usable endpoint goes
    /// first in turn).
    fn order_by_latency(&mut self, ordered: &Ordered, latency: impl Fn(usize) -> Option<Duration>) {
        if self.preferred.is_some() {
            return;
        }
        let usable = |i: &usize| self.usable.get(*i);
        let Some(first) = (0..self.len).find(usable) else { return };
        if let Some(turn) = ordered.explores() {
            let count = (0..self.len).filter(usable).count();
            self.preferred = (0..self.len).filter(usable).nth(turn as usize % count.max(1));
            return;
        }
        if let Some(faster) = faster_than(first, (0..self.len).filter(usable), ordered.rule.margin, latency) {
            self.preferred = Some(faster);
        }
    }

    /// Latency-aware hedging: the next candidate (the hedge) is the fastest one left instead of
    /// the next in order, when that is faster than it by more than the margin. Only once the
    /// first candidate is taken and no preference is pending.
    pub(crate) fn hedge_to_fastest(
        &mut self,
        ordered: &Ordered,
        latency: impl Fn(usize) -> Option<Duration>,
    ) {
        if self.preferred.is_some() && !self.preferred_done {
            return;
        }
        let left = |i: &usize| self.usable.get(*i) && !self.taken.get(*i);
        let Some(next) = (self.cursor..self.len).find(left) else { return };
        if let Some(faster) = faster_than(next, (0..self.len).filter(left), ordered.rule.margin, latency) {
            self.preferred = Some(faster);
            self.preferred_done = false;
        }
    }

    /// Whether endpoint `i` was usable at the request's start (neither excluded nor ineligible).
    pub(crate) fn is_usable(&self, i: usize) -> bool {
        self.usable.get(i)
    }

    /// Whether a usable candidate (admitted: neither excluded, ineligible nor in reserve) is
    /// left to return.
    pub(crate) fn usable_left(&self) -> bool {
        self.remaining > 0
    }

    /// Whether any endpoint is left to consider: in the plan, or for the last resort.
    pub(crate) fn has_more(&self) -> bool {
        self.remaining > 0 || self.passed_open.any() || self.reserve.any()
    }

    /// Endpoint `i`, usable until now, is out of the request from its start (its scope ruled
    /// it out).
    pub(crate) fn remove(&mut self, i: usize) {
        self.reserve.clear(i);
        if i < self.len && self.usable.get(i) {
            self.usable.clear(i);
            self.remaining -= 1;
            if self.preferred == Some(i) {
                self.preferred = None;
            }
        }
    }

    /// Endpoint `i`, usable until now, goes behind every other candidate (into the reserve):
    /// tried only once every other candidate has been returned (its scope knows it below the
    /// floor: its answer is judged when it comes), but before the candidates the health
    /// source advised against: a head that may be old news is less against a provider than a
    /// fault the source saw.
    pub(crate) fn demote(&mut self, i: usize) {
        if i < self.len && self.usable.get(i) {
            self.remove(i);
            self.reserve.set(i);
            self.demoted |= bit(i);
        }
    }

    /// Candidate `i`, just returned, was proven unable since the plan was made (the health
    /// source found it on another chain): ruled out, as if from the start.
    pub(crate) fn proven_unable(&mut self, i: usize) {
        if i < self.len {
            self.taken.clear(i);
            self.usable.clear(i);
            self.reserve.clear(i);
        }
    }

    /// Candidate `i`, just returned, was not sent after all (the budget refused its hedge): it
    /// comes next again.
    pub(crate) fn put_back(&mut self, i: usize) {
        if self.taken.get(i) {
            self.taken.clear(i);
            self.remaining += 1;
            self.preferred = Some(i);
            self.preferred_done = false;
        }
    }

    /// Remembers that candidate `i` was passed over because its breaker was open.
    pub(crate) fn pass_open(&mut self, i: usize) {
        self.passed_open.set(i);
        self.passed_by_health |= bit(i);
    }

    /// How many candidates passed over as open are left for the last resort (0, 1, or 2 for
    /// two or more).
    pub(crate) fn passed_open_left(&self) -> usize {
        (0..self.len).filter(|&i| self.passed_open.get(i)).take(2).count()
    }

    /// Remembers that candidate `i` was passed over because it was cooling down.
    pub(crate) fn pass_cooling(&mut self, i: usize) {
        self.passed_by_health |= bit(i);
    }

    /// How the plan left endpoint `i` (asked when a request fails, to say why it sent
    /// nothing there).
    pub(crate) fn fate(&self, i: usize) -> Fate {
        if self.excluded & bit(i) != 0 {
            Fate::Excluded
        } else if self.passed_by_health & bit(i) != 0 {
            Fate::PassedByHealth
        } else if self.taken.get(i) || self.usable.get(i) || self.reserve.get(i) {
            Fate::NotReached
        } else {
            Fate::RuledOut
        }
    }

    /// This request waits for candidate `i`'s trial no more (a wait outlasted its bound).
    pub(crate) fn wait_no_more(&mut self, i: usize) {
        for waited in &mut self.waited {
            waited.set(i);
        }
    }

    /// The last resort, once the plan's order is exhausted: among the candidates passed over
    /// as open, in order of their open time's end ([`Plan::soonest_open`]), the first that
    /// `take` admits (its trial, taken even before its open time is over) is chosen and leaves
    /// the set. When `take` admits none (another request holds each one's trial permit), the
    /// soonest that this request may still wait for (`may_wait`: at most twice per candidate)
    /// is the one to wait for. Candidates it may still wait for stay in the set; the others
    /// leave it. `None`: nothing is left.
    pub(crate) fn last_resort<T>(
        &mut self,
        open_until: impl Fn(usize) -> Option<Instant>,
        mut take: impl FnMut(usize) -> Option<T>,
        may_wait: bool,
    ) -> Option<LastResort<T>> {
        let mut busy = Mask::empty(self.len);
        let mut first_busy = None;
        let mut chosen = None;
        while let Some(i) = self.soonest_open(&open_until) {
            if let Some(taken) = take(i) {
                chosen = Some(LastResort::Take(i, taken));
                break;
            }
            if may_wait && !self.waited[1].get(i) {
                busy.set(i);
                first_busy.get_or_insert(i);
            } else {
                self.passed_by_health |= bit(i);
            }
        }
        for i in (0..self.len).filter(|&i| busy.get(i)) {
            self.passed_open.set(i);
        }
        if chosen.is_some() {
            return chosen;
        }
        let i = first_busy?;
        let once = usize::from(self.waited[0].get(i));
        self.waited[once].set(i);
        Some(LastResort::Wait(i))
    }

    /// The last resort's next choice, taken out of the set: among the candidates passed over as
    /// open, the one whose open time ends soonest (`None`, closed since, sorts first; ties in
    /// configured order).
    fn soonest_open(&mut self, open_until: impl Fn(usize) -> Option<Instant>) -> Option<usize> {
        let mut best: Option<(usize, Option<Instant>)> = None;
        for i in (0..self.len).filter(|&i| self.passed_open.get(i)) {
            let until = open_until(i);
            if best.is_none_or(|(_, b)| until < b) {
                best = Some((i, until));
            }
        }
        let (i, _) = best?;
        self.passed_open.clear(i);
        Some(i)
    }
}

impl Iterator for Plan {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        if let (Some(p), false) = (self.preferred, self.preferred_done) {
            self.preferred_done = true;
            self.remaining -= 1;
            self.taken.set(p);
            return Some(p);
        }
        while self.cursor < self.len {
            let i = self.cursor;
            self.cursor += 1;
            if self.usable.get(i) && !self.taken.get(i) {
                self.remaining -= 1;
                self.taken.set(i);
                return Some(i);
            }
        }
        // Every other candidate was returned: the reserve, in configured order, those only
        // demoted for their head first.
        let i = (0..self.len)
            .find(|&i| self.reserve.get(i) && self.demoted & bit(i) != 0)
            .or_else(|| (0..self.len).find(|&i| self.reserve.get(i)))?;
        self.reserve.clear(i);
        self.taken.set(i);
        Some(i)
    }
}

/// Endpoint `i`'s bit in a word of the first 64 endpoints (none beyond).
fn bit(i: usize) -> u64 {
    if i < 64 { 1 << i } else { 0 }
}

/// How a request's plan left an endpoint: see [`Plan::fate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fate {
    /// The request excluded it.
    Excluded,
    /// Ruled out from the start: ineligible, or unfit by the request's scope.
    RuledOut,
    /// Passed over at its turn by its health: cooling down, its breaker open or its trial
    /// taken.
    PassedByHealth,
    /// A candidate when the request stopped, or chosen and not sent (its attempt not paid
    /// for, or its body not replayable).
    NotReached,
}

/// A set of endpoint indices: one word inline, a vector beyond 64 endpoints.
#[derive(Debug)]
enum Mask {
    Word(u64),
    Words(Vec<u64>),
}

impl Mask {
    fn new(len: usize) -> Mask {
        if len <= 64 { Mask::Word(0) } else { Mask::Words(vec![0; len.div_ceil(64)]) }
    }

    /// An empty set that allocates nothing until an index beyond 63 is set.
    fn empty(len: usize) -> Mask {
        if len <= 64 { Mask::Word(0) } else { Mask::Words(Vec::new()) }
    }

    fn set(&mut self, i: usize) {
        match self {
            Mask::Word(w) => *w |= 1 << i,
            Mask::Words(ws) => {
                if ws.len() <= i / 64 {
                    ws.resize(i / 64 + 1, 0);
                }
                ws[i / 64] |= 1 << (i % 64);
            }
        }
    }

    fn clear(&mut self, i: usize) {
        match self {
            Mask::Word(w) => *w &= !(1 << i),
            Mask::Words(ws) => {
                if let Some(w) = ws.get_mut(i / 64) {
                    *w &= !(1 << (i % 64));
                }
            }
        }
    }

    fn any(&self) -> bool {
        match self {
            Mask::Word(w) => *w != 0,
            Mask::Words(ws) => ws.iter().any(|&w| w != 0),
        }
    }

    fn get(&self, i: usize) -> bool {
        match self {
            Mask::Word(w) => i < 64 && *w & (1 << i) != 0,
            Mask::Words(ws) => ws.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan's order, with the same rule as [`skip_at_start`] over indices.
    fn order(len: usize, excluded: &[usize], preferred: Option<usize>, ok: &[usize]) -> Vec<usize> {
        Plan::new(len, preferred, |i| {
            if excluded.contains(&i) {
                Some(Skip::Excluded)
            } else if !ok.contains(&i) {
                Some(Skip::Ineligible)
            } else {
                None
            }
        })
        .collect()
    }

    #[test]
    fn configured_order_minus_excluded_and_ineligible() {
        assert_eq!(order(4, &[], None, &[0, 1, 2, 3]), [0, 1, 2, 3]);
        assert_eq!(order(4, &[0, 2], None, &[0, 1, 2, 3]), [1, 3]);
        assert_eq!(order(4, &[], None, &[1, 3]), [1, 3]);
    }

    #[test]
    fn preferred_moves_to_front_only_when_usable() {
        assert_eq!(order(3, &[], Some(2), &[0, 1, 2]), [2, 0, 1]);
        assert_eq!(order(3, &[], Some(0), &[0, 1, 2]), [0, 1, 2]);
        assert_eq!(order(3, &[2], Some(2), &[0, 1, 2]), [0, 1]);
        assert_eq!(order(3, &[], Some(2), &[0, 1]), [0, 1]);
    }

    #[test]
    fn eligibility_asked_once_per_non_excluded_endpoint() {
        let slots: Vec<Slot> = ["a", "b", "c", "d"]
            .into_iter()
            .map(|id| {
                let ep = crate::Endpoint::new(id, "http://127.0.0.1:1/");
                Slot::new(&ep, "http://127.0.0.1:1/".parse().unwrap(), crate::Cooldown::disabled())
            })
            .collect();
        let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = asked.clone();
        let eligible = move |id: &EndpointId| {
            seen.lock().unwrap().push(id.to_string());
            id.as_str() != "c"
        };
        let excluded = [EndpointId::from("a")];
        let opts = RequestOptions { excluded: &excluded, ..RequestOptions::default() };
        let order: Vec<usize> = plan(&slots, &opts, Some(&eligible), None, None).unwrap().collect();
        assert_eq!(*asked.lock().unwrap(), ["b", "c", "d"]);
        assert_eq!(order, [1, 3]);
    }

    #[test]
    fn a_candidate_demoted_for_its_head_goes_before_those_the_source_advised_against() {
        // 0 advised against (reserve), 1 and 3 admitted, 2 admitted but known below the floor.
        let mut plan = Plan::new(4, None, |i| (i == 0).then_some(Skip::Reserve));
        plan.demote(2);
        assert_eq!(plan.collect::<Vec<_>>(), [1, 3, 2, 0]);
    }

    #[test]
    fn has_more_tracks_remaining() {
        let mut plan = Plan::new(2, Some(1), |_| None);
        assert!(plan.has_more());
        assert_eq!(plan.next(), Some(1));
        assert!(plan.has_more());
        assert_eq!(plan.next(), Some(0));
        assert!(!plan.has_more());
        assert_eq!(plan.next(), None);
    }

    #[test]
    fn the_last_resort_takes_the_soonest_open_candidate_once() {
        let now = Instant::now();
        let at = |ms: u64| Some(now + std::time::Duration::from_millis(ms));
        let mut plan = Plan::new(4, None, |_| None);
        assert_eq!(plan.by_ref().count(), 4);
        assert!(!plan.has_more());
        for i in [0, 1, 3] {
            plan.pass_open(i);
        }
        assert!(plan.has_more() && plan.remaining == 0);
        let until = |i: usize| [at(300), at(100), None, at(100)][i];
        assert_eq!(plan.soonest_open(until), Some(1), "soonest, ties in configured order");
        assert_eq!(plan.soonest_open(until), Some(3));
        assert_eq!(plan.soonest_open(|_| None), Some(0));
        assert_eq!(plan.soonest_open(until), None);
        assert!(!plan.has_more());
    }

    #[test]
    fn passed_open_beyond_64_endpoints() {
        let mut plan = Plan::new(100, None, |_| None);
        plan.pass_open(99);
        plan.pass_open(3);
        assert_eq!(plan.soonest_open(|i| (i == 99).then(Instant::now)), Some(3));
        assert_eq!(plan.soonest_open(|_| None), Some(99));
        assert!(!plan.passed_open.any());
    }

    #[test]
    fn more_than_64_endpoints() {
        let all: Vec<usize> = (0..100).collect();
        assert_eq!(order(100, &[], Some(99), &all).len(), 100);
        assert_eq!(order(100, &[], Some(99), &all)[0], 99);
    }
}

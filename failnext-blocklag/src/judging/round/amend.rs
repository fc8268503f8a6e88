//! [`amend`]: one provider's probe under the spawned schedule, published on its own into the
//! latest snapshot, and every other entry re-judged against the new reference.

use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use failnext::EndpointId;

use crate::judging::agreement;
use crate::judging::clock::{self, Stamped};
use crate::judging::entry::SnapshotEntry;
use crate::judging::evidence::Counts;
use crate::judging::fitness::Fitness;
use crate::judging::head_timing::HeadTiming;
use crate::judging::reference::Reference;
use crate::judging::snapshot::Snapshot;
use crate::probe::check_error::ProbeFailure;

use super::judge::{READMIT_BAD_SHARE, carry_probe_health, readmission, within_seconds};
use super::rules::{Measured, Rules};

/// One provider's probe under the spawned schedule, to publish on its own.
#[derive(Debug)]
pub(crate) struct Probed {
    /// Its place in configured order.
    pub(crate) position: usize,
    /// Its height, or the failure.
    pub(crate) outcome: Result<u64, ProbeFailure>,
    /// What else the probe measured.
    pub(crate) measured: Measured,
    /// When the probe ended.
    pub(crate) at: Instant,
    /// The provider's evidence before this probe.
    pub(crate) counts: Counts,
}

/// The configuration [`amend`] applies.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Amending<'a> {
    pub(crate) max_lag: u64,
    pub(crate) rules: Rules,
    /// The fitness of a provider not probed yet ([`Fitness::Unchecked`] or
    /// [`Fitness::Closed`]).
    pub(crate) waiting: Fitness,
    /// Per provider, in configured order: the head its latest good answer in real traffic
    /// showed and when (traffic is the probe: a provider serving reads is not probed, so its
    /// own probe's height may be old); empty when unknown.
    pub(crate) vouched: &'a [Option<(u64, Instant)>],
}

/// What [`amend`] made of one probe.
#[derive(Debug)]
pub(crate) struct Amended {
    /// The snapshot to publish; `None` when no entry has a height (nothing to compare: the
    /// previous snapshot stays, as when every probe of a check fails).
    pub(crate) snapshot: Option<Snapshot>,
    /// The evidence the probe adds: good (`Some(true)`: within the lag threshold), bad
    /// (`Some(false)`: failed or lagging, while the provider was admitted), or none (failed or
    /// lagging again while it was already held out: probing it more often is no new
    /// evidence).
    pub(crate) evidence: Option<bool>,
}

/// The blocks a provider's head, re-judged against another provider's later probe, is
/// allowed for the phase between the two probes ([`amend`]).
const PHASE_BLOCKS: u64 = 1;

/// Publishes one provider's probe into the `previous` snapshot (the spawned schedule). Pure.
///
/// The entry of `probed.position` is replaced; the reference height is re-derived from every
/// entry's latest height; every other entry is re-judged against it, which can make a fit
/// provider lagging at once but makes no ineligible provider eligible (that takes its own
/// probe). The probed entry is judged as in [`assemble`] (lag in blocks, then in seconds, then
/// [`readmission`]), and then, if it was held out (ineligible before) and its evidence with
/// this probe counted has a bad share above [`READMIT_BAD_SHARE`], it stays out as
/// [`Fitness::Doubted`].
pub(crate) fn amend(
    previous: Option<&Snapshot>,
    ids: &[&EndpointId],
    probed: Probed,
    config: Amending<'_>,
) -> Amended {
    let Probed { position: i, outcome, measured, at, counts } = probed;
    let (max_lag, rules) = (config.max_lag, config.rules);
    let mut entries: Vec<SnapshotEntry> = ids
        .iter()
        .enumerate()
        .map(|(j, id)| {
            previous
                .and_then(|p| p.entries().get(j))
                .cloned()
                .unwrap_or_else(|| SnapshotEntry::waiting((*id).clone(), config.waiting))
        })
        .collect();
    let Some(before) = entries.get(i).cloned() else { return Amended { snapshot: None, evidence: None } };
    // Heads by the clock: the probed entry's stamp (the others keep theirs), which heads are
    // implausible (under `Reference::Plausible`), then the reference of the plausible ones.
    let wall = SystemTime::now();
    let stamp = outcome
        .as_ref()
        .ok()
        .zip(measured.timestamp)
        .map(|(&height, timestamp)| Stamped::after(before.stamped(), height, timestamp, at, wall));
    let stamps: Vec<Option<Stamped>> =
        entries.iter().enumerate().map(|(j, e)| if j == i { stamp } else { e.stamped() }).collect();
    let learned = previous.and_then(Snapshot::block_time);
    let plausible_rule = rules.reference == Reference::Plausible;
    let mut judging = Judging {
        i,
        at,
        max_lag,
        rules,
        vouched: config.vouched,
        implausible: clock::implausible_entries(&stamps, plausible_rule, wall, learned, max_lag),
        block_time: None,
        max_head_age: None,
    };
    let behind_credited = match (&outcome, judging.credited_chain(&entries, learned)) {
        (Ok(height), Some(credited)) if *height < credited => Some(credited),
        _ => None,
    };
    let highest = judging.reference(&entries, outcome.as_ref().ok().copied(), behind_credited.is_some());
    let previous_head = previous.and_then(|p| p.head().map(|head| (p.highest(), head)));
    // Only a provider that was at the reference and moved on, its probe now the reference,
    // measures the chain's block time; one that was behind it (or not yet probed) and jumps
    // ahead only shows it was behind, and one whose probe failed shows nothing of the chain
    // (the reference moved by another provider's height, which may have sat still while no
    // one fresher was heard: a sample of that span would count a stall as blocks).
    let sampled = previous.is_some_and(|p| before.height().is_some_and(|h| h >= p.highest()))
        && matches!((outcome.as_ref(), highest), (Ok(h), Some(reference)) if *h >= reference);
    let head =
        highest.map(|reference| HeadTiming::after(previous_head, reference, at, rules.stall_after, sampled));
    judging.block_time = head.and_then(|h| h.block_time);
    judging.max_head_age = (plausible_rule || rules.max_head_age.is_some())
        .then(|| clock::max_head_age(rules.max_head_age, judging.block_time.or(learned)));

    let probe = Probe { outcome, measured, counts, stamp, reference: highest, behind_credited };
    let (entry, evidence) = judging.probed_entry(&before, probe);
    entries[i] = entry;

    let Some(highest) = highest else { return Amended { snapshot: None, evidence } };
    judging.rejudge_others(&mut entries, highest);
    let seen = judging.reference_seen(&entries, highest, behind_credited.is_some());
    let checked_at = previous.map_or(at, |p| p.checked().max(at));
    let agreed = agreed_after(previous, &entries, rules);
    let snapshot = Snapshot::new(entries, highest, max_lag, SystemTime::now())
        .with_head(head)
        .with_agreed(agreed)
        .checked_at(checked_at)
        .with_reference_seen(seen);
    Amended { snapshot: Some(snapshot), evidence }
}

/// What one probe brings to [`Judging::probed_entry`]: its outcome and measures, the
/// provider's evidence before it, its head's stamp, and the heads it is judged against.
struct Probe {
    outcome: Result<u64, ProbeFailure>,
    measured: Measured,
    counts: Counts,
    stamp: Option<Stamped>,
    /// The reference height, when any entry has a height.
    reference: Option<u64>,
    /// The others' heads credited with the blocks made since, when the probe is below them.
    behind_credited: Option<u64>,
}

/// What [`amend`] knows while it judges one probe against the others: whose probe, when, the
/// rules, which heads are implausible, the block time, and the heads traffic showed.
struct Judging<'a> {
    /// The probed provider's place.
    i: usize,
    /// When its probe ended.
    at: Instant,
    max_lag: u64,
    rules: Rules,
    /// Per provider: the head its latest good answer showed, and when.
    vouched: &'a [Option<(u64, Instant)>],
    /// Per provider: its head is implausible by the clock.
    implausible: Vec<bool>,
    /// The block time after this probe.
    block_time: Option<Duration>,
    /// How old a head may be before it is stale, when a rule says.
    max_head_age: Option<Duration>,
}

impl Judging<'_> {
    /// Traffic is the probe: a provider serving reads is probed seldom, and the head its
    /// latest good answer showed is newer than its probe's (not for the provider probed now:
    /// its probe is the news, and a failed one lends its answers nothing).
    fn vouched_of(&self, j: usize) -> Option<(u64, Instant)> {
        self.vouched.get(j).copied().flatten().filter(|_| j != self.i)
    }

    /// Whether provider `j` is the probed one, `behind` the others' credited heads: then it
    /// is not the reference, nor when it was seen.
    fn behind_now(&self, j: usize, behind: bool) -> bool {
        j == self.i && behind
    }

    /// How old a head of `stamp` is, when that is older than the rule allows.
    fn stale_at(&self, stamp: Option<Stamped>) -> Option<Duration> {
        stamp.map(|s| s.age(self.at)).filter(|age| self.max_head_age.is_some_and(|max| *age > max))
    }

    /// The chain as the other fit providers showed it, credited with the blocks made since
    /// (conservatively: less an eighth and the tolerance, as failnext's floor). A provider
    /// probed now below it is behind, however high its head is among those probed: it is not
    /// the reference. Otherwise one that stalled, probed after the others, is the highest head
    /// probed and looks current, and the others' honest heads look implausible against it.
    fn credited_chain(&self, entries: &[SnapshotEntry], learned: Option<Duration>) -> Option<u64> {
        entries
            .iter()
            .enumerate()
            .filter(|(j, e)| *j != self.i && !self.implausible[*j] && e.is_eligible())
            .filter_map(|(j, e)| {
                let seen = e.stamped().map(|s| s.first_seen).or_else(|| e.checked())?;
                let probed = clock::credited_floor(e.height()?, seen, self.at, learned);
                let vouched = self
                    .vouched_of(j)
                    .and_then(|(head, seen)| clock::credited_floor(head, seen, self.at, learned));
                probed.max(vouched)
            })
            .max()
    }

    /// The reference height: of the plausible heads (the probed provider's `probed`, not
    /// when it is `behind`; the others' with what traffic showed), else of every head.
    fn reference(&self, entries: &[SnapshotEntry], probed: Option<u64>, behind: bool) -> Option<u64> {
        let height_of = |j: usize, e: &SnapshotEntry| match j == self.i {
            true => probed,
            false => e.height().map(|h| h.max(self.vouched_of(j).map_or(0, |(v, _)| v))),
        };
        let plausible = entries
            .iter()
            .enumerate()
            .filter(|(j, _)| !self.implausible[*j] && !self.behind_now(*j, behind))
            .filter_map(|(j, e)| height_of(j, e));
        self.rules.reference.of(plausible).or_else(|| {
            self.rules.reference.of(entries.iter().enumerate().filter_map(|(j, e)| height_of(j, e)))
        })
    }

    /// The probed provider's new entry, judged as in [`assemble`] (lag in blocks, then in
    /// seconds, then [`readmission`], then doubt), and the evidence its probe adds.
    fn probed_entry(&self, before: &SnapshotEntry, probe: Probe) -> (SnapshotEntry, Option<bool>) {
        let Probe { outcome, measured, counts, stamp, reference, behind_credited } = probe;
        let held_out = !before.is_waiting() && !before.is_eligible();
        let judged = (!before.is_waiting()).then_some(before);
        let last_good = match outcome {
            Ok(_) => Some(self.at),
            Err(_) => before.last_good(),
        };
        let failed_now = outcome.as_ref().err().map(|f| (f.call(), f.error().kind()));
        let (entry, good) = match outcome {
            Ok(height) => {
                let fitness = if self.implausible[self.i] {
                    Fitness::Implausible
                } else if let Some(age) = self.stale_at(stamp) {
                    Fitness::Stale { age }
                } else {
                    let reference = reference.unwrap_or(height).max(behind_credited.unwrap_or(0));
                    let fitness = Fitness::of_height(height, reference, self.max_lag);
                    within_seconds(fitness, self.block_time, self.rules.max_lag_secs)
                };
                let within = matches!(fitness, Fitness::Fit { .. });
                let (fitness, good) = readmission(fitness, judged, self.rules.readmit_after);
                let entry = SnapshotEntry::probed(before.endpoint().clone(), height, fitness)
                    .with_good_checks(good)
                    .with_head_hash(measured.hash)
                    .with_stamped(stamp);
                (entry, within)
            }
            Err(failure) => (SnapshotEntry::failed(before.endpoint().clone(), failure.shared_error()), false),
        };
        // A held-out provider is re-checked on a backoff, many times a fault: its probes add
        // no evidence (good ones would dilute what traffic found, bad ones repeat it); this
        // one still counts towards its re-admission.
        let evidence = (!held_out).then_some(good);
        let counts = match (held_out, good) {
            (_, true) => Counts { good: counts.good + 1.0, ..counts },
            (false, false) => Counts { bad: counts.bad + 1.0, ..counts },
            (true, false) => counts,
        };
        let share = counts.bad_share();
        let entry = match entry.fitness() {
            Fitness::Fit { behind } if held_out && share > READMIT_BAD_SHARE => {
                entry.with_fitness(Fitness::Doubted { behind })
            }
            _ => entry,
        };
        let entry = carry_probe_health(entry, judged, measured.latency, failed_now)
            .last_good_at(last_good)
            .checked_at(self.at)
            .with_bad_share(Some(share));
        (entry, evidence)
    }

    /// Every entry but the probed one, re-judged against the reference `highest`: demoted at
    /// once when its head turned implausible, stale or lagging, never promoted (that takes
    /// its own probe).
    fn rejudge_others(&self, entries: &mut [SnapshotEntry], highest: u64) {
        for (j, entry) in entries.iter_mut().enumerate().filter(|(j, _)| *j != self.i) {
            let Some(height) = entry.height() else { continue };
            let fresh = if self.implausible[j] {
                Fitness::Implausible
            } else if let Some(age) = self.stale_at(entry.stamped()) {
                Fitness::Stale { age }
            } else {
                // Its height is as old as its probe: credited with the blocks the chain made
                // since (by the learned block time), so that a newer probe of another provider
                // does not make it lag by the time between the two probes. A head its answers
                // showed since counts the same way. And one block for the phase: the head a
                // probe returned was made up to a block time (and the probe's latency) before
                // the probe ended, so a provider following the chain can look one block behind
                // a later probe of another. Its own next probe judges it exactly.
                let vouched = self.vouched.get(j).copied().flatten();
                let height =
                    clock::newest_head(Some((height, entry.checked())), vouched, self.at, self.block_time)
                        .unwrap_or(height);
                let fitness = match Fitness::of_height(height, highest, self.max_lag) {
                    Fitness::Lagging { behind } if behind <= self.max_lag.saturating_add(PHASE_BLOCKS) => {
                        entry.fitness()
                    }
                    fitness => fitness,
                };
                within_seconds(fitness, self.block_time, self.rules.max_lag_secs)
            };
            let rejudged = match (entry.fitness(), fresh) {
                (Fitness::Fit { .. }, fresh) => fresh,
                (Fitness::Readmitting { .. } | Fitness::Doubted { .. }, Fitness::Lagging { behind }) => {
                    Fitness::Lagging { behind }
                }
                (
                    Fitness::Readmitting { .. } | Fitness::Doubted { .. },
                    demoted @ (Fitness::Stale { .. } | Fitness::Implausible),
                ) => demoted,
                (current, _) => current,
            };
            *entry = entry.clone().with_fitness(rejudged);
        }
    }

    /// When the chain was first seen at the reference `highest`: a provider that shows the
    /// same head again (same number, same block) says nothing newer, so its head counts from
    /// when it first showed it, not from its latest probe; and another that reaches it later
    /// (one that lags, probed after the others) is later news of a head the chain already
    /// had. A stalled or lagging provider would otherwise make an old head look current, and
    /// honest higher heads implausible against it. The probed provider counts not when it
    /// is `behind` the others' credited heads.
    fn reference_seen(&self, entries: &[SnapshotEntry], highest: u64, behind: bool) -> Instant {
        entries
            .iter()
            .enumerate()
            .filter(|(j, _)| !self.behind_now(*j, behind))
            .flat_map(|(j, e)| {
                let probed = e
                    .height()
                    .filter(|h| *h >= highest)
                    .and_then(|_| e.stamped().map(|s| s.first_seen).or_else(|| e.checked()));
                let vouched = self.vouched_of(j).filter(|(head, _)| *head >= highest).map(|(_, seen)| seen);
                [probed, vouched]
            })
            .flatten()
            .min()
            .unwrap_or(self.at)
    }
}

/// The agreed head after `entries`: providers probed at different instants often report
/// different heads, so the `previous` agreed head is carried until a newer one is agreed,
/// while the providers that reported it are still eligible at or above it (they still have
/// that block).
fn agreed_after(
    previous: Option<&Snapshot>,
    entries: &[SnapshotEntry],
    rules: Rules,
) -> Option<crate::judging::agreed::AgreedHead> {
    let carried = previous.and_then(Snapshot::agreed).filter(|agreed| {
        let still = |id: &EndpointId| {
            entries.iter().any(|e| {
                e.endpoint() == id && e.is_eligible() && e.height().is_some_and(|h| h >= agreed.number())
            })
        };
        agreed.providers().iter().all(still)
    });
    match (agreement::agree(entries, rules.agreement), carried) {
        (Some(new), Some(old)) if old.number() > new.number() => Some(old.clone()),
        (Some(new), _) => Some(new),
        (None, old) => old.cloned(),
    }
}

//! The claims on the peer table: failnext's best against FallbackLayer's per scenario,
//! the hedge and the paired row's own claims, the defaults row, and the CPU per read.

use super::scenario::{FAULTS, Fault, HEDGE_DELAY, Peer, Row};
use crate::targets::Verdict;

/// The claims on the peer table, per scenario: each side's best configuration (the
/// most correct answers, then the fewest requests to the bad provider, probes included).
pub(crate) fn verdicts(rows: &[Row]) -> Vec<Verdict> {
    let mut out = Vec::new();
    best_of_each_side(rows, &mut out);
    let slow = |p: Peer| rows.iter().find(|r| r.fault == Fault::Slow && r.peer == p);
    hedged_p99(slow(Peer::FailnextHedge), slow(Peer::AlloyHttpBackup), &mut out);
    paired_claims(rows, &mut out);
    paired_p99(slow(Peer::FailnextPaired), slow(Peer::AlloyHttpBackup), &mut out);
    defaults_claims(rows, &mut out);
    healthy_cpu(rows, &mut out);
    out
}

/// Per scenario, failnext's best configuration against FallbackLayer's best: correct answers,
/// and (but when healthy) requests to the bad provider.
fn best_of_each_side(rows: &[Row], out: &mut Vec<Verdict>) {
    let share = |r: &Row| r.correct as f64 / r.reads.max(1) as f64;
    let load = |r: &Row| r.to_bad + r.probes.unwrap_or(0);
    fn best<'a>(
        side: &[&'a Row],
        share: impl Fn(&Row) -> f64,
        load: impl Fn(&Row) -> u64,
    ) -> Option<&'a Row> {
        side.iter().copied().max_by(|a, b| share(a).total_cmp(&share(b)).then(load(b).cmp(&load(a))))
    }
    for fault in FAULTS {
        let here: Vec<&Row> = rows.iter().filter(|r| r.fault == fault).collect();
        let ours: Vec<&Row> = here.iter().copied().filter(|r| r.peer.is_failnext()).collect();
        let theirs: Vec<&Row> = here.iter().copied().filter(|r| r.peer.is_fallback()).collect();
        let (Some(ours), Some(theirs)) = (best(&ours, share, load), best(&theirs, share, load)) else {
            continue;
        };
        out.push(Verdict {
            target: format!(
                "peers, {}: failnext answers correctly at least as often as FallbackLayer",
                fault.name()
            ),
            measured: format!(
                "{} {:.1} % vs {} {:.1} %",
                ours.peer.name(),
                100.0 * share(ours),
                theirs.peer.name(),
                100.0 * share(theirs),
            ),
            met: Some(share(ours) >= share(theirs)),
        });
        if fault != Fault::Healthy {
            out.push(Verdict {
                target: format!(
                    "peers, {}: failnext sends fewer requests to the bad provider (probes included)",
                    fault.name()
                ),
                measured: format!("{} vs {}", load(ours), load(theirs)),
                // Both at zero: neither can send fewer, and failnext sent none.
                met: Some(load(ours) < load(theirs) || load(ours) == 0),
            });
        }
    }
}

/// The slow scenario: the hedged read's p99 against the backup's own.
fn hedged_p99(best: Option<&Row>, backup: Option<&Row>, out: &mut Vec<Verdict>) {
    if let (Some(best), Some(backup)) = (best, backup) {
        let ratio = best.p99_ms / backup.p99_ms;
        out.push(Verdict {
            target: format!(
                "peers, primary 200 ms slower: hedged ({} ms) read p99 ≤ 1.3 × the backup's own p99",
                HEDGE_DELAY.as_millis()
            ),
            measured: format!("{ratio:.3}× ({:.1} vs {:.1} ms)", best.p99_ms, backup.p99_ms),
            met: Some(ratio <= 1.3),
        });
    }
}

/// The paired row: every scenario right, and the bad provider asked only by its breaker's
/// trials and the monitor's probes.
fn paired_claims(rows: &[Row], out: &mut Vec<Verdict>) {
    for r in rows.iter().filter(|r| r.peer == Peer::FailnextPaired) {
        out.push(Verdict {
            target: format!("peers, {}: failnext (paired) answers 100 % correctly", r.fault.name()),
            measured: format!("{}/{}", r.correct, r.reads),
            met: Some(r.correct == r.reads),
        });
        if r.fault != Fault::Healthy {
            out.push(Verdict {
                target: format!(
                    "peers, {}: failnext (paired) sends the bad provider nothing but breaker trials (and probes)",
                    r.fault.name()
                ),
                measured: format!("{} requests, {} trials, +{} probes", r.to_bad, r.trials, r.probes.unwrap_or(0)),
                met: Some(r.to_bad <= r.trials),
            });
        }
    }
}

/// The slow scenario: the paired row's p99 against the backup's own (the slow primary hidden).
fn paired_p99(paired: Option<&Row>, backup: Option<&Row>, out: &mut Vec<Verdict>) {
    if let (Some(paired), Some(backup)) = (paired, backup) {
        let ratio = paired.p99_ms / backup.p99_ms;
        out.push(Verdict {
            target: "peers, primary 200 ms slower: failnext (paired) p99 ≤ 1.1 × the backup's own".into(),
            measured: format!("{ratio:.3}× ({:.1} vs {:.1} ms)", paired.p99_ms, backup.p99_ms),
            met: Some(ratio <= 1.1),
        });
    }
}

/// The defaults row on its own against FallbackLayer's best, per scenario.
fn defaults_claims(rows: &[Row], out: &mut Vec<Verdict>) {
    for fault in FAULTS {
        let share = |r: &Row| r.correct as f64 / r.reads.max(1) as f64;
        let here = rows.iter().filter(|r| r.fault == fault);
        let theirs = here.clone().filter(|r| r.peer.is_fallback()).map(share).fold(0.0, f64::max);
        if let Some(ours) = here.clone().find(|r| r.peer == Peer::Failnext) {
            out.push(Verdict {
                target: format!(
                    "peers, {}: failnext (defaults) ≥ FallbackLayer in correct answers",
                    fault.name()
                ),
                measured: format!("{:.1} % vs {:.1} %", 100.0 * share(ours), 100.0 * theirs),
                met: Some(share(ours) >= theirs),
            });
        }
    }
}

/// Healthy: failnext's transport CPU per read against alloy's `Http` (reported, no target).
fn healthy_cpu(rows: &[Row], out: &mut Vec<Verdict>) {
    let healthy = |p: Peer| rows.iter().find(|r| r.fault == Fault::Healthy && r.peer == p);
    if let (Some(f), Some(a)) = (healthy(Peer::Failnext), healthy(Peer::AlloyHttp)) {
        out.push(Verdict {
            target: "peers, healthy: failnext's transport CPU/read vs alloy Http (see alloy-healthy for the paired figure)".into(),
            measured: format!("{:.1} vs {:.1} µs ({:.3}×)", f.cpu_us, a.cpu_us, f.cpu_us / a.cpu_us),
            met: None,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdicts_take_each_sides_best_configuration() {
        let row = |fault, peer, correct, to_bad, probes| Row {
            fault,
            peer,
            reads: 100,
            correct,
            p50_ms: 1.0,
            p99_ms: 2.0,
            to_bad,
            probes,
            trials: 0,
            total_requests: 0,
            cpu_us: 1.0,
        };
        let rows = [
            row(Fault::Lagging, Peer::Fallback, 10, 100, None),
            row(Fault::Lagging, Peer::FallbackOne, 10, 90, None),
            row(Fault::Lagging, Peer::Failnext, 0, 100, None),
            row(Fault::Lagging, Peer::FailnextPaired, 100, 0, Some(12)),
        ];
        let lagging = verdicts(&rows);
        // Each side's best, then the paired row's own claims, then the defaults row's.
        assert_eq!(lagging.len(), 5, "{lagging:?}");
        assert_eq!(lagging[0].met, Some(true), "{:?}", lagging[0]);
        assert_eq!(lagging[1].measured, "12 vs 90");
        assert_eq!(lagging[1].met, Some(true));
        assert_eq!(lagging[2].met, Some(true), "the paired row is 100 % correct: {:?}", lagging[2]);
        assert_eq!(lagging[3].met, Some(true), "no request, no trial: {:?}", lagging[3]);
        assert_eq!(lagging[4].met, Some(false), "the defaults row, 0 % against 10 %: {:?}", lagging[4]);
        let worse = [
            row(Fault::Unavailable, Peer::Fallback, 100, 5, None),
            row(Fault::Unavailable, Peer::Failnext, 99, 1, None),
        ];
        let worse = verdicts(&worse);
        assert_eq!(worse[0].met, Some(false), "fewer correct answers is not met: {:?}", worse[0]);
        assert_eq!(worse[1].met, Some(true), "1 vs 5 requests to the bad provider");
    }
}

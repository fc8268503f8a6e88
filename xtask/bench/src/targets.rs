//! The targets of issues 6 and 11, checked against the measured medians. Informational: the bench
//! never fails on a miss (no timing assertions anywhere).

use crate::measure::Summary;
use crate::scenarios::{HANG_TIMEOUT, LARGE_BODY, Outcome};
use crate::servers::BIG_JSON_LEN;

/// One target and what the run measured for it.
#[derive(Debug)]
pub(crate) struct Verdict {
    pub(crate) target: String,
    pub(crate) measured: String,
    /// `None`: informational, no limit.
    pub(crate) met: Option<bool>,
}

/// Every target whose scenarios ran. `blocklag` is `None` when that part did not run.
pub(crate) fn evaluate(outcomes: &[Outcome], blocklag: Option<&BlocklagFigures>) -> Vec<Verdict> {
    let mut out = Vec::new();
    healthy_verdicts(outcomes, &mut out);
    alloy_verdicts(outcomes, &mut out);
    refused_verdicts(outcomes, &mut out);
    unavailable_verdicts(outcomes, &mut out);
    body_verdicts(outcomes, &mut out);
    judge_verdicts(outcomes, &mut out);
    hang_verdicts(outcomes, &mut out);
    if let Some(b) = blocklag {
        out.extend(blocklag_verdicts(b));
    }
    out
}

/// The row of `variant` at concurrency `c` in `scenario`, if it ran.
fn find<'a>(outcomes: &'a [Outcome], scenario: &str, c: usize, variant: &str) -> Option<&'a Summary> {
    outcomes
        .iter()
        .filter(|o| o.scenario == scenario)
        .flat_map(|o| o.rows.iter())
        .find(|r| r.concurrency == c && r.variant == variant)
}

/// The healthy scenarios: failnext's throughput, CPU and allocations against the empty
/// stack, and the other middlewares for scale.
fn healthy_verdicts(outcomes: &[Outcome], out: &mut Vec<Verdict>) {
    for (scenario, limit) in [("healthy-post", 3.0), ("healthy-allow", 5.0)] {
        for c in [1, 32] {
            let Some(e) = find(outcomes, scenario, c, "empty") else { continue };
            for variant in ["failover", "failover-policy"] {
                let Some(f) = find(outcomes, scenario, c, variant) else { continue };
                let at = format!("{scenario} c={c}: {variant}");
                out.push(throughput(format!("{at} throughput ≥ 0.99 × empty"), f, e, 0.99));
                let cpu = f.paired(e, |a, b| a.cpu_process_us - b.cpu_process_us);
                out.push(Verdict {
                    target: format!("{at} CPU/req ≤ empty + 1 µs"),
                    measured: format!(
                        "{cpu:+.2} µs process, {:+.2} µs client thread",
                        f.paired(e, |a, b| a.cpu_client_us - b.cpu_client_us)
                    ),
                    met: Some(cpu <= 1.0),
                });
                out.push(Verdict {
                    target: format!("{at} allocs/req ≤ empty + {limit}"),
                    measured: format!("{:+.2} ({:.2} vs {:.2})", f.allocs - e.allocs, f.allocs, e.allocs),
                    met: Some(f.allocs - e.allocs <= limit),
                });
            }
            if let Some(r) = find(outcomes, scenario, c, "retry") {
                out.push(for_scale(format!("{scenario} c={c}: for scale, reqwest-retry vs empty"), r, e));
            }
            if let Some(p) = find(outcomes, scenario, c, "pass-through") {
                let what = "a do-nothing middleware vs empty (the framework's own cost)";
                out.push(for_scale(format!("{scenario} c={c}: for scale, {what}"), p, e));
                if let Some(f) = find(outcomes, scenario, c, "failover") {
                    let what = "failover vs the do-nothing middleware";
                    out.push(for_scale(format!("{scenario} c={c}: for scale, {what}"), f, p));
                }
            }
        }
    }
}

/// alloy-healthy: failnext's transport against alloy's `Http`, and its layers for scale.
fn alloy_verdicts(outcomes: &[Outcome], out: &mut Vec<Verdict>) {
    for c in [1, 32] {
        let Some(a) = find(outcomes, "alloy-healthy", c, "alloy-http") else { continue };
        let at = format!("alloy-healthy c={c}");
        if let Some(f) = find(outcomes, "alloy-healthy", c, "failnext-transport") {
            let cpu = f.paired(a, |f, a| f.cpu_process_us / a.cpu_process_us);
            out.push(Verdict {
                target: format!("{at}: failnext-transport CPU/req ≤ 1.03 × alloy-http, ≤ 2 allocs more"),
                measured: format!(
                    "{cpu:.3}× process ({:.2} vs {:.2} µs), client thread {:.3}×, allocs/req {:+.2} ({:.2} vs {:.2})",
                    f.cpu_process_us,
                    a.cpu_process_us,
                    f.paired(a, |f, a| f.cpu_client_us / a.cpu_client_us),
                    f.allocs - a.allocs,
                    f.allocs,
                    a.allocs
                ),
                met: Some(cpu <= 1.03 && f.allocs - a.allocs <= 2.0),
            });
            let mut info =
                throughput(format!("{at}: failnext-transport throughput vs alloy-http"), f, a, 0.0);
            info.met = None;
            out.push(info);
        }
        if let Some(s) = find(outcomes, "alloy-healthy", c, "failnext-transport-chain") {
            out.push(for_scale(format!("{at}: for scale, failnext-transport-chain vs alloy-http"), s, a));
        }
        if let Some(p) = find(outcomes, "alloy-healthy", c, "alloy-chain-pass-through") {
            let what = "reqwest-middleware under alloy (alloy-chain-pass-through vs alloy-http)";
            out.push(for_scale(format!("{at}: for scale, {what}"), p, a));
            if let Some(s) = find(outcomes, "alloy-healthy", c, "failnext-transport-chain") {
                let what =
                    "failnext above the framework (failnext-transport-chain vs alloy-chain-pass-through)";
                out.push(for_scale(format!("{at}: for scale, {what}"), s, p));
            }
        }
    }
}

/// refused: failing over against going straight to the backup, and once cooled.
fn refused_verdicts(outcomes: &[Outcome], out: &mut Vec<Verdict>) {
    if let (Some(f), Some(b)) =
        (find(outcomes, "refused", 1, "failover"), find(outcomes, "refused", 1, "empty→backup"))
    {
        let extra = f.paired(b, |a, b| a.p50_us - b.p50_us);
        out.push(Verdict {
            target: "refused c=1: failover p50 ≤ straight to backup + 100 µs".into(),
            measured: format!("{extra:+.1} µs (p50 {:.1} vs {:.1} µs)", f.p50_us, b.p50_us),
            met: Some(extra <= 100.0),
        });
    }
    for c in [1, 32] {
        if let (Some(f), Some(b)) =
            (find(outcomes, "refused", c, "failover-cooled"), find(outcomes, "refused", c, "empty→backup"))
        {
            let (lat, rps) =
                (f.paired(b, |a, b| a.p50_us / b.p50_us), f.paired(b, |a, b| a.rps_cpu / b.rps_cpu));
            out.push(Verdict {
                target: format!(
                    "refused c={c}: cooled failover indistinguishable from backup (p50 and req/CPU-s within 3 %)"
                ),
                measured: format!("p50 {lat:.3}×, req/CPU-s {rps:.3}×"),
                met: Some((lat - 1.0).abs() <= 0.03 && (rps - 1.0).abs() <= 0.03),
            });
        }
    }
}

/// unavailable: failover against the application's own loop, and no new connection.
fn unavailable_verdicts(outcomes: &[Outcome], out: &mut Vec<Verdict>) {
    for c in [1, 32] {
        let (Some(f), Some(a)) =
            (find(outcomes, "unavailable", c, "failover"), find(outcomes, "unavailable", c, "app-loop"))
        else {
            continue;
        };
        out.push(throughput(format!("unavailable c={c}: failover throughput ≥ 0.95 × app-loop"), f, a, 0.95));
        out.push(Verdict {
            target: format!("unavailable c={c}: no new connection per request"),
            measured: format!("{:.3} new conns/req (app-loop {:.3})", f.connections, a.connections),
            met: Some(f.connections <= 0.01),
        });
    }
}

/// body-1mib: the bytes allocated per request against the body's size.
fn body_verdicts(outcomes: &[Outcome], out: &mut Vec<Verdict>) {
    for c in [1, 32] {
        let Some(f) = find(outcomes, "body-1mib", c, "failover") else { continue };
        let limit = 0.02 * LARGE_BODY as f64;
        let base = find(outcomes, "body-1mib", c, "empty→backup").map_or(f64::NAN, |b| b.bytes);
        out.push(Verdict {
            target: format!("body-1mib c={c}: bytes allocated/req ≤ 2 % of the body ({limit:.0} B)"),
            measured: format!(
                "{:.0} B ({:.2} %; empty→backup {base:.0} B)",
                f.bytes,
                100.0 * f.bytes / LARGE_BODY as f64
            ),
            met: Some(f.bytes <= limit),
        });
        out.push(Verdict {
            target: format!(
                "body-1mib c={c}: bytes/req above three plain requests (a body copy would add 1 MiB)"
            ),
            measured: format!(
                "{:+.0} B ({:+.2} % of the body)",
                f.bytes - 3.0 * base,
                100.0 * (f.bytes - 3.0 * base) / LARGE_BODY as f64
            ),
            met: None,
        });
    }
}

/// judge-1mib: the JSON-RPC classifier's bytes and allocations per request.
fn judge_verdicts(outcomes: &[Outcome], out: &mut Vec<Verdict>) {
    for c in [1, 32] {
        let (Some(j), Some(f)) = (
            find(outcomes, "judge-1mib", c, "failover-jsonrpc"),
            find(outcomes, "judge-1mib", c, "failover"),
        ) else {
            continue;
        };
        let extra = j.bytes - f.bytes;
        let percent = 100.0 * extra / BIG_JSON_LEN as f64;
        out.push(Verdict {
            target: format!("judge-1mib c={c}: failover-jsonrpc bytes/req ≤ failover + 2 % of the body"),
            measured: format!(
                "{extra:+.0} B ({percent:+.2} % of the {BIG_JSON_LEN} B body; {:.0} vs {:.0} B)",
                j.bytes, f.bytes
            ),
            met: Some(percent <= 2.0),
        });
        out.push(Verdict {
            target: format!("judge-1mib c={c}: allocs/req, failover-jsonrpc vs failover"),
            measured: format!("{:.2} vs {:.2} ({:+.2})", j.allocs, f.allocs, j.allocs - f.allocs),
            met: None,
        });
    }
}

/// hang: how far past the attempt timeout failover answers (no target).
fn hang_verdicts(outcomes: &[Outcome], out: &mut Vec<Verdict>) {
    for c in [1, 32] {
        let Some(f) = find(outcomes, "hang", c, "failover") else { continue };
        let timeout_us = HANG_TIMEOUT.as_secs_f64() * 1e6;
        out.push(Verdict {
            target: format!("hang c={c}: failover p50 − attempt_timeout (no target)"),
            measured: format!("{:+.0} µs over {} ms", f.p50_us - timeout_us, HANG_TIMEOUT.as_millis()),
            met: None,
        });
    }
}

/// The blocklag figures the targets need.
#[derive(Debug)]
pub(crate) struct BlocklagFigures {
    pub(crate) eligible_idle_ns: f64,
    pub(crate) eligible_one_ns: f64,
    pub(crate) eligible_two_ns: f64,
    pub(crate) check_one_ms: f64,
    pub(crate) check_128_ms: f64,
}

fn blocklag_verdicts(b: &BlocklagFigures) -> Vec<Verdict> {
    vec![
        Verdict {
            target: "eligible() ≤ 5 ns per call (1 thread, idle / while checks publish)".into(),
            measured: format!("{:.2} / {:.2} ns", b.eligible_idle_ns, b.eligible_one_ns),
            met: Some(b.eligible_idle_ns <= 5.0 && b.eligible_one_ns <= 5.0),
        },
        Verdict {
            target: "eligible(): no slowdown with two threads while checks publish (≤ 1.1 × one thread)"
                .into(),
            measured: format!(
                "{:.2} vs {:.2} ns ({:.2}×)",
                b.eligible_two_ns,
                b.eligible_one_ns,
                b.eligible_two_ns / b.eligible_one_ns
            ),
            met: Some(b.eligible_two_ns <= 1.1 * b.eligible_one_ns),
        },
        ratio_at_most(
            "check() over 128 providers ≤ 1.2 × one provider".into(),
            b.check_128_ms / b.check_one_ms,
            1.2,
            format!(" ({:.2} vs {:.2} ms)", b.check_128_ms, b.check_one_ms),
        ),
    ]
}

/// Judged on requests per CPU-second (robust to other work on the machine); the wall-clock
/// ratio is shown beside it. Both are paired medians.
/// An information row: throughput, CPU and allocations of `variant` against `base`.
fn for_scale(target: String, variant: &Summary, base: &Summary) -> Verdict {
    Verdict {
        target,
        measured: format!(
            "req/CPU-s {:.3}×, CPU/req {:+.2} µs, allocs/req {:+.2}",
            variant.paired(base, |a, b| a.rps_cpu / b.rps_cpu),
            variant.paired(base, |a, b| a.cpu_process_us - b.cpu_process_us),
            variant.allocs - base.allocs
        ),
        met: None,
    }
}

fn throughput(target: String, variant: &Summary, base: &Summary, limit: f64) -> Verdict {
    let cpu = variant.paired(base, |a, b| a.rps_cpu / b.rps_cpu);
    let wall = variant.paired(base, |a, b| a.rps / b.rps);
    Verdict {
        target,
        measured: format!("{cpu:.3}× per CPU-s (wall-clock {wall:.3}×)"),
        met: Some(cpu >= limit),
    }
}

fn ratio_at_most(target: String, ratio: f64, limit: f64, detail: String) -> Verdict {
    Verdict { target, measured: format!("{ratio:.3}×{detail}"), met: Some(ratio <= limit) }
}

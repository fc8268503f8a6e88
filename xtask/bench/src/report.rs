//! The results: a markdown table (stdout), and `results.md`, `results.json` and `latency.svg`
//! (drawn by `chart.rs`) under `target/bench/`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::blocklag;
use crate::measure::Summary;
use crate::scenarios::{Outcome, Plan};
use crate::targets::Verdict;

/// Everything one run produced.
#[derive(Debug)]
pub(crate) struct Report<'a> {
    pub(crate) plan: Plan,
    /// The CPU the client and server threads were pinned to, if any.
    pub(crate) pinned: Option<usize>,
    /// `/proc/loadavg` (1, 5, 15 min) when the run started: other work on the machine.
    pub(crate) load_at_start: String,
    pub(crate) outcomes: &'a [Outcome],
    pub(crate) blocklag: Result<&'a blocklag::Outcome, String>,
    /// The peer table, or why it did not run.
    pub(crate) peers: Result<&'a [crate::peers::Row], String>,
    pub(crate) verdicts: &'a [Verdict],
}

// ===== markdown =====

impl Report<'_> {
    /// The whole report as markdown.
    pub(crate) fn markdown(&self) -> String {
        let mut md = String::new();
        self.markdown_heading(&mut md);
        self.markdown_scenarios(&mut md);
        self.markdown_peers_blocklag(&mut md);
        self.markdown_targets(&mut md);
        md
    }

    /// The heading: the run's size, the machine, and how to read the tables.
    fn markdown_heading(&self, md: &mut String) {
        let mode = if self.plan.quick { "quick" } else { "full" };
        let _ = writeln!(
            md,
            "## failnext bench ({mode}: {} round(s), medians; {} cores, load average {} at start)\n\n\
             Client: one current-thread tokio runtime on the main thread; servers: hyper on their own \
             thread and runtime, loopback; {}. Variants run interleaved, the order rotated each round. \
             `(n×)` is the ratio to the first row of the same concurrency; the targets compare variants \
             round by round (paired medians). req/CPU-s: requests per second of process CPU time, \
             the throughput of the pinned CPU without the time other work on the machine took from \
             it (targets on throughput are judged on it; wall-clock shown too). CPU: the process and thread \
             CPU clocks (getrusage's figures at ns resolution), whole process (client + servers) and \
             client thread alone. Allocations: the client's only. \
             Peak RSS is the process high-water mark, so it only grows through the run.\n",
            self.plan.rounds,
            crate::os::cpu_count(),
            self.load_at_start,
            match self.pinned {
                Some(cpu) => format!("both threads pinned to CPU {cpu}"),
                None => "threads not pinned".to_owned(),
            },
        );
    }

    /// One table per scenario, a row per concurrency and variant, with the batch sizes.
    fn markdown_scenarios(&self, md: &mut String) {
        for outcome in self.outcomes.chunk_by(|a, b| a.scenario == b.scenario) {
            let _ = writeln!(md, "### {}: {}\n", outcome[0].scenario, outcome[0].about);
            md.push_str(
                "| c | variant | req/s | req/CPU-s | p50 µs | p99 µs | CPU µs/req | client CPU µs/req | allocs/req | \
                 bytes/req | new conns/req | peak heap KiB | peak RSS MiB | errors |\n\
                 |--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n",
            );
            for o in outcome {
                let base = &o.rows[0];
                for r in &o.rows {
                    let _ = writeln!(
                        md,
                        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.3} | {} | {} | {} |",
                        r.concurrency,
                        r.variant,
                        cell(r.rps, base.rps),
                        cell(r.rps_cpu, base.rps_cpu),
                        cell(r.p50_us, base.p50_us),
                        cell(r.p99_us, base.p99_us),
                        cell(r.cpu_process_us, base.cpu_process_us),
                        cell(r.cpu_client_us, base.cpu_client_us),
                        cell(r.allocs, base.allocs),
                        cell(r.bytes, base.bytes),
                        r.connections,
                        cell(r.peak_heap_kib, base.peak_heap_kib),
                        cell(r.max_rss_mib, base.max_rss_mib),
                        r.errors,
                    );
                }
            }
            let sizes: Vec<String> = outcome
                .iter()
                .map(|o| format!("c={}: {}", o.rows[0].concurrency, o.requests_per_batch))
                .collect();
            let _ = writeln!(md, "\nRequests per batch: {}.\n", sizes.join(", "));
        }
    }

    /// The peer table and the blocklag table, or why they did not run.
    fn markdown_peers_blocklag(&self, md: &mut String) {
        match &self.peers {
            Ok(rows) => md.push_str(&crate::peers::markdown(rows, self.plan.quick)),
            Err(why) => {
                let _ = writeln!(md, "### peers\n\nNot measured: {why}\n");
            }
        }
        md.push('\n');
        match &self.blocklag {
            Ok(b) => blocklag_markdown(md, b),
            Err(why) => {
                let _ = writeln!(md, "### blocklag\n\nNot measured: {why}\n");
            }
        }
    }

    /// The targets and their verdicts.
    fn markdown_targets(&self, md: &mut String) {
        md.push_str("### Targets (issues 6, 11 and 13)\n\n| target | measured | verdict |\n|---|---|---|\n");
        for v in self.verdicts {
            let verdict = match v.met {
                Some(true) => "met",
                Some(false) => "**not met**",
                None => "info",
            };
            let _ = writeln!(md, "| {} | {} | {verdict} |", v.target, v.measured);
        }
    }
}

fn blocklag_markdown(md: &mut String, b: &blocklag::Outcome) {
    md.push_str(
        "### blocklag: check() over N providers, each answering after 20 ms\n\n\
         | providers | median ms | p99 ms | × 1 provider | client CPU ms/check | failed checks |\n\
         |--:|--:|--:|--:|--:|--:|\n",
    );
    let one = b.checks.first().map_or(f64::NAN, |c| c.median_ms);
    for c in &b.checks {
        let _ = writeln!(
            md,
            "| {} | {:.2} | {:.2} | {:.3} | {:.2} | {} |",
            c.providers,
            c.median_ms,
            c.p99_ms,
            c.median_ms / one,
            c.cpu_ms,
            c.failed_checks
        );
    }
    md.push_str(
        "\n### blocklag: Monitor::eligible()\n\n\
         | mode | threads | ns/call (thread CPU) | ns/call (wall) | publications per round |\n\
         |---|--:|--:|--:|--:|\n",
    );
    for e in &b.eligible {
        let _ = writeln!(
            md,
            "| {} | {} | {:.2} | {:.2} | {:.0} |",
            e.mode, e.threads, e.ns_cpu, e.ns_wall, e.publications
        );
    }
    if let Some(e) = b.eligible.first() {
        let _ = writeln!(md, "\n{} calls per thread per round.\n", e.calls_per_thread);
    }
}

/// `value (ratio×)`, or just `value` for the reference row or a zero reference.
fn cell(value: f64, base: f64) -> String {
    let v = num(value);
    if base == 0.0 || !base.is_finite() || value == base { v } else { format!("{v} ({:.2}×)", value / base) }
}

fn num(x: f64) -> String {
    match x.abs() {
        a if a >= 100.0 => format!("{x:.0}"),
        a if a >= 10.0 => format!("{x:.1}"),
        _ => format!("{x:.2}"),
    }
}

// ===== JSON =====

impl Report<'_> {
    /// The whole report as JSON.
    pub(crate) fn json(&self) -> Value {
        let scenarios: Vec<Value> = self
            .outcomes
            .iter()
            .map(|o| {
                let base = &o.rows[0];
                json!({
                    "scenario": o.scenario,
                    "about": o.about,
                    "concurrency": base.concurrency,
                    "requests_per_batch": o.requests_per_batch,
                    "reference": base.variant,
                    "rows": o.rows.iter().map(|r| row_json(r, base)).collect::<Vec<_>>(),
                })
            })
            .collect();
        let blocklag = match &self.blocklag {
            Ok(b) => json!({
                "probe_delay_ms": blocklag::PROBE_DELAY.as_millis() as u64,
                "checks": b.checks.iter().map(|c| json!({
                    "providers": c.providers, "median_ms": c.median_ms, "p99_ms": c.p99_ms,
                    "client_cpu_ms_per_check": c.cpu_ms,
                    "failed_checks": c.failed_checks, "checks": c.durations.len(),
                })).collect::<Vec<_>>(),
                "eligible": b.eligible.iter().map(|e| json!({
                    "mode": e.mode, "threads": e.threads, "calls_per_thread": e.calls_per_thread,
                    "ns_per_call_cpu": e.ns_cpu, "ns_per_call_wall": e.ns_wall,
                    "publications_per_round": e.publications,
                })).collect::<Vec<_>>(),
            }),
            Err(why) => json!({ "skipped": why }),
        };
        json!({
            "mode": if self.plan.quick { "quick" } else { "full" },
            "rounds": self.plan.rounds,
            "load_average_at_start": self.load_at_start,
            "pinned_cpu": self.pinned,
            "cores": crate::os::cpu_count(),
            "scenarios": scenarios,
            "blocklag": blocklag,
            "peers": match &self.peers {
                Ok(rows) => crate::peers::json(rows),
                Err(why) => json!({ "skipped": why }),
            },
            "targets": self.verdicts.iter().map(|v| json!({
                "target": v.target, "measured": v.measured, "met": v.met,
            })).collect::<Vec<_>>(),
        })
    }
}

fn row_json(r: &Summary, base: &Summary) -> Value {
    let ratio = |v: f64, b: f64| if b == 0.0 { Value::Null } else { json!(v / b) };
    json!({
        "variant": r.variant,
        "rounds": r.rounds,
        "requests": r.requests,
        "errors": r.errors,
        "requests_per_s": r.rps,
        "requests_per_cpu_s": r.rps_cpu,
        "p50_us": r.p50_us,
        "p99_us": r.p99_us,
        "cpu_process_us_per_request": r.cpu_process_us,
        "cpu_client_us_per_request": r.cpu_client_us,
        "allocations_per_request": r.allocs,
        "bytes_allocated_per_request": r.bytes,
        "new_connections_per_request": r.connections,
        "peak_heap_kib": r.peak_heap_kib,
        "peak_rss_mib": r.max_rss_mib,
        "ratio_to_reference": {
            "requests_per_s": ratio(r.rps, base.rps),
            "requests_per_cpu_s": ratio(r.rps_cpu, base.rps_cpu),
            "p50_us": ratio(r.p50_us, base.p50_us),
            "p99_us": ratio(r.p99_us, base.p99_us),
            "cpu_process_us_per_request": ratio(r.cpu_process_us, base.cpu_process_us),
            "cpu_client_us_per_request": ratio(r.cpu_client_us, base.cpu_client_us),
            "allocations_per_request": ratio(r.allocs, base.allocs),
            "bytes_allocated_per_request": ratio(r.bytes, base.bytes),
            "peak_heap_kib": ratio(r.peak_heap_kib, base.peak_heap_kib),
            "peak_rss_mib": ratio(r.max_rss_mib, base.max_rss_mib),
        },
    })
}

// ===== files =====

/// Where the files go: `$CARGO_TARGET_DIR/bench` or the workspace's `target/bench`, with a
/// `quick/` subfolder for quick runs so CI never overwrites a full run's results.
pub(crate) fn out_dir(quick: bool) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2);
        root.unwrap_or(Path::new(".")).join("target")
    });
    let dir = target.join("bench");
    if quick { dir.join("quick") } else { dir }
}

/// Writes `results.json`, `latency.svg` and `results.md` into `dir`; returns their paths.
pub(crate) fn write(report: &Report<'_>, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let files = [
        ("results.json", serde_json::to_string_pretty(&report.json()).unwrap_or_default()),
        ("latency.svg", crate::chart::svg(report.outcomes, report.blocklag.as_ref().ok().copied())),
        ("results.md", report.markdown()),
    ];
    let mut paths = Vec::new();
    for (name, contents) in files {
        let path = dir.join(name);
        std::fs::write(&path, contents)?;
        paths.push(path);
    }
    Ok(paths)
}

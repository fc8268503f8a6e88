//! The soak's report: figures and the table of checks, printed with `Display`.

use std::fmt;
use std::time::Duration;

use crate::soak::Config;
use crate::soak::checks::{Check, Tally, Violations, triggers};
use crate::soak::measure::MeasureReport;
use crate::soak::phase::SimCounts;
use crate::soak::watch::{Observed, SLOW_ELIGIBLE};
use failnext_loopback::resources::Usage;

/// Everything a soak run saw. `Display` prints it as tables; [`violations`](Report::violations)
/// is what decides pass or fail.
pub struct Report {
    pub(crate) config: Config,
    pub(crate) elapsed: Duration,
    pub(crate) warmup_elapsed: Duration,
    pub(crate) main_elapsed: Duration,
    pub(crate) violations: Violations,
    pub(crate) tally: Tally,
    pub(crate) seen: Observed,
    pub(crate) sim: SimCounts,
    pub(crate) hook_eligible_max: Duration,
    pub(crate) baseline: Usage,
    pub(crate) after: Usage,
    /// Memory allowed for the transactions the simulated chain stored in the main phase.
    pub(crate) chain_allowance: u64,
    /// The measures of the configurations, after the checked phases, in order.
    pub(crate) measure: Vec<MeasureReport>,
    /// The liar's table (issue 31), when it ran.
    pub(crate) liar: Option<Vec<failnext_liar::Row>>,
}

impl Report {
    /// Number of violations found, over every check. Zero is a pass.
    pub fn violations(&self) -> u64 {
        self.violations.total()
    }

    /// Requests sent (warm-up and main phase).
    pub fn requests(&self) -> u64 {
        self.tally.requests
    }

    /// The seed the run used.
    pub fn seed(&self) -> u64 {
        self.config.seed
    }

    /// The first findings, one line each (at most 25).
    pub fn findings(&self) -> &[String] {
        self.violations.examples()
    }

    /// The liar's rows (a provider lying in well-formed ways among three honest ones failing
    /// by seeded spells), when it ran.
    pub fn liar(&self) -> Option<&[failnext_liar::Row]> {
        self.liar.as_deref()
    }

    /// The measures of the configurations, one per scenario run (empty when none ran).
    pub fn measures(&self) -> &[MeasureReport] {
        &self.measure
    }
}

impl fmt::Debug for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Report")
            .field("seed", &self.config.seed)
            .field("requests", &self.tally.requests)
            .field("violations", &self.violations.total())
            .finish_non_exhaustive()
    }
}

fn mib(bytes: Option<u64>) -> String {
    bytes.map_or_else(|| "n/a".to_owned(), |b| format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0)))
}

fn opt<T: fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "n/a".to_owned(), |v| v.to_string())
}

fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

fn row(f: &mut fmt::Formatter<'_>, label: &str, value: impl fmt::Display) -> fmt::Result {
    writeln!(f, "  {label:<46} {value:>12}")
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_header(f)?;
        self.fmt_faults(f)?;
        self.fmt_requests(f)?;
        self.fmt_outcomes(f)?;
        self.fmt_attempts(f)?;
        self.fmt_monitor(f)?;
        self.fmt_sim(f)?;
        self.fmt_resources(f)?;
        self.fmt_checks(f)?;
        self.fmt_measures(f)?;
        Ok(())
    }
}

impl Report {
    /// The run: profile, seed, sizes, settings and durations.
    fn fmt_header(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.config;
        let t = &self.tally;
        let rate = c.requests as f64 / self.main_elapsed.as_secs_f64().max(1e-9);
        writeln!(
            f,
            "failnext soak: profile {}, seed {} (re-run with --seed {})",
            c.profile.name(),
            c.seed,
            c.seed
        )?;
        writeln!(
            f,
            "  {} requests ({} warm-up + {} main), concurrency {}, {} providers",
            t.requests, c.warmup_requests, c.requests, c.concurrency, c.providers
        )?;
        writeln!(
            f,
            "  attempt_timeout {:?}, probe_timeout {:?}, cooldown {}x/{:?}, max_lag {}, check every {:?}, fault every {}..{} ms, think 0..{:?}",
            c.attempt_timeout,
            c.probe_timeout,
            c.cooldown.0,
            c.cooldown.1,
            c.max_lag,
            c.check_interval,
            c.fault_wait_ms.0,
            c.fault_wait_ms.1,
            c.think_max
        )?;
        writeln!(
            f,
            "  elapsed {} (warm-up {}, main {}, {rate:.0} requests/s in the main phase)",
            secs(self.elapsed),
            secs(self.warmup_elapsed),
            secs(self.main_elapsed)
        )?;
        Ok(())
    }

    /// The fault switches by kind.
    fn fmt_faults(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.seen;
        writeln!(f, "\nFault switches by kind (random provider, seeded schedule)")?;
        for (kind, n) in &s.faults {
            row(f, &kind.to_string(), n)?;
        }
        row(f, "total", s.faults.values().sum::<u64>())?;
        if s.rebind_failures > 0 {
            row(f, "port rebind failures after down (sim race)", s.rebind_failures)?;
        }
        Ok(())
    }

    /// The requests by kind.
    fn fmt_requests(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = &self.tally;
        writeln!(f, "\nRequests by kind")?;
        for (kind, n) in &t.by_kind {
            row(f, kind, n)?;
        }
        row(f, "with exclusions", t.excluded_requests)?;
        row(
            f,
            "with a preference (served first when usable)",
            format!("{} ({})", t.preferred_requests, t.preferred_first),
        )?;
        Ok(())
    }

    /// How each request ended, and then its body.
    fn fmt_outcomes(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = &self.tally;
        writeln!(f, "\nOutcomes (one per request)")?;
        let triggers = triggers();
        for (status, n) in &t.responses {
            let note = if triggers.is_trigger(*status) { " (retained trigger)" } else { "" };
            row(f, &format!("response {status}{note}"), n)?;
        }
        row(f, "error: failover (every attempt failed)", t.errors_failover)?;
        row(f, "error: no usable endpoint", t.errors_no_usable)?;
        row(f, "error: unknown endpoint", t.errors_unknown)?;
        row(f, "error: not a failnext::Error", t.errors_untyped)?;
        row(f, "cancelled by the soak before start", t.cancelled_before_start)?;
        row(f, "cancelled by the soak in flight", t.cancelled_in_flight)?;
        row(f, "hung (no end within the safety bound)", t.hung)?;
        row(f, "then: body read", t.body_read)?;
        for (kind, n) in &t.body_errors {
            row(f, &format!("then: body error ({kind})"), n)?;
        }
        row(f, "then: cancelled by the soak while reading body", t.cancelled_in_body)?;
        Ok(())
    }

    /// The attempts: their answers and failures, per request, the longest.
    fn fmt_attempts(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = &self.tally;
        writeln!(f, "\nAttempts")?;
        for (status, n) in &t.attempts_status {
            row(f, &format!("answered {status}"), n)?;
        }
        for (kind, n) in &t.attempts_error {
            row(f, &format!("failed: {kind}"), n)?;
        }
        let per: Vec<String> = t.attempts_per_request.iter().map(|(k, n)| format!("{k}:{n}")).collect();
        row(f, "attempts per request (count:requests)", per.join(" "))?;
        row(f, "longest attempt (Attempt event elapsed)", format!("{:?}", t.longest_attempt))?;
        row(f, "longest send() (all attempts)", format!("{:?}", t.longest_send))?;
        row(f, "cooldown skips", t.cooldown_skips)?;
        row(f, "not replayable (streaming body) stops", t.not_replayable)?;
        row(
            f,
            "eligibility answers: eligible / ineligible",
            format!("{} / {}", t.asked_eligible, t.asked_ineligible),
        )?;
        Ok(())
    }

    /// The monitor: its checks and probes, and the observers' reads.
    fn fmt_monitor(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.seen;
        writeln!(f, "\nMonitor")?;
        row(f, "checks published (all probes ok)", s.checks_ok)?;
        row(f, "checks published (some probes failed)", s.checks_partial)?;
        row(f, "checks unpublished (every probe failed)", s.checks_unpublished)?;
        row(f, "checks dropped midway by the soak", s.checks_cancelled)?;
        row(f, "longest check", format!("{:?}", s.check_max))?;
        for (kind, n) in &s.probe_errors {
            row(f, &format!("probe failures: {kind}"), n)?;
        }
        row(
            f,
            "snapshot reads by observers (distinct)",
            format!("{} ({})", s.snapshot_reads, s.snapshots_seen),
        )?;
        row(f, "eligible() calls on the reader thread", s.eligible_calls)?;
        row(f, "  longest", format!("{:?}", s.eligible_max))?;
        row(f, &format!("  over {SLOW_ELIGIBLE:?}"), s.eligible_slow)?;
        row(f, "longest eligible() inside failnext's hook", format!("{:?}", self.hook_eligible_max))?;
        Ok(())
    }

    /// What the simulator answered, received and was dispatched, by kind.
    fn fmt_sim(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = &self.tally;
        writeln!(f, "\nSimulator counts: answered <= received <= dispatched (<= requests)")?;
        let sim = [
            (
                "writes (eth_sendRawTransaction)",
                t.write_responses,
                self.sim.writes,
                t.write_dispatches,
                Some(t.write_requests),
            ),
            (
                "streams (eth_getBalance)",
                t.stream_responses,
                self.sim.streams,
                t.stream_dispatches,
                Some(t.stream_requests),
            ),
            ("reads (eth_call)", t.read_responses, self.sim.reads, t.read_dispatches, None),
        ];
        for (what, answered, received, dispatched, requests) in sim {
            let requests = requests.map_or_else(String::new, |r| format!(" <= {r}"));
            row(f, what, format!("{answered} <= {received} <= {dispatched}{requests}"))?;
        }
        Ok(())
    }

    /// Resources: baseline, peak and after, the RSS allowed and its course.
    fn fmt_resources(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.config;
        let s = &self.seen;
        writeln!(
            f,
            "\nResources                                         baseline          peak         after"
        )?;
        let (b, a) = (&self.baseline, &self.after);
        writeln!(
            f,
            "  {:<42} {:>12} {:>13} {:>13}",
            "tokio tasks alive",
            opt(b.tasks),
            s.peak_tasks,
            opt(a.tasks)
        )?;
        writeln!(
            f,
            "  {:<42} {:>12} {:>13} {:>13}",
            "tcp connections (client/server ends)",
            opt(b.connections),
            s.peak_connections,
            opt(a.connections)
        )?;
        writeln!(f, "  {:<42} {:>12} {:>13} {:>13}", "open file descriptors", opt(b.fds), "", opt(a.fds))?;
        writeln!(
            f,
            "  {:<42} {:>12} {:>13} {:>13}",
            "resident memory (RSS)",
            mib(b.rss),
            mib(Some(s.peak_rss)),
            mib(a.rss)
        )?;
        writeln!(
            f,
            "  RSS growth {} allowed: tolerance {} + chain transactions kept by the simulator {} ({} B each)",
            mib(Some(c.memory_tolerance + self.chain_allowance)),
            mib(Some(c.memory_tolerance)),
            mib(Some(self.chain_allowance)),
            crate::soak::TX_ALLOWANCE
        )?;
        if !s.rss_timeline.is_empty() {
            // At most ten evenly spaced readings of the main phase.
            let n = s.rss_timeline.len();
            let step = n.div_ceil(10).max(1);
            let points: Vec<String> = s
                .rss_timeline
                .iter()
                .enumerate()
                .filter(|(i, _)| i % step == 0 || *i == n - 1)
                .map(|(i, b)| format!("{i}s:{:.1}", *b as f64 / (1024.0 * 1024.0)))
                .collect();
            writeln!(f, "  RSS over the main phase (MiB): {}", points.join(" "))?;
        }
        Ok(())
    }

    /// The table of checks, and the first findings.
    fn fmt_checks(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "\n  {:<50} {:>10} {:>11}", "Check", "checked", "violations")?;
        writeln!(f, "  {}", "-".repeat(73))?;
        for check in Check::ALL {
            let (checked, broken) = self.violations.count(check);
            writeln!(f, "  {:<50} {checked:>10} {broken:>11}", check.label())?;
        }
        writeln!(f, "  {}", "-".repeat(73))?;
        writeln!(f, "  {:<50} {:>10} {:>11}", "TOTAL", "", self.violations.total())?;
        if !self.violations.examples().is_empty() {
            writeln!(f, "\nFirst findings:")?;
            for e in self.violations.examples() {
                writeln!(f, "  - {e}")?;
            }
        }
        Ok(())
    }

    /// The measures, and issue 20's targets.
    fn fmt_measures(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for measured in &self.measure {
            write!(f, "{measured}")?;
        }
        let targets: Vec<_> = self.measure.iter().flat_map(MeasureReport::targets).collect();
        if !targets.is_empty() {
            writeln!(f, "\nIssue 20 targets, paired configuration (reported, not violations)")?;
            for t in &targets {
                writeln!(f, "  {t}")?;
            }
            let met = targets.iter().filter(|t| t.met).count();
            writeln!(f, "  {met} of {} targets met", targets.len())?;
        }
        if let Some(rows) = &self.liar {
            let about = format!(
                "The three honest providers each failing by their own seeded spells of {:?} (half of them \
                 a 503, a 429, a reset, a cut body, a malformed body, a -32005 or -32603 error, or a slow \
                 answer; all three at once at times). {} rounds, seed {}.",
                self.config.liar_spell, self.config.liar_rounds, self.config.seed
            );
            writeln!(f, "\n{}", failnext_liar::markdown(rows, &about))?;
        }
        Ok(())
    }
}

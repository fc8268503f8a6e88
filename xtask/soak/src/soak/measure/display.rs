//! A measure's report as text: the scenario and its faults, one row of figures per
//! configuration, each configuration's misses, and the chain followers.

use std::fmt;
use std::time::Duration;

use super::{HEAD_TOLERANCE, MeasureReport, Scenario};

/// `99.50% (398/400)`, or `n/a (0/0)` of nothing.
fn share(percent: f64, n: u64, of: u64) -> String {
    if of == 0 { format!("n/a ({n}/{of})") } else { format!("{percent:.2}% ({n}/{of})") }
}

/// Milliseconds with one decimal, or `n/a`.
pub(super) fn ms(d: Option<Duration>) -> String {
    d.map_or_else(|| "n/a".to_owned(), |d| format!("{:.1}", d.as_secs_f64() * 1000.0))
}

impl fmt::Display for MeasureReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_scenario(f)?;
        self.fmt_figures(f)?;
        self.fmt_misses(f)?;
        self.fmt_followers(f)?;
        if self.elapsed < Duration::from_secs(60) && matches!(self.run.scenario, Scenario::Flapping { .. }) {
            writeln!(
                f,
                "  (a short measure: the reference's 30 s cooldown has not cycled; figures are indicative)"
            )?;
        }
        Ok(())
    }
}

impl MeasureReport {
    /// The measure's heading: its scenario, length, rate, and the faults it saw.
    fn fmt_scenario(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "\nMeasure, {}: eth_blockNumber reads answered correctly (a head within {HEAD_TOLERANCE} blocks, right chain)",
            self.run.scenario
        )?;
        writeln!(
            f,
            "  {:.1} s, configurations interleaved, {} reads/s each (open loop)",
            self.elapsed.as_secs_f64(),
            self.rate
        )?;
        let shares: Vec<String> = self.faulty.iter().map(|s| format!("{:.0} %", s * 100.0)).collect();
        writeln!(f, "  time in a fault per provider: {}", shares.join(", "))?;
        let windows: Vec<String> = self.windows.iter().map(|(k, n)| format!("{k}: {n}")).collect();
        writeln!(f, "  fault windows: {}", windows.join(", "))?;
        Ok(())
    }

    /// The table of figures, one row per configuration, and its legend.
    fn fmt_figures(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "\n  {:<20} {:>24} {:>24} {:>13} {:>8} {:>9} {:>7} {:>7} {:>8}",
            "configuration",
            "correct of answerable",
            "correct of counted",
            "correct/all",
            "req/read",
            "probes/s",
            "p50 ms",
            "p99 ms",
            "refused"
        )?;
        for (subject, fig) in &self.figures {
            writeln!(
                f,
                "  {:<20} {:>24} {:>24} {:>13} {:>8.3} {:>9} {:>7} {:>7} {:>8}",
                subject.name(),
                share(fig.answerable_percent(), fig.correct_answerable, fig.answerable),
                share(fig.percent(), fig.correct, fig.counted),
                format!("{}/{}", fig.correct_all, fig.reads),
                fig.requests_per_read(),
                fig.probes_per_provider_sec.map_or_else(|| "-".to_owned(), |p| format!("{p:.3}")),
                ms(fig.p50),
                ms(fig.p99),
                fig.refused_hits
            )?;
        }
        writeln!(
            f,
            "  (answerable: some provider healthy throughout; counted: one also eligible throughout; req/read: attempts per read;\n   probes/s: its own monitor's probes per provider per second;\n   p50/p99: latency of the reads answered correctly; refused: attempts that reached a provider while it was refused)"
        )?;
        Ok(())
    }

    /// Per configuration: what it is, and its answerable reads not answered correctly by
    /// cause, its extra attempts and its slow correct reads.
    fn fmt_misses(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (subject, fig) in &self.figures {
            writeln!(
                f,
                "  {} = {}; answerable reads not answered correctly (of them counted):",
                subject.name(),
                subject.describe()
            )?;
            if fig.misses.is_empty() {
                writeln!(f, "    none")?;
            }
            for (why, (n, counted)) in &fig.misses {
                writeln!(f, "    {:<46} {n:>10} {:>12}", why.to_string(), format!("({counted})"))?;
            }
            if !fig.extra.is_empty() {
                writeln!(f, "    attempts beyond the first, by the first attempt's provider:")?;
                for (why, n) in &fig.extra {
                    writeln!(f, "      {why:<44} {n:>10}")?;
                }
            }
            if !fig.slow.is_empty() {
                writeln!(f, "    correct reads over 100 ms:")?;
                for (why, n) in &fig.slow {
                    writeln!(f, "      {why:<44} {n:>10}")?;
                }
            }
        }
        Ok(())
    }

    /// The chain followers' lines and their problems.
    fn fmt_followers(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.followed.is_empty() {
            writeln!(f, "\n  Chain followers over the same providers and faults (each its own transport):")?;
        }
        for (subject, followed) in &self.followed {
            writeln!(f, "  {:<20} {followed}", subject.name())?;
            for problem in &followed.problems {
                writeln!(f, "    {problem}")?;
            }
        }
        Ok(())
    }
}

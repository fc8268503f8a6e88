//! `cargo xtask callgrind`: the healthy path's cost in instructions, counted by valgrind's
//! callgrind, per request, beyond the baseline of the same run: the middleware beyond a
//! do-nothing middleware (`healthy-post`: `failover` vs `pass-through`), the alloy transport
//! beyond alloy's own `Http` (`alloy-healthy`: `failnext-transport` vs `alloy-http`).
//!
//! Each variant runs alone in the release bench (`--quick --no-pin`) twice, with 3 and with 27
//! rounds; what the second run counts more, over the requests it makes more, is the cost of a
//! request, without the process's start, the servers' set-up and the report. Whole process:
//! the loopback server's instructions are in both sides and cancel out. A copy of 2 KiB or
//! more is one `rep movsb`, which callgrind counts per byte: moving a large future shows.
//!
//! The profiles stay in `target/callgrind/` for `callgrind_annotate`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::steps::{DynError, cargo, project_root, say, target_dir};

/// The pairs measured: (scenario, the variant measured, the baseline it is measured against).
const PAIRS: [(&str, &str, &str); 2] =
    [("healthy-post", "failover", "pass-through"), ("alloy-healthy", "failnext-transport", "alloy-http")];

/// The rounds of the short and the long run.
const ROUNDS: (u32, u32) = (3, 27);

pub(crate) fn callgrind() -> Result<(), DynError> {
    ensure_valgrind()?;
    cargo(&["build", "--release", "-p", "failnext-bench"], &[])?;
    let bench = target_dir().join("release").join("failnext-bench");
    let out = target_dir().join("callgrind");
    std::fs::create_dir_all(&out)?;
    say(
        "| scenario | variant | instructions/request | baseline | instructions/request | beyond it | ratio |",
    );
    say("|---|---|--:|---|--:|--:|--:|");
    for (scenario, variant, baseline) in PAIRS {
        let measured = per_request(&bench, &out, scenario, variant)?;
        let base = per_request(&bench, &out, scenario, baseline)?;
        say(&format!(
            "| {scenario} | {variant} | {measured:.0} | {baseline} | {base:.0} | {:+.0} | {:.3}× |",
            measured - base,
            measured / base
        ));
    }
    say(&format!("profiles: {} (callgrind_annotate FILE)", out.display()));
    Ok(())
}

/// Instructions per request of `variant` of `scenario`: the long run's count less the short
/// one's, over the requests the long run makes more.
fn per_request(bench: &Path, out: &Path, scenario: &str, variant: &str) -> Result<f64, DynError> {
    let (short, short_requests) = run(bench, out, scenario, variant, ROUNDS.0)?;
    let (long, long_requests) = run(bench, out, scenario, variant, ROUNDS.1)?;
    let more = long_requests.saturating_sub(short_requests);
    if more == 0 || long < short {
        return Err(format!("{scenario}/{variant}: the long run counted no more than the short one").into());
    }
    Ok((long - short) as f64 / more as f64)
}

/// One run under callgrind: its instruction count and the requests it made.
fn run(bench: &Path, out: &Path, scenario: &str, variant: &str, rounds: u32) -> Result<(u64, u64), DynError> {
    let profile: PathBuf = out.join(format!("{scenario}.{variant}.{rounds}"));
    let output = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", profile.display()))
        .arg(bench)
        .args(["--scenario", scenario, "--variant", variant, "--quick", "--no-pin", "--rounds"])
        .arg(rounds.to_string())
        .current_dir(project_root())
        .output()?;
    if !output.status.success() {
        return Err(format!("valgrind on {scenario}/{variant}: {}", output.status).into());
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let per_round = requests_per_round(&stdout).ok_or_else(|| {
        format!("{scenario}/{variant}: no \"Requests per batch\" line in the bench's report")
    })?;
    let counted = summary(&std::fs::read_to_string(&profile)?)
        .ok_or_else(|| format!("{}: no summary line", profile.display()))?;
    Ok((counted, per_round * u64::from(rounds)))
}

/// The instruction count of a callgrind profile: its `summary:` line.
fn summary(profile: &str) -> Option<u64> {
    profile.lines().find_map(|line| line.strip_prefix("summary:")?.trim().parse().ok())
}

/// The requests of one round, from the bench's "Requests per batch: c=1: 20, c=32: 64." line.
fn requests_per_round(report: &str) -> Option<u64> {
    let line = report.lines().find_map(|line| line.strip_prefix("Requests per batch:"))?;
    line.trim_end_matches('.')
        .split(',')
        .map(|part| part.rsplit(':').next()?.trim().parse::<u64>().ok())
        .sum()
}

/// Installs valgrind (the Debian package) when it is missing.
fn ensure_valgrind() -> Result<(), DynError> {
    if Command::new("valgrind").arg("--version").output().is_ok_and(|o| o.status.success()) {
        return Ok(());
    }
    say("xtask: valgrind is missing; installing the Debian package");
    for args in [&["update"][..], &["install", "-y", "valgrind"][..]] {
        let status = Command::new("apt-get").args(args).status()?;
        if !status.success() {
            return Err(format!("apt-get {}: {status}", args.join(" ")).into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profiles_count_is_its_summary_line() {
        assert_eq!(summary("events: Ir\nsummary: 34633589\ntotals: 34633589\n"), Some(34_633_589));
        assert_eq!(summary("events: Ir\n"), None);
    }

    #[test]
    fn a_round_makes_the_requests_of_every_concurrency() {
        let report = "...\nRequests per batch: c=1: 20, c=32: 64.\n";
        assert_eq!(requests_per_round(report), Some(84));
        assert_eq!(requests_per_round("no such line"), None);
        assert_eq!(requests_per_round("Requests per batch: c=1: many."), None);
    }
}

//! The examples step: every example (and the demo bot) built once, run against the simulator,
//! and its output checked.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use crate::steps::{DynError, FEATURES, cargo, project_root, say, section, target_dir};

/// Each example, its arguments, and a line its output must contain. Examples run against the
/// simulator: the variables that would point them at real providers are removed.
const EXAMPLES: &[(&str, &[&str], &str)] = &[
    ("basic-failover", &[], "served by: backup"),
    ("conservative-write", &[], "backup received eth_sendRawTransaction: 0 times"),
    ("error-inspection", &[], "attempt: endpoint=primary"),
    ("exclude-endpoint", &[], "served by: backup"),
    ("preferred-endpoint", &[], "receipt read served by: backup"),
    ("skip-ineligible", &[], "primary received: 0 requests"),
    ("cooldown", &[], "primary received 3 of 5 reads"),
    ("permission-policy", &[], "read: status 200 OK, served by: backup"),
    ("alloy-provider", &[], "backup received eth_sendRawTransaction: 0 times"),
    ("alloy-write", &[], "not signed again"),
    ("alloy-paired", &[], "primary eligible: false"),
    ("alloy-hedge-budget-deadline", &[], "hedges: 2"),
    ("alloy-trace", &[], "attempt: backup"),
    ("alloy-write-routes", &[], "backup: possibly submitted"),
    ("alloy-bundle", &[], "the bundle ran at block"),
    ("alloy-follow", &[], "in order and each once: true"),
    ("blocklag-pairing", &[], "primary eligible: false"),
    ("blocklag-pairing", &[], "served by: backup"),
    (
        "blocklag-continuous",
        &["--seconds", "4"],
        "reads failed while an eligible healthy provider existed: 0",
    ),
];

/// Builds every example once, then runs each and checks its exit status and key output line.
pub(crate) fn examples() -> Result<(), DynError> {
    section("examples", || {
        cargo(
            &["build", "--quiet", "-p", "failnext-examples", "--examples", "--bins", "--features", FEATURES],
            &[],
        )?;
        let dir = target_dir().join("debug").join("examples");
        for (name, args, expected) in EXAMPLES {
            run_checked(&dir.join(name), args, expected)?;
        }
        // The demo bot, on a short timeline: it exits non-zero if an invariant broke.
        let demo = target_dir().join("debug").join("demo");
        // Then the rehearsal of read bundles (the build has the alloy feature): its line ends in
        // "held" only when every rule of it held.
        run_checked_lines(
            &demo,
            &["--seconds", "6"],
            &["invariants: all held", "rehearsal: ", "): held", "in order: true"],
        )?;
        Ok(())
    })
}

/// Runs a built program; fails unless it exits 0 and prints `expected`.
fn run_checked(program: &Path, args: &[&str], expected: &str) -> Result<(), DynError> {
    run_checked_lines(program, args, &[expected])
}

/// [`run_checked`], with several lines that must each be printed.
fn run_checked_lines(program: &Path, args: &[&str], expected: &[&str]) -> Result<(), DynError> {
    let name = program.file_name().and_then(|n| n.to_str()).unwrap_or("?").to_owned();
    let started = Instant::now();
    let output = Command::new(program)
        .args(args)
        .env_remove("ETH_RPC_PRIMARY_URL")
        .env_remove("ETH_RPC_BACKUP_URL")
        .current_dir(project_root())
        .output()?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        say(&stdout);
        say(&String::from_utf8_lossy(&output.stderr));
        return Err(format!("{name} exited with {}", output.status).into());
    }
    for expected in expected {
        if !stdout.lines().any(|line| line.contains(expected)) {
            say(&stdout);
            return Err(format!("{name} did not print {expected:?}").into());
        }
    }
    say(&format!("  {name}: ok in {:.1?} ({expected:?})", started.elapsed()));
    Ok(())
}

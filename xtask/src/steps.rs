//! How xtask runs its steps: the features CI builds, cargo (with or without warnings allowed),
//! a step in its CI section, the project's paths, and progress on stdout.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Any error of a step.
pub(crate) type DynError = Box<dyn std::error::Error>;

/// The features CI builds: every one but `failnext-examples/tls`, which only matters against
/// real https providers and would build a C crypto library on every run.
pub(crate) const FEATURES: &str = "failnext/tracing,failnext/jsonrpc,failnext/alloy,failnext/ws,failnext/serde,failnext/metrics,failnext/redis,failnext-blocklag/redis,failnext-blocklag/serde,failnext-blocklag/metrics,failnext-examples/alloy,failnext-examples/prometheus,failnext-examples/fleet";

/// Runs one step inside a `::group::` section and reports its time.
pub(crate) fn section<T>(name: &str, step: impl FnOnce() -> Result<T, DynError>) -> Result<T, DynError> {
    say(&format!("::group::{name}"));
    let started = Instant::now();
    let result = step();
    say("::endgroup::");
    match &result {
        Ok(_) => say(&format!("xtask: {name} ok in {:.1?}", started.elapsed())),
        Err(e) => say(&format!("xtask: {name} FAILED after {:.1?}: {e}", started.elapsed())),
    }
    result
}

pub(crate) fn cargo(args: &[&str], envs: &[(&str, &str)]) -> Result<(), DynError> {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status =
        Command::new(&cargo).args(args).envs(envs.iter().copied()).current_dir(project_root()).status()?;
    if status.success() { Ok(()) } else { Err(format!("`cargo {}` failed: {status}", args.join(" ")).into()) }
}

/// Runs cargo, showing its output; fails when it fails or prints a warning. A dry run's own
/// "aborting upload due to dry run" is not one.
pub(crate) fn cargo_without_warnings(args: &[&str]) -> Result<(), DynError> {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(&cargo).args(args).current_dir(project_root()).output()?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let warnings = stderr
        .lines()
        .filter(|line| line.starts_with("warning") && !line.contains("aborting upload due to dry run"))
        .count();
    if !stderr.trim().is_empty() && (warnings > 0 || !output.status.success()) {
        say(&stderr);
    }
    if !output.status.success() {
        return Err(format!("`cargo {}` failed: {}", args.join(" "), output.status).into());
    }
    if warnings > 0 {
        return Err(format!("`cargo {}` printed {warnings} warning(s)", args.join(" ")).into());
    }
    Ok(())
}

pub(crate) fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
}

#[allow(clippy::print_stdout, reason = "xtask reports progress on stdout")]
pub(crate) fn say(line: &str) {
    println!("{line}");
}

pub(crate) fn target_dir() -> PathBuf {
    env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| project_root().join("target"))
}

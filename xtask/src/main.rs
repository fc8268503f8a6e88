//! Project tasks, run as `cargo xtask <task>` (the cargo-xtask pattern).
//!
//! - `ci`: everything CI checks, in order; a local run gives the same verdict as CI.
//! - `demo`: the demo bot against simulated providers (or real ones with `--rpc URL`).
//! - `bench`: the release benchmark, figures as ratios to the bare reqwest client.
//! - `fmt`, `lint`, `test`, `doc`: one step each.

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

type DynError = Box<dyn std::error::Error>;

fn main() -> ExitCode {
    match try_main() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            #[allow(clippy::print_stderr, reason = "a command-line tool reports its failure")]
            {
                eprintln!("xtask: {e}");
            }
            ExitCode::FAILURE
        }
    }
}

fn try_main() -> Result<(), DynError> {
    let mut args = env::args().skip(1);
    let task = args.next();
    let rest: Vec<String> = args.collect();
    match task.as_deref() {
        Some("ci") => ci(),
        Some("fmt") => fmt_check(),
        Some("lint") => lint(),
        Some("test") => test(),
        Some("doc") => doc(),
        Some("demo") => demo(&rest),
        Some("bench") => bench(&rest),
        _ => {
            print_help();
            if task.is_some() || !rest.is_empty() { Err("unknown task".into()) } else { Ok(()) }
        }
    }
}

fn print_help() {
    say("usage: cargo xtask <task>\n\n\
         tasks:\n  \
         ci     fmt --check, clippy -D warnings, tests (doc tests included), docs -D warnings\n  \
         demo   [--seconds N] [--rpc URL]...  the demo bot (simulated providers by default)\n  \
         bench  [--quick] [--rounds N] [--scenario NAME]  release benchmark, written to target/bench/\n  \
         fmt    cargo fmt --check\n  \
         lint   cargo clippy --workspace --all-targets -- -D warnings\n  \
         test   cargo test --workspace --all-features\n  \
         doc    cargo doc --no-deps with RUSTDOCFLAGS=-D warnings");
}

fn ci() -> Result<(), DynError> {
    let started = Instant::now();
    fmt_check()?;
    lint()?;
    test()?;
    doc()?;
    say(&format!("xtask ci: all steps passed in {:.0?}", started.elapsed()));
    Ok(())
}

fn demo(args: &[String]) -> Result<(), DynError> {
    let mut cmd = vec!["run", "--quiet", "-p", "failnext-examples", "--bin", "demo", "--"];
    cmd.extend(args.iter().map(String::as_str));
    cargo(&cmd, &[])
}

fn bench(args: &[String]) -> Result<(), DynError> {
    let mut cmd = vec!["run", "--release", "--quiet", "-p", "failnext-bench", "--"];
    cmd.extend(args.iter().map(String::as_str));
    cargo(&cmd, &[])
}

fn fmt_check() -> Result<(), DynError> {
    section("fmt", || cargo(&["fmt", "--all", "--", "--check"], &[]))
}

fn lint() -> Result<(), DynError> {
    section("clippy", || {
        cargo(&["clippy", "--workspace", "--all-targets", "--all-features", "--", "-D", "warnings"], &[])
    })
}

fn test() -> Result<(), DynError> {
    section("test", || cargo(&["test", "--workspace", "--all-features"], &[]))
}

fn doc() -> Result<(), DynError> {
    section("doc", || {
        cargo(&["doc", "--workspace", "--no-deps", "--all-features"], &[("RUSTDOCFLAGS", "-D warnings")])
    })
}

/// Runs one step inside a `::group::` section and reports its time.
fn section(name: &str, step: impl FnOnce() -> Result<(), DynError>) -> Result<(), DynError> {
    say(&format!("::group::{name}"));
    let started = Instant::now();
    let result = step();
    say("::endgroup::");
    match &result {
        Ok(()) => say(&format!("xtask: {name} ok in {:.1?}", started.elapsed())),
        Err(e) => say(&format!("xtask: {name} FAILED after {:.1?}: {e}", started.elapsed())),
    }
    result
}

fn cargo(args: &[&str], envs: &[(&str, &str)]) -> Result<(), DynError> {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status =
        Command::new(&cargo).args(args).envs(envs.iter().copied()).current_dir(project_root()).status()?;
    if status.success() { Ok(()) } else { Err(format!("`cargo {}` failed: {status}", args.join(" ")).into()) }
}

fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
}

#[allow(clippy::print_stdout, reason = "xtask reports progress on stdout")]
fn say(line: &str) {
    println!("{line}");
}

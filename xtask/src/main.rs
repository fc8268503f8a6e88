//! Project tasks, run as `cargo xtask <task>` (the cargo-xtask pattern).
//!
//! - `ci`: everything CI checks, in order; a local run gives the same verdict as CI.
//! - `demo`: the demo bot against simulated providers (or real ones with `--rpc URL`; with
//!   `--metrics ADDR`, its metrics on a loopback Prometheus endpoint).
//! - `bench`: the release benchmark, figures as ratios to the bare reqwest client.
//! - `callgrind`: the healthy path's instructions per request beyond its baseline, counted by
//!   valgrind (installed when missing).
//! - `soak`: the fault-injection soak (full profile; `cargo xtask ci` runs the short one).
//! - `props`: the judging property tests at the full profile's case count (`cargo xtask ci`
//!   runs them at the default count, with the other tests).
//! - `anvil`: installs the anvil binary the real-node tests run (`ci` and `test` do it first).
//! - `features`: each published crate checked with no features and with each feature alone.
//! - `publish`: `cargo publish --dry-run` of both published crates.
//! - `fmt`, `lint`, `test`, `doc`: one step each.

mod anvil;
mod callgrind;
mod examples;
mod publish;
mod redis;
mod steps;

use std::env;
use std::process::ExitCode;
use std::time::Instant;

use examples::examples;
use publish::{features, publish_dry_run};
use steps::{DynError, FEATURES, cargo, say, section};

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
        Some("features") => features(),
        Some("publish") => publish_dry_run(),
        Some("examples") => examples(),
        Some("demo") => demo(&rest),
        Some("bench") => bench(&rest),
        Some("callgrind") => callgrind::callgrind(),
        Some("soak") => soak(&rest),
        Some("props") => props(&rest),
        Some("anvil") => anvil::ensure_anvil().map(|path| say(&path.display().to_string())),
        Some("redis") => redis::ensure_redis().map(|path| say(&path.display().to_string())),
        _ => {
            print_help();
            if task.is_some() || !rest.is_empty() { Err("unknown task".into()) } else { Ok(()) }
        }
    }
}

fn print_help() {
    say("usage: cargo xtask <task>\n\n\
         tasks:\n  \
         ci     fmt --check, clippy -D warnings, features one by one, tests (doc tests included),\n         \
                docs -D warnings, publish --dry-run, examples, soak (ci), bench (one round)\n  \
         examples  run every example against the simulator and check its output\n  \
         demo   [--seconds N] [--rpc URL]... [--metrics ADDR]  the demo bot (simulated providers\n         \
                by default; --metrics 127.0.0.1:9898 serves its metrics for Prometheus)\n  \
         soak   [--profile ci|full|measure] [--seed N] [--scenario all|flapping|half-stale]\n         \
                [--fault-ms N]  fault-injection soak, then the measures of reads answered\n         \
                correctly per configuration (full profile by default: flapping ~2 s and ~200 ms,\n         \
                half-stale, and issue 20's targets for the paired configuration)\n  \
         bench  [--quick] [--rounds N] [--scenario NAME]  release benchmark, written to target/bench/\n  \
         callgrind  instructions per request beyond the baseline (middleware vs a do-nothing one,\n         \
                transport vs alloy's Http), counted by valgrind; profiles in target/callgrind/\n  \
         props  [CASES]  the judging property tests at CASES cases each (default 10000; ci runs\n         \
                the test default)\n  \
         anvil  install anvil (npm @foundry-rs/anvil-linux-amd64) into target/anvil/, print its path\n  \
         redis  find redis-server, installing Debian's package when missing, print its path\n  \
         features  cargo check of each published crate with no features and each feature alone\n  \
         publish   cargo publish --dry-run -p failnext -p failnext-blocklag\n  \
         fmt    cargo fmt --check\n  \
         lint   cargo clippy --workspace --all-targets -- -D warnings\n  \
         test   cargo test --workspace (all features but the examples' tls), with anvil installed\n         \
                first and passed to the real-node tests in FAILNEXT_ANVIL, and redis-server\n         \
                (FAILNEXT_REDIS_SERVER) for the fleet tests\n  \
         doc    cargo doc --no-deps with RUSTDOCFLAGS=-D warnings");
}

fn ci() -> Result<(), DynError> {
    let started = Instant::now();
    fmt_check()?;
    lint()?;
    features()?;
    test()?;
    doc()?;
    publish_dry_run()?;
    examples()?;
    section("soak (ci profile, fixed seed)", || {
        cargo(
            &[
                "run",
                "--quiet",
                "-p",
                "failnext-soak",
                "--bin",
                "soak",
                "--",
                "--profile",
                "ci",
                "--seed",
                "42",
            ],
            &[],
        )
    })?;
    section("bench (one tiny round)", || {
        cargo(&["run", "--quiet", "-p", "failnext-bench", "--", "--quick"], &[])
    })?;
    say(&format!("xtask ci: all steps passed in {:.0?}", started.elapsed()));
    Ok(())
}

fn demo(args: &[String]) -> Result<(), DynError> {
    let mut cmd = vec!["run", "--quiet", "-p", "failnext-examples", "--bin", "demo"];
    // The rehearsal of read bundles after the bot needs the alloy transport.
    let mut features = vec!["alloy"];
    // Real providers are usually https: build TLS in only when asked for one.
    if args.iter().any(|a| a.to_ascii_lowercase().starts_with("https:")) {
        features.push("tls");
    }
    // The Prometheus exporter, only when its endpoint is asked for.
    if args.iter().any(|a| a == "--metrics") {
        features.push("prometheus");
    }
    let features = features.join(",");
    if !features.is_empty() {
        cmd.extend(["--features", &features]);
    }
    cmd.push("--");
    cmd.extend(args.iter().map(String::as_str));
    cargo(&cmd, &[])
}

fn bench(args: &[String]) -> Result<(), DynError> {
    let mut cmd = vec!["run", "--release", "--quiet", "-p", "failnext-bench", "--"];
    cmd.extend(args.iter().map(String::as_str));
    cargo(&cmd, &[])
}

/// The fault-injection soak: the full profile in release unless arguments say otherwise.
fn soak(args: &[String]) -> Result<(), DynError> {
    let mut cmd = vec!["run", "--release", "--quiet", "-p", "failnext-soak", "--bin", "soak", "--"];
    if args.is_empty() {
        cmd.extend(["--profile", "full"]);
    }
    cmd.extend(args.iter().map(String::as_str));
    cargo(&cmd, &[])
}

/// The full profile's case count for the property tests.
const FULL_PROPTEST_CASES: &str = "10000";

/// The judging property tests (`failnext/tests/judging_props.rs`) at the full profile's case
/// count, or at `args[0]` cases.
fn props(args: &[String]) -> Result<(), DynError> {
    let cases = args.first().map_or(FULL_PROPTEST_CASES, String::as_str);
    if cases.parse::<u32>().map_or(true, |n| n == 0) {
        return Err(format!("props: the case count must be a positive number, not {cases:?}").into());
    }
    section("judging property tests (full profile)", || {
        cargo(
            &["test", "--release", "-p", "failnext", "--features", "jsonrpc", "--test", "judging_props"],
            &[("PROPTEST_CASES", cases)],
        )
    })
}

fn fmt_check() -> Result<(), DynError> {
    section("fmt", || cargo(&["fmt", "--all", "--", "--check"], &[]))
}

fn lint() -> Result<(), DynError> {
    section("clippy", || {
        cargo(
            &["clippy", "--workspace", "--all-targets", "--features", FEATURES, "--", "-D", "warnings"],
            &[],
        )
    })
}

/// The tests, with anvil installed first: the real-node tests find it in `FAILNEXT_ANVIL`
/// (an anvil the caller already points `FAILNEXT_ANVIL` at is used as it is).
fn test() -> Result<(), DynError> {
    let anvil = match env::var("FAILNEXT_ANVIL") {
        Ok(path) if !path.is_empty() => path,
        _ => {
            let path = section("anvil", anvil::ensure_anvil)?;
            path.to_str().ok_or("the anvil path is not UTF-8")?.to_owned()
        }
    };
    let redis = match env::var("FAILNEXT_REDIS_SERVER") {
        Ok(path) if !path.is_empty() => path,
        _ => {
            let path = section("redis-server", redis::ensure_redis)?;
            path.to_str().ok_or("the redis-server path is not UTF-8")?.to_owned()
        }
    };
    section("test", || {
        cargo(
            &["test", "--workspace", "--features", FEATURES],
            &[("FAILNEXT_ANVIL", &anvil), ("FAILNEXT_REDIS_SERVER", &redis)],
        )
    })
}

fn doc() -> Result<(), DynError> {
    section("doc", || {
        cargo(
            &["doc", "--workspace", "--no-deps", "--features", FEATURES],
            &[("RUSTDOCFLAGS", "-D warnings")],
        )
    })
}

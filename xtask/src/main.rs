//! Project tasks, run as `cargo xtask <task>` (the cargo-xtask pattern).
//!
//! - `ci`: everything CI checks, in order; a local run gives the same verdict as CI.
//! - `demo`: the demo bot against simulated providers (or real ones with `--rpc URL`; with
//!   `--metrics ADDR`, its metrics on a loopback Prometheus endpoint).
//! - `bench`: the release benchmark, figures as ratios to the bare reqwest client.
//! - `soak`: the fault-injection soak (full profile; `cargo xtask ci` runs the short one).
//! - `props`: the judging property tests at the full profile's case count (`cargo xtask ci`
//!   runs them at the default count, with the other tests).
//! - `anvil`: installs the anvil binary the real-node tests run (`ci` and `test` do it first).
//! - `features`: each published crate checked with no features and with each feature alone.
//! - `publish`: `cargo publish --dry-run` of both published crates.
//! - `fmt`, `lint`, `test`, `doc`: one step each.

mod anvil;

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
        Some("features") => features(),
        Some("publish") => publish_dry_run(),
        Some("examples") => examples(),
        Some("demo") => demo(&rest),
        Some("bench") => bench(&rest),
        Some("soak") => soak(&rest),
        Some("props") => props(&rest),
        Some("anvil") => anvil::ensure_anvil().map(|path| say(&path.display().to_string())),
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
         props  [CASES]  the judging property tests at CASES cases each (default 10000; ci runs\n         \
                the test default)\n  \
         anvil  install anvil (npm @foundry-rs/anvil-linux-amd64) into target/anvil/, print its path\n  \
         features  cargo check of each published crate with no features and each feature alone\n  \
         publish   cargo publish --dry-run -p failnext -p failnext-blocklag\n  \
         fmt    cargo fmt --check\n  \
         lint   cargo clippy --workspace --all-targets -- -D warnings\n  \
         test   cargo test --workspace (all features but the examples' tls), with anvil installed\n         \
                first and passed to the real-node tests in FAILNEXT_ANVIL\n  \
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

/// The features CI builds: every one but `failnext-examples/tls`, which only matters against
/// real https providers and would build a C crypto library on every run.
const FEATURES: &str = "failnext/tracing,failnext/jsonrpc,failnext/alloy,failnext/ws,failnext/serde,failnext/metrics,failnext-blocklag/serde,failnext-blocklag/metrics,failnext-examples/alloy,failnext-examples/prometheus";

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
fn examples() -> Result<(), DynError> {
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

fn target_dir() -> PathBuf {
    env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| project_root().join("target"))
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

/// The crates published to crates.io, each with its manifest.
const PUBLISHED: &[(&str, &str)] =
    &[("failnext", "failnext/Cargo.toml"), ("failnext-blocklag", "failnext-blocklag/Cargo.toml")];

/// Each published crate's library checked with no features, then with each feature of its
/// manifest alone, so that no feature leans on another one's code or dependencies. Warnings
/// fail the step: they are read from cargo's output rather than turned into errors with
/// `RUSTFLAGS`, which would rebuild every dependency and leave the cache of the other steps.
fn features() -> Result<(), DynError> {
    section("features (none, then each alone)", || {
        for (krate, manifest) in PUBLISHED {
            let text = std::fs::read_to_string(project_root().join(manifest))?;
            let features = manifest_features(&text);
            let mut combinations = vec![None];
            combinations.extend(features.iter().map(|f| Some(f.as_str())));
            for feature in combinations {
                let mut args = vec!["check", "--quiet", "--lib", "-p", krate, "--no-default-features"];
                if let Some(feature) = feature {
                    args.extend(["--features", feature]);
                }
                cargo_without_warnings(&args)?;
                say(&format!("  {krate}: {} ok", feature.unwrap_or("no features")));
            }
        }
        Ok(())
    })
}

/// The features a manifest declares in its `[features]` table, `default` left out.
fn manifest_features(manifest: &str) -> Vec<String> {
    let mut in_features = false;
    let mut features = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_features = line == "[features]";
        } else if in_features && !line.starts_with('#') {
            if let Some((name, _)) = line.split_once('=') {
                let name = name.trim();
                if name != "default" {
                    features.push(name.to_owned());
                }
            }
        }
    }
    features
}

/// Both published crates as crates.io would receive them: packaged, the package built on its
/// own (failnext-blocklag against the failnext being packaged), nothing uploaded. Asks the
/// crates.io index, so it needs the network. Uncommitted changes are packaged as they are
/// (`--allow-dirty`), as every other step checks the working tree.
fn publish_dry_run() -> Result<(), DynError> {
    section("publish (dry run)", || {
        forget_unpublished_sources()?;
        // A target dir of its own, where the packaged crates' builds are forgotten before each
        // run (cargo takes a registry crate's build as final too).
        let target = publish_target()?;
        let target = target.to_str().ok_or("the target path is not UTF-8")?.to_owned();
        let mut args = vec!["publish", "--dry-run", "--allow-dirty", "--quiet", "--target-dir", &target];
        for (krate, _) in PUBLISHED {
            args.extend(["-p", krate]);
        }
        cargo_without_warnings(&args)
    })
}

/// Removes the copies of the published crates that an earlier dry run unpacked into cargo's
/// registry sources. The dry run verifies failnext-blocklag against the failnext it has just
/// packaged, through a local registry under the same name and version as the real one, and
/// cargo takes an unpacked registry crate as immutable: a copy left by an earlier run, of the
/// same version but older code, would be built instead of this one.
fn forget_unpublished_sources() -> Result<(), DynError> {
    let home = match env::var_os("CARGO_HOME") {
        Some(home) => PathBuf::from(home),
        None => {
            PathBuf::from(env::var_os("HOME").ok_or("neither CARGO_HOME nor HOME is set")?).join(".cargo")
        }
    };
    let Ok(registries) = std::fs::read_dir(home.join("registry").join("src")) else { return Ok(()) };
    let mut names = Vec::new();
    for (krate, manifest) in PUBLISHED {
        let text = std::fs::read_to_string(project_root().join(manifest))?;
        let version = manifest_version(&text).ok_or_else(|| format!("{manifest} has no version"))?;
        names.push(format!("{krate}-{version}"));
    }
    for registry in registries.flatten() {
        for name in &names {
            let unpacked = registry.path().join(name);
            if unpacked.is_dir() {
                std::fs::remove_dir_all(&unpacked)?;
            }
        }
    }
    Ok(())
}

/// The dry run's own target dir, without the builds of the crates it packages: the
/// dependencies stay built, the packaged crates are built again from what was just packaged.
fn publish_target() -> Result<PathBuf, DynError> {
    let target = match env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => project_root().join("target"),
    }
    .join("publish");
    for dir in ["debug/.fingerprint", "debug/deps"] {
        let Ok(entries) = std::fs::read_dir(target.join(dir)) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let ours = PUBLISHED.iter().any(|(krate, _)| {
                let stem = krate.replace('-', "_");
                name.starts_with(&format!("{krate}-"))
                    || name.starts_with(&format!("{stem}-"))
                    || name.starts_with(&format!("lib{stem}-"))
            });
            if ours {
                let path = entry.path();
                if path.is_dir() { std::fs::remove_dir_all(&path)? } else { std::fs::remove_file(&path)? }
            }
        }
    }
    Ok(target)
}

/// The `version` of a manifest's `[package]`.
fn manifest_version(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if let Some(value) = line.strip_prefix("version").filter(|_| in_package) {
            if let Some(value) = value.trim_start().strip_prefix('=') {
                return Some(value.trim().trim_matches('"').to_owned());
            }
        }
    }
    None
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
    section("test", || cargo(&["test", "--workspace", "--features", FEATURES], &[("FAILNEXT_ANVIL", &anvil)]))
}

fn doc() -> Result<(), DynError> {
    section("doc", || {
        cargo(
            &["doc", "--workspace", "--no-deps", "--features", FEATURES],
            &[("RUSTDOCFLAGS", "-D warnings")],
        )
    })
}

/// Runs one step inside a `::group::` section and reports its time.
fn section<T>(name: &str, step: impl FnOnce() -> Result<T, DynError>) -> Result<T, DynError> {
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

fn cargo(args: &[&str], envs: &[(&str, &str)]) -> Result<(), DynError> {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status =
        Command::new(&cargo).args(args).envs(envs.iter().copied()).current_dir(project_root()).status()?;
    if status.success() { Ok(()) } else { Err(format!("`cargo {}` failed: {status}", args.join(" ")).into()) }
}

/// Runs cargo, showing its output; fails when it fails or prints a warning. A dry run's own
/// "aborting upload due to dry run" is not one.
fn cargo_without_warnings(args: &[&str]) -> Result<(), DynError> {
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

fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
}

#[allow(clippy::print_stdout, reason = "xtask reports progress on stdout")]
fn say(line: &str) {
    println!("{line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_features_lists_the_features_table_without_default() {
        let manifest = "[package]\nname = \"x\"\n\n[features]\ndefault = []\n## A doc comment.\n\
                        tracing = [\"dep:tracing\"]\nalloy = [\"jsonrpc\", \"dep:a\"]\n\n\
                        [dependencies]\nserde = \"1\"\n";
        assert_eq!(manifest_features(manifest), ["tracing", "alloy"]);
    }

    #[test]
    fn manifest_version_is_the_packages_own() {
        let manifest = "[package]\nname = \"x\"\nversion = \"0.2.0\"\n\n[dependencies]\nversion = \"9\"\n";
        assert_eq!(manifest_version(manifest).as_deref(), Some("0.2.0"));
        assert_eq!(manifest_version("[dependencies]\nversion = \"1\"\n"), None);
    }

    #[test]
    fn every_published_manifest_declares_features() {
        for (krate, manifest) in PUBLISHED {
            let text = std::fs::read_to_string(project_root().join(manifest)).unwrap_or_default();
            assert!(!manifest_features(&text).is_empty(), "{krate}: no features found in {manifest}");
        }
    }
}

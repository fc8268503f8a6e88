//! `soak`: runs the fault-injection soak and prints its report.
//!
//! ```text
//! soak [--profile ci|full|measure] [--seed N] [--requests N] [--concurrency N]
//!      [--scenario all|flapping|half-stale] [--fault-ms N] [--measure-secs N]
//!      [--measure-rate N] [--configs NAME,NAME,...]
//! ```
//!
//! After the checked phases, the measures run one after the other, each a scenario:
//!
//! - profile `ci`: flapping with fault windows of ~200 ms for 2 s, half-stale for 2 s;
//! - profile `full`: flapping at ~2000 ms for 30 s, flapping at ~200 ms for 30 s, half-stale
//!   for 20 s (issue 20's figures);
//! - profile `measure`: flapping at ~2000 ms for 120 s (issue 10's figures).
//!
//! `--scenario flapping` or `half-stale` keeps only that scenario's measures (half-stale for
//! 20 s when the profile has none); `--fault-ms N` makes the flapping measures one, at ~N ms
//! (for as long as the profile's first); `--measure-secs N` sets every measure's length (0
//! skips them); `--measure-rate N` reads per second to each configuration (250);
//! `--configs` the configurations (all by default: `reference`, `cooldown-disabled`,
//! `0.2-default`, `0.2-default+jsonrpc`, `disabled+jsonrpc`, `paired`). For example:
//!
//! ```text
//! cargo run --release -p failnext-soak --bin soak -- --profile full --seed 42
//! cargo run --release -p failnext-soak --bin soak -- --profile measure --seed 42 --fault-ms 200
//! cargo run --release -p failnext-soak --bin soak -- --profile full --scenario half-stale
//! ```
//!
//! Exits with status 1 when any check found a violation, 2 on a usage or setup error. The
//! measure's figures and targets never fail a run.

use std::io::Write;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use std::time::Duration;

use failnext_soak::soak::{self, Config, MeasureRun, Profile, Scenario, Subject};

const USAGE: &str = "usage: soak [--profile ci|full|measure] [--seed N] [--requests N] [--concurrency N] \
                     [--scenario all|flapping|half-stale] [--fault-ms N] [--measure-secs N] \
                     [--measure-rate N] [--configs NAME,NAME,...]";

/// How long a half-stale measure lasts when `--scenario half-stale` asks for one the profile
/// does not have.
const HALF_STALE_SECS: u64 = 20;

fn main() -> ExitCode {
    let config = match parse(std::env::args().skip(1)) {
        Ok(Some(config)) => config,
        Ok(None) => {
            let _ = writeln!(std::io::stdout(), "{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "soak: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "soak: profile {}, seed {}, {} requests at concurrency {} (+{} warm-up)",
        config.profile.name(),
        config.seed,
        config.requests,
        config.concurrency,
        config.warmup_requests
    );
    let runs: Vec<String> = config
        .measure
        .runs
        .iter()
        .filter(|r| !r.duration.is_zero())
        .map(|r| format!("{} for {} s", r.scenario, r.duration.as_secs_f64()))
        .collect();
    if !runs.is_empty() {
        let names: Vec<&str> = config.measure.subjects.iter().map(|s| s.name()).collect();
        let _ = writeln!(out, "soak: then measures of {}: {}", runs.join(", then "), names.join(", "));
    }
    let _ = out.flush();
    drop(out);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "soak: tokio runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let report = match runtime.block_on(soak::run(config)) {
        Ok(report) => report,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "soak: setup failed: {e}");
            return ExitCode::from(2);
        }
    };
    drop(runtime);
    let _ = writeln!(std::io::stdout(), "{report}");
    if report.violations() == 0 {
        let _ = writeln!(std::io::stdout(), "soak: PASS, zero violations (seed {})", report.seed());
        ExitCode::SUCCESS
    } else {
        let _ = writeln!(
            std::io::stdout(),
            "soak: FAIL, {} violations (re-run with --seed {})",
            report.violations(),
            report.seed()
        );
        ExitCode::FAILURE
    }
}

/// Parses the arguments; `Ok(None)` for `--help`.
fn parse(args: impl Iterator<Item = String>) -> Result<Option<Config>, String> {
    match read_args(args)? {
        None => Ok(None),
        Some(args) => configure(args).map(Some),
    }
}

/// The options given: the profile (`ci` when absent), the others `None` when absent.
struct Args {
    profile: Profile,
    seed: Option<u64>,
    requests: Option<u64>,
    concurrency: Option<u64>,
    fault_ms: Option<u64>,
    measure_secs: Option<u64>,
    scenario: Option<String>,
    rate: Option<u64>,
    subjects: Option<Vec<Subject>>,
}

/// Reads the options, one by one (`--name value` or `--name=value`); `Ok(None)` for `--help`.
fn read_args(args: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut given = Args {
        profile: Profile::Ci,
        seed: None,
        requests: None,
        concurrency: None,
        fault_ms: None,
        measure_secs: None,
        scenario: None,
        rate: None,
        subjects: None,
    };
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n.to_owned(), Some(v.to_owned())),
            None => (arg.clone(), None),
        };
        if name == "--help" || name == "-h" {
            return Ok(None);
        }
        let mut value =
            || inline.clone().or_else(|| args.next()).ok_or_else(|| format!("{name} needs a value"));
        match name.as_str() {
            "--profile" => given.profile = value()?.parse()?,
            "--seed" => given.seed = Some(number(&name, &value()?)?),
            "--requests" => given.requests = Some(number(&name, &value()?)?),
            "--concurrency" => given.concurrency = Some(number(&name, &value()?)?),
            "--fault-ms" => given.fault_ms = Some(number(&name, &value()?)?.max(2)),
            "--measure-secs" => given.measure_secs = Some(number(&name, &value()?)?),
            "--scenario" => {
                let v = value()?;
                if !["all", "flapping", "half-stale"].contains(&v.as_str()) {
                    return Err(format!("--scenario: {v:?}: expected all, flapping or half-stale"));
                }
                given.scenario = Some(v);
            }
            "--measure-rate" => given.rate = Some(number(&name, &value()?)?),
            "--configs" => {
                given.subjects =
                    Some(value()?.split(',').map(str::parse).collect::<Result<Vec<Subject>, String>>()?)
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(Some(given))
}

/// The profile's configuration with the options given laid over it.
fn configure(given: Args) -> Result<Config, String> {
    let Args { profile, seed, requests, concurrency, fault_ms, measure_secs, scenario, rate, subjects } =
        given;
    let seed = seed.unwrap_or_else(time_seed);
    let mut config = Config::new(profile, seed);
    if let Some(r) = requests {
        config.requests = r;
        config.warmup_requests = config.warmup_requests.min(r.div_ceil(5));
    }
    if let Some(c) = concurrency {
        config.concurrency = usize::try_from(c).map_err(|_| "--concurrency is too large".to_owned())?.max(1);
    }
    shape_runs(&mut config.measure.runs, fault_ms, scenario.as_deref(), measure_secs);
    if let Some(r) = rate {
        config.measure.rate = u32::try_from(r).map_err(|_| "--measure-rate is too large".to_owned())?.max(1);
    }
    if let Some(subjects) = subjects {
        config.measure.subjects = subjects;
    }
    Ok(config)
}

/// The measures the options ask for: the flapping ones made one at `--fault-ms`, only the
/// `--scenario`'s kept (a half-stale one added when none was), each `--measure-secs` long.
fn shape_runs(
    runs: &mut Vec<MeasureRun>,
    fault_ms: Option<u64>,
    scenario: Option<&str>,
    measure_secs: Option<u64>,
) {
    if let Some(ms) = fault_ms {
        let fault = Duration::from_millis(ms);
        let flapping = |r: &MeasureRun| matches!(r.scenario, Scenario::Flapping { .. });
        let duration = runs.iter().find(|r| flapping(r)).map_or(Duration::from_secs(30), |r| r.duration);
        let at = runs.iter().position(flapping).unwrap_or(0);
        runs.retain(|r| !flapping(r));
        runs.insert(at, MeasureRun { scenario: Scenario::Flapping { fault }, duration });
    }
    match scenario {
        Some("flapping") => runs.retain(|r| r.scenario.name() == "flapping"),
        Some("half-stale") => {
            runs.retain(|r| r.scenario == Scenario::HalfStale);
            if runs.is_empty() {
                let duration = Duration::from_secs(HALF_STALE_SECS);
                runs.push(MeasureRun { scenario: Scenario::HalfStale, duration });
            }
        }
        _ => {}
    }
    if let Some(secs) = measure_secs {
        for run in runs.iter_mut() {
            run.duration = Duration::from_secs(secs);
        }
    }
}

fn number(name: &str, value: &str) -> Result<u64, String> {
    let parsed = match value.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => value.parse(),
    };
    parsed.map_err(|_| format!("{name}: {value:?} is not a number"))
}

/// A fresh seed when none is given: printed, so any run can be repeated.
fn time_seed() -> u64 {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    (nanos as u64) ^ (u64::from(std::process::id()) << 32)
}

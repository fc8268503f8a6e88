//! `soak`: runs the fault-injection soak and prints its report.
//!
//! ```text
//! soak [--profile ci|full|measure] [--seed N] [--requests N] [--concurrency N]
//!      [--fault-ms N] [--measure-secs N] [--measure-rate N] [--configs NAME,NAME,...]
//! ```
//!
//! After the checked phases, the measure runs for `--measure-secs` (profile `ci`: 2, `full`:
//! 30, `measure`: 120; 0 skips it) with fault windows of about `--fault-ms` (`ci`: 200,
//! others: 2000), `--measure-rate` reads per second to each configuration (250), for the
//! configurations `--configs` (all by default: `reference`,
//! `cooldown-disabled`). The figures of issue 10:
//!
//! ```text
//! cargo run --release -p failnext-soak --bin soak -- --profile measure --seed 42 --fault-ms 2000
//! cargo run --release -p failnext-soak --bin soak -- --profile measure --seed 42 --fault-ms 200
//! ```
//!
//! Exits with status 1 when any check found a violation, 2 on a usage or setup error. The
//! measure's figures never fail a run.

use std::io::Write;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use std::time::Duration;

use failnext_soak::soak::{self, Config, Profile, Subject};

const USAGE: &str = "usage: soak [--profile ci|full|measure] [--seed N] [--requests N] [--concurrency N] \
                     [--fault-ms N] [--measure-secs N] [--measure-rate N] [--configs NAME,NAME,...]";

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
    if !config.measure.duration.is_zero() {
        let names: Vec<&str> = config.measure.subjects.iter().map(|s| s.name()).collect();
        let _ = writeln!(
            out,
            "soak: then a measure of {} s, fault windows ~{} ms: {}",
            config.measure.duration.as_secs(),
            config.measure.fault.as_millis(),
            names.join(", ")
        );
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
    let mut profile = Profile::Ci;
    let mut seed = None;
    let mut requests = None;
    let mut concurrency = None;
    let mut fault_ms = None;
    let mut measure_secs = None;
    let mut rate = None;
    let mut subjects: Option<Vec<Subject>> = None;
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
            "--profile" => profile = value()?.parse()?,
            "--seed" => seed = Some(number(&name, &value()?)?),
            "--requests" => requests = Some(number(&name, &value()?)?),
            "--concurrency" => concurrency = Some(number(&name, &value()?)?),
            "--fault-ms" => fault_ms = Some(number(&name, &value()?)?.max(2)),
            "--measure-secs" => measure_secs = Some(number(&name, &value()?)?),
            "--measure-rate" => rate = Some(number(&name, &value()?)?),
            "--configs" => {
                subjects =
                    Some(value()?.split(',').map(str::parse).collect::<Result<Vec<Subject>, String>>()?)
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let seed = seed.unwrap_or_else(time_seed);
    let mut config = Config::new(profile, seed);
    if let Some(r) = requests {
        config.requests = r;
        config.warmup_requests = config.warmup_requests.min(r.div_ceil(5));
    }
    if let Some(c) = concurrency {
        config.concurrency = usize::try_from(c).map_err(|_| "--concurrency is too large".to_owned())?.max(1);
    }
    if let Some(ms) = fault_ms {
        config.measure.fault = Duration::from_millis(ms);
    }
    if let Some(secs) = measure_secs {
        config.measure.duration = Duration::from_secs(secs);
    }
    if let Some(r) = rate {
        config.measure.rate = u32::try_from(r).map_err(|_| "--measure-rate is too large".to_owned())?.max(1);
    }
    if let Some(subjects) = subjects {
        config.measure.subjects = subjects;
    }
    Ok(Some(config))
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

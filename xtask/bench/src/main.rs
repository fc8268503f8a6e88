//! `cargo xtask bench`: failnext against the bare reqwest client, an empty
//! `ClientWithMiddleware` and reqwest-retry, on loopback JSON-RPC servers; then
//! failnext-blocklag's `check()` and `eligible()`.
//!
//! ```text
//! cargo run --release -p failnext-bench [-- --rounds N] [--scenario NAME]...
//! cargo run -p failnext-bench -- --quick      # one tiny round (CI smoke run)
//! ```
//!
//! Prints a markdown table and writes `results.json`, `results.md` and `latency.svg` under
//! `target/bench/` (`target/bench/quick/` for `--quick`). Targets are reported, never
//! asserted: the exit code says only whether the bench ran and every request succeeded.

mod alloc;
mod blocklag;
mod chart;
mod empty;
mod measure;
mod os;
mod peers;
mod report;
mod scenarios;
mod servers;
mod targets;
mod variants;

use std::process::ExitCode;
use std::time::Instant;

use crate::report::Report;
use crate::scenarios::Plan;
use crate::servers::Servers;
use crate::targets::BlocklagFigures;
use crate::variants::BoxError;
use failnext_liar as liar;

#[global_allocator]
static GLOBAL: alloc::Counting = alloc::Counting;

const DEFAULT_ROUNDS: usize = 31;

/// The scenarios run apart from [`scenarios::NAMES`], in run order.
const EXTRA_SCENARIOS: [&str; 4] = ["peers", "empty-behind", "liar", "blocklag"];

#[allow(clippy::print_stderr, reason = "a command-line tool reports progress and failure on stderr")]
fn main() -> ExitCode {
    match try_main() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Command-line options.
#[derive(Debug)]
struct Args {
    quick: bool,
    rounds: Option<usize>,
    /// Empty: every scenario, blocklag included.
    only: Vec<String>,
    /// Empty: every variant (a filter for profiling one variant under perf or valgrind).
    variants: Vec<String>,
    /// Leave the client and server threads wherever the scheduler puts them.
    no_pin: bool,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Option<Args>, BoxError> {
    let mut parsed =
        Args { quick: false, rounds: None, only: Vec::new(), variants: Vec::new(), no_pin: false };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => parsed.quick = true,
            "--rounds" => {
                let n: usize = args.next().ok_or("--rounds needs a number")?.parse()?;
                parsed.rounds = Some(n.max(1));
            }
            "--scenario" => {
                let name = args.next().ok_or("--scenario needs a name")?;
                if !EXTRA_SCENARIOS.contains(&name.as_str()) && !scenarios::NAMES.contains(&name.as_str()) {
                    return Err(format!(
                        "unknown scenario {name:?}; known: {}, {}",
                        scenarios::NAMES.join(", "),
                        EXTRA_SCENARIOS.join(", ")
                    )
                    .into());
                }
                parsed.only.push(name);
            }
            "--no-pin" => parsed.no_pin = true,
            "--variant" => parsed.variants.push(args.next().ok_or("--variant needs a name")?),
            "-h" | "--help" => return Ok(None),
            other => return Err(format!("unknown argument {other:?} (try --help)").into()),
        }
    }
    Ok(Some(parsed))
}

#[allow(clippy::print_stdout, clippy::print_stderr, reason = "the report goes to stdout, progress to stderr")]
fn try_main() -> Result<(), BoxError> {
    let Some(args) = parse_args(std::env::args().skip(1))? else {
        print_usage();
        return Ok(());
    };
    let plan = Plan {
        rounds: args.rounds.unwrap_or(if args.quick { 1 } else { DEFAULT_ROUNDS }),
        quick: args.quick,
    };
    let wanted = |name: &str| args.only.is_empty() || args.only.iter().any(|o| o == name);
    // The client (this thread) and the server thread (spawned next, inheriting it) share the
    // last CPU. Across CPUs, every loopback round trip needs a cross-CPU wakeup, which on this
    // VM costs ~40 µs and comes and goes with the scheduler's placement (latency flips between
    // ~21 and ~64 µs per request); on one CPU a request costs what its code costs.
    let pinned = if args.no_pin { None } else { Some(os::cpu_count() - 1) };
    let pinned = pinned.filter(|&cpu| os::pin_this_thread(Some(cpu)));
    let started = Instant::now();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let servers = Servers::start()?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;

    let outcomes = run_scenarios(&args, plan, &servers, &rt, started, &wanted)?;
    let peers = if wanted("peers") {
        eprintln!("bench: peers ({:.0?} so far)", started.elapsed());
        rt.block_on(peers::run(&servers, plan.quick)).map_err(|e| e.to_string())
    } else {
        Err("not selected (--scenario)".to_owned())
    };
    let empty_behind = if wanted("empty-behind") {
        eprintln!("bench: empty-behind ({:.0?} so far)", started.elapsed());
        rt.block_on(empty::run(&servers, plan.quick)).map_err(|e| e.to_string())
    } else {
        Err("not selected (--scenario)".to_owned())
    };
    let liar = if wanted("liar") {
        eprintln!("bench: liar ({:.0?} so far)", started.elapsed());
        rt.block_on(liar::run(if plan.quick { 1 } else { 8 }, liar::Weather::Turn))
    } else {
        Err("not selected (--scenario)".to_owned())
    };
    let blocklag = if wanted("blocklag") {
        eprintln!("bench: blocklag ({:.0?} so far)", started.elapsed());
        // Probing is concurrent I/O whose server side would be remote in real use: let the
        // monitor's client run on the other CPU rather than queue behind the 128 servers.
        os::pin_this_thread(None);
        rt.block_on(blocklag::run(&servers, plan.rounds, plan.quick)).map_err(|e| e.to_string())
    } else {
        Err("not selected (--scenario)".to_owned())
    };
    let figures = blocklag.as_ref().ok().and_then(figures);
    let mut verdicts = targets::evaluate(&outcomes, figures.as_ref());
    if let Ok(rows) = &peers {
        verdicts.extend(peers::verdicts(rows));
    }
    let report = Report {
        plan,
        pinned,
        load_at_start: load.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
        outcomes: &outcomes,
        blocklag: blocklag.as_ref().map_err(Clone::clone),
        peers: peers.as_deref().map_err(Clone::clone),
        verdicts: &verdicts,
    };
    println!("{}", report.markdown());
    let mut paths = report::write(&report, &report::out_dir(plan.quick))?;
    write_table("empty-behind", &empty_behind, plan.quick, &mut paths, (empty::markdown, empty::json))?;
    write_table("liar", &liar, plan.quick, &mut paths, (liar_markdown, liar::json))?;
    for p in paths {
        eprintln!("bench: wrote {}", p.display());
    }
    eprintln!("bench: done in {:.1?}", started.elapsed());
    check_failures(&outcomes, &blocklag, &peers, &empty_behind, &wanted)?;
    check_liar(&liar, &wanted)?;
    Ok(())
}

#[allow(clippy::print_stdout, clippy::print_stderr, reason = "the report goes to stdout, progress to stderr")]
/// The usage, on stdout.
fn print_usage() {
    println!(
        "usage: failnext-bench [--quick] [--rounds N] [--scenario NAME]... [--variant NAME]... [--no-pin]\n\n  \
         --quick          one tiny round of everything (CI smoke run)\n  \
         --rounds N       measured rounds per scenario (default {DEFAULT_ROUNDS}; quick: 1)\n  \
         --scenario NAME  run only this one (repeatable): {}, {}\n  \
         --variant NAME   run only this client variant (repeatable; for profiling)\n  \
         --no-pin         do not pin the client and server threads to one CPU",
        scenarios::NAMES.join(", "),
        EXTRA_SCENARIOS.join(", ")
    );
}

#[allow(clippy::print_stdout, clippy::print_stderr, reason = "the report goes to stdout, progress to stderr")]
/// Runs the scenarios selected (each with the variants selected), one after the other.
fn run_scenarios(
    args: &Args,
    plan: Plan,
    servers: &Servers,
    rt: &tokio::runtime::Runtime,
    started: Instant,
    wanted: &impl Fn(&str) -> bool,
) -> Result<Vec<scenarios::Outcome>, BoxError> {
    let mut outcomes = Vec::new();
    for name in scenarios::NAMES.into_iter().filter(|n| wanted(n)) {
        eprintln!("bench: {name} ({:.0?} so far)", started.elapsed());
        let mut scenario = scenarios::build(name, servers)?;
        scenario.retain_variants(&args.variants);
        if scenario.variants.is_empty() {
            continue;
        }
        outcomes.extend(rt.block_on(scenarios::run(&scenario, plan)));
    }
    Ok(outcomes)
}

/// How a table of its own is written: as markdown (quick or not), and as JSON.
type Renderers<R> = (fn(&[R], bool) -> String, fn(&[R]) -> serde_json::Value);

#[allow(clippy::print_stdout, reason = "the report goes to stdout")]
/// A table of its own (`name`: empty-behind, liar): printed after the report, and written next
/// to it as `name.json` and `name.md` (their paths added to `paths`).
fn write_table<R>(
    name: &str,
    table: &Result<Vec<R>, String>,
    quick: bool,
    paths: &mut Vec<std::path::PathBuf>,
    (markdown, json): Renderers<R>,
) -> Result<(), BoxError> {
    match table {
        Ok(rows) => {
            let md = markdown(rows, quick);
            println!("{md}");
            let dir = report::out_dir(quick);
            for (file, contents) in [
                (format!("{name}.json"), serde_json::to_string_pretty(&json(rows)).unwrap_or_default()),
                (format!("{name}.md"), md),
            ] {
                std::fs::write(dir.join(&file), contents)?;
                paths.push(dir.join(file));
            }
        }
        Err(why) => println!("### {name}\n\nNot measured: {why}\n"),
    }
    Ok(())
}

/// The liar table in markdown: the bench's weather said.
fn liar_markdown(rows: &[liar::Row], quick: bool) -> String {
    let rounds = if quick { "Quick run: one round." } else { "8 rounds." };
    liar::markdown(rows, &format!("The three honest providers down (503) for 100 ms each in turn. {rounds}"))
}

/// The liar table's target: with block checks, logs proven and consensus on, no wrong answer.
/// The honest providers flap, which may fail a read (an error, counted apart) but can never
/// make a wrong answer right, so a wrong answer there is a bug, and the bench fails.
fn check_liar(liar: &Result<Vec<liar::Row>, String>, wanted: &impl Fn(&str) -> bool) -> Result<(), BoxError> {
    match liar {
        Err(why) if wanted("liar") => Err(format!("the liar table did not run: {why}").into()),
        Err(_) => Ok(()),
        Ok(rows) => match rows.iter().find(|r| r.must_be_right && r.wrong() > 0) {
            Some(r) => {
                Err(format!("{}: {} wrong answers from a lying provider", r.contender, r.wrong()).into())
            }
            None => Ok(()),
        },
    }
}

/// Every request is expected to succeed (failover included): a failure means the bench or
/// failnext is broken, and the figures compare different work. The peer and empty-behind tables
/// measure wrong answers; only a run that could not happen fails.
fn check_failures(
    outcomes: &[scenarios::Outcome],
    blocklag: &Result<blocklag::Outcome, String>,
    peers: &Result<Vec<peers::Row>, String>,
    empty_behind: &Result<Vec<empty::Row>, String>,
    wanted: &impl Fn(&str) -> bool,
) -> Result<(), BoxError> {
    let failed: u64 = outcomes.iter().flat_map(|o| &o.rows).map(|r| r.errors).sum();
    let blocklag_failed = blocklag.as_ref().map_or(0, |b| b.checks.iter().map(|c| c.failed_checks).sum());
    // The peer table measures wrong answers; only a run that could not happen fails.
    if let Err(why) = &peers
        && wanted("peers")
    {
        return Err(format!("the peer table did not run: {why}").into());
    }
    if let Err(why) = &empty_behind
        && wanted("empty-behind")
    {
        return Err(format!("the empty-behind table did not run: {why}").into());
    }
    if failed + blocklag_failed as u64 > 0 {
        return Err(
            format!("{failed} requests and {blocklag_failed} blocklag checks failed (see `errors`)").into()
        );
    }
    Ok(())
}

fn figures(b: &blocklag::Outcome) -> Option<BlocklagFigures> {
    let eligible = |mode: &str, threads: usize| {
        b.eligible.iter().find(|e| e.mode == mode && e.threads == threads).map(|e| e.ns_cpu)
    };
    let check = |n: usize| b.checks.iter().find(|c| c.providers == n).map(|c| c.median_ms);
    Some(BlocklagFigures {
        eligible_idle_ns: eligible("idle", 1)?,
        eligible_one_ns: eligible("publishing", 1)?,
        eligible_two_ns: eligible("publishing", 2)?,
        check_one_ms: check(1)?,
        check_128_ms: check(128)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Option<Args>, BoxError> {
        parse_args(args.iter().map(|a| (*a).to_owned()))
    }

    #[test]
    fn arguments_are_parsed_by_hand() {
        let args = parse(&["--quick", "--rounds", "3", "--scenario", "hang", "--variant", "failover"])
            .unwrap()
            .unwrap();
        assert!(args.quick && !args.no_pin);
        assert_eq!(args.rounds, Some(3));
        assert_eq!(args.only, ["hang"]);
        assert_eq!(args.variants, ["failover"]);
        assert!(parse(&["--help"]).unwrap().is_none());
        assert!(parse(&["--scenario", "nope"]).is_err());
        assert_eq!(parse(&["--scenario", "empty-behind"]).unwrap().unwrap().only, ["empty-behind"]);
        assert!(parse(&["--rounds"]).is_err());
        assert!(parse(&["--bogus"]).is_err());
    }
}

//! The demo bot: `cargo xtask demo [--seconds N] [--rpc URL]...`.
//!
//! Runs failnext and failnext-blocklag in a small bot against three simulated providers
//! through scripted outages, lag and rate limits (or against real providers with `--rpc`),
//! prints a live view once a second and a summary at the end, draws the run as
//! `target/demo/run.svg` (its path is in the summary), and exits with a non-zero status if an
//! invariant broke. See [`failnext_examples::demo`].
#![allow(clippy::print_stdout, clippy::print_stderr, reason = "a command-line demo prints what it does")]

use std::process::ExitCode;
use std::time::Duration;

use failnext_examples::demo::{self, Config, DEFAULT_DURATION};

const USAGE: &str = "\
usage: demo [--seconds N] [--rpc URL]...

  --seconds N   run for N seconds (default 20)
  --rpc URL     a real provider instead of the simulator; repeat for up to three, in
                priority order (https:// needs the `tls` feature, which `cargo xtask demo`
                turns on for an https URL)";

struct Args {
    seconds: Option<f64>,
    rpc: Vec<String>,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args { seconds: None, rpc: Vec::new() };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--seconds" => {
                let value = args.next().ok_or("--seconds needs a number")?;
                let seconds: f64 = value.parse().map_err(|_| format!("--seconds: not a number: {value}"))?;
                if !(seconds.is_finite() && seconds > 0.0 && seconds <= 86_400.0) {
                    return Err(format!("--seconds: out of range: {value}"));
                }
                parsed.seconds = Some(seconds);
            }
            "--rpc" => parsed.rpc.push(args.next().ok_or("--rpc needs a URL")?),
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument: {other}")),
        }
    }
    if parsed.rpc.len() > demo::PROVIDER_IDS.len() {
        return Err(format!("at most {} --rpc URLs", demo::PROVIDER_IDS.len()));
    }
    Ok(parsed)
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(why) => {
            if !why.is_empty() {
                eprintln!("demo: {why}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let duration = args.seconds.map_or(DEFAULT_DURATION, Duration::from_secs_f64);
    let config =
        if args.rpc.is_empty() { Config::simulated(duration) } else { Config::real(args.rpc, duration) };

    let ctrl_c = async {
        // Without a signal handler, run for the whole duration.
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    match demo::run(config, |line| println!("{line}"), ctrl_c).await {
        Ok(summary) => {
            println!();
            println!("{summary}");
            if summary.invariants_hold() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
        }
        Err(e) => {
            eprintln!("demo: {e}");
            ExitCode::FAILURE
        }
    }
}

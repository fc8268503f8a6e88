//! The demo bot: `cargo xtask demo [--seconds N] [--rpc URL]... [--metrics ADDR]`.
//!
//! Runs failnext and failnext-blocklag in a small bot against three simulated providers
//! through scripted outages, lag and rate limits (or against real providers with `--rpc`),
//! prints a live view once a second and a summary at the end, draws the run as
//! `target/demo/run.svg` (its path is in the summary), and exits with a non-zero status if an
//! invariant broke. With `--metrics ADDR` (feature `prometheus`) it also serves the crates'
//! metrics for Prometheus on that loopback address. See [`failnext_examples::demo`].
#![allow(clippy::print_stdout, clippy::print_stderr, reason = "a command-line demo prints what it does")]

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use failnext_examples::causes;
use failnext_examples::demo::{self, Config, DEFAULT_DURATION, EXCERPT_METRIC, MetricsEndpoint};

const USAGE: &str = "\
usage: demo [--seconds N] [--rpc URL]... [--metrics ADDR]

  --seconds N     run for N seconds (default 20)
  --rpc URL       a real provider instead of the simulator; repeat for up to three, in
                  priority order (https:// needs the `tls` feature, which `cargo xtask demo`
                  turns on for an https URL)
  --metrics ADDR  serve failnext's and failnext-blocklag's metrics for Prometheus on ADDR,
                  a loopback IP and port such as 127.0.0.1:9898 (port 0: any free port;
                  needs the `prometheus` feature, which `cargo xtask demo` turns on)";

struct Args {
    seconds: Option<f64>,
    rpc: Vec<String>,
    metrics: Option<SocketAddr>,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args { seconds: None, rpc: Vec::new(), metrics: None };
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
            "--metrics" => {
                let value = args.next().ok_or("--metrics needs an address such as 127.0.0.1:9898")?;
                let addr = value.parse().map_err(|_| {
                    format!("--metrics: not an IP address and port: {value} (e.g. 127.0.0.1:9898)")
                })?;
                parsed.metrics = Some(addr);
            }
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
    // Before the bot, so that its first request is counted.
    let metrics = match args.metrics.map(MetricsEndpoint::start).transpose() {
        Ok(metrics) => metrics,
        Err(e) => {
            eprintln!("demo: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(metrics) = &metrics {
        println!("metrics: curl {}", metrics.url());
    }
    let duration = args.seconds.map_or(DEFAULT_DURATION, Duration::from_secs_f64);
    let config =
        if args.rpc.is_empty() { Config::simulated(duration) } else { Config::real(args.rpc, duration) };

    let ctrl_c = async {
        // Without a signal handler, run for the whole duration.
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    let simulated = config.is_simulated();
    match demo::run(config, |line| println!("{line}"), ctrl_c).await {
        Ok(summary) => {
            println!();
            println!("{summary}");
            if let Some(metrics) = &metrics {
                show_metrics(metrics).await;
            }
            let rehearsed = !simulated || rehearsal().await;
            let followed = !simulated || following().await;
            if summary.invariants_hold() && rehearsed && followed {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("demo: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The rehearsal of read bundles (feature `alloy`, which `cargo xtask demo` turns on):
/// prints its line; whether it held.
#[cfg(feature = "alloy")]
async fn rehearsal() -> bool {
    use failnext_examples::rehearsal::{Plan, rehearse};
    println!();
    match rehearse(Plan::default()).await {
        Ok(r) => {
            println!("{r}");
            r.holds()
        }
        Err(e) => {
            eprintln!("demo: the rehearsal could not run: {e}");
            false
        }
    }
}

/// The chain follower through the primary's outages (feature `alloy`): prints its line;
/// whether it held.
#[cfg(feature = "alloy")]
async fn following() -> bool {
    match failnext_examples::following::follow(300).await {
        Ok(followed) => {
            println!("{followed}");
            followed.holds()
        }
        Err(e) => {
            eprintln!("demo: the follower could not run: {e}");
            false
        }
    }
}

#[cfg(not(feature = "alloy"))]
async fn following() -> bool {
    true
}

#[cfg(not(feature = "alloy"))]
async fn rehearsal() -> bool {
    println!();
    println!(
        "rehearsal: not built (it needs the crate's `alloy` feature, which `cargo xtask demo` turns on)"
    );
    true
}

/// Prints the `failnext_attempts_total` samples of one scrape of the endpoint, as Prometheus
/// would see them.
async fn show_metrics(metrics: &MetricsEndpoint) {
    match metrics.scrape().await {
        Ok(scrape) => {
            println!();
            println!("metrics ({EXCERPT_METRIC} in a scrape of {}):", metrics.url());
            for line in demo::excerpt(&scrape, EXCERPT_METRIC) {
                println!("  {line}");
            }
        }
        Err(e) => eprintln!("demo: could not scrape {}: {}", metrics.url(), causes(&e)),
    }
}

//! The demo bot: failnext and failnext-blocklag keeping a bot alive through provider
//! outages, lag and rate limits.
//!
//! [`run`] starts three simulated providers (`primary`, `backup`, `third`) and a scripted
//! timeline scaled to the run's duration: the primary is slow for a while (+200 ms at the
//! default length, at most a block in compressed runs), then goes down and comes back lagging;
//! the third stalls (its head stops moving) while the primary is down, and follows the chain
//! again; the backup rate-limits for a while (HTTP 429, added to failnext's trigger statuses);
//! at the end the backup reports a head 1000 blocks ahead of the chain (an outlier: under the
//! 0.1 reference, the highest height, it alone stays eligible) and then the true head again.
//! Meanwhile:
//!
//! - a [`Monitor`](failnext_blocklag::Monitor) checks every provider's block height every second and feeds failnext's
//!   eligibility;
//! - the bot reads several times a second (`eth_blockNumber`, `eth_getBalance`, `eth_call`,
//!   each with `allow_failover()`) and writes now and then (`eth_sendRawTransaction` with
//!   `deny_failover()`);
//! - once a second a live view shows each provider's height, whether it is eligible and why
//!   (its lag against the limit, or its probe's error), its breaker (open while it cools
//!   down, how often it opened) and the requests it served;
//! - a sampler records every provider's state for the picture.
//!
//! At the end it returns a [`Summary`] and checks two invariants: no read failed while a
//! healthy eligible provider existed, and no write reached more than one provider. It also
//! draws the run as an SVG ([`Config::picture`], by default `target/demo/run.svg` next to the
//! bench's `target/bench/latency.svg`): one lane per provider with its state by the timeline,
//! its eligibility by the monitor and its breaker over time, and a tick for each read and write
//! it answered. With [`Config::real`] the same bot runs against real providers, without fault
//! injection and without the health invariant (which needs the simulator's knowledge).
//!
//! With the crate's feature `prometheus`, [`MetricsEndpoint::start`] serves failnext's and
//! failnext-blocklag's metrics (their feature `metrics`: attempts, failovers, skips, breaker
//! transitions, heights, lag, eligibility, all labelled by endpoint id) for Prometheus to scrape
//! on a loopback address; the demo's `--metrics ADDR` starts it before the bot and shows the
//! `failnext_attempts_total` samples at the end. Without the feature it refuses, naming it.
//!
//! ```no_run
//! # async fn demo() -> Result<(), failnext_examples::demo::DemoError> {
//! use std::time::Duration;
//! use failnext_examples::demo::{self, Config};
//!
//! let config = Config::simulated(Duration::from_secs(5));
//! let summary = demo::run(config, |line| eprintln!("{line}"), std::future::pending()).await?;
//! assert!(summary.invariants_hold());
//! # Ok(()) }
//! ```

mod bot;
mod config;
mod picture;
mod prometheus;
mod summary;
mod timeline;
mod trace;

use std::error::Error;
use std::fmt;

pub use bot::run;
pub use config::{Config, DEFAULT_DURATION};
pub use prometheus::{EXCERPT_METRIC, MetricsEndpoint, MetricsError, excerpt};
pub use summary::{ProviderSummary, Summary};

/// The provider ids, in priority order.
pub const PROVIDER_IDS: [&str; 3] = ["primary", "backup", "third"];

/// Why the demo could not start.
pub struct DemoError(String);

impl DemoError {
    pub(crate) fn new(what: impl fmt::Display) -> DemoError {
        DemoError(what.to_string())
    }
}

impl fmt::Display for DemoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

// `main` prints a returned error with `Debug`: keep it the plain sentence.
impl fmt::Debug for DemoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Error for DemoError {}

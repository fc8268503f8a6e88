//! The demo bot: failnext and failnext-blocklag keeping a bot alive through provider
//! outages, lag and rate limits.
//!
//! [`run`] starts three simulated providers (`primary`, `backup`, `third`) and a scripted
//! timeline scaled to the run's duration: the primary goes down, comes back lagging, the
//! backup rate-limits for a while (HTTP 429, added to failnext's trigger statuses), and the
//! third stays healthy. Meanwhile:
//!
//! - a [`Monitor`](failnext_blocklag::Monitor) checks every provider's block height every second and feeds failnext's
//!   eligibility;
//! - the bot reads several times a second (`eth_blockNumber`, `eth_getBalance`, `eth_call`,
//!   each with `allow_failover()`) and writes now and then (`eth_sendRawTransaction` with
//!   `deny_failover()`);
//! - once a second a live view shows each provider's height, eligibility, cooldown and the
//!   requests it served.
//!
//! At the end it returns a [`Summary`] and checks two invariants: no read failed while a
//! healthy eligible provider existed, and no write reached more than one provider. With
//! [`Config::real`] the same bot runs against real providers, without fault injection and
//! without the health invariant (which needs the simulator's knowledge).
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
mod summary;
mod timeline;
mod trace;

use std::error::Error;
use std::fmt;

pub use bot::run;
pub use config::{Config, DEFAULT_DURATION};
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

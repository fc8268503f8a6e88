//! `Config`: what the demo bot runs against, for how long, and how often it does what.

use std::path::PathBuf;
use std::time::Duration;

use failnext::Cooldown;

/// The demo's length when none is given: about 20 seconds.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(20);

/// How the demo bot runs. Start from [`Config::simulated`] or [`Config::real`] and change
/// fields as needed.
#[derive(Clone, Debug)]
pub struct Config {
    /// Real provider URLs in priority order (one to three; `https://` needs the crate's `tls`
    /// feature). Empty: three simulated providers with scripted faults.
    pub rpc: Vec<String>,
    /// How long the bot runs; the simulated fault timeline is scaled to it.
    pub duration: Duration,
    /// How often the lag monitor checks every provider.
    pub check_interval: Duration,
    /// How often the bot reads (`eth_blockNumber`, `eth_getBalance`, `eth_call` in turn).
    pub read_interval: Duration,
    /// How often the bot sends a write (`eth_sendRawTransaction`, failover denied).
    pub write_interval: Duration,
    /// How often the live view is printed.
    pub view_interval: Duration,
    /// How often the simulated chain adds a block.
    pub block_time: Duration,
    /// The monitor's inclusive lag limit, in blocks.
    pub max_lag: u64,
    /// How far behind the simulated primary comes back after its outage, in blocks.
    pub lag_blocks: u64,
    /// failnext's cooldown rule.
    pub cooldown: Cooldown,
    /// failnext's bound on each attempt.
    pub attempt_timeout: Duration,
    /// The monitor's bound on each probe.
    pub probe_timeout: Duration,
    /// Where the picture of the run (an SVG) is written at the end; `None`: no picture. By
    /// default `target/demo/run.svg` (under `$CARGO_TARGET_DIR` when it is set), next to the
    /// bench's `target/bench/latency.svg`.
    pub picture: Option<PathBuf>,
}

impl Config {
    /// Three simulated providers for `duration`.
    ///
    /// At the default 20 seconds the monitor checks every second, the bot reads about seven
    /// times a second and writes every two seconds. Shorter runs compress these intervals (and
    /// the cooldown and block time) in proportion, so every phase of the timeline still sees
    /// several checks and many reads.
    pub fn simulated(duration: Duration) -> Config {
        let scale = (duration.as_secs_f64() / DEFAULT_DURATION.as_secs_f64()).min(1.0);
        let scaled = |ms: u64, floor_ms: u64| {
            Duration::from_millis(ms).mul_f64(scale).max(Duration::from_millis(floor_ms))
        };
        Config {
            rpc: Vec::new(),
            duration,
            check_interval: scaled(1000, 150),
            read_interval: scaled(150, 40),
            write_interval: scaled(2000, 250),
            view_interval: Duration::from_secs(1),
            block_time: scaled(250, 25),
            max_lag: 3,
            lag_blocks: 20,
            cooldown: Cooldown::new(3, scaled(3000, 300)),
            attempt_timeout: Duration::from_secs(1),
            probe_timeout: Duration::from_millis(800),
            picture: Some(crate::demo::picture::default_path()),
        }
    }

    /// The same bot against real providers at `urls`, for `duration`: no fault injection,
    /// longer timeouts, failnext's default cooldown.
    pub fn real(urls: Vec<String>, duration: Duration) -> Config {
        Config {
            rpc: urls,
            attempt_timeout: Duration::from_secs(5),
            probe_timeout: Duration::from_secs(5),
            cooldown: Cooldown::default(),
            ..Config::simulated(duration.max(DEFAULT_DURATION))
        }
        .with_duration(duration)
    }

    /// Whether the bot runs against the simulator.
    pub fn is_simulated(&self) -> bool {
        self.rpc.is_empty()
    }

    fn with_duration(mut self, duration: Duration) -> Config {
        self.duration = duration;
        self
    }
}

//! The settings of a soak run: the profiles and every field they fill.

use std::time::Duration;

use http::StatusCode;

use crate::soak::measure::{MeasureRun, MeasureSettings, Scenario, Subject};

/// Which preset a soak starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// A few thousand requests; well under a minute in a debug build. Run by `cargo xtask ci`.
    /// Measures: flapping at ~200 ms for 2 s, half-stale for 2 s.
    Ci,
    /// 200 000 requests at concurrency 64; about two minutes in release. Run by
    /// `cargo xtask soak`. Measures: flapping at ~2 s for 30 s, flapping at ~200 ms for 30 s,
    /// half-stale for 20 s (issue 20's figures).
    Full,
    /// The checked phases of `ci`, then a long measure (120 s, flapping) of the
    /// configurations: the figures of issue 10. Pick the fault length with `--fault-ms` (2000
    /// by default).
    Measure,
}

impl Profile {
    /// `ci` or `full`.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Ci => "ci",
            Profile::Full => "full",
            Profile::Measure => "measure",
        }
    }
}

impl std::str::FromStr for Profile {
    type Err = String;

    fn from_str(s: &str) -> Result<Profile, String> {
        match s {
            "ci" => Ok(Profile::Ci),
            "full" => Ok(Profile::Full),
            "measure" => Ok(Profile::Measure),
            other => Err(format!("unknown profile {other:?}: expected ci, full or measure")),
        }
    }
}

/// Settings of one soak run. [`Config::new`] fills them from a profile; every field may be
/// changed afterwards.
#[derive(Clone, Debug)]
pub struct Config {
    /// The preset these settings came from (shown in the report).
    pub profile: Profile,
    /// Seed of the request mix and of the fault and check schedules.
    pub seed: u64,
    /// Requests of the main phase.
    pub requests: u64,
    /// Requests of the warm-up phase, before the resource baseline is taken.
    pub warmup_requests: u64,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Simulated providers (endpoints), `p0` first.
    pub providers: usize,
    /// failnext's per-attempt deadline; bounds every hang.
    pub attempt_timeout: Duration,
    /// The monitor's probe timeout.
    pub probe_timeout: Duration,
    /// Pause between two monitor checks.
    pub check_interval: Duration,
    /// Range of the pause between two fault switches, in milliseconds.
    pub fault_wait_ms: (u64, u64),
    /// failnext's cooldown: consecutive failures and duration.
    pub cooldown: (u32, Duration),
    /// The monitor's `max_lag`.
    pub max_lag: u64,
    /// Block time of the simulated chain.
    pub block_time: Duration,
    /// Each worker pauses up to this long before a request (none for three in ten), as a bot
    /// between calls; with `concurrency` this sets the request rate.
    pub think_max: Duration,
    /// Cancelled requests are dropped after a delay drawn in `0..=cancel_window`.
    pub cancel_window: Duration,
    /// Scheduling slack allowed on top of `attempt_timeout` and `probe_timeout` when judging
    /// that attempts and checks are bounded, on a loaded machine.
    pub timing_slack: Duration,
    /// A request not finished after this long counts as hung (a violation).
    pub safety_bound: Duration,
    /// How long to wait for connections and tasks to return to the baseline.
    pub settle_timeout: Duration,
    /// How much resident memory may exceed the baseline after the run, on top of what the
    /// simulated chain keeps by design (see [`TX_ALLOWANCE`](crate::soak::TX_ALLOWANCE)).
    pub memory_tolerance: u64,
    /// The measures after the checked phases: each one's scenario and length, the rate, the
    /// configurations side by side (module `measure`).
    pub measure: MeasureSettings,
    /// Rounds of the liar after the measures (0: none): a provider lying in well-formed ways
    /// among three honest ones failing by seeded spells, read through the alloy transport with
    /// its defaults and with logs proven and consensus on (crate `failnext-liar`); the second
    /// must answer nothing wrong (check `Liar`).
    pub liar_rounds: u32,
    /// How long each of the liar's honest providers' spells lasts.
    pub liar_spell: Duration,
}

impl Config {
    /// The preset of `profile`, with `seed`.
    pub fn new(profile: Profile, seed: u64) -> Config {
        let (requests, warmup_requests) = match profile {
            Profile::Ci | Profile::Measure => (5_000, 1_000),
            Profile::Full => (200_000, 10_000),
        };
        let run = |scenario, secs| MeasureRun { scenario, duration: Duration::from_secs(secs) };
        let flapping = |ms| Scenario::Flapping { fault: Duration::from_millis(ms) };
        let runs = match profile {
            Profile::Ci => vec![run(flapping(200), 2), run(Scenario::HalfStale, 2)],
            Profile::Full => {
                vec![run(flapping(2_000), 30), run(flapping(200), 30), run(Scenario::HalfStale, 20)]
            }
            Profile::Measure => vec![run(flapping(2_000), 120)],
        };
        Config {
            profile,
            seed,
            requests,
            warmup_requests,
            concurrency: 64,
            providers: 4,
            attempt_timeout: Duration::from_millis(250),
            probe_timeout: Duration::from_millis(250),
            check_interval: Duration::from_millis(100),
            fault_wait_ms: (5, 60),
            cooldown: (3, Duration::from_millis(150)),
            max_lag: 2,
            block_time: Duration::from_millis(50),
            think_max: Duration::from_millis(20),
            cancel_window: Duration::from_millis(400),
            timing_slack: Duration::from_secs(2),
            safety_bound: Duration::from_secs(30),
            settle_timeout: Duration::from_secs(15),
            memory_tolerance: 32 * 1024 * 1024,
            measure: MeasureSettings { runs, rate: 250, subjects: Subject::ALL.to_vec() },
            liar_rounds: match profile {
                Profile::Ci => 2,
                Profile::Full | Profile::Measure => 8,
            },
            liar_spell: Duration::from_millis(200),
        }
    }
}

/// The status the soak adds to failnext's trigger statuses (502, 503, 504): rate limits.
pub(crate) const ADDITIONAL_TRIGGER: StatusCode = StatusCode::TOO_MANY_REQUESTS;

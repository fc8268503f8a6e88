//! Issue 20's targets for the paired configuration: each a measured value against a bound,
//! MET or MISSED. They are reported, never soak violations.
//!
//! - flapping, fault windows ~2 s (1 s or more): correct of answerable >= 99.9 %;
//! - flapping, ~200 ms (under 1 s): correct of answerable >= 99 %;
//! - flapping, both: <= 1.1 requests per read, and p99 of the correct reads <= 100 ms;
//! - half-stale: correct of answerable >= 99 %, at <= 1.1 requests per read.

use std::fmt;
use std::time::Duration;

use super::{Figures, MeasureReport, Scenario, Subject};

/// The fault length from which a flapping measure is judged by the ~2 s target.
const LONG_FAULTS: Duration = Duration::from_secs(1);
/// The most requests per read the paired configuration may send.
const REQUESTS_PER_READ: f64 = 1.1;
/// The slowest p99 of correct reads.
const P99: Duration = Duration::from_millis(100);

/// One target of one measure: what, the bound, the measured value, met or not.
#[derive(Clone, Debug)]
pub struct Target {
    /// The measure's scenario.
    pub scenario: Scenario,
    /// What is measured against what, e.g. `correct of answerable >= 99.9 %`.
    pub what: String,
    /// The measured value, as printed.
    pub measured: String,
    /// Whether it met the target.
    pub met: bool,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = if self.met { "MET" } else { "MISSED" };
        write!(f, "{:<56} {:<38} {:>16}  {verdict}", self.scenario.to_string(), self.what, self.measured)
    }
}

/// The targets of `report`'s measure for the paired configuration (none when it was not
/// measured).
pub(super) fn targets(report: &MeasureReport) -> Vec<Target> {
    let Some(fig) = report.figures(Subject::Paired) else { return Vec::new() };
    let scenario = report.run.scenario;
    let target = |what: String, measured: String, met: bool| Target { scenario, what, measured, met };
    let answerable = |bound: f64| {
        target(
            format!("correct of answerable >= {bound} %"),
            format!("{:.3} %", fig.answerable_percent()),
            fig.answerable_percent() >= bound,
        )
    };
    let requests = |fig: &Figures| {
        target(
            format!("requests per read <= {REQUESTS_PER_READ}"),
            format!("{:.3}", fig.requests_per_read()),
            fig.reads > 0 && fig.requests_per_read() <= REQUESTS_PER_READ,
        )
    };
    match scenario {
        Scenario::Flapping { fault } => {
            let bound = if fault >= LONG_FAULTS { 99.9 } else { 99.0 };
            let p99 = target(
                format!("p99 of correct reads <= {} ms", P99.as_millis()),
                fig.p99.map_or_else(|| "n/a".to_owned(), |d| format!("{:.1} ms", d.as_secs_f64() * 1000.0)),
                fig.p99.is_some_and(|d| d <= P99),
            );
            vec![answerable(bound), requests(fig), p99]
        }
        Scenario::HalfStale => vec![answerable(99.0), requests(fig)],
    }
}

//! Case counts and a runner for the property-based fuzz suites of every crate.

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// The number in environment variable `name`, or `default` when it is unset or not a number.
pub fn env_cases(name: &str, default: u32) -> u32 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Cases for a pure (no I/O) property: `FAILNEXT_FUZZ_CASES`, 25 000 by default.
pub fn pure_cases() -> u32 {
    env_cases("FAILNEXT_FUZZ_CASES", 25_000)
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config { cases, failure_persistence: None, max_shrink_iters: 4096, ..Config::default() })
}

/// Runs `test` on `cases` values of `strategy`; panics with the shrunk counterexample.
///
/// # Panics
///
/// When `test` fails for some value: that is how a test reports a counterexample.
pub fn check<S: Strategy>(cases: u32, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: std::fmt::Debug,
{
    if let Err(err) = runner(cases).run(&strategy, test) {
        panic!("{err}");
    }
}

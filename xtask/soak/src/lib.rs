//! The fault-injection soak behind `cargo xtask soak` (binary `soak`): many concurrent
//! requests through `Failover` + `Monitor` against simulated providers whose faults switch on
//! a seeded schedule, every rule checked per request, resources compared with a baseline
//! afterwards (readings from `failnext_loopback::resources`).
//!
//! The cross-crate test suites (model-based tests, hostile providers, redaction audit) live in
//! `examples/tests/`; the fuzz suites in the tests of the crate they fuzz.
// Library code handles network input: no unwrap or expect outside tests.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod soak;

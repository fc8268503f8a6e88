//! Reliability and security proof for failnext and failnext-blocklag.
//!
//! - [`soak`]: the fault-injection soak behind `cargo xtask soak` (binary `soak`): many
//!   concurrent requests through `Failover` + `Monitor` against simulated providers whose
//!   faults switch on a seeded schedule, every rule checked per request, resources compared
//!   with a baseline afterwards.
//! - [`resources`]: what the process holds (RSS, file descriptors, TCP connections, tokio
//!   tasks), read from `/proc`; used by the soak and by the hostile-provider tests.
//!
//! The tests of this crate (`tests/`) hold the hostile-provider tests and the model-based,
//! fuzzing and redaction suites.
// Library code handles network input: no unwrap or expect outside tests.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod resources;
pub mod soak;

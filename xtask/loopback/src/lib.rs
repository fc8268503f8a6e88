//! The loopback fault toolkit shared by every test suite, the simulator and the bench.
//!
//! - [`raw`]: a programmable raw HTTP/1.1 server, a refused address, an attempt-logging
//!   middleware.
//! - [`resources`]: what the process holds (RSS, file descriptors, TCP connections, tokio
//!   tasks), read from `/proc`.
//! - [`cases`]: case counts and a runner for the property-based fuzz suites.
//!
//! Everything binds to 127.0.0.1 and every task a server spawns ends when the server is
//! dropped. Not published: a dev-only crate.

pub mod cases;
pub mod raw;
pub mod resources;

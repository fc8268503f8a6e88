//! Shared code for the failnext examples: a local provider simulator ([`sim`]), the two
//! providers an example talks to ([`Network`]), a tiny JSON-RPC client ([`call`], [`send`]),
//! [`causes`] to print an error with its sources, and [`ensure`], which makes an example fail
//! when what it shows did not happen. [`oracle`] states failnext's rules a second time, as pure
//! functions, for the test suites, the soak and the demo to judge the middleware against.
//! With the feature `alloy`, [`rehearsal`] runs a rehearsal of read bundles: a two-pool
//! quote bot reading through read bundles while its providers fail in every way a bot meets
//! (a fork, a wrong chain, lag, rate limits, pruned state).

#![doc(test(attr(deny(warnings), allow(dead_code))))]

mod check;
pub mod demo;
#[cfg(feature = "alloy")]
pub mod following;
mod jsonrpc;
pub mod monitoring;
mod network;
pub mod oracle;
#[cfg(feature = "alloy")]
pub mod rehearsal;
mod report;
pub mod sim;

pub use check::{Unmet, ensure};
pub use jsonrpc::{DUMMY_RAW_TX, Reply, RpcError, call, quantity, send};
pub use network::{BACKUP_URL_VAR, Network, PRIMARY_URL_VAR, SIM_CHAIN_ID, SetupError, Simulation};
pub use report::causes;

// The READMEs' code, compiled as doc tests so that it cannot rot. Every `rust` block is a
// complete `main.rs` as a user pastes it (no hidden lines); those that would reach a network
// are `no_run`. They need alloy's provider crate (the feature `alloy`), as the alloy quick
// starts do, and the fleet's Redis client (the feature `fleet`) for the fleet's snippet.

/// The workspace README (`README.md`).
#[cfg(all(doctest, feature = "alloy", feature = "fleet"))]
#[doc = include_str!("../../README.md")]
pub struct ReadmeWorkspace;

/// failnext's README (`failnext/README.md`, what crates.io shows).
#[cfg(all(doctest, feature = "alloy", feature = "fleet"))]
#[doc = include_str!("../../failnext/README.md")]
pub struct ReadmeFailnext;

/// failnext-blocklag's README (`failnext-blocklag/README.md`, what crates.io shows).
#[cfg(all(doctest, feature = "alloy", feature = "fleet"))]
#[doc = include_str!("../../failnext-blocklag/README.md")]
pub struct ReadmeFailnextBlocklag;

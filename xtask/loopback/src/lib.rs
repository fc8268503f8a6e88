//! The loopback fault toolkit shared by every test suite, the simulator and the bench.
//!
//! - [`server`]: [`Server`], a hyper HTTP/1.1 server whose handler answers each request with
//!   an [`Action`]; it counts and records what it received, can stop and restart on its port,
//!   and runs on the current runtime or on a [`ServerThread`].
//! - [`reply`]: [`Action`] (reply, close, reset, hang) and [`Reply`], a response whose body
//!   can pause, trickle, never end, stop short of its length or break off with a reset.
//! - [`received`]: [`Received`], one request as the server read it.
//! - [`raw`]: raw sockets for what hyper cannot do: a refused port ([`Refused`],
//!   [`refused_url`]) and bytes that are not HTTP ([`RawServer`]: garbage before a status
//!   line, endless header lines).
//! - [`thread`]: [`ServerThread`], servers on their own thread and runtime.
//! - [`middleware`]: [`AttemptLog`], which records the URL of every attempt.
//! - [`resources`]: what the process holds (RSS, file descriptors, TCP connections, tokio
//!   tasks), read from `/proc`.
//! - [`metrics`]: a `metrics` recorder that keeps what it is given, for the metrics tests.
//! - [`cases`]: case counts and a runner for the property-based fuzz suites.
//! - [`anvil`]: [`Anvil`], one real anvil node (Foundry's local Ethereum node) on a free
//!   loopback port, killed, paused and resumed by its handle, for the real-node tests.
//!
//! # Which faults are hyper's and which are raw
//!
//! | fault | made by |
//! | --- | --- |
//! | any status, headers, body; keep-alive, pipelining, chunked request bodies | hyper: [`Action::Reply`] |
//! | never answering (a hang) | hyper: a handler that never completes, [`Action::Hang`] |
//! | closing without a response | hyper: a handler error, [`Action::Close`] |
//! | resetting without a response | hyper: a handler error on a socket with `SO_LINGER` 0, [`Action::Reset`] |
//! | a reset mid-body | hyper: a body that errors after some bytes, `SO_LINGER` 0, [`End::Reset`] |
//! | a truncated body | hyper: `Content-Length` larger than what is sent, then close, [`End::Close`] |
//! | a body that stalls, trickles, or never ends; a huge announced length | hyper: [`End::Stall`], [`Reply::pause`], [`Reply::forever`], [`Reply::length`] |
//! | counting requests, connections, in-flight and abandoned requests; recording requests | hyper: [`Server`] |
//! | a refused port | raw: a socket bound but not listening, [`Refused`] |
//! | garbage before the status line; header lines that never end | raw: [`RawServer`], because hyper only writes well-formed heads |
//!
//! Everything binds to 127.0.0.1 and every task a server spawns ends when the server is
//! dropped; every anvil process is killed and reaped when its handle is dropped. Not published: a dev-only crate.

use std::sync::{Mutex, MutexGuard, PoisonError};

pub mod anvil;
pub mod cases;
pub mod metrics;
pub mod middleware;
pub mod raw;
pub mod received;
pub mod redis_server;
pub mod reply;
pub mod resources;
pub mod server;
pub mod thread;

pub use anvil::{Anvil, AnvilError, AnvilOptions};
pub use middleware::AttemptLog;
pub use raw::{RawServer, Refused, Script, refused_url};
pub use received::Received;
pub use redis_server::RedisServer;
pub use reply::{Action, End, Reply, response};
pub use server::{Handler, Later, LaterHandler, Respond, Server};
pub use thread::ServerThread;

/// Locks a mutex, ignoring poisoning: a failed assertion elsewhere must not cascade.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

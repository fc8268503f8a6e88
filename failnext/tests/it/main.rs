//! Behaviour of the failnext middleware against real loopback servers.
//!
//! One file per area of the reference behaviour catalogue; each test is named as the claim it
//! pins.

mod support;

mod breaker;
mod budget;
mod cooldown;
#[cfg(feature = "jsonrpc")]
mod corpus;
mod deadline;
mod errors;
mod events;
mod hedge;
mod host;
#[cfg(feature = "jsonrpc")]
mod jsonrpc;
mod judging;
mod latency;
#[cfg(feature = "jsonrpc")]
mod paired;
mod permission;
mod persist;
mod redaction;
mod replay;
mod retained;
mod selection;
mod smoke;
mod timeout;
mod trace;
mod triggers;

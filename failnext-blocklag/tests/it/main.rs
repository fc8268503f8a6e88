//! Behaviour of failnext-blocklag against real loopback servers.
//!
//! One file per area; each test is named as the claim it pins.

mod support;

mod chain;
mod clock;
mod concurrency;
mod config;
mod freshness;
mod head;
mod paired;
mod publication;
mod redaction;
mod rejection;
mod rules;
mod schedule;
mod with_failnext;

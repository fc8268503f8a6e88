//! The monitor at run time: its builder and settings, the monitor itself, its schedule and
//! wake-ups, what it tells failnext (the health source), its events and what it keeps across
//! a restart.

pub(crate) mod builder;
pub(crate) mod config_error;
pub(crate) mod event;
#[cfg(feature = "redis")]
pub(crate) mod fleet;
pub(crate) mod monitor;
pub(crate) mod persist;
pub(crate) mod schedule;
pub(crate) mod settings;
pub(crate) mod source;
pub(crate) mod wake;

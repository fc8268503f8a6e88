//! Judging the probes: the reference head, agreement by hash, heads judged by the clock,
//! each provider's evidence and fitness, one check's round, and the snapshot it publishes.

pub(crate) mod agreed;
pub(crate) mod agreement;
pub(crate) mod clock;
pub(crate) mod entry;
pub(crate) mod evidence;
pub(crate) mod fitness;
pub(crate) mod head_timing;
pub(crate) mod reference;
pub(crate) mod round;
pub(crate) mod snapshot;

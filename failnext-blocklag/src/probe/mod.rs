//! The probe: one bounded JSON-RPC exchange per call (its network half, `exchange`), the
//! rules a response must meet (its pure half: a height, a head with its hash), and the errors
//! a probe and a check report.

pub(crate) mod block_hash;
pub(crate) mod check_error;
pub(crate) mod exchange;
pub(crate) mod head;
pub(crate) mod parse;
pub(crate) mod probe_error;
pub(crate) mod rpc;

//! The peer table: alloy's own `Http`, alloy's `FallbackLayer` (with and without
//! `RetryBackoffLayer`) and failnext's `FailoverTransport` over the same loopback providers,
//! in seven scenarios where the first provider is good or bad in one way.
//!
//! Every contender is an alloy `RpcClient` calling `eth_blockNumber`. An answer is correct when
//! it is the head of the good providers ([`HEAD`](scenario::HEAD)); a JSON-RPC error, a transport error, a
//! lagging head or no answer within [`CALL_LIMIT`](scenario::CALL_LIMIT) is not. Three providers: the first
//! (`primary`) is the one a scenario makes bad, `secondary` and `backup` are always good. Each
//! contender gets fresh servers and its own clients, so none inherits another's state, and
//! sends its reads from [`LANES`](scenario::LANES) tasks, each starting one read every [`GAP`](scenario::GAP) (open loop,
//! ~650 reads/s; none started after [`RUN_LIMIT`](scenario::RUN_LIMIT)), so that time-based behaviour (breakers, flapping, `Retry-After`) plays out
//! over the run.
//!
//! Measured per contender: correct answers; p50 and p99 of every read; requests that reached
//! the bad provider (counted by that server; for the refused primary, where nothing arrives,
//! the attempts the client started, counted on the client side), with the failnext monitor's
//! probes counted apart (by their User-Agent); and the client thread's CPU time per read.

mod contender;
mod provider;
mod run;
mod scenario;
mod table;
mod verdicts;

pub(crate) use run::run;
pub(crate) use scenario::Row;
pub(crate) use table::{json, markdown};
pub(crate) use verdicts::verdicts;

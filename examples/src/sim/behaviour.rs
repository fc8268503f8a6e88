//! `Behaviour`: how a simulated provider answers, switchable at run time.

use std::time::Duration;

/// How a [`Provider`](crate::sim::Provider) answers. Set with
/// [`Provider::set`](crate::sim::Provider::set); every request reads the behaviour in force
/// when it arrives.
///
/// The faults are those a client of hosted Ethereum providers meets: the provider is gone,
/// its load balancer answers for it, it throttles, its node errs, falls behind or stops
/// following the chain, or the bytes that come back are not what JSON-RPC promises.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Behaviour {
    /// Answers every call correctly.
    #[default]
    Healthy,
    /// Not listening: connecting is refused. Switching to `Down` closes the listener and every
    /// open connection; switching back rebinds the same port.
    Down,
    /// Answers every request with this HTTP status (meant for 502, 503 and 504) and a short
    /// plain-text body, as a load balancer in front of a failed node does.
    Status(u16),
    /// Answers HTTP 429 with a `Retry-After` header of this many seconds.
    RateLimited {
        /// The `Retry-After` value, in seconds.
        retry_after_secs: u64,
    },
    /// Answers HTTP 200 carrying this JSON-RPC error for every call (each call of a batch).
    JsonRpcError {
        /// The JSON-RPC error code, for example `-32000` or `-32005`.
        code: i64,
        /// The error message, for example `"header not found"`.
        message: String,
    },
    /// Serves the chain as it was this many blocks ago: `eth_blockNumber` reports the head
    /// minus the lag, and newer blocks and receipts are not found.
    Lagging(u64),
    /// Every other request is answered as [`Lagging`](Behaviour::Lagging) with this many blocks
    /// would answer it, the others as a healthy provider does (strictly alternating, the
    /// first healthy): a node behind a load balancer whose backends are not all in sync, as
    /// hosted providers are. Answers at once (no extra delay). A batch is answered from one
    /// view, as one request.
    HalfStale(u64),
    /// Stops following the chain: serves the height it showed when it was switched to
    /// `Stalled`, however far the chain moves on.
    Stalled,
    /// Reports a head this many blocks ahead of the chain (a fork, a bug, a lie): only
    /// `eth_blockNumber` answers head + n; every other call is answered as a healthy provider
    /// does, from the real head.
    Ahead(u64),
    /// Answers correctly after this extra delay.
    Slow(Duration),
    /// Reads the request and never answers, holding the connection open until the client
    /// closes it.
    Hang,
    /// Answers correctly but reports this chain id (and serves under it; its block hashes are
    /// its chain's, so no other provider knows them).
    WrongChain(u64),
    /// Follows the chain's heights but on a fork of its own: every block it serves has another
    /// hash than the same height of the chain (this fork's, numbered by the value). A read
    /// pinned to a hash of the chain is not found here, and the other way round.
    Forked(u64),
    /// Keeps state for only the newest blocks: a state read (`eth_call`, `eth_getBalance`,
    /// ...) at a block more than this many below its head fails with geth's
    /// `missing trie node` error, as a full (non-archive) node does. Current reads succeed.
    NoArchive(u64),
    /// Answers HTTP 200 whose body is not JSON.
    Malformed,
    /// Answers HTTP 200 with the correct JSON-RPC reply padded with whitespace to
    /// [`OVERSIZED_LEN`] bytes, still valid JSON, to exercise response size limits.
    Oversized,
    /// Starts the correct HTTP 200 reply, sends half of its body and resets the connection.
    ResetMidBody,
    /// Starts the correct HTTP 200 reply with its full `Content-Length`, sends half of the
    /// body and closes the connection cleanly (FIN): a body that ends early.
    Truncated,
}

/// The body length an [`Oversized`](Behaviour::Oversized) provider pads its replies to: 8 KiB.
pub const OVERSIZED_LEN: usize = 8 * 1024;

/// The body a [`Malformed`](Behaviour::Malformed) provider answers with.
pub const MALFORMED_BODY: &str = "<html><body><h1>upstream error</h1></body></html>";

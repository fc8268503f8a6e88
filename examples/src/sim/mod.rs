//! A local simulator of Ethereum JSON-RPC providers, for examples, the demo and tests.
//!
//! A [`Chain`] is one simulated chain whose head advances on a tick (or by hand). Each
//! [`Provider`] of it is a real HTTP/1.1 server on `127.0.0.1` answering JSON-RPC 2.0
//! (`eth_blockNumber`, `eth_chainId`, `eth_getBalance`, `eth_call`, `eth_getBlockByNumber`,
//! `eth_getBlockByHash`, `eth_sendRawTransaction`, `eth_getTransactionReceipt`, and batches of
//! them; block parameters as tags, numbers or EIP-1898 objects, by hash or number), and can be
//! switched at run time to a [`Behaviour`]: down, an HTTP error, rate limited, a JSON-RPC error,
//! lagging (always or every other request), stalled, reporting a head ahead, slow, hanging, on
//! the wrong chain, on a fork of its own (other block hashes), without archive state, or a
//! malformed, oversized, truncated or reset body. Every block has a hash that names its chain, fork and number, so a read pinned
//! to a hash is answered only by a provider that has that block. Each provider
//! counts the requests it received, by method.
//!
//! ```no_run
//! use std::time::Duration;
//! use failnext_examples::sim::{Behaviour, Chain};
//!
//! # async fn demo() -> std::io::Result<()> {
//! let chain = Chain::start(31337, Duration::from_secs(1));
//! let primary = chain.provider("primary").await?;
//! let backup = chain.provider("backup").await?;
//! primary.set(Behaviour::Status(503)).await?;
//! // ... send requests to primary.url() and backup.url() ...
//! assert_eq!(backup.count("eth_blockNumber"), 0);
//! # Ok(()) }
//! ```
//!
//! Each provider runs on the workspace's loopback toolkit (`failnext-loopback`): a hyper
//! HTTP/1.1 server, so keep-alive, pipelining and chunked request bodies are hyper's, and the
//! faults below HTTP are hyper's means too: a handler that never completes holds the
//! connection, a body that errors on a socket with `SO_LINGER` 0 resets it mid-body.
//! `respond.rs` decides each answer; `rpc.rs` is the JSON-RPC; `chain.rs` the chain.

mod behaviour;
mod chain;
mod hash;
mod provider;
mod respond;
mod rpc;
mod state;

pub use behaviour::{Behaviour, MALFORMED_BODY, OVERSIZED_LEN};
pub use chain::{Chain, START_HEAD};
pub use provider::Provider;
pub use rpc::GET_RESERVES;

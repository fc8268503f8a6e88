//! failnext for alloy (feature `alloy`): [`FailoverTransport`], an alloy transport where
//! reads fail over, writes never do, filters stay on the provider that created them, lookups
//! of a broadcast follow it, and a lost broadcast is typed.
//!
//! # Quick start
//!
//! ```ignore
//! use alloy::providers::{Provider, ProviderBuilder};
//! use alloy::rpc::client::RpcClient;
//! use failnext::{Endpoint, alloy::FailoverTransport};
//!
//! let transport = FailoverTransport::new([
//!     Endpoint::new("primary", "http://127.0.0.1:8545"),
//!     Endpoint::new("backup", "http://127.0.0.1:8546"),
//! ])?;
//! let provider = ProviderBuilder::new().connect_client(RpcClient::new(transport, false));
//! let block = provider.get_block_number().await?; // from the backup while the primary is down
//! ```
//!
//! (`ignore`d here because failnext does not depend on alloy's provider crate; the same lines
//! run as the example `alloy-provider` and in the test suite.) `ProviderBuilder::new()
//! .connect_with(&transport).await?` works too ([`FailoverTransport`] is a
//! `TransportConnect`), and the transport goes under alloy's `ClientBuilder::layer(..)` like
//! any other (`RetryBackoffLayer`, `ThrottleLayer`).
//!
//! # What may fail over
//!
//! Each call's method is looked up in a [`MethodTable`]: reads fail over, writes and signing
//! calls never do (they reach at most one provider), a method the table does not know does
//! not. A batch fails over only if every call in it may. Per call,
//! [`CallExt`] on alloy's `RequestMeta` allows, denies, excludes and prefers, and
//! [`ServedByCell`] tells which endpoint answered.
//!
//! **Where a denied write lands:** at most one provider, but that provider is the first
//! usable one in order: while the primary's breaker is open (or the monitor rules it out), a
//! write goes to the backup. Exclude or prefer per call to choose.
//!
//! # Filters
//!
//! `eth_newFilter`, `eth_newBlockFilter` and `eth_newPendingTransactionFilter` may fail over;
//! the endpoint that answers holds the filter, and the transport remembers the filter id
//! there (at most 4096 filters, the oldest forgotten first; `eth_uninstallFilter` forgets
//! it). `eth_getFilterChanges`, `eth_getFilterLogs` and `eth_uninstallFilter` then go to that
//! endpoint only, and never fail over; if it is not usable the call fails with
//! [`FilterPinned`], which says to create a new filter. A filter id the transport did not
//! create goes the usual way, without failover. So alloy's `watch_blocks` keeps working while
//! other reads fail over.
//!
//! # Read-your-writes
//!
//! After a broadcast (`eth_sendRawTransaction`, `eth_sendTransaction` and their variants)
//! accepted by endpoint E, for 2 minutes ([`FailoverTransport::remember_broadcasts_for`]):
//! `eth_getTransactionReceipt` and `eth_getTransactionByHash` of its hash prefer E, and
//! `eth_getTransactionCount(sender, "pending")` prefers the endpoint of that sender's latest
//! broadcast. A preference is not a pin: if E is down the lookup fails over. The sender of a
//! raw transaction is recovered locally from its signature. Bounded memory: 4096 hashes and
//! 4096 senders.
//!
//! # Lost broadcasts
//!
//! A write whose answer never came is one of two typed errors (alloy's custom transport
//! error, so retry layers leave it alone):
//!
//! - [`PossiblySubmitted`]: the request was, or may have been, written: a timeout, a reset, a
//!   connection closed before the answer ("connection closed before message completed" on a
//!   pooled connection to a node that just died is this case, not a refused connect), a body
//!   that broke off, or a gateway answering 5xx. It carries the transaction hash computed
//!   locally from the raw bytes: reconcile by hash, never sign again.
//! - [`NeverSent`]: provably never left: every attempt's connection was refused, or no
//!   endpoint was usable. Safe to send again.
//!
//! A JSON-RPC error answer is neither: the node answered (a revert, "nonce too low", ...), and
//! alloy gets it as usual, except that "already known" for a raw transaction (the node has
//! this very transaction) becomes success with its hash.
//!
//! # Judging
//!
//! [`FailoverTransport::new`] and [`FailoverTransport::from_builder`] judge with the
//! [`JsonRpcClassifier`](crate::jsonrpc::JsonRpcClassifier): an HTTP 200 carrying a rate
//! limit or an internal error, a malformed or truncated body fail over (a read), a revert is
//! returned at once.

mod broadcast;
mod call;
mod memory;
mod methods;
mod transport;

pub use broadcast::{NeverSent, PossiblySubmitted};
pub use call::{CallExt, ServedByCell};
pub use methods::{Access, MethodTable};
pub use transport::{FailoverTransport, FilterPinned};

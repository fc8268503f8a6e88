//! failnext for alloy (feature `alloy`): [`FailoverTransport`], an alloy transport where
//! reads fail over, writes never do, filters stay on the provider that created them, lookups
//! of a broadcast follow it, and a lost broadcast is typed; and, for coherent state in one
//! decision, [read bundles](#read-bundles) pinned to one block,
//! [capabilities](#capabilities) an endpoint may lack, and [monotonic reads](#monotonic-reads).
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
//! [`FailoverTransport::new`] is [`FailoverTransport::builder`]`(endpoints).build()`: the
//! JSON-RPC classifier judges every answer, failover is bounded by a budget, and every request
//! has a 30 s deadline; paired with a monitor, reads are also hedged at the 95th percentile of
//! recent latency and ordered by it (the table in [`FailoverTransportBuilder`] says why, and
//! how to turn each off).
//!
//! **Paired with failnext-blocklag**, in three lines more: the monitor's view decides which
//! providers serve, the fastest fit one first, a read never goes back below a head already
//! returned, and every answer tells the monitor what real traffic saw.
//!
//! ```ignore
//! let monitor = Monitor::builder(endpoints.clone()).build()?.spawn(Duration::from_secs(2));
//! monitor.ready(Duration::from_secs(5)).await; // the first read with the monitor's view
//! let transport = FailoverTransport::builder(endpoints).monitor(monitor).build()?;
//! ```
//!
//! # Following the chain
//!
//! [`FailoverTransport::follow`] makes a [`Follower`]: every canonical block exactly once, in
//! order, each one's parent link verified against the block before it, the logs of a filter
//! read by each block's hash (EIP-234), and a [`ChainEvent::Reorg`] with the blocks (and logs,
//! marked removed) it dropped before the new branch. Its reads go through the transport, so a
//! provider dying or lagging costs no block; it remembers the last 64 blocks (the deepest
//! reorg it repairs: a deeper one is [`FailureKind::ReorgTooDeep`], naming where to restart), and
//! it buffers nothing: a slow consumer slows its polling.
//!
//! A block that does not chain on from the ones yielded is believed only when a second
//! provider shows the same block: a provider on another chain, or on a branch of its own,
//! is then avoided for a while instead of being followed into a false reorg, and the first
//! block yielded is checked against the other providers too (two of three outvote a third;
//! two that disagree start nothing until they agree); with [`Follower::chain_id`], only a
//! provider serving that chain id sets the chain. With feature `ws`,
//! [`Follower::wake_on_new_heads`] polls as soon as a provider announces a new head over
//! WebSocket; the guarantees stay those of the polled, hash-verified path.
//!
//! # One error to match
//!
//! Every failure of a call, a bundle's read or a follower is found in alloy's
//! `TransportError` by one [`Failure::find`] and told apart by one [`FailureKind`]: a read no
//! provider answered ([`FailureKind::Read`], with failnext's [`Error`](crate::Error) and its
//! attempts), an HTTP status, a node's JSON-RPC error answer, a lost or unsent write (with
//! its [`Fault`]), a fan-out's outcome, the bundle, filter and monotonic-read failures below,
//! and a follower's unknown start or too-deep reorg. Each kind has its `is_*` predicate;
//! what a failure is about (hashes, attempts, endpoint, reference, floor) its accessors give.
//!
//! # What may fail over
//!
//! Each call's method is looked up in a [`MethodTable`]: reads fail over, writes and signing
//! calls never do (they reach at most one provider), a method the table does not know does
//! not. A batch fails over only if every call in it may. Per call,
//! [`CallExt`] on alloy's `RequestMeta` allows, denies, excludes and prefers, and
//! [`ServedByCell`] tells which endpoint answered.
//!
//! **Where a write lands.** At most one provider, and by default the first usable one in
//! order: while the primary's breaker is open (or the monitor rules it out), a write goes to
//! the backup. A bot whose primary is a private relay says so:
//! [`writes_to`](FailoverTransportBuilder::writes_to)`(["relay"])` keeps every write (a
//! broadcast, a signing call, a method the table does not know) on the named endpoints,
//! whatever a breaker, a monitor or a per-call preference says; when none of them is usable
//! the write fails as [`FailureKind::NeverSent`] and no other endpoint ever saw it.
//!
//! **Fan-out.** [`broadcast_to`](FailoverTransportBuilder::broadcast_to)`(["relay", "builder"])`
//! sends one signed raw transaction (`eth_sendRawTransaction`, its `Sync` and `Conditional`
//! variants, `eth_sendPrivateRawTransaction`, `eth_sendPrivateTransaction`) to each named
//! endpoint at once: the same bytes, so the same hash, once each. The call succeeds with the
//! hash when one accepted it; [`FailoverTransport::broadcast_outcome`] says, per endpoint,
//! accepted, possibly submitted, refused or never sent ([`Broadcast`], [`Delivery`]); when
//! none accepted, the call fails with that outcome ([`FailureKind::Broadcast`]), or with the
//! node's refusal when every endpoint reached refused it.
//!
//! # Filters
//!
//! `eth_newFilter`, `eth_newBlockFilter` and `eth_newPendingTransactionFilter` may fail over;
//! the endpoint that answers holds the filter, and the transport remembers the filter id
//! there (at most 4096 filters, the oldest forgotten first; `eth_uninstallFilter` forgets
//! it). `eth_getFilterChanges`, `eth_getFilterLogs` and `eth_uninstallFilter` then go to that
//! endpoint only, and never fail over; if it is not usable the call fails with
//! [`FailureKind::FilterPinned`], which says to create a new filter. A filter id the transport did not
//! create goes the usual way, without failover. So alloy's `watch_blocks` keeps working while
//! other reads fail over.
//!
//! # Logs too wide for a provider
//!
//! Providers cap `eth_getLogs` by block range or by result count, each its own way ("exceed
//! maximum block range: 5000", "query returned more than 10000 results"); such an answer is a
//! [`Class::Limit`](crate::Class::Limit): the query fails over and no provider is cooled. When
//! every provider refuses a query with numeric `fromBlock`/`toBlock`, the transport reads it
//! in parts (as wide as the widest range a provider has served, else halves), each part a
//! read that fails over as any other, and returns the parts' logs as one answer, in block
//! order, each log once: what one node without a limit returns. A one-block range still
//! refused returns the providers' own error. Each provider's limits are learnt for 10
//! minutes, so the next query as wide costs no refused attempt. A `blockHash` filter, a tag
//! bound such as `"latest"` and batches are never split; at most 4096 parts, none started
//! after the deadline. Off with [`split_logs(false)`](FailoverTransportBuilder::split_logs).
//!
//! # Read-your-writes
//!
//! After a broadcast (`eth_sendRawTransaction`, `eth_sendTransaction` and their variants)
//! accepted by endpoint E, for 2 minutes ([`FailoverTransportBuilder::remember_broadcasts_for`]):
//! `eth_getTransactionReceipt` and `eth_getTransactionByHash` of its hash prefer E, and
//! `eth_getTransactionCount(sender, "pending")` prefers the endpoint of that sender's latest
//! broadcast. A preference is not a pin: if E is down the lookup fails over. After a
//! [fan-out](FailoverTransportBuilder::broadcast_to), the lookups of its hash ask every relay
//! the transaction went to at once and return the first answer that is not `null`: one
//! relay's `null` is not final while another may have mined it. The sender of a
//! raw transaction is recovered locally from its signature. Bounded memory: 4096 hashes and
//! 4096 senders.
//!
//! # Lost broadcasts
//!
//! A write whose answer never came is one of two kinds of [`Failure`] (alloy's custom
//! transport error, so retry layers leave it alone), its [`Fault`] saying which case:
//!
//! - [`FailureKind::PossiblySubmitted`]: the request was, or may have been, written: a timeout, a reset, a
//!   connection closed before the answer ("connection closed before message completed" on a
//!   pooled connection to a node that just died is this case, not a refused connect), a body
//!   that broke off, or a gateway answering 5xx. It carries the transaction hash computed
//!   locally from the raw bytes: reconcile by hash, never sign again.
//! - [`FailureKind::NeverSent`]: provably never left: every attempt's connection was refused, or no
//!   endpoint was usable. Safe to send again.
//!
//! A JSON-RPC error answer is neither: the node answered (a revert, "nonce too low", ...), and
//! alloy gets it as usual, except that "already known" for a raw transaction (the node has
//! this very transaction) becomes success with its hash.
//!
//! # Judging
//!
//! [`FailoverTransport::new`] and [`FailoverTransport::builder`] judge with the
//! [`JsonRpcClassifier`](crate::jsonrpc::JsonRpcClassifier): an HTTP 200 carrying a rate
//! limit or an internal error, a malformed or truncated body fail over (a read), a revert is
//! returned at once.
//!
//! # Verified blocks
//!
//! A block read by number or hash (`eth_getBlockByNumber`, `eth_getBlockByHash`, the
//! follower's reads included) is an answer only when its header hashes to the hash it claims
//! (alloy's header hashing: Keccak-256 of the RLP header), and that hash and number are the
//! ones asked for. A block that fails is not returned: the provider that answered it is put
//! off the chain (found to lack [`Capability::TrueBlocks`], so every request skips it for the
//! [lack period](FailoverTransportBuilder::lack_found_for)), told as
//! [`Event::ForgedBlock`](crate::Event::ForgedBlock), and the read goes to the next provider;
//! when every provider asked fails, the read fails with [`FailureKind::Forged`]. A chain whose
//! headers do not hash this way (some L2s) is found at its first failing block, before any
//! provider is blamed: another provider is asked for the same block, and when its block fails
//! the same way the check is off for this transport (told once as
//! [`Event::BlocksUnverifiable`](crate::Event::BlocksUnverifiable)); once a block has
//! verified, the chain is known to hash this way and a failing block is a forgery. A chain's
//! format never fails a read, and with one provider its word is taken. Cost: none for other
//! methods; a block read is parsed once more and its header hashed.
//!
//! # Consensus reads
//!
//! [`FailoverTransportBuilder::consensus`] names methods whose reads are voted: a read goes to
//! [`Quorum::agree`] providers at once (the first usable ones in order, each asked alone, so a
//! hedge is never a vote), and to more when their answers differ, as many as the best answer
//! lacks, up to [`Quorum::of`]. Answers are compared normalised (the result as JSON, keys in
//! any order, hex in any case, a block by its hash, a receipt by the fields the chain decides;
//! never the request id; a JSON-RPC error that is an answer by its code; no answer, or an
//! error that blames the provider (a rate limit, an internal error), is no vote). The first answer enough providers gave is returned; each provider that
//! answered otherwise is told as [`Event::Disagreed`](crate::Event::Disagreed) and, after
//! [`DISSENTS`] in a row, ruled out for that method for the lack period. No agreement is
//! [`FailureKind::NoConsensus`], whose [`ballots`](Failure::ballots) give each provider's
//! answer digest. Writes and batches are never voted. While the providers agree a read costs
//! `agree` requests.
//!
//! # Read bundles
//!
//! A quote read from several providers, each at its own latest block, can combine states
//! that never existed together. A [`Bundle`] pins every state read of one decision to one
//! reference block, by hash:
//!
//! ```ignore
//! let head = provider.get_block_by_number(BlockNumberOrTag::Latest).await?.unwrap().header;
//! let bundle = transport.bundle(BlockRef::new(head.number, head.hash));
//! let quote = ProviderBuilder::new().connect_client(RpcClient::new(bundle.clone(), false));
//! let (a, b) = (pool_a.getReserves().call().await?, pool_b.getReserves().call().await?); // via `quote`
//! log::info!("quoted at {}", bundle.reference());
//! ```
//!
//! - **What it rewrites.** The state reads that take a block parameter (`eth_call`,
//!   `eth_getBalance`, `eth_getStorageAt`, `eth_getCode`, `eth_getTransactionCount`,
//!   `eth_getProof`, `eth_estimateGas`, `eth_createAccessList`, `eth_simulateV1`,
//!   `eth_getAccount`, `eth_getAccountInfo`, `debug_traceCall`): a `"latest"`, `"pending"`,
//!   `null` or missing block parameter (missing means latest; it is added) becomes the
//!   EIP-1898 form `{"blockHash": <reference>, "requireCanonical": true}`. An explicit block,
//!   a number, a hash, `"earliest"`, `"safe"` or `"finalized"`, is the caller's choice and
//!   left alone. Other methods (`eth_chainId`, `eth_getLogs`, `eth_getBlockByNumber`,
//!   receipts) go as they are: the bundle pins state, not everything.
//! - **Why `pending` is the reference.** When the caller names no block, alloy's
//!   `Provider::call` and `Provider::estimate_gas` (and so `provider.multicall()`) send
//!   `[tx, "pending"]`; its other state reads, `create_access_list` and a `sol!` contract's
//!   `.call()` / `.estimate_gas()` send `"latest"`. Either means "the state as the node sees
//!   it now", and a bundle's "now" is its reference: the caller chose the bundle for one
//!   settled block. What `pending` would add, transactions no block holds yet, is
//!   not part of a bundle's decision; a gas estimate that needs them (a swap after an
//!   approval still in flight) goes through the transport.
//! - **What it refuses**, with [`FailureKind::BundleRefused`] and nothing sent: the pending nonce
//!   (`eth_getTransactionCount` at `"pending"`, never alloy's default: it counts
//!   transactions no block holds, and answered at the reference it would be too low while
//!   some are in flight; read it through the transport), and every method the
//!   [`MethodTable`] does not call a read (writes, signing, unknown methods: send those
//!   through the transport; `MethodTable::set` a provider's own read).
//! - **A provider that does not know the hash** (geth "header for hash not found", "block not
//!   found", "hash .. is not currently canonical", anvil `-32001` "Resource not found", a
//!   pruned node's "missing trie node") is not an answer: the read fails over to another
//!   provider, never to that provider's own latest state, and the bundle skips that provider
//!   for its later reads ([`Bundle::missed`] lists them). When no provider is left that may
//!   know it, the read fails with [`FailureKind::ReferenceUnknown`]: restart the decision at a new
//!   reference. A provider [declared](FailoverTransportBuilder::lacks) to lack
//!   [`Capability::BlockHash`] is skipped by bundle reads (a node that ignores the hash
//!   would answer at its own head, which no answer shows).
//! - A bundle shares everything with its transport: breakers, memory, capabilities, and the
//!   reference counts as an observed [head](FailoverTransport::head). With
//!   [monotonic reads](#monotonic-reads) on, a provider known to be below the reference is
//!   skipped without being asked.
//!
//! # Capabilities
//!
//! A provider that answers the current state may lack state for an older block, a method, a
//! namespace: it cannot replace every other, yet it should keep serving what it can. A
//! [`Capability`] it lacks is [declared](FailoverTransportBuilder::lacks) (for good) or found (for
//! [10 minutes](FailoverTransportBuilder::lack_found_for), then it is asked again), and only the
//! requests that need it skip that provider:
//!
//! | capability | needed by | found from |
//! | --- | --- | --- |
//! | [`Archive`](Capability::Archive) | a state read at a block number (or a bundle's reference) more than [`archive_depth`](FailoverTransportBuilder::archive_depth) (128) blocks behind the [head](FailoverTransport::head) | "missing trie node", "historical state ..", "state not available", anvil's "BlockOutOfRangeError" below its head, answered to a read that names a block |
//! | [`Method(m)`](Capability::Method) | calls of `m` | `-32601` / "method not found" answered to a packet of `m` calls |
//! | [`Proof`](Capability::Proof) | `eth_getProof` | "method not found" for `eth_getProof` |
//! | [`Namespace(ns)`](Capability::Namespace) | every `ns_*` method (`trace`, `debug`) | declared only |
//! | [`BlockHash`](Capability::BlockHash) | bundle reads | declared only |
//! | [`RequestSize(n)`](Capability::RequestSize) | a packet whose serialized body is over `n` bytes | HTTP 413 answered to a packet of reads (it lacks that size and larger) |
//!
//! The request that found it fails over as any stale answer does (it is a read; a write
//! that got "method not found" was not executed, and the next one goes elsewhere). The head
//! is the highest block number the transport has observed: `eth_blockNumber` answers it
//! returned, bundle references, [`observe_head`](FailoverTransport::observe_head); while it
//! is unknown no read counts as historical. When every provider lacks what a request needs,
//! it goes as if none did (a learnt lack may be out of date) and the nodes' answers are
//! returned. [`FailoverTransport::lacking`] says what an endpoint lacks now.
//!
//! **Cost.** The endpoints a packet skips are told to failnext's one request loop by the
//! packet's [`Scope`](crate::Scope) (see [one loop](#one-loop)). While nothing is lacking, a
//! request reads one atomic flag and parses nothing; while something is, it takes a short
//! lock, parses its block parameter only when some endpoint lacks archive state (its
//! serialized size is the body's length, known anyway). What an answer says is learnt from
//! the [`Findings`](crate::Findings) the JSON-RPC classifier made while judging it: nothing
//! is parsed again.
//!
//! # One loop
//!
//! Every decision of the transport is made in failnext's one request loop, where the
//! [event hook](crate::FailoverBuilder::on_event) and the [`Trace`](crate::Trace) see it
//! ([`CallExt::record_trace`] gives a call its trace, in a [`TraceCell`]). Each packet
//! carries a [`Scope`](crate::Scope) that knows the packet: its methods, the block a bundle
//! pins it to, the floor of monotonic reads, the capabilities it needs and its size.
//!
//! - Before the first attempt, the providers that cannot serve it are passed over, each an
//!   [`Event::Skipped`](crate::Event::Skipped) with [`SkipReason::Unfit`](crate::SkipReason::Unfit)
//!   and a [`TraceStep::Unfit`](crate::TraceStep::Unfit): a bundle's provider that did not
//!   know its block ([`Unfit::UnknownBlock`](crate::Unfit::UnknownBlock)), one known below
//!   the floor, one lacking a capability ([`Unfit::Lacks`](crate::Unfit::Lacks), named).
//! - Each answer is reviewed with the packet in view: HTTP 413
//!   ([`Unfit::TooLarge`](crate::Unfit::TooLarge)), an `eth_blockNumber` below the floor, a
//!   bundle's block the provider did not know are overruled there (no answer for this
//!   packet: `FailOver`, `Neutral`, [`Class::Stale`](crate::Class::Stale)), in
//!   [`Event::Judged`](crate::Event::Judged)'s `overruled` and a
//!   [`TraceStep::Overruled`](crate::TraceStep::Overruled), and the request goes on to the
//!   next provider as for any flagged answer (a write still stops at its first).
//! - An empty answer (`null` for a block, a transaction or a receipt, `[]` for logs) from a
//!   provider whose known head (the paired monitor's, projected; or
//!   [`monotonic_reads`](FailoverTransportBuilder::monotonic_reads)'s) is below the block in question
//!   is overruled the same way ([`Unfit::BelowFloor`](crate::Unfit::BelowFloor) with that
//!   head and block): the block a call names (`eth_getBlockByNumber`, `eth_getBlockReceipts`,
//!   `eth_getLogs`'s `toBlock`), or, for a lookup by hash (`eth_getTransactionReceipt`,
//!   `eth_getTransactionByHash`, `eth_getBlockByHash`, logs up to `latest`), the best head
//!   known. The read returns `null`/`[]` only when every provider that has the block said so
//!   (or nothing else is left). A provider whose head is unknown is believed. Read-your-writes
//!   and the follower read through the same loop, under the same rule.
//! - Later attempts are made again from the packet, so nothing is copied before the first.
//!
//! With a classifier of your own ([`FailoverTransportBuilder::classifier`]), the JSON-RPC
//! classifier still reads each body first, for its [`Findings`](crate::Findings); the verdict
//! is yours. Middlewares of your own ([`FailoverTransportBuilder::call_middleware`],
//! [`attempt_middleware`](FailoverTransportBuilder::attempt_middleware)) do not change it.
//!
//! # Monotonic reads
//!
//! When a cooled primary recovers, reads return to it, and the head a client sees can go
//! backwards (a primary restarted at height 0 while the backup was at 5).
//! [`FailoverTransportBuilder::monotonic_reads`]`(heads)` takes each provider's current head (a
//! block-height monitor's snapshot, say `failnext-blocklag`'s; failnext does not depend on
//! it) and then:
//!
//! - a read skips every provider whose known head is below the highest head the transport
//!   has observed (a bundle's read: below its reference, since the hash pins its state);
//!   `None` from `heads` skips no one;
//! - an `eth_blockNumber` answer below that floor is not returned: the loop overrules it
//!   ([`Unfit::BelowFloor`](crate::Unfit::BelowFloor)) and tries the next provider (a
//!   single call is judged there; a batch asking `eth_blockNumber` is checked once its
//!   answer is back, and fails with [`FailureKind::BelowFloor`] rather than go back);
//! - when no provider is left, the read fails with [`FailureKind::BelowFloor`] rather than go back.
//!
//! Writes and filter calls are not affected. Block numbers inside other answers (a block's
//! `number`) are not read: that would parse every block returned.
//!
//! # Per-failure policies
//!
//! The failures that need different circuit policies, and where each rule lives:
//!
//! | failure | response | where |
//! | --- | --- | --- |
//! | wrong chain | exclude the provider and report it; never admitted until fixed | `failnext-blocklag` with `MonitorBuilder::expected_chain_id`: a provider on another chain is ineligible, reported as `ProbeError::WrongChain` in its snapshot, until a check finds the right chain; as failnext's eligibility hook (`FailoverBuilder::eligible`), no request uses it |
//! | rate limit | cool at provider scope, for the provider's hint | the JSON-RPC classifier (`Capacity`, with the body's hint or `Retry-After`) and the endpoint's breaker (`FailoverBuilder::cooldown`) |
//! | missing historical state | exclude from that capability only | the classifier says stale (`Neutral`: no breaker), this module learns [`Capability::Archive`] and skips the provider for historical reads only ([capabilities](#capabilities)) |
//! | a bundle's block unknown | another provider, or restart at a new reference | this module: [`Bundle`], [`FailureKind::ReferenceUnknown`] |
//! | a valid revert | returned, never rotated | the JSON-RPC classifier (reverts are judged first, `Definitive`, `Return`), whatever the revert reason says |

mod block;
mod broadcast;
mod builder;
mod bundle;
mod call;
mod capability;
mod coherence;
mod consensus;
mod empty;
mod failure;
mod fanout;
mod follow;
mod logs;
mod memory;
mod methods;
mod monotonic;
mod plan;
mod reference;
mod route;
mod scope;
mod transport;
mod verify;
#[cfg(feature = "ws")]
mod wake;

pub use block::BlockRef;
pub use builder::{
    DEFAULT_BUDGET, DEFAULT_DEADLINE, DEFAULT_HEDGE, DEFAULT_LATENCY_MARGIN, FailoverTransportBuilder,
};
pub use bundle::Bundle;
pub use call::{CallExt, ServedByCell, TraceCell};
pub use capability::Capability;
pub use consensus::{DISSENTS, Quorum};
pub use failure::{Failure, FailureKind};
pub use fanout::{Broadcast, Delivery, Fault};
pub use follow::{ChainEvent, DEFAULT_FOLLOW_DEPTH, FollowStats, FollowedBlock, Follower, Start};
pub use methods::{Access, MethodTable};
pub use transport::FailoverTransport;

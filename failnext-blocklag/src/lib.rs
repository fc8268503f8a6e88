//! Block-height lag monitoring for Ethereum JSON-RPC providers, feeding [failnext]'s
//! eligibility.
//!
//! A provider can answer `200 OK` while it is several blocks behind the others, and failnext,
//! which only sees HTTP outcomes, would keep sending it requests. A [`Monitor`] asks every
//! provider for its block height with `eth_blockNumber`, compares the answers, and publishes
//! which providers are close enough to the highest one. Handed to
//! [`FailoverBuilder::eligible`](failnext::FailoverBuilder::eligible), it makes failnext skip
//! the laggards.
//!
//! The split of work: this crate measures heights, failnext picks endpoints and fails over.
//! failnext on its own knows nothing about blocks, and a user who depends on failnext alone
//! never compiles this crate.
//!
//! The crate's README has a complete `main.rs` that runs the pairing with a `check()` loop,
//! with its `[dependencies]` lines.
//!
//! # How it works
//!
//! You call [`Monitor::check`] when you want fresh eligibility, typically every few seconds
//! from a task of your own, or let [`Monitor::spawn`] probe on an adaptive schedule until its
//! [`MonitorHandle`] is stopped or dropped (each provider on its own, see
//! [Paired with failnext](#paired-with-failnext)). Each check:
//!
//! 1. sends every configured provider one JSON-RPC 2.0 `eth_blockNumber` POST (or
//!    `eth_getBlockByNumber`, see [A head with a hash](#a-head-with-a-hash)), all providers
//!    at once, with the monitor's own `reqwest::Client`, never through failnext;
//! 2. accepts an answer only if it is HTTP 200 with at most 4 KiB of body, a JSON object with
//!    `"jsonrpc": "2.0"`, the `id` the probe sent, and a `result` that is a canonical hex
//!    quantity fitting `u64`; redirects are not followed, nothing is retried, a body over
//!    4 KiB is not read further, and each call is bounded by the
//!    [probe timeout](MonitorBuilder::probe_timeout) (5 seconds by default);
//! 3. takes the highest successful height as the reference, and makes a provider eligible
//!    when `highest - height <= max_lag` (inclusive; `max_lag(0)` accepts only providers at
//!    the highest height);
//! 4. publishes the result as a new [`Snapshot`], atomically, if at least one probe
//!    succeeded.
//!
//! [`Monitor::eligible`] reads the latest snapshot without locks or I/O, so failnext can ask
//! it on every request. [`ProbeError`] lists every way a probe fails.
//!
//! A canonical quantity is `0x0`, or `0x` followed by lower-case hex digits without a leading
//! zero, as the Ethereum execution API specifies. A bare `0x`, a missing prefix, leading
//! zeros, signs, whitespace, upper-case digits or an upper-case `0X`, and values beyond
//! `u64::MAX` are all rejected.
//!
//! # Failure behaviour
//!
//! | Check outcome | Eligibility afterwards | `check()` returns |
//! |---|---|---|
//! | every probe succeeds | new snapshot | `Ok(())` |
//! | some probes succeed | new snapshot; providers whose probe failed are ineligible | [`CheckError`] naming them, [`published()`](CheckError::published) is `true` |
//! | every probe fails | previous snapshot kept | [`CheckError`] naming them, `published()` is `false` |
//! | the `check()` future is dropped before publication | previous snapshot kept | nothing: it was dropped |
//!
//! One successful probe is enough to publish; that provider is then eligible. Before the
//! first publication every configured endpoint is eligible (fail-open; opt in to fail-closed
//! with [`MonitorBuilder::fail_closed`]); ids that are not configured are never eligible. A
//! later check can make an ineligible provider eligible again.
//!
//! A [`CheckError`] does not mean eligibility is unchanged: a partial failure publishes and
//! still returns an error. Every failure names its endpoint id; no error or `Debug` output
//! shows more of a URL than `scheme://host[:port]`.
//!
//! By default published eligibility does not expire: if checks stop, or every later check
//! fails, the last snapshot stays in force. Two options make unknown not count as healthy,
//! both applied by [`Monitor::eligible`] at the time of asking (they make it read the clock;
//! the default path does not):
//!
//! - [`grace`](MonitorBuilder::grace): an endpoint whose last good probe (carried across
//!   snapshots, [`SnapshotEntry::last_good_age`]) is older than the grace is ineligible;
//! - [`max_age`](MonitorBuilder::max_age): a snapshot older than that
//!   ([`Snapshot::age`]) no longer decides, and the monitor answers as before its first
//!   publication (fail-open, or fail-closed with [`fail_closed`](MonitorBuilder::fail_closed)).
//!
//! # Relative, not canonical, freshness
//!
//! With `check()`'s `eth_blockNumber` probe, the reference height is simply the highest one
//! reported in the same check. If every provider is equally stale, none looks behind; if one
//! reports an unusually high block, the honest ones look behind, unless the reference asks for
//! corroboration ([`MonitorBuilder::reference`] with [`Reference::Corroborated`]). Configure
//! providers of the same chain. Forks, finality and heights are not checked against any
//! independent source, and by default neither are block hashes (see the next section).
//!
//! Where the probe reads the head block's timestamp (the [spawned](Monitor::spawn) schedule,
//! and `check()` with [`head_with_hash`](MonitorBuilder::head_with_hash)), heads are also
//! judged by the clock under [`Reference::Plausible`], the default: a head older than the
//! [maximum head age](MonitorBuilder::max_head_age) is [stale](SnapshotEntry::is_stale) even
//! when no provider is ahead of it, and one stamped in the future, or higher than the chain
//! could have made since the others' heads, is [implausible](SnapshotEntry::is_implausible)
//! and never the reference. When every answering provider is stale, the snapshot says the
//! [chain stalled](Snapshot::chain_stalled).
//!
//! # A head with a hash
//!
//! Heights alone cannot tell two providers on different forks apart. With
//! [`MonitorBuilder::head_with_hash`], each check asks for
//! `eth_getBlockByNumber("latest", false)` instead of `eth_blockNumber`, and every
//! [`SnapshotEntry`] keeps the [hash](SnapshotEntry::head_hash) of the head its provider
//! reported, a [`BlockHash`]. A block is usually larger than the 4 KiB cap, so the probe
//! reads only the first 4 KiB and takes the block's own `number` and `hash` from them with a
//! scanner that tracks strings and depth (never a `parentHash` or a transaction's `hash`);
//! [`parse_head_response`] states the rules, and a head it cannot read fails the probe with a
//! [`ProbeError`] naming the endpoint. Heights are compared and eligibility decided as with
//! `eth_blockNumber`.
//!
//! Each snapshot then offers an [agreed head](Snapshot::agreed), an [`AgreedHead`]: the
//! highest block, by number and hash, that at least [`agreement`](MonitorBuilder::agreement)
//! (default 2) of the providers eligible in that check reported. Providers at the same height
//! with different hashes do not agree; the agreement is clipped to the number of eligible
//! providers that reported a hash, so one provider alone agrees with itself. It is found once
//! when the check publishes, so reading it is as cheap as reading the snapshot: a bot can pin
//! its reads to that block by hash (EIP-1898) and expect every agreeing provider to have it.
//!
//! Other rules, each off or at its 0.1 behaviour by default:
//! [`readmit_after`](MonitorBuilder::readmit_after) (hysteresis: an evicted provider returns
//! only after k good checks in a row), [`max_lag_secs`](MonitorBuilder::max_lag_secs) (a lag
//! threshold in time, from the observed [block time](Snapshot::block_time)) and
//! [`stall_after`](MonitorBuilder::stall_after) (a reference head that stops advancing is
//! reported as [stalled](Snapshot::stalled), without evicting anyone). Each
//! [`SnapshotEntry`] also keeps the provider's
//! [probe latency](SnapshotEntry::probe_latency) and
//! [last failure](SnapshotEntry::last_error_kind).
//!
//! An optional chain check guards against a misconfigured URL: with
//! [`expected_chain_id`](MonitorBuilder::expected_chain_id), every check (and every
//! [spawned](Monitor::spawn) probe) also asks each provider for `eth_chainId`, and a provider
//! on another chain is ineligible with [`ProbeError::WrongChain`]. A matching chain id is a
//! sanity check, not proof that a
//! provider can replace another for every read.
//!
//! # Concurrency
//!
//! Checks are serialized: a check waits for the running one, and a waiting check that is
//! dropped sends nothing. Probes within one check run concurrently. [`Monitor::eligible`] is
//! safe from any thread and never waits for a check; two calls may see two snapshots when a
//! check publishes between them, so load [`Monitor::snapshot`] once when several answers must
//! agree. failnext asks once per endpoint at the start of a request and keeps the answers for
//! that request, so a request in flight is not affected by a later publication.
//!
//! # Paired with failnext
//!
//! `Monitor` implements [`failnext::HealthSource`]: give a clone to
//! [`FailoverBuilder::monitor`](failnext::FailoverBuilder::monitor) and spawn its schedule,
//! and the pairing works both ways. failnext asks [`eligible`](Monitor::eligible) (as advice:
//! an endpoint ruled out is a reserve), takes the monitor's latencies and
//! [head](failnext::HealthSource::head) (the reference height, when it was last reported,
//! the learned block time, `max_lag` as the tolerance), and gives back what real traffic
//! shows. The rules, so that the view is never late and rarely wrong:
//!
//! - **Never late.** The [spawned schedule](Monitor::spawn) probes each provider on its own
//!   and publishes that provider's entry as soon as its probe ends: the latest snapshot with
//!   that entry replaced, the reference height re-derived from every entry's latest height,
//!   and every other entry re-judged against it (a fit provider can turn lagging at once; an
//!   ineligible one waits for its own probe to return). A hanging provider delays only its
//!   own entry. Its next probe comes after `interval` when it is fit (skipped while paired
//!   traffic shows it answering well with its head: traffic is the probe, though at least
//!   one probe in four intervals checks its chain, and a provider that answers after 200 ms
//!   or more in which nothing was heard of it is probed at once, at most once per interval:
//!   a restart, possibly onto another chain, may have fitted in the silence, and only
//!   `eth_chainId` shows it; its answers stand in for no probe until one answers), on a backoff
//!   otherwise (50 ms, doubling while it stays unfit, at most `interval`: an eviction lasts
//!   about as long as the fault), at once when an answer contradicts the view (a failure, a
//!   head behind or implausible) or a provider held out for failing answers well (each at
//!   most once per 50 ms), or when failnext asks
//!   ([`check_now`](failnext::HealthSource::check_now), honoured at most once per provider per
//!   interval; extra requests are dropped). The backoff, a contradiction's probe and
//!   `check_now` run only while the reads need the provider back: while fewer than two
//!   other providers are admitted. While two others serve, a provider held out is re-checked
//!   an interval after its last check (the reads still try it last), so that a fault costs
//!   no burst of paid probes the reads did not need. Without an
//!   [expected chain id](MonitorBuilder::expected_chain_id), the spawned schedule learns the
//!   chain id a strict majority of the providers report and verifies it at every probe
//!   after. The
//!   spawned probe timeout is `min(5 s, interval)` unless set. Each
//!   [`SnapshotEntry::checked`] says when its own probe ended. Heights probed at different
//!   times are compared fairly: when a newer probe of another provider raises the reference,
//!   an entry probed earlier is credited with the blocks the chain made since its own probe
//!   (by the learned block time) and allowed one block more for the phase between the two
//!   probes, and its own next probe judges it again.
//! - **Evidence.** Each provider keeps two lock-free counters of recent good and bad
//!   outcomes, each halving every quarter interval (1 s before a schedule is spawned), so
//!   that evidence older than one interval weighs less than 1/16. Good: a probe within the
//!   lag threshold, an answer failnext [observed](failnext::HealthSource::observe) as
//!   `Answered`. Bad: an answer `Failed`, `Behind` or `Implausible`
//!   ([`Observation::is_bad`](failnext::Observation::is_bad)), and a probe that fails or lags
//!   while the provider is admitted (one that fails again while it is already out adds
//!   nothing: probing it four times as often is no new evidence). The bad share is
//!   `bad / (good + bad)`.
//! - **Re-admission weighs the evidence.** A good probe of the spawned schedule re-admits a
//!   provider that was ineligible only if its bad share, that probe counted, is at most 1/4
//!   (and after [`readmit_after`](MonitorBuilder::readmit_after) good probes, 1 by default).
//!   A provider bad on about half its answers is not re-admitted by one good probe: it stays
//!   out, [doubted](SnapshotEntry::is_doubted), with its [bad share](SnapshotEntry::bad_share),
//!   until its bad evidence has faded. A provider whose recent evidence is good again (an
//!   outage over: the failures some intervals old) returns at its first good probe.
//!   [`Monitor::check`] keeps the reference rule and does not weigh evidence (its probes
//!   still add to it).
//! - **Contradictions.** An answer observed `Behind` or `Implausible` for a provider the
//!   monitor admits makes it ineligible at once (one atomic operation for `eligible()`, and
//!   published with its [contradiction](SnapshotEntry::contradiction)) and probes it now;
//!   its next probe decides again. A plain `Failed` only feeds the evidence (and failnext's
//!   `check_now`).
//! - **Latency.** A provider whose answers are often bad must not keep first place for being
//!   fast: when its bad share `s` is above 1/10, the latency fed to failnext is its probe
//!   latency plus `min(s / (1 - s), 9)` probe timeouts (the expected extra attempts per good
//!   answer, each costed at a probe timeout); at or below 1/10, its probe latency.
//!
//! `observe` and `check_now` are cheap and never block: a compare-and-swap on one atomic
//! word, and for a contradiction (rare) a publication if no other is under way.
//!
//! # Pairing with failnext, events, restarts
//!
//! - [`Monitor::feed_latency`]`(failover.latency_feed())` passes each check's probe latencies
//!   to failnext's latency-aware ordering (a weak handle: the monitor does not keep the
//!   `Failover` alive). failnext's breaker also learns from the monitor as its eligibility: an
//!   endpoint the monitor turns eligible again gets its trial at once.
//! - [`MonitorBuilder::on_event`] is told of [`MonitorEvent`]s: the reference head stalling
//!   and moving again, a provider's head turning stale or implausible.
//! - [`Monitor::health`] / [`Monitor::restore_health`] carry eligibility, re-admission
//!   progress, probe latencies and last good probes across a restart ([`MonitorHealth`],
//!   serializable with the feature `serde`), as failnext's `Failover::health` does for its
//!   breakers.
//! - With the feature `metrics`, every publication is also a set of metrics (see
//!   [Feature flags](#feature-flags)).
//!
//! # Feature flags
//!
//! - `metrics` (off by default): through the [`metrics`](https://docs.rs/metrics) facade,
//!   every publication (a check's, or a spawned probe's) sets the gauges
//!   `failnext_blocklag_height{endpoint}`, `failnext_blocklag_lag_blocks{endpoint}`,
//!   `failnext_blocklag_probe_latency_seconds{endpoint}` and
//!   `failnext_blocklag_eligible{endpoint}` (0 or 1), and counts each newly failed probe in
//!   `failnext_blocklag_probe_failures_total{endpoint, call}` (`call` is the JSON-RPC method
//!   that failed). Labelled by endpoint id, never by URL. The application installs the
//!   recorder (a Prometheus exporter, say); without one the facade does nothing.
//! - `serde` (off by default): [`MonitorHealth`] and [`ProviderHealth`] serialize, to keep
//!   what the monitor learnt across a restart.
//!
//! # What it does not do
//!
//! - Routing. Eligibility only rules endpoints out; failnext still applies its order,
//!   cooldown, exclusions, failover permission, triggers and replay rules. In particular an
//!   eligible provider does not make a JSON-RPC POST safe to send twice.
//! - Retries or backoff, scoring, service discovery, WebSocket transports.
//! - Following redirects or sending probes through failnext: give
//!   [`client`](MonitorBuilder::client) a plain client that goes where it is told.
//!
//! # Example
//!
//! Two local servers stand in for providers: the primary at block 100 (`0x64`), the backup at
//! block 110 (`0x6e`). With a maximum lag of 3 the primary is ineligible, and a balance read
//! sent through failnext is served by the backup.
//!
//! ```
//! use failnext::{Endpoint, Failover, RequestBuilderExt, ServedBy};
//! use failnext_blocklag::Monitor;
//! use serde_json::json;
//! use wiremock::matchers::body_partial_json;
//! use wiremock::{Mock, MockServer, ResponseTemplate};
//!
//! /// A provider at block `block` (hex) where the zero address holds `balance` (hex).
//! async fn provider(block: &str, balance: &str) -> MockServer {
//!     let server = MockServer::start().await;
//!     for (method, result) in [("eth_blockNumber", block), ("eth_getBalance", balance)] {
//!         Mock::given(body_partial_json(json!({ "method": method })))
//!             .respond_with(
//!                 ResponseTemplate::new(200)
//!                     .set_body_json(json!({ "jsonrpc": "2.0", "id": 1, "result": result })),
//!             )
//!             .mount(&server)
//!             .await;
//!     }
//!     server
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let primary = provider("0x64", "0x0").await; // block 100
//! let backup = provider("0x6e", "0x2a").await; // block 110
//! let endpoints = [Endpoint::new("primary", primary.uri()), Endpoint::new("backup", backup.uri())];
//!
//! let monitor = Monitor::builder(endpoints.clone()).max_lag(3).build()?;
//! monitor.check().await?; // run this on your own schedule
//! assert!(!monitor.eligible("primary")); // 10 blocks behind
//! assert!(monitor.eligible("backup"));
//!
//! let failover = Failover::builder(endpoints).eligible(monitor.clone()).build()?;
//! let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new()).with(failover).build();
//!
//! // Eligibility skips the lagging primary. Permission to fail over is a separate matter:
//! // JSON-RPC reads are POSTs, so allow it only for calls that are safe to repeat.
//! let response = client
//!     .post(primary.uri())
//!     .header("content-type", "application/json")
//!     .body(r#"{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0x0000000000000000000000000000000000000000","latest"]}"#)
//!     .allow_failover()
//!     .send()
//!     .await?;
//! let served_by = response.extensions().get::<ServedBy>().map(|s| s.0.clone());
//! assert_eq!(served_by.as_deref(), Some("backup"));
//! let body: serde_json::Value = serde_json::from_slice(&response.bytes().await?)?;
//! assert_eq!(body["result"], "0x2a");
//! # Ok(())
//! # }
//! ```
//!
//! # Coming from Go failnext-blocklag
//!
//! The probe, comparison and publication rules are those of the Go library
//! failnext-blocklag. [PORTING.md] maps its API to this one and lists what differs.
//!
//! [PORTING.md]: https://github.com/failnext-rs/failnext/blob/main/failnext-blocklag/PORTING.md
#![doc(test(attr(deny(warnings))))]
// Library code handles network input: no unwrap or expect outside tests.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

// The modules, each importing only from the layers before it (no ring):
// 1. data: rpc (the calls), event, reference, fitness, block_hash, head_timing, agreed,
//   evidence;
// 2. errors: probe_error, config_error, check_error;
// 3. the probe's pure rules: parse (eth_blockNumber), head (eth_getBlockByNumber);
// 4. what a check publishes: snapshot, then agreement (the agreed-head rule) and persist;
// 5. a check: probe (the I/O), round (the comparison); wake (check_now's way to a probe);
// 6. the monitor: settings, monitor, builder, schedule (Monitor::spawn), source (the
//    failnext::HealthSource implementation).

mod judging;
mod probe;
mod runtime;

pub use judging::agreed::AgreedHead;
pub use judging::entry::SnapshotEntry;
pub use judging::reference::Reference;
pub use judging::snapshot::Snapshot;
pub use probe::block_hash::{BlockHash, ParseBlockHashError};
pub use probe::check_error::{CheckError, ProbeFailure};
pub use probe::head::parse_head_response;
pub use probe::parse::{parse_quantity, parse_response};
pub use probe::probe_error::{ProbeError, ProbeErrorKind};
pub use probe::rpc::MAX_BODY;
pub use runtime::builder::MonitorBuilder;
pub use runtime::config_error::ConfigError;
pub use runtime::event::MonitorEvent;
pub use runtime::monitor::Monitor;
pub use runtime::persist::{MonitorHealth, ProviderHealth};
pub use runtime::schedule::MonitorHandle;

// The README's code is compiled as doc tests by the `failnext-examples` crate.

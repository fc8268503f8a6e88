//! Ordered, client-side failover for [reqwest], as a [reqwest-middleware] middleware, and an
//! alloy transport on top of it.
//!
//! `failnext` sends each request to the first usable provider of a small, ordered set, and
//! moves on to the next one only when that is safe: the failure triggers failover, the request
//! is allowed to fail over, and its body can be sent again. It was written for Ethereum
//! JSON-RPC over HTTP, where providers refuse connections, time out, answer 502/503/504 or
//! rate-limit, but it reads no payload and works for any HTTP API.
//!
//! With alloy (feature `alloy`), the module `failnext::alloy` gives a ready transport,
//! `FailoverTransport`, that decides per JSON-RPC method: reads fail over, writes and signing
//! calls never do.
//!
//! ```ignore
//! use alloy::providers::{Provider, ProviderBuilder};
//! use alloy::rpc::client::RpcClient;
//! use failnext::Endpoint;
//! use failnext::alloy::{FailoverTransport, Failure};
//!
//! let transport = FailoverTransport::new([
//!     Endpoint::new("primary", "https://provider-a.example/rpc?key=..."),
//!     Endpoint::new("backup", "https://provider-b.example/rpc?key=..."),
//! ])?;
//! let provider = ProviderBuilder::new().connect_client(RpcClient::new(transport, false));
//!
//! // A read fails over: while the primary is down, the backup answers.
//! let block = provider.get_block_number().await?;
//!
//! // A raw transaction never reaches a second provider.
//! if let Err(err) = provider.send_raw_transaction(&signed).await {
//!     let failure = Failure::find(&err);
//!     if let Some(lost) = failure.filter(Failure::is_possibly_submitted) {
//!         // Sent, but the answer was lost (timeout, reset, gateway 5xx): reconcile by
//!         // `lost.hash()`, computed from the raw bytes; do not sign again.
//!     } else if failure.is_some_and(|f| f.is_never_sent()) {
//!         // Provably never left (connection refused): safe to send again.
//!     }
//! }
//! ```
//!
//! (Not compiled here: failnext does not depend on alloy's provider crate. The same lines
//! run as the example `alloy-provider` of the repository, and `alloy-write` reconciles a lost
//! broadcast by hash.) The `failnext::alloy` module documentation says which methods
//! fail over, where filters and receipt lookups go, and how to steer one call. Without alloy,
//! failnext is the middleware below: see the [Quick start](#quick-start).
//!
//! [reqwest]: https://docs.rs/reqwest
//! [reqwest-middleware]: https://docs.rs/reqwest-middleware
//!
//! # Motivation
//!
//! A bot that reads chain state from one provider stops when that provider stops. Retrying the
//! same provider does not help when it is down, and sending everything to several providers
//! wastes quota and can repeat writes. What the application wants is narrower: keep a priority
//! order, use the first provider that works, and let the application decide which operations
//! may be repeated elsewhere. failnext does exactly that, inside the process, with no proxy
//! and no copy of request bodies. It starts no background task of its own, with one
//! exception: a response it discards (a retained trigger response superseded by a newer
//! response, or the completed loser of a hedge) whose declared length is at most 64 KiB and
//! whose body has not fully arrived yet is read to its end, and dropped, on a task spawned on
//! the current Tokio runtime, for at most one second, so that its keep-alive connection goes
//! back to the pool; outside a Tokio runtime it is dropped instead. Health (the breaker) is
//! passive: no probes.
//!
//! # Quick start
//!
//! ```
//! use failnext::{Endpoint, Failover, RequestBuilderExt, ServedBy};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # use wiremock::{Mock, MockServer, ResponseTemplate, matchers::any};
//! # let primary = MockServer::start().await;
//! # Mock::given(any()).respond_with(ResponseTemplate::new(503)).mount(&primary).await;
//! # let backup = MockServer::start().await;
//! # Mock::given(any()).respond_with(ResponseTemplate::new(200)
//! #     .set_body_string(r#"{"jsonrpc":"2.0","id":1,"result":"0x2a"}"#)).mount(&backup).await;
//! # let (primary_url, backup_url) = (primary.uri(), backup.uri());
//! // Providers in priority order. URLs are complete destinations and may carry API keys;
//! // failnext never prints them.
//! let failover = Failover::builder([
//!     Endpoint::new("primary", primary_url.clone()),
//!     Endpoint::new("backup", backup_url),
//! ])
//! .build()?;
//! // Each attempt is bounded (10 s by default), so a hung provider costs at most that long
//! // before the next is tried; raise it with `.attempt_timeout(..)` for heavy calls.
//!
//! let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
//!     .with(failover)
//!     .build();
//!
//! // JSON-RPC reads are POSTs, so failnext cannot tell they are safe to repeat: say so.
//! let read = r#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}"#;
//! let resp = client
//!     .post(&primary_url)
//!     .header("content-type", "application/json")
//!     .body(read)
//!     .allow_failover()
//!     .send()
//!     .await?;
//!
//! // The primary answered 503, so the backup served the read.
//! assert_eq!(resp.extensions().get::<ServedBy>().map(|s| s.0.as_str()), Some("backup"));
//! assert_eq!(resp.text().await?, r#"{"jsonrpc":"2.0","id":1,"result":"0x2a"}"#);
//!
//! // A write must not reach a second provider: deny failover explicitly.
//! let write = r#"{"jsonrpc":"2.0","id":2,"method":"eth_sendRawTransaction","params":["0x00"]}"#;
//! let resp = client
//!     .post(&primary_url)
//!     .header("content-type", "application/json")
//!     .body(write)
//!     .deny_failover()
//!     .send()
//!     .await?;
//! assert_eq!(resp.status(), 503); // the caller sees the primary's answer; nothing else was tried
//! # Ok(())
//! # }
//! ```
//!
//! The crate's README has the same start as a complete `main.rs` with its `[dependencies]`
//! lines. failnext enables no TLS backend: for `https://` providers, enable one in reqwest
//! (for example its `rustls` feature). JSON-RPC servers such as geth answer 415 to a POST
//! without `content-type: application/json`.
//!
//! # Crate contents
//!
//! - [`Failover`], the middleware, built by [`FailoverBuilder`] from [`Endpoint`]s (each
//!   named by an [`EndpointId`]); invalid configuration is a [`ConfigError`].
//! - Per request, through [`RequestBuilderExt`]: [`Permission`] to fail over,
//!   [`ExcludedEndpoints`], [`PreferredEndpoint`]. On every response: [`ServedBy`]
//!   ([`ResponseExt`]).
//! - [`Classifier`] and what it hands back ([`Classified`], [`Judgement`]: [`Verdict`],
//!   [`Evidence`], [`Class`]), to judge responses no status rule settles; see
//!   [Judging](#judging).
//! - [`Error`] and its [`Attempt`]s when no HTTP response came back; [`Event`]s for
//!   observation.
//! - [`Eligibility`] (which endpoints may serve now) and [`Cooldown`] (passive skipping of
//!   failing endpoints).
//!
//! # How failover decides
//!
//! Four decisions are kept apart. A later provider is tried only when all of them say so.
//!
//! 1. **Which endpoint.** The configured order, minus the endpoints the request
//!    [excludes](RequestBuilderExt::exclude_endpoints), minus those the
//!    [eligibility hook](FailoverBuilder::eligible) rejects. The hook is asked exactly once per
//!    non-excluded endpoint at the start of the request, and its answers are frozen for the
//!    request. A [preferred](RequestBuilderExt::prefer_endpoint) endpoint that survived moves
//!    to the front; the others keep their order. Cooldown is checked live, when a candidate's
//!    turn comes; a cooling candidate is skipped ([`Event::CooldownSkip`]) and never revisited
//!    in that request, except by the breaker's [last resort](#the-breaker). An excluded or
//!    preferred id that is not configured fails the request before anything is sent or asked.
//! 2. **May it fail over.** Request-scoped [`Permission::Allow`] or [`Permission::Deny`], else
//!    the [`permission_policy`](FailoverBuilder::permission_policy), else `GET` and `HEAD`
//!    may, else it may not. The policy is called at most once per request, and only when a
//!    second endpoint exists.
//! 3. **Does the outcome trigger failover.** Any error from the rest of the middleware chain
//!    (refused or reset connection, timeout, ...), HTTP 502, 503 or 504, and any status added
//!    with [`additional_trigger_status_codes`](FailoverBuilder::additional_trigger_status_codes).
//!    Any other response goes to the [classifier](FailoverBuilder::classifier), when one is
//!    configured (see [Judging](#judging)); without one it is returned at once, body
//!    untouched, whatever it says: an HTTP 200 carrying a JSON-RPC error is then a success to
//!    failnext. Redirects are followed by the `reqwest::Client` inside one attempt, so a
//!    redirected response is judged by its final status.
//! 4. **Can it be sent again.** The first attempt uses the caller's request itself. Later
//!    attempts use a copy of it, made exactly when `reqwest::Request::try_clone()` would
//!    succeed: a body built from bytes or a string is a `Bytes`, shared with every attempt by
//!    reference count, never copied. A streaming body can be sent only once: the request stops
//!    there ([`Event::NotReplayable`]). failnext never buffers a body to make it replayable,
//!    and copies nothing when no later attempt is possible (a denied POST, a single candidate).
//!
//! **Retained responses.** A trigger response (or one the classifier flags) is kept while the
//! next endpoint is tried. A newer
//! HTTP response replaces it (the older one is dropped); if every later attempt ends in an
//! error, or failover may not go on, the kept response is returned instead of an error. A
//! response failnext discards with a small body (declared length up to 64 KiB) is read to its
//! end, in the background if it is still arriving (for at most a second), so its keep-alive
//! connection goes back to the pool; a larger one is dropped unread, which closes its
//! connection.
//!
//! **Cooldown.** Per endpoint, shared by every request through one [`Failover`] (and its
//! clones): errors and 502/503/504 are failures, any other response a success. The default,
//! [`Cooldown::adaptive`], is a breaker: see [The breaker](#the-breaker) below;
//! [`Cooldown::new`] keeps 0.1's rule. It is passive: no probes, no background task.
//!
//! **Errors.** When nothing could be attempted the request fails with
//! [`is_no_usable_endpoint`](Error::is_no_usable_endpoint); when the request names an unknown
//! endpoint, with [`is_unknown_endpoint`](Error::is_unknown_endpoint). Otherwise an error means
//! every attempt ended without an HTTP response: [`Error::attempts`] lists them in order (even
//! a single one) and `source()` is the last cause; an [`Attempt`]'s `Display` prints the
//! endpoint and the whole cause chain. Because even one failed attempt is reported this way,
//! `is_timeout()` or `is_connect()` on the outer `reqwest_middleware::Error` is false: ask the
//! attempts. Their errors have the URL removed. See [`Error`].
//!
//! **Events.** [`on_event`](FailoverBuilder::on_event) receives [`Event::Attempt`], each
//! followed by its [`Event::Judged`] (how the outcome was judged), [`Event::CooldownSkip`],
//! [`Event::Breaker`], [`Event::NotReplayable`], [`Event::Hedge`] and exactly one
//! [`Event::Result`] per request, last, synchronously and in causal order; never under a lock.
//! With the `tracing` feature, the same events are also emitted as `tracing` events.
//!
//! **Which provider answered.** Every response failnext returns carries [`ServedBy`] in its
//! extensions ([`ResponseExt::served_by`] reads it), so a follow-up can prefer that provider, or
//! a retry after a JSON-RPC error can exclude it.
//!
//! **Destination.** Each attempt goes to the endpoint's complete URL: the request's own path
//! and query are replaced, never joined or merged. The URL a request is built with matters
//! only for the `Host` rule below; addressing requests to the primary's URL is the convention.
//! A `Host` header that is absent stays absent; one equal to the original URL's `host[:port]`
//! (exact comparison) follows each endpoint, first attempt included; any other value is kept on
//! every attempt. Userinfo in an endpoint URL (`https://user:pass@host/`) is removed from the
//! URL and sent as HTTP Basic `Authorization` to that endpoint. Other destination-bound state
//! (signatures, cookies, provider-specific headers) is not rewritten: put a middleware after
//! `Failover` for that. The response you get back is reqwest's: its `url()` (and its `Debug`,
//! and errors reqwest builds from it later, such as `error_for_status`) is the endpoint's full
//! URL, keys included, so strip it before logging those.
//!
//! **Deadlines and cancellation.** [`attempt_timeout`](FailoverBuilder::attempt_timeout)
//! bounds each attempt, 10 seconds by default, so a provider that hangs costs at most that
//! long before the next is tried; its timeout is an error like any other, which may fail
//! over. Raise it for heavy calls (a wide `eth_getLogs`), or remove it with
//! [`no_attempt_timeout`](FailoverBuilder::no_attempt_timeout) (0.1's default, under which a
//! provider that accepts connections and never answers holds the request forever). A request's own
//! reqwest timeout (`RequestBuilder::timeout`) is carried by every attempt, so it bounds each
//! attempt too, not the whole request. For a deadline on the whole request, set
//! [`FailoverBuilder::deadline`] (or [`RequestBuilderExt::deadline`]; see
//! [Bounds](#bounds-a-deadline-and-a-failover-budget)), which ends it with an error listing
//! its attempts, or wrap the call in `tokio::time::timeout`: dropping the future cancels the
//! request cleanly, the attempt in flight is dropped, no cooldown is recorded for it, and the
//! event hook receives [`Event::Result`] with [`ResultOutcome::Cancelled`].
//!
//! # Judging
//!
//! Every attempt's outcome is judged in one place, which decides together the [`Verdict`]
//! (return it, or fail over, optionally asking that the endpoint take no traffic for a
//! while), the [`Evidence`] for the endpoint's health (failure, success, neutral) and the
//! [`Class`] shown in [`Event::Judged`]:
//!
//! | outcome | verdict | evidence | class |
//! |---|---|---|---|
//! | an error, no HTTP response | fail over | failure | `Transport` |
//! | 502, 503, 504 (body not read) | fail over | failure | `Trigger` |
//! | an [added](FailoverBuilder::additional_trigger_status_codes) status (body not read) | fail over | success | `Trigger` |
//! | any other response, with a [`Classifier`] | the classifier's [`Judgement`] | | |
//! | any other response, no classifier (the default) | return | success | `Answer` |
//!
//! A classifier may read the body (up to a cap it chooses) and hand back a response rebuilt
//! from the same bytes ([`Classified::Response`]). What it flags ([`Verdict::FailOver`]) is
//! retained like a trigger response: the newest kept, older ones dropped, and returned if
//! every later attempt errors or the request may not fail over. A write (a request denied
//! failover) with a flagged response still reaches exactly one provider and gets that
//! response; a streaming body is still sent at most once.
//!
//! When no response is left to return, the attempt is a failed one, listed in
//! [`Error::attempts`], and fails over like a transport error: when the classifier hands back
//! [`Classified::Failed`] (reading the body failed; its error has the URL removed), and when
//! it panics. A panic is caught around the classifier; the response is gone with it, the
//! attempt's error says "the classifier panicked" (without the panic's message, which could
//! carry a URL), and the evidence is neutral: a classifier's bug says nothing about the
//! endpoint. So a panicking classifier loses no request: the next endpoint is tried, and
//! with none left the caller gets a failover error naming the panic.
//!
//! The endpoint's health is also told how long the endpoint should take no traffic, when
//! known: the verdict's `cool_for`, else a `Retry-After` header (delta-seconds or an
//! HTTP-date) on a 429 or 503 response, capped at 5 minutes. [`Cooldown::new`]'s reference
//! rule ignores it.
//!
//! With no classifier configured, judging reads no body, boxes no future and allocates
//! nothing.
//!
//! # The breaker
//!
//! Each endpoint has a breaker ([`Cooldown::adaptive`], the default), shared by every request
//! through one [`Failover`] and its clones: **closed** (full traffic) → **open** (skipped) →
//! **half-open** (one trial request at a time) → closed. It is passive: no probe and no
//! background task; every trial is a real request. A primary that refuses connections for a
//! while, with reads flowing (each open time without a hint has ±20 % jitter):
//!
//! ```text
//! t = 0        3 reads in a row fail on the primary (each fails over to the backup)
//!              -> Open { 250 ms }: reads skip the primary (CooldownSkip)
//! t ≈ 0.25 s   open time over: the next read is the primary's trial (HalfOpen), the others
//!              skip it meanwhile; the trial fails -> Open { 500 ms }
//! t ≈ 0.75 s   the trial fails -> Open { 1 s }; then 2 s, 4 s, 8 s, 16 s, 30 s, 30 s, ...
//!              (the cap, Cooldown::max_open): over 60 s, 3 failures and about 8 trials
//! t = T        the primary is back; its next trial (at most 30 s later) succeeds -> Closed:
//!              full traffic at once
//! later        2 more successes in a row forget the growth (the next trip needs 3 failures
//!              and opens for 250 ms); a failure before that opens it again at once, for the
//!              next longer time
//! ```
//!
//! A hint opens the breaker at once, for exactly that long: a `Retry-After` on a 429 or 503,
//! or a [classifier](crate::Classifier)'s [`cool_for`](Verdict::FailOver), capped by the
//! judge. While the breaker is open or half-open, only its trial's own outcome moves it:
//! attempts admitted before it opened, finishing late (a hang that times out long after the
//! breaker tripped), change nothing, except that a hint can lengthen the open time (which
//! supersedes a trial in flight: the provider asked for a pause). If the trial's request is
//! dropped before its outcome, its permit is freed and the next request is the trial. Each
//! transition is an [`Event::Breaker`] of the request that caused it (and a `tracing` event
//! with the feature).
//!
//! **Paired with a monitor.** The breaker learns the [eligibility hook](FailoverBuilder::eligible)'s
//! answers: when an endpoint turns from ineligible to eligible (a monitor such as
//! `failnext-blocklag` saw it fit again), its open time ends at once and the next request is
//! its trial, however long failed trials had made it. So with a monitor as eligibility a
//! provider that was down takes traffic again within a check interval and one trial of coming
//! back, and while the monitor rules it out it gets no attempt at all.
//!
//! **Last resort.** A request that finds an endpoint open (or half-open with its trial taken)
//! passes over it but remembers it. When the request has no candidate left in its order, it
//! is sent, as that endpoint's trial, to the remembered endpoint whose open time ends soonest
//! (ties in configured order), even before that time is over; so a request does not fail with
//! [`is_no_usable_endpoint`](Error::is_no_usable_endpoint) because every provider is open,
//! and a request whose candidates all failed gets one more, the soonest to recover. When
//! every remembered endpoint's trial is held by another request, the request **waits for the
//! soonest one's trial to end** (at most the [attempt timeout](FailoverBuilder::attempt_timeout),
//! which bounds that trial too) and asks again: if the trial closed the breaker it is sent
//! there, if the trial failed it may take the next trial itself. A request waits at most twice
//! per endpoint (the first trial may have begun before it, so its failure is older news; the
//! second began while it waited), so a dead provider still has one trial in flight at a time.
//! Each endpoint is still attempted at most once per request, and the last resort only chooses
//! where the next *permitted* attempt goes: a request that may not fail over, or whose body is
//! a stream, never reaches a second provider because of it.
//!
//! **When `NoUsableEndpoint` still happens:** nothing was sent, because every endpoint was
//! excluded or ineligible (or, under the reference rule, cooling), or every candidate left had
//! its trial held by other requests through both of this request's waits, or through one wait
//! that outlasted the attempt timeout; with [`no_attempt_timeout`](FailoverBuilder::no_attempt_timeout)
//! nothing bounds a trial, so a request does not wait and a held trial means no usable
//! endpoint at once.
//!
//! **The reference behaviour** of failnext 0.1 (a fixed cooldown, no half-open state, no hint,
//! no last resort: when every candidate is cooling, the request fails with no usable endpoint)
//! comes back with:
//!
//! ```
//! use std::time::Duration;
//! use failnext::{Cooldown, Endpoint, Failover};
//!
//! let failover = Failover::builder([Endpoint::new("primary", "http://127.0.0.1:8545")])
//!     .cooldown(Cooldown::new(3, Duration::from_secs(30)))
//!     .build()?;
//! # drop(failover);
//! # Ok::<(), failnext::ConfigError>(())
//! ```
//!
//! # Bounds: a deadline and a failover budget
//!
//! Both opt-in. [`FailoverBuilder::deadline`] (or [`RequestBuilderExt::deadline`] per request)
//! bounds a request as a whole: each attempt, and each wait for another request's breaker
//! trial, gets at most what is left; when it passes the request ends with
//! [`Error::is_deadline`] (its attempts, and [`Error::untried`] the endpoints it did not
//! reach), or with the trigger response it retained. [`FailoverBuilder::failover_budget`]
//! with a [`Budget`] limits failover attempts across all requests of a `Failover` and its
//! clones to a share of the requests, with a floor per second: ten workers trying three dead
//! providers no longer make thirty calls for ten decisions; a spent budget ends a request at
//! its first attempt's outcome ([`Error::is_budget_spent`]). [`FailoverBuilder::hedge`] with a
//! [`Hedge`] starts a read's next candidate when its first attempt has not finished after a
//! delay; the first answer wins and the other attempt is cancelled (never for a write or a
//! streaming body; a hedge needs a budget token; each is an [`Event::Hedge`]). The delay is
//! fixed ([`Hedge::after`]) or, with [`Hedge::percentile`], a quantile of the first endpoint's
//! latest 64 attempt latencies (`0.9`: hedge only a read slower than nine in ten recent ones),
//! bounded by [`Hedge::at_least`] and [`Hedge::at_most`], with a [`Hedge::fallback`] until the
//! endpoint has 16 samples; the latencies are kept only with a percentile hedge, so a fixed
//! delay, or none, adds nothing to the healthy path. [`RequestBuilderExt::trace`] keeps a
//! [`Trace`] of a request: every endpoint and what happened to it.
//!
//! # Latency-aware ordering
//!
//! Opt-in ([`FailoverBuilder::latency_ordering`] with a [`LatencyOrdering`]); priority order
//! stays the default. Each endpoint keeps a latency average (fed by attempts that come back
//! with a response it does not fail over from, and by [`Failover::observe_latency`], e.g. from
//! a monitor's probes); the first candidate in priority order gives its place to the fastest
//! one only when that one is faster by more than the margin. One request in 16 explores (each
//! endpoint goes first in turn), so a slow primary that got fast again gets its reads back. A
//! request's own [`PreferredEndpoint`] wins. Cost on the healthy path: a clock read per
//! attempt (bench variant `failover-latency`, +0.2 µs/req, no allocation).
//!
//! # Paired with a monitor
//!
//! [`FailoverBuilder::monitor`] pairs a `Failover` with a health view kept outside the request
//! path, a [`HealthSource`] (failnext-blocklag's `Monitor`), both ways and in one call:
//!
//! - the source's eligibility is **advice, not a wall**: an endpoint it rules out is kept in
//!   reserve and tried after every endpoint it admits (a read that may fail over), or first
//!   when it admits none; its answer is judged like any other. An admitted endpoint whose
//!   known head ([`HealthSource::head_of`]) is below the floor goes into the reserve too, but
//!   ahead of the ruled-out ones (its head may be old news). A write still reaches one
//!   endpoint at most. The plain [`FailoverBuilder::eligible`] hook keeps the reference rule:
//!   an ineligible endpoint is never tried;
//! - its latencies feed latency-aware ordering (a [`LatencyFeed`] handed over at build);
//! - reads are hedged at the 95th percentile of recent latency unless told otherwise
//!   ([`FailoverBuilder::hedge`], [`FailoverBuilder::no_hedge`]), and a first attempt that
//!   looks hung (out four times the hedge's delay, at least 250 ms) is raced by the reserve;
//! - **every answer is evidence**: each judged attempt is told to the source
//!   ([`HealthSource::observe`], an [`Observation`]), and one that contradicts its view (a
//!   failure, a head behind or implausible) asks it to check that endpoint now
//!   ([`HealthSource::check_now`], bounded by the source);
//! - **heads are judged**: with the JSON-RPC classifier, a single `eth_blockNumber` answer is
//!   compared with the best known head ([`HealthSource::head`], or the highest plausible head
//!   this `Failover` has seen in answers, whichever is higher), projected by its block time
//!   to when the attempt was sent (less an eighth of the blocks projected): below it by more
//!   than its tolerance ([`Head::tolerance`], at least [`DEFAULT_TOLERANCE`] blocks), or above
//!   the highest plausible head ([`Head::plausible_limit`]: the blocks its block time allows
//!   since, plus one, plus the tolerance, and the tolerance again when the best known head is
//!   one seen in an answer, which may itself have been that far behind), the answer is failed
//!   over as a failure of its endpoint ([`Unfit::BelowFloor`], [`Unfit::Implausible`]), kept
//!   while the next endpoint is tried and returned only if nothing better comes.
//!
//! Heads are read from `eth_blockNumber` only (the one call whose whole answer is a head);
//! the request body is scanned for its method only when a source is paired.
//!
//! # Health across restarts
//!
//! [`Failover::health`] takes every endpoint's breaker state (open-until as a wall-clock
//! deadline, failed trials, latency average) as a [`HealthSnapshot`] (serializable with the
//! feature `serde`); [`Failover::restore_health`] gives it to the `Failover` of the restarted
//! process, so a provider that asked for a minute's pause does not get hammered at start-up,
//! and an open time that ended while the process was down leaves the breaker half-open.
//!
//! # Middleware order
//!
//! Middlewares added to the `ClientBuilder` *before* `Failover` run once per request; those
//! added *after* it run once per attempt, with the request already pointed at the endpoint
//! (the place for per-provider signing or tracing). Errors they return count as attempt
//! failures.
//!
//! # Common patterns
//!
//! The snippets below assume a `client: ClientWithMiddleware` built with a `Failover`, as in
//! the quick start, and JSON-RPC bodies; they leave out the `content-type` header, which a
//! client can also send on every request with reqwest's `ClientBuilder::default_headers`.
//!
//! ## Allow a read to fail over, keep a write from failing over
//!
//! ```no_run
//! use failnext::RequestBuilderExt;
//! # async fn demo(client: reqwest_middleware::ClientWithMiddleware, url: &str, read: String, write: String)
//! # -> Result<(), reqwest_middleware::Error> {
//! let resp = client.post(url).body(read).allow_failover().send().await?;
//! # drop(resp);
//! // Even under a client-wide Allow, a write can refuse failover.
//! let resp = client.post(url).body(write).deny_failover().send().await?;
//! # drop(resp); Ok(()) }
//! ```
//!
//! Allowing failover does not make a body replayable, an endpoint eligible, or a failure a
//! trigger, and it does not bypass cooldown. A replayable body does not make an operation safe
//! to repeat either.
//!
//! ## Skip providers the application knows are unusable
//!
//! ```
//! use std::collections::HashSet;
//! use std::sync::{Arc, RwLock};
//! use failnext::{Endpoint, EndpointId, Failover};
//!
//! let disabled: Arc<RwLock<HashSet<String>>> = Arc::default();
//! let view = disabled.clone();
//! let failover = Failover::builder([
//!     Endpoint::new("primary", "http://127.0.0.1:8545"),
//!     Endpoint::new("backup", "http://127.0.0.1:8546"),
//! ])
//! .eligible(move |id: &EndpointId| !view.read().map(|d| d.contains(id.as_str())).unwrap_or(false))
//! .build()?;
//! disabled.write().unwrap().insert("primary".to_owned());
//! # drop(failover);
//! # Ok::<(), failnext::ConfigError>(())
//! ```
//!
//! failnext-blocklag's `Monitor` implements [`Eligibility`] and can be passed directly.
//!
//! ## Try again without the provider that returned a JSON-RPC error
//!
//! ```no_run
//! use failnext::{RequestBuilderExt, ServedBy};
//! # async fn demo(client: reqwest_middleware::ClientWithMiddleware, url: &str, call: &'static str)
//! # -> Result<(), reqwest_middleware::Error> {
//! let resp = client.post(url).body(call).allow_failover().send().await?;
//! let served_by = resp.extensions().get::<ServedBy>().cloned();
//! let text = resp.text().await?;
//! if text.contains(r#""error""#) {
//!     if let Some(ServedBy(id)) = served_by {
//!         // Exclusion holds for this request only and changes nothing else.
//!         let retry = client.post(url).body(call).allow_failover().exclude_endpoints([id]).send().await?;
//! #       drop(retry);
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! ## Prefer a provider for a follow-up request
//!
//! ```no_run
//! use failnext::{RequestBuilderExt, ServedBy};
//! # async fn demo(client: reqwest_middleware::ClientWithMiddleware, url: &str, send_tx: &'static str, receipt: &'static str)
//! # -> Result<(), reqwest_middleware::Error> {
//! let sent = client.post(url).body(send_tx).deny_failover().send().await?;
//! let Some(ServedBy(id)) = sent.extensions().get::<ServedBy>().cloned() else { return Ok(()) };
//! // The receipt is most likely known first where the transaction went. Not a pin: the read
//! // may still fail over to the others.
//! let resp = client.post(url).body(receipt).prefer_endpoint(id).allow_failover().send().await?;
//! # drop(resp); Ok(()) }
//! ```
//!
//! ## Allow POST failover by default
//!
//! ```
//! use failnext::{Endpoint, Failover, Permission};
//!
//! // Only when every POST through this client is safe to repeat on another provider.
//! let failover = Failover::builder([Endpoint::new("primary", "http://127.0.0.1:8545")])
//!     .permission_policy(|req: &reqwest::Request| match *req.method() {
//!         reqwest::Method::POST => Permission::Allow,
//!         _ => Permission::Defer,
//!     })
//!     .build()?;
//! # drop(failover);
//! # Ok::<(), failnext::ConfigError>(())
//! ```
//!
//! The same default can be set per client without a policy, with
//! `ClientBuilder::with_init(Extension(Permission::Allow))`. A request-scoped choice wins
//! over both.
//!
//! ## Fail over on rate limits too, cool down faster, bound each attempt
//!
//! ```
//! use std::time::Duration;
//! use failnext::{Cooldown, Endpoint, Failover};
//!
//! let failover = Failover::builder([
//!     Endpoint::new("primary", "http://127.0.0.1:8545"),
//!     Endpoint::new("backup", "http://127.0.0.1:8546"),
//! ])
//! .additional_trigger_status_codes([http::StatusCode::TOO_MANY_REQUESTS])
//! .cooldown(Cooldown::new(2, Duration::from_secs(60)))
//! .attempt_timeout(Duration::from_secs(2))
//! .build()?;
//! # drop(failover);
//! # Ok::<(), failnext::ConfigError>(())
//! ```
//!
//! A 429 then triggers failover but, not being 502/503/504, does not count toward cooldown.
//!
//! ## Inspect failed providers
//!
//! ```no_run
//! use failnext::{Event, AttemptOutcome};
//! # async fn demo(client: reqwest_middleware::ClientWithMiddleware, url: &str) {
//! if let Err(err) = client.get(url).send().await {
//!     if let Some(e) = failnext::Error::from_middleware(&err) {
//!         for attempt in e.attempts() {
//!             eprintln!("endpoint={} err={}", attempt.endpoint(), attempt.error());
//!         }
//!     }
//! }
//! # }
//! // Or watch every attempt as it happens:
//! let hook = |event: &Event<'_>| {
//!     if let Event::Attempt { endpoint, attempt, outcome: AttemptOutcome::Error(e), elapsed } = event {
//!         eprintln!("attempt {attempt} to {endpoint} failed after {elapsed:?}: {e}");
//!     }
//! };
//! # let _ = hook;
//! ```
//!
//! # What failnext does not do
//!
//! It is failover, not load balancing. It has no active health checks (pair it with
//! failnext-blocklag for block-height lag), no retry of the same provider, no waiting for a
//! backoff or a `Retry-After` (a hint only keeps that endpoint's breaker open), no JSON-RPC
//! parsing unless a classifier is configured (the `jsonrpc` feature's reads a bounded body
//! once and hands it back uncopied), no body buffering for replay, no hard pinning, no cross-provider consistency
//! (read-after-write, pending state and nonces are the application's), no base-URL path or query composition, no WebSocket failover, and no
//! rewriting of signatures or other destination-bound headers.
//!
//! It keeps failover inside one process, for a small fixed set of providers. When several
//! applications should share one routing policy, or you need load balancing, service
//! discovery, caching or WebSocket failover, a proxy or gateway fits better.
//!
//! # Feature flags
//!
//! - `tracing` (off by default): one `tracing` event per attempt, judgement, skip, breaker
//!   transition, not-replayable stop and result, with the endpoint id, attempt number, status
//!   or error kind, class and verdict, and elapsed time. Never a URL.
//! - `jsonrpc` (off by default): `failnext::jsonrpc::JsonRpcClassifier`, which judges
//!   JSON-RPC answers by their body (rate limits, internal errors, missing data, malformed or
//!   truncated bodies fail over; reverts are returned), with serde_json.
//! - `alloy` (off by default, implies `jsonrpc`): `failnext::alloy::FailoverTransport`, an alloy
//!   transport with method-aware permission, filter pinning, read-your-writes and typed lost
//!   broadcasts.
//! - `serde` (off by default): [`HealthSnapshot`] serializes.
//! - `metrics` (off by default): through the `metrics` facade, labelled by endpoint id, never
//!   a URL: `failnext_attempts_total{endpoint, class}`, `failnext_attempt_seconds{endpoint}`
//!   (histogram), `failnext_failovers_total{endpoint}` (requests that moved on from it),
//!   `failnext_skips_total{endpoint, reason}` (`excluded`, `ineligible`, `cooling`, `open`,
//!   `trial_busy`), `failnext_breaker_transitions_total{endpoint, state}`, and for the alloy
//!   chain follower `failnext_follower_backfilled_blocks_total`,
//!   `failnext_follower_reorgs_total`, `failnext_follower_reorged_blocks_total`. The
//!   application installs the recorder (a Prometheus exporter, say).
//!
//! failnext enables no TLS backend and no tokio runtime of its own: configure reqwest as you
//! need.
//!
//! # Coming from Go failnext
//!
//! This crate keeps every rule of the Go library failnext. [PORTING.md] maps the Go API to
//! this one and lists where Rust works differently (request context, `GetBody`, `Host`,
//! redirects), and which cases of the Go library's behaviour catalogue do not apply.
//!
//! [PORTING.md]: https://github.com/failnext-rs/failnext/blob/main/failnext/PORTING.md
#![doc(test(attr(deny(warnings), allow(dead_code))))]
// Library code handles network input: no unwrap or expect outside tests.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

#[cfg(feature = "alloy")]
pub mod alloy;
mod events;
#[cfg(feature = "redis")]
pub mod fleet;
mod flow;
mod health;
#[cfg(feature = "jsonrpc")]
pub mod jsonrpc;
mod judging;
pub mod quantity;
mod request;

pub use events::error::{Attempt, Error, PassedOver};
pub use events::event::{AttemptOutcome, Event, FleetState, ResultOutcome, SkipReason};
pub use events::trace::{NotTried, Trace, TraceEntry, TraceStep};
pub use flow::budget::Budget;
pub use flow::builder::FailoverBuilder;
pub use flow::hedge::Hedge;
pub use flow::middleware::Failover;
pub use health::BreakerState;
pub use health::cooldown::Cooldown;
pub use health::eligibility::Eligibility;
pub use health::feed::LatencyFeed;
pub use health::latency::LatencyOrdering;
pub use health::persist::{EndpointHealth, HealthSnapshot};
pub use health::random::Jitter;
pub use health::source::{DEFAULT_TOLERANCE, Head, HealthSource, Observation};
pub use judging::classify::{Class, Classified, Classifier, Evidence, Judgement, Verdict};
pub use judging::findings::Findings;
pub use judging::scope::{RequestScope, Scope, Unfit};
pub use request::config_error::ConfigError;
pub use request::endpoint::{Endpoint, EndpointId};
pub use request::options::{
    ExcludedEndpoints, PreferredEndpoint, RequestBuilderExt, RequestDeadline, ResponseExt, ServedBy,
    TraceRequest,
};
pub use request::permission::Permission;
pub use request::validate::validate_endpoints;

// The READMEs' code is compiled as doc tests by the `failnext-examples` crate, which has
// alloy's provider crate and failnext-blocklag to compile them with.

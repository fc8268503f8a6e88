//! JSON-RPC-aware judging (feature `jsonrpc`): [`JsonRpcClassifier`].
//!
//! An HTTP 200 can carry a JSON-RPC error (`-32005` rate limit, `-32603` internal error), a
//! malformed body, or a body cut off mid-way. The status rule returns all of them to the
//! caller as successes. This classifier reads the body, within a cap, and judges it: it fails
//! over what another provider could answer and returns at once what every provider would
//! answer the same (a revert, invalid params, a nonce too low).
//!
//! It decides only what an answer says. Whether a request may fail over at all (a write must
//! not reach a second provider) is the middleware's decision, made as in 0.1 and never
//! changed by a verdict: a flagged answer to a request that may not fail over is returned to
//! the caller as it is.
//!
//! # The body
//!
//! - Every body is read, whatever its `content-type`: some nodes send JSON under another
//!   type, and to a JSON-RPC call a body that is not JSON-RPC is never an answer (rule 13
//!   below says what its words and its status make of it). 204 and `max_body(0)` are not
//!   read: judged by the status alone (rule 12), else returned as an answer.
//! - At most [`max_body`](JsonRpcClassifier::max_body) bytes are read (default 4 MiB, see
//!   [`DEFAULT_MAX_BODY`](JsonRpcClassifier::DEFAULT_MAX_BODY)). A body larger than that,
//!   by its `content-length` (then nothing is read) or once more bytes have arrived, is
//!   **returned unjudged** as an answer (HTTP 429 stays capacity): the caller's response
//!   hands out the bytes read so far and then the rest of the stream. Nothing is lost or
//!   copied; an error in the rest of the stream reaches the caller as it would without the
//!   classifier, and is not failed over.
//! - Within the cap, the body is read once with [`reqwest::Response::chunk`] into a list of
//!   the chunks the connection delivered, parsed from that list (a single chunk as a slice,
//!   several through a `Read` over the list: never joined), and handed to the caller in a
//!   response rebuilt from the same chunks, with the original status, version, headers,
//!   extensions and [`url`](reqwest::Response::url).
//! - Before it is parsed, the body is checked to be Unicode text as JSON requires: UTF-8,
//!   chunk by chunk (a character split between chunks included, nothing copied), and, when
//!   it holds a backslash, no `\u` escape of a lone surrogate. serde_json checks only the
//!   strings it reads; this makes the rule the same for the strings it skips.
//! - A body that ends early or resets mid-way fails inside the classifier, so the attempt can
//!   fail over: [`Classified::Failed`](crate::Classified::Failed) with the read error (its URL
//!   removed: no secret in errors) and `FailOver { cool_for: None }`, `Failure`, `Broken`.
//!
//! **Allocations.** Judging allocates, beside the body's own buffers: the list of chunks (a
//! 32-byte handle per chunk: 0.4 % of a body delivered in 8 KiB chunks, at most twice that
//! while the list grows), the error's message and a `data` string of at most 512 bytes (each
//! copied lower-cased), the parser's scratch buffer (one byte per nesting level of a
//! skipped value), a copy of the URL and a few small boxes for the rebuilt body. `result` and every
//! other field are skipped without being copied, however large or deep. So a 1 MiB answer
//! costs its body plus a few KiB, by construction (no allocation counter checks it here:
//! the workspace forbids `unsafe`, which a counting allocator needs; the bench measures it).
//!
//! # The table
//!
//! Each answer (one for a single response, each element for a batch) is judged by the first
//! rule that matches, in this order. Messages are matched ASCII-case-insensitively as
//! substrings of `error.message` and of `error.data` when that is a string of at most 512
//! bytes (anvil's "BlockOutOfRangeError" too, in either).
//!
//! | # | Answer | Class, verdict, evidence | Sources |
//! |---|--------|--------------------------|---------|
//! | 1 | code `3`, or "revert", "vm execution error", "vm exception" | `Definitive`: `Return`, `Neutral` | geth (`3` = revert with data, "execution reverted"), Alchemy ("Reverted 0x.."), eRPC `JsonRpcErrorEvmReverted` |
//! | 2 | a limit on the request: "query returned more than", "block range", "exceeds limit of", "range limit", "is limited to a", "response size", "batch size", "batch limit", "batch too large", "specified in query" (in any code, `-32005` included) | `Limit`: `FailOver { cool_for: None }`, `Neutral` | geth, Infura, Alchemy ("query returned more than 10000 results", `-32005`; "up to a 500 block range"; "Response size is larger than 150MB limit"; "1001 addresses specified in query"), Infura ("range 1000000 exceeds limit of 10000", "Log response size exceeded"), Ankr ("block range is larger than max block range"), Chainstack ("block range too high"), BSC ("exceed maximum block range: 5000"), Nethermind, reth ("query exceeds max block range 5000"), dRPC ("eth_getLogs is limited to a 10,000 range"), Tenderly (`data.payload` "range .. is bigger than range limit 2000"), NodeReal ("batch size exceed limit 500"), geth ("batch limit 100 exceeded"), Ankr, erigon ("batch too large") |
//! | 3 | a quota of the account: "capacity limit", "reached the free tier", "ran out of cu", "payment required" | `Payment`: `FailOver`, `Failure`; paused for minutes | Alchemy ("Monthly capacity limit exceeded", "ran out of CU"), eRPC billing |
//! | 4 | code `-32005`, `-32007`, `429`; `-32012` with "credit"; `data.rate.backoff_seconds`; "rate limit", "rate exceeded", "too many requests", "credits limited", "request limit", "requests limited to", "daily request count exceeded", "exceeded the quota", "reached the quota", "under too much load", "compute units per second", "throughput limit", "api usage limit", "concurrent requests", "over_limit", "error code: 1015" | `Capacity`: `FailOver { cool_for: hint }`, `Failure` | Infura (`-32005` "project ID request rate exceeded", "daily request count exceeded, request rate limited", `data.rate.backoff_seconds`, WebSocket `1008` "maximum number of concurrent requests"), Alchemy (`429` code, `-32016` "rate limit", "compute units per second"), QuickNode (`-32007` "request limit reached", `-32012` "credits limited to .."), Pokt ("exceeded its throughput limit"), NodeReal ("reached the maximum API usage limit"), Cloudflare ("error code: 1015"), a gateway's "Too Many Requests, [code:OVER_LIMIT ..]", alloy `ErrorPayload::is_retry_err` and `RpcErrorExt::backoff_hint`, eRPC `ErrEndpointCapacityExceeded` |
//! | 5 | credentials refused: "unauthorized", "must authenticate", "invalid project id", "project id is required", "project id not provided", "project id settings", "does not have access", "not on whitelist", "not allowed to access", "invalid api key", "app is inactive", "application not found", "secretkey does not match", "invalid host specified", "no longer allowed", "request blocked" | `Unauthorized`: `FailOver`, `Failure`; paused for minutes | Alchemy ("Unauthorized: You must authenticate your request with an API key", HTTP 403 "App is inactive", HTTP 410 "Requests to alchemyapi.io are no longer allowed"), Infura (HTTP 401 "invalid project id", `-32002` "rejected due to project ID settings", "project ID is required", "IP address .. is not on whitelist", "project ID does not have access to .."), Pokt (`-32052` "API key is not allowed to access blockchain", `-32056` "Application not found", `-32059` "SecretKey does not match"), Etherscan ("Invalid API Key"), gateways (HTTP 403 "invalid host specified", CloudFront "Request blocked.") |
//! | 6 | a block it does not know: code `-32001` (EIP-1474 "resource not found"), "header not found", "header for hash not found", "unknown block", "block not found", "could not find block", "cannot query unfinalized", "height is not available", "resource not found", "not currently canonical", "requested block height", "could not be found", anvil's "BlockOutOfRangeError" for a block above its head; state it does not keep: "missing trie node", "historical state", "state not available", "state is not available", "no state available", "state pruning", "before txnum", "due to pruning", "state 0x.. is not available", anvil's "BlockOutOfRangeError" for a block below its head; a method it does not serve: code `-32601`, `-32004`; "method not found", "unsupported method", "method is not whitelisted", "is not included in your current plan", "does not support", "not available on freetier" (words not with `-32602`, asked before the block rules; the codes after row 7) | `Stale`: `FailOver { cool_for: None }`, `Neutral` | geth (with an EIP-1898 hash: "header for hash not found", "hash .. is not currently canonical"; "required historical state unavailable"), erigon ("data before txNum=.. is not available", "old data not available due to pruning", "state 0x.. is not available"), Nethermind (`-32002` "No state available for block"), Parity ("running with state pruning"), Infura ("no nodes available for requested block height"), anvil (`-32001` "Resource not found"; `-32602` "BlockOutOfRangeError: block height is H but requested was R"), NodeReal (`-32004` "method .. does not support"), dRPC (code `35` "method is not available on freetier"), JSON-RPC 2.0, eRPC `IsMissingDataError`, `ErrEndpointUnsupported` |
//! | 7 | code `-32602` (invalid params), `-32600` (invalid request), `-32700` (parse error); "nonce too low", "nonce too high", "insufficient funds", "insufficient balance", "already known", "known transaction", "transaction underpriced" (and "replacement transaction underpriced"), "gas too low" (and "intrinsic gas too low"), "out of gas", "exceeds block gas limit", "less than block base fee", "exceeds the configured cap", "gas required exceeds allowance", "invalid sender", "invalid argument", "invalid params", "wrong transaction nonce", "not proper json" | `Definitive`: `Return`, `Neutral` | JSON-RPC 2.0, geth's txpool and API errors, Nethermind ("wrong transaction nonce"), Pokt (`-32066` "The request body is not proper JSON"), eRPC `ErrEndpointClientSideException` |
//! | 8 | "timeout", "timed out" | `Broken`: `FailOver { cool_for: None }`, `Neutral` (a heavy request, not proof the provider is bad) | geth ("execution aborted (timeout = 10s)", `-32002` "request timed out"), dRPC (code `30` "Request timeout on the free tier") |
//! | 9 | code `-32603` (internal error); a backend down: "no backend is currently healthy", "relay attempts exhausted", "unable to complete request", "cannot fulfill request", "method handler crashed", "internal service failure", "service temporarily unavailable", "service unavailable", "bad gateway", "gateway time" | `Broken`: `FailOver { cool_for: None }`, `Failure` | JSON-RPC 2.0; proxyd (`-32011`), Pokt (`-32050`), the Optimism public RPC, Cloudflare (`-32046`), erigon, nginx pages; eRPC `ErrEndpointServerSideException` |
//! | 10 | any other error object | `Answer`: `Return`, `Neutral` | (failnext: an unknown error is returned as in 0.1, and says nothing about the provider) |
//! | 11 | a `result` (even `null`) | `Answer`: `Return`, `Success` | JSON-RPC 2.0 |
//! | 12 | the status: 429 is `Capacity` (unless the body names the account or a limit); 401, 403, 407, 410 `Unauthorized`; 402 `Payment`; 413, 414, 431 `Limit`; 405 `Stale` (a method not served), each unless the body said something more specific that fails over | as the rows above | RFC 9110; Infura (401), Alchemy (403, 410), a gateway's 413 for a logs range |
//! | 13 | not JSON-RPC: not an object, `jsonrpc` not `"2.0"` (an `error` object without it is judged by rows 1–9, and is broken when they do not know it), neither `result` nor `error`, a malformed `error`; a body that is not JSON, has trailing garbage or is empty. Its first 4 KiB are then matched against rows 2–5 and 8 (in that order; a missing block or state or a backend down leave it broken) | `Broken`: `FailOver { cool_for: None }`, `Failure`, or the row its words match | JSON-RPC 2.0; Cloudflare's and gateways' plain-text and HTML pages; QuickNode's bare `{"code":-32007,..}` |
//!
//! Messages are matched in `error.message` and in `error.data` when it is a short string, or
//! in the short strings of its `reason`, `payload`, `message` and `details` (Infura's
//! `data.reason`, Tenderly's `data.payload`). **Credentials and payment** pause the provider
//! for a minute at first (not the breaker's seconds: a key is not fixed in seconds), doubling
//! at each refusal after a pause ends, at most 15 minutes, reset by its next good answer; with
//! the reference cooldown (`Cooldown::new`) they count as failures like any other. They are
//! told as their own class (`"unauthorized"`, `"payment"`) in events, metrics and the trace.
//! **Limits** count nothing against the provider: another provider may take the same request
//! whole (see `failnext::alloy` for logs ranges it splits and learns).
//!
//! The corpus test `tests/it/corpus.rs` judges 132 answers real providers sent, each quoted
//! verbatim from a public source with its address (`tests/corpus/real_answers.json`).
//!
//! **What an answer is.** An `error` that is present and not `null` decides (a `result`
//! beside it is not looked at); an `error` that is `null` is no error. An `error` is
//! **malformed** when it is not an object (an array, a string, a number, a boolean), or when
//! its `code` is present, not `null` and not an integer that fits an `i64` (`"-32005"`,
//! `3.0`, `3e0`, `-0`, `9223372036854775808`), or its `message` is present, not `null` and
//! not a string. `data` may be anything (only a short string or `rate.backoff_seconds` is
//! read). A malformed `error` makes its answer broken, not the body: in a batch it is one
//! broken answer among the others.
//!
//! **A key that appears twice** in an object counts with its **last** value, as in
//! `serde_json::Value` and JavaScript's `JSON.parse` (an earlier malformed value is replaced
//! by a later one, and the other way round).
//!
//! **What "not JSON" is.** A body is judged as a whole broken (none of its answers counted)
//! when `serde_json` rejects it as JSON text: a syntax error, a body cut off, trailing
//! garbage, an empty body, bytes that are not UTF-8 anywhere (JSON text is UTF-8, RFC 8259
//! §8.1, also inside a `result` that judging skips), a `\u` escape of a lone surrogate
//! anywhere, or a number beyond the range of an `f64` in a field judging reads (`code`,
//! `backoff_seconds`). Two limits of `serde_json::Value` do not apply to values judging skips
//! (`result`, `id`, any other field): they are skipped at any depth (`Value` stops at 128
//! levels) and their numbers are not converted (`1e400` inside a `result` is an answer).
//!
//! **The hint** of a capacity answer is, first found: Infura's `data.rate.backoff_seconds`
//! (a number not below 0); a time in the message, else in the data string; the response's
//! `Retry-After` header, delta-seconds or an HTTP-date (RFC 9110 §10.2.3, the obsolete date
//! forms too; a date not in the future gives none). It is capped at 5 minutes. Without one,
//! `cool_for` is `None` and the open time is the breaker's. A time in a text follows the
//! first of "try again in", "try again after", "retry after", "retry in" (in this order)
//! that the text holds: a decimal number (digits and dots) right after it, spaces allowed,
//! then a unit, `ms`/`milli..` milliseconds, `m`/`min..` minutes (not `mo..`), `h..` hours,
//! anything else or none seconds (`250ms`, `2 s`, `1.5 seconds`, `2 minutes`); no number
//! there, no hint from that text.
//!
//! **Reverts come first**, so that a contract's revert reason such as "execution reverted:
//! rate limit exceeded" is returned, never taken for the provider's own rate limit (which
//! would cool every provider in turn for a correct answer).
//!
//! # Batches
//!
//! A batch fails over **as a whole** when any of its answers fails over, judged by the first
//! of: unauthorized, payment, capacity (with the longest hint of its capacity answers, else the
//! `Retry-After`), broken, a timeout, a limit, stale; its evidence is `Failure` for the first
//! four, else `Neutral`. Otherwise it is returned:
//! `Definitive` when any answer is definitive, else `Answer`; its evidence is `Success` when
//! any answer is a `result`, else `Neutral`. An empty batch `[]` is returned (`Neutral`).
//! A batch whose body is not JSON (cut off, bytes that are not UTF-8, ...) is broken as a
//! whole: the answers before the fault are not counted, so no hint is taken from them
//! (under HTTP 429 it stays capacity, with the `Retry-After`).
//!
//! # Choices no specification settles
//!
//! - **Stale is `Neutral`.** Missing data depends on the request (a block just announced, old
//!   state on a pruned node), not only on the provider: counting it as a failure would open
//!   the breaker of a good full node for every archive read, and of every provider for a
//!   block none has yet. The request fails over; the provider's health is untouched. Lag as
//!   such is the block-height monitor's job (`failnext-blocklag`). The alloy transport goes
//!   further per request: it tells a block the provider does not know, state it does not keep
//!   and a method it does not serve apart, and learns from them (which provider did not know a
//!   bundle's reference; which one lacks archive state or a method, for a while); see
//!   `failnext::alloy`.
//! - **Unsupported methods fail over** (`-32601`, as stale, `Neutral`): providers differ in
//!   the methods they serve (`debug_*`, `trace_*`, `eth_getBlockReceipts`). A misspelt
//!   method costs one quick attempt per provider.
//! - **Unknown error objects are returned, `Neutral`**: `-32000` and vendor codes carry many
//!   request-specific errors; failing them over would repeat them on every provider.
//! - **`result: null` is an answer** (an unknown transaction, a pending receipt): never
//!   flagged.
//! - **The `id` is not checked.** The classifier sees only the response, not the request, so
//!   it cannot know which id to expect; checking it needs the request's body and belongs to
//!   a later, request-aware judge. `id` is skipped unparsed. This is a known limitation: a
//!   provider that answers another request's id is not caught.
//! - **Non-JSON answers are not judged**, whatever their status (a 500 with an HTML page is
//!   returned, as in 0.1), except 429.
//! - **An empty JSON body is broken**: a JSON-RPC answer is never empty. The classifier does
//!   not see the request, so it is meant for JSON-RPC endpoints (an answer to `HEAD` with a
//!   JSON content type would be judged broken too).
//!
//! # Example
//!
//! ```
//! use failnext::jsonrpc::JsonRpcClassifier;
//!
//! let classifier = JsonRpcClassifier::new().max_body(8 << 20);
//! assert_eq!(classifier.max_body_len(), 8 * 1024 * 1024);
//! ```

// Internal layering, one way only (a module uses only those listed after it on its line,
// never one that uses it):
//
//   classifier -> body, parse, result, tally, table   (the `Classifier`: reads, judges, rebuilds)
//   parse      -> answer, result, tally, table, text  (the driver: a single answer or a batch)
//   answer     -> result, table                       (serde visitors: an answer/error object)
//   tally      -> table                               (how the answers were judged; judgement)
//   body, result, table, text                         (leaves: reading/rebuilding the body, a
//                                                      result read in place as a quantity, the
//                                                      code table, the Unicode check)
mod answer;
mod body;
mod classifier;
pub(crate) mod error_object;
mod parse;
mod result;
mod table;
mod tally;
mod text;
mod visit;

pub use classifier::JsonRpcClassifier;

#[cfg(test)]
mod tests;

//! The code table: what one JSON-RPC error object says about the provider that sent it.
//!
//! The rules, their order and their sources are documented in the module docs
//! ([`super`]); this file holds them as data and the few lines that apply them. Messages are
//! matched case-insensitively: the caller lower-cases its own copy of the (short) message and
//! of a short `data` string, and every pattern here is lower case.

use std::time::Duration;

/// The longest time a provider's hint may keep an endpoint out of rotation: the judge's cap.
pub(crate) use crate::judging::judge::MAX_HINT;

/// How one answer of a single or batch response was judged.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Kind {
    /// A `result`.
    Answer,
    /// An error object no rule recognises: returned, says nothing about the provider.
    Unrecognised,
    /// A definitive error (revert, invalid params, nonce too low, ...).
    Definitive,
    /// The provider does not serve the method (`-32601`, "method not found", ...).
    Unsupported,
    /// The provider is out of capacity; the hint is how long it asked for.
    Capacity(Option<Duration>),
    /// The provider lacks the data asked for: a block it does not know (unknown block or hash,
    /// a block above its head) or state it does not keep (missing trie node, pruned history).
    Stale(Missing),
    /// The provider is broken (internal error, not a JSON-RPC 2.0 answer, a backend down, ...).
    Broken,
    /// The provider gave up on the request in time ("execution aborted (timeout = 5s)",
    /// "request timed out"): a heavy request here, not proof the provider is bad.
    Timeout,
    /// The provider refused the credentials (an invalid or missing key, an allow-list, an
    /// inactive app, a retired endpoint).
    Unauthorized,
    /// The account is out of paid capacity (a monthly quota, credits used up, HTTP 402).
    Payment,
    /// The request is too large for this provider (a logs range, a result count, a batch).
    Limit,
}

impl Kind {
    /// Whether an answer of this kind fails over for a reason more specific than a broken
    /// body: what a status rule must not overrule.
    pub(crate) const fn fails_over(self) -> bool {
        matches!(
            self,
            Kind::Capacity(_)
                | Kind::Unauthorized
                | Kind::Payment
                | Kind::Limit
                | Kind::Timeout
                | Kind::Stale(_)
                | Kind::Unsupported
        )
    }
}

pub(crate) use crate::judging::findings::{Missed, Missing};

/// What the parser kept of an error object; `message` and `data` are lower case.
#[derive(Debug, Default)]
pub(crate) struct ErrorFacts<'a> {
    /// `error.code`, when it is an integer.
    pub(crate) code: Option<i64>,
    /// `error.message`, lower-cased.
    pub(crate) message: &'a str,
    /// `error.data` when it is a short string, lower-cased; else empty.
    pub(crate) data: &'a str,
    /// `error.data.rate.backoff_seconds` (Infura), when it is a number.
    pub(crate) backoff_seconds: Option<f64>,
}

/// Reverts: checked first, so that a contract's revert reason that happens to say "rate
/// limit" is never taken for the provider's own rate limit.
const REVERT: &[&str] = &[
    "revert", // geth "execution reverted", Alchemy "Reverted 0x..", Hardhat "transaction: revert"
    "vm execution error", // eRPC
    "vm exception", // eRPC (Ganache, Hardhat)
];

/// Limits on the request's size, not on the provider's capacity: checked before the capacity
/// codes, because providers send them with `-32005` too ("query returned more than 10000
/// results"). The request fails over and the provider is not cooled.
const LIMIT: &[&str] = &[
    "query returned more than", // geth, Infura, Alchemy eth_getLogs (-32005)
    "block range", // Alchemy "up to a 500 block range", Ankr "block range is larger than max block range", Chainstack "block range too high", "exceed maximum block range: 5000" (BSC), "query exceeds max block range 5000" (Nethermind, reth)
    "exceeds limit of", // Infura "range 1000000 exceeds limit of 10000"
    "range limit", // Tenderly `data.payload` "range 9009594 is bigger than range limit 2000"
    "is limited to a", // dRPC "eth_getLogs is limited to a 10,000 range"
    "response size", // "Response size is larger than 150MB limit" (Alchemy), "Log response size exceeded" (Infura)
    "batch size",    // NodeReal "batch size exceed limit 500"
    "batch limit",   // geth "batch limit 100 exceeded", Alchemy "Batch limit 128, got 2840"
    "batch too large", // Ankr, erigon
    "specified in query", // Alchemy "1001 addresses specified in query, but only 1000 are allowed"
];

/// A monthly quota or credits used up: the account, not the moment (cooled for long).
const PAYMENT: &[&str] = &[
    "capacity limit",        // Alchemy "Monthly capacity limit exceeded", eRPC billing
    "reached the free tier", // eRPC, a billing limit
    "ran out of cu",         // Alchemy (compute units of the plan)
    "payment required",      // HTTP 402's reason phrase in a body
];

/// Rate limits and exhausted throughput, in any code (alloy `is_retry_err`, eRPC's normaliser).
const CAPACITY: &[&str] = &[
    "rate limit",    // alloy; Infura, Alchemy, eRPC "rate limited", Etherscan "Max rate limit reached"
    "rate exceeded", // alloy; Infura "project ID request rate exceeded"
    "too many requests", // alloy, eRPC, HTTP 429's reason phrase in a body
    "credits limited", // alloy (QuickNode "credits limited to 6000/sec")
    "request limit", // alloy (QuickNode "100/second request limit reached")
    "requests limited to", // eRPC
    "daily request count exceeded", // alloy (Infura)
    "exceeded the quota", // eRPC
    "reached the quota", // eRPC
    "under too much load", // eRPC
    "compute units per second", // Alchemy's 429 ("exceeded its compute units per second")
    "throughput limit", // Pokt "has exceeded its throughput limit"
    "api usage limit", // NodeReal "You have reached the maximum API usage limit"
    "concurrent requests", // Infura WebSocket 1008 "maximum number of concurrent requests"
    "over_limit",    // a gateway's "Too Many Requests, [code:OVER_LIMIT ..]"
    "error code: 1015", // Cloudflare's rate-limit page, plain text
];

/// Credentials refused: an operator's problem, cooled for long and told as "unauthorized".
const UNAUTHORIZED: &[&str] = &[
    "unauthorized", // Alchemy "Unauthorized: You must authenticate your request with an API key"
    "must authenticate", // Alchemy
    "invalid project id", // Infura HTTP 401 (text/plain)
    "project id is required", // Infura
    "project id not provided", // Infura (`data.reason`)
    "project id settings", // Infura -32002 "rejected due to project ID settings"
    "does not have access", // Infura "project ID does not have access to polygon l2"
    "not on whitelist", // Infura -32002 "IP address .. is not on whitelist"
    "not allowed to access", // Pokt "API key is not allowed to access blockchain"
    "invalid api key", // Etherscan "Invalid API Key"
    "app is inactive", // Alchemy HTTP 403 "App is inactive"
    "application not found", // Pokt -32056
    "secretkey does not match", // Pokt -32059
    "invalid host specified", // a gateway's HTTP 403 (text/plain)
    "no longer allowed", // Alchemy HTTP 410 "Requests to alchemyapi.io are no longer allowed"
    "request blocked", // CloudFront's HTTP 403 page in front of a provider
];

/// A backend down behind the provider, or a node that broke on the request.
const UNAVAILABLE: &[&str] = &[
    "no backend is currently healthy", // proxyd -32011
    "relay attempts exhausted",        // Pokt -32050
    "unable to complete request",      // Optimism public RPC
    "cannot fulfill request",          // Cloudflare -32046
    "method handler crashed",          // erigon
    "internal service failure",        // a gateway's HTTP 503 (text/plain)
    "service temporarily unavailable", // nginx's 503 page
    "service unavailable",             // HTTP 503's reason phrase in a body
    "bad gateway",                     // HTTP 502's reason phrase in a body
    "gateway time",                    // nginx "504 Gateway Time-out"
];

/// The provider gave up in time: fails over, not held against it (a heavy request).
const TIMEOUT: &[&str] = &[
    "timeout", // geth "execution aborted (timeout = 10s)", dRPC code 30 "Request timeout on the free tier"
    "timed out", // geth -32002 "request timed out"
];

/// A block the provider does not know (eRPC `IsMissingDataError`; alloy retries "header not
/// found"): a number above its head, a hash it never saw or no longer holds as canonical.
const BLOCK_MISSING: &[&str] = &[
    "header not found",          // geth, Infura's load balancer (alloy, eRPC)
    "header for hash not found", // geth, an EIP-1898 block hash it does not know
    "unknown block",             // geth, Nethermind (eRPC)
    "block not found",           // eRPC; also "finalized/safe/pending block not found"
    "could not find block",      // eRPC
    "cannot query unfinalized",  // eRPC (Avalanche)
    "height is not available",   // eRPC
    "resource not found",        // EIP-1474 -32001; anvil for an unknown block hash
    "not currently canonical",   // geth, `requireCanonical` for a hash off its chain
    "requested block height",    // Infura "no nodes available for requested block height"
    "could not be found",        // a node's "4294967295 could not be found"
];

/// State the provider does not keep, for a block it knows: a pruned (non-archive) node.
const STATE_MISSING: &[&str] = &[
    "missing trie node",      // geth, pruned state (eRPC)
    "historical state",       // geth "historical state unavailable", "historical state .. is not available"
    "state not available",    // Erigon, Nethermind
    "state is not available", // Nethermind, reth
    "no state available",     // Nethermind -32002 "No state available for block 0x.."
    "state pruning",          // Parity "your node is running with state pruning"
    "before txnum",           // erigon "data before txNum=.. is not available"
    "due to pruning",         // erigon "old data not available due to pruning"
];

/// Definitive answers about the request itself (geth's txpool errors, eRPC's client-side
/// exceptions): every provider would answer the same.
const DEFINITIVE: &[&str] = &[
    "nonce too low",                  // geth txpool
    "nonce too high",                 // geth txpool
    "insufficient funds",             // geth txpool, eRPC
    "insufficient balance",           // eRPC
    "already known",                  // geth txpool
    "known transaction",              // Parity, Nethermind
    "transaction underpriced",        // geth ("replacement transaction underpriced" too)
    "gas too low",                    // geth "intrinsic gas too low", eRPC
    "out of gas",                     // eRPC
    "exceeds block gas limit",        // geth txpool
    "less than block base fee",       // geth "max fee per gas less than block base fee"
    "exceeds the configured cap",     // geth "tx fee (..) exceeds the configured cap"
    "gas required exceeds allowance", // geth eth_estimateGas
    "invalid sender",                 // geth txpool
    "invalid argument",               // geth parameter errors (eRPC)
    "invalid params",                 // eRPC
    "wrong transaction nonce",        // Nethermind
    "not proper json",                // Pokt -32066 "The request body is not proper JSON"
];

/// The provider does not serve the method (eRPC's "unsupported" class).
const UNSUPPORTED: &[&str] = &[
    "method not found",                     // JSON-RPC 2.0 -32601, geth
    "unsupported method",                   // eRPC
    "method is not whitelisted",            // eRPC
    "is not included in your current plan", // eRPC
    "does not support",                     // NodeReal -32004 "method xxx does not support"
    "not available on freetier",            // dRPC code 35
];

/// Judges one error object. See the table in the module docs; the order of the rules here
/// is the order there.
pub(crate) fn classify(error: &ErrorFacts<'_>) -> Kind {
    let said =
        |patterns: &[&str]| patterns.iter().any(|p| error.message.contains(p) || error.data.contains(p));
    let code = error.code;
    if code == Some(3) || said(REVERT) {
        return Kind::Definitive;
    }
    if let Some(kind) = account_or_limit(&said) {
        return kind;
    }
    if matches!(code, Some(-32005 | -32007 | 429))
        || (code == Some(-32012) && said(&["credit"]))
        || error.backoff_seconds.is_some()
        || said(CAPACITY)
    {
        return Kind::Capacity(hint(error));
    }
    if said(UNAUTHORIZED) {
        return Kind::Unauthorized;
    }
    if let Some(missing) = out_of_range(error.message).or_else(|| out_of_range(error.data)) {
        return Kind::Stale(missing);
    }
    if said(UNSUPPORTED) && code != Some(-32602) {
        return Kind::Unsupported;
    }
    if code == Some(-32001) || said(BLOCK_MISSING) {
        return Kind::Stale(Missing::Block);
    }
    if said(STATE_MISSING) || state_not_available(error.message) {
        return Kind::Stale(Missing::State);
    }
    if matches!(code, Some(-32602 | -32600 | -32700)) || said(DEFINITIVE) {
        return Kind::Definitive;
    }
    if matches!(code, Some(-32601 | -32004)) {
        return Kind::Unsupported;
    }
    if said(TIMEOUT) {
        return Kind::Timeout;
    }
    if code == Some(-32603) || said(UNAVAILABLE) {
        return Kind::Broken;
    }
    Kind::Unrecognised
}

/// The rules every text is asked first, after reverts: a limit on the request, then a
/// quota of the account (before the capacity codes, which providers reuse for both).
fn account_or_limit(said: &impl Fn(&[&str]) -> bool) -> Option<Kind> {
    if said(LIMIT) {
        return Some(Kind::Limit);
    }
    if said(PAYMENT) {
        return Some(Kind::Payment);
    }
    None
}

/// Judges a body that is not a JSON-RPC answer (plain text, an HTML page, an object without
/// the envelope) by its words, lower-cased: a limit, a payment, a rate limit, credentials or
/// a timeout; `None` when none speaks of it (it stays broken). No hint is read from it (a
/// `Retry-After` header still is).
pub(crate) fn classify_text(text: &str) -> Option<Kind> {
    let said = |patterns: &[&str]| patterns.iter().any(|p| text.contains(p));
    if let Some(kind) = account_or_limit(&said) {
        return Some(kind);
    }
    if said(CAPACITY) {
        return Some(Kind::Capacity(None));
    }
    if said(UNAUTHORIZED) {
        return Some(Kind::Unauthorized);
    }
    // A missing block or state said outside a JSON-RPC error, or a backend down, leave the
    // body broken (as it is): the words are asked only what changes the judgement.
    if said(BLOCK_MISSING) || said(STATE_MISSING) {
        return None;
    }
    said(TIMEOUT).then_some(Kind::Timeout)
}

/// erigon's and geth's "state 0x.. is not available": the state root sits between the words.
fn state_not_available(message: &str) -> bool {
    message.starts_with("state 0x") && message.ends_with("is not available")
}

/// anvil's `-32602` "BlockOutOfRangeError: block height is H but requested was R" (in the
/// message or a `data` string, the message first, like every message rule): a block
/// above its head (`R > H`: it does not know it yet), or state it pruned (`R < H`, anvil with
/// `--prune-history`). Checked before the `-32602` rule, which would make it definitive.
fn out_of_range(message: &str) -> Option<Missing> {
    let rest = message.split_once("blockoutofrange")?.1;
    let number = |after: &str| -> Option<u64> {
        let tail = rest.split_once(after)?.1.trim_start();
        let end = tail.find(|c: char| !c.is_ascii_digit()).unwrap_or(tail.len());
        tail[..end].parse().ok()
    };
    match (number("height is"), number("requested was")) {
        (Some(height), Some(requested)) if requested <= height => Some(Missing::State),
        _ => Some(Missing::Block),
    }
}

/// The back-off a capacity error asks for: Infura's `data.rate.backoff_seconds`, else a time
/// in the message ("try again in 250ms", "retry after 2 s"), else one in a `data` string.
/// Capped at [`MAX_HINT`]; `None` when nothing usable is given.
fn hint(error: &ErrorFacts<'_>) -> Option<Duration> {
    let from_data = error
        .backoff_seconds
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| Duration::from_secs_f64(s.min(MAX_HINT.as_secs_f64())));
    from_data.or_else(|| text_hint(error.message)).or_else(|| text_hint(error.data)).map(|d| d.min(MAX_HINT))
}

/// A time after "try again in", "try again after", "retry after" or "retry in": a decimal
/// number, optional spaces, then a unit (`ms`/`millisecond..`, `s`/`sec..`, `m`/`min..`,
/// `h`/`hour..`); no unit means seconds.
pub(crate) fn text_hint(text: &str) -> Option<Duration> {
    const MARKERS: &[&str] = &["try again in", "try again after", "retry after", "retry in"];
    let at = MARKERS.iter().find_map(|m| text.find(m).map(|i| i + m.len()))?;
    let rest = text[at..].trim_start();
    let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
    let number: f64 = rest[..digits].parse().ok()?;
    let unit = rest[digits..].trim_start();
    let seconds = if unit.starts_with("ms") || unit.starts_with("milli") {
        number / 1000.0
    } else if unit.starts_with("min") || (unit.starts_with('m') && !unit.starts_with("mo")) {
        number * 60.0
    } else if unit.starts_with('h') {
        number * 3600.0
    } else {
        number
    };
    if !seconds.is_finite() || seconds < 0.0 {
        return None;
    }
    Some(Duration::from_secs_f64(seconds.min(MAX_HINT.as_secs_f64())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(code: i64, message: &str) -> Kind {
        let message = message.to_ascii_lowercase();
        classify(&ErrorFacts { code: Some(code), message: &message, ..ErrorFacts::default() })
    }

    #[test]
    fn a_revert_reason_saying_rate_limit_is_still_a_revert() {
        assert_eq!(kind(3, "execution reverted: rate limit exceeded"), Kind::Definitive);
        assert_eq!(kind(-32000, "execution reverted: too many requests"), Kind::Definitive);
    }

    #[test]
    fn hints_in_text_parse_with_units_and_are_capped() {
        assert_eq!(text_hint("please try again in 250ms"), Some(Duration::from_millis(250)));
        assert_eq!(text_hint("retry after 2 s"), Some(Duration::from_secs(2)));
        assert_eq!(text_hint("try again in 1.5 seconds"), Some(Duration::from_millis(1500)));
        assert_eq!(text_hint("retry in 3"), Some(Duration::from_secs(3)));
        assert_eq!(text_hint("try again after 2 minutes"), Some(Duration::from_secs(120)));
        assert_eq!(text_hint("try again in 1 hour"), Some(MAX_HINT));
        assert_eq!(text_hint("retry after 100000 s"), Some(MAX_HINT));
        assert_eq!(text_hint("try again later"), None);
        assert_eq!(text_hint("rate limited"), None);
    }

    #[test]
    fn missing_blocks_state_and_methods_are_told_apart() {
        assert_eq!(kind(-32000, "header for hash not found"), Kind::Stale(Missing::Block));
        assert_eq!(kind(-32000, "header not found"), Kind::Stale(Missing::Block));
        assert_eq!(kind(-32001, "Resource not found"), Kind::Stale(Missing::Block), "anvil, unknown hash");
        assert_eq!(kind(-32000, "hash 0xab is not currently canonical"), Kind::Stale(Missing::Block));
        assert_eq!(kind(-32000, "missing trie node 0xab (path )"), Kind::Stale(Missing::State));
        assert_eq!(kind(-32000, "historical state 0xab is not available"), Kind::Stale(Missing::State));
        assert_eq!(kind(-32601, "the method foo does not exist/is not available"), Kind::Unsupported);
        assert_eq!(kind(3, "execution reverted: header not found"), Kind::Definitive, "a revert first");
    }

    #[test]
    fn anvils_block_out_of_range_is_a_future_block_or_pruned_state() {
        let future = "BlockOutOfRangeError: block height is 0 but requested was 153";
        assert_eq!(kind(-32602, future), Kind::Stale(Missing::Block));
        let pruned = "BlockOutOfRangeError: block height is 16 but requested was 2";
        assert_eq!(kind(-32602, pruned), Kind::Stale(Missing::State));
        assert_eq!(kind(-32602, "invalid params"), Kind::Definitive);
    }

    #[test]
    fn code_32012_is_capacity_only_when_it_speaks_of_credits() {
        assert_eq!(kind(-32012, "credits limited to 6000/sec"), Kind::Capacity(None));
        assert_eq!(kind(-32012, "something else"), Kind::Unrecognised);
    }

    #[test]
    fn a_negative_or_infinite_backoff_is_capacity_without_a_hint() {
        for s in [-1.0, f64::INFINITY, f64::NAN] {
            let facts = ErrorFacts { code: Some(-32005), backoff_seconds: Some(s), ..ErrorFacts::default() };
            assert_eq!(classify(&facts), Kind::Capacity(None), "{s}");
        }
    }
}

//! The code table: what one JSON-RPC error object says about the provider that sent it.
//!
//! The rules, their order and their sources are documented in the module docs
//! ([`super`]); this file holds them as data and the few lines that apply them. Messages are
//! matched case-insensitively: the caller lower-cases its own copy of the (short) message and
//! of a short `data` string, and every pattern here is lower case.

use std::time::Duration;

/// The longest time a provider's hint may keep an endpoint out of rotation: the judge's cap.
pub(crate) use crate::judge::MAX_HINT;

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
    /// The provider is broken (internal error, not a JSON-RPC 2.0 answer, ...).
    Broken,
}

pub(crate) use crate::findings::{Missed, Missing};

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

/// Rate limits and exhausted quotas, in any code (alloy `is_retry_err`, eRPC's normaliser).
const CAPACITY: &[&str] = &[
    "rate limit",                   // alloy; Infura, Alchemy, eRPC "rate limited"
    "rate exceeded",                // alloy
    "too many requests",            // alloy, eRPC
    "credits limited",              // alloy (QuickNode "credits limited to 6000/sec")
    "request limit",                // alloy (QuickNode "100/second request limit reached")
    "requests limited to",          // eRPC
    "daily request count exceeded", // alloy (Infura)
    "exceeded the quota",           // eRPC
    "reached the quota",            // eRPC
    "under too much load",          // eRPC
    "compute units per second",     // Alchemy's 429 ("exceeded its compute units per second")
    "capacity limit",               // eRPC ("Monthly capacity limit"), a billing limit
    "reached the free tier",        // eRPC, a billing limit
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
];

/// State the provider does not keep, for a block it knows: a pruned (non-archive) node.
const STATE_MISSING: &[&str] = &[
    "missing trie node",      // geth, pruned state (eRPC)
    "historical state",       // geth "historical state unavailable", "historical state .. is not available"
    "state not available",    // Erigon, Nethermind
    "state is not available", // Nethermind, reth
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
];

/// The provider does not serve the method (eRPC's "unsupported" class).
const UNSUPPORTED: &[&str] = &[
    "method not found",                     // JSON-RPC 2.0 -32601, geth
    "unsupported method",                   // eRPC
    "method is not whitelisted",            // eRPC
    "is not included in your current plan", // eRPC
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
    if matches!(code, Some(-32005 | -32007 | 429))
        || (code == Some(-32012) && said(&["credit"]))
        || error.backoff_seconds.is_some()
        || said(CAPACITY)
    {
        return Kind::Capacity(hint(error));
    }
    if let Some(missing) = out_of_range(error.message).or_else(|| out_of_range(error.data)) {
        return Kind::Stale(missing);
    }
    if code == Some(-32001) || said(BLOCK_MISSING) {
        return Kind::Stale(Missing::Block);
    }
    if said(STATE_MISSING) {
        return Kind::Stale(Missing::State);
    }
    if matches!(code, Some(-32602 | -32600 | -32700)) || said(DEFINITIVE) {
        return Kind::Definitive;
    }
    if code == Some(-32601) || said(UNSUPPORTED) {
        return Kind::Unsupported;
    }
    if code == Some(-32603) {
        return Kind::Broken;
    }
    Kind::Unrecognised
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

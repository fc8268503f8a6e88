//! The `empty-behind` table as markdown and as JSON rows.

use serde_json::{Value, json};

use super::scenario::{BEHIND, BLOCK_TIME, CALL_LIMIT, GAP, LANES, Row};

/// The table as markdown.
pub(crate) fn markdown(rows: &[Row], quick: bool) -> String {
    use std::fmt::Write as _;
    let mut md = String::new();
    let _ = writeln!(
        md,
        "### empty-behind: empty answers from a provider {BEHIND} blocks behind{}\n\n\
         Three loopback providers on a chain making a block every {} ms; `primary` is {BEHIND} blocks behind \
         and answers `null` / `[]` for what it has not got yet, `secondary` and `backup` are current. \
         {LANES} tasks each start a read every {} ms (open loop): `eth_getTransactionReceipt` of block \
         head−k's tx, `eth_getBlockByNumber(head−k)`, `eth_getLogs(head−k..=head−k)`, k in 0..=2, head the \
         true head at the read's start. Correct: that block's receipt / block / log. Empty: `null` or `[]` \
         returned while the current providers had the block. Failed: errors, other answers, no answer within \
         {} s. Reqs/read: requests the three providers received, the monitor's probes excluded. Probes: the \
         monitor's, per provider per second since its spawn. Seen lag: the primary's lag in the monitor's \
         last snapshot.\n",
        if quick { " (quick: too few reads to compare)" } else { "" },
        BLOCK_TIME.as_millis(),
        GAP.as_millis(),
        CALL_LIMIT.as_secs(),
    );
    md.push_str(
        "| client | correct | empty returned | failed | reqs/read | probes/provider/s | seen lag | p50 ms | p99 ms |\n\
         |---|--:|--:|--:|--:|--:|--:|--:|--:|\n",
    );
    for r in rows {
        let probes = r.probes_per_provider_s.map_or("–".to_owned(), |p| format!("{p:.2}"));
        let lag = r.seen_lag.map_or("–".to_owned(), |l| l.to_string());
        let _ = writeln!(
            md,
            "| {} | {}/{} ({:.1} %) | {} | {} | {:.2} | {probes} | {lag} | {:.2} | {:.2} |",
            r.peer.name(),
            r.correct,
            r.reads,
            100.0 * r.correct as f64 / r.reads.max(1) as f64,
            r.empty,
            r.failed,
            r.requests_per_read,
            r.p50_ms,
            r.p99_ms,
        );
    }
    md
}

/// The table as JSON rows.
pub(crate) fn json(rows: &[Row]) -> Value {
    Value::Array(
        rows.iter()
            .map(|r| {
                json!({
                    "client": r.peer.name(),
                    "reads": r.reads,
                    "correct": r.correct,
                    "empty_returned": r.empty,
                    "failed": r.failed,
                    "requests_per_read": r.requests_per_read,
                    "probes_per_provider_per_s": r.probes_per_provider_s,
                    "seen_lag": r.seen_lag,
                    "p50_ms": r.p50_ms,
                    "p99_ms": r.p99_ms,
                })
            })
            .collect(),
    )
}

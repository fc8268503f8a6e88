//! The peer table as markdown and as JSON rows.

use serde_json::Value;

use super::scenario::{CALL_LIMIT, GAP, HEAD, LANES, Row};

/// The peer table as markdown.
pub(crate) fn markdown(rows: &[Row], quick: bool) -> String {
    use std::fmt::Write as _;
    let mut md = String::new();
    let _ = writeln!(
        md,
        "### peers: alloy's Http, FallbackLayer (± RetryBackoffLayer) and failnext's transport{}\n\n\
         Three loopback providers; the first is the one the scenario makes bad. {LANES} tasks each start an \
         `eth_blockNumber` read every {} ms (open loop); fresh servers and clients per contender. Correct: \
         the good head (0x{HEAD:x}); errors, JSON-RPC errors, a lagging head and no answer within {} s are \
         not. To bad: requests the bad provider answered with its fault (a 503, a rate limit, a lagging \
         head, a slow answer; refused: attempts started), apart from failnext-blocklag's probes, shown as \
         `+N probes`. All reqs: requests the three providers received, \
         probes included. CPU: the client thread (the monitor's checks included), per read.\n",
        if quick { " (quick: too few reads to compare)" } else { "" },
        GAP.as_millis(),
        CALL_LIMIT.as_secs(),
    );
    md.push_str(
        "| scenario | client | correct | p50 ms | p99 ms | to bad | all reqs | CPU µs/read |\n\
         |---|---|--:|--:|--:|--:|--:|--:|\n",
    );
    for r in rows {
        let probes = r.probes.map_or(String::new(), |p| format!(" +{p} probes"));
        let _ = writeln!(
            md,
            "| {} | {} | {}/{} ({:.1} %) | {:.2} | {:.2} | {}{probes} | {} | {:.1} |",
            r.fault.name(),
            r.peer.name(),
            r.correct,
            r.reads,
            100.0 * r.correct as f64 / r.reads.max(1) as f64,
            r.p50_ms,
            r.p99_ms,
            r.to_bad,
            r.total_requests,
            r.cpu_us,
        );
    }
    md
}

/// The peer table as JSON rows.
pub(crate) fn json(rows: &[Row]) -> Value {
    Value::Array(
        rows.iter()
            .map(|r| {
                serde_json::json!({
                    "scenario": r.fault.name(),
                    "client": r.peer.name(),
                    "reads": r.reads,
                    "correct": r.correct,
                    "p50_ms": r.p50_ms,
                    "p99_ms": r.p99_ms,
                    "to_bad": r.to_bad,
                    "probes": r.probes,
                    "total_requests": r.total_requests,
                    "cpu_us_per_read": r.cpu_us,
                })
            })
            .collect(),
    )
}

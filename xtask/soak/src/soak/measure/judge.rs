//! Judging the measure's reads against the ground truth: how each read ended, whether it was
//! answered correctly (a current head from the right chain), and whether it could have been
//! (answerable, counted).

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::timeline::Timeline;

/// How far below the chain's head (read just before the read was sent) an answer may be and
/// still be correct: `head_at_start - HEAD_TOLERANCE <= result <= head_at_end`.
pub const HEAD_TOLERANCE: u64 = 3;

/// The eligibility answers failnext got, by endpoint index.
pub(super) type Asked = Vec<(Option<usize>, bool)>;
/// Where and when failnext dispatched each attempt.
pub(super) type Dispatches = Vec<(Option<usize>, Instant)>;

/// How a read ended, as the caller saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Answer {
    /// 2xx, a JSON-RPC `result` with the right id that is a hex quantity (the head); served by
    /// this endpoint.
    Head { by: Option<usize>, head: u64 },
    /// 2xx with a JSON-RPC error of this code.
    RpcError(i64),
    /// 2xx whose body is not a JSON-RPC reply with a result (malformed, wrong id, ...).
    NotJsonRpc,
    /// 2xx, a JSON-RPC result with the right id, but not a hex quantity.
    NotQuantity,
    /// 2xx whose body failed while being read (truncated, reset, timeout).
    BodyFailed,
    /// A non-2xx HTTP answer.
    Status(u16),
    /// `NoUsableEndpoint`: every candidate was cooling or ineligible.
    NoUsable,
    /// Every attempt failed (transport, timeout).
    Failed,
}

/// One read, once it ended.
#[derive(Debug)]
pub(super) struct Sample {
    /// Just before `send()`.
    pub(super) start: Instant,
    /// After the body was read (or the read failed).
    pub(super) end: Instant,
    /// The chain's true head just before `send()`.
    pub(super) head_start: u64,
    /// The chain's true head at `end`.
    pub(super) head_end: u64,
    pub(super) answer: Answer,
    pub(super) asked: Asked,
    pub(super) dispatched: Dispatches,
    /// How many of the attempts were hedges.
    pub(super) hedges: u32,
}

/// Why an answerable read was not answered correctly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Miss {
    /// A head this many blocks (a bucket: lowest, highest) below the head at the start.
    Behind(u64, u64),
    /// A head above the chain's head at the end.
    Ahead,
    /// A head from a provider that was on the wrong chain during the read.
    WrongChain,
    /// A head, but `served_by` named no known endpoint.
    UnknownServer,
    RpcError(i64),
    NotJsonRpc,
    NotQuantity,
    BodyFailed,
    Status(u16),
    NoUsable,
    Failed,
}

/// The buckets of [`Miss::Behind`]: lag 3..6 (the flapping lag), more (a lag across a block
/// or two of timing), the half-stale provider's 20, a stalled head's anything.
const BEHIND: [(u64, u64); 4] = [(HEAD_TOLERANCE + 1, 6), (7, 12), (13, 24), (25, u64::MAX)];

impl Miss {
    fn behind(blocks: u64) -> Miss {
        let (lo, hi) =
            BEHIND.iter().copied().find(|(lo, hi)| (*lo..=*hi).contains(&blocks)).unwrap_or(BEHIND[0]);
        Miss::Behind(lo, hi)
    }
}

impl fmt::Display for Miss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Miss::Behind(lo, u64::MAX) => write!(f, "behind by {lo}+ blocks (stale/stalled)"),
            Miss::Behind(lo, hi) => write!(f, "behind by {lo}..{hi} blocks (stale/lagging)"),
            Miss::Ahead => f.write_str("ahead of the chain"),
            Miss::WrongChain => f.write_str("2xx head from the wrong chain"),
            Miss::UnknownServer => f.write_str("2xx head, served by no known endpoint"),
            Miss::RpcError(code) => write!(f, "2xx with JSON-RPC error {code}"),
            Miss::NotJsonRpc => f.write_str("2xx, not a JSON-RPC result (malformed)"),
            Miss::NotQuantity => f.write_str("2xx, result not a hex quantity"),
            Miss::BodyFailed => f.write_str("2xx, body failed (truncated/reset/timeout)"),
            Miss::Status(code) => write!(f, "http {code} returned"),
            Miss::NoUsable => f.write_str("error: no usable endpoint"),
            Miss::Failed => f.write_str("error: every attempt failed"),
        }
    }
}

/// What the measure found for one configuration.
#[derive(Debug, Default, Clone)]
pub struct Figures {
    /// Reads sent and finished.
    pub reads: u64,
    /// Reads answered correctly, of all reads.
    pub correct_all: u64,
    /// Reads during which some provider was healthy throughout, by the providers' own schedule
    /// (whatever the monitor thought).
    pub answerable: u64,
    /// Of those, answered correctly.
    pub correct_answerable: u64,
    /// Reads during which a good provider was eligible throughout (a subset of the answerable).
    pub counted: u64,
    /// Of those, answered correctly.
    pub correct: u64,
    /// Attempts that reached a provider while it was refused.
    pub refused_hits: u64,
    /// Attempts in all (hedges included).
    pub attempts: u64,
    /// Probes its own monitor sent, per provider per second of the measure (`None`: it has no
    /// monitor of its own).
    pub probes_per_provider_sec: Option<f64>,
    /// Median latency of the reads answered correctly (`None`: none was).
    pub p50: Option<Duration>,
    /// 99th percentile latency of the reads answered correctly.
    pub p99: Option<Duration>,
    /// How the answerable reads that were not answered correctly ended: how many, and how many
    /// of them were counted.
    pub(crate) misses: BTreeMap<Miss, (u64, u64)>,
    /// Where the attempts beyond the first went: by what the first attempt's provider was
    /// doing when it was sent (a diagnosis of the requests per read).
    pub(crate) extra: BTreeMap<String, u64>,
    /// The correct reads slower than 100 ms: by the first attempt's provider's behaviour and
    /// the attempts made.
    pub(crate) slow: BTreeMap<String, u64>,
}

impl Figures {
    /// The old figure: correct / counted, in percent (100 when nothing was counted).
    pub fn percent(&self) -> f64 {
        percent(self.correct, self.counted)
    }

    /// Issue 20's figure: correct / answerable, in percent (100 when nothing was answerable).
    pub fn answerable_percent(&self) -> f64 {
        percent(self.correct_answerable, self.answerable)
    }

    /// Attempts per read (hedges and failovers included); 0 without reads.
    pub fn requests_per_read(&self) -> f64 {
        if self.reads == 0 { 0.0 } else { self.attempts as f64 / self.reads as f64 }
    }
}

fn percent(n: u64, of: u64) -> f64 {
    if of == 0 { 100.0 } else { 100.0 * n as f64 / of as f64 }
}

/// A 2xx body: a JSON-RPC result with the request's id that is a hex quantity, or what else
/// it is.
pub(super) fn judge_body(bytes: &[u8], id: u64, served_by: Option<usize>) -> Answer {
    let Ok(reply) = serde_json::from_slice::<Value>(bytes) else { return Answer::NotJsonRpc };
    if let Some(code) = reply.get("error").map(|e| e.get("code").and_then(Value::as_i64).unwrap_or(0)) {
        return Answer::RpcError(code);
    }
    let right_id = reply.get("id").and_then(Value::as_u64) == Some(id);
    let Some(result) = reply.get("result") else { return Answer::NotJsonRpc };
    if !right_id || reply.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Answer::NotJsonRpc;
    }
    match result.as_str().and_then(quantity) {
        Some(head) => Answer::Head { by: served_by, head },
        None => Answer::NotQuantity,
    }
}

/// A JSON-RPC quantity: `0x` and at least one hex digit, no leading zero (but `0x0`).
fn quantity(s: &str) -> Option<u64> {
    let digits = s.strip_prefix("0x")?;
    let canonical = !digits.is_empty() && (digits == "0" || !digits.starts_with('0'));
    if !canonical || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(digits, 16).ok()
}

/// Each attempt of `s`: its provider and when it was sent, in ms after the read began.
fn sent(s: &Sample) -> String {
    let at = |at: Instant| at.saturating_duration_since(s.start).as_millis();
    let each = s.dispatched.iter().map(|(p, t)| format!("p{}@{}", p.map_or(-1, |p| p as i64), at(*t)));
    each.collect::<Vec<_>>().join(" ")
}

/// Whether `s` was answered correctly; why not, otherwise.
fn verdict(s: &Sample, timeline: &Timeline) -> Result<(), Miss> {
    match s.answer {
        Answer::Head { by: None, .. } => Err(Miss::UnknownServer),
        Answer::Head { by: Some(p), .. } if timeline.wrong_chain_during(p, s.start, s.end) => {
            super::trace::debug_at(Some(s.start), || {
                let ms = s.end.saturating_duration_since(s.start).as_millis();
                format!("miss: wrong chain by p{p}, {} attempts, {ms} ms: {}", s.dispatched.len(), sent(s))
            });
            Err(Miss::WrongChain)
        }
        Answer::Head { head, .. } if head > s.head_end => Err(Miss::Ahead),
        Answer::Head { head, by } if head.saturating_add(HEAD_TOLERANCE) < s.head_start => {
            super::trace::debug_at(Some(s.start), || {
                let ms = s.end.saturating_duration_since(s.start).as_millis();
                let attempts = s.dispatched.len();
                format!(
                    "miss: {head} by {by:?}, {} behind the head at the start, {attempts} attempts, {ms} ms: {}",
                    s.head_start - head,
                    sent(s)
                )
            });
            Err(Miss::behind(s.head_start - head))
        }
        Answer::Head { .. } => Ok(()),
        Answer::RpcError(code) => Err(Miss::RpcError(code)),
        Answer::NotJsonRpc => Err(Miss::NotJsonRpc),
        Answer::NotQuantity => Err(Miss::NotQuantity),
        Answer::BodyFailed => Err(Miss::BodyFailed),
        Answer::Status(code) => Err(Miss::Status(code)),
        Answer::NoUsable => Err(Miss::NoUsable),
        Answer::Failed => Err(Miss::Failed),
    }
}

/// The figures of one configuration's reads against the ground truth.
pub(super) fn judge(samples: &[Sample], timeline: &Timeline, providers: usize) -> Figures {
    let mut f = Figures::default();
    let mut latencies = Vec::new();
    for s in samples {
        f.reads += 1;
        f.attempts += s.dispatched.len() as u64;
        f.refused_hits +=
            s.dispatched.iter().filter(|(p, at)| p.is_some_and(|p| timeline.refused_at(p, *at))).count()
                as u64;
        let verdict = verdict(s, timeline);
        let first = s.dispatched.first().map(|(p, at)| {
            p.and_then(|p| timeline.kind_at(p, *at)).map_or_else(|| "unknown".to_owned(), |k| k.to_string())
        });
        let first = first.unwrap_or_else(|| "nothing sent".to_owned());
        if s.dispatched.len() > 1 {
            let hedges = u64::from(s.hedges);
            let failovers = (s.dispatched.len() as u64 - 1).saturating_sub(hedges);
            if hedges > 0 {
                *f.extra.entry(format!("first to {first}: hedges")).or_default() += hedges;
            }
            if failovers > 0 {
                *f.extra.entry(format!("first to {first}: failovers")).or_default() += failovers;
            }
        }
        if verdict.is_ok() {
            f.correct_all += 1;
            let took = s.end.saturating_duration_since(s.start);
            latencies.push(took);
            if took > Duration::from_secs(1) {
                super::trace::debug_at(Some(s.start), || {
                    format!("slow: {} ms: {}", took.as_millis(), sent(s))
                });
            }
            if took > Duration::from_millis(100) {
                let key = format!("first to {first}, {} attempts", s.dispatched.len());
                *f.slow.entry(key).or_default() += 1;
            }
        }
        let answerable = (0..providers).any(|p| timeline.healthy_throughout(p, s.start, s.end));
        let counted = s.asked.iter().any(|(p, eligible)| {
            *eligible && p.is_some_and(|p| timeline.healthy_throughout(p, s.start, s.end))
        });
        if answerable {
            f.answerable += 1;
            f.correct_answerable += u64::from(verdict.is_ok());
        }
        if counted {
            f.counted += 1;
            f.correct += u64::from(verdict.is_ok());
        }
        if let (true, Err(miss)) = (answerable, verdict) {
            let entry = f.misses.entry(miss).or_default();
            entry.0 += 1;
            entry.1 += u64::from(counted);
        }
    }
    latencies.sort_unstable();
    f.p50 = quantile(&latencies, 0.50);
    f.p99 = quantile(&latencies, 0.99);
    f
}

/// The `q`-quantile of sorted `values`, by nearest rank.
pub(super) fn quantile(sorted: &[Duration], q: f64) -> Option<Duration> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
    Some(sorted[rank - 1])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::soak::measure::timeline::Switch;
    use crate::soak::schedule::FaultKind;

    fn at(base: Instant, ms: u64) -> Instant {
        base + Duration::from_millis(ms)
    }

    /// p0 healthy from 0, down from 100 (to the end); p1 down from 0, healthy from 50, on the
    /// wrong chain from 200.
    fn timeline(base: Instant) -> Timeline {
        let sw = |b, d, kind| Switch { began: at(base, b), done: at(base, d), kind };
        Timeline {
            providers: vec![
                vec![sw(0, 1, FaultKind::Healthy), sw(100, 101, FaultKind::Down)],
                vec![
                    sw(0, 1, FaultKind::Down),
                    sw(50, 51, FaultKind::Healthy),
                    sw(200, 201, FaultKind::WrongChain),
                ],
            ],
        }
    }

    fn sample(
        base: Instant,
        (from, to): (u64, u64),
        heads: (u64, u64),
        answer: Answer,
        asked: Asked,
    ) -> Sample {
        let dispatched = vec![(Some(0), at(base, from))];
        Sample {
            start: at(base, from),
            end: at(base, to),
            head_start: heads.0,
            head_end: heads.1,
            answer,
            asked,
            dispatched,
            hedges: 0,
        }
    }

    fn head(p: usize, head: u64) -> Answer {
        Answer::Head { by: Some(p), head }
    }

    #[test]
    fn a_head_is_correct_within_three_blocks_of_the_start_and_not_past_the_end() {
        let base = Instant::now();
        let t = timeline(base);
        let read = |answer| sample(base, (10, 20), (1_000, 1_001), answer, vec![(Some(0), true)]);
        let verdicts: Vec<Result<(), Miss>> =
            [996, 997, 1_000, 1_001, 1_002].map(|h| verdict(&read(head(0, h)), &t)).to_vec();
        assert_eq!(verdicts, [Err(Miss::Behind(4, 6)), Ok(()), Ok(()), Ok(()), Err(Miss::Ahead)]);
        assert_eq!(verdict(&read(head(0, 980)), &t), Err(Miss::Behind(13, 24)), "half-stale's 20");
        assert_eq!(verdict(&read(head(0, 900)), &t), Err(Miss::Behind(25, u64::MAX)));
        // A head from a provider on the wrong chain during the read is wrong, however current.
        let wrong = sample(base, (210, 220), (1_000, 1_000), head(1, 1_000), vec![]);
        assert_eq!(verdict(&wrong, &t), Err(Miss::WrongChain));
    }

    #[test]
    fn answerable_needs_a_provider_healthy_throughout_whatever_was_eligible() {
        let base = Instant::now();
        let t = timeline(base);
        let ok = head(0, 1_000);
        let samples = [
            // p0 healthy throughout, asked and eligible: answerable and counted, correct.
            sample(base, (10, 20), (1_000, 1_000), ok, vec![(Some(0), true)]),
            // p0 healthy throughout but the monitor ruled it out: answerable, not counted.
            sample(base, (10, 20), (1_000, 1_000), Answer::NoUsable, vec![(Some(0), false)]),
            // Both providers healthy (p1 from 51): answerable, stale, counted.
            sample(base, (60, 90), (1_010, 1_010), ok, vec![(Some(1), true)]),
            // p0 went down at 100, p1 was down until 51: nobody healthy throughout.
            sample(base, (40, 120), (1_000, 1_000), Answer::Failed, vec![(Some(0), true)]),
        ];
        let f = judge(&samples, &t, 2);
        assert_eq!((f.reads, f.answerable, f.correct_answerable, f.counted, f.correct), (4, 3, 1, 2, 1));
        assert_eq!(f.correct_all, 1);
        assert_eq!(f.misses.get(&Miss::NoUsable), Some(&(1, 0)));
        assert_eq!(f.misses.get(&Miss::Behind(7, 12)), Some(&(1, 1)));
        assert_eq!(f.misses.get(&Miss::Failed), None, "not answerable: not a miss");
        assert!((f.answerable_percent() - 100.0 / 3.0).abs() < 1e-9);
        assert!((f.requests_per_read() - 1.0).abs() < 1e-9);
        assert_eq!(f.p50, Some(Duration::from_millis(10)));
    }

    #[test]
    fn a_body_is_a_head_only_as_a_hex_quantity_with_the_right_id() {
        let body = |s: &str| judge_body(s.as_bytes(), 7, Some(2));
        assert_eq!(body(r#"{"jsonrpc":"2.0","id":7,"result":"0xf4240"}"#), head(2, 1_000_000));
        assert_eq!(body(r#"{"jsonrpc":"2.0","id":8,"result":"0xf4240"}"#), Answer::NotJsonRpc);
        assert_eq!(body(r#"{"jsonrpc":"2.0","id":7,"result":"0x0f"}"#), Answer::NotQuantity);
        assert_eq!(body(r#"{"jsonrpc":"2.0","id":7,"result":12}"#), Answer::NotQuantity);
        assert_eq!(body(r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32005}}"#), Answer::RpcError(-32005));
        assert_eq!(body("<html>"), Answer::NotJsonRpc);
    }

    #[test]
    fn quantiles_by_nearest_rank() {
        let ms: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(quantile(&ms, 0.5), Some(Duration::from_millis(50)));
        assert_eq!(quantile(&ms, 0.99), Some(Duration::from_millis(99)));
        assert_eq!(quantile(&[], 0.5), None);
    }
}

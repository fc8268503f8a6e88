//! `Paired`: what a `Failover` keeps of its [`HealthSource`]: the source itself and the
//! highest plausible head seen in answers, and the one rule that judges a head-bearing answer
//! against the best known head.

use std::sync::{Arc, Mutex};

use tokio::time::Instant;

use crate::health::source::{Head, HealthSource};
use crate::judging::scope::Unfit;

/// A `Failover`'s paired source, and what its answers taught it about the head.
pub(crate) struct Paired {
    pub(crate) source: Arc<dyn HealthSource>,
    /// The highest plausible head seen in an answer, and when: `None` until one is seen.
    seen: Mutex<Option<(u64, Instant)>>,
}

impl Paired {
    pub(crate) fn new(source: Arc<dyn HealthSource>) -> Paired {
        Paired { source, seen: Mutex::new(None) }
    }

    /// The source's head, and the highest head seen in answers while the source's head makes
    /// it plausible (with the source's block time and tolerance).
    fn heads(&self, now: Instant) -> (Option<Head>, Option<Head>) {
        let source = self.source.head();
        let Some((number, at)) = *self.seen.lock().unwrap_or_else(|p| p.into_inner()) else {
            return (source, None);
        };
        let Some(head) = source else { return (None, Some(Head::new(number, at))) };
        if head.plausible_limit(now).is_some_and(|limit| number > limit) {
            return (Some(head), None);
        }
        let seen = Head::new(number, at).tolerance(head.blocks_of_tolerance());
        let seen = match head.known_block_time() {
            Some(block_time) => seen.block_time(block_time),
            None => seen,
        };
        (Some(head), Some(seen))
    }

    /// Judges the head `head` an answer reported, to an attempt sent at `sent` (now when
    /// unknown): `Some(why)` when it is below the floor (the higher floor of the source's head
    /// and the head seen, projected to the attempt's start by the block time, less its
    /// tolerance) or above the highest
    /// plausible head now; otherwise it counts as seen (the highest one seen raises the best
    /// known head).
    ///
    /// The projection is what keeps the floor current between probes: a head seen a second
    /// ago on a chain of 50 ms blocks is 20 blocks old, and a provider that stalled there
    /// would pass a floor that is not projected. Projected to the attempt's start, not to
    /// its end, the floor asks of an answer what a caller asks of it (to be within the
    /// tolerance of the head when the call was made): the blocks made while it travelled are
    /// not held against it.
    pub(crate) fn judge_head(&self, head: u64, sent: Option<Instant>) -> Option<Unfit> {
        let now = Instant::now();
        let heads = self.heads(now);
        // The higher of the two floors: each is a lower bound of the chain's head by its own
        // evidence, with a margin that grows with its age, so a head seen in an answer a block
        // ago floors a provider five blocks behind that the monitor's probe, a second older,
        // lets through.
        let sent = sent.unwrap_or(now);
        let floors = [heads.0, heads.1].into_iter().flatten().map(|h| floor(&h, sent));
        if let Some(floor) = floors.max() {
            if head < floor {
                return Some(Unfit::BelowFloor { head: Some(head), floor });
            }
        }
        if let Some((best, from_answers)) = newer(heads, now) {
            // A head seen in an answer was judged only against the floor: it may itself have
            // been a tolerance behind the chain, and an honest answer that much above it is
            // plausible.
            let behind = if from_answers {
                best.blocks_of_tolerance().max(crate::health::source::DEFAULT_TOLERANCE)
            } else {
                0
            };
            if let Some(limit) = best.plausible_limit(now).map(|limit| limit.saturating_add(behind)) {
                if head > limit {
                    return Some(Unfit::Implausible { head, limit });
                }
            }
        }
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if seen.is_none_or(|(number, _)| head > number) {
            *seen = Some((head, now));
        }
        None
    }
}

/// The newer of the source's head and the head seen in answers, projected to `now`, and
/// whether it is the one seen in answers.
fn newer(heads: (Option<Head>, Option<Head>), now: Instant) -> Option<(Head, bool)> {
    match heads {
        (None, None) => None,
        (Some(head), None) => Some((head, false)),
        (None, Some(seen)) => Some((seen, true)),
        (Some(head), Some(seen)) => {
            Some(if seen.projected(now) > head.projected(now) { (seen, true) } else { (head, false) })
        }
    }
}

/// The floor of a head-bearing answer to an attempt sent at `sent`: a known head,
/// projected to `sent` by the block time less a margin for the projection's error (an eighth
/// of the blocks projected: a slot missed now and then makes the chain slower than its
/// block time), less its tolerance (at least [`DEFAULT_TOLERANCE`](crate::DEFAULT_TOLERANCE)
/// blocks: providers a block or two apart are both current). A provider that stalled is
/// overruled within a few blocks, an honest one a block or two behind never.
fn floor(best: &Head, sent: Instant) -> u64 {
    let tolerance = best.blocks_of_tolerance().max(crate::health::source::DEFAULT_TOLERANCE);
    let made = best.projected(sent).saturating_sub(best.number());
    best.number().saturating_add(made - made / 8).saturating_sub(tolerance)
}

/// Whether `req` is one JSON-RPC `eth_blockNumber` call (its body bytes name that method; a
/// batch or a streaming body is not): the one head-bearing request whose answer is judged.
pub(crate) fn asks_block_number(req: &reqwest::Request) -> bool {
    let Some(body) = req.body().and_then(reqwest::Body::as_bytes) else { return false };
    is_block_number_call(body)
}

/// The body is a single JSON-RPC object whose `"method"` is `"eth_blockNumber"`.
fn is_block_number_call(body: &[u8]) -> bool {
    const KEY: &[u8] = b"\"method\"";
    const METHOD: &[u8] = b"\"eth_blockNumber\"";
    let start = body.iter().position(|b| !b.is_ascii_whitespace());
    if start.is_none_or(|i| body[i] != b'{') {
        return false;
    }
    let Some(at) = body.windows(KEY.len()).position(|w| w == KEY) else { return false };
    let rest = &body[at + KEY.len()..];
    let rest = trim_start(rest);
    let Some(rest) = rest.strip_prefix(b":") else { return false };
    trim_start(rest).starts_with(METHOD)
}

fn trim_start(bytes: &[u8]) -> &[u8] {
    let skip = bytes.iter().take_while(|b| b.is_ascii_whitespace()).count();
    &bytes[skip..]
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::request::endpoint::EndpointId;

    /// A source that knows one head: block 1000 at `seen`, a block every 50 ms.
    struct Known {
        seen: Instant,
    }

    impl HealthSource for Known {
        fn eligible(&self, _: &EndpointId) -> bool {
            true
        }
        fn head(&self) -> Option<Head> {
            Some(Head::new(1000, self.seen).block_time(Duration::from_millis(50)))
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_is_judged_against_the_head_projected_to_when_its_attempt_was_sent() {
        let seen = Instant::now();
        let paired = Paired::new(Arc::new(Known { seen }));
        tokio::time::advance(Duration::from_secs(1)).await;
        // Sent 1 s (20 blocks) after the known head: the floor is 1000 + 20 − 20/8 − 3.
        let sent = Instant::now();
        assert_eq!(
            paired.judge_head(1014, Some(sent)),
            Some(Unfit::BelowFloor { head: Some(1014), floor: 1015 })
        );
        // Four blocks behind the head projected to its sending (the caller's tolerance is 3).
        tokio::time::advance(Duration::from_millis(500)).await;
        assert_eq!(
            paired.judge_head(1015, Some(sent)),
            None,
            "judged when it arrives, 10 blocks later, against the head when it was sent"
        );
        assert!(paired.judge_head(1015, None).is_some(), "a head that old now is behind");
    }

    #[tokio::test(start_paused = true)]
    async fn a_head_seen_in_an_answer_a_moment_ago_floors_a_provider_the_older_probe_lets_through() {
        let seen = Instant::now();
        let paired = Paired::new(Arc::new(Known { seen }));
        // 2 s after the probe (40 blocks): its floor is 1000 + 40 - 5 - 3 = 1032.
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(paired.judge_head(1040, None), None, "an answer at the head is seen");
        tokio::time::advance(Duration::from_millis(10)).await;
        assert_eq!(
            paired.judge_head(1035, None),
            Some(Unfit::BelowFloor { head: Some(1035), floor: 1037 }),
            "five behind the head an answer showed 10 ms ago, although above the probe's floor"
        );
        assert_eq!(paired.judge_head(1037, None), None, "three behind is within the tolerance");
    }

    #[tokio::test(start_paused = true)]
    async fn an_honest_answer_a_tolerance_above_a_lagging_head_seen_a_moment_ago_is_plausible() {
        let seen = Instant::now();
        let paired = Paired::new(Arc::new(Known { seen }));
        // 2 s after the probe (projected to 1040) the chain ran faster than learnt and is at
        // 1050; a lagging provider's 1045 is the head seen, newer than the projection.
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(paired.judge_head(1045, None), None);
        assert_eq!(paired.judge_head(1050, None), None, "the chain's own head, five above the seen one");
        // Nothing bounds a head seen a moment ago by more than twice the tolerance, though.
        assert!(matches!(paired.judge_head(1060, None), Some(Unfit::Implausible { .. })));
    }

    #[test]
    fn only_a_single_block_number_call_is_head_bearing() {
        for yes in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}"#[..],
            br#" { "id": 7, "method" : "eth_blockNumber" }"#,
        ] {
            assert!(is_block_number_call(yes), "{}", String::from_utf8_lossy(yes));
        }
        for no in [
            &br#"[{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}]"#[..],
            br#"{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":[]}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumberX"}"#,
            br#"{"method""#,
            b"",
        ] {
            assert!(!is_block_number_call(no), "{}", String::from_utf8_lossy(no));
        }
    }
}

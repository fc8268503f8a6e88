//! The seeded part of a soak: a small PRNG, the request mix and the fault schedule.
//!
//! Everything random in a soak comes from one seed. Each request's shape is drawn from its own
//! generator, derived from the seed and the request's index, so the mix does not depend on the
//! order in which concurrent workers pick requests up. The fault schedule has a generator of
//! its own. What concurrency and the clock do with that schedule is not reproducible; the
//! schedule itself is.

use std::fmt;
use std::time::Duration;

use failnext::Permission;
use failnext_examples::oracle::PermissionQuery;
use failnext_examples::sim::Behaviour;

/// SplitMix64: tiny, fast, and good enough to drive a test schedule.
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// An independent generator for stream `stream` of `seed`.
    pub(crate) fn derive(seed: u64, stream: u64) -> Rng {
        let mut mixer = Rng::new(seed ^ stream.wrapping_mul(0xA076_1D64_78BD_642F));
        Rng::new(mixer.next_u64())
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`0` when `n` is 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform index in `0..n`.
    pub(crate) fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// True with probability `per_mille / 1000`.
    pub(crate) fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }

    /// Uniform duration in `lo..=hi` at millisecond resolution.
    pub(crate) fn millis(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(lo + self.below(hi.saturating_sub(lo) + 1))
    }

    /// Picks an index with probability proportional to its weight.
    pub(crate) fn weighted(&mut self, weights: &[u64]) -> usize {
        let total: u64 = weights.iter().sum();
        let mut roll = self.below(total);
        for (i, w) in weights.iter().enumerate() {
            if roll < *w {
                return i;
            }
            roll -= w;
        }
        weights.len().saturating_sub(1)
    }
}

/// What a soak request is, which decides its method, body and failover permission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `eth_call` with a bytes body and `allow_failover()`.
    Read,
    /// `eth_sendRawTransaction` with `deny_failover()`.
    WriteDenied,
    /// `eth_sendRawTransaction` with no permission at all: a POST, so the method rule denies.
    WriteDefault,
    /// `eth_getBalance` with a streaming body (`Body::wrap_stream`) and `allow_failover()`.
    Stream,
}

impl Kind {
    pub(crate) const ALL: [Kind; 4] = [Kind::Read, Kind::WriteDenied, Kind::WriteDefault, Kind::Stream];

    /// The request-scoped permission it is sent with.
    pub(crate) fn permission(self) -> Option<Permission> {
        match self {
            Kind::Read | Kind::Stream => Some(Permission::Allow),
            Kind::WriteDenied => Some(Permission::Deny),
            Kind::WriteDefault => None,
        }
    }

    /// What it brings to the permission rule: every soak request is a POST, and the soak
    /// configures no permission policy.
    pub(crate) fn permission_query(self) -> PermissionQuery<'static> {
        PermissionQuery { explicit: self.permission(), policy: None, method: "POST" }
    }

    /// Whether failnext may fail this request over, by the rules oracle.
    pub(crate) fn allowed(self) -> bool {
        self.permission_query().settle().may_fail_over
    }

    /// Whether its body can be replayed (a streaming body cannot).
    pub(crate) fn replayable(self) -> bool {
        self != Kind::Stream
    }

    pub(crate) fn is_write(self) -> bool {
        matches!(self, Kind::WriteDenied | Kind::WriteDefault)
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            Kind::Read => "read (bytes, allow)",
            Kind::WriteDenied => "write (deny_failover)",
            Kind::WriteDefault => "write (POST, no permission)",
            Kind::Stream => "read (streaming body, allow)",
        }
    }
}

/// How the soak cancels a request, if it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cancel {
    /// Let it finish.
    Never,
    /// Drop the request's future (sending and reading the body) after this long.
    After(Duration),
}

/// One request of the soak, fully decided before it is sent.
#[derive(Clone, Debug)]
pub(crate) struct RequestSpec {
    /// Unique within the run (warm-up and main phases use disjoint ranges).
    pub(crate) id: u64,
    pub(crate) kind: Kind,
    /// Configured endpoints (by index) the request excludes.
    pub(crate) excluded: Vec<usize>,
    /// The endpoint (by index) the request prefers.
    pub(crate) preferred: Option<usize>,
    /// Name an endpoint that is not configured (excluded or preferred), which must fail the
    /// request before anything is asked or sent.
    pub(crate) unknown: Option<Unknown>,
    pub(crate) cancel: Cancel,
    /// Split of a streaming body into chunks, and whether to pause between them.
    pub(crate) chunks: usize,
    pub(crate) pause_between_chunks: bool,
    /// The worker's pause before sending it, as a bot between two calls.
    pub(crate) think: Duration,
}

/// The id a request names when it names an unconfigured endpoint.
pub(crate) const UNKNOWN_ID: &str = "not-configured";

/// Where a request names an unconfigured endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unknown {
    Excluded,
    Preferred,
}

impl RequestSpec {
    /// The ids it excludes, among the configured `ids`: its exclusions, then the unknown id
    /// when it excludes one.
    pub(crate) fn excluded_ids<'a>(&self, ids: &'a [String]) -> Vec<&'a str> {
        let configured = self.excluded.iter().map(|i| ids[*i].as_str());
        let unknown = (self.unknown == Some(Unknown::Excluded)).then_some(UNKNOWN_ID);
        configured.chain(unknown).collect()
    }

    /// The id it prefers, among the configured `ids` (the unknown one replaces its preference).
    pub(crate) fn preferred_id<'a>(&self, ids: &'a [String]) -> Option<&'a str> {
        match self.unknown {
            Some(Unknown::Preferred) => Some(UNKNOWN_ID),
            _ => self.preferred.map(|p| ids[p].as_str()),
        }
    }

    /// Draws request `id` of a run with `seed` over `endpoints` endpoints.
    pub(crate) fn draw(
        seed: u64,
        id: u64,
        endpoints: usize,
        cancel_window: Duration,
        think_ms: u64,
    ) -> RequestSpec {
        let mut rng = Rng::derive(seed, id.wrapping_add(1 << 40));
        let kind = Kind::ALL[rng.weighted(&[55, 12, 8, 25])];
        let mut excluded = Vec::new();
        if rng.chance(250) {
            for _ in 0..1 + rng.below(2) {
                let i = rng.index(endpoints);
                if !excluded.contains(&i) {
                    excluded.push(i);
                }
            }
        }
        // A third of the requests prefer an endpoint, sometimes one they also exclude.
        let preferred = rng.chance(330).then(|| rng.index(endpoints));
        let unknown = match rng.below(1000) {
            0..5 => Some(Unknown::Excluded),
            5..10 => Some(Unknown::Preferred),
            _ => None,
        };
        let cancel = if rng.chance(120) {
            // One cancellation in eight is immediate: after the first poll.
            if rng.chance(125) {
                Cancel::After(Duration::ZERO)
            } else {
                let window = u64::try_from(cancel_window.as_millis()).unwrap_or(u64::MAX);
                Cancel::After(rng.millis(0, window))
            }
        } else {
            Cancel::Never
        };
        RequestSpec {
            id,
            kind,
            excluded,
            preferred,
            unknown,
            cancel,
            chunks: 1 + rng.index(4),
            pause_between_chunks: rng.chance(300),
            // Three requests in ten follow the previous one at once: bursts.
            think: if rng.chance(300) { Duration::ZERO } else { rng.millis(0, think_ms) },
        }
    }
}

/// The faults the schedule switches providers to (and back to healthy), and the measure's
/// half-stale provider (not in the schedule: [`ALL`](FaultKind::ALL) leaves it out).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum FaultKind {
    Healthy,
    Down,
    Status5xx,
    RateLimited,
    Hang,
    Lagging,
    Stalled,
    WrongChain,
    Malformed,
    ResetMidBody,
    JsonRpcError,
    Slow,
    Oversized,
    Truncated,
    /// Lagging every other request (`Behaviour::HalfStale`): the measure's half-stale scenario.
    HalfStale,
}

impl FaultKind {
    pub(crate) const ALL: [FaultKind; 14] = [
        FaultKind::Healthy,
        FaultKind::Down,
        FaultKind::Status5xx,
        FaultKind::RateLimited,
        FaultKind::Hang,
        FaultKind::Lagging,
        FaultKind::Stalled,
        FaultKind::WrongChain,
        FaultKind::Malformed,
        FaultKind::ResetMidBody,
        FaultKind::JsonRpcError,
        FaultKind::Slow,
        FaultKind::Oversized,
        FaultKind::Truncated,
    ];

    /// Relative frequency in the schedule (of [`ALL`](FaultKind::ALL)); healthy is the most
    /// common state.
    const WEIGHTS: [u64; 14] = [150, 6, 10, 6, 5, 6, 3, 4, 5, 6, 4, 6, 4, 4];
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FaultKind::Healthy => "healthy (10..120 ms latency)",
            FaultKind::Down => "down (refused)",
            FaultKind::Status5xx => "http 502/503/504",
            FaultKind::RateLimited => "http 429 rate limited",
            FaultKind::Hang => "hang (no answer)",
            FaultKind::Lagging => "lagging 1..6 blocks",
            FaultKind::Stalled => "stalled head",
            FaultKind::WrongChain => "wrong chain id",
            FaultKind::Malformed => "malformed body",
            FaultKind::ResetMidBody => "reset mid-body",
            FaultKind::JsonRpcError => "json-rpc error",
            FaultKind::Slow => "slow (150 ms..1.5x timeout)",
            FaultKind::Oversized => "oversized body (8 KiB)",
            FaultKind::Truncated => "truncated body (short of its length)",
            FaultKind::HalfStale => "half-stale (lagging every other request)",
        })
    }
}

/// The next fault switch: which provider, what kind, the concrete behaviour, and how long to
/// wait before the switch after it.
#[derive(Debug)]
pub(crate) struct FaultStep {
    pub(crate) provider: usize,
    pub(crate) kind: FaultKind,
    pub(crate) behaviour: Behaviour,
    pub(crate) wait: Duration,
}

/// Draws fault switches from the schedule's own generator.
#[derive(Debug)]
pub(crate) struct FaultSchedule {
    rng: Rng,
    providers: usize,
    attempt_timeout: Duration,
    min_wait_ms: u64,
    max_wait_ms: u64,
}

impl FaultSchedule {
    pub(crate) fn new(seed: u64, providers: usize, attempt_timeout: Duration, wait_ms: (u64, u64)) -> Self {
        FaultSchedule {
            rng: Rng::derive(seed, 0xFA17),
            providers,
            attempt_timeout,
            min_wait_ms: wait_ms.0,
            max_wait_ms: wait_ms.1,
        }
    }

    pub(crate) fn next_step(&mut self) -> FaultStep {
        let rng = &mut self.rng;
        let provider = rng.index(self.providers);
        let kind = FaultKind::ALL[rng.weighted(&FaultKind::WEIGHTS)];
        let timeout_ms = u64::try_from(self.attempt_timeout.as_millis()).unwrap_or(u64::MAX);
        let behaviour = match kind {
            // A real provider answers in tens of milliseconds; one time in ten, at once.
            FaultKind::Healthy if rng.chance(100) => Behaviour::Healthy,
            FaultKind::Healthy => Behaviour::Slow(rng.millis(10, 120)),
            FaultKind::Down => Behaviour::Down,
            FaultKind::Status5xx => Behaviour::Status([502, 503, 504][rng.index(3)]),
            FaultKind::RateLimited => Behaviour::RateLimited { retry_after_secs: 1 + rng.below(30) },
            FaultKind::Hang => Behaviour::Hang,
            FaultKind::Lagging => Behaviour::Lagging(1 + rng.below(6)),
            FaultKind::Stalled => Behaviour::Stalled,
            FaultKind::WrongChain => Behaviour::WrongChain(1 + rng.below(10)),
            FaultKind::Malformed => Behaviour::Malformed,
            FaultKind::ResetMidBody => Behaviour::ResetMidBody,
            FaultKind::JsonRpcError => json_rpc_error(rng),
            FaultKind::Slow => Behaviour::Slow(rng.millis(150, timeout_ms.saturating_mul(3) / 2)),
            FaultKind::Oversized => Behaviour::Oversized,
            FaultKind::Truncated => Behaviour::Truncated,
            // Not in `ALL`: never drawn.
            FaultKind::HalfStale => Behaviour::HalfStale(20),
        };
        let wait = rng.millis(self.min_wait_ms, self.max_wait_ms);
        FaultStep { provider, kind, behaviour, wait }
    }
}

/// An HTTP 200 carrying a JSON-RPC error: a missing block, a rate limit or an internal error.
pub(crate) fn json_rpc_error(rng: &mut Rng) -> Behaviour {
    let (code, message) =
        [(-32000, "header not found"), (-32005, "limit exceeded"), (-32603, "internal error")][rng.index(3)];
    Behaviour::JsonRpcError { code, message: message.to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_schedule() {
        let a: Vec<_> = (0..50)
            .map(|i| format!("{:?}", RequestSpec::draw(7, i, 4, Duration::from_millis(300), 100)))
            .collect();
        let b: Vec<_> = (0..50)
            .map(|i| format!("{:?}", RequestSpec::draw(7, i, 4, Duration::from_millis(300), 100)))
            .collect();
        assert_eq!(a, b);
        let mut x = FaultSchedule::new(7, 4, Duration::from_millis(200), (5, 40));
        let mut y = FaultSchedule::new(7, 4, Duration::from_millis(200), (5, 40));
        for _ in 0..50 {
            assert_eq!(format!("{:?}", x.next_step()), format!("{:?}", y.next_step()));
        }
    }

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut rng = Rng::new(1);
        let mut seen = [false; 7];
        for _ in 0..10_000 {
            let v = rng.below(7);
            assert!(v < 7);
            seen[v as usize] = true;
        }
        assert!(seen.iter().all(|s| *s));
        assert_eq!(rng.below(0), 0);
    }
}

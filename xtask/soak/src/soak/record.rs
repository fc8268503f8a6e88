//! Per-request recording: what failnext asked, sent and reported for one request.
//!
//! failnext calls the eligibility hook, the rest of the middleware chain and the event hook
//! synchronously on the task that runs the request. The soak runs every request inside
//! `LOG.scope(...)`, so all three find the request's own log through a task-local, with no
//! request id on the wire and no global map. Dropping a scoped future drops it with the
//! task-local still set, so the `Cancelled` result failnext emits on drop is recorded too.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use failnext::{AttemptOutcome, Eligibility, EndpointId, Event, ResultOutcome};
use failnext_blocklag::Monitor;
use failnext_examples::oracle::Attempted;
use http::Extensions;
use reqwest::{Request, Response};
use reqwest_middleware::{Middleware, Next};

tokio::task_local! {
    static LOG: Arc<RequestLog>;
}

/// Runs `fut` with `log` as the request log of everything failnext does inside it.
pub(crate) fn scope<F: Future>(log: Arc<RequestLog>, fut: F) -> impl Future<Output = F::Output> {
    LOG.scope(log, fut)
}

/// The endpoints of a run: ids and ports, by configured index.
#[derive(Clone, Debug)]
pub(crate) struct Endpoints {
    pub(crate) ids: Vec<String>,
    pub(crate) ports: Vec<u16>,
}

impl Endpoints {
    pub(crate) fn by_id(&self, id: &str) -> Option<usize> {
        self.ids.iter().position(|i| i == id)
    }

    pub(crate) fn by_port(&self, port: Option<u16>) -> Option<usize> {
        port.and_then(|p| self.ports.iter().position(|q| *q == p))
    }

    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }
}

/// How an attempt ended, reduced to what the checks and tallies need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AttemptEnd {
    Status(u16),
    Error(ErrorKind),
}

impl AttemptEnd {
    /// The outcome as the rules oracle sees it.
    pub(crate) fn attempted(self) -> Attempted {
        match self {
            AttemptEnd::Status(s) => Attempted::Status(s),
            AttemptEnd::Error(_) => Attempted::Error,
        }
    }
}

/// The kind of a transport error, for the tallies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum ErrorKind {
    Timeout,
    Connect,
    Body,
    Decode,
    Request,
    Other,
}

impl ErrorKind {
    pub(crate) fn of(err: &reqwest_middleware::Error) -> ErrorKind {
        match err {
            e if e.is_timeout() => ErrorKind::Timeout,
            e if e.is_connect() => ErrorKind::Connect,
            e if e.is_body() => ErrorKind::Body,
            e if e.is_decode() => ErrorKind::Decode,
            e if e.is_request() => ErrorKind::Request,
            _ => ErrorKind::Other,
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            ErrorKind::Timeout => "timeout",
            ErrorKind::Connect => "connect",
            ErrorKind::Body => "body",
            ErrorKind::Decode => "decode",
            ErrorKind::Request => "request",
            ErrorKind::Other => "other",
        }
    }
}

/// How failnext said the request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ResultEnd {
    Status(u16),
    Error,
    Cancelled,
}

/// One thing that happened inside failnext for a request, in the order it happened. Endpoint
/// indices are `None` when the id or port is not one of the run's endpoints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Entry {
    /// The eligibility hook was asked about an endpoint and answered.
    Asked {
        endpoint: Option<usize>,
        answer: bool,
    },
    /// The rest of the middleware chain was handed an attempt for this endpoint.
    Dispatched {
        endpoint: Option<usize>,
        streaming: bool,
    },
    Attempt {
        endpoint: Option<usize>,
        number: u32,
        end: AttemptEnd,
        elapsed: Duration,
    },
    CooldownSkip {
        endpoint: Option<usize>,
    },
    NotReplayable {
        endpoint: Option<usize>,
    },
    Result {
        endpoint: Option<usize>,
        end: ResultEnd,
    },
    /// An event kind this soak does not know (`Event` is non-exhaustive); always a finding.
    Unknown,
}

/// Everything recorded for one request.
#[derive(Debug, Default)]
pub(crate) struct RequestLog {
    entries: Mutex<Vec<Entry>>,
}

impl RequestLog {
    pub(crate) fn push(&self, entry: Entry) {
        self.lock().push(entry);
    }

    pub(crate) fn take(&self) -> Vec<Entry> {
        std::mem::take(&mut *self.lock())
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Entry>> {
        // Nothing panics under this lock; a poisoned log is still a log.
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Counters shared by the hooks, for what they cannot attribute to a request.
#[derive(Debug, Default)]
pub(crate) struct HookStats {
    /// Events, eligibility questions or dispatches seen outside any soak request.
    pub(crate) stray: AtomicU64,
    /// Longest `Monitor::eligible` call made by failnext's eligibility hook, in nanoseconds.
    pub(crate) eligible_max_ns: AtomicU64,
    pub(crate) eligible_calls: AtomicU64,
}

impl HookStats {
    fn note(&self, entry: Entry) {
        if LOG.try_with(|log| log.push(entry)).is_err() {
            self.stray.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The event hook: records every event in the log of the request it belongs to.
pub(crate) fn on_event(endpoints: &Endpoints, stats: &HookStats, event: &Event<'_>) {
    let index = |id: &EndpointId| endpoints.by_id(id.as_str());
    let entry = match *event {
        Event::Attempt { endpoint, attempt, outcome, elapsed } => Entry::Attempt {
            endpoint: index(endpoint),
            number: attempt,
            elapsed,
            end: match outcome {
                AttemptOutcome::Status(s) => AttemptEnd::Status(s.as_u16()),
                AttemptOutcome::Error(e) => AttemptEnd::Error(ErrorKind::of(e)),
            },
        },
        Event::CooldownSkip { endpoint } => Entry::CooldownSkip { endpoint: index(endpoint) },
        Event::NotReplayable { endpoint } => Entry::NotReplayable { endpoint: index(endpoint) },
        Event::Result { endpoint, outcome } => Entry::Result {
            endpoint: endpoint.and_then(index),
            end: match outcome {
                ResultOutcome::Status(s) => ResultEnd::Status(s.as_u16()),
                ResultOutcome::Error(_) => ResultEnd::Error,
                ResultOutcome::Cancelled => ResultEnd::Cancelled,
            },
        },
        // How each attempt was judged, breaker transitions, and skips with their reasons (the
        // cooldown skips among them come again as `CooldownSkip`, the reference's event):
        // failnext's own tests pin them; the checked phases run the reference rule (no
        // breaker), the measure any rule.
        Event::Judged { .. } | Event::Breaker { .. } | Event::Skipped { .. } => return,
        // `Event` is non-exhaustive: a kind added later is recorded, and reported by the checks.
        _ => Entry::Unknown,
    };
    stats.note(entry);
}

/// The monitor as failnext's eligibility, recording every answer in the request's log and
/// timing every call.
pub(crate) struct RecordedEligibility {
    pub(crate) monitor: Monitor,
    pub(crate) endpoints: Endpoints,
    pub(crate) stats: Arc<HookStats>,
}

impl Eligibility for RecordedEligibility {
    fn is_eligible(&self, id: &EndpointId) -> bool {
        let started = Instant::now();
        let answer = self.monitor.eligible(id);
        let ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.stats.eligible_max_ns.fetch_max(ns, Ordering::Relaxed);
        self.stats.eligible_calls.fetch_add(1, Ordering::Relaxed);
        self.stats.note(Entry::Asked { endpoint: self.endpoints.by_id(id.as_str()), answer });
        answer
    }
}

/// A middleware added after `Failover`: it runs once per attempt and records where the
/// attempt goes, before anything is sent.
pub(crate) struct Dispatch {
    pub(crate) endpoints: Endpoints,
    pub(crate) stats: Arc<HookStats>,
}

#[async_trait::async_trait]
impl Middleware for Dispatch {
    async fn handle(
        &self,
        req: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        let streaming = req.body().is_some_and(|b| b.as_bytes().is_none());
        let endpoint = self.endpoints.by_port(req.url().port());
        self.stats.note(Entry::Dispatched { endpoint, streaming });
        next.run(req, extensions).await
    }
}

/// Nanoseconds as a `Duration`, for reports.
pub(crate) fn nanos(ns: u64) -> Duration {
    Duration::from_nanos(ns)
}

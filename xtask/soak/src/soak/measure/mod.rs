//! The measure: what each failnext configuration makes of the same flapping providers.
//!
//! After the checked phases, a soak run measures, for each configuration of [`Subject::ALL`],
//! **reads answered correctly while a good provider was eligible throughout**:
//!
//! - a *read* is a plain `eth_call` (bytes body, `allow_failover()`, no exclusion, no
//!   preference, never dropped by the soak), sent to the first provider's URL;
//! - it is *answered correctly* when `send()` returned HTTP 2xx whose whole body was read and
//!   is a JSON-RPC reply with a `result` (no `error`) and the request's `id`, served by a
//!   provider that was on the right chain during the whole request (by the ground truth:
//!   it was never switched to the wrong chain while the request ran);
//! - *a good provider was eligible throughout* when some provider `p` was both
//!   - healthy during the whole request, from just before `send()` to the end of the body
//!     read, by the ground truth of the fault windows (its switch to healthy had returned
//!     before the request started and its next switch began after it ended), and
//!   - eligible for the whole request: the monitor answered `eligible(p)` when failnext asked,
//!     which failnext does once per endpoint at the start of the request and keeps for the
//!     whole request (`Monitor::eligible`; the soak's check `AskedOnce`), so a later
//!     snapshot changes nothing failnext may do for it.
//!
//! The figure is `correct / counted` over the reads of the second kind, as a percentage with
//! its counts. Reads where no good provider was eligible throughout are reported apart: no
//! configuration is expected to answer them.
//!
//! Also per configuration: **requests that reached a provider while it was refused**, the
//! attempts (one per dispatch, recorded by a middleware after `Failover` before anything is
//! sent) whose endpoint was certainly down at that instant: its switch to `Down` had returned
//! (listener closed) and its next switch had not begun.
//!
//! The configurations run **interleaved**, at the same time: each has its own `Failover` and
//! its own `reqwest` client (so no pool, health or cooldown state is shared), over the same
//! providers, the same monitor and the same fault windows. The load is an open loop: one
//! seeded stream of arrival instants (`rate` reads per second on average) and, at each
//! instant, one read per configuration, whatever earlier reads are doing. So every
//! configuration gets the same reads at the same instants; a closed loop (workers waiting for
//! their previous read) would send more reads where a configuration fails fast
//! (`NoUsableEndpoint` is immediate) and so weigh its bad spells more. Interleaving gives every configuration the very same faults and
//! snapshots at the same instants, so the figures differ only by the configuration (with
//! sequential phases, the same seed gives the same schedule of windows, but not the same
//! timing against the requests and the monitor's checks), and a run lasts one measure, not
//! one per configuration. The price: the configurations share the machine and the providers'
//! load, identically for each.
//!
//! The fault windows (`timeline::Windows`): each provider, independently and seeded,
//! flaps between a healthy spell of `1..=4` fault lengths and a fault of `1/2..=3/2` fault
//! lengths (`--fault-ms`), drawn from the faults issue 10 lists: refused, 502/503/504, 429
//! with `Retry-After` (about the window, in whole seconds), HTTP 200 with JSON-RPC `-32005`
//! or `-32603`, a malformed body, a truncated body, a body reset mid-way, a hang, lag
//! (3..6 blocks), a stalled head, the wrong chain. A provider goes to the wrong chain across a
//! restart (down first, long enough for the monitor to see it: see `timeline::Windows::new`),
//! as providers do; the monitor checks the chain at every check.

pub mod subject;
mod timeline;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use failnext::{Eligibility, EndpointId, Failover, ResponseExt};
use failnext_blocklag::Monitor;
use failnext_examples::sim::Provider;
use http::Extensions;
use http::header::CONTENT_TYPE;
use reqwest::{Request, Response};
use reqwest_middleware::{ClientWithMiddleware, Middleware, Next};
use serde_json::Value;
use tokio::sync::watch;

pub use subject::Subject;

use crate::soak::SetupError;
use crate::soak::record::Endpoints;
use crate::soak::schedule::{FaultKind, Rng};
use timeline::{Timeline, Windows};

tokio::task_local! {
    static READ: Arc<ReadLog>;
}

/// Settings of the measure.
#[derive(Clone, Debug)]
pub struct MeasureSettings {
    /// How long the configurations are measured (zero: no measure).
    pub duration: Duration,
    /// The mean length of a fault window.
    pub fault: Duration,
    /// Reads sent per second to each configuration (open loop, seeded arrival times).
    pub rate: u32,
    /// The configurations, side by side.
    pub subjects: Vec<Subject>,
}

/// The eligibility answers failnext got, by endpoint index.
type Asked = Vec<(Option<usize>, bool)>;
/// Where and when failnext dispatched each attempt.
type Dispatches = Vec<(Option<usize>, Instant)>;

/// What failnext did for one read: the eligibility answers it got and where it dispatched.
#[derive(Debug, Default)]
struct ReadLog {
    inner: Mutex<(Asked, Dispatches)>,
}

impl ReadLog {
    fn with(f: impl FnOnce(&mut (Asked, Dispatches))) {
        let _ = READ.try_with(|log| f(&mut log.inner.lock().unwrap_or_else(|p| p.into_inner())));
    }
}

/// The monitor as eligibility, recording each answer in the read's log.
struct Recorded {
    monitor: Monitor,
    endpoints: Endpoints,
}

impl Eligibility for Recorded {
    fn is_eligible(&self, id: &EndpointId) -> bool {
        let answer = self.monitor.eligible(id);
        let i = self.endpoints.by_id(id.as_str());
        ReadLog::with(|l| l.0.push((i, answer)));
        answer
    }
}

/// After `Failover`: records each attempt's endpoint and instant, before it is sent.
struct Dispatched {
    endpoints: Endpoints,
}

#[async_trait::async_trait]
impl Middleware for Dispatched {
    async fn handle(
        &self,
        req: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        let i = self.endpoints.by_port(req.url().port());
        ReadLog::with(|l| l.1.push((i, Instant::now())));
        next.run(req, extensions).await
    }
}

/// How a read ended, as the caller saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Answer {
    /// 2xx, a JSON-RPC `result` with the right id; served by this endpoint.
    Result(Option<usize>),
    /// 2xx with a JSON-RPC error of this code.
    RpcError(i64),
    /// 2xx whose body is not a JSON-RPC reply with a result (malformed, wrong id, ...).
    NotJsonRpc,
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
struct Sample {
    start: Instant,
    end: Instant,
    answer: Answer,
    asked: Asked,
    dispatched: Dispatches,
}

/// What the measure found for one configuration.
#[derive(Debug, Default, Clone)]
pub struct Figures {
    /// Reads sent and finished.
    pub reads: u64,
    /// Reads answered correctly, of all reads.
    pub correct_all: u64,
    /// Reads during which a good provider was eligible throughout.
    pub counted: u64,
    /// Of those, answered correctly.
    pub correct: u64,
    /// Attempts that reached a provider while it was refused.
    pub refused_hits: u64,
    /// Attempts in all.
    pub attempts: u64,
    /// How the counted reads that were not answered correctly ended.
    misses: BTreeMap<String, u64>,
}

impl Figures {
    /// The figure: correct / counted, in percent (100 when nothing was counted).
    pub fn percent(&self) -> f64 {
        if self.counted == 0 { 100.0 } else { 100.0 * self.correct as f64 / self.counted as f64 }
    }
}

/// What the measure of a run found.
#[derive(Debug, Default, Clone)]
pub struct MeasureReport {
    pub(crate) settings: Option<MeasureSettings>,
    pub(crate) elapsed: Duration,
    pub(crate) figures: Vec<(Subject, Figures)>,
    /// Per provider, the share of the measure it spent in a fault.
    pub(crate) faulty: Vec<f64>,
    pub(crate) windows: BTreeMap<FaultKind, u64>,
}

impl MeasureReport {
    /// The figures of `subject`, if it was measured.
    pub fn figures(&self, subject: Subject) -> Option<&Figures> {
        self.figures.iter().find(|(s, _)| *s == subject).map(|(_, f)| f)
    }
}

/// The shared pieces every configuration's `Failover` is built over.
pub(crate) struct Shared<'a> {
    pub(crate) providers: &'a [Provider],
    pub(crate) monitor: &'a Monitor,
    pub(crate) endpoints: &'a Endpoints,
    pub(crate) seed: u64,
    pub(crate) attempt_timeout: Duration,
    pub(crate) check_interval: Duration,
    pub(crate) probe_timeout: Duration,
}

/// Runs the measure: every configuration at once over the same flapping providers.
pub(crate) async fn measure(
    shared: &Shared<'_>,
    settings: &MeasureSettings,
) -> Result<MeasureReport, SetupError> {
    if settings.duration.is_zero() || settings.subjects.is_empty() {
        return Ok(MeasureReport::default());
    }
    let list: Vec<failnext::Endpoint> = shared.providers.iter().map(Provider::endpoint).collect();
    let url = shared.providers.first().map(|p| p.url().to_owned()).unwrap_or_default();
    let mut clients = Vec::new();
    for subject in &settings.subjects {
        let builder = Failover::builder(list.clone())
            .eligible(Recorded { monitor: shared.monitor.clone(), endpoints: shared.endpoints.clone() })
            .attempt_timeout(shared.attempt_timeout);
        let failover = subject
            .configure(builder)
            .build()
            .map_err(|e| SetupError(format!("failover ({subject}): {e}")))?;
        let inner = reqwest::Client::builder()
            .pool_idle_timeout(Duration::from_millis(500))
            .build()
            .map_err(|e| SetupError(format!("reqwest client: {e}")))?;
        let client = reqwest_middleware::ClientBuilder::new(inner)
            .with(failover)
            .with(Dispatched { endpoints: shared.endpoints.clone() })
            .build();
        clients.push((*subject, client));
    }

    // Healthy everywhere, and a check, before the first read.
    let timeline = Arc::new(Mutex::new(Timeline { providers: vec![Vec::new(); shared.providers.len()] }));
    let (stop, stopped) = watch::channel(false);
    let mut background = tokio::task::JoinSet::new();
    for (p, provider) in shared.providers.iter().enumerate() {
        // Down long enough for a whole check to start and publish after the restart began: the
        // monitor's pause between checks, and a check that may wait out the probe timeout,
        // twice (the check in progress, then the next), with room for scheduling.
        let restart = shared.check_interval + 2 * shared.probe_timeout + Duration::from_millis(100);
        let windows = Windows::new(shared.seed, p, settings.fault, restart);
        background.spawn(timeline::flap(provider.clone(), p, windows, timeline.clone(), stopped.clone()));
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    let _ = shared.monitor.check().await;
    {
        let (monitor, interval, mut stopped) =
            (shared.monitor.clone(), shared.check_interval, stopped.clone());
        background.spawn(async move {
            while !crate::soak::watch::stopped_or(&mut stopped, interval).await {
                let _ = monitor.check().await;
            }
        });
    }

    // Open loop: one seeded stream of arrival instants, and at each one a read per
    // configuration, whatever the earlier reads are doing. Every configuration gets the same
    // reads at the same instants (a closed loop would send more reads where a configuration
    // fails fast, and weigh its bad spells more).
    let started = Instant::now();
    let deadline = started + settings.duration;
    let mean_gap_us = 1_000_000 / u64::from(settings.rate.max(1));
    let mut rng = Rng::derive(shared.seed, 0x4EAD);
    let mut reads = tokio::task::JoinSet::new();
    let mut samples: BTreeMap<Subject, Vec<Sample>> = BTreeMap::new();
    let mut collect = |joined: Result<(Subject, Sample), tokio::task::JoinError>| {
        if let Ok((subject, sample)) = joined {
            samples.entry(subject).or_default().push(sample);
        }
    };
    let mut at = tokio::time::Instant::now();
    let mut id = 0u64;
    while Instant::now() < deadline {
        at += Duration::from_micros(rng.below(2 * mean_gap_us + 1));
        tokio::time::sleep_until(at).await;
        id += 1;
        for (subject, client) in &clients {
            let (subject, client, url, endpoints) =
                (*subject, client.clone(), url.clone(), shared.endpoints.clone());
            reads.spawn(async move { (subject, read(&client, &url, &endpoints, id).await) });
        }
        while let Some(joined) = reads.try_join_next() {
            collect(joined);
        }
    }
    while let Some(joined) = reads.join_next().await {
        collect(joined);
    }
    let elapsed = started.elapsed();
    let _ = stop.send(true);
    while background.join_next().await.is_some() {}
    drop(clients);
    let ended = Instant::now();
    let timeline = std::mem::take(&mut *timeline.lock().unwrap_or_else(|p| p.into_inner()));

    let mut windows = BTreeMap::new();
    for switches in &timeline.providers {
        for s in switches.iter().filter(|s| s.kind != FaultKind::Healthy) {
            *windows.entry(s.kind).or_default() += 1;
        }
    }
    let faulty = (0..shared.providers.len()).map(|p| timeline.faulty_share(p, started, ended)).collect();
    let figures = settings
        .subjects
        .iter()
        .map(|s| (*s, judge(samples.get(s).map_or(&[][..], Vec::as_slice), &timeline)))
        .collect();
    Ok(MeasureReport { settings: Some(settings.clone()), elapsed, figures, faulty, windows })
}

/// Sends one read and reduces how it ended.
async fn read(client: &ClientWithMiddleware, url: &str, endpoints: &Endpoints, id: u64) -> Sample {
    use failnext::RequestBuilderExt;
    let log = Arc::new(ReadLog::default());
    let start = Instant::now();
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"eth_call","params":[{{"to":"0x000000000000000000000000000000000000dead","data":"0x"}},"latest"]}}"#
    );
    let exchange = async {
        let sent =
            client.post(url).header(CONTENT_TYPE, "application/json").body(body).allow_failover().send();
        match sent.await {
            Err(err) => match failnext::Error::from_middleware(&err) {
                Some(e) if e.is_no_usable_endpoint() => Answer::NoUsable,
                _ => Answer::Failed,
            },
            Ok(resp) => {
                let status = resp.status();
                let served_by = resp.served_by().and_then(|e| endpoints.by_id(e.as_str()));
                if !status.is_success() {
                    return Answer::Status(status.as_u16());
                }
                match resp.bytes().await {
                    Err(_) => Answer::BodyFailed,
                    Ok(bytes) => judge_body(&bytes, id, served_by),
                }
            }
        }
    };
    let answer = READ.scope(log.clone(), exchange).await;
    let end = Instant::now();
    let (asked, dispatched) = std::mem::take(&mut *log.inner.lock().unwrap_or_else(|p| p.into_inner()));
    Sample { start, end, answer, asked, dispatched }
}

/// A 2xx body: a JSON-RPC result with the request's id, or what else it is.
fn judge_body(bytes: &[u8], id: u64, served_by: Option<usize>) -> Answer {
    let Ok(reply) = serde_json::from_slice::<Value>(bytes) else { return Answer::NotJsonRpc };
    if let Some(code) = reply.get("error").map(|e| e.get("code").and_then(Value::as_i64).unwrap_or(0)) {
        return Answer::RpcError(code);
    }
    let right_id = reply.get("id").and_then(Value::as_u64) == Some(id);
    if !right_id
        || reply.get("result").is_none()
        || reply.get("jsonrpc").and_then(Value::as_str) != Some("2.0")
    {
        return Answer::NotJsonRpc;
    }
    Answer::Result(served_by)
}

/// The figures of one configuration's reads against the ground truth.
fn judge(samples: &[Sample], timeline: &Timeline) -> Figures {
    let mut f = Figures::default();
    for s in samples {
        f.reads += 1;
        f.attempts += s.dispatched.len() as u64;
        f.refused_hits +=
            s.dispatched.iter().filter(|(p, at)| p.is_some_and(|p| timeline.refused_at(p, *at))).count()
                as u64;
        let correct = match s.answer {
            Answer::Result(Some(p)) => !timeline.wrong_chain_during(p, s.start, s.end),
            _ => false,
        };
        if correct {
            f.correct_all += 1;
        }
        let good = s.asked.iter().any(|(p, eligible)| {
            *eligible && p.is_some_and(|p| timeline.healthy_throughout(p, s.start, s.end))
        });
        if !good {
            continue;
        }
        f.counted += 1;
        if correct {
            f.correct += 1;
        } else {
            let why = match s.answer {
                Answer::Result(_) => "2xx result from the wrong chain".to_owned(),
                Answer::RpcError(code) => format!("2xx with JSON-RPC error {code}"),
                Answer::NotJsonRpc => "2xx, not a JSON-RPC result (malformed)".to_owned(),
                Answer::BodyFailed => "2xx, body failed (truncated/reset/timeout)".to_owned(),
                Answer::Status(code) => format!("http {code} returned"),
                Answer::NoUsable => "error: no usable endpoint".to_owned(),
                Answer::Failed => "error: every attempt failed".to_owned(),
            };
            *f.misses.entry(why).or_default() += 1;
        }
    }
    f
}

impl fmt::Display for MeasureReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(settings) = &self.settings else { return Ok(()) };
        writeln!(f, "\nMeasure: reads answered correctly while a good provider was eligible throughout")?;
        writeln!(
            f,
            "  fault windows ~{} ms (each provider, seeded), {:.1} s, configurations interleaved, {} reads/s each (open loop)",
            settings.fault.as_millis(),
            self.elapsed.as_secs_f64(),
            settings.rate
        )?;
        let shares: Vec<String> = self.faulty.iter().map(|s| format!("{:.0} %", s * 100.0)).collect();
        writeln!(f, "  time in a fault per provider: {}", shares.join(", "))?;
        let windows: Vec<String> = self.windows.iter().map(|(k, n)| format!("{k}: {n}")).collect();
        writeln!(f, "  fault windows: {}", windows.join(", "))?;
        writeln!(
            f,
            "\n  {:<22} {:>9} {:>19} {:>15} {:>9} {:>10}",
            "configuration", "correct", "(correct/counted)", "all reads", "attempts", "refused-hit"
        )?;
        for (subject, fig) in &self.figures {
            writeln!(
                f,
                "  {:<22} {:>8.2}% {:>19} {:>15} {:>9} {:>10}",
                subject.name(),
                fig.percent(),
                format!("({}/{})", fig.correct, fig.counted),
                format!("{}/{}", fig.correct_all, fig.reads),
                fig.attempts,
                fig.refused_hits
            )?;
        }
        writeln!(f, "  (refused-hit: requests that reached a provider while it was refused)")?;
        for (subject, fig) in &self.figures {
            writeln!(
                f,
                "  {} = {}; counted reads not answered correctly:",
                subject.name(),
                subject.describe()
            )?;
            if fig.misses.is_empty() {
                writeln!(f, "    none")?;
            }
            for (why, n) in &fig.misses {
                writeln!(f, "    {why:<46} {n:>10}")?;
            }
        }
        if self.elapsed < Duration::from_secs(60) {
            writeln!(
                f,
                "  (a short measure: the reference's 30 s cooldown has not cycled; figures are indicative)"
            )?;
        }
        Ok(())
    }
}

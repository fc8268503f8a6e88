//! Records events as owned values so tests can assert the exact sequence.

use std::sync::{Arc, Mutex};

use failnext::{AttemptOutcome, Class, Event, Evidence, ResultOutcome, Verdict};

/// One recorded event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ev {
    /// `Attempt(endpoint, number, outcome)`.
    Attempt(String, u32, Out),
    /// `Judged(endpoint, number, class, verdict, evidence)`; recorded only by
    /// [`Recorder::with_judged`].
    Judged(String, u32, Class, Verdict, Evidence),
    Skip(String),
    NotReplayable(String),
    /// `Hedge(endpoint, number, first, after)`.
    Hedge(String, u32, String, std::time::Duration),
    /// `Result(endpoint, outcome)`.
    Result(Option<String>, Res),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Out {
    Status(u16),
    /// The error's Display text.
    Error(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Res {
    Status(u16),
    Error(String),
    Cancelled,
}

impl Out {
    pub fn is_error(&self) -> bool {
        matches!(self, Out::Error(_))
    }
}

/// Collects events from an `on_event` hook.
#[derive(Clone, Default)]
pub struct Recorder {
    events: Arc<Mutex<Vec<Ev>>>,
    /// Whether `Judged` events are recorded too (sequences written before it existed leave it
    /// out).
    judged: bool,
}

impl Recorder {
    /// A recorder of every event but `Judged`.
    pub fn new() -> Recorder {
        Recorder::default()
    }

    /// A recorder of every event, `Judged` included.
    pub fn with_judged() -> Recorder {
        Recorder { judged: true, ..Recorder::default() }
    }

    /// The hook to pass to `FailoverBuilder::on_event`.
    pub fn hook(&self) -> impl Fn(&Event<'_>) + Send + Sync + 'static {
        let events = self.events.clone();
        let judged = self.judged;
        move |event: &Event<'_>| {
            let ev = match *event {
                Event::Judged { endpoint, attempt, class, verdict, evidence, .. } if judged => {
                    Ev::Judged(endpoint.to_string(), attempt, class, verdict, evidence)
                }
                Event::Attempt { endpoint, attempt, outcome, .. } => Ev::Attempt(
                    endpoint.to_string(),
                    attempt,
                    match outcome {
                        AttemptOutcome::Status(s) => Out::Status(s.as_u16()),
                        AttemptOutcome::Error(e) => Out::Error(e.to_string()),
                    },
                ),
                Event::CooldownSkip { endpoint } => Ev::Skip(endpoint.to_string()),
                Event::NotReplayable { endpoint } => Ev::NotReplayable(endpoint.to_string()),
                Event::Hedge { endpoint, attempt, first, after, .. } => {
                    Ev::Hedge(endpoint.to_string(), attempt, first.to_string(), after)
                }
                Event::Result { endpoint, outcome } => Ev::Result(
                    endpoint.map(|e| e.to_string()),
                    match outcome {
                        ResultOutcome::Status(s) => Res::Status(s.as_u16()),
                        ResultOutcome::Error(e) => Res::Error(e.to_string()),
                        ResultOutcome::Cancelled => Res::Cancelled,
                    },
                ),
                _ => return,
            };
            events.lock().unwrap().push(ev);
        }
    }

    /// Takes the events recorded so far.
    pub fn take(&self) -> Vec<Ev> {
        std::mem::take(&mut *self.events.lock().unwrap())
    }

    /// The events with attempt errors reduced to "err", for sequence comparisons.
    pub fn shapes(&self) -> Vec<Ev> {
        self.take()
            .into_iter()
            .map(|ev| match ev {
                Ev::Attempt(e, n, Out::Error(_)) => Ev::Attempt(e, n, Out::Error("err".into())),
                Ev::Result(e, Res::Error(_)) => Ev::Result(e, Res::Error("err".into())),
                other => other,
            })
            .collect()
    }
}

// Constructors that keep expected sequences short.

pub fn attempt(ep: &str, n: u32, status: u16) -> Ev {
    Ev::Attempt(ep.into(), n, Out::Status(status))
}

pub fn attempt_err(ep: &str, n: u32) -> Ev {
    Ev::Attempt(ep.into(), n, Out::Error("err".into()))
}

pub fn skip(ep: &str) -> Ev {
    Ev::Skip(ep.into())
}

/// A hedge to `ep` (attempt 2) of the first attempt, to `first`, after `ms` milliseconds.
pub fn hedge(ep: &str, first: &str, ms: u64) -> Ev {
    Ev::Hedge(ep.into(), 2, first.into(), std::time::Duration::from_millis(ms))
}

pub fn result(ep: &str, status: u16) -> Ev {
    Ev::Result(Some(ep.into()), Res::Status(status))
}

pub fn result_err() -> Ev {
    Ev::Result(None, Res::Error("err".into()))
}

/// `Judged` for a response returned as an answer (no classifier, or the classifier's
/// `Judgement::answer()`).
pub fn answered(ep: &str, n: u32) -> Ev {
    Ev::Judged(ep.into(), n, Class::Answer, Verdict::Return, Evidence::Success)
}

/// `Judged` for a 502, 503 or 504.
pub fn trigger(ep: &str, n: u32) -> Ev {
    Ev::Judged(ep.into(), n, Class::Trigger, Verdict::FailOver { cool_for: None }, Evidence::Failure)
}

/// `Judged` for an attempt that ended without an HTTP response.
pub fn transport(ep: &str, n: u32) -> Ev {
    Ev::Judged(ep.into(), n, Class::Transport, Verdict::FailOver { cool_for: None }, Evidence::Failure)
}

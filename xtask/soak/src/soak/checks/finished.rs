//! A finished request as the worker saw it end, and the limits it is judged against.

use std::time::Duration;

use crate::soak::record::{AttemptEnd, Entry, ErrorKind};
use crate::soak::schedule::RequestSpec;

/// One attempt as its event reported it: endpoint, number, how it ended.
pub(super) type AttemptSeen = (Option<usize>, u32, AttemptEnd);

/// What `send()` returned, reduced.
#[derive(Debug)]
pub(crate) enum Outcome {
    Response { status: u16, served_by: Option<usize> },
    Error(Option<TypedError>),
}

/// The failnext error a request ended with.
#[derive(Debug)]
pub(crate) enum TypedError {
    NoUsable,
    Unknown,
    Failover(Vec<Option<usize>>),
}

/// How reading the body of a returned response ended.
#[derive(Debug)]
pub(crate) enum BodyEnd {
    Read {
        duplicate_write: bool,
    },
    Error(ErrorKind),
    /// The soak dropped the request while the body was being read.
    Cancelled,
}

/// One request as the worker saw it end.
#[derive(Debug)]
pub(crate) struct Finished {
    pub(crate) spec: RequestSpec,
    pub(crate) entries: Vec<Entry>,
    /// `None` when the soak dropped the request before `send()` returned.
    pub(crate) outcome: Option<Outcome>,
    pub(crate) body: Option<BodyEnd>,
    /// The safety bound fired: the request did not end by itself.
    pub(crate) hung: bool,
    /// From the first poll to `send()` returning, when it returned.
    pub(crate) send_elapsed: Option<Duration>,
}

/// Time limits a request is judged against.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// failnext's attempt timeout.
    pub(crate) attempt_timeout: Duration,
    /// Scheduling slack allowed on top of it, on a loaded machine.
    pub(crate) slack: Duration,
}

/// A short, printable description of a request, for findings.
pub(super) fn describe(f: &Finished) -> String {
    format!(
        "request {} {:?} excl={:?} pref={:?} unknown={:?} cancel={:?} outcome={:?} log={:?}",
        f.spec.id,
        f.spec.kind,
        f.spec.excluded,
        f.spec.preferred,
        f.spec.unknown,
        f.spec.cancel,
        f.outcome,
        f.entries
    )
}

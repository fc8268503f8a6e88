//! Counts of everything the soak saw, summed over workers and phases for the report.

use std::collections::BTreeMap;
use std::time::Duration;

/// Counts of everything the soak saw, for the report.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub(crate) requests: u64,
    pub(crate) by_kind: BTreeMap<&'static str, u64>,
    pub(crate) responses: BTreeMap<u16, u64>,
    pub(crate) retained: u64,
    pub(crate) errors_no_usable: u64,
    pub(crate) errors_unknown: u64,
    pub(crate) errors_failover: u64,
    pub(crate) errors_untyped: u64,
    pub(crate) cancelled_before_start: u64,
    pub(crate) cancelled_in_flight: u64,
    pub(crate) cancelled_in_body: u64,
    pub(crate) hung: u64,
    pub(crate) body_read: u64,
    pub(crate) body_errors: BTreeMap<&'static str, u64>,
    pub(crate) attempts_status: BTreeMap<u16, u64>,
    pub(crate) attempts_error: BTreeMap<&'static str, u64>,
    pub(crate) attempts_per_request: BTreeMap<usize, u64>,
    pub(crate) cooldown_skips: u64,
    pub(crate) not_replayable: u64,
    pub(crate) asked_eligible: u64,
    pub(crate) asked_ineligible: u64,
    pub(crate) excluded_requests: u64,
    pub(crate) preferred_requests: u64,
    pub(crate) preferred_first: u64,
    /// Per request kind: dispatches and attempts that got an HTTP response.
    pub(crate) write_requests: u64,
    pub(crate) write_dispatches: u64,
    pub(crate) write_responses: u64,
    pub(crate) stream_requests: u64,
    pub(crate) stream_dispatches: u64,
    pub(crate) stream_responses: u64,
    pub(crate) read_requests: u64,
    pub(crate) read_dispatches: u64,
    pub(crate) read_responses: u64,
    pub(crate) longest_attempt: Duration,
    pub(crate) longest_send: Duration,
}

impl Tally {
    pub(crate) fn merge(&mut self, o: Tally) {
        fn add<K: Ord>(a: &mut BTreeMap<K, u64>, b: BTreeMap<K, u64>) {
            for (k, v) in b {
                *a.entry(k).or_default() += v;
            }
        }
        self.requests += o.requests;
        add(&mut self.by_kind, o.by_kind);
        add(&mut self.responses, o.responses);
        self.retained += o.retained;
        self.errors_no_usable += o.errors_no_usable;
        self.errors_unknown += o.errors_unknown;
        self.errors_failover += o.errors_failover;
        self.errors_untyped += o.errors_untyped;
        self.cancelled_before_start += o.cancelled_before_start;
        self.cancelled_in_flight += o.cancelled_in_flight;
        self.cancelled_in_body += o.cancelled_in_body;
        self.hung += o.hung;
        self.body_read += o.body_read;
        add(&mut self.body_errors, o.body_errors);
        add(&mut self.attempts_status, o.attempts_status);
        add(&mut self.attempts_error, o.attempts_error);
        add(&mut self.attempts_per_request, o.attempts_per_request);
        self.cooldown_skips += o.cooldown_skips;
        self.not_replayable += o.not_replayable;
        self.asked_eligible += o.asked_eligible;
        self.asked_ineligible += o.asked_ineligible;
        self.excluded_requests += o.excluded_requests;
        self.preferred_requests += o.preferred_requests;
        self.preferred_first += o.preferred_first;
        self.write_requests += o.write_requests;
        self.write_dispatches += o.write_dispatches;
        self.write_responses += o.write_responses;
        self.stream_requests += o.stream_requests;
        self.stream_dispatches += o.stream_dispatches;
        self.stream_responses += o.stream_responses;
        self.read_requests += o.read_requests;
        self.read_dispatches += o.read_dispatches;
        self.read_responses += o.read_responses;
        self.longest_attempt = self.longest_attempt.max(o.longest_attempt);
        self.longest_send = self.longest_send.max(o.longest_send);
    }
}

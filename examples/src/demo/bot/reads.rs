//! The reader: reads on the configured interval, failover allowed, and the invariant that
//! no read fails while a provider that was a candidate (eligible as failnext saw it when the
//! read started) stayed healthy all along.

use failnext::RequestBuilderExt;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::sync::watch;
use tokio::time::Instant;

use super::{Bot, every, next};
use crate::demo::picture::Kind;
use crate::demo::summary::READ_METHODS;
use crate::demo::trace::traced;
use crate::monitoring::answers_reads;
use crate::oracle::{Plan, Selection};
use crate::{Reply, call, causes, send};

/// The account every balance read and call is about.
const ZERO_ADDRESS: &str = "0x0000000000000000000000000000000000000000";

impl Bot {
    /// Reads on the configured interval, cycling through the read methods.
    pub(super) async fn reader(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let mut tick = every(self.config.read_interval);
        let mut n = 0usize;
        while next(&mut tick, &mut stop).await {
            self.read(n % READ_METHODS.len()).await;
            n += 1;
        }
    }

    async fn read(&self, kind: usize) {
        let method = READ_METHODS[kind % READ_METHODS.len()];
        let params = match method {
            "eth_getBalance" => json!([ZERO_ADDRESS, "latest"]),
            "eth_call" => json!([{ "to": ZERO_ADDRESS, "data": "0x" }, "latest"]),
            _ => json!([]),
        };
        let healthy_before = self.healthy();
        let started = Instant::now();
        let request = call(&self.client, &self.url, method, params).allow_failover();
        let (outcome, trace) = traced(tokio::time::timeout(self.request_bound(), send(request))).await;
        let latency = started.elapsed();
        let healthy_after = self.healthy();

        let failure = match &outcome {
            Err(_) => Some("no answer in time".to_owned()),
            Ok(Err(e)) => Some(failure_reason(e)),
            Ok(Ok(reply)) => read_failure(reply),
        };
        // A candidate of the read (eligible when it started, as failnext saw it) healthy all
        // along (by the simulator's account) should have answered.
        let candidates =
            Plan::new(self.ids.len(), &Selection::default(), |i| trace.was_eligible(&self.ids[i]));
        let witness = match (&healthy_before, &healthy_after) {
            (Some(before), Some(after)) => {
                candidates.order().iter().find(|&&i| before[i] && after[i]).map(|&i| self.ids[i].clone())
            }
            _ => None,
        };

        let mut s = self.stats();
        s.reads_by_method[kind % READ_METHODS.len()] += 1;
        s.read_latencies.push(latency);
        if let Ok(Ok(reply)) = &outcome {
            if let Some(i) = self.index(reply.served_by()) {
                s.served_reads[i] += 1;
                self.mark(i, Kind::Read);
            }
        }
        if let Some(why) = failure {
            s.reads_failed += 1;
            if let Some(id) = witness {
                s.reads_failed_with_healthy_eligible += 1;
                let at = self.stamp();
                s.violation(format!("{at} {method} failed ({why}) while {id} was healthy and eligible"));
            }
        }
    }

    /// Which simulated providers answer reads now; `None` against real providers.
    fn healthy(&self) -> Option<Vec<bool>> {
        let sim = self.sim.as_ref()?;
        Some(
            sim.providers
                .iter()
                .map(|p| answers_reads(&p.behaviour(), self.config.attempt_timeout))
                .collect(),
        )
    }
}

/// Why a reply is not a correct answer to a read, if it is not.
fn read_failure(reply: &Reply) -> Option<String> {
    if let Some(error) = reply.error() {
        return Some(format!("{}: {error}", reply.served_by()));
    }
    if !reply.status().is_success() {
        return Some(format!("{}: http {}", reply.served_by(), reply.status().as_u16()));
    }
    match reply.result() {
        Some(Value::Null) | None => Some(format!("{}: no result", reply.served_by())),
        Some(_) => None,
    }
}

/// The attempts of a failnext error, or the error with its causes.
pub(super) fn failure_reason(err: &reqwest_middleware::Error) -> String {
    match failnext::Error::from_middleware(err) {
        Some(e) if !e.attempts().is_empty() => {
            let attempts: Vec<String> = e.attempts().iter().map(attempt_reason).collect();
            attempts.join("; ")
        }
        _ => causes(err).to_string(),
    }
}

fn attempt_reason(attempt: &failnext::Attempt) -> String {
    let error = attempt.error();
    let kind = if error.is_connect() {
        "could not connect"
    } else if error.is_timeout() {
        "timed out"
    } else {
        "transport error"
    };
    format!("{} {kind}", attempt.endpoint())
}

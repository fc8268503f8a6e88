//! The writer: a write now and then, failover denied, and the invariant that no write
//! reaches more than the one provider the rules allow it.

use failnext::{EndpointId, Permission, RequestBuilderExt};
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::sync::watch;
use tokio::time::MissedTickBehavior;

use super::reads::failure_reason;
use super::{Bot, next};
use crate::demo::picture::Kind;
use crate::demo::trace::traced;
use crate::oracle::{PermissionQuery, reach_limit};
use crate::{DUMMY_RAW_TX, call, send};

impl Bot {
    /// Sends a write now and then, failover denied.
    pub(super) async fn writer(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        // Half a check interval off the checks, so some writes land while a fault is fresh
        // and the monitor has not noticed it yet: they show that a write is not failed over.
        let period = self.config.write_interval;
        let first = self.started + period + self.config.check_interval / 2;
        let mut tick = tokio::time::interval_at(first, period);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut n = 0u64;
        while next(&mut tick, &mut stop).await {
            n += 1;
            self.write(n).await;
        }
    }

    async fn write(&self, n: u64) {
        // A distinct raw transaction each time (the simulator refuses repeats, as nodes do);
        // real nodes reject these bytes, so nothing is broadcast.
        let raw = format!("{DUMMY_RAW_TX}{n:08x}");
        let before = self.write_counts();
        let request = call(&self.client, &self.url, "eth_sendRawTransaction", json!([raw])).deny_failover();
        let (outcome, trace) = traced(tokio::time::timeout(self.request_bound(), send(request))).await;
        let after = self.write_counts();

        // Writes are sent one at a time and nothing else sends eth_sendRawTransaction, so the
        // counters' growth during this write is this write's.
        let received: u64 = match (&before, &after) {
            (Some(b), Some(a)) => a.iter().zip(b).map(|(a, b)| a.saturating_sub(*b)).sum(),
            _ => 0,
        };
        let reached = received.max(trace.attempts.len() as u64);
        let tried: Vec<&str> = trace.attempts.iter().map(EndpointId::as_str).collect();

        let result = match &outcome {
            Err(_) => "no answer in time".to_owned(),
            Ok(Err(e)) => format!("no response: {}", failure_reason(e)),
            Ok(Ok(reply)) => match (reply.error(), reply.result()) {
                (Some(error), _) => format!("{}: {error}", reply.served_by()),
                (None, Some(Value::String(_))) if reply.status().is_success() => {
                    format!("{}: accepted", reply.served_by())
                }
                _ => format!("{}: http {}", reply.served_by(), reply.status().as_u16()),
            },
        };

        {
            let mut s = self.stats();
            s.writes += 1;
            match &outcome {
                Ok(Ok(reply)) => {
                    if let Some(i) = self.index(reply.served_by()) {
                        s.served_writes[i] += 1;
                        self.mark(i, Kind::Write);
                    }
                    let accepted = reply.status().is_success()
                        && reply.error().is_none()
                        && matches!(reply.result(), Some(Value::String(_)));
                    if accepted {
                        s.writes_accepted += 1;
                    } else {
                        s.writes_rejected += 1;
                    }
                }
                _ => {
                    s.writes_failed += 1;
                    for endpoint in &trace.attempts {
                        if let Some(i) = self.index(endpoint.as_str()) {
                            self.mark(i, Kind::WriteLost);
                        }
                    }
                }
            }
            // Sent with `deny_failover()`: the rules let it reach one provider at most.
            let permission =
                PermissionQuery { explicit: Some(Permission::Deny), policy: None, method: "POST" };
            let limit = reach_limit(permission.settle().may_fail_over, true, self.ids.len());
            if reached > limit as u64 {
                s.writes_to_several += 1;
                let at = self.stamp();
                s.violation(format!(
                    "{at} write {n} reached {reached} providers (attempts: {})",
                    tried.join(", ")
                ));
            }
        }
        let to = if tried.is_empty() { "nobody".to_owned() } else { tried.join(", ") };
        self.log(&format!("write {n} (failover denied) tried {to} -> {result}"));
    }

    /// Each simulated provider's `eth_sendRawTransaction` count; `None` against real providers.
    fn write_counts(&self) -> Option<Vec<u64>> {
        let sim = self.sim.as_ref()?;
        Some(sim.providers.iter().map(|p| p.count("eth_sendRawTransaction")).collect())
    }
}

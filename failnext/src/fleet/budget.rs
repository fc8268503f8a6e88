//! A fleet's budgets and cooldowns: admission by the script, the local budget while Redis is
//! away, cooldowns published and read back.

use std::time::Duration;

use tokio::time::Instant;

use super::{Fleet, FleetState, Rate, script};
use crate::EndpointId;

/// What the fleet says of an attempt to a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Send.
    Admitted,
    /// Do not: the budget is spent, or the provider is cooling fleet-wide.
    Refused,
}

impl Fleet {
    /// Asks the fleet whether an attempt to `endpoint` may go now; and, when this call found
    /// Redis unavailable or back, the new state (to be told once). Never waits longer than the
    /// timeout; without a budget for `endpoint`, admitted at once.
    pub(crate) async fn admit(&self, endpoint: &EndpointId) -> (Admission, Option<FleetState>) {
        let Some(rate) = self.inner.budgets.get(endpoint).copied() else {
            return (Admission::Admitted, None);
        };
        let member = self.inner.member.as_str();
        let keys = (
            self.key("budget", endpoint),
            self.key("cool", endpoint),
            format!("{}share:{}:{member}", self.inner.prefix, endpoint.as_str()),
            self.key("users", endpoint),
        );
        let asked = self.call(|mut conn| async move {
            script::admit()
                .key(&keys.0)
                .key(&keys.1)
                .key(&keys.2)
                .key(&keys.3)
                .arg(rate.interval_us())
                .arg(rate.tolerance_us())
                .arg(member)
                .invoke_async::<i64>(&mut conn)
                .await
        });
        match asked.await {
            (Some(admitted), told) => {
                (if admitted == 1 { Admission::Admitted } else { Admission::Refused }, told)
            }
            (None, told) => (self.admit_locally(endpoint, rate), told),
        }
    }

    /// The local budget while Redis is unavailable: the same algorithm on this process's clock.
    pub(super) fn admit_locally(&self, endpoint: &EndpointId, rate: Rate) -> Admission {
        let now = Instant::now();
        let mut local = self.inner.local.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let due = local.entry(endpoint.clone()).or_insert(now);
        let tat = (*due).max(now);
        if tat.saturating_duration_since(now) > Duration::from_micros(rate.tolerance_us()) {
            return Admission::Refused;
        }
        *due = tat + Duration::from_micros(rate.interval_us());
        Admission::Admitted
    }

    /// Publishes that `endpoint` cools until `until` (when that is later than what this
    /// process published or learnt last), in the background: every process's admission to it
    /// (with a budget) or its next refresh (without one) reads it.
    pub(crate) fn cooling(&self, endpoint: &EndpointId, until: Instant, reason: crate::Class) {
        let left = until.saturating_duration_since(Instant::now());
        if left < Duration::from_millis(1) {
            return;
        }
        {
            let mut published =
                self.inner.published.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if published.get(endpoint).is_some_and(|p| *p >= until) {
                return;
            }
            published.insert(endpoint.clone(), until);
        }
        let (fleet, key) = (self.clone(), self.key("cool", endpoint));
        let ms = super::millis(left);
        // Announced in the same round trip: the other failovers cool it as it comes
        // ([`Fleet::listen`]), not at their next refresh.
        let (name, said) = (format!("cool:{}", endpoint.as_str()), format!("{ms} {}", reason.as_str()));
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let value = reason.as_str().to_owned();
                fleet.set_and_announce(key, value, ms, (&name, &said), true).await
            });
        }
    }

    /// The time each of `endpoints` cools fleet-wide (zero when it does not) and why (the
    /// class of the answer that started it, as the publisher wrote it), in one round trip;
    /// `None` when Redis is unavailable; and the state change that call found.
    pub(crate) async fn cooldowns(
        &self,
        endpoints: &[EndpointId],
    ) -> (Option<Vec<(Duration, Option<String>)>>, Option<FleetState>) {
        let keys: Vec<String> = endpoints.iter().map(|id| self.key("cool", id)).collect();
        let read = self.call(|mut conn| async move {
            let mut pipe = redis::pipe();
            for key in &keys {
                pipe.cmd("PTTL").arg(key).cmd("GET").arg(key);
            }
            pipe.query_async::<Vec<(i64, Option<String>)>>(&mut conn).await
        });
        let (left, state) = read.await;
        let left = left.map(|left| {
            left.into_iter()
                .map(|(ms, why)| (Duration::from_millis(u64::try_from(ms).unwrap_or(0)), why))
                .collect()
        });
        (left, state)
    }

    /// This process learnt from the fleet that `endpoint` cools until `until`: not published
    /// again.
    pub(crate) fn heard_cooling(&self, endpoint: &EndpointId, until: Instant) {
        let mut published = self.inner.published.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        published.insert(endpoint.clone(), until);
    }
}

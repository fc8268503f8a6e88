//! A fleet's connection to Redis: every call bounded by the timeout, a connection made again
//! in the background, Redis's state told once per change.

use std::sync::atomic::Ordering;
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use tokio::time::Instant;

use super::{Fleet, FleetState, RECONNECT_EVERY};

/// The connection, or when the last attempt to make one began.
pub(super) enum Conn {
    Up(MultiplexedConnection),
    Down { since: Option<Instant>, connecting: bool },
}

impl Fleet {
    /// Runs `f` on the connection within the timeout: its value, or `None` when Redis is
    /// unavailable (no connection yet, an error, the timeout); and the state change this call
    /// found, if any. Never connects inline: a missing connection is made in the background.
    pub(super) async fn call<T, F, Fut>(&self, f: F) -> (Option<T>, Option<FleetState>)
    where
        F: FnOnce(MultiplexedConnection) -> Fut,
        Fut: std::future::Future<Output = redis::RedisResult<T>>,
    {
        self.call_telling(f, true).await
    }

    /// [`call`](Fleet::call), the state change found recorded and returned only with `tell`
    /// (calls made for others, as the monitor's, leave the telling to the failover's own).
    pub(super) async fn call_telling<T, F, Fut>(&self, f: F, tell: bool) -> (Option<T>, Option<FleetState>)
    where
        F: FnOnce(MultiplexedConnection) -> Fut,
        Fut: std::future::Future<Output = redis::RedisResult<T>>,
    {
        if !self.inner.tried.swap(true, Ordering::Relaxed) {
            // The first use connects inline, within the timeout, so that a fleet whose Redis
            // is up is on the shared view from its first request.
            self.reconnect(self.inner.timeout).await;
        }
        // Failures seen before this call: its success says Redis is back only when no other
        // call failed meanwhile (a call sent before Redis went away may still come back).
        let failures = self.inner.failures.load(Ordering::Relaxed);
        // One timeout bounds the whole call: waiting for a connection being made, then Redis.
        let started = Instant::now();
        let Some(conn) = self.connection_within(self.inner.timeout).await else {
            // Before the first connection attempt has ended, nothing is known of Redis yet.
            let known = self.inner.settled.load(Ordering::Relaxed);
            return (None, if known { self.told(false, tell) } else { None });
        };
        let left = self.inner.timeout.saturating_sub(started.elapsed()).max(Duration::from_millis(1));
        match tokio::time::timeout(left, f(conn)).await {
            Ok(Ok(value)) if self.inner.failures.load(Ordering::Relaxed) == failures => {
                (Some(value), self.told(true, tell))
            }
            Ok(Ok(value)) => (Some(value), None),
            Ok(Err(_)) | Err(_) => {
                self.drop_connection();
                (None, self.told(false, tell))
            }
        }
    }

    /// The connection, waiting for one being made (at most `wait`): a call made while the
    /// first connection (or a new one) is under way goes on it rather than being lost.
    pub(super) async fn connection_within(&self, wait: Duration) -> Option<MultiplexedConnection> {
        let started = Instant::now();
        loop {
            if let Some(conn) = self.connection() {
                return Some(conn);
            }
            let connecting = {
                let link = self.inner.link.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                matches!(*link, Conn::Down { connecting: true, .. })
            };
            if !connecting || started.elapsed() >= wait {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// The connection, if there is one; else a reconnection is started in the background
    /// (at most one at a time, at most every [`RECONNECT_EVERY`]).
    pub(super) fn connection(&self) -> Option<MultiplexedConnection> {
        let mut link = self.inner.link.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match &mut *link {
            Conn::Up(conn) => Some(conn.clone()),
            Conn::Down { since, connecting } => {
                let due = since.is_none_or(|s| s.elapsed() >= RECONNECT_EVERY);
                if !*connecting && due {
                    if let Ok(handle) = tokio::runtime::Handle::try_current() {
                        *connecting = true;
                        *since = Some(Instant::now());
                        let fleet = self.clone();
                        let timeout = fleet.inner.timeout.max(Duration::from_millis(200));
                        handle.spawn(async move { fleet.reconnect(timeout).await });
                    }
                }
                None
            }
        }
    }

    /// Makes a connection, within `timeout`.
    pub(super) async fn reconnect(&self, timeout: Duration) {
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(self.inner.timeout));
        let made = tokio::time::timeout(
            timeout,
            self.inner.client.get_multiplexed_async_connection_with_config(&config),
        )
        .await;
        self.inner.settled.store(true, Ordering::Relaxed);
        let mut link = self.inner.link.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *link = match made {
            Ok(Ok(conn)) => Conn::Up(conn),
            _ => Conn::Down { since: Some(Instant::now()), connecting: false },
        };
    }

    pub(super) fn drop_connection(&self) {
        let mut link = self.inner.link.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if matches!(*link, Conn::Up(_)) {
            *link = Conn::Down { since: None, connecting: false };
        }
    }

    /// [`found`](Fleet::found) when `tell`, else nothing.
    pub(super) fn told(&self, available: bool, tell: bool) -> Option<FleetState> {
        if tell { self.found(available) } else { None }
    }

    /// Records whether Redis answered: the state change, once per change.
    pub(super) fn found(&self, available: bool) -> Option<FleetState> {
        if !available {
            self.inner.failures.fetch_add(1, Ordering::Relaxed);
        }
        let was_down = self.inner.down.swap(!available, Ordering::Relaxed);
        match (was_down, available) {
            (false, false) => Some(FleetState::Unavailable),
            (true, true) => Some(FleetState::Rejoined),
            _ => None,
        }
    }
}

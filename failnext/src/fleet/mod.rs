//! A fleet: many processes on the same provider keys sharing one quota per provider and the
//! providers' cooldowns through Redis (feature `redis`).
//!
//! Every process opens the same [`Fleet`] (one Redis URL, one fleet name) and gives it to its
//! [`FailoverBuilder::fleet`](crate::FailoverBuilder::fleet) or
//! [`FailoverTransportBuilder::fleet`](crate::alloy::FailoverTransportBuilder::fleet). Then:
//!
//! - **One quota per provider per fleet.** A provider given a [`Rate`] with
//!   [`Fleet::budget`] is sent a request only when the fleet's budget for it admits one:
//!   one Redis round trip per attempt to it, a script that runs atomically in Redis (the
//!   generic cell rate algorithm on Redis's own clock, so there is no read-modify-write
//!   race between processes and no clock skew between machines). A request the budget
//!   refuses is not sent there: it goes to the next provider, as for a provider cooling down
//!   ([`SkipReason::FleetBudget`](crate::SkipReason::FleetBudget)), so the fleet stays under
//!   the provider's limit and the reads over it are served elsewhere instead of meeting a 429.
//! - **A cooldown seen by one is seen by all.** When a provider with a budget starts cooling
//!   in one process (a 429 with `Retry-After`, a quota answer, a breaker opening), the process
//!   publishes it, and the admission script of every process refuses that provider until the
//!   cooldown ends.
//!
//! Redis is help, never a dependency: every call is bounded by [`Fleet::timeout`] (50 ms by
//! default). When Redis is slow, down or flushed, each process admits by a budget of its own
//! at the provider's rate (it cannot know its share of the fleet without Redis; the provider's
//! own 429s then cool it as before), tells it once ([`Event::Fleet`](crate::Event::Fleet) with
//! [`FleetState::Unavailable`]), tries to reconnect in the background at most every
//! [`RECONNECT_EVERY`], and tells [`FleetState::Rejoined`] when Redis answers again. No
//! request waits on Redis longer than the timeout; none is lost.
//!
//! Keys are `failnext:{fleet name}:...` and name endpoints by their ids only, never by a URL.
//! The Redis URL and the fleet name are shown by no `Debug`, error or event.
//!
//! ```no_run
//! use failnext::fleet::{Fleet, Rate};
//! use failnext::{Endpoint, Failover};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let fleet = Fleet::connect("redis://127.0.0.1:6379", "bots")?
//!     .budget("primary", Rate::per_second(200).burst(20));
//! let failover = Failover::builder([
//!     Endpoint::new("primary", "https://eth.example.com/v2/KEY"),
//!     Endpoint::new("backup", "https://backup.example.org"),
//! ])
//! .fleet(fleet)
//! .build()?;
//! # drop(failover);
//! # Ok(())
//! # }
//! ```

mod script;

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use tokio::time::Instant;

use crate::EndpointId;

/// How often a process whose Redis is unavailable tries to connect again.
pub const RECONNECT_EVERY: Duration = Duration::from_millis(250);

/// How often a process reads what the fleet published (in the background, from its first
/// request on).
pub const REFRESH_EVERY: Duration = Duration::from_millis(100);

/// A failover's tie to its fleet: the fleet, and the failover itself (read for in the
/// background).
pub(crate) struct Link {
    pub(crate) fleet: Fleet,
    pub(crate) me: std::sync::OnceLock<std::sync::Weak<crate::flow::shared::Shared>>,
    /// Whether the background read runs.
    watching: AtomicBool,
}

impl Link {
    pub(crate) fn new(fleet: Fleet) -> Link {
        Link { fleet, me: std::sync::OnceLock::new(), watching: AtomicBool::new(false) }
    }
}

/// A provider's request budget for the whole fleet: `per_second` requests a second on
/// average, up to `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    per_second: u32,
    burst: u32,
}

impl Rate {
    /// `n` requests a second, a burst of one (set it with [`burst`](Rate::burst)). `n` is at
    /// least 1.
    #[must_use]
    pub const fn per_second(n: u32) -> Rate {
        Rate { per_second: if n == 0 { 1 } else { n }, burst: 1 }
    }

    /// Up to `n` requests at once (at least 1).
    #[must_use]
    pub const fn burst(mut self, n: u32) -> Rate {
        self.burst = if n == 0 { 1 } else { n };
        self
    }

    /// Time between two requests at this rate, in microseconds.
    fn interval_us(self) -> u64 {
        1_000_000 / u64::from(self.per_second)
    }

    /// How far ahead of now the budget may be spent, in microseconds (`burst - 1` intervals).
    fn tolerance_us(self) -> u64 {
        self.interval_us() * u64::from(self.burst - 1)
    }
}

pub use crate::FleetState;

/// Why a [`Fleet`] could not be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FleetError {
    /// The Redis URL is not one (the URL itself is not shown: it may hold a password).
    #[error("the fleet's Redis URL is not a valid redis:// URL ({0})")]
    BadUrl(&'static str),
    /// The fleet name is empty, or holds a character that would blur the key namespace.
    #[error("the fleet's name must be non-empty and hold no ':', '{{', '}}', space or control character")]
    BadName,
}

/// A fleet's shared view on Redis; cheap to clone (one connection per process, shared).
/// See the [module](self).
#[derive(Clone)]
pub struct Fleet {
    inner: Arc<Inner>,
}

struct Inner {
    client: redis::Client,
    /// `failnext:{name}:`.
    prefix: String,
    budgets: HashMap<EndpointId, Rate>,
    timeout: Duration,
    link: Mutex<Conn>,
    /// Whether Redis was last found unavailable (told once per change).
    down: AtomicBool,
    /// Whether a first connection was tried (inline, bounded by the timeout).
    tried: AtomicBool,
    /// Whether a connection attempt has ended (before, a missing connection says nothing).
    settled: AtomicBool,
    /// Calls that found Redis unavailable, ever.
    failures: std::sync::atomic::AtomicU64,
    /// This handle's id in the fleet (for its share of each budget): random, not the host's.
    member: String,
    /// Per endpoint: the local budget used while Redis is unavailable (the instant the next
    /// request is theoretically due, as in the script).
    local: Mutex<HashMap<EndpointId, Instant>>,
    /// Per endpoint: the end of the cooldown last published.
    published: Mutex<HashMap<EndpointId, Instant>>,
}

/// The connection, or when the last attempt to make one began.
enum Conn {
    Up(MultiplexedConnection),
    Down { since: Option<Instant>, connecting: bool },
}

/// What the fleet says of an attempt to a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Send.
    Admitted,
    /// Do not: the budget is spent, or the provider is cooling fleet-wide.
    Refused,
}

/// A random id for this process's handle: 64 bits from the std hasher's random keys, the
/// process id and the time (nothing that names the host or a provider).
fn member_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.write_u128(
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos(),
    );
    format!("{:016x}", hasher.finish())
}

impl fmt::Debug for Fleet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut budgets: Vec<(&str, Rate)> =
            self.inner.budgets.iter().map(|(id, r)| (id.as_str(), *r)).collect();
        budgets.sort_by_key(|(id, _)| *id);
        f.debug_struct("Fleet")
            .field("redis", &"<redacted>")
            .field("name", &"<redacted>")
            .field("budgets", &budgets)
            .field("timeout", &self.inner.timeout)
            .field("available", &!self.inner.down.load(Ordering::Relaxed))
            .finish()
    }
}

impl Fleet {
    /// A fleet named `name` on the Redis at `redis_url` (`redis://[:password@]host:port[/db]`).
    /// Nothing is sent yet: the connection is made at the first use, and a process started
    /// while Redis is down runs on its own view until Redis answers.
    ///
    /// # Errors
    ///
    /// [`FleetError::BadUrl`] when `redis_url` is not a Redis URL, [`FleetError::BadName`]
    /// when `name` is empty or holds `:`, braces, spaces or control characters.
    pub fn connect(redis_url: &str, name: &str) -> Result<Fleet, FleetError> {
        let bad = |c: char| c == ':' || c == '{' || c == '}' || c.is_whitespace() || c.is_control();
        if name.is_empty() || name.chars().any(bad) {
            return Err(FleetError::BadName);
        }
        if !(redis_url.starts_with("redis://") || redis_url.starts_with("redis+unix://")) {
            return Err(FleetError::BadUrl("the scheme is not redis://"));
        }
        let client = redis::Client::open(redis_url).map_err(|_| FleetError::BadUrl("it does not parse"))?;
        Ok(Fleet {
            inner: Arc::new(Inner {
                client,
                prefix: format!("failnext:{name}:"),
                budgets: HashMap::new(),
                timeout: Duration::from_millis(50),
                link: Mutex::new(Conn::Down { since: None, connecting: false }),
                down: AtomicBool::new(false),
                tried: AtomicBool::new(false),
                failures: std::sync::atomic::AtomicU64::new(0),
                settled: AtomicBool::new(false),
                member: member_id(),
                local: Mutex::new(HashMap::new()),
                published: Mutex::new(HashMap::new()),
            }),
        })
    }

    fn edit(mut self, f: impl FnOnce(&mut Inner)) -> Fleet {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => f(inner),
            None => {
                // Configured after a clone: configure a copy (the clone keeps the old one).
                let old = &self.inner;
                let mut inner = Inner {
                    client: old.client.clone(),
                    prefix: old.prefix.clone(),
                    budgets: old.budgets.clone(),
                    timeout: old.timeout,
                    link: Mutex::new(Conn::Down { since: None, connecting: false }),
                    down: AtomicBool::new(false),
                    tried: AtomicBool::new(false),
                    failures: std::sync::atomic::AtomicU64::new(0),
                    settled: AtomicBool::new(false),
                    member: old.member.clone(),
                    local: Mutex::new(HashMap::new()),
                    published: Mutex::new(HashMap::new()),
                };
                f(&mut inner);
                self.inner = Arc::new(inner);
            }
        }
        self
    }

    /// Gives the provider `endpoint` a request budget for the whole fleet: every attempt to it
    /// is admitted by Redis first (see the [module](self)).
    #[must_use]
    pub fn budget(self, endpoint: impl Into<EndpointId>, rate: Rate) -> Fleet {
        let endpoint = endpoint.into();
        self.edit(|inner| {
            inner.budgets.insert(endpoint, rate);
        })
    }

    /// How long any Redis call may take (50 ms by default; at least 1 ms): past it, the
    /// process goes on with its own view.
    #[must_use]
    pub fn timeout(self, timeout: Duration) -> Fleet {
        self.edit(|inner| inner.timeout = timeout.max(Duration::from_millis(1)))
    }

    /// Whether `endpoint` has a fleet budget (its attempts are admitted first).
    pub(crate) fn budgets(&self, endpoint: &EndpointId) -> bool {
        self.inner.budgets.contains_key(endpoint)
    }

    /// Whether Redis was found available at the last call.
    #[must_use]
    pub fn is_available(&self) -> bool {
        !self.inner.down.load(Ordering::Relaxed)
    }

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
    fn admit_locally(&self, endpoint: &EndpointId, rate: Rate) -> Admission {
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
    pub(crate) fn cooling(&self, endpoint: &EndpointId, until: Instant) {
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
        let millis = u64::try_from(left.as_millis()).unwrap_or(u64::MAX).max(1);
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let set = fleet.call(|mut conn| async move {
                    redis::cmd("SET")
                        .arg(&key)
                        .arg(1)
                        .arg("PX")
                        .arg(millis)
                        .query_async::<()>(&mut conn)
                        .await
                });
                let _ = set.await;
            });
        }
    }

    /// Starts (once per failover, at its first request, in the runtime that runs it) the
    /// background read of what the fleet published about the failover's endpoints (their
    /// cooldowns): one round trip every [`REFRESH_EVERY`], never on a request's way, ending
    /// when the failover is dropped. A cooldown another process published cools the endpoint
    /// here too, for the time it has left, told as that endpoint's
    /// [`Event::Breaker`](crate::Event::Breaker).
    pub(crate) fn refresh(&self, link: &Link) {
        if link.watching.swap(true, Ordering::Relaxed) {
            return;
        }
        let (Some(me), Ok(handle)) = (link.me.get().cloned(), tokio::runtime::Handle::try_current()) else {
            link.watching.store(false, Ordering::Relaxed);
            return;
        };
        let fleet = self.clone();
        handle.spawn(async move {
            while let Some(shared) = me.upgrade() {
                fleet.read_cooldowns(&shared).await;
                drop(shared);
                tokio::time::sleep(REFRESH_EVERY).await;
            }
        });
    }

    /// One read of the cooldowns published for `shared`'s endpoints, applied.
    async fn read_cooldowns(&self, shared: &crate::flow::shared::Shared) {
        let keys: Vec<String> = shared.slots.iter().map(|slot| self.key("cool", slot.id())).collect();
        let read = self.call(|mut conn| async move {
            let mut pipe = redis::pipe();
            for key in &keys {
                pipe.cmd("PTTL").arg(key);
            }
            pipe.query_async::<Vec<i64>>(&mut conn).await
        });
        let (left, state) = read.await;
        if let Some(state) = state {
            shared.emit(|| crate::Event::Fleet { state });
        }
        for (slot, left) in shared.slots.iter().zip(left.unwrap_or_default()) {
            let Ok(left) = u64::try_from(left) else { continue };
            self.learnt(shared, slot, Duration::from_millis(left));
        }
    }

    /// Another process published that `slot`'s endpoint cools for `left`: unless it already
    /// cools about as long here, its breaker opens for that long (the adaptive breaker; the
    /// reference rule takes no hint).
    fn learnt(&self, shared: &crate::flow::shared::Shared, slot: &crate::flow::slot::Slot, left: Duration) {
        let until = Instant::now() + left;
        if left.is_zero()
            || slot.health.cooling_until().is_some_and(|u| u + Duration::from_millis(50) >= until)
        {
            return;
        }
        {
            let mut published =
                self.inner.published.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            published.insert(slot.id().clone(), until);
        }
        let evidence = crate::judging::classify::Evidence::Failure;
        if let Some(state) = slot.health.record(evidence, Some(left), None) {
            let endpoint = slot.id();
            shared.emit(|| crate::Event::Breaker { endpoint, state });
        }
    }

    /// Holds (or renews) the fleet-wide lease `name` for `ttl`: `Some(true)` when this handle
    /// holds it now, `Some(false)` when another process does, `None` when Redis is
    /// unavailable (the caller goes on alone). A lease not renewed within `ttl` (its holder
    /// died or stopped) is free for the next taker. This is how failnext-blocklag probes each
    /// provider from one process of the fleet; `name` is part of a Redis key: use endpoint
    /// ids, never URLs.
    pub async fn hold(&self, name: &str, ttl: Duration) -> Option<bool> {
        let key = format!("{}lease:{name}", self.inner.prefix);
        let member = self.inner.member.clone();
        let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        let held = self.call_telling(
            |mut conn| async move {
                script::hold().key(&key).arg(&member).arg(ms).invoke_async::<i64>(&mut conn).await
            },
            false,
        );
        held.await.0.map(|held| held == 1)
    }

    /// Publishes `value` under `name` for `ttl` (a note other processes [`read`](Fleet::read)).
    /// Returns whether Redis took it. `name` and `value` are stored as they are: no URL or
    /// key of a provider in either.
    pub async fn publish(&self, name: &str, value: &str, ttl: Duration) -> bool {
        let key = format!("{}note:{name}", self.inner.prefix);
        let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        let value = value.to_owned();
        let set = self.call_telling(
            |mut conn| async move {
                redis::cmd("SET").arg(&key).arg(&value).arg("PX").arg(ms).query_async::<()>(&mut conn).await
            },
            false,
        );
        set.await.0.is_some()
    }

    /// [`publish`](Fleet::publish), and tells every process [listening](Fleet::listen) at
    /// once (Redis pub/sub, in the same round trip): how a news another process must act on
    /// at once (a provider found on another chain) reaches the fleet within one round trip.
    pub async fn announce(&self, name: &str, value: &str, ttl: Duration) -> bool {
        let key = format!("{}note:{name}", self.inner.prefix);
        let channel = format!("{}notes", self.inner.prefix);
        let message = format!("{}\n{name}\n{value}", self.inner.member);
        let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        let value = value.to_owned();
        let sent = self.call_telling(
            |mut conn| async move {
                redis::pipe()
                    .cmd("SET")
                    .arg(&key)
                    .arg(&value)
                    .arg("PX")
                    .arg(ms)
                    .ignore()
                    .cmd("PUBLISH")
                    .arg(&channel)
                    .arg(&message)
                    .ignore()
                    .query_async::<()>(&mut conn)
                    .await
            },
            false,
        );
        sent.await.0.is_some()
    }

    /// Calls `on(name, value)` for every note another process of the fleet
    /// [announces](Fleet::announce), as it comes, until the returned future is dropped (it
    /// never ends by itself). While Redis is unavailable it tries again every
    /// [`RECONNECT_EVERY`]; notes announced meanwhile are missed (read them with
    /// [`read`](Fleet::read)).
    pub async fn listen(&self, mut on: impl FnMut(&str, &str)) {
        use futures_util::StreamExt as _;
        let channel = format!("{}notes", self.inner.prefix);
        let connect_within = self.inner.timeout.max(Duration::from_millis(200));
        loop {
            if let Ok(Ok(mut pubsub)) =
                tokio::time::timeout(connect_within, self.inner.client.get_async_pubsub()).await
            {
                if pubsub.subscribe(&channel).await.is_ok() {
                    let mut messages = pubsub.into_on_message();
                    while let Some(message) = messages.next().await {
                        let Ok(payload) = message.get_payload::<String>() else { continue };
                        let mut parts = payload.splitn(3, '\n');
                        if let (Some(member), Some(name), Some(value)) =
                            (parts.next(), parts.next(), parts.next())
                        {
                            if member != self.inner.member {
                                on(name, value);
                            }
                        }
                    }
                }
            }
            tokio::time::sleep(RECONNECT_EVERY).await;
        }
    }

    /// The note `name` another process [published](Fleet::publish): `Some(None)` when there is
    /// none (or it expired), `None` when Redis is unavailable.
    pub async fn read(&self, name: &str) -> Option<Option<String>> {
        let key = format!("{}note:{name}", self.inner.prefix);
        let get =
            self.call_telling(
                |mut conn| async move {
                    redis::cmd("GET").arg(&key).query_async::<Option<String>>(&mut conn).await
                },
                false,
            );
        get.await.0
    }

    /// `failnext:{name}:{what}:{endpoint id}`.
    fn key(&self, what: &str, endpoint: &EndpointId) -> String {
        format!("{}{what}:{}", self.inner.prefix, endpoint.as_str())
    }

    /// Runs `f` on the connection within the timeout: its value, or `None` when Redis is
    /// unavailable (no connection yet, an error, the timeout); and the state change this call
    /// found, if any. Never connects inline: a missing connection is made in the background.
    async fn call<T, F, Fut>(&self, f: F) -> (Option<T>, Option<FleetState>)
    where
        F: FnOnce(MultiplexedConnection) -> Fut,
        Fut: std::future::Future<Output = redis::RedisResult<T>>,
    {
        self.call_telling(f, true).await
    }

    /// [`call`](Fleet::call), the state change found recorded and returned only with `tell`
    /// (calls made for others, as the monitor's, leave the telling to the failover's own).
    async fn call_telling<T, F, Fut>(&self, f: F, tell: bool) -> (Option<T>, Option<FleetState>)
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
        let Some(conn) = self.connection() else {
            // Before the first connection attempt has ended, nothing is known of Redis yet.
            let known = self.inner.settled.load(Ordering::Relaxed);
            return (None, if known { self.told(false, tell) } else { None });
        };
        match tokio::time::timeout(self.inner.timeout, f(conn)).await {
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

    /// The connection, if there is one; else a reconnection is started in the background
    /// (at most one at a time, at most every [`RECONNECT_EVERY`]).
    fn connection(&self) -> Option<MultiplexedConnection> {
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
    async fn reconnect(&self, timeout: Duration) {
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

    fn drop_connection(&self) {
        let mut link = self.inner.link.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if matches!(*link, Conn::Up(_)) {
            *link = Conn::Down { since: None, connecting: false };
        }
    }

    /// [`found`](Fleet::found) when `tell`, else nothing.
    fn told(&self, available: bool, tell: bool) -> Option<FleetState> {
        if tell { self.found(available) } else { None }
    }

    /// Records whether Redis answered: the state change, once per change.
    fn found(&self, available: bool) -> Option<FleetState> {
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

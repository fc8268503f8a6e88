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
//!   publishes and announces it in one round trip: every other failover of the fleet cools
//!   that provider as the announcement comes (within a round trip; each also reads every
//!   cooldown back every [`REFRESH_EVERY`], for those announced while it was not listening),
//!   and the admission script of every process refuses it until the cooldown ends.
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

mod budget;
mod link;
mod notes;
mod script;

pub(crate) use budget::Admission;
use link::Conn;

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::EndpointId;

/// How often a process whose Redis is unavailable tries to connect again.
pub const RECONNECT_EVERY: Duration = Duration::from_millis(250);

/// How often a process reads what the fleet published (in the background, from its first
/// request on).
pub const REFRESH_EVERY: Duration = Duration::from_millis(100);

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

/// `duration` in whole milliseconds, at least 1 (a Redis `PX`).
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX).max(1)
}

/// How long a Redis call may take unless [`Fleet::timeout`] says otherwise.
const DEFAULT_TIMEOUT: Duration = Duration::from_millis(50);

impl Inner {
    /// A handle's state before any call: no connection, nothing learnt.
    fn fresh(
        client: redis::Client,
        prefix: String,
        member: String,
        budgets: HashMap<EndpointId, Rate>,
        timeout: Duration,
    ) -> Inner {
        Inner {
            client,
            prefix,
            budgets,
            timeout,
            link: Mutex::new(Conn::Down { since: None, connecting: false }),
            down: AtomicBool::new(false),
            tried: AtomicBool::new(false),
            failures: std::sync::atomic::AtomicU64::new(0),
            settled: AtomicBool::new(false),
            member,
            local: Mutex::new(HashMap::new()),
            published: Mutex::new(HashMap::new()),
        }
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
        let inner =
            Inner::fresh(client, format!("failnext:{name}:"), member_id(), HashMap::new(), DEFAULT_TIMEOUT);
        Ok(Fleet { inner: Arc::new(inner) })
    }

    fn edit(mut self, f: impl FnOnce(&mut Inner)) -> Fleet {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => f(inner),
            None => {
                // Configured after a clone: configure a copy (the clone keeps the old one).
                let old = &self.inner;
                let (client, prefix, member) = (old.client.clone(), old.prefix.clone(), old.member.clone());
                let mut inner = Inner::fresh(client, prefix, member, old.budgets.clone(), old.timeout);
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

    /// `failnext:{name}:{what}:{endpoint id}`.
    fn key(&self, what: &str, endpoint: &EndpointId) -> String {
        format!("{}{what}:{}", self.inner.prefix, endpoint.as_str())
    }
}

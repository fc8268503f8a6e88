//! `Slot`: everything failnext keeps about one configured endpoint.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::time::Instant;
use url::Url;

use crate::health::Health;
use crate::health::cooldown::Cooldown;
use crate::health::latency::Latency;
use crate::health::recent::Recent;
use crate::request::destination::Destination;
use crate::request::endpoint::{Endpoint, EndpointId};

/// One endpoint's state: who it is (its id; the endpoint itself, with its URL, is kept once,
/// in the configuration), where its attempts go, and how healthy it is.
#[derive(Debug)]
pub(crate) struct Slot {
    id: EndpointId,
    pub(crate) destination: Destination,
    pub(crate) health: Health,
    /// The latency average, kept only with latency-aware ordering.
    pub(crate) latency: Latency,
    /// The latest attempt latencies, kept only with a percentile hedge.
    pub(crate) recent: Option<Box<Recent>>,
    /// Its metric keys, made once.
    #[cfg(feature = "metrics")]
    pub(crate) keys: crate::events::metrics::Keys,
    /// The account pauses in a row (credentials or payment refused) and when the latest
    /// ends: touched only by such answers and by the first good answer after them.
    account: Mutex<Option<(u32, Instant)>>,
    /// Whether `account` holds anything: what a good answer checks, one atomic load.
    refused: AtomicBool,
}

impl Slot {
    /// The slot of `endpoint`, whose URL passed validation as `url`.
    pub(crate) fn new(endpoint: &Endpoint, url: Url, cooldown: Cooldown) -> Slot {
        Slot {
            #[cfg(feature = "metrics")]
            keys: crate::events::metrics::Keys::new(endpoint.id()),
            id: endpoint.id().clone(),
            destination: Destination::new(url),
            health: Health::new(cooldown),
            latency: Latency::default(),
            recent: None,
            account: Mutex::new(None),
            refused: AtomicBool::new(false),
        }
    }

    /// The slot keeps its latest attempt latencies (for a percentile hedge) when `keep`.
    pub(crate) fn keeping_latencies(mut self, keep: bool) -> Slot {
        self.recent = keep.then(|| Box::new(Recent::new()));
        self
    }

    pub(crate) fn id(&self) -> &EndpointId {
        &self.id
    }

    /// How long the endpoint pauses for an answer that refused its credentials or its
    /// account's payment: [`ACCOUNT_PAUSE`] at first, doubling at each refusal after a pause
    /// ended (not for the other answers of the same moment), at most [`MAX_ACCOUNT_PAUSE`].
    pub(crate) fn account_refused(&self) -> Duration {
        let now = Instant::now();
        let mut account = self.account.lock().unwrap_or_else(|p| p.into_inner());
        let pauses = match *account {
            Some((_, until)) if now < until => return until - now,
            Some((pauses, _)) => pauses.saturating_add(1),
            None => 1,
        };
        let pause = ACCOUNT_PAUSE.saturating_mul(1 << (pauses - 1).min(8)).min(MAX_ACCOUNT_PAUSE);
        *account = Some((pauses, now + pause));
        self.refused.store(true, Ordering::Release);
        pause
    }

    /// A good answer ends the growth of the account pauses.
    pub(crate) fn account_answered(&self) {
        if !self.refused.load(Ordering::Acquire) {
            return;
        }
        let mut account = self.account.lock().unwrap_or_else(|p| p.into_inner());
        if account.is_some_and(|(_, until)| Instant::now() >= until) {
            *account = None;
            self.refused.store(false, Ordering::Release);
        }
    }
}

/// The first pause of an endpoint whose credentials or payment were refused: long, as a key
/// is not fixed in seconds, and short enough that a key fixed by the operator serves again
/// soon.
pub(crate) const ACCOUNT_PAUSE: Duration = Duration::from_secs(60);

/// The longest pause of an endpoint whose credentials or payment keep being refused.
pub(crate) const MAX_ACCOUNT_PAUSE: Duration = Duration::from_secs(15 * 60);

/// The position of the endpoint named `id`, if configured.
pub(crate) fn position(slots: &[Slot], id: &str) -> Option<usize> {
    slots.iter().position(|slot| slot.id().as_str() == id)
}

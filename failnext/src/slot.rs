//! `Slot`: everything failnext keeps about one configured endpoint.

use url::Url;

use crate::cooldown::Cooldown;
use crate::destination::Destination;
use crate::endpoint::{Endpoint, EndpointId};
use crate::health::Health;
use crate::latency::Latency;
use crate::recent::Recent;

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
    pub(crate) keys: crate::metrics::Keys,
}

impl Slot {
    /// The slot of `endpoint`, whose URL passed validation as `url`.
    pub(crate) fn new(endpoint: &Endpoint, url: Url, cooldown: Cooldown) -> Slot {
        Slot {
            #[cfg(feature = "metrics")]
            keys: crate::metrics::Keys::new(endpoint.id()),
            id: endpoint.id().clone(),
            destination: Destination::new(url),
            health: Health::new(cooldown),
            latency: Latency::default(),
            recent: None,
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
}

/// The position of the endpoint named `id`, if configured.
pub(crate) fn position(slots: &[Slot], id: &str) -> Option<usize> {
    slots.iter().position(|slot| slot.id().as_str() == id)
}

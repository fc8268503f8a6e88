//! `ConfigError`: a configuration that cannot be built, naming the endpoint and the rule.

use std::error::Error as StdError;
use std::fmt;

use crate::request::endpoint::EndpointId;
use crate::request::url_rules::UrlRule;

/// A configuration that cannot be built, with the endpoint (by id or index) and the rule.
///
/// Returned by [`FailoverBuilder::build`](crate::FailoverBuilder::build), by
/// [`validate_endpoints`](crate::validate_endpoints), and (feature `alloy`) by
/// `FailoverTransportBuilder::lacks` for an id no endpoint has. The message never contains a URL's path,
/// query or userinfo.
///
/// ```
/// use failnext::{Endpoint, Failover};
///
/// let err = Failover::builder([Endpoint::new("primary", "ftp://files.example/rpc")])
///     .build()
///     .unwrap_err();
/// assert_eq!(err.endpoint_id().map(|id| id.as_str()), Some("primary"));
/// assert!(err.to_string().contains("scheme"));
/// ```
pub struct ConfigError {
    kind: ConfigErrorKind,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum ConfigErrorKind {
    #[error("no endpoints configured")]
    NoEndpoints,
    #[error("endpoint at index {index} has an empty id")]
    EmptyId { index: usize },
    #[error("endpoint at index {index} repeats the id {id:?}")]
    DuplicateId { index: usize, id: EndpointId },
    // `shown` is the redacted URL; the rule's message never quotes the URL.
    #[error("endpoint {id:?} has an invalid url \"{shown}\": {rule}")]
    Url { index: usize, id: EndpointId, shown: String, rule: UrlRule },
    #[error("cooldown threshold must be at least 1 (use Cooldown::disabled())")]
    CooldownThreshold,
    #[error("cooldown duration must be non-zero (use Cooldown::disabled())")]
    CooldownDuration,
    #[error("attempt timeout must be non-zero")]
    AttemptTimeout,
    #[error("deadline must be non-zero")]
    Deadline,
    #[error("failover budget: the ratio must be finite and non-negative, the balance at least 1")]
    Budget,
    #[error("hedge percentile must be above 0 and below 1")]
    HedgePercentile,
    #[error("hedge floor (at_least) must not exceed its ceiling (at_most)")]
    HedgeBounds,
    #[error("no endpoint has the id {id:?}")]
    UnknownEndpoint { id: EndpointId },
    #[error(
        "endpoint {id:?} is named by broadcast_to but not by writes_to: writes only ever reach the writes_to endpoints"
    )]
    BroadcastOutsideWrites { id: EndpointId },
}

impl ConfigError {
    /// No configured endpoint has the id `id` (an option that names one by id).
    #[cfg_attr(not(feature = "alloy"), allow(dead_code, reason = "used by the alloy transport"))]
    pub(crate) fn unknown_endpoint(id: EndpointId) -> ConfigError {
        ConfigErrorKind::UnknownEndpoint { id }.into()
    }

    /// A fan-out endpoint that is not a write endpoint.
    #[cfg_attr(not(feature = "alloy"), allow(dead_code, reason = "used by the alloy transport"))]
    pub(crate) fn broadcast_outside_writes(id: EndpointId) -> ConfigError {
        ConfigErrorKind::BroadcastOutsideWrites { id }.into()
    }

    /// The id of the endpoint the error is about, when it has a non-empty id.
    pub fn endpoint_id(&self) -> Option<&EndpointId> {
        match &self.kind {
            ConfigErrorKind::DuplicateId { id, .. }
            | ConfigErrorKind::Url { id, .. }
            | ConfigErrorKind::UnknownEndpoint { id }
            | ConfigErrorKind::BroadcastOutsideWrites { id } => Some(id),
            _ => None,
        }
    }

    /// The position, in the configured list, of the endpoint the error is about.
    pub fn endpoint_index(&self) -> Option<usize> {
        match &self.kind {
            ConfigErrorKind::EmptyId { index }
            | ConfigErrorKind::DuplicateId { index, .. }
            | ConfigErrorKind::Url { index, .. } => Some(*index),
            _ => None,
        }
    }
}

impl From<ConfigErrorKind> for ConfigError {
    fn from(kind: ConfigErrorKind) -> Self {
        ConfigError { kind }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.kind, f)
    }
}

impl fmt::Debug for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("failnext::ConfigError")
            .field("kind", &self.kind)
            .field("message", &format_args!("{self}"))
            .finish()
    }
}

/// The source is the URL parser's error, for a URL that does not parse; nothing otherwise.
impl StdError for ConfigError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match &self.kind {
            ConfigErrorKind::Url { rule: UrlRule::Parse(e), .. } => Some(e),
            _ => None,
        }
    }
}

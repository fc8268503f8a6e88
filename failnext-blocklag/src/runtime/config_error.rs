//! `ConfigError`: why a monitor cannot be built.

use std::fmt;

use failnext::EndpointId;

/// A [`Monitor`](crate::Monitor) configuration that cannot be built.
///
/// When an endpoint breaks one of the rules shared with failnext, the
/// [`source`](std::error::Error::source) is the [`failnext::ConfigError`] naming the endpoint and the
/// rule. No message contains a URL's path, query or userinfo.
#[derive(thiserror::Error)]
#[error(transparent)]
pub struct ConfigError {
    kind: ConfigErrorKind,
}

/// The message of each kind, and its cause as the [`source`](std::error::Error::source).
#[derive(Debug, thiserror::Error)]
enum ConfigErrorKind {
    #[error("invalid endpoint configuration")]
    Endpoints(#[source] failnext::ConfigError),
    #[error("probe timeout must be non-zero")]
    ProbeTimeout,
    #[error("grace must be non-zero")]
    Grace,
    #[error("max age must be non-zero")]
    MaxAge,
    #[error("readmit_after must be at least 1 good check")]
    ReadmitAfter,
    #[error("reference: Corroborated(k) needs k of at least 1 provider")]
    Reference,
    #[error("stall_after must be at least 1 block time")]
    StallAfter,
    #[error("max_head_age must be greater than zero")]
    MaxHeadAge,
    #[error("agreement must be at least 1 provider")]
    Agreement,
    /// Holds no URL: stripped on construction.
    #[error("the default probe client could not be built")]
    Client(#[source] reqwest::Error),
}

// ===== impl ConfigError =====

impl ConfigError {
    pub(crate) fn endpoints(error: failnext::ConfigError) -> Self {
        ConfigError { kind: ConfigErrorKind::Endpoints(error) }
    }

    pub(crate) fn probe_timeout() -> Self {
        ConfigError { kind: ConfigErrorKind::ProbeTimeout }
    }

    pub(crate) fn grace() -> Self {
        ConfigError { kind: ConfigErrorKind::Grace }
    }

    pub(crate) fn max_age() -> Self {
        ConfigError { kind: ConfigErrorKind::MaxAge }
    }

    pub(crate) fn readmit_after() -> Self {
        ConfigError { kind: ConfigErrorKind::ReadmitAfter }
    }

    pub(crate) fn reference() -> Self {
        ConfigError { kind: ConfigErrorKind::Reference }
    }

    pub(crate) fn stall_after() -> Self {
        ConfigError { kind: ConfigErrorKind::StallAfter }
    }

    pub(crate) fn max_head_age() -> Self {
        ConfigError { kind: ConfigErrorKind::MaxHeadAge }
    }

    pub(crate) fn agreement() -> Self {
        ConfigError { kind: ConfigErrorKind::Agreement }
    }

    pub(crate) fn client(error: reqwest::Error) -> Self {
        ConfigError { kind: ConfigErrorKind::Client(error.without_url()) }
    }

    /// The id of the endpoint that breaks a rule, when the error is about one with a non-empty
    /// id (as [`failnext::ConfigError::endpoint_id`]).
    pub fn endpoint_id(&self) -> Option<&EndpointId> {
        match &self.kind {
            ConfigErrorKind::Endpoints(e) => e.endpoint_id(),
            _ => None,
        }
    }

    /// The position, in the configured list, of the endpoint that breaks a rule (as
    /// [`failnext::ConfigError::endpoint_index`]).
    pub fn endpoint_index(&self) -> Option<usize> {
        match &self.kind {
            ConfigErrorKind::Endpoints(e) => e.endpoint_index(),
            _ => None,
        }
    }
}

impl fmt::Debug for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("failnext_blocklag::ConfigError");
        match &self.kind {
            ConfigErrorKind::Endpoints(e) => d.field("endpoints", e),
            ConfigErrorKind::ProbeTimeout => d.field("kind", &format_args!("ProbeTimeout")),
            ConfigErrorKind::Grace => d.field("kind", &format_args!("Grace")),
            ConfigErrorKind::MaxAge => d.field("kind", &format_args!("MaxAge")),
            ConfigErrorKind::ReadmitAfter => d.field("kind", &format_args!("ReadmitAfter")),
            ConfigErrorKind::Reference => d.field("kind", &format_args!("Reference")),
            ConfigErrorKind::StallAfter => d.field("kind", &format_args!("StallAfter")),
            ConfigErrorKind::MaxHeadAge => d.field("kind", &format_args!("MaxHeadAge")),
            ConfigErrorKind::Agreement => d.field("kind", &format_args!("Agreement")),
            ConfigErrorKind::Client(e) => d.field("client", e),
        };
        d.finish()
    }
}

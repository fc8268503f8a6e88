//! Endpoint identity, configuration and redaction.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use crate::request::url_rules::raw_has_host;

/// The stable name of a configured endpoint.
///
/// Ids are how the application talks about providers: in eligibility, exclusion, preference,
/// events, [`ServedBy`](crate::ServedBy) and errors. They are never secret, unlike URLs, so
/// failnext prints ids and never URLs.
///
/// Cloning is a reference-count increment.
///
/// ```
/// use failnext::EndpointId;
///
/// let id = EndpointId::from("primary");
/// assert_eq!(id.as_str(), "primary");
/// assert_eq!(&*id, "primary");
/// assert_eq!(id.to_string(), "primary");
/// ```
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EndpointId(Arc<str>);

/// One provider: an id and the complete URL every attempt to it is sent to.
///
/// The URL is the whole destination, not a base: failnext does not join paths or merge query
/// strings. It is validated when a [`Failover`](crate::Failover) (or a monitor) is built, not
/// here, so constructing an `Endpoint` never fails.
///
/// URLs often carry API keys in their path, query or userinfo. `Debug` and `Display` show at
/// most `scheme://host[:port]/…`:
///
/// ```
/// use failnext::Endpoint;
///
/// let ep = Endpoint::new("primary", "https://eth.example/v2/SECRET?key=SECRET");
/// assert_eq!(ep.to_string(), "primary (https://eth.example/…)");
/// assert!(!format!("{ep:?}").contains("SECRET"));
/// assert_eq!(ep.url(), "https://eth.example/v2/SECRET?key=SECRET");
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Endpoint {
    id: EndpointId,
    url: Arc<str>,
}

// ===== impl EndpointId =====

impl EndpointId {
    /// The id's shared string (a reference count, not a copy).
    #[cfg_attr(not(feature = "metrics"), allow(dead_code, reason = "metric labels"))]
    pub(crate) fn shared(&self) -> Arc<str> {
        Arc::clone(&self.0)
    }
}

impl EndpointId {
    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Deref for EndpointId {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for EndpointId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for EndpointId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<&str> for EndpointId {
    fn from(id: &str) -> Self {
        EndpointId(Arc::from(id))
    }
}

impl From<String> for EndpointId {
    fn from(id: String) -> Self {
        EndpointId(Arc::from(id))
    }
}

impl From<&String> for EndpointId {
    fn from(id: &String) -> Self {
        EndpointId(Arc::from(id.as_str()))
    }
}

impl From<&EndpointId> for EndpointId {
    fn from(id: &EndpointId) -> Self {
        id.clone()
    }
}

impl PartialEq<str> for EndpointId {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for EndpointId {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl fmt::Display for EndpointId {
    /// The id itself; width, fill and alignment are honoured (`{id:<8}` pads).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.0)
    }
}

impl fmt::Debug for EndpointId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

// ===== impl Endpoint =====

impl Endpoint {
    /// An endpoint named `id` whose attempts go to `url`.
    ///
    /// Nothing is checked here; [`FailoverBuilder::build`](crate::FailoverBuilder::build)
    /// validates the id and the URL.
    pub fn new(id: impl Into<EndpointId>, url: impl Into<String>) -> Self {
        let url: String = url.into();
        Endpoint { id: id.into(), url: Arc::from(url) }
    }

    /// The endpoint's id.
    pub fn id(&self) -> &EndpointId {
        &self.id
    }

    /// The configured URL, verbatim. It may hold secrets: do not log it.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The URL with userinfo, path and query elided (`scheme://host[:port]/…`), safe to print
    /// in logs and dashboards.
    ///
    /// ```
    /// let ep = failnext::Endpoint::new("a", "https://user:pw@eth.example:8443/v2/KEY");
    /// assert_eq!(ep.redacted_url().to_string(), "https://eth.example:8443/…");
    /// ```
    pub fn redacted_url(&self) -> impl fmt::Display + '_ {
        RedactedUrl(&self.url)
    }
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint")
            .field("id", &self.id)
            .field("url", &format_args!("\"{}\"", self.redacted_url()))
            .finish()
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.id, self.redacted_url())
    }
}

/// Displays a URL as `scheme://host[:port]/…` at most: never the userinfo, path or query.
#[derive(Clone, Copy)]
pub(crate) struct RedactedUrl<'a>(pub(crate) &'a str);

impl fmt::Display for RedactedUrl<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The `url` crate repairs `https:///KEY/rpc` into host `key`: show a host only when the
        // text really has one, as validation requires.
        match url::Url::parse(self.0.trim()) {
            Ok(url) if url.has_host() && raw_has_host(self.0.trim()) => {
                write!(f, "{}://{}", url.scheme(), url.host_str().unwrap_or_default())?;
                if let Some(port) = url.port() {
                    write!(f, ":{port}")?;
                }
                let bare = url.path() == "/" && url.query().is_none() && url.fragment().is_none();
                f.write_str(if bare { "/" } else { "/…" })
            }
            // Without a host, what parsed as a scheme may be a username (`key:secret@host`).
            Ok(_) => f.write_str("<url without host>"),
            Err(_) => f.write_str("<unparsable url>"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redact(url: &str) -> String {
        RedactedUrl(url).to_string()
    }

    #[test]
    fn redaction_keeps_scheme_host_and_port_only() {
        assert_eq!(redact("https://user:pw@h.example:8443/k/KEY?x=KEY"), "https://h.example:8443/…");
        assert_eq!(redact("http://127.0.0.1:80/"), "http://127.0.0.1/");
        assert_eq!(redact("http://[::1]:8545"), "http://[::1]:8545/");
        assert_eq!(redact("https://h/?KEY"), "https://h/…");
        assert_eq!(redact("not a url KEY"), "<unparsable url>");
        assert_eq!(redact("mailto:KEY@x"), "<url without host>");
        assert_eq!(redact("KEY:secret@host/x"), "<url without host>");
        for hostless in ["https:///KEY/rpc", "https:KEY/rpc", "https:/KEY/rpc", "http:\\\\KEY\\rpc"] {
            assert_eq!(redact(hostless), "<url without host>", "{hostless}");
        }
    }

    #[test]
    fn endpoint_id_compares_with_str() {
        let id = EndpointId::from("a");
        assert_eq!(id, "a");
        assert_ne!(id, EndpointId::from("A"));
        assert_eq!(format!("{id:?}"), "\"a\"");
        assert_eq!(format!("[{id:<3}]"), "[a  ]");
    }
}

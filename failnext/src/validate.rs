//! Configuration validation: the endpoint rules shared with failnext-blocklag, and `ConfigError`.

use std::collections::HashSet;
use std::error::Error as StdError;
use std::fmt;

use url::Url;

use crate::endpoint::{Endpoint, EndpointId};

/// A configuration that cannot be built, with the endpoint (by id or index) and the rule.
///
/// Returned by [`FailoverBuilder::build`](crate::FailoverBuilder::build) and by
/// [`validate_endpoints`]. The message never contains a URL's path, query or userinfo.
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

#[derive(Debug)]
enum ConfigErrorKind {
    NoEndpoints,
    EmptyId { index: usize },
    DuplicateId { index: usize, id: EndpointId },
    Url { index: usize, id: EndpointId, shown: String, rule: UrlRule },
    CooldownThreshold,
    CooldownDuration,
    AttemptTimeout,
}

#[derive(Debug)]
enum UrlRule {
    Whitespace,
    BadEscape,
    Parse(url::ParseError),
    NotAbsolute,
    Scheme,
    NoHost,
    Fragment,
}

/// An endpoint that passed validation, ready for attempts.
#[derive(Debug)]
pub(crate) struct ValidEndpoint {
    /// The parsed URL as configured, userinfo included.
    pub(crate) configured: Url,
    /// The parsed destination, with any userinfo removed.
    pub(crate) url: Url,
    /// `host[:port]` of `url`, as the `Host` header would carry it.
    pub(crate) authority: String,
    /// Userinfo from the configured URL, decoded, for HTTP Basic authentication.
    pub(crate) userinfo: Option<(String, Option<String>)>,
}

/// Checks endpoints by the rules failnext applies when it is built.
///
/// The rules, checked in configured order, all rules of one endpoint before the next:
///
/// - the list is not empty;
/// - every id is non-empty and unique (exact, case-sensitive comparison);
/// - every URL is absolute, parses, uses `http` or `https` (any case), has a non-empty host,
///   has no leading or trailing whitespace, no control character, no malformed `%` escape and
///   no `#` anywhere (not even an empty fragment). Query strings and userinfo are allowed;
///   the same URL under two ids gives two independent endpoints.
///
/// Returns the parsed URLs, in the same order, exactly as configured (userinfo included:
/// failnext itself sends userinfo as HTTP Basic `Authorization` and removes it from the URL of
/// each attempt; a companion crate that probes the URL should do the same). Companion crates (failnext-blocklag) call this
/// so that one set of endpoints is accepted or rejected the same way everywhere.
///
/// # Errors
///
/// The first rule broken, as a [`ConfigError`] naming the endpoint by id (or by index when its
/// id is empty) and the rule.
pub fn validate_endpoints(endpoints: &[Endpoint]) -> Result<Vec<Url>, ConfigError> {
    Ok(validate(endpoints)?.into_iter().map(|ep| ep.configured).collect())
}

pub(crate) fn validate(endpoints: &[Endpoint]) -> Result<Vec<ValidEndpoint>, ConfigError> {
    if endpoints.is_empty() {
        return Err(ConfigErrorKind::NoEndpoints.into());
    }
    let mut seen = HashSet::with_capacity(endpoints.len());
    let mut valid = Vec::with_capacity(endpoints.len());
    for (index, ep) in endpoints.iter().enumerate() {
        let id = ep.id();
        if id.is_empty() {
            return Err(ConfigErrorKind::EmptyId { index }.into());
        }
        if !seen.insert(id.as_str()) {
            return Err(ConfigErrorKind::DuplicateId { index, id: id.clone() }.into());
        }
        let checked = check_url(ep.url()).map_err(|rule| ConfigErrorKind::Url {
            index,
            id: id.clone(),
            shown: ep.redacted_url().to_string(),
            rule,
        })?;
        valid.push(checked);
    }
    Ok(valid)
}

fn check_url(raw: &str) -> Result<ValidEndpoint, UrlRule> {
    if raw.trim() != raw || raw.chars().any(|c| c.is_control()) {
        return Err(UrlRule::Whitespace);
    }
    if has_bad_escape(raw) {
        return Err(UrlRule::BadEscape);
    }
    let mut url = match Url::parse(raw) {
        Ok(url) => url,
        Err(url::ParseError::RelativeUrlWithoutBase) => return Err(UrlRule::NotAbsolute),
        Err(url::ParseError::EmptyHost) => return Err(UrlRule::NoHost),
        Err(e) => return Err(UrlRule::Parse(e)),
    };
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err(UrlRule::Scheme);
    }
    // The `url` crate repairs `https:host` and `https:///host`; the reference rejects both, so
    // the authority is checked on the raw text.
    if !raw_has_host(raw) {
        return Err(UrlRule::NoHost);
    }
    if raw.contains('#') {
        return Err(UrlRule::Fragment);
    }
    let configured = url.clone();
    let userinfo = take_userinfo(&mut url);
    let host = url.host_str().ok_or(UrlRule::NoHost)?;
    let authority = match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    };
    Ok(ValidEndpoint { configured, url, authority, userinfo })
}

/// Whether the text after `scheme:` is `//` followed by a non-empty host.
pub(crate) fn raw_has_host(raw: &str) -> bool {
    let Some((_, rest)) = raw.split_once(':') else { return false };
    let Some(rest) = rest.strip_prefix("//") else { return false };
    let authority = rest.split(['/', '?', '#', '\\']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    let host =
        if host_port.starts_with('[') { host_port } else { host_port.split(':').next().unwrap_or_default() };
    !host.is_empty()
}

fn has_bad_escape(raw: &str) -> bool {
    let bytes = raw.as_bytes();
    bytes.iter().enumerate().any(|(i, &b)| {
        b == b'%'
            && !(bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
    })
}

fn take_userinfo(url: &mut Url) -> Option<(String, Option<String>)> {
    if url.username().is_empty() && url.password().is_none() {
        return None;
    }
    let decode = |s: &str| percent_decode(s);
    let user = decode(url.username());
    let pass = url.password().map(decode);
    // Both setters only fail for URLs without a host, which were rejected above.
    let _ = url.set_username("");
    let _ = url.set_password(None);
    Some((user, pass))
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |j: usize| bytes.get(j).and_then(|b| (*b as char).to_digit(16));
        match (bytes[i], hex(i + 1), hex(i + 2)) {
            (b'%', Some(hi), Some(lo)) => {
                // hi and lo are single hex digits, so the value fits in a byte.
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

// ===== impl ConfigError =====

impl ConfigError {
    pub(crate) fn cooldown_threshold() -> Self {
        ConfigErrorKind::CooldownThreshold.into()
    }

    pub(crate) fn cooldown_duration() -> Self {
        ConfigErrorKind::CooldownDuration.into()
    }

    pub(crate) fn attempt_timeout() -> Self {
        ConfigErrorKind::AttemptTimeout.into()
    }

    /// The id of the endpoint the error is about, when it has a non-empty id.
    pub fn endpoint_id(&self) -> Option<&EndpointId> {
        match &self.kind {
            ConfigErrorKind::DuplicateId { id, .. } | ConfigErrorKind::Url { id, .. } => Some(id),
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
        match &self.kind {
            ConfigErrorKind::NoEndpoints => f.write_str("no endpoints configured"),
            ConfigErrorKind::EmptyId { index } => {
                write!(f, "endpoint at index {index} has an empty id")
            }
            ConfigErrorKind::DuplicateId { index, id } => {
                write!(f, "endpoint at index {index} repeats the id {id:?}")
            }
            ConfigErrorKind::Url { id, shown, rule, .. } => {
                write!(f, "endpoint {id:?} has an invalid url \"{shown}\": ")?;
                match rule {
                    UrlRule::Whitespace => {
                        f.write_str("leading or trailing whitespace or a control character")
                    }
                    UrlRule::BadEscape => f.write_str("malformed percent escape"),
                    UrlRule::Parse(_) => f.write_str("it does not parse"),
                    UrlRule::NotAbsolute => f.write_str("not absolute (no scheme)"),
                    // The scheme is not quoted: in `key:secret@host` it would be the key.
                    UrlRule::Scheme => f.write_str("scheme is not http or https"),
                    UrlRule::NoHost => f.write_str("no host"),
                    UrlRule::Fragment => f.write_str("contains '#' (fragments are not allowed)"),
                }
            }
            ConfigErrorKind::CooldownThreshold => {
                f.write_str("cooldown threshold must be at least 1 (use Cooldown::disabled())")
            }
            ConfigErrorKind::CooldownDuration => {
                f.write_str("cooldown duration must be non-zero (use Cooldown::disabled())")
            }
            ConfigErrorKind::AttemptTimeout => f.write_str("attempt timeout must be non-zero"),
        }
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

impl StdError for ConfigError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match &self.kind {
            ConfigErrorKind::Url { rule: UrlRule::Parse(e), .. } => Some(e),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(url: &str) -> Result<ValidEndpoint, String> {
        check_url(url).map_err(|r| format!("{r:?}"))
    }

    #[test]
    fn rejects_what_the_reference_rejects() {
        for bad in [
            "://",
            "https://host/rpc%zz",
            " https://host",
            "https://host ",
            "https://ho\nst/",
            "u1.test/rpc",
            "//host/rpc",
            "ftp://u1.test/rpc",
            "ws://host",
            "https:///rpc",
            "https:host",
            "https://:8080/rpc",
            "https://u1.test/rpc#fragment",
            "https://h/p#",
            "https://h/p?#",
            "http://h:99999/",
        ] {
            assert!(check(bad).is_err(), "{bad} was accepted");
        }
    }

    #[test]
    fn accepts_what_the_reference_accepts() {
        for good in [
            "HTTPS://Host.Example/rpc",
            "http://[::1]:8545",
            "https://p.test/rpc?key=abc",
            "https://user:pass@h/rpc",
            "http://127.0.0.1:8545/a b",
        ] {
            assert!(check(good).is_ok(), "{good} was rejected");
        }
    }

    #[test]
    fn userinfo_is_moved_out_of_the_url() {
        let ep = check("https://us%40er:p%3Ass@h.example:8443/rpc").unwrap();
        assert_eq!(ep.url.as_str(), "https://h.example:8443/rpc");
        assert_eq!(ep.authority, "h.example:8443");
        assert_eq!(ep.userinfo, Some(("us@er".to_owned(), Some("p:ss".to_owned()))));
    }

    #[test]
    fn authority_omits_default_port() {
        assert_eq!(check("https://h.example:443/rpc").unwrap().authority, "h.example");
        assert_eq!(check("http://[::1]:8545").unwrap().authority, "[::1]:8545");
    }
}

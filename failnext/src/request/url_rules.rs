//! The rules an endpoint URL must meet, checked on its text and on its parsed form.
//!
//! Pure: no endpoint, no id. `validate` names the endpoint that breaks a rule; `endpoint`
//! uses [`raw_has_host`] so that redaction and validation agree on what a host is.

use url::Url;

/// The first rule a URL breaks. The message names the rule and never quotes the URL.
#[derive(Debug, thiserror::Error)]
pub(crate) enum UrlRule {
    #[error("leading or trailing whitespace or a control character")]
    Whitespace,
    #[error("malformed percent escape")]
    BadEscape,
    #[error("it does not parse")]
    Parse(#[source] url::ParseError),
    #[error("not absolute (no scheme)")]
    NotAbsolute,
    // The scheme is not quoted: in `key:secret@host` it would be the key.
    #[error("scheme is not http or https")]
    Scheme,
    #[error("no host")]
    NoHost,
    #[error("contains '#' (fragments are not allowed)")]
    Fragment,
}

/// Parses `raw` as an endpoint URL, exactly as configured (userinfo included), or names the
/// first rule it breaks, in this order: whitespace or control characters, `%` escapes,
/// parsing, scheme, host, fragment.
///
/// The destination (`destination.rs`) relies on what this guarantees: a URL that passes has
/// a host, so its userinfo can be removed.
pub(crate) fn check_url(raw: &str) -> Result<Url, UrlRule> {
    if raw.trim() != raw || raw.chars().any(|c| c.is_control()) {
        return Err(UrlRule::Whitespace);
    }
    if has_bad_escape(raw) {
        return Err(UrlRule::BadEscape);
    }
    let url = match Url::parse(raw) {
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
    if url.host_str().is_none() {
        return Err(UrlRule::NoHost);
    }
    Ok(url)
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

/// Whether a `%` is not followed by two hex digits.
fn has_bad_escape(raw: &str) -> bool {
    let bytes = raw.as_bytes();
    bytes.iter().enumerate().any(|(i, &b)| {
        b == b'%'
            && !(bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
            assert!(check_url(bad).is_err(), "{bad} was accepted");
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
            assert!(check_url(good).is_ok(), "{good} was rejected");
        }
    }
}

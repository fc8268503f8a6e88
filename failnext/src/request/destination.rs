//! Where attempts to one endpoint go: URL, `Host`, userinfo credentials and the deadline.

use std::io::Write as _;
use std::time::Duration;

use base64::Engine as _;
use http::HeaderValue;
use http::header::{AUTHORIZATION, HOST};
use reqwest::Request;
use url::Url;

/// One endpoint's destination, computed once from its validated URL.
#[derive(Debug)]
pub(crate) struct Destination {
    /// The configured URL without its userinfo.
    url: Url,
    /// The endpoint's `host[:port]`, for a `Host` header that follows the endpoint.
    host: Option<HeaderValue>,
    /// `Basic` credentials from the configured URL's userinfo.
    authorization: Option<HeaderValue>,
}

/// What to do with the request's `Host` header on each attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HostRule {
    /// No `Host` header: leave it absent; the client derives it from each endpoint's URL.
    Absent,
    /// The header equals the original URL's authority: it follows each endpoint.
    Follow,
    /// A custom value: keep it on every attempt.
    Keep,
}

impl Destination {
    /// The destination of a URL that passed validation (so it has a host): its userinfo, if
    /// any, moves out of the URL into an `Authorization` header.
    pub(crate) fn new(mut url: Url) -> Destination {
        let authorization = take_userinfo(&mut url).map(|(user, pass)| {
            let mut value = basic_auth(&user, pass.as_deref());
            value.set_sensitive(true);
            value
        });
        Destination { host: HeaderValue::from_str(&authority(&url)).ok(), url, authorization }
    }

    /// The endpoint's destination, without userinfo.
    pub(crate) fn url(&self) -> &Url {
        &self.url
    }

    /// Points `req` at this endpoint. Only the URL, `Host` (when it follows the endpoint),
    /// `Authorization` (when the endpoint has userinfo) and the timeout change.
    pub(crate) fn retarget(&self, req: &mut Request, host: HostRule, attempt_timeout: Option<Duration>) {
        if *req.url() != self.url {
            *req.url_mut() = self.url.clone();
        }
        if let (HostRule::Follow, Some(value)) = (host, &self.host) {
            req.headers_mut().insert(HOST, value.clone());
        }
        if let Some(value) = &self.authorization {
            req.headers_mut().insert(AUTHORIZATION, value.clone());
        }
        if let Some(limit) = attempt_timeout {
            let timeout = req.timeout_mut();
            *timeout = Some(timeout.map_or(limit, |own| own.min(limit)));
        }
    }
}

impl HostRule {
    /// Classifies the caller's request before any attempt changes it.
    pub(crate) fn of(req: &Request) -> HostRule {
        match req.headers().get(HOST) {
            None => HostRule::Absent,
            Some(value) if is_authority_of(value.as_bytes(), req.url()) => HostRule::Follow,
            Some(_) => HostRule::Keep,
        }
    }
}

/// `host[:port]` of `url`, as the `Host` header would carry it (port only when explicit).
fn authority(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

/// Exact comparison of a `Host` value with `host[:port]` of `url` (port only when explicit).
fn is_authority_of(value: &[u8], url: &Url) -> bool {
    let Some(host) = url.host_str() else { return false };
    let Some(rest) = value.strip_prefix(host.as_bytes()) else { return false };
    match url.port() {
        None => rest.is_empty(),
        Some(port) => rest.strip_prefix(b":").is_some_and(|p| is_decimal_of(p, port)),
    }
}

/// Whether `text` is exactly the decimal digits of `port`, compared without allocating.
fn is_decimal_of(text: &[u8], port: u16) -> bool {
    let mut buf = [0u8; 5];
    let len = {
        let mut rest = &mut buf[..];
        // A u16 has at most 5 digits: the write always fits.
        let _ = write!(rest, "{port}");
        5 - rest.len()
    };
    text == &buf[..len]
}

/// Removes the userinfo from `url` and returns it percent-decoded, as `(user, password)`.
fn take_userinfo(url: &mut Url) -> Option<(String, Option<String>)> {
    if url.username().is_empty() && url.password().is_none() {
        return None;
    }
    let decode = |s: &str| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned();
    let user = decode(url.username());
    let pass = url.password().map(decode);
    // Both setters only fail for URLs without a host, which validation rejects.
    let _ = url.set_username("");
    let _ = url.set_password(None);
    Some((user, pass))
}

fn basic_auth(user: &str, pass: Option<&str>) -> HeaderValue {
    let credentials = format!("{user}:{}", pass.unwrap_or_default());
    let encoded = format!("Basic {}", base64(credentials.as_bytes()));
    // Base64 output and the "Basic " prefix are visible ASCII, always a valid header value.
    HeaderValue::from_str(&encoded).unwrap_or_else(|_| HeaderValue::from_static("Basic"))
}

/// Standard base64 with padding (RFC 4648, section 4), as Basic authentication requires.
fn base64(input: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(input)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn destination(url: &str) -> Destination {
        Destination::new(url.parse().unwrap())
    }

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (input, expected) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(input.as_bytes()), expected);
        }
        assert_eq!(basic_auth("Aladdin", Some("open sesame")), "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
        assert_eq!(basic_auth("user", None), "Basic dXNlcjo=");
    }

    #[test]
    fn userinfo_is_moved_out_of_the_url() {
        let d = destination("https://us%40er:p%3Ass@h.example:8443/rpc");
        assert_eq!(d.url.as_str(), "https://h.example:8443/rpc");
        assert_eq!(d.host.as_ref().unwrap(), "h.example:8443");
        // "us@er:p:ss"
        assert_eq!(d.authorization.as_ref().unwrap(), "Basic dXNAZXI6cDpzcw==");
        assert!(d.authorization.as_ref().unwrap().is_sensitive());
        assert!(destination("https://h.example/rpc").authorization.is_none());
    }

    #[test]
    fn authority_omits_default_port() {
        assert_eq!(destination("https://h.example:443/rpc").host.unwrap(), "h.example");
        assert_eq!(destination("http://[::1]:8545").host.unwrap(), "[::1]:8545");
    }

    #[test]
    fn host_rule_compares_exactly_with_url_authority() {
        let url: Url = "http://127.0.0.1:8545/rpc".parse().unwrap();
        assert!(is_authority_of(b"127.0.0.1:8545", &url));
        assert!(!is_authority_of(b"127.0.0.1", &url));
        assert!(!is_authority_of(b"127.0.0.1:85450", &url));
        assert!(!is_authority_of(b"127.0.0.1:08545", &url));
        let url: Url = "https://h.example/rpc".parse().unwrap();
        assert!(is_authority_of(b"h.example", &url));
        assert!(!is_authority_of(b"h.example:443", &url));
        assert!(!is_authority_of(b"H.example", &url));
        for port in [1u16, 9, 10, 443, 8545, 65535] {
            assert!(is_decimal_of(port.to_string().as_bytes(), port));
            assert!(!is_decimal_of(format!("0{port}").as_bytes(), port));
        }
    }
}

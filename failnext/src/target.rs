//! The per-attempt destination: URL, `Host`, userinfo credentials and the attempt deadline.

use std::time::Duration;

use http::HeaderValue;
use http::header::{AUTHORIZATION, HOST};
use reqwest::Request;
use url::Url;

use crate::cooldown::Health;
use crate::validate::ValidEndpoint;

/// Where attempts to one endpoint go, and that endpoint's cooldown state.
#[derive(Debug)]
pub(crate) struct Target {
    url: Url,
    /// The endpoint's `host[:port]`, for a `Host` header that follows the endpoint.
    host: Option<HeaderValue>,
    /// `Basic` credentials from the configured URL's userinfo.
    authorization: Option<HeaderValue>,
    pub(crate) health: Health,
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

impl Target {
    pub(crate) fn new(valid: ValidEndpoint) -> Target {
        let authorization = valid.userinfo.map(|(user, pass)| {
            let mut value = basic_auth(&user, pass.as_deref());
            value.set_sensitive(true);
            value
        });
        Target {
            host: HeaderValue::from_str(&valid.authority).ok(),
            url: valid.url,
            authorization,
            health: Health::default(),
        }
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

/// Exact comparison of a `Host` value with `host[:port]` of `url` (port only when explicit).
fn is_authority_of(value: &[u8], url: &Url) -> bool {
    let Some(host) = url.host_str() else { return false };
    let Some(rest) = value.strip_prefix(host.as_bytes()) else { return false };
    match url.port() {
        None => rest.is_empty(),
        Some(port) => rest.strip_prefix(b":").is_some_and(|p| p == decimal(port).as_slice()),
    }
}

/// The decimal digits of `n`, without allocating.
fn decimal(mut n: u16) -> DecimalDigits {
    let mut buf = [0u8; 5];
    let mut start = buf.len();
    loop {
        start -= 1;
        // `n % 10` is a single digit, so the cast cannot truncate.
        buf[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    DecimalDigits { buf, start }
}

struct DecimalDigits {
    buf: [u8; 5],
    start: usize,
}

impl DecimalDigits {
    fn as_slice(&self) -> &[u8] {
        &self.buf[self.start..]
    }
}

fn basic_auth(user: &str, pass: Option<&str>) -> HeaderValue {
    let mut raw = Vec::with_capacity(user.len() + 1 + pass.map_or(0, str::len));
    raw.extend_from_slice(user.as_bytes());
    raw.push(b':');
    if let Some(pass) = pass {
        raw.extend_from_slice(pass.as_bytes());
    }
    let encoded = format!("Basic {}", base64(&raw));
    // Base64 output and the "Basic " prefix are visible ASCII, always a valid header value.
    HeaderValue::from_str(&encoded).unwrap_or_else(|_| HeaderValue::from_static("Basic"))
}

fn base64(input: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }

    #[test]
    fn host_rule_compares_exactly_with_url_authority() {
        let url: Url = "http://127.0.0.1:8545/rpc".parse().unwrap();
        assert!(is_authority_of(b"127.0.0.1:8545", &url));
        assert!(!is_authority_of(b"127.0.0.1", &url));
        assert!(!is_authority_of(b"127.0.0.1:85450", &url));
        let url: Url = "https://h.example/rpc".parse().unwrap();
        assert!(is_authority_of(b"h.example", &url));
        assert!(!is_authority_of(b"h.example:443", &url));
        assert!(!is_authority_of(b"H.example", &url));
        for port in [1u16, 9, 10, 443, 8545, 65535] {
            assert_eq!(decimal(port).as_slice(), port.to_string().as_bytes());
        }
    }
}

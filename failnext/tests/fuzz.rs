//! Property-based fuzzing of everything failnext reads from configuration or requests.
//!
//! - URL validation: `Failover::builder([Endpoint::new("e", s)]).build()` and
//!   `failnext::validate_endpoints` on arbitrary strings and URL-shaped strings: never panic,
//!   always agree, and whatever they accept is http(s), has a host, has no `#`, no surrounding
//!   whitespace and no control character.
//! - Printing: for URLs whose userinfo, path, query and fragment carry key markers, the
//!   `Display`/`Debug` of `Endpoint`, `FailoverBuilder`, `Failover` and `ConfigError` never
//!   show any of them.
//! - `Host` handling: requests with arbitrary `Host` header values against two loopback
//!   servers (the first answers 503, so both are attempted): a value equal to the request
//!   URL's `host[:port]` follows each endpoint, any other value reaches both servers
//!   unchanged, an absent one is derived per endpoint.
//!
//! Case counts. The pure tests run `FAILNEXT_FUZZ_CASES` cases each, 25 000 by default; the
//! loopback `Host` test runs `FAILNEXT_FUZZ_NET_CASES` cases, 128 by default. The full
//! profile, a million cases per pure test:
//!
//! ```text
//! FAILNEXT_FUZZ_CASES=1000000 cargo test --release -p failnext --test fuzz
//! ```

use std::sync::Arc;

use failnext::{Endpoint, Failover, RequestBuilderExt};
use failnext_loopback::cases::{check, env_cases, pure_cases};
use failnext_loopback::{Action, Received, Server, response};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

// ===== URL validation =====

/// URL-shaped strings assembled from hostile parts, then sometimes mutated.
fn url_shaped() -> impl Strategy<Value = String> {
    let scheme = prop::sample::select(vec![
        "http",
        "https",
        "HTTP",
        "HtTpS",
        "ftp",
        "ws",
        "",
        "file",
        "h ttp",
        "javascript",
        "http+unix",
        "KEY",
    ]);
    let sep = prop::sample::select(vec!["://", "://", "://", ":", ":/", ":///", "//", ":\\\\", "://\\"]);
    let userinfo = prop::sample::select(vec![
        "",
        "",
        "user@",
        "user:pass@",
        ":pass@",
        "@",
        "u%40:p%3A@",
        "a@b@",
        "u:p:q@",
    ]);
    let host = prop::sample::select(vec![
        "127.0.0.1",
        "example.com",
        "[::1]",
        "[::1",
        "",
        "EXAMPLE.com",
        "xn--nxasmq6b",
        "ex ample",
        "exa%41mple",
        "256.1.1.1",
        "h_o.st",
        "ünïcode.test",
        "0x7f.1",
        "%",
        "[fe80::1%25eth0]",
    ]);
    let port =
        prop::sample::select(vec!["", "", ":8545", ":", ":0", ":65535", ":65536", ":99999", ":-1", ":abc"]);
    let path = prop::sample::select(vec![
        "", "/", "/rpc", "/a b", "/%zz", "/%4", "/v3/key", "/../..", "\\rpc", "/%41",
    ]);
    let query = prop::sample::select(vec!["", "", "?", "?key=abc", "?a=%", "?#", "?a=%2"]);
    let fragment = prop::sample::select(vec!["", "", "", "#", "#frag"]);
    let wrap =
        prop::sample::select(vec!["", "", "", "", " ", "\t", "\n", "\u{0}", "\u{7f}", "\u{85}", "\u{a0}"]);
    let parts = (scheme, sep, userinfo, host, port, path, query, fragment, wrap.clone(), wrap);
    let assembled = parts.prop_map(|(s, sep, u, h, p, pa, q, f, lead, trail)| {
        format!("{lead}{s}{sep}{u}{h}{p}{pa}{q}{f}{trail}")
    });
    let edit = (any::<prop::sample::Index>(), any::<char>(), any::<bool>());
    (assembled, prop::collection::vec(edit, 0..3)).prop_map(|(url, edits)| {
        let mut chars: Vec<char> = url.chars().collect();
        for (at, c, insert) in edits {
            let i = at.index(chars.len() + 1);
            if insert || i == chars.len() {
                chars.insert(i, c);
            } else {
                chars.remove(i);
            }
        }
        chars.into_iter().collect()
    })
}

#[test]
fn url_validation_never_panics_and_accepts_only_usable_urls() {
    let strategy = prop_oneof![3 => url_shaped(), 1 => any::<String>()];
    check(pure_cases(), strategy, |raw| {
        let endpoint = Endpoint::new("e", raw.clone());
        let validated = failnext::validate_endpoints(std::slice::from_ref(&endpoint));
        let built = Failover::builder([endpoint.clone()]).build();
        prop_assert_eq!(validated.is_ok(), built.is_ok(), "{:?}", raw);
        // Printing never panics either, whatever was configured.
        let _ = (endpoint.to_string(), format!("{endpoint:?}"), format!("{built:?}"));
        if let Ok(urls) = validated {
            prop_assert_eq!(urls.len(), 1);
            let url = &urls[0];
            prop_assert!(url.scheme() == "http" || url.scheme() == "https", "{:?} -> {}", raw, url);
            prop_assert!(url.host_str().is_some_and(|h| !h.is_empty()), "{:?} has no host", raw);
            prop_assert!(!raw.contains('#'), "{:?} has a '#'", raw);
            prop_assert!(raw.trim() == raw && !raw.chars().any(char::is_control), "{:?}", raw);
        }
        Ok(())
    });
}

/// Well-formed authorities (`scheme://` and a host) whose userinfo, path, query and fragment
/// carry key markers. The hostless forms (`https:///KEY`, `https:KEY`) are left to the
/// redaction audit's regression test for the bug they show.
fn keyed_url_shaped() -> impl Strategy<Value = String> {
    let scheme = prop::sample::select(vec!["http", "https", "HTTPS", "ftp", "ws", "redis"]);
    let userinfo = prop::sample::select(vec![
        "",
        "KEYUSER@",
        "KEYUSER:KEYPASS@",
        ":KEYPASS@",
        "KEYUSER:@",
        "a@KEYUSER:KEYPASS@",
        "KEY%55SER:KEY%50ASS@",
    ]);
    let host = prop::sample::select(vec![
        "127.0.0.1",
        "example.com",
        "[::1]",
        "EXAMPLE.com",
        "h-1.test",
        "xn--nxasmq6b",
    ]);
    let port = prop::sample::select(vec!["", ":8545", ":0", ":65536", ":x", ":"]);
    let path = prop::sample::select(vec![
        "",
        "/",
        "/KEYPATH",
        "/v3/KEYPATH",
        "/KEYPATH/rpc",
        "/%zzKEYPATH",
        "/a b/KEYPATH",
        "\\KEYPATH",
        "/KEYPATH%",
    ]);
    let query = prop::sample::select(vec!["", "?KEYQUERY", "?apikey=KEYQUERY", "?a=%KEYQUERY", "?"]);
    let fragment = prop::sample::select(vec!["", "", "#KEYFRAG", "#"]);
    let wrap = prop::sample::select(vec!["", "", " ", "\n"]);
    (scheme, userinfo, host, port, path, query, fragment, wrap)
        .prop_map(|(s, u, h, p, pa, q, f, w)| format!("{s}://{u}{h}{p}{pa}{q}{f}{w}"))
}

#[test]
fn printed_endpoints_and_config_errors_never_show_userinfo_path_or_query() {
    check(pure_cases(), keyed_url_shaped(), |raw| {
        let endpoint = Endpoint::new("e", raw.clone());
        let builder = Failover::builder([endpoint.clone()]);
        let mut printed = format!("{endpoint} {endpoint:?} {} {builder:?}", endpoint.redacted_url());
        match builder.build() {
            Ok(failover) => printed.push_str(&format!(" {failover:?}")),
            Err(err) => printed.push_str(&format!(" {err} {err:?}")),
        }
        let upper = printed.to_ascii_uppercase();
        for marker in ["KEYUSER", "KEYPASS", "KEYPATH", "KEYQUERY", "KEYFRAG", "KEY%55SER", "KEY%50ASS"] {
            prop_assert!(!upper.contains(marker), "{:?} printed {}", raw, printed);
        }
        Ok(())
    });
}

// ===== Host handling =====

/// A request URL and its `host[:port]` as the `url` crate normalises it.
const REQUEST_URLS: [(&str, &str); 7] = [
    ("http://localhost/x", "localhost"),
    ("http://LOCALHOST:80/x", "localhost"),
    ("http://[::1]:8545/", "[::1]:8545"),
    ("https://example.test:443/", "example.test"),
    ("https://Example.TEST:8443/a?b", "example.test:8443"),
    ("http://user:pw@host.test:81/", "host.test:81"),
    ("http://127.0.0.1:9/rpc", "127.0.0.1:9"),
];

/// Bytes a `HeaderValue` accepts: visible ASCII, space, tab and obs-text.
fn header_bytes() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![8 => 0x20u8..=0x7e, 1 => Just(b'\t'), 2 => 0x80u8..=0xff];
    prop::collection::vec(byte, 0..40)
}

fn host_value(authority: &'static str) -> impl Strategy<Value = Option<Vec<u8>>> {
    let near = prop::sample::select(vec![
        authority.to_owned(),
        authority.to_owned(),
        authority.to_uppercase(),
        format!("{authority}:80"),
        format!("{authority}:443"),
        format!("{authority}."),
        format!(" {authority}"),
        format!("{authority}\t"),
        format!("{authority}0"),
        authority.rsplit_once(':').map_or(authority, |(h, _)| h).to_owned(),
        String::new(),
    ]);
    prop_oneof![
        1 => Just(None),
        4 => near.prop_map(|s| Some(s.into_bytes())),
        3 => header_bytes().prop_map(Some),
    ]
}

#[test]
fn host_header_is_kept_or_follows_the_endpoint() {
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let (first, second, client) = rt.block_on(async {
        let first = Server::start(Arc::new(|_: &Received| Action::Reply(response(503, b"first")))).await;
        let second = Server::start(Arc::new(|_: &Received| Action::Reply(response(200, b"second")))).await;
        let failover = Failover::builder([
            Endpoint::new("first", first.url("/one?key=1")),
            Endpoint::new("second", second.url("/two")),
        ])
        .cooldown(failnext::Cooldown::disabled())
        .build()
        .expect("valid endpoints");
        let inner = reqwest::Client::builder().pool_max_idle_per_host(0).build().expect("client");
        (first, second, reqwest_middleware::ClientBuilder::new(inner).with(failover).build())
    });
    let strategy = (0..REQUEST_URLS.len()).prop_flat_map(|i| (Just(i), host_value(REQUEST_URLS[i].1)));
    check(env_cases("FAILNEXT_FUZZ_NET_CASES", 128), strategy, |(i, host)| {
        let (url, authority) = REQUEST_URLS[i];
        rt.block_on(async {
            let mut request = client.get(url).allow_failover();
            if let Some(value) = &host {
                let value = http::HeaderValue::from_bytes(value).expect("generated header bytes are valid");
                request = request.header(http::header::HOST, value);
            }
            let sent = tokio::time::timeout(std::time::Duration::from_secs(20), request.send()).await;
            let resp = sent.map_err(|_| TestCaseError::fail("request hung"))?;
            let resp = resp.map_err(|e| TestCaseError::fail(format!("request failed: {e:?}")))?;
            prop_assert_eq!(resp.status().as_u16(), 200);
            for (server, path) in [(&first, "/one?key=1"), (&second, "/two")] {
                let received = server.take_log();
                prop_assert_eq!(received.len(), 1, "one attempt at {}", path);
                prop_assert_eq!(&received[0].target, path);
                let own = format!("127.0.0.1:{}", server.port()).into_bytes();
                let want = match &host {
                    None => own,
                    Some(value) if value.as_slice() == authority.as_bytes() => own,
                    // The wire trims optional whitespace around a header value.
                    Some(value) => value.trim_ascii_ws_tab(),
                };
                prop_assert_eq!(
                    received[0].header_values("host"),
                    vec![want.as_slice()],
                    "{:?} for {}",
                    host,
                    url
                );
            }
            Ok(())
        })
    });
}

trait TrimOws {
    fn trim_ascii_ws_tab(&self) -> Vec<u8>;
}

impl TrimOws for Vec<u8> {
    fn trim_ascii_ws_tab(&self) -> Vec<u8> {
        let start = self.iter().position(|b| !matches!(b, b' ' | b'\t')).unwrap_or(self.len());
        let end = self.iter().rposition(|b| !matches!(b, b' ' | b'\t')).map_or(start, |e| e + 1);
        self[start..end].to_vec()
    }
}

//! The endpoint list rules shared with failnext-blocklag: non-empty, ids, then each URL.

use std::collections::HashSet;

use url::Url;

use crate::request::config_error::{ConfigError, ConfigErrorKind};
use crate::request::endpoint::Endpoint;
use crate::request::url_rules::check_url;

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
        let url = check_url(ep.url()).map_err(|rule| ConfigErrorKind::Url {
            index,
            id: id.clone(),
            shown: ep.redacted_url().to_string(),
            rule,
        })?;
        valid.push(url);
    }
    Ok(valid)
}

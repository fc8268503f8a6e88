//! Decision 2, may the request fail over.

use std::sync::Arc;

use http::Method;

/// Whether a request may be sent to another endpoint after its first attempt fails.
///
/// Used in two places:
///
/// - as a request-scoped choice, stored in the request's extensions (usually through
///   [`RequestBuilderExt::allow_failover`](crate::RequestBuilderExt::allow_failover) and
///   [`deny_failover`](crate::RequestBuilderExt::deny_failover)); the last value inserted
///   wins, and `Defer` means "no explicit choice";
/// - as the answer of a [`permission_policy`](crate::FailoverBuilder::permission_policy).
///
/// Failnext resolves permission in this order, first answer wins:
/// request-scoped `Allow`/`Deny` > the policy's `Allow`/`Deny` > `GET` or `HEAD` allow > deny.
///
/// Permission does not make a body replayable, an endpoint eligible, or a failure a trigger,
/// and it does not bypass cooldown.
///
/// A client-wide default goes in with reqwest-middleware's initialiser:
///
/// ```
/// use failnext::Permission;
/// use reqwest_middleware::{ClientBuilder, Extension};
///
/// // Every request of this client may fail over unless it says otherwise.
/// let client = ClientBuilder::new(reqwest::Client::new())
///     .with_init(Extension(Permission::Allow))
///     .build();
/// # drop(client);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Permission {
    /// The request may fail over.
    Allow,
    /// The request must not fail over.
    Deny,
    /// No decision here: ask the next authority.
    #[default]
    Defer,
}

pub(crate) type PolicyFn = Arc<dyn Fn(&reqwest::Request) -> Permission + Send + Sync>;

/// Who settled a request's permission to fail over, first answer wins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(clippy::enum_variant_names, reason = "`Decided::ByPolicy` reads as the sentence it stands for")]
pub(crate) enum Decided {
    /// The request's own `Allow` or `Deny`.
    ByRequest,
    /// The permission policy's `Allow` or `Deny`.
    ByPolicy,
    /// The method rule: `GET` and `HEAD` may fail over.
    ByMethod,
    /// Nothing allowed it: deny.
    ByDefault,
}

/// A request's settled permission: whether it may fail over, and who said so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Settled {
    pub(crate) allowed: bool,
    pub(crate) by: Decided,
}

/// Settles permission for `req`, first answer wins: the request's `Allow`/`Deny`, the
/// policy's `Allow`/`Deny`, `GET`/`HEAD` allowed, otherwise denied. The policy is called only
/// when the request made no explicit choice, and the caller calls this at most once per request.
pub(crate) fn resolve(
    explicit: Option<Permission>,
    policy: Option<&PolicyFn>,
    req: &reqwest::Request,
) -> Settled {
    let (allowed, by) = match explicit {
        Some(Permission::Allow) => (true, Decided::ByRequest),
        Some(Permission::Deny) => (false, Decided::ByRequest),
        Some(Permission::Defer) | None => match policy.map(|p| p(req)) {
            Some(Permission::Allow) => (true, Decided::ByPolicy),
            Some(Permission::Deny) => (false, Decided::ByPolicy),
            Some(Permission::Defer) | None if is_safe_method(req.method()) => (true, Decided::ByMethod),
            Some(Permission::Defer) | None => (false, Decided::ByDefault),
        },
    };
    Settled { allowed, by }
}

/// Only exactly `GET` and `HEAD` are inferred as safe to repeat.
fn is_safe_method(method: &Method) -> bool {
    method == Method::GET || method == Method::HEAD
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn req(method: &str) -> reqwest::Request {
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        reqwest::Request::new(method, "http://127.0.0.1/".parse().unwrap())
    }

    fn settled(allowed: bool, by: Decided) -> Settled {
        Settled { allowed, by }
    }

    #[test]
    fn method_inference_allows_exactly_get_and_head() {
        assert_eq!(resolve(None, None, &req("GET")), settled(true, Decided::ByMethod));
        assert_eq!(resolve(None, None, &req("HEAD")), settled(true, Decided::ByMethod));
        for m in ["POST", "PUT", "DELETE", "OPTIONS", "PATCH", "get"] {
            assert_eq!(resolve(None, None, &req(m)), settled(false, Decided::ByDefault), "{m}");
        }
    }

    #[test]
    fn explicit_choice_wins_and_skips_the_policy() {
        let calls = Arc::new(AtomicUsize::new(0));
        let c = calls.clone();
        let policy: PolicyFn = Arc::new(move |_| {
            c.fetch_add(1, Ordering::SeqCst);
            Permission::Deny
        });
        assert_eq!(
            resolve(Some(Permission::Allow), Some(&policy), &req("POST")),
            settled(true, Decided::ByRequest)
        );
        assert_eq!(
            resolve(Some(Permission::Deny), Some(&policy), &req("GET")),
            settled(false, Decided::ByRequest)
        );
        assert_eq!(calls.load(Ordering::SeqCst), 0);
        assert_eq!(
            resolve(Some(Permission::Defer), Some(&policy), &req("GET")),
            settled(false, Decided::ByPolicy)
        );
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn policy_defer_falls_back_to_method() {
        let policy: PolicyFn = Arc::new(|_| Permission::Defer);
        assert_eq!(resolve(None, Some(&policy), &req("GET")), settled(true, Decided::ByMethod));
        assert_eq!(resolve(None, Some(&policy), &req("POST")), settled(false, Decided::ByDefault));
        let allow_post: PolicyFn =
            Arc::new(|r| if r.method() == Method::POST { Permission::Allow } else { Permission::Defer });
        assert_eq!(resolve(None, Some(&allow_post), &req("POST")), settled(true, Decided::ByPolicy));
    }
}

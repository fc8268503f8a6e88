//! Decision 2, may a request fail over.

use failnext::Permission;

/// What a request brings to the permission rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PermissionQuery<'a> {
    /// The request-scoped choice (`allow_failover()`, `deny_failover()`); `None` and
    /// `Some(Defer)` both mean no explicit choice.
    pub explicit: Option<Permission>,
    /// What the configured permission policy answers for this request; `None` without one.
    pub policy: Option<Permission>,
    /// The request's method, as sent (`"GET"`, `"POST"`, ...).
    pub method: &'a str,
}

/// Who settled whether a request may fail over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SettledBy {
    /// The request's own `Allow` or `Deny`.
    Request,
    /// The permission policy's `Allow` or `Deny`.
    Policy,
    /// The method: exactly `GET` or `HEAD` may fail over.
    Method,
    /// Nobody allowed it: denied.
    Default,
}

/// How permission was settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settlement {
    /// Whether the request may fail over.
    pub may_fail_over: bool,
    /// Who decided.
    pub by: SettledBy,
    /// Whether the policy was called (it is, exactly when the request made no explicit choice
    /// and a policy is configured, whatever it answers).
    pub policy_asked: bool,
}

impl PermissionQuery<'_> {
    /// The rule, first answer wins: the request's `Allow` or `Deny`, then the policy's `Allow`
    /// or `Deny`, then `GET` or `HEAD` allow, else deny. failnext settles it at most once per
    /// request, and only when another candidate could follow the first attempt (see
    /// [`Walk`](super::Walk)).
    pub fn settle(&self) -> Settlement {
        let settled = |may_fail_over, by, policy_asked| Settlement { may_fail_over, by, policy_asked };
        match self.explicit {
            Some(Permission::Allow) => return settled(true, SettledBy::Request, false),
            Some(Permission::Deny) => return settled(false, SettledBy::Request, false),
            _ => {}
        }
        let asked = self.policy.is_some();
        match self.policy {
            Some(Permission::Allow) => settled(true, SettledBy::Policy, true),
            Some(Permission::Deny) => settled(false, SettledBy::Policy, true),
            _ if self.method == "GET" || self.method == "HEAD" => settled(true, SettledBy::Method, asked),
            _ => settled(false, SettledBy::Default, asked),
        }
    }
}

/// The most providers one request may reach among `candidates`: all of them when it may fail
/// over and its body can be replayed, at most one otherwise.
pub fn reach_limit(may_fail_over: bool, replayable: bool, candidates: usize) -> usize {
    if may_fail_over && replayable { candidates } else { candidates.min(1) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(explicit: Option<Permission>, policy: Option<Permission>, method: &str) -> Settlement {
        PermissionQuery { explicit, policy, method }.settle()
    }

    #[test]
    fn first_answer_wins() {
        use Permission::{Allow, Defer, Deny};
        assert_eq!(q(Some(Allow), Some(Deny), "POST").by, SettledBy::Request);
        assert!(!q(Some(Deny), None, "GET").may_fail_over);
        let s = q(Some(Defer), Some(Deny), "GET");
        assert_eq!((s.may_fail_over, s.by, s.policy_asked), (false, SettledBy::Policy, true));
        let s = q(None, Some(Defer), "HEAD");
        assert_eq!((s.may_fail_over, s.by, s.policy_asked), (true, SettledBy::Method, true));
        for method in ["POST", "PUT", "get"] {
            assert_eq!(q(None, None, method).by, SettledBy::Default, "{method}");
        }
        assert_eq!(
            (reach_limit(false, true, 3), reach_limit(true, false, 3), reach_limit(true, true, 3)),
            (1, 1, 3)
        );
    }
}

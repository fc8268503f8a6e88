//! The rules of failnext, stated a second time as pure functions: the reference the
//! model-based tests, the soak and the demo judge the middleware against.
//!
//! Every rule here is written once in failnext and once here, and nowhere else: a test that
//! needs a rule takes it from this module. Nothing here does I/O, reads a clock or knows about
//! HTTP clients; endpoints are their configured indices (`0..n`, configured order).
//!
//! One request, in the order failnext decides it:
//!
//! 1. [`resolve`]: the ids the request names (exclusions, then preference) must all be
//!    configured, or the request fails with the first unknown one before anything is asked;
//! 2. [`Plan`]: eligibility is asked once per non-excluded endpoint, in configured order, and
//!    frozen; the candidates are the eligible ones in configured order, the preferred one, if
//!    still a candidate, moved to the front;
//! 3. [`Walk`]: one [`Step`] per event failnext emits. A candidate cooling down is skipped for
//!    good ([`Step::Skip`]); the first candidate not cooling is attempted; after an attempt
//!    the request goes on only when the outcome [fails over](Triggers::fails_over), the
//!    request [may fail over](PermissionQuery::settle) (settled once, and only when another
//!    candidate could follow) and its body can be replayed (otherwise
//!    [`Step::NotReplayable`] names the candidate it could not go to);
//! 4. [`expected_result`]: the last HTTP response (a retained trigger response included),
//!    else a failover error listing the attempts, else "no usable endpoint".
//!
//! Across requests, [`CooldownState`] is what one endpoint's cooldown becomes from the
//! [evidence](cooldown_evidence) of each attempt.
//!
//! ```
//! use failnext::Permission;
//! use failnext_examples::oracle::{
//!     Attempted, Expected, Plan, PermissionQuery, Step, Stop, Triggers, Walk, resolve,
//! };
//!
//! let ids = ["a", "b", "c"];
//! let selection = resolve(&ids, ["c"], Some("b")).unwrap();
//! let plan = Plan::new(ids.len(), &selection, |_| true);
//! assert_eq!(plan.order(), [1, 0]);
//!
//! let permission = PermissionQuery { explicit: Some(Permission::Allow), policy: None, method: "POST" };
//! let mut walk = Walk::new(&plan, permission, true, Triggers::new([]));
//! assert_eq!(walk.next(|_| false), Step::Attempt { endpoint: 1, number: 1 });
//! walk.record(Attempted::Status(503));
//! assert_eq!(walk.next(|_| false), Step::Attempt { endpoint: 0, number: 2 });
//! walk.record(Attempted::Error);
//! // Everything after the 503 failed: the retained 503 is the result.
//! let Step::Finish(finish) = walk.next(|_| false) else { panic!() };
//! assert_eq!(finish.stop, Stop::NoCandidateLeft);
//! assert_eq!(finish.result, Expected::Response { attempt: 0, endpoint: 1, status: 503 });
//! ```

mod cooldown;
mod outcome;
mod permission;
mod plan;
mod walk;

pub use cooldown::{CooldownState, Evidence, cooldown_evidence};
pub use outcome::{Attempted, BUILTIN_TRIGGERS, Expected, Triggers, expected_result};
pub use permission::{PermissionQuery, SettledBy, Settlement, reach_limit};
pub use plan::{Plan, Selection, resolve};
pub use walk::{Finish, Step, Stop, Walk};

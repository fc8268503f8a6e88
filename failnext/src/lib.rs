//! Ordered client-side failover for reqwest.
#![doc(test(attr(deny(warnings))))]

mod builder;
mod cooldown;
mod eligibility;
mod endpoint;
mod error;
mod event;
mod middleware;
mod options;
mod permission;
mod select;
mod target;
mod trigger;
mod validate;

pub use builder::FailoverBuilder;
pub use cooldown::Cooldown;
pub use eligibility::Eligibility;
pub use endpoint::{Endpoint, EndpointId};
pub use error::{Attempt, Error};
pub use event::{AttemptOutcome, Event, ResultOutcome};
pub use middleware::Failover;
pub use options::{ExcludedEndpoints, PreferredEndpoint, RequestBuilderExt, ServedBy};
pub use permission::Permission;
pub use validate::{ConfigError, validate_endpoints};

//! What a request starts from: the endpoints and their rules, the builder and its settings,
//! the per-request options and permission, and the scope a caller gives a request.

pub(crate) mod builder;
pub(crate) mod config_error;
pub(crate) mod destination;
pub(crate) mod endpoint;
pub(crate) mod options;
pub(crate) mod permission;
pub(crate) mod scope;
pub(crate) mod setting;
pub(crate) mod url_rules;
pub(crate) mod validate;

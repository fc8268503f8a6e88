//! What a request starts from, the ground floor every other room stands on: the endpoints and
//! the rules their URLs meet, the settings a builder takes, the per-request options and
//! permission, and the configuration's errors.

pub(crate) mod config_error;
pub(crate) mod destination;
pub(crate) mod endpoint;
pub(crate) mod options;
pub(crate) mod permission;
pub(crate) mod setting;
pub(crate) mod url_rules;
pub(crate) mod validate;

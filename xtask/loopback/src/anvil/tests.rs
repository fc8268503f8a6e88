//! The binary's location, the announced port and hex quantities, checked without a node.

use serde_json::json;

use super::process::{default_installs, listening_port, locate};
use super::rpc::quantity;
use super::{AnvilOptions, NOT_FOUND, PACKAGE_BINARY};

#[test]
fn an_explicit_binary_that_does_not_exist_is_not_found_with_the_how_to() {
    let err = locate(&AnvilOptions::new().binary("/nonexistent/anvil")).unwrap_err();
    let message = err.to_string();
    assert!(message.starts_with(NOT_FOUND), "{message}");
    assert!(message.contains("/nonexistent/anvil"), "{message}");
}

#[test]
fn the_default_installs_end_in_the_package_binary() {
    let installs = default_installs();
    assert!(!installs.is_empty());
    assert!(installs.iter().all(|p| p.ends_with(PACKAGE_BINARY)), "{installs:?}");
}

#[test]
fn the_listening_line_gives_the_port() {
    assert_eq!(listening_port("127.0.0.1:38481"), Some(38481));
    assert_eq!(listening_port("127.0.0.1"), None);
}

#[test]
fn quantities_are_hex() {
    assert_eq!(quantity("m", &json!("0x7a69")).unwrap(), 31337);
    assert!(quantity("m", &json!("7a69")).is_err());
    assert!(quantity("m", &json!(1)).is_err());
}

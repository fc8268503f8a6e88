//! Permission policy: one rule for the whole client, here "every POST may fail over".
//!
//! That rule is only safe because this client sends nothing but JSON-RPC reads. A request
//! can still decide for itself: its explicit `deny_failover()` wins over the policy.
//!
//! Run it with `cargo run -p failnext-examples --example permission-policy`.
#![allow(clippy::print_stdout, reason = "an example shows what happened on stdout")]

use std::error::Error;

use failnext::{Failover, Permission, RequestBuilderExt};
// Unpublished helpers (simulator, call/send/ensure): see "Copying an example" in examples/README.md.
use failnext_examples::sim::Behaviour;
use failnext_examples::{Network, call, ensure, send};
use reqwest::Method;
use reqwest_middleware::ClientBuilder;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    // Simulator set-up: replace `net` with your providers (see examples/README.md).
    let net = Network::from_env().await?;
    println!("{net}");
    // Simulator only: injects the fault.
    if let Some(sim) = net.sim() {
        sim.primary.set(Behaviour::Status(503)).await?;
    }

    let failover =
        Failover::builder(net.endpoints())
            // `Defer` leaves other methods to the default rule: GET and HEAD may fail over.
            .permission_policy(|req: &reqwest::Request| {
                if req.method() == Method::POST { Permission::Allow } else { Permission::Defer }
            })
            .build()?;
    let client = ClientBuilder::new(net.http_client()?).with(failover).build();

    // No request-scoped choice: the policy lets this POST fail over.
    let read = send(call(&client, net.url(), "eth_blockNumber", json!([]))).await?;
    println!("read: status {}, served by: {}", read.status(), read.served_by());

    // An explicit deny on the request wins over the policy.
    let denied = send(call(&client, net.url(), "eth_blockNumber", json!([])).deny_failover()).await?;
    println!("denied read: status {}, served by: {}", denied.status(), denied.served_by());

    ensure(read.result().is_some(), "the read got a result")?;
    // Simulator only: checks what happened.
    if net.sim().is_some() {
        ensure(read.served_by() == "backup", "the policy let the read fail over to the backup")?;
        ensure(denied.status() == 503 && denied.served_by() == "primary", "the deny kept it on the primary")?;
    }
    Ok(())
}

//! Error inspection: when every provider fails, the error lists each failed attempt.
//!
//! In the simulator the primary is down and the backup hangs, so the read ends with a
//! failnext error holding two attempts: a refused connection and a timeout. Then a request
//! that names an endpoint that does not exist fails before anything is sent.
//!
//! Run it with `cargo run -p failnext-examples --example error-inspection`.
#![allow(clippy::print_stdout, reason = "an example shows what happened on stdout")]

use std::error::Error;
use std::time::Duration;

use failnext::{Failover, RequestBuilderExt};
// Unpublished helpers (simulator, call/send/ensure): see "Copying an example" in examples/README.md.
use failnext_examples::sim::Behaviour;
use failnext_examples::{Network, call, causes, ensure, send};
use reqwest_middleware::ClientBuilder;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    // Simulator set-up: replace `net` with your providers (see examples/README.md).
    let net = Network::from_env().await?;
    println!("{net}");
    // Simulator only: injects the fault.
    if let Some(sim) = net.sim() {
        sim.primary.set(Behaviour::Down).await?;
        sim.backup.set(Behaviour::Hang).await?;
    }

    // Each attempt gets at most half a second, so the hanging backup costs no more.
    let failover = Failover::builder(net.endpoints()).attempt_timeout(Duration::from_millis(500)).build()?;
    let client = ClientBuilder::new(net.http_client()?).with(failover).build();

    let read = call(&client, net.url(), "eth_blockNumber", json!([])).allow_failover();
    match send(read).await {
        Ok(reply) => {
            println!("no failure to inspect: served by {}", reply.served_by());
            ensure(net.sim().is_none(), "every provider failed")?;
        }
        Err(err) => {
            // failnext's error is inside reqwest-middleware's; `from_middleware` finds it.
            let failed = failnext::Error::from_middleware(&err).ok_or("not a failnext error")?;
            println!("error: {failed}");
            for attempt in failed.attempts() {
                let error = attempt.error();
                let kind = if error.is_connect() {
                    "connect"
                } else if error.is_timeout() {
                    "timeout"
                } else {
                    "other"
                };
                println!("attempt: endpoint={} kind={kind} error={}", attempt.endpoint(), causes(error));
            }
            let kinds: Vec<_> =
                failed.attempts().iter().map(|a| (a.endpoint().as_str(), a.error().is_timeout())).collect();
            ensure(
                kinds == [("primary", false), ("backup", true)],
                "primary refused, then backup timed out",
            )?;
        }
    }

    // An unknown endpoint id is a mistake in the request, reported before any attempt.
    let typo = call(&client, net.url(), "eth_blockNumber", json!([])).prefer_endpoint("archive");
    let err = send(typo).await.err().ok_or("a request preferring an unknown endpoint succeeded")?;
    let failed = failnext::Error::from_middleware(&err).ok_or("not a failnext error")?;
    println!("error: {failed}");
    ensure(failed.is_unknown_endpoint() && failed.attempts().is_empty(), "nothing was attempted")?;
    Ok(())
}

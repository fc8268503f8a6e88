//! Why a read failed, two ways: its trace (every endpoint and what happened to it) and its
//! attempts (each endpoint tried, with its error).
//!
//! The primary refuses connections and the backup hangs. A read through
//! `failnext::alloy::FailoverTransport` tries the primary, fails over to the backup, waits
//! for it until the attempt timeout (300 ms here), and fails:
//!
//! - `CallExt::record_trace(&cell)` on the call's metadata asks for the request's `Trace` and
//!   has the transport write it into a `TraceCell` when the call ends, answered or not;
//! - `Failure::find(&err)` finds failnext's error in alloy's `TransportError`: a failed read is
//!   `FailureKind::Read`, and `failure.attempts()` lists each attempt, its endpoint and its error.
//!
//! Run it with `cargo run -p failnext-examples --features alloy --example alloy-trace`.
#![allow(clippy::print_stdout, reason = "an example shows what happened on stdout")]

use std::error::Error;
use std::time::Duration;

use alloy::providers::{Provider, ProviderBuilder};
use alloy::rpc::client::RpcClient;
use failnext::alloy::{CallExt, FailoverTransport, Failure, TraceCell};
// Unpublished helpers (simulator, ensure): see "Copying an example" in examples/README.md.
use failnext_examples::sim::Behaviour;
use failnext_examples::{Network, ensure};

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    // Simulator set-up: replace `net` with your providers (see examples/README.md).
    let net = Network::from_env().await?;
    println!("{net}");
    // Simulator only: the primary is down, the backup reads each request and never answers.
    if let Some(sim) = net.sim() {
        sim.primary.set(Behaviour::Down).await?;
        sim.backup.set(Behaviour::Hang).await?;
    }

    let transport =
        FailoverTransport::builder(net.endpoints()).attempt_timeout(Duration::from_millis(300)).build()?;
    let provider = ProviderBuilder::new().connect_client(RpcClient::new(transport, false));

    let trace = TraceCell::new();
    let read = provider
        .get_block_number()
        .map_meta(|meta| meta.record_trace(&trace))
        .unwrap_or_else(|call| call)
        .await;
    if let Some(trace) = trace.get() {
        println!("{trace}");
    }
    let mut attempts = Vec::new();
    match &read {
        Ok(block) => println!("block number: {block}"),
        Err(err) => match Failure::find(err) {
            Some(failure) if failure.is_read() => {
                println!("read failed: {failure}");
                for attempt in failure.attempts() {
                    println!("  attempt: {attempt}");
                    attempts.push(attempt.endpoint().to_string());
                }
            }
            Some(other) => println!("failed: {other}"),
            None => println!("failed outside the transport: {err}"),
        },
    }

    // Simulator only: checks what happened.
    if net.sim().is_some() {
        ensure(read.is_err(), "the read failed")?;
        ensure(attempts == ["primary", "backup"], "both endpoints were attempted, in order")?;
        let traced = trace.get().is_some_and(|t| t.entries().iter().all(|e| !e.steps().is_empty()));
        ensure(traced, "the trace has a step for every endpoint")?;
    }
    Ok(())
}

//! An alloy `Provider` running on failnext.
//!
//! alloy talks to a node through a transport: any `tower::Service<RequestPacket>` that answers
//! with a `ResponsePacket`. It does not take a `ClientWithMiddleware` directly, so this example
//! writes that small adapter. The adapter decides permission from the JSON-RPC method names in
//! each packet: a packet made only of known reads may fail over; anything else, such as
//! `eth_sendRawTransaction`, may not.
//!
//! Run it with `cargo run -p failnext-examples --features alloy --example alloy-provider`.
#![allow(clippy::print_stdout, reason = "an example shows what happened on stdout")]

use std::error::Error;
use std::task::{Context, Poll};

use alloy::providers::{Provider, ProviderBuilder};
use alloy::rpc::client::RpcClient;
use alloy::rpc::json_rpc::{RequestPacket, ResponsePacket};
use alloy::transports::{TransportError, TransportErrorKind, TransportFut};
use failnext::{Failover, RequestBuilderExt, ResponseExt};
// Unpublished helpers (simulator, call/send/ensure): see "Copying an example" in examples/README.md.
use failnext_examples::sim::Behaviour;
use failnext_examples::{Network, ensure};
use reqwest_middleware::ClientWithMiddleware;

/// A transport that sends alloy's JSON-RPC packets through a failnext client.
#[derive(Clone, Debug)]
struct FailnextTransport {
    client: ClientWithMiddleware,
    /// Where requests are addressed; failnext replaces it with each endpoint's URL.
    url: String,
}

/// Reads that are safe to repeat on another provider. Everything else is denied failover.
fn is_read(method: &str) -> bool {
    method.starts_with("eth_get")
        || matches!(
            method,
            "eth_blockNumber"
                | "eth_call"
                | "eth_chainId"
                | "eth_estimateGas"
                | "eth_gasPrice"
                | "eth_feeHistory"
                | "eth_maxPriorityFeePerGas"
                | "eth_blobBaseFee"
                | "eth_syncing"
                | "net_version"
                | "web3_clientVersion"
        )
}

impl FailnextTransport {
    async fn send(self, packet: RequestPacket) -> Result<ResponsePacket, TransportError> {
        let methods = packet.method_names().collect::<Vec<_>>().join(",");
        let may_fail_over = packet.method_names().all(is_read);
        let body = packet.serialize().map_err(TransportError::ser_err)?;
        let request = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .body(String::from(Box::<str>::from(body)));
        let request = if may_fail_over { request.allow_failover() } else { request.deny_failover() };
        let response = request.send().await.map_err(TransportErrorKind::custom)?;
        let status = response.status();
        if let Some(id) = response.served_by() {
            println!("  {methods} -> served by {id} ({status})");
        }
        let body = response.bytes().await.map_err(TransportErrorKind::custom)?;
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body).into_owned();
            return Err(TransportErrorKind::http_error(status.as_u16(), text));
        }
        serde_json::from_slice(&body)
            .map_err(|e| TransportError::deser_err(e, String::from_utf8_lossy(&body)))
    }
}

impl tower::Service<RequestPacket> for FailnextTransport {
    type Response = ResponsePacket;
    type Error = TransportError;
    type Future = TransportFut<'static>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, packet: RequestPacket) -> Self::Future {
        Box::pin(self.clone().send(packet))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    // Simulator set-up: replace `net` with your providers (see examples/README.md).
    let net = Network::from_env().await?;
    println!("{net}");
    // Simulator only: the primary answers 503 to everything.
    if let Some(sim) = net.sim() {
        sim.primary.set(Behaviour::Status(503)).await?;
    }

    let failover = Failover::builder(net.endpoints()).build()?;
    let client = reqwest_middleware::ClientBuilder::new(net.http_client()?).with(failover).build();
    let transport = FailnextTransport { client, url: net.url().to_owned() };
    let provider = ProviderBuilder::new().connect_client(RpcClient::new(transport, false));

    // A read: alloy's provider, failnext underneath, the backup answers.
    let block = provider.get_block_number().await?;
    println!("block number: {block}");
    let chain_id = provider.get_chain_id().await?;
    println!("chain id: {chain_id}");

    // Simulator only: checks what happened, and a write that is refused without harm.
    if let Some(sim) = net.sim() {
        ensure(sim.backup.count("eth_blockNumber") == 1, "the backup served the block number")?;
        // A write: denied failover, so the primary's 503 comes back and the backup never sees it.
        let sent = provider.send_raw_transaction(&[0xde, 0xad, 0xbe, 0xef]).await;
        println!("write: {}", if sent.is_err() { "refused by the primary, not retried" } else { "accepted" });
        ensure(sent.is_err(), "the write failed on the primary")?;
        ensure(sim.backup.count("eth_sendRawTransaction") == 0, "the write never reached the backup")?;
        println!("backup received eth_sendRawTransaction: 0 times");
    }
    Ok(())
}

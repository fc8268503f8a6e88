//! Each contender's client: alloy's `Http`, its `FallbackLayer` (± `RetryBackoffLayer`), or
//! failnext's `FailoverTransport` (with its defaults, a fixed hedge, or paired with a monitor).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::task::{Context, Poll};
use std::time::Duration;

use alloy::rpc::client::{ClientBuilder as RpcClientBuilder, RpcClient};
use alloy::rpc::json_rpc::{RequestPacket, ResponsePacket};
use alloy::transports::http::Http;
use alloy::transports::layers::{FallbackService, RetryBackoffLayer};
use alloy::transports::{TransportError, TransportFut};
use failnext::alloy::FailoverTransport;
use failnext::{Endpoint, Event, Hedge};
use failnext_blocklag::Monitor;

use super::scenario::{CHECK_EVERY, CHECK_EVERY_SLOW, HEDGE_DELAY, PROBE_AGENT, Peer};
use crate::variants::{BoxError, reqwest_client};

/// The contender's client, and the monitor it probes with (the paired row).
pub(super) async fn contender(
    peer: Peer,
    urls: &[String; 3],
    attempts: &Arc<AtomicU64>,
    trials: &Arc<AtomicU64>,
) -> Result<(RpcClient, Option<Monitor>), BoxError> {
    let http = |i: usize| -> Result<Counted, BoxError> {
        let inner = Http::with_client(reqwest_client()?, urls[i].parse()?);
        Ok(Counted { inner, attempts: (i == 0).then(|| attempts.clone()) })
    };
    let https = || -> Result<Vec<Counted>, BoxError> { (0..3).map(http).collect() };
    let endpoints: Vec<Endpoint> = ["primary", "secondary", "backup"]
        .iter()
        .zip(urls)
        .map(|(id, url)| Endpoint::new(*id, url.as_str()))
        .collect();
    let counting = {
        let (attempts, trials) = (attempts.clone(), trials.clone());
        move |event: &Event<'_>| match event {
            Event::Attempt { endpoint, .. } if endpoint.as_str() == "primary" => {
                attempts.fetch_add(1, Relaxed);
            }
            Event::Breaker { endpoint, state: failnext::BreakerState::HalfOpen }
                if endpoint.as_str() == "primary" =>
            {
                trials.fetch_add(1, Relaxed);
            }
            _ => {}
        }
    };
    Ok(match peer {
        Peer::AlloyHttp => (RpcClient::new(http(0)?, true), None),
        Peer::AlloyHttpBackup => (RpcClient::new(http(2)?, true), None),
        // `FallbackLayer::default()` is `FallbackService::new(transports, 3)` plus a set of
        // sequential methods that `eth_blockNumber` is not in.
        Peer::Fallback => (RpcClient::new(FallbackService::new(https()?, 3), true), None),
        Peer::FallbackOne => (RpcClient::new(FallbackService::new(https()?, 1), true), None),
        Peer::FallbackRetry => {
            let client = RpcClientBuilder::default()
                .layer(RetryBackoffLayer::new(10, 100, 10_000))
                .transport(FallbackService::new(https()?, 3), true);
            (client, None)
        }
        Peer::Failnext => {
            let transport =
                FailoverTransport::builder(endpoints).client(reqwest_client()?).on_event(counting).build()?;
            (RpcClient::new(transport, true), None)
        }
        Peer::FailnextHedge => {
            let transport = FailoverTransport::builder(endpoints)
                .client(reqwest_client()?)
                .hedge(Hedge::after(HEDGE_DELAY))
                .no_failover_budget()
                .no_deadline()
                .on_event(counting)
                .build()?;
            (RpcClient::new(transport, true), None)
        }
        Peer::FailnextPaired | Peer::FailnextPaired5s => {
            let probe_client = reqwest::Client::builder().no_proxy().user_agent(PROBE_AGENT).build()?;
            let monitor = Monitor::builder(endpoints.clone()).client(probe_client).build()?;
            let every = if peer == Peer::FailnextPaired { CHECK_EVERY } else { CHECK_EVERY_SLOW };
            let schedule = monitor.spawn(every);
            // The first read once the monitor has a view, as an application starts.
            schedule.ready(Duration::from_secs(5)).await;
            let transport = FailoverTransport::builder(endpoints)
                .client(reqwest_client()?)
                .monitor(schedule)
                .on_event(counting)
                .build()?;
            (RpcClient::new(transport, true), Some(monitor))
        }
    })
}

/// alloy's `Http`, counting the calls it starts (the refused primary's attempts).
#[derive(Clone, Debug)]
struct Counted {
    inner: Http<reqwest::Client>,
    attempts: Option<Arc<AtomicU64>>,
}

impl tower_service::Service<RequestPacket> for Counted {
    type Response = ResponsePacket;
    type Error = TransportError;
    type Future = TransportFut<'static>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, packet: RequestPacket) -> TransportFut<'static> {
        if let Some(attempts) = &self.attempts {
            attempts.fetch_add(1, Relaxed);
        }
        self.inner.call(packet)
    }
}

//! One run per contender: fresh servers and chain, its client, reads from a few lanes in an
//! open loop, and the figures they give.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use alloy::rpc::client::RpcClient;
use alloy::transports::http::Http;
use alloy::transports::layers::FallbackService;
use failnext::Endpoint;
use failnext::alloy::FailoverTransport;
use failnext_blocklag::Monitor;

use super::chain::Chain;
use super::provider::serve;
use super::reads::{Verdict, lane};
use super::scenario::{BEHIND, LANES, PEERS, PROBE_AGENT, Peer, QUICK_READS, READS, RUN_LIMIT, Row};
use crate::measure::quantile;
use crate::servers::Servers;
use crate::variants::{BoxError, reqwest_client};

/// Runs every contender, each on fresh servers and a fresh chain.
pub(crate) async fn run(servers: &Servers, quick: bool) -> Result<Vec<Row>, BoxError> {
    let reads = if quick { QUICK_READS } else { READS };
    let mut rows = Vec::new();
    for peer in PEERS {
        rows.push(run_one(servers, peer, reads).await?);
    }
    Ok(rows)
}

async fn run_one(servers: &Servers, peer: Peer, reads: usize) -> Result<Row, BoxError> {
    let chain = Chain::new();
    let providers = [serve(servers, chain, BEHIND)?, serve(servers, chain, 0)?, serve(servers, chain, 0)?];
    let urls: Vec<&str> = providers.iter().map(|p| p.0.as_str()).collect();
    let endpoints: Vec<Endpoint> = ["primary", "secondary", "backup"]
        .iter()
        .zip(&urls)
        .map(|(id, url)| Endpoint::new(*id, *url))
        .collect();
    let http = |url: &str| -> Result<Http<reqwest::Client>, BoxError> {
        Ok(Http::with_client(reqwest_client()?, url.parse()?))
    };
    let spawned = Instant::now();
    let (client, monitor) = match peer {
        Peer::AlloyHttp => (RpcClient::new(http(urls[0])?, true), None),
        Peer::Fallback => {
            let https = urls.iter().map(|u| http(u)).collect::<Result<Vec<_>, _>>()?;
            (RpcClient::new(FallbackService::new(https, 3), true), None)
        }
        Peer::Failnext => {
            let transport = FailoverTransport::builder(endpoints).client(reqwest_client()?).build()?;
            (RpcClient::new(transport, true), None)
        }
        Peer::Paired2s | Peer::Paired5s => {
            let probe_client = reqwest::Client::builder().no_proxy().user_agent(PROBE_AGENT).build()?;
            let monitor = Monitor::builder(endpoints.clone()).client(probe_client).build()?;
            let schedule = monitor.spawn(peer.every().unwrap_or(Duration::from_secs(2)));
            // The first read once the monitor has a view, as an application starts.
            schedule.ready(Duration::from_secs(5)).await;
            let transport =
                FailoverTransport::builder(endpoints).client(reqwest_client()?).monitor(schedule).build()?;
            (RpcClient::new(transport, true), Some(monitor))
        }
    };
    let requests = || providers.iter().map(|p| p.1.requests.load(Relaxed)).sum::<u64>();
    let requests_before = requests();

    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..LANES {
        tasks.spawn(lane(client.clone(), chain, next.clone(), reads, Instant::now() + RUN_LIMIT));
    }
    let mut answers: Vec<(u64, Verdict)> = Vec::with_capacity(reads);
    while let Some(done) = tasks.join_next().await {
        answers.extend(done?);
    }
    let requests = requests() - requests_before;
    let probes: u64 = providers.iter().map(|p| p.1.probes.load(Relaxed)).sum();
    let probed_for = spawned.elapsed().as_secs_f64();
    let seen_lag = monitor.as_ref().and_then(|m| m.snapshot()?.lag("primary"));
    // The paired transport owns the monitor's schedule: dropping the client stops its probes.
    drop(client);

    let count = |v: Verdict| answers.iter().filter(|a| a.1 == v).count() as u64;
    let mut latencies: Vec<u64> = answers.iter().map(|a| a.0).collect();
    latencies.sort_unstable();
    Ok(Row {
        peer,
        reads: answers.len() as u64,
        correct: count(Verdict::Correct),
        empty: count(Verdict::Empty),
        failed: count(Verdict::Failed),
        requests_per_read: requests as f64 / answers.len().max(1) as f64,
        probes_per_provider_s: monitor.map(|_| probes as f64 / providers.len() as f64 / probed_for),
        seen_lag,
        p50_ms: quantile(&latencies, 0.50) / 1e6,
        p99_ms: quantile(&latencies, 0.99) / 1e6,
    })
}

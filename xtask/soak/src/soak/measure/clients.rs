//! The configurations' clients for one measure: each its own `Failover` (or alloy transport)
//! and `reqwest` client over the same providers, with what the measure records wired in.

use std::time::Duration;

use failnext::Failover;
use failnext_blocklag::Monitor;
use reqwest_middleware::ClientWithMiddleware;

use super::recording::{Dispatched, ReadLog, Recorded, record_event};
use super::subject::RecordedSource;
use super::{MeasureSettings, Shared, Subject};
use crate::soak::SetupError;
use crate::soak::record::Endpoints;

/// Every configuration's client, and the monitors of their own.
pub(super) struct Clients {
    /// Each configuration's client, in the settings' order.
    pub(super) clients: Vec<(Subject, Client)>,
    /// The paired configurations' own monitors (spawned by the measure, not here).
    pub(super) own_monitors: Vec<Monitor>,
    /// Each configuration's own monitor, for its probe count.
    pub(super) probing: Vec<(Subject, Monitor)>,
}

/// Builds the client of every configuration of `settings`, over the endpoints `list`.
pub(super) async fn build(
    shared: &Shared<'_>,
    settings: &MeasureSettings,
    list: &[failnext::Endpoint],
) -> Result<Clients, SetupError> {
    let mut clients = Vec::new();
    let mut own_monitors = Vec::new();

    // Each configuration's own monitor, for its probe count.
    let mut probing: Vec<(Subject, Monitor)> = Vec::new();
    for subject in &settings.subjects {
        if let Some(interval) = subject.readme_interval() {
            let (client, monitor) = readme_client(*subject, interval, list, shared.endpoints).await?;
            clients.push((*subject, client));
            probing.push((*subject, monitor));
            continue;
        }
        let builder =
            Failover::builder(list.to_vec()).attempt_timeout(shared.attempt_timeout).on_event(|e| {
                if let failnext::Event::Hedge { .. } = e {
                    ReadLog::hedged();
                }
            });
        let builder = if subject.is_paired() {
            let monitor = own_monitor(shared, list)?;
            own_monitors.push(monitor.clone());
            probing.push((*subject, monitor.clone()));

            builder.monitor(RecordedSource { source: monitor, endpoints: shared.endpoints.clone() })
        } else {
            builder
                .eligible(Recorded { monitor: shared.monitor.clone(), endpoints: shared.endpoints.clone() })
        };
        let failover = subject
            .configure(builder)
            .build()
            .map_err(|e| SetupError(format!("failover ({subject}): {e}")))?;
        let client = reqwest_middleware::ClientBuilder::new(idle_client()?)
            .with(failover)
            .with(Dispatched { endpoints: shared.endpoints.clone() })
            .build();
        clients.push((*subject, Client::Reqwest(client)));
    }
    Ok(Clients { clients, own_monitors, probing })
}

/// How a configuration's reads are sent: a reqwest client with its `Failover`, or alloy's
/// `RpcClient` over a `FailoverTransport`.
#[derive(Clone)]
pub(super) enum Client {
    /// A reqwest client with its `Failover` and the `Dispatched` recorder.
    Reqwest(ClientWithMiddleware),
    /// Alloy's `RpcClient` over a `FailoverTransport`.
    Alloy(alloy::rpc::client::RpcClient),
}

/// A README setup, as pasted: its own monitor with the builder's defaults, spawned at
/// `interval` and given `ready(5 s)`, paired in one call. The measure adds only what it
/// records: the eligibility answers (`RecordedSource`, a pass-through), and the attempts and
/// hedges (an event hook for alloy, the `Dispatched` middleware for reqwest).
async fn readme_client(
    subject: Subject,
    interval: Duration,
    list: &[failnext::Endpoint],
    endpoints: &Endpoints,
) -> Result<(Client, Monitor), SetupError> {
    let built = Monitor::builder(list.to_vec())
        .build()
        .map_err(|e| SetupError(format!("monitor ({subject}): {e}")))?;
    let monitor = built.spawn(interval);
    monitor.ready(Duration::from_secs(5)).await;
    let source = RecordedSource { source: monitor, endpoints: endpoints.clone() };
    if subject.is_alloy() {
        let recorded = endpoints.clone();
        let transport = failnext::alloy::FailoverTransport::builder(list.to_vec())
            .monitor(source)
            .on_event(move |e| record_event(&recorded, e))
            .build()
            .map_err(|e| SetupError(format!("transport ({subject}): {e}")))?;
        return Ok((Client::Alloy(alloy::rpc::client::RpcClient::new(transport, false)), built));
    }
    let builder = Failover::builder(list.to_vec()).on_event(|e| {
        if let failnext::Event::Hedge { .. } = e {
            ReadLog::hedged();
        }
    });
    let failover = subject
        .configure(builder)
        .monitor(source)
        .build()
        .map_err(|e| SetupError(format!("failover ({subject}): {e}")))?;
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(failover)
        .with(Dispatched { endpoints: endpoints.clone() })
        .build();
    Ok((Client::Reqwest(client), built))
}

/// A `reqwest` client whose idle connections close after half a second.
fn idle_client() -> Result<reqwest::Client, SetupError> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .pool_idle_timeout(Duration::from_millis(500))
        .build()
        .map_err(|e| SetupError(format!("reqwest client: {e}")))
}

/// A paired configuration's own monitor: the shared one's settings, its own probe client.
pub(super) fn own_monitor(shared: &Shared<'_>, list: &[failnext::Endpoint]) -> Result<Monitor, SetupError> {
    Monitor::builder(list.to_vec())
        .max_lag(shared.max_lag)
        .expected_chain_id(shared.chain.id())
        .probe_timeout(shared.probe_timeout)
        .client(idle_client()?)
        .build()
        .map_err(|e| SetupError(format!("monitor (paired): {e}")))
}

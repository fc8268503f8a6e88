//! What runs beside the reads during a measure: the scenario's switches of the providers, the
//! chain followers of the transport configurations, and the shared monitor's checks.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;

use super::clients::own_monitor;
use super::follow::{self, Followed};
use super::timeline::{self, Timeline, Windows};
use super::{Scenario, Shared, Subject};
use crate::soak::SetupError;

/// Starts `scenario` on the providers: for flapping, one task per provider in `background`;
/// for half-stale, the providers' behaviours set before it returns.
pub(super) async fn start_scenario(
    shared: &Shared<'_>,
    scenario: Scenario,
    timeline: &Arc<Mutex<Timeline>>,
    background: &mut JoinSet<()>,
    stopped: &watch::Receiver<bool>,
) {
    match scenario {
        Scenario::Flapping { fault } => {
            for (p, provider) in shared.providers.iter().enumerate() {
                // Down long enough for a whole check of the soak's monitor to start and publish
                // after the restart began: its pause between checks, and a check that may wait
                // out the probe timeout, twice (the check in progress, then the next), with
                // room for scheduling. A monitor that checks less often than that (the README's
                // 2 s and 5 s) may see no sign of the restart: the provider then answers the
                // chain's own heads from another chain until its next check, which nothing but
                // an `eth_chainId` of its own can tell. Those reads count as misses ("2xx head
                // from the wrong chain"): the price of the interval, not hidden.
                let restart = shared.check_interval + 2 * shared.probe_timeout + Duration::from_millis(100);
                let windows = Windows::new(shared.seed, p, fault, restart);
                background.spawn(timeline::flap(
                    provider.clone(),
                    p,
                    windows,
                    timeline.clone(),
                    stopped.clone(),
                ));
            }
        }
        Scenario::HalfStale => timeline::half_stale(shared.providers, shared.seed, timeline).await,
    }
}

/// Starts a chain follower per transport configuration (its own transport, and for the paired
/// one its own monitor, so that nothing it does feeds the reads' figures), over the same
/// providers and faults, from the next block on; and, in `background`, the record of when
/// each block was made.
pub(super) async fn spawn_followers(
    shared: &Shared<'_>,
    subjects: &[Subject],
    list: &[failnext::Endpoint],
    background: &mut JoinSet<()>,
    stopped: &watch::Receiver<bool>,
) -> Result<JoinSet<(Subject, Followed)>, SetupError> {
    let from = shared.chain.head() + 1;
    let made: follow::Made = Arc::default();
    background.spawn(follow::watch_made(shared.chain.clone(), made.clone(), stopped.clone()));
    let mut followers = tokio::task::JoinSet::new();
    for subject in subjects.iter().filter(|s| matches!(s, Subject::Transport | Subject::TransportPaired)) {
        let mut builder = failnext::alloy::FailoverTransport::builder(list.to_vec())
            .attempt_timeout(shared.attempt_timeout);
        if subject.is_paired() {
            let monitor = own_monitor(shared, list)?.spawn(shared.check_interval);
            monitor.ready(shared.check_interval + 2 * shared.probe_timeout).await;
            builder = builder.monitor(monitor);
        }
        let transport =
            builder.build().map_err(|e| SetupError(format!("follower transport ({subject}): {e}")))?;
        // A bot knows its chain: the follower is given the chain id, as the monitors are.
        let follower = transport.follow(failnext::alloy::Start::Number(from)).chain_id(shared.chain.id());
        let (subject, chain, made, stopped) = (*subject, shared.chain.clone(), made.clone(), stopped.clone());
        followers.spawn(async move { (subject, follow::follow(follower, from, chain, made, stopped).await) });
    }
    Ok(followers)
}

/// The followers' results, once they ended, by configuration.
pub(super) async fn join_followers(mut followers: JoinSet<(Subject, Followed)>) -> Vec<(Subject, Followed)> {
    let mut followed = Vec::new();
    while let Some(joined) = followers.join_next().await {
        if let Ok(done) = joined {
            followed.push(done);
        }
    }
    followed.sort_by_key(|(subject, _)| *subject);
    followed
}

/// Checks the shared monitor every check interval, in `background`, until `stopped`.
pub(super) fn spawn_checks(
    shared: &Shared<'_>,
    background: &mut JoinSet<()>,
    stopped: &watch::Receiver<bool>,
) {
    let (monitor, interval, mut stopped) = (shared.monitor.clone(), shared.check_interval, stopped.clone());
    background.spawn(async move {
        while !crate::soak::watch::stopped_or(&mut stopped, interval).await {
            let _ = monitor.check().await;
        }
    });
}

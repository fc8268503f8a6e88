//! The measure's load: an open loop of reads, one seeded stream of arrival instants and, at
//! each one, a read per configuration, whatever the earlier reads are doing.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::clients::Client;
use super::judge::Sample;
use super::read::{read, read_alloy};
use super::{Shared, Subject};
use crate::soak::schedule::Rng;

/// Sends reads to every configuration of `clients` until `deadline`, `rate` per second on
/// average, to `url`; then waits for the last ones. Every configuration gets the same reads at
/// the same instants (a closed loop would send more reads where a configuration fails fast,
/// and weigh its bad spells more).
pub(super) async fn send_reads(
    shared: &Shared<'_>,
    rate: u32,
    deadline: Instant,
    clients: &[(Subject, Client)],
    url: &str,
) -> BTreeMap<Subject, Vec<Sample>> {
    let mean_gap_us = 1_000_000 / u64::from(rate.max(1));
    let mut rng = Rng::derive(shared.seed, 0x4EAD);
    let mut reads = tokio::task::JoinSet::new();
    let mut samples: BTreeMap<Subject, Vec<Sample>> = BTreeMap::new();
    let mut collect = |joined: Result<(Subject, Sample), tokio::task::JoinError>| {
        if let Ok((subject, sample)) = joined {
            samples.entry(subject).or_default().push(sample);
        }
    };
    let mut at = tokio::time::Instant::now();
    let mut id = 0u64;
    while Instant::now() < deadline {
        at += Duration::from_micros(rng.below(2 * mean_gap_us + 1));
        tokio::time::sleep_until(at).await;
        id += 1;
        for (subject, client) in clients {
            let (subject, client, url, endpoints, chain) =
                (*subject, client.clone(), url.to_owned(), shared.endpoints.clone(), shared.chain.clone());
            reads.spawn(async move {
                let sample = match &client {
                    Client::Reqwest(client) => read(client, &url, &endpoints, &chain, id).await,
                    Client::Alloy(client) => read_alloy(client, &endpoints, &chain).await,
                };
                (subject, sample)
            });
        }
        while let Some(joined) = reads.try_join_next() {
            collect(joined);
        }
    }
    while let Some(joined) = reads.join_next().await {
        collect(joined);
    }
    samples
}

//! The resource sampler: the process's tasks, connections and memory while a phase runs.

use std::time::{Duration, Instant};

use failnext_loopback::resources::{Connections, Usage};
use tokio::sync::watch;

use super::stopped_or;

/// Samples the process's resources while the phase runs, keeping the peaks.
pub(super) async fn sample(
    ports: Vec<u16>,
    mut stop: watch::Receiver<bool>,
) -> (usize, Connections, u64, Vec<u64>) {
    let (mut tasks, mut conns, mut rss) = (0, Connections::default(), 0);
    let mut timeline = Vec::new();
    let started = Instant::now();
    loop {
        let u = Usage::now(&ports);
        tasks = tasks.max(u.tasks.unwrap_or(0));
        if let Some(c) = u.connections {
            conns.client = conns.client.max(c.client);
            conns.server = conns.server.max(c.server);
        }
        rss = rss.max(u.rss.unwrap_or(0));
        if started.elapsed() >= Duration::from_secs(timeline.len() as u64) {
            timeline.push(u.rss.unwrap_or(0));
        }
        if stopped_or(&mut stop, Duration::from_millis(200)).await {
            break;
        }
    }
    (tasks, conns, rss, timeline)
}

//! The bot itself: setup and its run. Its concurrent tasks and its output each have a file:
//!
//! - [`monitor`]: the monitor's checks and the eligibility they show;
//! - [`reads`]: the reader, and the invariant that no read fails while a healthy eligible
//!   provider exists;
//! - [`writes`]: the writer, and the invariant that no write reaches more than one provider;
//! - [`scenario`]: the simulated providers' fault timeline;
//! - [`record`]: the sampler of every provider's state, and the picture drawn from it;
//! - [`output`]: the log, the introduction, the live view and the summary.

mod monitor;
mod output;
mod reads;
mod record;
mod scenario;
mod writes;

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use failnext::{Endpoint, EndpointId, Failover};
use failnext_blocklag::Monitor;
use reqwest::StatusCode;
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::{Instant, Interval, MissedTickBehavior};

use crate::demo::config::Config;
use crate::demo::picture::Recording;
use crate::demo::summary::{Stats, Summary};
use crate::demo::trace::{Counters, Recorded, hook};
use crate::demo::{DemoError, PROVIDER_IDS};
use crate::monitoring::probe_client;
use crate::sim::{Chain, Provider};
use crate::{SIM_CHAIN_ID, causes};

/// Runs the demo bot until `config.duration` has passed or `shutdown` completes (pass
/// `std::future::pending()` for no early stop), printing its log and live view through `out`,
/// one line per call, and returns the summary.
///
/// # Errors
///
/// When the bot cannot start: a simulated provider cannot bind a loopback port, or the real
/// provider URLs are not one to three `http://` URLs that failnext accepts.
pub async fn run(
    config: Config,
    out: impl Fn(&str) + Send + Sync + 'static,
    shutdown: impl Future<Output = ()>,
) -> Result<Summary, DemoError> {
    let bot = Arc::new(Bot::start(config, Box::new(out)).await?);
    bot.introduce();

    let (stop, stopped) = watch::channel(false);
    let mut tasks = JoinSet::new();
    tasks.spawn(bot.clone().checker(stopped.clone()));
    tasks.spawn(bot.clone().reader(stopped.clone()));
    tasks.spawn(bot.clone().writer(stopped.clone()));
    tasks.spawn(bot.clone().viewer(stopped.clone()));
    tasks.spawn(bot.clone().sampler(stopped.clone()));
    if bot.sim.is_some() {
        tasks.spawn(bot.clone().scenario(stopped));
    }

    let interrupted = tokio::select! {
        () = tokio::time::sleep(bot.config.duration) => false,
        () = shutdown => true,
    };
    if interrupted {
        bot.say("interrupted: finishing the requests in flight");
    }
    // Every task stops taking new work and finishes what it is doing (each operation is
    // bounded by its own timeout).
    let _ = stop.send(true);
    while let Some(joined) = tasks.join_next().await {
        if let Err(e) = joined {
            if e.is_panic() {
                std::panic::resume_unwind(e.into_panic());
            }
        }
    }
    bot.count_probes_after_stop().await;
    bot.sample();
    bot.view();
    let mut summary = bot.summary();
    summary.picture = bot.picture();
    Ok(summary)
}

struct Bot {
    config: Config,
    ids: Vec<EndpointId>,
    /// Where requests are addressed (the primary's URL); failnext sends each attempt to the
    /// endpoint it tries.
    url: String,
    client: ClientWithMiddleware,
    failover: Failover,
    monitor: Monitor,
    sim: Option<Sim>,
    counters: Arc<Counters>,
    stats: Mutex<Stats>,
    /// What the picture shows. Locked after `stats` when both are held.
    recording: Mutex<Recording>,
    started: Instant,
    out: Box<dyn Fn(&str) + Send + Sync>,
}

struct Sim {
    chain: Chain,
    providers: Vec<Provider>,
}

/// Waits for the next tick, or for the stop signal: `false` means stop.
async fn next(tick: &mut Interval, stop: &mut watch::Receiver<bool>) -> bool {
    if *stop.borrow() {
        return false;
    }
    tokio::select! {
        biased;
        _ = stop.changed() => false,
        _ = tick.tick() => true,
    }
}

fn every(period: Duration) -> Interval {
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    tick
}

impl Bot {
    async fn start(config: Config, out: Box<dyn Fn(&str) + Send + Sync>) -> Result<Bot, DemoError> {
        let simulated = config.is_simulated();
        let (endpoints, sim) = if simulated {
            let chain = Chain::start(SIM_CHAIN_ID, config.block_time);
            let mut providers = Vec::new();
            for id in PROVIDER_IDS {
                let provider =
                    chain.provider(id).await.map_err(|e| DemoError::new(format!("simulator: {e}")))?;
                providers.push(provider);
            }
            let endpoints: Vec<Endpoint> = providers.iter().map(Provider::endpoint).collect();
            (endpoints, Some(Sim { chain, providers }))
        } else {
            (real_endpoints(&config.rpc)?, None)
        };

        let probes = probe_client(simulated).map_err(|e| DemoError::new(format!("probe client: {e}")))?;
        let monitor = Monitor::builder(endpoints.clone())
            // Reference::Highest (0.1's rule): the timeline's outlier head at the end shows what
            // it does (the others look far behind). `Reference::Corroborated(2)` keeps an outlier
            // from evicting anyone, but with two of three providers answering it takes the
            // lower height as the reference, so a lagging primary would look current while
            // the backup rate-limits.
            .max_lag(config.max_lag)
            .probe_timeout(config.probe_timeout)
            .client(probes)
            .build()
            .map_err(|e| DemoError::new(causes(&e)))?;

        let counters = Arc::new(Counters::default());
        let failover = Failover::builder(endpoints.clone())
            // A bot passes `monitor.clone()` here; the demo records what failnext saw.
            .eligible(Recorded(monitor.clone()))
            // Rate limits are worth trying the next provider for (they do not count toward
            // cooldown, which only 502/503/504 and errors do).
            .additional_trigger_status_codes([StatusCode::TOO_MANY_REQUESTS])
            .cooldown(config.cooldown)
            .attempt_timeout(config.attempt_timeout)
            .on_event(hook(counters.clone()))
            .build()
            .map_err(|e| DemoError::new(causes(&e)))?;
        let http = if simulated { reqwest::Client::builder().no_proxy() } else { reqwest::Client::builder() };
        let http = http.build().map_err(|e| DemoError::new(format!("http client: {e}")))?;
        let client = ClientBuilder::new(http).with(failover.clone()).build();

        let ids: Vec<EndpointId> = endpoints.iter().map(|e| e.id().clone()).collect();
        let url = endpoints.first().map(|e| e.url().to_owned()).unwrap_or_default();
        Ok(Bot {
            stats: Mutex::new(Stats::new(ids.len())),
            recording: Mutex::new(Recording::new(ids.len())),
            config,
            ids,
            url,
            client,
            failover,
            monitor,
            sim,
            counters,
            started: Instant::now(),
            out,
        })
    }

    pub(super) fn stats(&self) -> MutexGuard<'_, Stats> {
        // Nothing panics while holding the lock; poisoned statistics are still statistics.
        self.stats.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(super) fn index(&self, id: &str) -> Option<usize> {
        self.ids.iter().position(|e| e == id)
    }

    /// Bounds one whole request: every provider may take up to an attempt timeout.
    pub(super) fn request_bound(&self) -> Duration {
        self.config.attempt_timeout * u32::try_from(self.ids.len()).unwrap_or(u32::MAX)
            + Duration::from_secs(1)
    }
}

/// The endpoints for `--rpc` URLs: `primary`, `backup`, `third` in order.
fn real_endpoints(urls: &[String]) -> Result<Vec<Endpoint>, DemoError> {
    if urls.is_empty() || urls.len() > PROVIDER_IDS.len() {
        return Err(DemoError::new(format!(
            "give one to {} provider URLs, not {}",
            PROVIDER_IDS.len(),
            urls.len()
        )));
    }
    let https = urls.iter().any(|url| url.trim_start().to_ascii_lowercase().starts_with("https:"));
    if https && !cfg!(feature = "tls") {
        return Err(DemoError::new(
            "https provider URLs need TLS: run the demo with `--features tls`, or use http URLs",
        ));
    }
    Ok(PROVIDER_IDS.iter().zip(urls).map(|(id, url)| Endpoint::new(*id, url.as_str())).collect())
}

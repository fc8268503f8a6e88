//! `Network`: the two providers an example talks to, simulated or real.

use std::error::Error;
use std::fmt;
use std::io;
use std::time::Duration;

use failnext::Endpoint;

use crate::sim::{Chain, Provider};

/// The variable naming the primary provider's URL for a run against real providers.
pub const PRIMARY_URL_VAR: &str = "ETH_RPC_PRIMARY_URL";
/// The variable naming the backup provider's URL for a run against real providers.
pub const BACKUP_URL_VAR: &str = "ETH_RPC_BACKUP_URL";

/// The chain id of the simulated chain (the one local development chains use).
pub const SIM_CHAIN_ID: u64 = 31337;

/// Two providers, `primary` and `backup`: simulated ones by default, or real ones when both
/// [`PRIMARY_URL_VAR`] and [`BACKUP_URL_VAR`] are set.
///
/// Examples inject faults only through [`sim`](Network::sim), so against real providers they
/// skip the faults and just run their calls.
#[derive(Debug)]
pub struct Network {
    primary: Endpoint,
    backup: Endpoint,
    sim: Option<Simulation>,
}

/// The simulated side of a [`Network`]: one chain and its two providers, both healthy at
/// first.
#[derive(Debug)]
pub struct Simulation {
    /// The chain both providers serve; its head advances every second.
    pub chain: Chain,
    /// The provider with id `primary`.
    pub primary: Provider,
    /// The provider with id `backup`.
    pub backup: Provider,
}

impl Network {
    /// Real providers when both variables are set, otherwise a new simulation.
    ///
    /// # Errors
    ///
    /// When only one of the variables is set, when a URL is `https` and the `tls` feature is
    /// off, or when the simulator cannot bind a loopback port.
    pub async fn from_env() -> Result<Network, SetupError> {
        let primary = std::env::var(PRIMARY_URL_VAR).ok().filter(|v| !v.is_empty());
        let backup = std::env::var(BACKUP_URL_VAR).ok().filter(|v| !v.is_empty());
        match (primary, backup) {
            (Some(primary), Some(backup)) => Network::real(primary, backup),
            (None, None) => Network::simulated().await.map_err(|e| SetupError(format!("simulator: {e}"))),
            _ => Err(SetupError(format!("set both {PRIMARY_URL_VAR} and {BACKUP_URL_VAR}, or neither"))),
        }
    }

    /// A new simulation: chain [`SIM_CHAIN_ID`] ticking every second, two healthy providers.
    ///
    /// # Errors
    ///
    /// When a loopback port cannot be bound.
    pub async fn simulated() -> io::Result<Network> {
        let chain = Chain::start(SIM_CHAIN_ID, Duration::from_secs(1));
        let primary = chain.provider("primary").await?;
        let backup = chain.provider("backup").await?;
        Ok(Network {
            primary: primary.endpoint(),
            backup: backup.endpoint(),
            sim: Some(Simulation { chain, primary, backup }),
        })
    }

    fn real(primary: String, backup: String) -> Result<Network, SetupError> {
        let https =
            [&primary, &backup].iter().any(|url| url.trim_start().to_ascii_lowercase().starts_with("https:"));
        if https && !cfg!(feature = "tls") {
            let why = "https provider URLs need TLS: run the example with `--features tls`, or use http URLs";
            return Err(SetupError(why.to_owned()));
        }
        Ok(Network {
            primary: Endpoint::new("primary", primary),
            backup: Endpoint::new("backup", backup),
            sim: None,
        })
    }

    /// The endpoints `primary` and `backup`, in that order, for `Failover::builder`.
    pub fn endpoints(&self) -> [Endpoint; 2] {
        [self.primary.clone(), self.backup.clone()]
    }

    /// The URL requests are addressed to: the primary's. failnext sends each attempt to the
    /// URL of the endpoint it tries, whatever the request was addressed to.
    pub fn url(&self) -> &str {
        self.primary.url()
    }

    /// The simulation, to inject faults and read counts; `None` against real providers.
    pub fn sim(&self) -> Option<&Simulation> {
        self.sim.as_ref()
    }

    /// A reqwest client for this network: a 10 s overall timeout, and no proxy for the
    /// simulator (it is on loopback).
    ///
    /// # Errors
    ///
    /// When reqwest cannot build a client.
    pub fn http_client(&self) -> reqwest::Result<reqwest::Client> {
        let builder = reqwest::Client::builder().timeout(Duration::from_secs(10));
        match self.sim {
            Some(_) => builder.no_proxy().build(),
            None => builder.build(),
        }
    }
}

impl fmt::Display for Network {
    /// Says which providers the example runs against, without printing real URLs (they may
    /// hold API keys).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.sim {
            Some(sim) => write!(
                f,
                "simulated providers: primary at {}, backup at {} (chain {})",
                sim.primary.url(),
                sim.backup.url(),
                sim.chain.id()
            ),
            None => write!(f, "real providers from {PRIMARY_URL_VAR} and {BACKUP_URL_VAR}"),
        }
    }
}

/// Why [`Network::from_env`] could not set up the providers.
pub struct SetupError(String);

impl fmt::Display for SetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

// `main` prints a returned error with `Debug`: keep it the plain sentence.
impl fmt::Debug for SetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Error for SetupError {}

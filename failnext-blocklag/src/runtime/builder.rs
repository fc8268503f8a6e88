//! `MonitorBuilder`: configuration, validated once in `build()` into the [`Settings`] a
//! [`Monitor`] runs with.

use std::fmt;
use std::time::Duration;

use failnext::Endpoint;

use crate::judging::reference::Reference;
use crate::probe::rpc::Method;
use crate::runtime::config_error::ConfigError;
use crate::runtime::monitor::Monitor;
use crate::runtime::settings::{Freshness, Settings};

/// The probe timeout used when none is set.
const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(5);

impl Monitor {
    /// Starts configuring a monitor of `endpoints`, usually the same list given to
    /// [`failnext::Failover::builder`]. The endpoints are copied; they are validated by
    /// [`MonitorBuilder::build`] with the same rules as failnext's.
    pub fn builder(endpoints: impl IntoIterator<Item = Endpoint>) -> MonitorBuilder {
        MonitorBuilder::new(endpoints)
    }
}

/// Configures a [`Monitor`]. Made by [`Monitor::builder`]; every setter consumes and returns
/// the builder, and nothing is checked until [`build`](MonitorBuilder::build).
#[must_use = "a builder does nothing until build() is called"]
pub struct MonitorBuilder {
    endpoints: Vec<Endpoint>,
    max_lag: u64,
    client: Option<reqwest::Client>,
    /// `None` until set: 5 s for checks, `min(5 s, interval)` for the spawned schedule.
    probe_timeout: Option<Duration>,
    expected_chain_id: Option<u64>,
    freshness: Freshness,
    readmit_after: u32,
    reference: Reference,
    max_lag_secs: Option<u64>,
    stall_after: u32,
    head: Method,
    agreement: u32,
    max_head_age: Option<Duration>,
    on_event: Option<crate::runtime::event::Hook>,
    #[cfg(feature = "redis")]
    fleet: Option<failnext::fleet::Fleet>,
}

impl MonitorBuilder {
    fn new(endpoints: impl IntoIterator<Item = Endpoint>) -> Self {
        MonitorBuilder {
            endpoints: endpoints.into_iter().collect(),
            max_lag: 0,
            client: None,
            probe_timeout: None,
            expected_chain_id: None,
            freshness: Freshness::default(),
            readmit_after: 1,
            reference: Reference::Plausible,
            max_lag_secs: None,
            stall_after: crate::judging::round::DEFAULT_STALL_AFTER,
            head: Method::BlockNumber,
            agreement: crate::judging::agreement::DEFAULT_AGREEMENT,
            max_head_age: None,
            on_event: None,
            #[cfg(feature = "redis")]
            fleet: None,
        }
    }

    /// The largest number of blocks a provider may be behind the highest height observed in
    /// the same check and stay eligible. The limit is inclusive: with `3`, a provider 3 blocks
    /// behind is eligible and one 4 blocks behind is not; `0` accepts only providers at the
    /// highest observed height.
    ///
    /// Default is 0, as in the reference library.
    pub fn max_lag(mut self, blocks: u64) -> Self {
        self.max_lag = blocks;
        self
    }

    /// The HTTP client that sends the probes, and nothing else.
    ///
    /// Give it plain `reqwest::Client` settings (TLS, proxy, user agent). It must send each
    /// probe to the URL it is given: do not wrap it in failnext, which would reroute probes of
    /// a lagging provider to another one. Disable redirects on it
    /// (`redirect(reqwest::redirect::Policy::none())`), or a redirect will be followed where
    /// the reference treats it as a failure. Its own timeouts, if any, also count as probe
    /// timeouts.
    ///
    /// Default is a client built by the monitor with redirects disabled and no timeouts of its
    /// own.
    pub fn client(mut self, client: reqwest::Client) -> Self {
        self.client = Some(client);
        self
    }

    /// The longest one probe call may take, from connecting to the end of the body. A
    /// provider that takes longer fails that check with
    /// [`ProbeError::Timeout`](crate::ProbeError::Timeout), and the other providers publish
    /// without it: one hanging provider cannot stall a check beyond this bound.
    ///
    /// It bounds each call, not the whole check: a [`Monitor::check`] waiting for its turn
    /// behind another check is not limited by it. Wrap the check in your own timeout for
    /// that.
    ///
    /// Default is 5 seconds for [`Monitor::check`], and `min(5 s, interval)` for the probes of
    /// a [spawned](Monitor::spawn) schedule (a probe that takes longer than the interval
    /// would hold its provider's entry for longer than the schedule means to look). Setting
    /// it applies it to both.
    pub fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.probe_timeout = Some(timeout);
        self
    }

    /// Verifies that each provider serves the chain `chain_id` (`1` for Ethereum mainnet),
    /// with an `eth_chainId` call sent alongside the head call (`eth_blockNumber`, or
    /// `eth_getBlockByNumber` with [`head_with_hash`](MonitorBuilder::head_with_hash)), at
    /// every check and at every probe of a [spawned](Monitor::spawn) schedule, so a provider
    /// switched to another chain behind the same URL (across a restart, say) is noticed at its
    /// next probe.
    ///
    /// A provider that reports another chain is ineligible for that check, with
    /// [`ProbeError::WrongChain`](crate::ProbeError::WrongChain); one whose `eth_chainId` call
    /// fails is ineligible with that call's error, because its height could belong to any
    /// chain. This goes beyond the reference library, which leaves chain ids to configuration.
    ///
    /// Default is no chain check: only the head call is sent.
    pub fn expected_chain_id(mut self, chain_id: u64) -> Self {
        self.expected_chain_id = Some(chain_id);
        self
    }

    /// Makes this monitor one of a fleet's (feature `redis`): each provider is probed by one
    /// process of the fleet at a time, the holder of a lease on it (renewed at each of its
    /// probes, free for another process once not renewed for three probe timeouts, at least
    /// 3 s: a holder that dies is replaced); the holder publishes each probe's result in
    /// Redis, and the other monitors take it as their own probe of that provider (a wrong
    /// chain, a failure, a head). The fleet's probe load is one process's. Between probes,
    /// a new head a provider shows in one process's traffic is every monitor's within a
    /// round trip (announced once fleet-wide, never a head far ahead of the chain: that one
    /// has its provider probed instead). When Redis is unavailable, every monitor probes on
    /// its own, as without a fleet. Use the same endpoint ids in every process: they name
    /// the leases.
    #[cfg(feature = "redis")]
    pub fn fleet(mut self, fleet: failnext::fleet::Fleet) -> Self {
        self.fleet = Some(fleet);
        self
    }

    /// Makes answers expire per endpoint: [`Monitor::eligible`] accepts an endpoint only if its
    /// last good probe (the last check in which it answered with a valid height, carried from
    /// snapshot to snapshot) is at most `grace` old at the time of asking. An endpoint that has
    /// never answered is ineligible, and one that was fit stops being eligible `grace` after
    /// its last answer when checks stop or keep failing. Other rules still apply: within the
    /// grace an endpoint is eligible only if it is fit in the latest snapshot.
    ///
    /// Grace does not apply before the first publication, which stays fail-open unless
    /// [`fail_closed`](MonitorBuilder::fail_closed) is set. Setting it makes `eligible()` read
    /// the (Tokio) clock on every call.
    ///
    /// Default is no grace: published answers do not expire.
    pub fn grace(mut self, grace: Duration) -> Self {
        self.freshness.grace = Some(grace);
        self
    }

    /// Makes the latest snapshot stop deciding once it is older than `max_age`
    /// ([`Snapshot::age`](crate::Snapshot::age)), as when no check has published yet: every
    /// configured endpoint is then eligible (fail-open, the default), or none is with
    /// [`fail_closed`](MonitorBuilder::fail_closed). A later publication decides again.
    ///
    /// This expires the monitor's knowledge as a whole; [`grace`](MonitorBuilder::grace)
    /// expires each endpoint, and always towards ineligible. Setting it makes `eligible()`
    /// read the (Tokio) clock on every call.
    ///
    /// Default is no maximum age: the latest snapshot stays in force.
    pub fn max_age(mut self, max_age: Duration) -> Self {
        self.freshness.max_age = Some(max_age);
        self
    }

    /// Makes the monitor fail-closed: before the first check publishes (and while the
    /// snapshot is older than [`max_age`](MonitorBuilder::max_age)), no endpoint is eligible.
    ///
    /// failnext then has no eligible endpoint for a request until the first successful check,
    /// so check (or [`spawn`](Monitor::spawn)) before sending. Costs nothing on `eligible()`.
    ///
    /// Default is fail-open: every configured endpoint is eligible until a check publishes.
    pub fn fail_closed(mut self) -> Self {
        self.freshness.fail_closed = true;
        self
    }

    /// Calls `hook` with each [`MonitorEvent`](crate::MonitorEvent) (the reference head
    /// stalling and moving again), right after the check that saw it publishes. The hook runs on
    /// the checking task: keep it short, do not block, do not call `check` from it.
    pub fn on_event(
        mut self,
        hook: impl Fn(&crate::runtime::event::MonitorEvent) + Send + Sync + 'static,
    ) -> Self {
        self.on_event = Some(std::sync::Arc::new(hook));
        self
    }

    /// Hysteresis: how many consecutive good checks re-admit a provider that was ineligible.
    ///
    /// A good check is one whose probe succeeded within the lag threshold
    /// ([`max_lag`](MonitorBuilder::max_lag) or [`max_lag_secs`](MonitorBuilder::max_lag_secs))
    /// of the reference height. A provider eligible in the previous snapshot (or before the
    /// first publication) stays eligible at a good check; one that was ineligible (failed,
    /// lagging, or still being re-admitted) becomes eligible only at its `checks`-th good
    /// check in a row, so a flapping provider cannot change from ineligible to eligible more
    /// often than once per `checks` checks. Any bad check makes it ineligible at once and
    /// restarts the count. Only published checks count: a check in which every probe failed
    /// publishes nothing and changes no count.
    /// [`SnapshotEntry::consecutive_good_checks`](crate::SnapshotEntry::consecutive_good_checks)
    /// shows the progress.
    ///
    /// Default is 1, the 0.1 behaviour: the first good check re-admits. 0 is rejected by
    /// [`build`](MonitorBuilder::build).
    pub fn readmit_after(mut self, checks: u32) -> Self {
        self.readmit_after = checks;
        self
    }

    /// Which height of a check the others are compared with: the reference that
    /// [`max_lag`](MonitorBuilder::max_lag) counts from, and that
    /// [`Snapshot::highest`](crate::Snapshot::highest) reports.
    ///
    /// With [`Reference::Corroborated(k)`](Reference::Corroborated), a provider alone far
    /// ahead of the others cannot make them all ineligible: the reference is the highest
    /// height at least `k` providers have reached.
    ///
    /// Default is [`Reference::Plausible`]: the highest height the clock does not rule out,
    /// which is [`Reference::Highest`] (the 0.1 rule) exactly when the probe reads no block
    /// timestamps, as [`check`](crate::Monitor::check)'s default `eth_blockNumber` probe does.
    pub fn reference(mut self, reference: Reference) -> Self {
        self.reference = reference;
        self
    }

    /// A lag threshold in time as well as in blocks: a provider is eligible when it is within
    /// [`max_lag`](MonitorBuilder::max_lag) blocks **or** within `seconds` of the reference,
    /// its lag in time being its lag in blocks times the observed
    /// [block time](crate::Snapshot::block_time) (inclusive). Until a block time is known (the
    /// reference has not advanced yet), only the blocks count. Useful across chains: 30
    /// seconds is 2 blocks on Ethereum and 120 on a chain of 250 ms blocks. Set `max_lag(0)`
    /// to judge by time alone.
    ///
    /// Default is none: only [`max_lag`](MonitorBuilder::max_lag) counts.
    pub fn max_lag_secs(mut self, seconds: u64) -> Self {
        self.max_lag_secs = Some(seconds);
        self
    }

    /// Staleness by the block's timestamp: a provider whose head is older than `max_age` is
    /// [stale](crate::SnapshotEntry::is_stale), and ineligible, even when no other provider
    /// is ahead of it (a provider alone, or all of them stalled together: then the snapshot
    /// reports the [chain stalled](crate::Snapshot::chain_stalled)). A head's age is how far
    /// the wall clock was past its block's timestamp when the provider first showed that
    /// head, plus the time since on the monitor's (Tokio) clock
    /// ([`SnapshotEntry::head_age`](crate::SnapshotEntry::head_age)). It applies where the
    /// probe reads the head block: a [spawned](crate::Monitor::spawn) monitor's probe, or
    /// [`head_with_hash`](MonitorBuilder::head_with_hash).
    ///
    /// Default, under [`Reference::Plausible`] (the default reference): five learned
    /// [block times](crate::Snapshot::block_time), at least 10 s, or 60 s before a block time
    /// is learned. Under another reference only a `max_head_age` set here applies. Zero is
    /// rejected by [`build`](MonitorBuilder::build).
    pub fn max_head_age(mut self, max_age: Duration) -> Self {
        self.max_head_age = Some(max_age);
        self
    }

    /// Stall detection: the reference head is reported
    /// [stalled](crate::Snapshot::stalled) when it has not advanced for more than `block_times`
    /// observed [block times](crate::Snapshot::block_time). A stall is reported, not acted on:
    /// it makes no provider ineligible.
    ///
    /// Default is 3. 0 is rejected by [`build`](MonitorBuilder::build).
    pub fn stall_after(mut self, block_times: u32) -> Self {
        self.stall_after = block_times;
        self
    }

    /// Reads each provider's head with its hash: every check sends
    /// `{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["latest",false]}`
    /// instead of `eth_blockNumber`, and takes the height from the block's `number`. Each
    /// entry then has a [`head_hash`](crate::SnapshotEntry::head_hash), and the snapshot an
    /// [agreed head](crate::Snapshot::agreed): a block, by number and hash, that enough
    /// eligible providers report.
    ///
    /// A block with its transaction hashes is often larger than the probe's 4 KiB cap
    /// ([`MAX_BODY`](crate::MAX_BODY)), so the answer is not read whole: the probe reads at
    /// most the first 4 KiB and takes the `result` object's own `number` and `hash` from them
    /// (geth writes keys in alphabetical order, anvil and reth write `hash` first; all put them
    /// before `transactions`). A block whose `number` or `hash` is not within the first 4 KiB,
    /// a `null` result, or a malformed value fails the probe with a
    /// [`ProbeError`](crate::ProbeError) naming the endpoint; the exact rules are those of
    /// [`parse_head_response`](crate::parse_head_response). The rest of a longer body is read
    /// and thrown away in the background (at most 256 KiB more, within 2 s), so that its
    /// connection goes back to the pool instead of a new connection (a TLS handshake) per
    /// provider and check; a body declared longer than that is not read, and its connection
    /// closes.
    ///
    /// Everything else stays as it is: the height is compared, and eligibility decided, by the
    /// same rules; the hash does not affect eligibility. Costs one larger answer per provider
    /// and check.
    ///
    /// Default is `eth_blockNumber`, which reads no hash:
    /// [`Snapshot::agreed`](crate::Snapshot::agreed) is then always `None`.
    pub fn head_with_hash(mut self) -> Self {
        self.head = Method::BlockByNumber;
        self
    }

    /// How many eligible providers must report the same block, by number and hash, for it to
    /// be the [agreed head](crate::Snapshot::agreed) of a check.
    ///
    /// Clipped to the number of eligible providers that reported a hash in that check, so a
    /// single eligible provider agrees with itself: check
    /// [`AgreedHead::providers`](crate::AgreedHead::providers) if one is not enough for you.
    /// Only has an effect with [`head_with_hash`](MonitorBuilder::head_with_hash).
    ///
    /// Default is 2. 0 is rejected by [`build`](MonitorBuilder::build).
    pub fn agreement(mut self, providers: u32) -> Self {
        self.agreement = providers;
        self
    }

    /// Validates the configuration and builds the monitor. No probe is sent: every configured
    /// endpoint is eligible until the first check publishes (none is, with
    /// [`fail_closed`](MonitorBuilder::fail_closed)).
    ///
    /// # Errors
    ///
    /// A [`ConfigError`], for the first of these that fails, in this order:
    ///
    /// - an endpoint breaks a rule of [`failnext::validate_endpoints`] (the list is empty; an
    ///   id is empty or repeated; a URL is not absolute, does not parse, is not http(s), has no
    ///   host, has a `#`, surrounding whitespace or a malformed `%` escape); the
    ///   [`failnext::ConfigError`] is the source;
    /// - the probe timeout is zero;
    /// - the [grace](MonitorBuilder::grace) is zero;
    /// - the [maximum age](MonitorBuilder::max_age) is zero;
    /// - [`readmit_after`](MonitorBuilder::readmit_after) is 0;
    /// - the [`reference`](MonitorBuilder::reference) is `Corroborated(0)`;
    /// - [`stall_after`](MonitorBuilder::stall_after) is 0;
    /// - [`agreement`](MonitorBuilder::agreement) is 0;
    /// - no client was given and the default one cannot be built.
    pub fn build(self) -> Result<Monitor, ConfigError> {
        let validated = failnext::validate_endpoints(&self.endpoints).map_err(ConfigError::endpoints)?;
        if self.probe_timeout.is_some_and(|timeout| timeout.is_zero()) {
            return Err(ConfigError::probe_timeout());
        }
        if self.freshness.grace.is_some_and(|grace| grace.is_zero()) {
            return Err(ConfigError::grace());
        }
        if self.freshness.max_age.is_some_and(|max_age| max_age.is_zero()) {
            return Err(ConfigError::max_age());
        }
        if self.readmit_after == 0 {
            return Err(ConfigError::readmit_after());
        }
        if self.reference == Reference::Corroborated(0) {
            return Err(ConfigError::reference());
        }
        if self.stall_after == 0 {
            return Err(ConfigError::stall_after());
        }
        if self.agreement == 0 {
            return Err(ConfigError::agreement());
        }
        if self.max_head_age.is_some_and(|age| age.is_zero()) {
            return Err(ConfigError::max_head_age());
        }
        let client = match self.client {
            Some(client) => client,
            None => default_client().map_err(ConfigError::client)?,
        };
        // The validated URLs keep any userinfo, which reqwest sends as Basic credentials.
        Ok(Monitor::new(Settings {
            endpoints: self.endpoints,
            urls: validated,
            max_lag: self.max_lag,
            client,
            probe_timeout: self.probe_timeout.unwrap_or(DEFAULT_PROBE_TIMEOUT),
            probe_timeout_set: self.probe_timeout.is_some(),
            expected_chain_id: self.expected_chain_id,
            head: self.head,
            freshness: self.freshness,
            rules: crate::judging::round::Rules {
                readmit_after: self.readmit_after,
                reference: self.reference,
                max_lag_secs: self.max_lag_secs,
                stall_after: self.stall_after,
                agreement: self.agreement,
                max_head_age: self.max_head_age,
            },
            on_event: self.on_event,
            #[cfg(feature = "redis")]
            fleet: self.fleet,
        }))
    }
}

fn default_client() -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build()
}

impl fmt::Debug for MonitorBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MonitorBuilder")
            .field("endpoints", &self.endpoints)
            .field("max_lag", &self.max_lag)
            .field("client", &self.client.as_ref().map(|_| "<reqwest::Client>"))
            .field("probe_timeout", &self.probe_timeout)
            .field("expected_chain_id", &self.expected_chain_id)
            .field("fail_closed", &self.freshness.fail_closed)
            .field("grace", &self.freshness.grace)
            .field("max_age", &self.freshness.max_age)
            .field("readmit_after", &self.readmit_after)
            .field("reference", &self.reference)
            .field("max_lag_secs", &self.max_lag_secs)
            .field("stall_after", &self.stall_after)
            .field("head", &self.head.name())
            .field("agreement", &self.agreement)
            .finish()
    }
}

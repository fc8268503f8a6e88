//! `MetricsEndpoint`: the demo's `--metrics ADDR` (feature `prometheus`). failnext's and
//! failnext-blocklag's metrics (their feature `metrics`, labelled by endpoint id) are served for
//! Prometheus to scrape, on a loopback address only.
//!
//! The exporter is `metrics-exporter-prometheus`, the `metrics` facade's own, installed as the
//! process's global recorder with its HTTP listener: it answers `GET /metrics` (any path, in
//! fact) with the text exposition format. A process has one global recorder, so an endpoint can
//! be started once per process.

use std::error::Error;
use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

/// The metric the demo shows at the end of a run: failnext's attempts by endpoint and class.
pub const EXCERPT_METRIC: &str = "failnext_attempts_total";

/// A Prometheus scrape endpoint on a loopback address, serving what failnext and
/// failnext-blocklag record in this process.
#[derive(Clone, Debug)]
pub struct MetricsEndpoint {
    addr: SocketAddr,
}

impl MetricsEndpoint {
    /// Installs the Prometheus exporter as the process's `metrics` recorder, with its HTTP
    /// listener on `addr`. Port 0 takes a free port; [`addr`](Self::addr) says which.
    ///
    /// Call it from within a Tokio runtime to serve on that runtime (the demo does); outside one
    /// the exporter runs on a thread of its own.
    ///
    /// # Errors
    ///
    /// - [`MetricsError::NotLoopback`]: `addr` is not a loopback address (`127.0.0.0/8`, `::1`).
    ///   The demo does not open a port to the network.
    /// - [`MetricsError::FeatureOff`]: the crate was built without its `prometheus` feature.
    /// - [`MetricsError::Exporter`]: the listener cannot bind `addr` (the port is taken, say),
    ///   or a recorder is already installed in this process.
    pub fn start(addr: SocketAddr) -> Result<MetricsEndpoint, MetricsError> {
        if !addr.ip().is_loopback() {
            return Err(MetricsError::NotLoopback(addr));
        }
        install(addr).map(|addr| MetricsEndpoint { addr })
    }

    /// The address the listener is bound to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL to scrape: `http://ADDR/metrics`.
    pub fn url(&self) -> String {
        format!("http://{}/metrics", self.addr)
    }

    /// Scrapes the endpoint once, as Prometheus would: the text exposition.
    ///
    /// # Errors
    ///
    /// When the request fails or is answered with an error status.
    pub async fn scrape(&self) -> Result<String, reqwest::Error> {
        // A loopback address: never through a proxy a variable may name.
        let client = reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(5)).build()?;
        client.get(self.url()).send().await?.error_for_status()?.text().await
    }
}

/// The samples of `metric` in a scrape (its `# TYPE` and `# HELP` lines left out), sorted.
pub fn excerpt<'a>(scrape: &'a str, metric: &str) -> Vec<&'a str> {
    let mut lines: Vec<&str> = scrape
        .lines()
        .filter(|line| line.strip_prefix(metric).is_some_and(|rest| rest.starts_with(['{', ' '])))
        .collect();
    lines.sort_unstable();
    lines
}

#[cfg(feature = "prometheus")]
fn install(addr: SocketAddr) -> Result<SocketAddr, MetricsError> {
    let failed =
        |addr, reason: &dyn fmt::Display| MetricsError::Exporter { addr, reason: reason.to_string() };
    // The exporter binds its listener itself and does not say which port it got: for port 0,
    // take a free port here and hand it over. It is free again in between; should another
    // process take it, the exporter's bind fails with an error, nothing worse.
    let addr = if addr.port() == 0 {
        std::net::TcpListener::bind(addr).and_then(|l| l.local_addr()).map_err(|e| failed(addr, &e))?
    } else {
        addr
    };
    metrics_exporter_prometheus::PrometheusBuilder::new()
        .with_http_listener(addr)
        .install()
        .map_err(|e| failed(addr, &e))?;
    Ok(addr)
}

#[cfg(not(feature = "prometheus"))]
fn install(_: SocketAddr) -> Result<SocketAddr, MetricsError> {
    Err(MetricsError::FeatureOff)
}

/// Why the metrics endpoint did not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum MetricsError {
    /// The address is not a loopback address.
    NotLoopback(SocketAddr),
    /// The crate was built without its `prometheus` feature.
    FeatureOff,
    /// The exporter could not start on `addr`.
    Exporter {
        /// The address it was to listen on.
        addr: SocketAddr,
        /// What went wrong, as the exporter or the socket said it.
        reason: String,
    },
}

impl fmt::Display for MetricsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MetricsError::NotLoopback(addr) => write!(
                f,
                "metrics address {addr} is not a loopback address: the demo serves metrics on \
                 loopback only (127.0.0.1, [::1]), e.g. 127.0.0.1:9898"
            ),
            MetricsError::FeatureOff => f.write_str(
                "metrics need the crate's `prometheus` feature: `cargo xtask demo --metrics ADDR` \
                 turns it on, or `cargo run -p failnext-examples --features prometheus --bin demo \
                 -- --metrics ADDR`",
            ),
            MetricsError::Exporter { addr, reason } => {
                write!(f, "the Prometheus exporter could not start on {addr}: {reason}")
            }
        }
    }
}

impl Error for MetricsError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_that_is_not_loopback_is_refused_before_anything_binds() {
        for addr in ["0.0.0.0:9898", "192.168.1.10:9898", "[::]:9898", "[::ffff:127.0.0.1]:9898"] {
            let err = MetricsEndpoint::start(addr.parse().unwrap()).unwrap_err();
            assert!(matches!(err, MetricsError::NotLoopback(_)), "{addr}: {err:?}");
            assert!(err.to_string().contains("not a loopback address"), "{err}");
        }
    }

    #[cfg(not(feature = "prometheus"))]
    #[test]
    fn without_the_feature_a_loopback_address_is_refused_naming_the_feature() {
        let err = MetricsEndpoint::start("127.0.0.1:0".parse().unwrap()).unwrap_err();
        assert!(matches!(err, MetricsError::FeatureOff), "{err:?}");
        assert!(err.to_string().contains("--features prometheus"), "{err}");
    }

    #[test]
    fn the_excerpt_keeps_only_the_samples_of_the_metric_sorted() {
        let scrape = "# TYPE failnext_attempts_total counter\n\
                      failnext_attempts_total{endpoint=\"backup\",class=\"answer\"} 3\n\
                      failnext_attempts_total_other 1\n\
                      failnext_attempts_total{endpoint=\"a\",class=\"trigger\"} 1\n\
                      failnext_failovers_total{endpoint=\"a\"} 1\n";
        assert_eq!(
            excerpt(scrape, EXCERPT_METRIC),
            [
                "failnext_attempts_total{endpoint=\"a\",class=\"trigger\"} 1",
                "failnext_attempts_total{endpoint=\"backup\",class=\"answer\"} 3",
            ]
        );
    }
}

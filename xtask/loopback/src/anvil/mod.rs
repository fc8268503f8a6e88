//! [`Anvil`]: one real anvil node (Foundry's local Ethereum node) on a free loopback port,
//! started and stopped by its handle, for the real-node tests.
//!
//! The binary comes from `FAILNEXT_ANVIL` when it is set, else from the install `cargo xtask
//! anvil` (and `cargo xtask ci`) makes under the workspace target dir
//! (`target/anvil/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil`, `CARGO_TARGET_DIR`
//! honoured). When neither is there, [`Anvil::start`] fails with [`NOT_FOUND`], which says how to
//! get it: a test that needs anvil fails, it never skips.
//!
//! Each node listens on 127.0.0.1 only, mines on every transaction (or every
//! [`block_time`](AnvilOptions::block_time)), has anvil's funded dev accounts (the first five
//! in [`DEV_ADDRESSES`], [`DEV_PRIVATE_KEYS`]), and dies with its handle. Faults, on the real
//! process:
//!
//! | fault | how | what a client sees |
//! | --- | --- | --- |
//! | a dead node | [`Anvil::kill`]: SIGKILL, reaped | connection refused |
//! | a hung node | [`Anvil::pause`]: SIGSTOP, every thread stopped, until [`Anvil::resume`] (SIGCONT) | connections accepted by the kernel, nothing answers |
//! | a lagging node | [`Anvil::mine`] on the others | a lower `eth_blockNumber` |
//! | a node on another chain | [`AnvilOptions::chain_id`] | another `eth_chainId` |
//!
//! ```no_run
//! use failnext_loopback::{Anvil, AnvilOptions};
//!
//! # async fn demo() -> Result<(), failnext_loopback::AnvilError> {
//! let mut node = Anvil::start(AnvilOptions::new()).await?;
//! node.mine(20).await?;
//! assert_eq!(node.block_number().await?, 20);
//! node.pause()?; // requests to node.url() now hang
//! node.resume()?;
//! node.kill()?; // and now they are refused
//! # Ok(())
//! # }
//! ```

mod error;
mod process;
mod rpc;
mod signals;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::oneshot;

use crate::lock;
pub use error::AnvilError;
use process::{drain, locate, watch_stdout};
use rpc::quantity;

/// The variable that names the anvil binary; it wins over the default install.
pub const ENV_VAR: &str = "FAILNEXT_ANVIL";

/// What [`Anvil::start`] says when it finds no anvil binary.
pub const NOT_FOUND: &str = "anvil not found: run `cargo xtask anvil` (or `cargo xtask ci`, which installs it), or set FAILNEXT_ANVIL to an anvil binary";

/// anvil's chain id unless told otherwise.
pub const DEFAULT_CHAIN_ID: u64 = 31337;

/// The addresses of anvil's first five dev accounts (from its well-known test mnemonic), each
/// funded with 10 000 ether; `DEV_PRIVATE_KEYS[i]` signs for `DEV_ADDRESSES[i]`.
pub const DEV_ADDRESSES: [&str; 5] = [
    "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
    "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
    "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
    "0x90F79bf6EB2c4f870365E785982E1f101E93b906",
    "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65",
];

/// The private keys of [`DEV_ADDRESSES`], hex with `0x`. Public knowledge: for local test
/// chains only.
pub const DEV_PRIVATE_KEYS: [&str; 5] = [
    "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
    "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
    "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
    "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6",
    "0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a",
];

/// The package path of the binary inside an install dir (what `cargo xtask anvil` makes).
const PACKAGE_BINARY: &str = "node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil";

/// How long [`Anvil::start`] waits for `eth_chainId` to answer.
const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one [`Anvil::rpc`] call may take.
const RPC_TIMEOUT: Duration = Duration::from_secs(10);

/// The most of anvil's stderr a handle keeps.
const STDERR_CAP: usize = 64 * 1024;

/// How one node is started: [`Anvil::start`]`(AnvilOptions::default())` is anvil's own
/// defaults, chain id 31337, a block mined on every transaction.
#[derive(Clone, Debug)]
pub struct AnvilOptions {
    chain_id: u64,
    block_time: Option<Duration>,
    port: Option<u16>,
    args: Vec<String>,
    binary: Option<PathBuf>,
}

impl Default for AnvilOptions {
    fn default() -> Self {
        AnvilOptions {
            chain_id: DEFAULT_CHAIN_ID,
            block_time: None,
            port: None,
            args: Vec::new(),
            binary: None,
        }
    }
}

impl AnvilOptions {
    /// anvil's defaults, as [`Default`].
    pub fn new() -> AnvilOptions {
        AnvilOptions::default()
    }

    /// The chain id the node reports (`--chain-id`).
    #[must_use]
    pub fn chain_id(mut self, chain_id: u64) -> Self {
        self.chain_id = chain_id;
        self
    }

    /// Mines a block every `interval` (`--block-time`) instead of one per transaction.
    #[must_use]
    pub fn block_time(mut self, interval: Duration) -> Self {
        self.block_time = Some(interval);
        self
    }

    /// Listens on this loopback port rather than one the kernel picks: to start a node again
    /// where its clients expect it, on the [`port`](Anvil::port) of the one it replaces.
    #[must_use]
    pub fn port(mut self, port: u16) -> Self {
        self.port = Some(port);
        self
    }

    /// One more command-line argument for anvil, after the handle's own (`--host 127.0.0.1
    /// --port 0 --chain-id N`). Not `--quiet`, `--host` or `--port`: the handle reads the
    /// port from the `Listening on` line anvil prints.
    #[must_use]
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// The binary to run, instead of `FAILNEXT_ANVIL` or the default install.
    #[must_use]
    pub fn binary(mut self, path: impl Into<PathBuf>) -> Self {
        self.binary = Some(path.into());
        self
    }
}

/// One running anvil node on `127.0.0.1:`[`port`](Anvil::port). Dropping it kills the process
/// (SIGKILL, which also ends a paused one) and reaps it.
#[derive(Debug)]
pub struct Anvil {
    child: Child,
    /// Whether the child was killed and reaped: its pid may belong to another process now.
    reaped: bool,
    port: u16,
    chain_id: u64,
    client: reqwest::Client,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// The thread reading stderr; it ends when the process does.
    stderr_reader: Option<JoinHandle<()>>,
}

// ===== impl Anvil =====

impl Anvil {
    /// Starts a node on a free loopback port (or the one [`AnvilOptions::port`] gives) and
    /// waits (at most 10 s) until it answers `eth_chainId` with the configured chain id.
    ///
    /// # Errors
    ///
    /// [`AnvilError::NotFound`] (its message is [`NOT_FOUND`]) when there is no binary; the
    /// others when it cannot be started, exits, or does not answer in time.
    pub async fn start(options: AnvilOptions) -> Result<Anvil, AnvilError> {
        let binary = locate(&options)?;
        let client = reqwest::Client::builder().no_proxy().build().map_err(AnvilError::Http)?;
        let (mut anvil, listening) = Anvil::spawn(&binary, &options, client)?;
        anvil.port = anvil.wait_listening(listening).await?;
        anvil.wait_ready(options.chain_id).await?;
        Ok(anvil)
    }

    /// Runs anvil on `--port 0` (unless a port is given): the kernel picks a free port when
    /// anvil binds, and anvil prints it, so no other process can take it between picking and
    /// binding.
    fn spawn(
        binary: &Path,
        options: &AnvilOptions,
        client: reqwest::Client,
    ) -> Result<(Anvil, oneshot::Receiver<u16>), AnvilError> {
        let mut command = Command::new(binary);
        command
            .args(["--host", "127.0.0.1", "--port", &options.port.unwrap_or(0).to_string()])
            .args(["--chain-id", &options.chain_id.to_string()]);
        if let Some(interval) = options.block_time {
            command.args(["--block-time", &interval.as_secs_f64().to_string()]);
        }
        command.args(&options.args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child =
            command.spawn().map_err(|source| AnvilError::Spawn { binary: binary.to_owned(), source })?;
        let (port_tx, port_rx) = oneshot::channel();
        if let Some(pipe) = child.stdout.take() {
            watch_stdout(pipe, port_tx);
        }
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let stderr_reader = child.stderr.take().and_then(|pipe| drain(pipe, Arc::clone(&stderr)));
        let anvil = Anvil {
            child,
            reaped: false,
            port: 0,
            chain_id: options.chain_id,
            client,
            stderr,
            stderr_reader,
        };
        Ok((anvil, port_rx))
    }

    /// The port anvil says it listens on; an error when it exits (or says nothing) first.
    async fn wait_listening(&mut self, listening: oneshot::Receiver<u16>) -> Result<u16, AnvilError> {
        match tokio::time::timeout(READY_TIMEOUT, listening).await {
            Ok(Ok(port)) => Ok(port),
            // Its stdout closed without the line: it is exiting.
            Ok(Err(_)) => Err(self.failed_to_start().await),
            Err(_) => Err(AnvilError::NotReady {
                waited: READY_TIMEOUT,
                last: "anvil did not print the address it listens on".to_owned(),
            }),
        }
    }

    /// The error for a node that ends its output while starting: how it exited, and its
    /// stderr.
    async fn failed_to_start(&mut self) -> AnvilError {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(2) {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    self.reaped = true;
                    // The process is gone, so its stderr is at its end: read all of it.
                    if let Some(reader) = self.stderr_reader.take() {
                        let _ = reader.join();
                    }
                    return AnvilError::Exited { status, stderr: self.stderr() };
                }
                Ok(None) => tokio::time::sleep(Duration::from_millis(5)).await,
                Err(e) => return AnvilError::Wait(e),
            }
        }
        AnvilError::NotReady {
            waited: Duration::from_secs(2),
            last: format!("anvil closed its stdout without listening: {}", self.stderr().trim()),
        }
    }

    /// Polls `eth_chainId` until it answers, the process exits, or [`READY_TIMEOUT`] passes.
    async fn wait_ready(&mut self, chain_id: u64) -> Result<(), AnvilError> {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().map_err(AnvilError::Wait)? {
                self.reaped = true;
                return Err(AnvilError::Exited { status, stderr: self.stderr() });
            }
            match self.rpc_timeout("eth_chainId", json!([]), Duration::from_millis(500)).await {
                Ok(answer) => {
                    let reported = quantity("eth_chainId", &answer)?;
                    if reported != chain_id {
                        return Err(AnvilError::BadAnswer {
                            method: "eth_chainId".to_owned(),
                            answer: format!("chain id {reported}, started with {chain_id}"),
                        });
                    }
                    return Ok(());
                }
                Err(e) if started.elapsed() >= READY_TIMEOUT => {
                    return Err(AnvilError::NotReady { waited: READY_TIMEOUT, last: e.to_string() });
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    /// `http://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    /// The loopback port the node listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The node's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The chain id the node was started with.
    pub fn chain_id(&self) -> u64 {
        self.chain_id
    }

    /// Everything the node wrote to stderr so far (its first 64 KiB).
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&lock(&self.stderr)).into_owned()
    }
}

impl Drop for Anvil {
    fn drop(&mut self) {
        // SIGKILL ends a paused process too; waiting reaps it, so no zombie is left.
        let _ = self.kill();
    }
}

#[cfg(test)]
mod tests;

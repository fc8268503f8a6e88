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

use std::fmt;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::lock;

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

    /// Kills the node (SIGKILL) and reaps it: afterwards connections to its port are refused.
    /// Calling it again does nothing.
    ///
    /// # Errors
    ///
    /// When the signal cannot be sent or the process cannot be reaped.
    pub fn kill(&mut self) -> Result<(), AnvilError> {
        if self.reaped {
            return Ok(());
        }
        // An error here means it has already exited; `wait` reaps it either way.
        let _ = self.child.kill();
        self.child.wait().map_err(AnvilError::Wait)?;
        self.reaped = true;
        Ok(())
    }

    /// Stops the node (SIGSTOP) and returns once every thread of it is stopped: the kernel
    /// still accepts connections on its port, but nothing reads or answers them until
    /// [`resume`](Anvil::resume).
    ///
    /// # Errors
    ///
    /// When the node was killed, the signal cannot be sent, or the threads are not all stopped
    /// within 5 s.
    pub fn pause(&self) -> Result<(), AnvilError> {
        self.signal("STOP")?;
        self.settle("STOP", true)
    }

    /// Lets a [paused](Anvil::pause) node run again (SIGCONT), and returns once no thread of it
    /// is stopped; requests that waited are then answered.
    ///
    /// # Errors
    ///
    /// When the node was killed, the signal cannot be sent, or threads are still stopped after
    /// 5 s.
    pub fn resume(&self) -> Result<(), AnvilError> {
        self.signal("CONT")?;
        self.settle("CONT", false)
    }

    /// Waits until every thread is stopped (`stopped`) or none is: a signal is delivered to
    /// each thread on its own, so `kill` returning does not mean the process has stopped.
    fn settle(&self, signal: &'static str, stopped: bool) -> Result<(), AnvilError> {
        let started = Instant::now();
        loop {
            let states = thread_states(self.pid())
                .map_err(|e| AnvilError::Signal { signal, detail: e.to_string() })?;
            if !states.is_empty() && states.iter().all(|&state| (state == 'T') == stopped) {
                return Ok(());
            }
            if started.elapsed() > Duration::from_secs(5) {
                let detail = format!("thread states after 5 s: {}", states.iter().collect::<String>());
                return Err(AnvilError::Signal { signal, detail });
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn signal(&self, signal: &'static str) -> Result<(), AnvilError> {
        if self.reaped {
            return Err(AnvilError::Signal { signal, detail: "the node was killed".to_owned() });
        }
        // The shell's `kill` builtin: no crate, and no reliance on a `kill` binary.
        let status = Command::new("sh")
            .args(["-c", "kill -s \"$1\" \"$2\"", "sh", signal, &self.pid().to_string()])
            .status()
            .map_err(|e| AnvilError::Signal { signal, detail: e.to_string() })?;
        if status.success() {
            Ok(())
        } else {
            Err(AnvilError::Signal { signal, detail: format!("`kill -s {signal}` exited with {status}") })
        }
    }

    /// One JSON-RPC call to the node, bounded by 10 s; returns its `result`.
    ///
    /// # Errors
    ///
    /// [`AnvilError::Http`] when no HTTP answer came back, [`AnvilError::Rpc`] for a JSON-RPC
    /// error, [`AnvilError::BadAnswer`] for anything else that is not a `result`.
    pub async fn rpc(&self, method: &str, params: Value) -> Result<Value, AnvilError> {
        self.rpc_timeout(method, params, RPC_TIMEOUT).await
    }

    /// [`rpc`](Anvil::rpc) with its own bound.
    ///
    /// # Errors
    ///
    /// As [`rpc`](Anvil::rpc); a call that takes longer than `timeout` is an
    /// [`AnvilError::Http`] whose error `is_timeout()`.
    pub async fn rpc_timeout(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, AnvilError> {
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
        let response = self
            .client
            .post(self.url())
            .header("content-type", "application/json")
            .body(body.to_string())
            .timeout(timeout)
            .send()
            .await
            .map_err(AnvilError::Http)?;
        let bytes = response.bytes().await.map_err(AnvilError::Http)?;
        let bad = || AnvilError::BadAnswer {
            method: method.to_owned(),
            answer: String::from_utf8_lossy(&bytes[..bytes.len().min(512)]).into_owned(),
        };
        let mut answer: Value = serde_json::from_slice(&bytes).map_err(|_| bad())?;
        if let Some(error) = answer.get_mut("error") {
            return Err(AnvilError::Rpc { method: method.to_owned(), error: error.take() });
        }
        answer.get_mut("result").map(Value::take).ok_or_else(bad)
    }

    /// Mines `blocks` blocks at once (`anvil_mine`).
    ///
    /// # Errors
    ///
    /// As [`rpc`](Anvil::rpc).
    pub async fn mine(&self, blocks: u64) -> Result<(), AnvilError> {
        self.rpc("anvil_mine", json!([format!("{blocks:#x}")])).await.map(drop)
    }

    /// How many transactions `address` has sent, as of the latest block
    /// (`eth_getTransactionCount`): a check that a transfer reached this node or did not.
    ///
    /// # Errors
    ///
    /// As [`block_number`](Anvil::block_number).
    pub async fn nonce(&self, address: &str) -> Result<u64, AnvilError> {
        let answer = self.rpc("eth_getTransactionCount", json!([address, "latest"])).await?;
        quantity("eth_getTransactionCount", &answer)
    }

    /// The balance of `address` in wei, as of the latest block (`eth_getBalance`).
    ///
    /// # Errors
    ///
    /// As [`block_number`](Anvil::block_number).
    pub async fn balance(&self, address: &str) -> Result<u128, AnvilError> {
        let answer = self.rpc("eth_getBalance", json!([address, "latest"])).await?;
        answer
            .as_str()
            .and_then(|s| s.strip_prefix("0x"))
            .and_then(|hex| u128::from_str_radix(hex, 16).ok())
            .ok_or_else(|| AnvilError::BadAnswer {
                method: "eth_getBalance".to_owned(),
                answer: answer.to_string(),
            })
    }

    /// The node's latest block number (`eth_blockNumber`).
    ///
    /// # Errors
    ///
    /// As [`rpc`](Anvil::rpc), and [`AnvilError::BadAnswer`] when the answer is not a quantity.
    pub async fn block_number(&self) -> Result<u64, AnvilError> {
        let answer = self.rpc("eth_blockNumber", json!([])).await?;
        quantity("eth_blockNumber", &answer)
    }
}

impl Drop for Anvil {
    fn drop(&mut self) {
        // SIGKILL ends a paused process too; waiting reaps it, so no zombie is left.
        let _ = self.kill();
    }
}

/// The binary: [`AnvilOptions::binary`], else `FAILNEXT_ANVIL`, else the first default install
/// that exists.
fn locate(options: &AnvilOptions) -> Result<PathBuf, AnvilError> {
    let chosen = options
        .binary
        .clone()
        .or_else(|| std::env::var_os(ENV_VAR).filter(|v| !v.is_empty()).map(PathBuf::from));
    let candidates = match chosen {
        Some(path) => vec![path],
        None => default_installs(),
    };
    candidates
        .iter()
        .find(|path| path.is_file())
        .cloned()
        .ok_or(AnvilError::NotFound { looked_at: candidates })
}

/// Where `cargo xtask anvil` installs anvil: under `CARGO_TARGET_DIR` when it is set, under the
/// target dir holding the running test binary, and under the workspace's `target/`.
fn default_installs() -> Vec<PathBuf> {
    // This crate is `<workspace>/xtask/loopback`.
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = manifest.ancestors().nth(2).unwrap_or(manifest);
    let mut targets = Vec::new();
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR").filter(|v| !v.is_empty()) {
        let dir = PathBuf::from(dir);
        targets.push(if dir.is_absolute() { dir } else { workspace.join(dir) });
    }
    // A test binary runs from <target>/debug/deps/.
    if let Some(dir) =
        std::env::current_exe().ok().and_then(|exe| exe.ancestors().nth(3).map(Path::to_path_buf))
    {
        targets.push(dir);
    }
    targets.push(workspace.join("target"));
    let mut installs: Vec<PathBuf> = Vec::new();
    for target in targets {
        let install = target.join("anvil").join(PACKAGE_BINARY);
        if !installs.contains(&install) {
            installs.push(install);
        }
    }
    installs
}

/// The scheduler state of each thread of `pid` (`R`, `S`, `T` for stopped, ...), from
/// `/proc/PID/task/*/stat`.
fn thread_states(pid: u32) -> io::Result<Vec<char>> {
    let mut states = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        // A thread that ended since the listing has no stat any more.
        let Ok(stat) = std::fs::read_to_string(task?.path().join("stat")) else { continue };
        // `pid (comm) state ...`: comm may hold spaces and parentheses, so look after the last `)`.
        if let Some(state) = stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next()) {
            states.push(state);
        }
    }
    Ok(states)
}

/// Reads anvil's stdout to its end, handing over the port of its `Listening on
/// 127.0.0.1:PORT` line; the rest (a banner, a line per call) is dropped.
fn watch_stdout(pipe: ChildStdout, port: oneshot::Sender<u16>) {
    let _ = std::thread::Builder::new().name("anvil-stdout".to_owned()).spawn(move || {
        let mut port = Some(port);
        let mut reader = BufReader::new(pipe);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if port.is_some() {
                let text = String::from_utf8_lossy(&line);
                if let Some(found) = text.trim().strip_prefix("Listening on ").and_then(listening_port) {
                    if let Some(tx) = port.take() {
                        let _ = tx.send(found);
                    }
                }
            }
        }
    });
}

/// The port of `127.0.0.1:PORT`.
fn listening_port(addr: &str) -> Option<u16> {
    addr.rsplit_once(':').and_then(|(_, port)| port.parse().ok())
}

/// Reads the child's stderr into `into` (up to [`STDERR_CAP`]) until the pipe closes, which
/// it does when the process dies.
fn drain(mut pipe: ChildStderr, into: Arc<Mutex<Vec<u8>>>) -> Option<JoinHandle<()>> {
    let reader = std::thread::Builder::new().name("anvil-stderr".to_owned()).spawn(move || {
        let mut buf = [0_u8; 4096];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let mut kept = lock(&into);
                    let room = STDERR_CAP.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                }
            }
        }
    });
    reader.ok()
}

/// A JSON-RPC quantity (`"0x2a"`) as a number.
fn quantity(method: &str, answer: &Value) -> Result<u64, AnvilError> {
    answer
        .as_str()
        .and_then(|s| s.strip_prefix("0x"))
        .and_then(|hex| u64::from_str_radix(hex, 16).ok())
        .ok_or_else(|| AnvilError::BadAnswer { method: method.to_owned(), answer: answer.to_string() })
}

/// Why a node could not be started or did not answer.
#[derive(Debug)]
#[non_exhaustive]
pub enum AnvilError {
    /// No anvil binary: its `Display` is [`NOT_FOUND`], then the paths looked at.
    NotFound {
        /// The paths looked at, in order.
        looked_at: Vec<PathBuf>,
    },
    /// The binary could not be run.
    Spawn {
        /// The binary.
        binary: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The node exited while starting.
    Exited {
        /// How it exited.
        status: ExitStatus,
        /// What it wrote to stderr.
        stderr: String,
    },
    /// The node did not answer `eth_chainId` in time.
    NotReady {
        /// How long it was given.
        waited: Duration,
        /// The last error.
        last: String,
    },
    /// The process could not be waited for.
    Wait(io::Error),
    /// A signal could not be sent.
    Signal {
        /// `STOP` or `CONT`.
        signal: &'static str,
        /// Why.
        detail: String,
    },
    /// No HTTP answer (refused, timed out, ...).
    Http(reqwest::Error),
    /// A JSON-RPC error answer.
    Rpc {
        /// The method called.
        method: String,
        /// The answer's `error` object.
        error: Value,
    },
    /// An answer that is neither a JSON-RPC result nor an error, or not the expected value.
    BadAnswer {
        /// The method called.
        method: String,
        /// What came back (its first 512 bytes).
        answer: String,
    },
}

// ===== impl AnvilError =====

impl fmt::Display for AnvilError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnvilError::NotFound { looked_at } => {
                let paths: Vec<String> = looked_at.iter().map(|p| p.display().to_string()).collect();
                write!(f, "{NOT_FOUND} (looked at: {})", paths.join(", "))
            }
            AnvilError::Spawn { binary, source } => {
                write!(f, "could not start {}: {source}", binary.display())
            }
            AnvilError::Exited { status, stderr } => {
                write!(f, "anvil exited while starting ({status}): {}", stderr.trim())
            }
            AnvilError::NotReady { waited, last } => {
                write!(f, "anvil did not answer eth_chainId within {waited:?}: {last}")
            }
            AnvilError::Wait(e) => write!(f, "could not wait for anvil: {e}"),
            AnvilError::Signal { signal, detail } => {
                write!(f, "could not send SIG{signal} to anvil: {detail}")
            }
            AnvilError::Http(e) => {
                write!(f, "no answer from anvil: {e}")?;
                let mut cause = std::error::Error::source(e);
                while let Some(c) = cause {
                    write!(f, ": {c}")?;
                    cause = c.source();
                }
                Ok(())
            }
            AnvilError::Rpc { method, error } => write!(f, "anvil answered {method} with an error: {error}"),
            AnvilError::BadAnswer { method, answer } => write!(f, "unexpected answer to {method}: {answer}"),
        }
    }
}

impl std::error::Error for AnvilError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AnvilError::Spawn { source, .. } | AnvilError::Wait(source) => Some(source),
            AnvilError::Http(e) => Some(e),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_explicit_binary_that_does_not_exist_is_not_found_with_the_how_to() {
        let err = locate(&AnvilOptions::new().binary("/nonexistent/anvil")).unwrap_err();
        let message = err.to_string();
        assert!(message.starts_with(NOT_FOUND), "{message}");
        assert!(message.contains("/nonexistent/anvil"), "{message}");
    }

    #[test]
    fn the_default_installs_end_in_the_package_binary() {
        let installs = default_installs();
        assert!(!installs.is_empty());
        assert!(installs.iter().all(|p| p.ends_with(PACKAGE_BINARY)), "{installs:?}");
    }

    #[test]
    fn the_listening_line_gives_the_port() {
        assert_eq!(listening_port("127.0.0.1:38481"), Some(38481));
        assert_eq!(listening_port("127.0.0.1"), None);
    }

    #[test]
    fn quantities_are_hex() {
        assert_eq!(quantity("m", &json!("0x7a69")).unwrap(), 31337);
        assert!(quantity("m", &json!("7a69")).is_err());
        assert!(quantity("m", &json!(1)).is_err());
    }
}

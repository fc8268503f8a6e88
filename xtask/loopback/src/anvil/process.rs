//! The anvil binary and its pipes: where the binary is, the port its stdout announces, and
//! its stderr kept.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{ChildStderr, ChildStdout};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use tokio::sync::oneshot;

use super::error::AnvilError;
use super::{AnvilOptions, ENV_VAR, PACKAGE_BINARY, STDERR_CAP};
use crate::lock;

/// The binary: [`AnvilOptions::binary`], else `FAILNEXT_ANVIL`, else the first default install
/// that exists.
pub(super) fn locate(options: &AnvilOptions) -> Result<PathBuf, AnvilError> {
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
pub(super) fn default_installs() -> Vec<PathBuf> {
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

/// Reads anvil's stdout to its end, handing over the port of its `Listening on
/// 127.0.0.1:PORT` line; the rest (a banner, a line per call) is dropped.
pub(super) fn watch_stdout(pipe: ChildStdout, port: oneshot::Sender<u16>) {
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
pub(super) fn listening_port(addr: &str) -> Option<u16> {
    addr.rsplit_once(':').and_then(|(_, port)| port.parse().ok())
}

/// Reads the child's stderr into `into` (up to [`STDERR_CAP`]) until the pipe closes, which
/// it does when the process dies.
pub(super) fn drain(mut pipe: ChildStderr, into: Arc<Mutex<Vec<u8>>>) -> Option<JoinHandle<()>> {
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

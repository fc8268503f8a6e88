//! `cargo xtask anvil`: installs the anvil binary the real-node tests run, from the npm
//! registry, into the target dir.
//!
//! anvil (Foundry's local Ethereum node) ships as a prebuilt binary inside the npm package
//! `@foundry-rs/anvil-linux-amd64`. The version is pinned, and the install is kept out of the
//! project: `npm install --no-save --prefix <target>/anvil` writes no `package.json` and
//! touches nothing outside the target dir. An install that is already there and reports the
//! pinned version is reused, so only the first run pays for the download.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::steps::{DynError, say, target_dir};

/// The npm package that ships the anvil binary for Linux on x86-64.
const PACKAGE: &str = "@foundry-rs/anvil-linux-amd64";

/// The pinned anvil version.
const VERSION: &str = "1.7.1";

/// Where the install lives, under the target dir.
pub(crate) fn install_dir() -> PathBuf {
    target_dir().join("anvil")
}

/// The binary inside the installed package.
pub(crate) fn binary_path(install_dir: &Path) -> PathBuf {
    install_dir.join("node_modules").join(PACKAGE).join("bin").join("anvil")
}

/// Returns the path of a working anvil of the pinned version, installing it first when it is
/// missing (or is another version).
pub(crate) fn ensure_anvil() -> Result<PathBuf, DynError> {
    if !(cfg!(target_os = "linux") && cfg!(target_arch = "x86_64")) {
        return Err(format!(
            "anvil is installed from {PACKAGE}, which only exists for Linux on x86-64; on this \
             platform install anvil yourself and set FAILNEXT_ANVIL to its path"
        )
        .into());
    }
    let dir = install_dir();
    let binary = binary_path(&dir);
    if binary.exists() && version(&binary).is_ok_and(|v| v.contains(VERSION)) {
        return Ok(binary);
    }
    install(&dir)?;
    let reported = version(&binary)?;
    if !reported.contains(VERSION) {
        return Err(format!("{} reports {reported:?}, expected version {VERSION}", binary.display()).into());
    }
    Ok(binary)
}

/// `npm install` of the pinned package into `dir`.
fn install(dir: &Path) -> Result<(), DynError> {
    std::fs::create_dir_all(dir)?;
    let spec = format!("{PACKAGE}@{VERSION}");
    say(&format!("xtask: installing anvil {VERSION} from npm ({spec}) into {}", dir.display()));
    let started = Instant::now();
    let status = Command::new("npm")
        .args(["install", "--no-save", "--no-audit", "--no-fund", "--prefix"])
        .arg(dir)
        .arg(&spec)
        .status()
        .map_err(|e| -> DynError {
            if e.kind() == ErrorKind::NotFound {
                "npm not found on PATH: the real-node tests need anvil, which is installed from \
                 the npm registry; install Node.js and npm (for example `apt-get install npm`) \
                 or set FAILNEXT_ANVIL to an anvil binary"
                    .into()
            } else {
                format!("could not run npm: {e}").into()
            }
        })?;
    if !status.success() {
        return Err(format!("`npm install {spec}` failed: {status}").into());
    }
    say(&format!("xtask: anvil installed in {:.1?}", started.elapsed()));
    Ok(())
}

/// What `anvil --version` prints on its first line; an error when it does not run.
fn version(binary: &Path) -> Result<String, DynError> {
    let output = Command::new(binary)
        .arg("--version")
        .output()
        .map_err(|e| format!("could not run {}: {e}", binary.display()))?;
    if !output.status.success() {
        return Err(format!("`{} --version` exited with {}", binary.display(), output.status).into());
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    Ok(stdout.lines().next().unwrap_or_default().trim().to_owned())
}

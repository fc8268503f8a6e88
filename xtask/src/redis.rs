//! `cargo xtask redis`: makes sure `redis-server` is there for the fleet tests, installing
//! Debian's package when it is missing (`apt-get update` first), as `anvil` installs anvil.
//!
//! The tests start and stop their own servers (`failnext_loopback::RedisServer`), each on a
//! free loopback port; this step only finds (or installs) the binary and passes its path in
//! `FAILNEXT_REDIS_SERVER`.

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use crate::steps::{DynError, say};

/// Where Debian's package puts the server.
const DEBIAN_PATH: &str = "/usr/bin/redis-server";

/// The path of a `redis-server` that runs (`--version`), installing Debian's package first
/// when none is found.
pub(crate) fn ensure_redis() -> Result<PathBuf, DynError> {
    if let Some(path) = working() {
        return Ok(path);
    }
    let started = Instant::now();
    say("xtask: redis-server not found; installing Debian's package (apt-get update, then install)");
    let sudo = if is_root() { None } else { Some("sudo") };
    let run = |args: &[&str]| -> Result<(), DynError> {
        let mut command = match sudo {
            Some(sudo) => {
                let mut c = Command::new(sudo);
                c.arg("apt-get");
                c
            }
            None => Command::new("apt-get"),
        };
        let status = command.args(args).env("DEBIAN_FRONTEND", "noninteractive").status().map_err(|e| {
            format!(
                "apt-get could not run ({e}): install redis-server yourself and set FAILNEXT_REDIS_SERVER"
            )
        })?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("apt-get {} failed: {status}", args.join(" ")).into())
        }
    };
    run(&["update", "-qq"])?;
    run(&["install", "-y", "-qq", "--no-install-recommends", "redis-server"])?;
    // The package starts a system service on 6379; the tests use servers of their own.
    let _ = Command::new("service").args(["redis-server", "stop"]).status();
    say(&format!("xtask: redis-server installed in {:.1?}", started.elapsed()));
    working().ok_or_else(|| "redis-server was installed but does not run".into())
}

/// A `redis-server` on the PATH or where Debian puts it, if it runs.
fn working() -> Option<PathBuf> {
    ["redis-server", DEBIAN_PATH].into_iter().find_map(|candidate| {
        let ran = Command::new(candidate).arg("--version").output().ok()?;
        ran.status.success().then(|| PathBuf::from(candidate))
    })
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .ok()
        .is_some_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

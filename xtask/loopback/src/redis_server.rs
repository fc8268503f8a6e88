//! A real `redis-server` on a loopback port, for the fleet tests: started by its own handle,
//! stopped by it (and by its drop). The binary is `FAILNEXT_REDIS_SERVER`, else
//! `redis-server` on the `PATH` (`cargo xtask ci` installs Debian's package when missing).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server may take to answer `PING` after it is started.
const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// One running `redis-server` on `127.0.0.1:`[`port`](RedisServer::port), persistence off.
/// Dropping it kills the process and reaps it.
#[derive(Debug)]
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
}

impl RedisServer {
    /// Starts a server on a free loopback port and waits (at most 10 s) until it answers
    /// `PING`.
    ///
    /// # Errors
    ///
    /// A message when the binary cannot be run or the server does not answer in time.
    pub fn start() -> Result<RedisServer, String> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free loopback port: {e}"))?
            .port();
        RedisServer::start_on(port)
    }

    /// Starts a server on `port` (a server stopped before, started again where clients look).
    ///
    /// # Errors
    ///
    /// As [`start`](RedisServer::start).
    pub fn start_on(port: u16) -> Result<RedisServer, String> {
        let binary = std::env::var("FAILNEXT_REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_owned());
        let child = Command::new(&binary)
            .args(["--bind", "127.0.0.1", "--port", &port.to_string(), "--save", "", "--appendonly", "no"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                format!(
                    "cannot run {binary}: {e}; the fleet tests need redis-server (`cargo xtask ci` \
                     installs Debian's package; or set FAILNEXT_REDIS_SERVER)"
                )
            })?;
        let mut server = RedisServer { child: Some(child), port };
        let started = Instant::now();
        while !server.answers() {
            if started.elapsed() > READY_TIMEOUT {
                server.stop();
                return Err(format!(
                    "redis-server on port {port} did not answer PING within {READY_TIMEOUT:?}"
                ));
            }
            if let Some(Ok(Some(status))) = server.child.as_mut().map(Child::try_wait) {
                server.child = None;
                return Err(format!("redis-server on port {port} exited: {status}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(server)
    }

    /// Whether it answers `PING` with `+PONG`.
    fn answers(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) else { return false };
        let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
        let mut pong = [0u8; 7];
        stream.write_all(b"PING\r\n").is_ok() && stream.read_exact(&mut pong).is_ok() && &pong == b"+PONG\r\n"
    }

    /// `redis://127.0.0.1:PORT`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The port it listens on.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The process id, while it runs.
    #[must_use]
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Kills the server (SIGKILL) and reaps it; a second call does nothing.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

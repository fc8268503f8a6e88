//! What the process holds: resident memory, open file descriptors, TCP connections to or from
//! given local ports, and live tokio tasks. Linux only (read from `/proc`); elsewhere every
//! figure is `None`.

use std::collections::HashSet;
use std::fmt;
use std::fs;

/// Resident set size of this process, in bytes (`VmRSS` of `/proc/self/status`).
pub fn rss_bytes() -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.trim_start_matches("VmRSS:").trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}

/// Number of open file descriptors of this process.
pub fn open_fds() -> Option<usize> {
    Some(fs::read_dir("/proc/self/fd").ok()?.count())
}

/// Live tasks of the current tokio runtime, `None` outside one.
pub fn alive_tasks() -> Option<usize> {
    tokio::runtime::Handle::try_current().ok().map(|h| h.metrics().num_alive_tasks())
}

/// TCP sockets of this process that belong to connections with a set of local servers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Connections {
    /// Client ends: sockets whose remote port is one of the servers'.
    pub client: usize,
    /// Server ends: non-listening sockets whose local port is one of the servers'.
    pub server: usize,
}

impl fmt::Display for Connections {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.client, self.server)
    }
}

/// Counts this process's TCP sockets connected to or accepted on `ports` (loopback servers of
/// this same process). Sockets in `TIME_WAIT` belong to no process and are not counted.
pub fn connections(ports: &[u16]) -> Option<Connections> {
    let mine = socket_inodes()?;
    let mut counts = Connections::default();
    for table in ["/proc/self/net/tcp", "/proc/self/net/tcp6"] {
        let Ok(text) = fs::read_to_string(table) else { continue };
        for line in text.lines().skip(1) {
            let Some(sock) = TcpLine::parse(line) else { continue };
            if !mine.contains(&sock.inode) {
                continue;
            }
            if ports.contains(&sock.remote_port) {
                counts.client += 1;
            } else if ports.contains(&sock.local_port) && sock.state != LISTEN {
                counts.server += 1;
            }
        }
    }
    Some(counts)
}

const LISTEN: u8 = 0x0A;

struct TcpLine {
    local_port: u16,
    remote_port: u16,
    state: u8,
    inode: u64,
}

impl TcpLine {
    /// `sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...`
    fn parse(line: &str) -> Option<TcpLine> {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let port = |addr: &str| u16::from_str_radix(addr.rsplit(':').next()?, 16).ok();
        Some(TcpLine {
            local_port: port(fields.get(1)?)?,
            remote_port: port(fields.get(2)?)?,
            state: u8::from_str_radix(fields.get(3)?, 16).ok()?,
            inode: fields.get(9)?.parse().ok()?,
        })
    }
}

fn socket_inodes() -> Option<HashSet<u64>> {
    let mut inodes = HashSet::new();
    for entry in fs::read_dir("/proc/self/fd").ok()?.flatten() {
        let Ok(target) = fs::read_link(entry.path()) else { continue };
        let target = target.to_string_lossy();
        if let Some(inode) = target.strip_prefix("socket:[").and_then(|s| s.strip_suffix(']')) {
            if let Ok(inode) = inode.parse() {
                inodes.insert(inode);
            }
        }
    }
    Some(inodes)
}

/// One reading of everything above.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Live tokio tasks.
    pub tasks: Option<usize>,
    /// TCP connections with the watched ports.
    pub connections: Option<Connections>,
    /// Open file descriptors.
    pub fds: Option<usize>,
    /// Resident memory, bytes.
    pub rss: Option<u64>,
}

impl Usage {
    /// Reads the process's usage now, counting connections with `ports`.
    pub fn now(ports: &[u16]) -> Usage {
        Usage { tasks: alive_tasks(), connections: connections(ports), fds: open_fds(), rss: rss_bytes() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_proc_net_tcp_line() {
        let line = "   0: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000  1000        0 123456 1 0000000000000000 20 4 30 10 -1";
        let sock = TcpLine::parse(line).unwrap();
        assert_eq!((sock.local_port, sock.remote_port, sock.state, sock.inode), (8080, 50000, 1, 123456));
    }

    #[tokio::test]
    async fn sees_its_own_loopback_connection() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let client = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        assert_eq!(connections(&[port]), Some(Connections { client: 1, server: 1 }));
        drop((client, server));
        assert_eq!(connections(&[port]), Some(Connections { client: 0, server: 0 }));
        assert!(rss_bytes().unwrap() > 0);
    }
}

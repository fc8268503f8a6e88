//! The accept loop of one provider, and stopping and restarting it for `Behaviour::Down`.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::{JoinHandle, JoinSet};

use crate::sim::connection;
use crate::sim::provider::Shared;

/// A provider's listening socket: running (accepting and serving connections) or stopped
/// (nothing bound, so connecting is refused).
pub(crate) struct Listener {
    addr: SocketAddr,
    shared: Arc<Shared>,
    running: Option<Running>,
}

struct Running {
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl Listener {
    /// Binds an ephemeral loopback port and starts accepting.
    pub(crate) async fn bind(shared: Arc<Shared>) -> io::Result<Listener> {
        let socket = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = socket.local_addr()?;
        let mut listener = Listener { addr, shared, running: None };
        listener.spawn(socket);
        Ok(listener)
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Closes the socket and every open connection, and returns once they are closed.
    pub(crate) async fn stop(&mut self) {
        if let Some(Running { stop, task }) = self.running.take() {
            // The loop may already have ended; either way the task is joined.
            let _ = stop.send(());
            let _ = task.await;
        }
    }

    /// Binds the same port again if stopped. See `Provider::set` for the race this can lose.
    pub(crate) async fn resume(&mut self) -> io::Result<()> {
        if self.running.is_none() {
            let socket = TcpListener::bind(self.addr).await?;
            self.spawn(socket);
        }
        Ok(())
    }

    fn spawn(&mut self, socket: TcpListener) {
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(accept_loop(socket, self.shared.clone(), stopped));
        self.running = Some(Running { stop, task });
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        // Aborting drops the loop, its socket and its `JoinSet`, which aborts the connections.
        if let Some(running) = &self.running {
            running.task.abort();
        }
    }
}

async fn accept_loop(socket: TcpListener, shared: Arc<Shared>, mut stopped: oneshot::Receiver<()>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            biased;
            _ = &mut stopped => break,
            accepted = socket.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(connection::serve(stream, shared.clone()));
                }
                // Out of file descriptors or similar: wait a little rather than spin.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            // Reap finished connections so the set does not grow.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(socket);
    connections.shutdown().await;
}

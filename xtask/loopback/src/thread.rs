//! [`ServerThread`]: servers on their own thread and runtime, away from the client's.

use std::io;
use std::thread::JoinHandle;

use tokio::runtime::Handle;
use tokio::sync::oneshot;

/// A thread running one current-thread tokio runtime for loopback servers, so that serving
/// costs the measured client's runtime nothing (the bench). Start servers on it with
/// [`Builder::runtime`](crate::server::Builder::runtime)`(thread.handle())`. Dropping it
/// stops the runtime, cancelling every connection, hanging ones included.
#[derive(Debug)]
pub struct ServerThread {
    handle: Handle,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl ServerThread {
    /// Starts the thread, named `name`; it first runs `on_start` (the bench stops counting
    /// its allocations there).
    ///
    /// # Errors
    ///
    /// When the thread or its runtime cannot be made.
    pub fn start(name: &str, on_start: impl FnOnce() + Send + 'static) -> io::Result<ServerThread> {
        let (handle_tx, handle_rx) = std::sync::mpsc::channel();
        let (shutdown, shutdown_rx) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new().name(name.to_owned()).spawn(move || {
            on_start();
            let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => return drop(handle_tx.send(Err(e))),
            };
            let _ = handle_tx.send(Ok(rt.handle().clone()));
            let _ = rt.block_on(shutdown_rx);
        })?;
        let handle = handle_rx.recv().map_err(io::Error::other)??;
        Ok(ServerThread { handle, shutdown: Some(shutdown), thread: Some(thread) })
    }

    /// The thread's runtime.
    pub fn handle(&self) -> Handle {
        self.handle.clone()
    }
}

impl Drop for ServerThread {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

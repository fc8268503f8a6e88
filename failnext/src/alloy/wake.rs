//! New-head triggers for a [`Follower`](super::Follower) (feature `ws`): one WebSocket
//! `eth_subscribe("newHeads")` subscription per provider, each notification only a reason to
//! poll at once. Nothing a subscription says is yielded: blocks and logs are still read
//! through the transport, by number and by hash, their parent links verified.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::sync::Notify;
use tokio::task::AbortHandle;
use tokio_tungstenite::tungstenite::Message;

const SUBSCRIBE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}"#;

/// How long a connection (TCP, TLS and the WebSocket handshake) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The wait before connecting again after a subscription was lost, doubled at each failure in
/// a row up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The subscriptions of one follower: started at its first poll (inside the runtime), ended
/// when it is dropped.
pub(crate) struct Wake {
    urls: Vec<url::Url>,
    notify: Arc<Notify>,
    tasks: Vec<AbortHandle>,
}

impl Wake {
    pub(crate) fn new(urls: Vec<url::Url>) -> Wake {
        Wake { urls, notify: Arc::new(Notify::new()), tasks: Vec::new() }
    }

    /// Waits `interval`, or less when a provider announces a new head first (one announced
    /// since the last wait counts); whether an announcement ended it.
    pub(crate) async fn wait(&mut self, interval: Duration) -> bool {
        if self.tasks.is_empty() && !self.urls.is_empty() {
            for url in std::mem::take(&mut self.urls) {
                self.tasks.push(tokio::spawn(subscribe(url, Arc::clone(&self.notify))).abort_handle());
            }
        }
        tokio::time::timeout(interval, self.notify.notified()).await.is_ok()
    }
}

impl Drop for Wake {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl fmt::Debug for Wake {
    // The URLs may carry API keys: only how many there are.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wake").field("subscriptions", &(self.urls.len() + self.tasks.len())).finish()
    }
}

/// Keeps a `newHeads` subscription at `url` for as long as the follower lives: each
/// notification wakes the follower; a lost connection is made again after a backoff.
async fn subscribe(url: url::Url, notify: Arc<Notify>) {
    let mut backoff = FIRST_BACKOFF;
    loop {
        if let Ok(Ok((mut ws, _))) =
            tokio::time::timeout(CONNECT_TIMEOUT, tokio_tungstenite::connect_async(url.as_str())).await
        {
            if ws.send(Message::text(SUBSCRIBE)).await.is_ok() {
                while let Some(Ok(message)) = ws.next().await {
                    match message {
                        Message::Text(text) if text.contains("\"eth_subscription\"") => {
                            backoff = FIRST_BACKOFF;
                            notify.notify_one();
                        }
                        Message::Close(_) => break,
                        _ => {}
                    }
                }
            }
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

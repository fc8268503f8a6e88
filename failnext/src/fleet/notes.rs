//! A fleet's shared notes: leases, notes published and read, announcements heard as they
//! come (what failnext-blocklag's one prober per provider and the alloy transport's shared
//! logs limits are built on).

use std::time::Duration;

use super::{Fleet, RECONNECT_EVERY, millis, script};

impl Fleet {
    /// Holds (or renews) the fleet-wide lease `name` for `ttl`: `Some(true)` when this handle
    /// holds it now, `Some(false)` when another process does, `None` when Redis is
    /// unavailable (the caller goes on alone). A lease not renewed within `ttl` (its holder
    /// died or stopped) is free for the next taker. This is how failnext-blocklag probes each
    /// provider from one process of the fleet; `name` is part of a Redis key: use endpoint
    /// ids, never URLs.
    pub async fn hold(&self, name: &str, ttl: Duration) -> Option<bool> {
        let key = format!("{}lease:{name}", self.inner.prefix);
        let member = self.inner.member.clone();
        let ms = millis(ttl);
        let held = self.call_telling(
            |mut conn| async move {
                script::hold().key(&key).arg(&member).arg(ms).invoke_async::<i64>(&mut conn).await
            },
            false,
        );
        held.await.0.map(|held| held == 1)
    }

    /// Publishes `value` under `name` for `ttl` (a note other processes [`read`](Fleet::read)).
    /// Returns whether Redis took it. `name` and `value` are stored as they are: no URL or
    /// key of a provider in either.
    pub async fn publish(&self, name: &str, value: &str, ttl: Duration) -> bool {
        let key = format!("{}note:{name}", self.inner.prefix);
        let ms = millis(ttl);
        let value = value.to_owned();
        let set = self.call_telling(
            |mut conn| async move {
                redis::cmd("SET").arg(&key).arg(&value).arg("PX").arg(ms).query_async::<()>(&mut conn).await
            },
            false,
        );
        set.await.0.is_some()
    }

    /// [`publish`](Fleet::publish), and tells every process [listening](Fleet::listen) at
    /// once (Redis pub/sub, in the same round trip): how a news another process must act on
    /// at once (a provider found on another chain) reaches the fleet within one round trip.
    pub async fn announce(&self, name: &str, value: &str, ttl: Duration) -> bool {
        let key = format!("{}note:{name}", self.inner.prefix);
        let sent = self.set_and_announce(key, value.to_owned(), millis(ttl), (name, value), false);
        sent.await.0.is_some()
    }

    /// The channel every process [listens](Fleet::listen) on.
    fn channel(&self) -> String {
        format!("{}notes", self.inner.prefix)
    }

    /// The channel, and a message on it: this process's id, a note's `name` and what it
    /// `said` (what [`listen`](Fleet::listen) parses).
    fn message(&self, name: &str, said: &str) -> (String, String) {
        (self.channel(), format!("{}\n{name}\n{said}", self.inner.member))
    }

    /// Sets `key` to `value` for `ms` milliseconds and announces note `name` saying `said`, in
    /// one pipeline (what [`announce`](Fleet::announce) and a published cooldown send); the
    /// state change found is recorded only with `tell` (see [`Fleet::call_telling`]).
    pub(super) async fn set_and_announce(
        &self,
        key: String,
        value: String,
        ms: u64,
        (name, said): (&str, &str),
        tell: bool,
    ) -> (Option<()>, Option<super::FleetState>) {
        let (channel, message) = self.message(name, said);
        let sent = self.call_telling(
            |mut conn| async move {
                redis::pipe()
                    .cmd("SET")
                    .arg(&key)
                    .arg(&value)
                    .arg("PX")
                    .arg(ms)
                    .ignore()
                    .cmd("PUBLISH")
                    .arg(&channel)
                    .arg(&message)
                    .ignore()
                    .query_async::<()>(&mut conn)
                    .await
            },
            tell,
        );
        sent.await
    }

    /// Raises the number note `name` to `value` when it holds less (or nothing), and then
    /// [announces](Fleet::announce) it, atomically in one round trip: how a fleet shares the
    /// highest of something many processes see (failnext-blocklag shares each provider's
    /// highest head seen in traffic so), each new value announced once however many
    /// processes saw it. `Some(true)` when raised, `Some(false)` when the note held as much
    /// already, `None` when Redis is unavailable. `name` is part of a Redis key: use endpoint
    /// ids, never URLs.
    pub async fn raise(&self, name: &str, value: u64, ttl: Duration) -> Option<bool> {
        let key = format!("{}note:{name}", self.inner.prefix);
        let (channel, message) = self.message(name, &value.to_string());
        let ms = millis(ttl);
        let raised = self.call_telling(
            |mut conn| async move {
                script::raise()
                    .key(&key)
                    .arg(value)
                    .arg(ms)
                    .arg(&channel)
                    .arg(&message)
                    .invoke_async::<i64>(&mut conn)
                    .await
            },
            false,
        );
        raised.await.0.map(|raised| raised == 1)
    }

    /// Calls `on(name, value)` for every note another process of the fleet
    /// [announces](Fleet::announce), as it comes, until the returned future is dropped (it
    /// never ends by itself). While Redis is unavailable it tries again every
    /// [`RECONNECT_EVERY`]; notes announced meanwhile are missed (read them with
    /// [`read`](Fleet::read)).
    pub async fn listen(&self, mut on: impl FnMut(&str, &str)) {
        use futures_util::StreamExt as _;
        let channel = self.channel();
        let connect_within = self.inner.timeout.max(Duration::from_millis(200));
        loop {
            if let Ok(Ok(mut pubsub)) =
                tokio::time::timeout(connect_within, self.inner.client.get_async_pubsub()).await
            {
                if pubsub.subscribe(&channel).await.is_ok() {
                    let mut messages = pubsub.into_on_message();
                    while let Some(message) = messages.next().await {
                        let Ok(payload) = message.get_payload::<String>() else { continue };
                        let mut parts = payload.splitn(3, '\n');
                        if let (Some(member), Some(name), Some(value)) =
                            (parts.next(), parts.next(), parts.next())
                        {
                            if member != self.inner.member {
                                on(name, value);
                            }
                        }
                    }
                }
            }
            tokio::time::sleep(RECONNECT_EVERY).await;
        }
    }

    /// The note `name` another process [published](Fleet::publish): `Some(None)` when there is
    /// none (or it expired), `None` when Redis is unavailable.
    pub async fn read(&self, name: &str) -> Option<Option<String>> {
        let key = format!("{}note:{name}", self.inner.prefix);
        let get =
            self.call_telling(
                |mut conn| async move {
                    redis::cmd("GET").arg(&key).query_async::<Option<String>>(&mut conn).await
                },
                false,
            );
        get.await.0
    }

    /// Spawns, in the current runtime, a task calling `on(target, name, value)` for every note
    /// another process [announces](Fleet::announce), for as long as `target` lives (looked
    /// at every second); once per `listening` flag: nothing when it is set already, and it
    /// stays unset when there is no runtime to spawn in (the next call tries again).
    #[cfg(feature = "alloy")]
    pub(crate) fn listen_for<T: Send + Sync + 'static>(
        &self,
        listening: &std::sync::atomic::AtomicBool,
        target: std::sync::Weak<T>,
        on: impl Fn(&T, &str, &str) + Send + Sync + 'static,
    ) {
        use std::sync::atomic::Ordering;
        if listening.load(Ordering::Relaxed) {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else { return };
        if listening.swap(true, Ordering::Relaxed) {
            return;
        }
        let (fleet, alive) = (self.clone(), target.clone());
        handle.spawn(async move {
            let listen = fleet.listen(|name, value| {
                if let Some(target) = target.upgrade() {
                    on(&target, name, value);
                }
            });
            let dropped = async {
                while alive.strong_count() > 0 {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            };
            futures_util::future::select(std::pin::pin!(listen), std::pin::pin!(dropped)).await;
        });
    }

    /// [`announce`](Fleet::announce)s in the background (in the current runtime, if any).
    #[cfg(feature = "alloy")]
    pub(crate) fn announce_soon(&self, name: String, value: String, ttl: Duration) {
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let fleet = self.clone();
            handle.spawn(async move { fleet.announce(&name, &value, ttl).await });
        }
    }
}

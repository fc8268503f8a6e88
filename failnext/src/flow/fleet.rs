//! A failover's tie to its fleet (feature `redis`): the cooldowns other processes published,
//! read in the background and applied to this failover's endpoints.

use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;

use crate::fleet::{Fleet, REFRESH_EVERY};
use crate::flow::shared::{Shared, Tie};
use crate::flow::slot::Slot;

/// Starts (once per failover, at its first request, in the runtime that runs it) the
/// background read of what the fleet published about the failover's endpoints (their
/// cooldowns): each as it is announced, and all of them in one round trip every
/// [`REFRESH_EVERY`] (those announced while the subscription was down), never on a request's
/// way, ending when the failover is dropped. A cooldown another process published cools the endpoint here too,
/// for the time it has left, told as that endpoint's [`Event::Breaker`](crate::Event::Breaker).
pub(crate) fn refresh(tie: &Tie) {
    if tie.watching.swap(true, Ordering::Relaxed) {
        return;
    }
    let (Some(me), Ok(handle)) = (tie.me.get().cloned(), tokio::runtime::Handle::try_current()) else {
        tie.watching.store(false, Ordering::Relaxed);
        return;
    };
    let (fleet, listener, heard) = (tie.fleet.clone(), tie.fleet.clone(), me.clone());
    handle.spawn(async move {
        let refreshing = async {
            while let Some(shared) = me.upgrade() {
                read_cooldowns(&fleet, &shared).await;
                drop(shared);
                tokio::time::sleep(REFRESH_EVERY).await;
            }
        };
        // Cooldowns announced as they start, applied at once (the refresh catches those
        // announced while the subscription was down).
        let listening = listener.listen(|name, value| {
            if let Some(shared) = heard.upgrade() {
                announced(&listener, &shared, name, value);
            }
        });
        futures_util::future::select(std::pin::pin!(refreshing), std::pin::pin!(listening)).await;
    });
}

/// A cooldown another process announced (`cool:{endpoint}`, `{milliseconds} {reason}`), applied
/// as one read back ([`learnt`]); any other note is not the failover's.
fn announced(fleet: &Fleet, shared: &Shared, name: &str, value: &str) {
    let Some(id) = name.strip_prefix("cool:") else { return };
    let Some(slot) = shared.slots.iter().find(|slot| slot.id().as_str() == id) else { return };
    let mut parts = value.splitn(2, ' ');
    let Some(millis) = parts.next().and_then(|ms| ms.parse::<u64>().ok()) else { return };
    learnt(fleet, shared, slot, Duration::from_millis(millis), class_named(parts.next()));
}

/// One read of the cooldowns published for `shared`'s endpoints, applied.
async fn read_cooldowns(fleet: &Fleet, shared: &Shared) {
    let ids: Vec<_> = shared.slots.iter().map(|slot| slot.id().clone()).collect();
    let (left, state) = fleet.cooldowns(&ids).await;
    if let Some(state) = state {
        shared.emit(|| crate::Event::Fleet { state });
    }
    for (slot, (left, why)) in shared.slots.iter().zip(left.unwrap_or_default()) {
        learnt(fleet, shared, slot, left, class_named(why.as_deref()));
    }
}

/// Another process published that `slot`'s endpoint cools for `left`: unless it already cools
/// about as long here, its breaker opens for that long (the adaptive breaker; the reference
/// rule takes no hint).
fn learnt(fleet: &Fleet, shared: &Shared, slot: &Slot, left: Duration, reason: Option<crate::Class>) {
    let until = Instant::now() + left;
    if left.is_zero() || slot.health.cooling_until().is_some_and(|u| u + Duration::from_millis(50) >= until) {
        return;
    }
    fleet.heard_cooling(slot.id(), until);
    let endpoint = slot.id();
    shared.emit(|| crate::Event::FleetCooldown { endpoint, reason, left });
    let evidence = crate::judging::classify::Evidence::Failure;
    if let Some(state) = slot.health.record(evidence, Some(left), None) {
        let endpoint = slot.id();
        shared.emit(|| crate::Event::Breaker { endpoint, state });
    }
}

/// The class a publisher named (`Class::as_str`); `None` for anything else (a value in Redis is
/// not trusted to be one).
fn class_named(name: Option<&str>) -> Option<crate::Class> {
    crate::Class::ALL.into_iter().find(|class| Some(class.as_str()) == name)
}

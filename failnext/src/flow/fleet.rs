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
/// cooldowns): one round trip every [`REFRESH_EVERY`], never on a request's way, ending when
/// the failover is dropped. A cooldown another process published cools the endpoint here too,
/// for the time it has left, told as that endpoint's [`Event::Breaker`](crate::Event::Breaker).
pub(crate) fn refresh(tie: &Tie) {
    if tie.watching.swap(true, Ordering::Relaxed) {
        return;
    }
    let (Some(me), Ok(handle)) = (tie.me.get().cloned(), tokio::runtime::Handle::try_current()) else {
        tie.watching.store(false, Ordering::Relaxed);
        return;
    };
    let fleet = tie.fleet.clone();
    handle.spawn(async move {
        while let Some(shared) = me.upgrade() {
            read_cooldowns(&fleet, &shared).await;
            drop(shared);
            tokio::time::sleep(REFRESH_EVERY).await;
        }
    });
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

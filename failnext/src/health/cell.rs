//! `Guarded`: a rule's state behind its lock, with the lock-free flag that tells a clean state
//! from one atomic load.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// A rule's state: clean when it would skip nothing and has nothing to forget.
pub(super) trait Clean {
    /// Whether the state is clean (closed, no failures, nothing to forget).
    fn is_clean(&self) -> bool;
}

/// One endpoint's state under one rule, and a flag kept in step with it: false only when the
/// state is clean, so that a healthy endpoint is recognised without the lock.
///
/// The lock is held only for a few field updates; no callback ever runs under it. The flag is
/// published in one place, when a [`Locked`] is dropped, so no update can leave it stale.
#[derive(Debug, Default)]
pub(super) struct Guarded<S> {
    state: Mutex<S>,
    /// False only when the state is clean.
    dirty: AtomicBool,
}

impl<S: Clean> Guarded<S> {
    /// Whether the state is clean: one atomic load, no lock.
    #[inline]
    pub(super) fn is_clean(&self) -> bool {
        !self.dirty.load(Ordering::Acquire)
    }

    /// The state, locked, unless it is clean: then nothing is locked (one atomic load), and a
    /// caller has its answer for a healthy endpoint.
    #[inline]
    pub(super) fn dirty(&self) -> Option<Locked<'_, S>> {
        (!self.is_clean()).then(|| self.lock())
    }

    /// The state, locked; the flag follows it when the lock is released.
    pub(super) fn lock(&self) -> Locked<'_, S> {
        // No code panics while holding the lock, but a poisoned state is still a valid state.
        let guard = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        Locked { guard, dirty: &self.dirty }
    }
}

/// The locked state of a [`Guarded`]; dropping it publishes whether the state is clean, then
/// releases the lock.
#[derive(Debug)]
pub(super) struct Locked<'a, S: Clean> {
    guard: MutexGuard<'a, S>,
    dirty: &'a AtomicBool,
}

impl<S: Clean> Deref for Locked<'_, S> {
    type Target = S;

    fn deref(&self) -> &S {
        &self.guard
    }
}

impl<S: Clean> DerefMut for Locked<'_, S> {
    fn deref_mut(&mut self) -> &mut S {
        &mut self.guard
    }
}

impl<S: Clean> Drop for Locked<'_, S> {
    fn drop(&mut self) {
        // Runs before the guard field is dropped: the flag is stored while the lock is held.
        self.dirty.store(!self.guard.is_clean(), Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default)]
    struct Streak(u32);

    impl Clean for Streak {
        fn is_clean(&self) -> bool {
            self.0 == 0
        }
    }

    #[test]
    fn the_clean_flag_follows_the_state_when_the_lock_is_released() {
        let cell = Guarded::<Streak>::default();
        assert!(cell.is_clean());
        let mut state = cell.lock();
        state.0 = 2;
        assert!(cell.is_clean(), "published only when the lock is released");
        drop(state);
        assert!(!cell.is_clean());
        cell.lock().0 = 0;
        assert!(cell.is_clean());
    }
}

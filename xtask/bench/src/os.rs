//! The few OS calls the bench needs: CPU time (the process and thread CPU clocks), peak RSS
//! (getrusage) and thread pinning.

use std::time::Duration;

/// CPU time (user + system) of the process, or of the calling thread: the figures getrusage's
/// `RUSAGE_SELF` and `RUSAGE_THREAD` give, read from the CPU clocks, which also count the time
/// since the thread was last descheduled (getrusage can lag by a scheduler tick).
pub(crate) fn cpu_time(clock: Clock) -> Duration {
    let id = match clock {
        Clock::Process => libc::CLOCK_PROCESS_CPUTIME_ID,
        Clock::Thread => libc::CLOCK_THREAD_CPUTIME_ID,
    };
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime only writes into it.
    unsafe { libc::clock_gettime(id, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Which CPU clock [`cpu_time`] reads.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Clock {
    Process,
    Thread,
}

/// Peak RSS of the process in KiB (`getrusage(RUSAGE_SELF).ru_maxrss`).
pub(crate) fn max_rss_kib() -> u64 {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `ru` is a valid, writable `rusage`; getrusage only writes into it. On failure
    // (impossible for RUSAGE_SELF) the zeroed value is read.
    let ru = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr());
        ru.assume_init()
    };
    u64::try_from(ru.ru_maxrss).unwrap_or(0)
}

/// Pins the calling thread to `cpu` (`None`: lets it run on every CPU again). Threads spawned
/// later inherit the setting. Best effort: returns whether the kernel accepted it.
pub(crate) fn pin_this_thread(cpu: Option<usize>) -> bool {
    let cpus = cpu_count();
    let mut set = std::mem::MaybeUninit::<libc::cpu_set_t>::zeroed();
    // SAFETY: `set` is a zeroed (empty) `cpu_set_t`, which CPU_SET only writes bits into (it
    // ignores out-of-range CPUs); sched_setaffinity only reads it, for the calling thread (0).
    unsafe {
        let set = set.assume_init_mut();
        for c in (0..cpus).filter(|&c| cpu.is_none_or(|p| p == c)) {
            libc::CPU_SET(c, set);
        }
        libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), set) == 0
    }
}

/// CPUs online (not limited by this thread's affinity, unlike `available_parallelism`).
pub(crate) fn cpu_count() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).unwrap_or(1).max(1)
}

//! The measure's debugging trace: with `SOAK_DEBUG` set, stamped lines on stderr (the
//! measure's switches, failed reads, monitors' views).

use std::time::Instant;

/// Whether `SOAK_DEBUG` is set (known once [`debug`] was first called).
pub(super) static DEBUGGING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// With `SOAK_DEBUG` set: prints `line()` on stderr, stamped with the milliseconds since the
/// first such line (a trace of the measure's switches and failed reads).
pub(crate) fn debug(line: impl FnOnce() -> String) {
    debug_at(None, line);
}

/// As [`debug`], stamped with `at` (an instant of the measure) instead of now.
pub(crate) fn debug_at(at: Option<Instant>, line: impl FnOnce() -> String) {
    static ON: std::sync::OnceLock<Option<Instant>> = std::sync::OnceLock::new();
    let epoch = ON.get_or_init(|| {
        let on = std::env::var_os("SOAK_DEBUG").is_some();
        DEBUGGING.store(on, std::sync::atomic::Ordering::Relaxed);
        on.then(Instant::now)
    });
    if let Some(epoch) = epoch {
        #[allow(clippy::print_stderr, reason = "a debugging trace asked for by SOAK_DEBUG")]
        {
            let at = at.unwrap_or_else(Instant::now).saturating_duration_since(*epoch);
            eprintln!("DEBUG {:>6} {}", at.as_millis(), line());
        }
    }
}

//! The node's process, signalled: killed and reaped, paused and resumed (each returning once
//! every thread of it has stopped or runs again).

use std::io;
use std::process::Command;
use std::time::{Duration, Instant};

use super::Anvil;
use super::error::AnvilError;

impl Anvil {
    /// Kills the node (SIGKILL) and reaps it: afterwards connections to its port are refused.
    /// Calling it again does nothing.
    ///
    /// # Errors
    ///
    /// When the signal cannot be sent or the process cannot be reaped.
    pub fn kill(&mut self) -> Result<(), AnvilError> {
        if self.reaped {
            return Ok(());
        }
        // An error here means it has already exited; `wait` reaps it either way.
        let _ = self.child.kill();
        self.child.wait().map_err(AnvilError::Wait)?;
        self.reaped = true;
        Ok(())
    }

    /// Stops the node (SIGSTOP) and returns once every thread of it is stopped: the kernel
    /// still accepts connections on its port, but nothing reads or answers them until
    /// [`resume`](Anvil::resume).
    ///
    /// # Errors
    ///
    /// When the node was killed, the signal cannot be sent, or the threads are not all stopped
    /// within 5 s.
    pub fn pause(&self) -> Result<(), AnvilError> {
        self.signal("STOP")?;
        self.settle("STOP", true)
    }

    /// Lets a [paused](Anvil::pause) node run again (SIGCONT), and returns once no thread of it
    /// is stopped; requests that waited are then answered.
    ///
    /// # Errors
    ///
    /// When the node was killed, the signal cannot be sent, or threads are still stopped after
    /// 5 s.
    pub fn resume(&self) -> Result<(), AnvilError> {
        self.signal("CONT")?;
        self.settle("CONT", false)
    }

    /// Waits until every thread is stopped (`stopped`) or none is: a signal is delivered to
    /// each thread on its own, so `kill` returning does not mean the process has stopped.
    fn settle(&self, signal: &'static str, stopped: bool) -> Result<(), AnvilError> {
        let started = Instant::now();
        loop {
            let states = thread_states(self.pid())
                .map_err(|e| AnvilError::Signal { signal, detail: e.to_string() })?;
            if !states.is_empty() && states.iter().all(|&state| (state == 'T') == stopped) {
                return Ok(());
            }
            if started.elapsed() > Duration::from_secs(5) {
                let detail = format!("thread states after 5 s: {}", states.iter().collect::<String>());
                return Err(AnvilError::Signal { signal, detail });
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn signal(&self, signal: &'static str) -> Result<(), AnvilError> {
        if self.reaped {
            return Err(AnvilError::Signal { signal, detail: "the node was killed".to_owned() });
        }
        // The shell's `kill` builtin: no crate, and no reliance on a `kill` binary.
        let status = Command::new("sh")
            .args(["-c", "kill -s \"$1\" \"$2\"", "sh", signal, &self.pid().to_string()])
            .status()
            .map_err(|e| AnvilError::Signal { signal, detail: e.to_string() })?;
        if status.success() {
            Ok(())
        } else {
            Err(AnvilError::Signal { signal, detail: format!("`kill -s {signal}` exited with {status}") })
        }
    }
}

/// The scheduler state of each thread of `pid` (`R`, `S`, `T` for stopped, ...), from
/// `/proc/PID/task/*/stat`.
fn thread_states(pid: u32) -> io::Result<Vec<char>> {
    let mut states = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        // A thread that ended since the listing has no stat any more.
        let Ok(stat) = std::fs::read_to_string(task?.path().join("stat")) else { continue };
        // `pid (comm) state ...`: comm may hold spaces and parentheses, so look after the last `)`.
        if let Some(state) = stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next()) {
            states.push(state);
        }
    }
    Ok(states)
}

//! What can go wrong with an anvil node: not found, not started, not ready, a signal or a
//! call that failed.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

use serde_json::Value;

use super::NOT_FOUND;

/// Why a node could not be started or did not answer.
#[derive(Debug)]
#[non_exhaustive]
pub enum AnvilError {
    /// No anvil binary: its `Display` is [`NOT_FOUND`], then the paths looked at.
    NotFound {
        /// The paths looked at, in order.
        looked_at: Vec<PathBuf>,
    },
    /// The binary could not be run.
    Spawn {
        /// The binary.
        binary: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The node exited while starting.
    Exited {
        /// How it exited.
        status: ExitStatus,
        /// What it wrote to stderr.
        stderr: String,
    },
    /// The node did not answer `eth_chainId` in time.
    NotReady {
        /// How long it was given.
        waited: Duration,
        /// The last error.
        last: String,
    },
    /// The process could not be waited for.
    Wait(io::Error),
    /// A signal could not be sent.
    Signal {
        /// `STOP` or `CONT`.
        signal: &'static str,
        /// Why.
        detail: String,
    },
    /// No HTTP answer (refused, timed out, ...).
    Http(reqwest::Error),
    /// A JSON-RPC error answer.
    Rpc {
        /// The method called.
        method: String,
        /// The answer's `error` object.
        error: Value,
    },
    /// An answer that is neither a JSON-RPC result nor an error, or not the expected value.
    BadAnswer {
        /// The method called.
        method: String,
        /// What came back (its first 512 bytes).
        answer: String,
    },
}

// ===== impl AnvilError =====

impl fmt::Display for AnvilError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnvilError::NotFound { looked_at } => {
                let paths: Vec<String> = looked_at.iter().map(|p| p.display().to_string()).collect();
                write!(f, "{NOT_FOUND} (looked at: {})", paths.join(", "))
            }
            AnvilError::Spawn { binary, source } => {
                write!(f, "could not start {}: {source}", binary.display())
            }
            AnvilError::Exited { status, stderr } => {
                write!(f, "anvil exited while starting ({status}): {}", stderr.trim())
            }
            AnvilError::NotReady { waited, last } => {
                write!(f, "anvil did not answer eth_chainId within {waited:?}: {last}")
            }
            AnvilError::Wait(e) => write!(f, "could not wait for anvil: {e}"),
            AnvilError::Signal { signal, detail } => {
                write!(f, "could not send SIG{signal} to anvil: {detail}")
            }
            AnvilError::Http(e) => {
                write!(f, "no answer from anvil: {e}")?;
                let mut cause = std::error::Error::source(e);
                while let Some(c) = cause {
                    write!(f, ": {c}")?;
                    cause = c.source();
                }
                Ok(())
            }
            AnvilError::Rpc { method, error } => write!(f, "anvil answered {method} with an error: {error}"),
            AnvilError::BadAnswer { method, answer } => write!(f, "unexpected answer to {method}: {answer}"),
        }
    }
}

impl std::error::Error for AnvilError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AnvilError::Spawn { source, .. } | AnvilError::Wait(source) => Some(source),
            AnvilError::Http(e) => Some(e),
            _ => None,
        }
    }
}

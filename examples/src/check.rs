//! `ensure`: how an example fails when what it demonstrates did not happen.

use std::error::Error;
use std::fmt;

/// What an example set out to show did not happen. Returned from `main`, it makes the
/// example exit with a non-zero status.
pub struct Unmet(String);

/// Returns [`Unmet`] naming `claim` unless it `holds`.
///
/// # Errors
///
/// When `holds` is false.
pub fn ensure(holds: bool, claim: &str) -> Result<(), Unmet> {
    if holds { Ok(()) } else { Err(Unmet(claim.to_owned())) }
}

impl fmt::Display for Unmet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not shown: {}", self.0)
    }
}

// `main` prints a returned error with `Debug`: keep it the plain sentence.
impl fmt::Debug for Unmet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Error for Unmet {}

//! `causes`: an error with its whole source chain, for printing.

use std::error::Error;
use std::fmt;

/// Displays an error followed by each of its sources, separated by `": "`, as in
/// `error sending request: client error (Connect): tcp connect error: Connection refused`.
///
/// Adjacent duplicates are printed once, since some errors repeat their source's message.
pub fn causes<'a>(err: &'a (dyn Error + 'static)) -> impl fmt::Display + 'a {
    Causes(err)
}

struct Causes<'a>(&'a (dyn Error + 'static));

impl fmt::Display for Causes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut last = self.0.to_string();
        f.write_str(&last)?;
        let mut next = self.0.source();
        while let Some(err) = next {
            let message = err.to_string();
            if message != last {
                write!(f, ": {message}")?;
            }
            last = message;
            next = err.source();
        }
        Ok(())
    }
}

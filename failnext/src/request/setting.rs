//! `Setting`: a builder's value that has a default and can be turned off.

/// A setting with a default: the default, the caller's value, or turned off.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Setting<T> {
    Default,
    Set(T),
    Off,
}

impl<T> Setting<T> {
    /// The value: the caller's, none when turned off, else `default`.
    pub(crate) fn or(self, default: Option<T>) -> Option<T> {
        match self {
            Setting::Default => default,
            Setting::Set(value) => Some(value),
            Setting::Off => None,
        }
    }
}

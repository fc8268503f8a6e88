//! What an answer says beyond its judgement, for the request's [`Scope`](crate::Scope): what
//! the endpoint lacked, and the answer's result when it is a quantity. Found by the JSON-RPC
//! classifier while it judges (nothing is parsed again), carried on the [`Judgement`](crate::Judgement).

/// What a stale or unsupported answer says the provider lacks. Judging itself does not tell
/// them apart (each fails over, `Neutral`); a scope learns from it (which endpoint did not
/// know a block, which one lacks archive state or a method).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Missing {
    /// A block it does not know: an unknown number or hash, a block above its head.
    Block,
    /// State it does not keep for a block it knows (a pruned node asked for old state).
    State,
    /// The method (`-32601`, "method not found", ...).
    Method,
}

impl Missing {
    const fn bit(self) -> u8 {
        match self {
            Missing::Block => 1,
            Missing::State => 2,
            Missing::Method => 4,
        }
    }
}

/// The set of what an answer's stale and unsupported parts said was missing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Missed(u8);

impl Missed {
    /// Nothing missing.
    pub(crate) const EMPTY: Missed = Missed(0);

    pub(crate) fn add(&mut self, missing: Missing) {
        self.0 |= missing.bit();
    }

    pub(crate) const fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub(crate) const fn has(self, missing: Missing) -> bool {
        self.0 & missing.bit() != 0
    }
}

/// What the classifier found in an answer, beside its judgement.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Findings {
    /// What its stale and unsupported parts said was missing.
    pub(crate) missed: Missed,
    /// The result of a single answer, when it is a quantity (`"0x1b4"`).
    pub(crate) quantity: Option<u64>,
}

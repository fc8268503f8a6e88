//! [`Findings`]: what an answer says beyond its judgement, for the request's
//! [`Scope`](crate::Scope): what the endpoint lacked, and the answer's result when it is a
//! quantity. Found by the JSON-RPC classifier while it judges (nothing is parsed again),
//! carried on the [`Judgement`](crate::Judgement).

/// What a stale or unsupported answer says the provider lacks. Judging itself does not tell
/// them apart (each fails over, `Neutral`); a scope learns from it (which endpoint did not
/// know a block, which one lacks archive state or a method).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(feature = "jsonrpc"), allow(dead_code, reason = "found by the JSON-RPC classifier"))]
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Missed(u8);

impl Missed {
    /// Nothing missing.
    pub(crate) const EMPTY: Missed = Missed(0);

    #[cfg_attr(not(feature = "jsonrpc"), allow(dead_code, reason = "found by the JSON-RPC classifier"))]
    pub(crate) fn add(&mut self, missing: Missing) {
        self.0 |= missing.bit();
    }

    pub(crate) const fn has(self, missing: Missing) -> bool {
        self.0 & missing.bit() != 0
    }
}

/// What the classifier found in an answer, beside its [`Judgement`](crate::Judgement)
/// ([`Judgement::findings`](crate::Judgement::findings)): what its stale or unsupported parts
/// said the provider lacks, and the result of a single answer when it is a quantity. The
/// JSON-RPC classifier (`failnext::jsonrpc`, feature `jsonrpc`) finds them while it judges;
/// other judges find none.
/// A [`Scope`](crate::Scope) reads them in its review: the alloy transport learns from them
/// who did not know a bundle's block and who lacks archive state or a method, and checks an
/// `eth_blockNumber` answer against its floor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Findings {
    pub(crate) missed: Missed,
    pub(crate) quantity: Option<u64>,
    pub(crate) empty: bool,
}

impl Findings {
    /// No findings.
    pub(crate) const NONE: Findings = Findings { missed: Missed::EMPTY, quantity: None, empty: false };

    /// Whether the answer said the provider lacks anything (a block, state, the method).
    pub const fn lacks_anything(&self) -> bool {
        self.missed.0 != 0
    }

    /// The provider did not know a block the request named (an unknown number or hash, a
    /// block above its head).
    pub const fn lacks_block(&self) -> bool {
        self.missed.has(Missing::Block)
    }

    /// The provider does not keep the state asked for (a pruned node asked for old state).
    pub const fn lacks_state(&self) -> bool {
        self.missed.has(Missing::State)
    }

    /// The provider does not serve the method asked for.
    pub const fn lacks_method(&self) -> bool {
        self.missed.has(Missing::Method)
    }

    /// The result of a single answer, when it is a quantity (`"0x1b4"`): a block number, say.
    pub const fn quantity(&self) -> Option<u64> {
        self.quantity
    }

    /// The result of a single answer is `null` or an empty array `[]`: what a provider answers
    /// for a block, a transaction, a receipt or logs it has not got (yet).
    pub const fn empty_result(&self) -> bool {
        self.empty
    }
}

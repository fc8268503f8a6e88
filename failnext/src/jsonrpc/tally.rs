//! The [`Tally`]: how the answers of one response were judged, and the response's judgement
//! from them (the batch rule of the module docs, [`super`]).
//!
//! The parser ([`super::parse`]) adds one [`Kind`] per answer; the classifier asks for the
//! [`judgement`](Tally::judgement) and for what the stale answers said was
//! [`missed`](Tally::missed). Nothing here reads a body.

use std::time::Duration;

use super::table::{Kind, Missed, Missing};
use crate::judging::findings::Findings;
use crate::{Class, Evidence, Judgement, Verdict};

/// How the answers of one response were judged (one answer for a single response).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Tally {
    results: bool,
    definitive: bool,
    unsupported: bool,
    stale: bool,
    broken: bool,
    capacity: bool,
    timeout: bool,
    unauthorized: bool,
    payment: bool,
    limit: bool,
    hint: Option<Duration>,
    /// What the stale and unsupported answers said was missing.
    missed: Missed,
    /// A single answer's `result`, when it is a quantity.
    quantity: Option<u64>,
    /// A single answer's `result` is `null` or `[]`.
    empty: bool,
}

impl Tally {
    /// The tally of a single answer (not a batch) of `kind`, whose `result` (if any) is
    /// `quantity`: kept only when the answer is a `result` ([`Kind::Answer`]).
    pub(crate) fn single(quantity: Option<u64>, empty: bool, kind: Kind) -> Tally {
        let mut tally = Tally::default();
        tally.add(kind);
        if kind == Kind::Answer {
            tally.quantity = quantity;
            tally.empty = empty;
        }
        tally
    }

    /// Counts one answer.
    pub(crate) fn add(&mut self, kind: Kind) {
        match kind {
            Kind::Answer => self.results = true,
            Kind::Unrecognised => {}
            Kind::Definitive => self.definitive = true,
            Kind::Unsupported => {
                self.unsupported = true;
                self.missed.add(Missing::Method);
            }
            Kind::Stale(missing) => {
                self.stale = true;
                self.missed.add(missing);
            }
            Kind::Broken => self.broken = true,
            Kind::Timeout => self.timeout = true,
            Kind::Unauthorized => self.unauthorized = true,
            Kind::Payment => self.payment = true,
            Kind::Limit => self.limit = true,
            Kind::Capacity(hint) => {
                self.capacity = true;
                self.hint = self.hint.max(hint);
            }
        }
    }

    /// The number a single answer's `result` held, when it was a quantity (see
    /// [`super::result`]); `None` for a batch, an error, a `result` that is not a quantity. A
    /// fact about the body, like [`missed`](Tally::missed): an HTTP 429 added later keeps it.
    pub(crate) const fn quantity(&self) -> Option<u64> {
        self.quantity
    }

    /// The response is broken as a whole (malformed JSON, not JSON-RPC).
    pub(crate) fn broken() -> Tally {
        Tally { broken: true, ..Tally::default() }
    }

    /// A body that is not a JSON-RPC answer, which its words judge as `kind` (a capacity,
    /// payment, credentials, limit or timeout kind: [`super::table::classify_text`]).
    pub(crate) fn broken_for(kind: Kind) -> Tally {
        let mut tally = Tally::default();
        tally.add(kind);
        tally
    }

    /// The most telling thing the answers said, for the status rule: the kind that decides
    /// the judgement when it fails over, else `Unrecognised`.
    pub(crate) fn said(&self) -> Kind {
        if self.unauthorized {
            Kind::Unauthorized
        } else if self.payment {
            Kind::Payment
        } else if self.capacity {
            Kind::Capacity(self.hint)
        } else if self.limit {
            Kind::Limit
        } else if self.timeout {
            Kind::Timeout
        } else if self.stale || self.unsupported {
            Kind::Unsupported
        } else {
            Kind::Unrecognised
        }
    }

    /// Whether the response is broken and nothing more specific was said of it: a body that
    /// is not a JSON-RPC answer, which its words may still explain.
    pub(crate) const fn only_broken(&self) -> bool {
        self.broken
            && !(self.results
                || self.capacity
                || self.unauthorized
                || self.payment
                || self.limit
                || self.stale
                || self.unsupported
                || self.timeout
                || self.definitive)
    }

    /// The response's judgement: any capacity, broken, stale or unsupported answer fails the
    /// whole response over (capacity first, as it carries the hint); else it is returned.
    /// The judgement, with what the answers said beside it (what was missing, a single
    /// answer's quantity) as its findings.
    pub(crate) fn judgement(&self) -> Judgement {
        let mut judgement = self.verdict();
        judgement.findings = Findings { missed: self.missed, quantity: self.quantity(), empty: self.empty };
        judgement
    }

    fn verdict(&self) -> Judgement {
        let fail_over = |cool_for| Verdict::FailOver { cool_for };
        // The account first: no other answer of a batch matters while the key is refused.
        if self.unauthorized {
            return Judgement::new(fail_over(None), Evidence::Failure, Class::Unauthorized);
        }
        if self.payment {
            return Judgement::new(fail_over(None), Evidence::Failure, Class::Payment);
        }
        if self.capacity {
            return Judgement::new(fail_over(self.hint), Evidence::Failure, Class::Capacity);
        }
        if self.broken {
            return Judgement::new(fail_over(None), Evidence::Failure, Class::Broken);
        }
        if self.timeout {
            return Judgement::new(fail_over(None), Evidence::Neutral, Class::Broken);
        }
        if self.limit {
            return Judgement::new(fail_over(None), Evidence::Neutral, Class::Limit);
        }
        if self.stale || self.unsupported {
            return Judgement::new(fail_over(None), Evidence::Neutral, Class::Stale);
        }
        let evidence = if self.results { Evidence::Success } else { Evidence::Neutral };
        let class = if self.definitive { Class::Definitive } else { Class::Answer };
        Judgement::new(Verdict::Return, evidence, class)
    }
}

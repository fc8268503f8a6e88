//! Decision 1, which endpoint: the request's consideration order, frozen at request start.
//!
//! Pure: no I/O, no clock, no locks. Cooldown is applied later, live, by the attempt loop.

/// The endpoints a request may use, in the order it considers them.
///
/// Built once per request from the configured order, the request's exclusions, the
/// eligibility answers and the preferred endpoint. Allocation-free for up to 64 endpoints.
#[derive(Debug)]
pub(crate) struct Plan {
    usable: Mask,
    preferred: Option<usize>,
    preferred_done: bool,
    /// Next configured index to look at once the preferred endpoint (if any) is done.
    cursor: usize,
    remaining: usize,
    len: usize,
}

impl Plan {
    /// `excluded` are indices never considered; `eligible` is asked exactly once for every
    /// other index, in configured order; `preferred` moves to the front if it is usable.
    pub(crate) fn new(
        len: usize,
        excluded: impl Fn(usize) -> bool,
        preferred: Option<usize>,
        mut eligible: impl FnMut(usize) -> bool,
    ) -> Plan {
        let mut usable = Mask::new(len);
        let mut remaining = 0;
        for i in 0..len {
            if !excluded(i) && eligible(i) {
                usable.set(i);
                remaining += 1;
            }
        }
        let preferred = preferred.filter(|&p| p < len && usable.get(p));
        Plan { usable, preferred, preferred_done: false, cursor: 0, remaining, len }
    }

    /// Whether any endpoint is left to consider.
    pub(crate) fn has_more(&self) -> bool {
        self.remaining > 0
    }
}

impl Iterator for Plan {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        if let (Some(p), false) = (self.preferred, self.preferred_done) {
            self.preferred_done = true;
            self.remaining -= 1;
            return Some(p);
        }
        while self.cursor < self.len {
            let i = self.cursor;
            self.cursor += 1;
            if self.usable.get(i) && Some(i) != self.preferred {
                self.remaining -= 1;
                return Some(i);
            }
        }
        None
    }
}

/// A set of endpoint indices: one word inline, a vector beyond 64 endpoints.
#[derive(Debug)]
enum Mask {
    Word(u64),
    Words(Vec<u64>),
}

impl Mask {
    fn new(len: usize) -> Mask {
        if len <= 64 { Mask::Word(0) } else { Mask::Words(vec![0; len.div_ceil(64)]) }
    }

    fn set(&mut self, i: usize) {
        match self {
            Mask::Word(w) => *w |= 1 << i,
            Mask::Words(ws) => ws[i / 64] |= 1 << (i % 64),
        }
    }

    fn get(&self, i: usize) -> bool {
        match self {
            Mask::Word(w) => i < 64 && *w & (1 << i) != 0,
            Mask::Words(ws) => ws.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(len: usize, excluded: &[usize], preferred: Option<usize>, ok: &[usize]) -> Vec<usize> {
        Plan::new(len, |i| excluded.contains(&i), preferred, |i| ok.contains(&i)).collect()
    }

    #[test]
    fn configured_order_minus_excluded_and_ineligible() {
        assert_eq!(order(4, &[], None, &[0, 1, 2, 3]), [0, 1, 2, 3]);
        assert_eq!(order(4, &[0, 2], None, &[0, 1, 2, 3]), [1, 3]);
        assert_eq!(order(4, &[], None, &[1, 3]), [1, 3]);
    }

    #[test]
    fn preferred_moves_to_front_only_when_usable() {
        assert_eq!(order(3, &[], Some(2), &[0, 1, 2]), [2, 0, 1]);
        assert_eq!(order(3, &[], Some(0), &[0, 1, 2]), [0, 1, 2]);
        assert_eq!(order(3, &[2], Some(2), &[0, 1, 2]), [0, 1]);
        assert_eq!(order(3, &[], Some(2), &[0, 1]), [0, 1]);
    }

    #[test]
    fn eligibility_asked_once_per_non_excluded_endpoint() {
        let mut asked = Vec::new();
        let plan = Plan::new(
            4,
            |i| i == 0,
            None,
            |i| {
                asked.push(i);
                true
            },
        );
        assert_eq!(asked, [1, 2, 3]);
        assert_eq!(plan.count(), 3);
    }

    #[test]
    fn has_more_tracks_remaining() {
        let mut plan = Plan::new(2, |_| false, Some(1), |_| true);
        assert!(plan.has_more());
        assert_eq!(plan.next(), Some(1));
        assert!(plan.has_more());
        assert_eq!(plan.next(), Some(0));
        assert!(!plan.has_more());
        assert_eq!(plan.next(), None);
    }

    #[test]
    fn more_than_64_endpoints() {
        let all: Vec<usize> = (0..100).collect();
        assert_eq!(order(100, &[], Some(99), &all).len(), 100);
        assert_eq!(order(100, &[], Some(99), &all)[0], 99);
    }
}

//! [`Jitter`]: the one small pseudo-random generator of the workspace, for spreading timings
//! apart (breaker open times, poll sleeps) and for deterministic test streams. Not
//! cryptography.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

/// A xorshift64 generator (shifts 13, 7, 17): cheap, one `u64` of state, and good enough to make
/// timers started together drift apart. **Not cryptography**: its stream is predictable from
/// one output, so never use it for keys, tokens or anything an adversary must not guess.
///
/// [`from_seed`](Jitter::from_seed) gives a reproducible stream (tests pin one seed);
/// [`from_entropy`](Jitter::from_entropy) a stream that differs between generators and
/// processes.
///
/// ```
/// use failnext::Jitter;
///
/// let mut a = Jitter::from_seed(7);
/// let mut b = Jitter::from_seed(7);
/// assert_eq!(a.next_u64(), b.next_u64());
/// // A factor in [0.9, 1.1], in steps of 1/10 000.
/// let tenth_mille = 9_000 + a.below(2_001);
/// assert!((9_000..=11_000).contains(&tenth_mille));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Jitter(u64);

/// What a zero seed becomes: zero is a fixed point of xorshift.
const ZERO_SEED: u64 = 0x2545_f491_4f6c_dd1d;

impl Jitter {
    /// A generator whose stream is fixed by `seed`: the same seed, the same stream. A zero
    /// seed (the one fixed point of xorshift, which would only ever give zeros) is replaced by
    /// a fixed non-zero one; every other seed is the generator's first state as given.
    pub const fn from_seed(seed: u64) -> Self {
        Jitter(if seed == 0 { ZERO_SEED } else { seed })
    }

    /// A generator seeded from the process's random hasher keys
    /// ([`RandomState`]): two generators made this way differ, within a process and
    /// across processes. Reads no clock and makes no system call beyond what `RandomState`
    /// does.
    pub fn from_entropy() -> Self {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u64(0x9e37_79b9_7f4a_7c15);
        Jitter::from_seed(hasher.finish())
    }

    /// The next 64 bits of the stream (never zero).
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// The next value of the stream reduced to `0..bound` (`next_u64() % bound`; the modulo
    /// bias is negligible for the small bounds jitter uses). 0 when `bound` is 0.
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64().checked_rem(bound).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_is_xorshift64_with_shifts_13_7_17() {
        let mut jitter = Jitter::from_seed(1);
        let mut x: u64 = 1;
        for _ in 0..100 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            assert_eq!(jitter.next_u64(), x);
        }
        assert_eq!(Jitter::from_seed(1).next_u64(), 0x4082_2041);
    }

    #[test]
    fn the_same_seed_gives_the_same_stream_and_another_seed_another() {
        let stream = |seed| {
            let mut jitter = Jitter::from_seed(seed);
            (0..32).map(|_| jitter.next_u64()).collect::<Vec<_>>()
        };
        assert_eq!(stream(7), stream(7));
        assert_ne!(stream(7), stream(8));
    }

    #[test]
    fn a_zero_seed_is_not_a_fixed_point() {
        let mut jitter = Jitter::from_seed(0);
        assert_eq!(jitter, Jitter::from_seed(ZERO_SEED));
        assert!((0..1_000).all(|_| jitter.next_u64() != 0));
    }

    #[test]
    fn below_stays_below_its_bound_and_a_zero_bound_gives_zero() {
        let mut jitter = Jitter::from_seed(42);
        let mut seen = [false; 7];
        for _ in 0..1_000 {
            let value = jitter.below(7);
            assert!(value < 7);
            seen[value as usize] = true;
        }
        assert!(seen.iter().all(|&s| s), "every value below 7 comes up");
        assert_eq!(jitter.below(0), 0);
        assert_eq!(jitter.below(1), 0);
    }

    #[test]
    fn entropy_seeded_generators_differ() {
        let (mut a, mut b) = (Jitter::from_entropy(), Jitter::from_entropy());
        assert_ne!((a.next_u64(), a.next_u64()), (b.next_u64(), b.next_u64()));
    }
}

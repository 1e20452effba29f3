//! The simulator's only source of randomness: a seeded SplitMix64 generator.
//!
//! No OS randomness and no clock is ever read, so the same seed always gives the
//! same schedule.

use std::time::Duration;

/// A small, fast, seeded pseudo-random generator (SplitMix64).
///
/// ```
/// use zklock::sim::SimRng;
/// let mut a = SimRng::new(7);
/// let mut b = SimRng::new(7);
/// assert_eq!(a.next_u64(), b.next_u64());
/// assert!(a.below(10) < 10);
/// ```
#[derive(Clone, Debug)]
pub struct SimRng {
    state: u64,
}

impl SimRng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Self {
        SimRng { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        // Multiply-shift: unbiased enough for simulation, and branch-free.
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A uniform index into a collection of `len` elements (`len` must be > 0).
    pub fn index(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }

    /// `true` with probability `p` (clamped to `0.0..=1.0`).
    pub fn chance(&mut self, p: f64) -> bool {
        if p <= 0.0 {
            return false;
        }
        if p >= 1.0 {
            return true;
        }
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 > 1.0 - p
    }

    /// A uniform duration in `lo..=hi` (nanosecond resolution; `lo` if `hi < lo`).
    pub fn duration(&mut self, lo: Duration, hi: Duration) -> Duration {
        if hi <= lo {
            return lo;
        }
        let span = (hi - lo).as_nanos().min(u128::from(u64::MAX - 1)) as u64;
        lo + Duration::from_nanos(self.below(span + 1))
    }

    /// Picks an index with probability proportional to `weights` (`None` if all are 0).
    pub fn weighted(&mut self, weights: &[u32]) -> Option<usize> {
        let total: u64 = weights.iter().map(|w| u64::from(*w)).sum();
        if total == 0 {
            return None;
        }
        let mut r = self.below(total);
        for (i, w) in weights.iter().enumerate() {
            let w = u64::from(*w);
            if r < w {
                return Some(i);
            }
            r -= w;
        }
        None
    }

    /// Shuffles `items` in place (Fisher-Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.index(i + 1);
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_in_range_and_fair() {
        let mut a = SimRng::new(1);
        let mut b = SimRng::new(1);
        for _ in 0..1000 {
            let x = a.below(7);
            assert_eq!(x, b.below(7));
            assert!(x < 7);
            let d = a.duration(Duration::from_millis(1), Duration::from_millis(3));
            assert_eq!(
                d,
                b.duration(Duration::from_millis(1), Duration::from_millis(3))
            );
            assert!(d >= Duration::from_millis(1) && d <= Duration::from_millis(3));
        }
        assert_eq!(a.weighted(&[0, 0]), None);
        assert_eq!(a.weighted(&[0, 5, 0]), Some(1));
        assert!(!a.chance(0.0));
        assert!(a.chance(1.0));
        let hits = (0..10_000).filter(|_| a.chance(0.25)).count();
        assert!((2000..3000).contains(&hits), "{hits}");
    }
}

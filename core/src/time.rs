//! Time as the core sees it: an opaque, caller-supplied monotonic instant.
//!
//! The core never reads a clock. Adapters map their clock (e.g. `std::time::Instant`
//! minus a start instant) onto [`Timestamp`]; the simulator uses virtual time directly.

use std::fmt;
use std::ops::{Add, Sub};
use std::time::Duration;

/// A point in time, measured from an epoch chosen by the caller (nanoseconds).
///
/// Only differences between timestamps matter, so any monotonic clock works:
///
/// ```
/// use lock_core::Timestamp;
/// use std::time::Duration;
/// let t0 = Timestamp::ZERO;
/// let t1 = t0 + Duration::from_millis(1500);
/// assert_eq!(t1 - t0, Duration::from_millis(1500));
/// assert_eq!(t1.as_millis(), 1500);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(u64);

impl Timestamp {
    /// The epoch.
    pub const ZERO: Timestamp = Timestamp(0);
    /// The latest representable instant.
    pub const MAX: Timestamp = Timestamp(u64::MAX);

    /// A timestamp `d` after the epoch (saturating).
    pub fn from_duration(d: Duration) -> Self {
        Timestamp(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }

    /// A timestamp `ms` milliseconds after the epoch.
    pub fn from_millis(ms: u64) -> Self {
        Timestamp(ms.saturating_mul(1_000_000))
    }

    /// Time since the epoch.
    pub fn since_epoch(self) -> Duration {
        Duration::from_nanos(self.0)
    }

    /// Whole milliseconds since the epoch.
    pub fn as_millis(self) -> u64 {
        self.0 / 1_000_000
    }

    /// `d` before `self`, or the epoch if that is earlier.
    pub fn saturating_sub(self, d: Duration) -> Timestamp {
        Timestamp(
            self.0
                .saturating_sub(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
        )
    }

    /// `self - earlier`, or zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Timestamp) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl Add<Duration> for Timestamp {
    type Output = Timestamp;
    fn add(self, d: Duration) -> Timestamp {
        Timestamp(
            self.0
                .saturating_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
        )
    }
}

impl Sub for Timestamp {
    type Output = Duration;
    /// Saturating difference.
    fn sub(self, rhs: Timestamp) -> Duration {
        self.saturating_since(rhs)
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t+{:?}", self.since_epoch())
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0 / 1_000_000;
        write!(f, "{}.{:03}s", ms / 1000, ms % 1000)
    }
}

//! The two readings of one time line: the binding's `Instant`s (its clock, see
//! [`crate::Clock`]) and the core's `Timestamp`s, zero at the client's start.

use lock_core::Timestamp;
use std::sync::Arc;
use std::time::Instant;

/// The client's clock and the core's time zero on it.
pub(crate) struct Timeline {
    /// The core's `Timestamp::ZERO`.
    epoch: Instant,
    /// Where handles read the time (the binding's, see [`crate::Clock`]).
    clock: Arc<dyn crate::Clock>,
}

impl Timeline {
    /// Zero now on `clock`.
    pub(crate) fn new(clock: Arc<dyn crate::Clock>) -> Timeline {
        Timeline {
            epoch: clock.now(),
            clock,
        }
    }

    /// The core's clock reading for `at` (zero for an instant before the start).
    pub(crate) fn timestamp(&self, at: Instant) -> Timestamp {
        Timestamp::from_duration(at.saturating_duration_since(self.epoch))
    }

    /// The binding's clock reading for the core's `at`.
    pub(crate) fn instant(&self, at: Timestamp) -> Instant {
        self.epoch + at.since_epoch()
    }

    /// The core's clock now (for handles: the binding passes its own `now`).
    pub(crate) fn now(&self) -> Timestamp {
        self.timestamp(self.clock.now())
    }

    /// The binding's clock now.
    pub(crate) fn instant_now(&self) -> Instant {
        self.clock.now()
    }

    /// The clock, for what reads it later (a queue place's countdown).
    pub(crate) fn clock(&self) -> Arc<dyn crate::Clock> {
        self.clock.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::ManualClock;
    use std::time::Duration;

    #[test]
    fn both_readings_are_of_one_time_line_from_the_start() {
        let clock = ManualClock::new();
        let timeline = Timeline::new(clock.clone());
        assert_eq!(timeline.now(), Timestamp::ZERO);
        clock.set(clock.zero + Duration::from_secs(3));
        let now = timeline.now();
        assert_eq!(now.since_epoch(), Duration::from_secs(3));
        assert_eq!(timeline.instant(now), timeline.instant_now());
        let before = clock.zero.checked_sub(Duration::from_secs(1));
        assert_eq!(
            timeline.timestamp(before.unwrap_or(clock.zero)),
            Timestamp::ZERO
        );
    }
}

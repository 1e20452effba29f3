//! Per-acquisition timers, ordered so the next wakeup is found in O(log n).

use crate::ids::LockId;
use crate::time::Timestamp;
use std::collections::{BTreeSet, HashMap};

/// What a timer is for.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub(crate) enum TimerKind {
    /// The acquisition's deadline.
    Deadline,
    /// The suspension grace of a held lock.
    Grace,
    /// Retry after an error that left the connection up.
    Retry,
    /// The maximum hold time of a lease.
    Lease,
    /// Deadlock detection: publish our wait and chase (again).
    Detect,
    /// The end of a lock-delay (see [`crate::LockSpec::lock_delay`]).
    LockDelay,
    /// The session's next `sync` (see [`crate::contact`]).
    Sync,
    /// The session's held locks must be suspended for want of proven contact.
    Contact,
}

#[derive(Default)]
pub(crate) struct Timers {
    queue: BTreeSet<(Timestamp, LockId, TimerKind)>,
    armed: HashMap<(LockId, TimerKind), Timestamp>,
}

impl Timers {
    pub(crate) fn set(&mut self, lock: LockId, kind: TimerKind, at: Timestamp) {
        self.cancel(lock, kind);
        self.queue.insert((at, lock, kind));
        self.armed.insert((lock, kind), at);
    }

    pub(crate) fn is_armed(&self, lock: LockId, kind: TimerKind) -> bool {
        self.armed.contains_key(&(lock, kind))
    }

    pub(crate) fn cancel(&mut self, lock: LockId, kind: TimerKind) {
        if let Some(at) = self.armed.remove(&(lock, kind)) {
            self.queue.remove(&(at, lock, kind));
        }
    }

    pub(crate) fn cancel_lock(&mut self, lock: LockId) {
        for kind in [
            TimerKind::Deadline,
            TimerKind::Grace,
            TimerKind::Retry,
            TimerKind::Lease,
            TimerKind::Detect,
            TimerKind::LockDelay,
            TimerKind::Sync,
            TimerKind::Contact,
        ] {
            self.cancel(lock, kind);
        }
    }

    pub(crate) fn cancel_kind(&mut self, kind: TimerKind) {
        let doomed: Vec<_> = self
            .armed
            .keys()
            .filter(|(_, k)| *k == kind)
            .copied()
            .collect();
        for (lock, kind) in doomed {
            self.cancel(lock, kind);
        }
    }

    pub(crate) fn next(&self) -> Option<Timestamp> {
        self.queue.first().map(|(at, _, _)| *at)
    }

    /// Removes and returns the earliest timer due at `now`, if any.
    pub(crate) fn pop_due(&mut self, now: Timestamp) -> Option<(LockId, TimerKind)> {
        let &(at, lock, kind) = self.queue.first()?;
        if at > now {
            return None;
        }
        self.queue.remove(&(at, lock, kind));
        self.armed.remove(&(lock, kind));
        Some((lock, kind))
    }
}

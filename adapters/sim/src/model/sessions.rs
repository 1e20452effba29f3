//! The server's session tracker (ZooKeeper's `SessionTrackerImpl`): which client
//! owns each live session, its negotiated timeout, and when a session the server no
//! longer hears from expires.
//!
//! A connected client pings (every third of its read timeout), so while its
//! connection is up the server keeps touching its session and it never expires. When
//! the connection is cut (reset or silent), the last time the server heard from the
//! client is the moment of the cut: the session expires one timeout later unless the
//! client is back first. Both faces keep their sessions here, so expiry means the
//! same thing under the seeded simulator (virtual [`Timestamp`](lock_core::Timestamp)s)
//! and the in-process server (`Instant`s).
//!
//! The real tracker rounds each expiry up to its next tick (`roundToNextInterval`),
//! so a session expires between one timeout and one timeout plus a tick after the
//! last contact; the model expires it at exactly one timeout, the earliest instant
//! the real server can, which is the one that matters to a lock's safety.
//!
//! And what the client library does about a silent connection: it notices after its
//! read timeout, two thirds of the session timeout, without a reply
//! ([`SILENT_CUT_NOTICED_WITHIN`]).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Add;
use std::time::Duration;

/// How long, as a fraction of the session timeout, a client library takes at most to
/// notice a connection that went silent: its read timeout (zookeeper-client's and the
/// Java client's `readTimeout`, two thirds of the negotiated session timeout). A
/// reset connection is noticed at once.
pub(crate) const SILENT_CUT_NOTICED_WITHIN: f64 = 2.0 / 3.0;

/// The longest a client with `session_timeout` takes to notice a silent cut.
pub(crate) fn silent_cut_noticed_after(session_timeout: Duration) -> Duration {
    session_timeout.mul_f64(SILENT_CUT_NOTICED_WITHIN)
}

/// One live session as the tracker knows it.
#[derive(Clone, Copy, Debug)]
struct Tracked<T, O> {
    /// Which client of the face owns it (the seeded simulator's client index, the
    /// in-process server's client key).
    owner: O,
    timeout: Duration,
    /// `None` while its connection is up (the client pings); otherwise the last
    /// time the server heard from it.
    last_contact: Option<T>,
}

/// The live sessions of one server, with the time type of its face (`T`) and the
/// face's name for a client (`O`).
#[derive(Clone, Debug)]
pub(crate) struct SessionTracker<T, O> {
    sessions: BTreeMap<i64, Tracked<T, O>>,
    /// The sessions out of contact by expiry: the next one without a scan (a
    /// simulation of 100,000 clients asks after every step).
    by_expiry: BTreeSet<(T, i64)>,
}

impl<T, O> Default for SessionTracker<T, O> {
    fn default() -> Self {
        SessionTracker {
            sessions: BTreeMap::new(),
            by_expiry: BTreeSet::new(),
        }
    }
}

impl<T, O> SessionTracker<T, O>
where
    T: Copy + Ord + Add<Duration, Output = T>,
    O: Copy,
{
    // ----- getters ----------------------------------------------------------------

    /// Whether the tracker has `session` (live: not expired, not closed).
    pub fn contains(&self, session: i64) -> bool {
        self.sessions.contains_key(&session)
    }

    /// The client that owns `session`.
    pub fn owner(&self, session: i64) -> Option<O> {
        self.sessions.get(&session).map(|t| t.owner)
    }

    /// When `session` expires: `None` while its client is in contact (or for a
    /// session the tracker does not have).
    pub fn expiry(&self, session: i64) -> Option<T> {
        let tracked = self.sessions.get(&session)?;
        tracked.last_contact.map(|at| at + tracked.timeout)
    }

    /// The earliest expiry among the sessions out of contact, with its session
    /// (the lowest id first among equal instants, so a seed gives one order).
    pub fn next_expiry(&self) -> Option<(T, i64)> {
        self.by_expiry.first().copied()
    }

    /// Whether `session` has expired by `now` (its client out of contact for a whole
    /// timeout) and is still tracked: the caller expires it in the model and calls
    /// [`expired`](Self::expired).
    pub fn is_due(&self, session: i64, now: T) -> bool {
        self.expiry(session).is_some_and(|at| at <= now)
    }

    // ----- mutators ---------------------------------------------------------------

    /// A new session of `owner`, with its client connected.
    pub fn open(&mut self, session: i64, owner: O, timeout: Duration) {
        self.expired(session);
        let tracked = Tracked {
            owner,
            timeout,
            last_contact: None,
        };
        self.sessions.insert(session, tracked);
    }

    /// `session`'s connection is cut at `at`: the server last heard from its client
    /// then (a connected client pings). A session already out of contact keeps the
    /// earlier instant: a second cut does not give it more time.
    pub fn lost_contact(&mut self, session: i64, at: T) {
        if let Some(tracked) = self.sessions.get_mut(&session) {
            if tracked.last_contact.is_none() {
                tracked.last_contact = Some(at);
                self.by_expiry.insert((at + tracked.timeout, session));
            }
        }
    }

    /// `session`'s client reconnected in time: the server hears from it again.
    pub fn in_contact(&mut self, session: i64) {
        if let Some(tracked) = self.sessions.get_mut(&session) {
            if let Some(at) = tracked.last_contact.take() {
                self.by_expiry.remove(&(at + tracked.timeout, session));
            }
        }
    }

    /// `session` expired or was closed: the tracker forgets it. Returns its owner if
    /// it was tracked.
    pub fn expired(&mut self, session: i64) -> Option<O> {
        self.in_contact(session);
        self.sessions.remove(&session).map(|t| t.owner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lock_core::Timestamp;

    fn ms(n: u64) -> Timestamp {
        Timestamp::from_millis(n)
    }

    #[test]
    fn a_session_expires_one_timeout_after_a_cut_unless_back() {
        let mut tracker = SessionTracker::<Timestamp, usize>::default();
        tracker.open(7, 3, Duration::from_secs(1));
        assert_eq!(tracker.expiry(7), None, "in contact: never");
        assert_eq!(tracker.next_expiry(), None);
        assert!(!tracker.is_due(7, ms(1_000_000)));
        tracker.lost_contact(7, ms(100));
        assert_eq!(tracker.expiry(7), Some(ms(1_100)));
        assert!(!tracker.is_due(7, ms(1_099)));
        assert!(tracker.is_due(7, ms(1_100)));
        // A second cut before the client is back gives no more time.
        tracker.lost_contact(7, ms(500));
        assert_eq!(tracker.expiry(7), Some(ms(1_100)));
        tracker.in_contact(7);
        assert_eq!(tracker.expiry(7), None);
        assert_eq!(tracker.expired(7), Some(3));
        assert!(!tracker.contains(7));
    }

    #[test]
    fn the_next_expiry_is_the_earliest_then_the_lowest_id() {
        let mut tracker = SessionTracker::<Timestamp, usize>::default();
        tracker.open(9, 0, Duration::from_secs(1));
        tracker.open(8, 1, Duration::from_secs(2));
        tracker.open(5, 2, Duration::from_secs(1));
        tracker.lost_contact(9, ms(0));
        tracker.lost_contact(8, ms(0));
        assert_eq!(tracker.next_expiry(), Some((ms(1_000), 9)));
        tracker.lost_contact(5, ms(0));
        assert_eq!(tracker.next_expiry(), Some((ms(1_000), 5)));
    }
}

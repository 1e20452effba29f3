//! The session's counters.

/// Counters for diagnostics and benchmarks.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
#[non_exhaustive]
pub struct Stats {
    /// Requests emitted.
    pub requests: u64,
    /// Replies whose request was unknown or forgotten (e.g. sent before a disconnect).
    pub stale_replies: u64,
    /// Children of lock directories that match no naming scheme, seen in listings.
    pub foreign_children: u64,
    /// Watches set on lower participants.
    pub watches_set: u64,
    /// Deletions of a watched lower participant that reached an acquisition.
    pub handoff_notifications: u64,
    /// Acquisitions granted.
    pub acquired: u64,
    /// Retries after errors that left the connection up.
    pub retries: u64,
    /// Deadlock chases started (each a breadth-first read of the wait-for graph).
    pub deadlock_chases: u64,
    /// Deadlock cycles confirmed (whether or not this session's waiter was the victim).
    pub deadlocks_seen: u64,
    /// Grants that waited out a lock-delay (the previous holder ended uncleanly:
    /// see [`LockSpec::lock_delay`](crate::LockSpec::lock_delay)).
    pub lock_delays: u64,
}

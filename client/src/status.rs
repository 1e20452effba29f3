//! [`LockStatus`]: where a held lock stands, as its guard and the shared state
//! see it.

use lock_core::LostReason;

/// Where a held lock stands, from [`LockGuard::status`](crate::LockGuard::status).
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum LockStatus {
    /// Held and trusted.
    Held,
    /// The connection is down: ownership is not guaranteed until it is resumed (or
    /// lost, see [`Lost`](Self::Lost)). Stop touching the protected resource, or
    /// fence your writes with [`LockGuard::token`](crate::LockGuard::token). Nobody else can hold the lock
    /// yet: the lock turns `Lost` before the server could expire the session.
    Suspended,
    /// No longer held. After a suspension, `Lost(SuspendedTooLong)` comes before
    /// anyone else could have been granted the lock: a margin
    /// ([`Config::expiry_margin`](lock_core::Config::expiry_margin)) before one
    /// session timeout has passed since the server last heard from this client,
    /// the earliest the server could expire the session and delete our node (or
    /// earlier, after a shorter [`Config::suspended_grace`](lock_core::Config::suspended_grace)).
    /// Both ends measure with monotonic clocks only (`Instant` here, ZooKeeper's
    /// own on the server), so wall-clock jumps do not matter; a process paused
    /// longer than the margin between the deadline and your code does.
    Lost(LostReason),
    /// Released by us.
    Released,
}

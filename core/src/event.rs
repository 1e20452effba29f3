//! What the core tells the user about a lock, and how it refuses misuse.

use crate::proto::ZkError;
use std::fmt;

/// Identifies one acquisition within a [`Session`](crate::Session).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct LockId(pub u64);

impl fmt::Display for LockId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "lock{}", self.0)
    }
}

/// A fencing token: the `czxid` of the holder's lock node.
///
/// ZooKeeper's zxids grow with every write, across parent re-creation, so tokens of
/// successive exclusive holders of a lock strictly increase. Pass it to the resource
/// you protect and reject writes carrying a lower token than one already seen.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct FencingToken(pub i64);

impl fmt::Display for FencingToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// What a successful acquisition holds.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Grant {
    /// Full path of our lock node.
    pub path: String,
    /// The fencing token (czxid of our node).
    pub token: FencingToken,
    /// The server-assigned sequence number of our node.
    pub sequence: i32,
    /// The session that owns the node.
    pub session_id: i64,
}

/// Why a held lock is no longer held.
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum LostReason {
    /// The session expired (or a reconnect came back on a different session).
    SessionExpired,
    /// The connection stayed down longer than the suspension grace.
    SuspendedTooLong,
    /// Our node was deleted by someone else (an admin, or a revoker).
    NodeDeleted,
    /// Our node now belongs to another session.
    NodeNotOwned,
    /// The client was closed.
    Closed,
}

/// Why an acquisition ended without (or before) holding.
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum FailReason {
    /// The deadline passed.
    Timeout,
    /// The caller cancelled.
    Cancelled,
    /// The session expired while waiting; retry on a new session.
    SessionExpired,
    /// Our waiting node was deleted by someone else.
    NodeDeleted,
    /// The client was closed.
    Closed,
    /// ZooKeeper answered with an error the protocol cannot recover from.
    Zk(ZkError),
    /// `try_lock` semantics: the lock was busy.
    WouldBlock,
}

/// Events the core reports for one acquisition.
///
/// Every acquisition ends in exactly one terminal event ([`LockEvent::is_terminal`]):
/// `Released`, `Lost` or `Failed`; nothing is reported for it afterwards.
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum LockEvent {
    /// The lock is held.
    Acquired(Grant),
    /// The connection is down: ownership is no longer guaranteed until `Resumed`.
    Suspended,
    /// The connection is back and our node verified: held again.
    Resumed,
    /// Terminal: the lock is no longer held.
    Lost(LostReason),
    /// Someone asked the holder to let go.
    RevocationRequested,
    /// Terminal: released as asked.
    Released,
    /// Terminal: the acquisition ended without holding.
    Failed(FailReason),
}

impl LockEvent {
    /// Whether this event ends the acquisition.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            LockEvent::Lost(_) | LockEvent::Released | LockEvent::Failed(_)
        )
    }
}

/// Misuse of the [`Session`](crate::Session) API or bad input. Nothing is lost: the
/// session is unchanged when a call returns one of these.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UsageError {
    /// The lock path is not a valid ZooKeeper path for a lock.
    #[error("invalid lock path {path:?}: {reason}")]
    InvalidPath {
        /// The path given.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Participant data is larger than ZooKeeper accepts.
    #[error("data of {len} bytes exceeds the limit of {max} bytes")]
    DataTooLarge {
        /// Size given.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A semaphore needs at least one permit.
    #[error("a semaphore needs at least one permit")]
    ZeroPermits,
    /// A leader-election participant needs a non-empty id.
    #[error("a leader participant needs a non-empty id")]
    EmptyParticipant,
    /// No such acquisition (never existed, or already ended).
    #[error("unknown lock {0}")]
    UnknownLock(LockId),
    /// `release` of an acquisition that does not hold the lock.
    #[error("{0} is not held")]
    NotHeld(LockId),
    /// The session was closed.
    #[error("session closed")]
    Closed,
}

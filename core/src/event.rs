//! What the core tells the user about a lock, and how it refuses misuse.

use crate::ids::{FencingToken, LockId};
use crate::participants::{CycleNode, Participants};
use crate::proto::{MultiResult, ZkError};

/// What a successful acquisition holds.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Grant {
    /// Full path of our lock node (shared with the session, which keeps it
    /// while the lock is held).
    pub path: std::sync::Arc<str>,
    /// The fencing token (czxid of our node).
    pub token: FencingToken,
    /// The server-assigned sequence number of our node.
    pub sequence: i32,
    /// The session that owns the node.
    pub session_id: i64,
    /// For locks with crash detection ([`LockSpec::detect_crashes`](crate::LockSpec::detect_crashes)):
    /// a previous holder opened a critical section and never closed it (it died, or
    /// lost the lock, inside it). Repair, then [`close_section`](crate::Session::close_section)
    /// or open a new one. Always `false` without crash detection.
    pub previous_holder_crashed: bool,
}

/// The current leader of an election, as an observer sees it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Leader {
    /// The leader's node.
    pub path: String,
    /// The leader's participant id (its node's data).
    pub id: Vec<u8>,
    /// The leader's fencing token (czxid of its node).
    pub token: FencingToken,
}

/// Why a fenced write did not apply.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FencedError {
    /// The lock node is gone: the lock is no longer held, nothing was written.
    #[error("the lock is not held: nothing was written")]
    NotHeld,
    /// One of the writes failed (nothing was written): its index among the writes and error.
    #[error("write {index} failed: {error}")]
    Write {
        /// Index of the failing write.
        index: usize,
        /// Its error.
        error: ZkError,
    },
    /// The outcome is unknown (connection lost before the reply). The writes may or
    /// may not have been applied, atomically.
    #[error("outcome unknown: {0}")]
    Unknown(ZkError),
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
    /// The maximum hold time ([`LockSpec::max_hold`](crate::LockSpec::max_hold)) passed; the
    /// node is deleted. A late writer is caught by the fencing token.
    LeaseExpired,
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
    /// A revocable waiter was asked to give up its place.
    Revoked,
    /// A semaphore on this path is taken with another permit count: two counts
    /// would let more holders in than either allows, so the newcomer is refused.
    PermitsMismatch {
        /// Our permit count.
        ours: u32,
        /// The count another participant declared.
        theirs: u32,
    },
    /// This waiter was chosen to break a deadlock
    /// ([`LockSpec::detect_deadlocks`](crate::LockSpec::detect_deadlocks)): it was the
    /// youngest detecting waiter on a confirmed cycle of waits, and its waiting node
    /// is removed. The other members keep their places.
    Deadlock {
        /// The cycle, in wait order: each node waits for the next, the last for
        /// the first (ours).
        cycle: Vec<CycleNode>,
    },
    /// A downgrade (the read half taken by the owner of the held write half, see
    /// [`LockSpec::read`](crate::LockSpec::read)) found another writer queued
    /// between its owner's write node and its read node: that writer waits for
    /// the owner's write, and the read would wait for that writer, so the read
    /// could only be granted after the owner let go of its write lock. It fails at
    /// the first listing instead of waiting for itself; its node is removed.
    SelfDeadlock {
        /// The lock path.
        path: String,
        /// The owner.
        owner: String,
        /// The kind of node the owner holds there (a write).
        held: crate::NodeKind,
    },
}

/// The reason as a clause: "the lock was lost: {reason}".
///
/// ```
/// assert_eq!(lock_core::LostReason::SessionExpired.to_string(), "the ZooKeeper session expired");
/// ```
impl std::fmt::Display for LostReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LostReason::SessionExpired => "the ZooKeeper session expired",
            LostReason::SuspendedTooLong => {
                "the connection stayed down longer than the suspension grace"
            }
            LostReason::NodeDeleted => "its node was deleted by someone else",
            LostReason::NodeNotOwned => "its node now belongs to another session",
            LostReason::Closed => "the lock client was closed",
            LostReason::LeaseExpired => "its maximum hold time passed",
        })
    }
}

/// The reason as a clause: "the acquisition failed: {reason}".
///
/// ```
/// use lock_core::FailReason;
/// let mismatch = FailReason::PermitsMismatch { ours: 2, theirs: 3 };
/// assert_eq!(
///     mismatch.to_string(),
///     "the semaphore has 3 permits, this acquisition asked for 2"
/// );
/// ```
impl std::fmt::Display for FailReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FailReason::Timeout => f.write_str("the deadline passed"),
            FailReason::Cancelled => f.write_str("it was cancelled"),
            FailReason::SessionExpired => {
                f.write_str("the ZooKeeper session expired while waiting")
            }
            FailReason::NodeDeleted => f.write_str("our waiting node was deleted by someone else"),
            FailReason::Closed => f.write_str("the lock client was closed"),
            FailReason::Zk(e) => write!(f, "ZooKeeper error: {e}"),
            FailReason::WouldBlock => f.write_str("the lock is busy"),
            FailReason::Revoked => f.write_str("it was revoked while waiting"),
            FailReason::PermitsMismatch { ours, theirs } => write!(
                f,
                "the semaphore has {theirs} permits, this acquisition asked for {ours}"
            ),
            FailReason::Deadlock { cycle } => write!(
                f,
                "it was chosen to break a deadlock (a cycle of {} waiting nodes)",
                cycle.len()
            ),
            FailReason::SelfDeadlock { path, owner, held } => write!(
                f,
                "owner \"{owner}\" already holds a {held} lock on {path} and would wait for itself"
            ),
        }
    }
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
    /// Someone asked the holder of a revocable lock to let go; it decides (usually
    /// by releasing).
    RevocationRequested,
    /// A critical section is open: marked in ZooKeeper until a clean release or
    /// [`close_section`](crate::Session::close_section).
    SectionOpened,
    /// The critical section was closed.
    SectionClosed,
    /// ZooKeeper refused a section call for good (e.g. an ACL on the lock directory);
    /// the section is as it was before the call.
    SectionFailed(ZkError),
    /// The outcome of a [`fenced_write`](crate::Session::fenced_write).
    FencedWrite {
        /// The id returned by `fenced_write`.
        write: u64,
        /// One result per write, or why nothing was written.
        result: Result<Vec<MultiResult>, FencedError>,
    },
    /// For an election observer: the leader changed (`None`: nobody leads).
    LeaderChanged {
        /// The new leader.
        leader: Option<Leader>,
        /// Participants seen in the election.
        participants: usize,
    },
    /// Terminal, for a [`revoke`](crate::Session::revoke): the revocation request was
    /// written to these nodes.
    RevocationSent {
        /// The nodes asked to let go.
        nodes: Vec<String>,
    },
    /// Terminal, for a [`break_node`](crate::Session::break_node): what became of
    /// the node.
    Broken {
        /// The node's full path.
        node: String,
        /// Whether our delete removed it.
        outcome: BreakOutcome,
    },
    /// Terminal, for an [`inspect`](crate::Session::inspect): the lock's holders and
    /// waiters.
    Participants(Participants),
    /// Terminal, for a [`deadlocks`](crate::Session::deadlocks) scan: one cycle of
    /// waits per deadlock found under the root (empty: none).
    Deadlocks {
        /// The cycles, each in wait order (every node waits for the next, the last
        /// for the first).
        cycles: Vec<Vec<CycleNode>>,
    },
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
            LockEvent::Lost(_)
                | LockEvent::Released
                | LockEvent::Failed(_)
                | LockEvent::RevocationSent { .. }
                | LockEvent::Broken { .. }
                | LockEvent::Participants(_)
                | LockEvent::Deadlocks { .. }
        )
    }
}

// Defined here, beside the `LockEvent::Broken` that carries it, rather than in
// break_lock.rs: the events are a leaf every task module imports, and a payload
// defined in a task module would make an import circle.
/// What a [`break_node`](crate::Session::break_node) did to the node.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum BreakOutcome {
    /// Our delete removed the node: its owner no longer holds (or waits).
    Deleted,
    /// The node was gone before our delete could reach it (released, its
    /// session ended, deleted by someone else), or the node of that name is
    /// another one (a different `czxid`): nothing was deleted.
    AlreadyGone,
    /// The node is gone, after a delete of ours whose answer was lost with the
    /// connection: our delete or its owner's end removed it.
    GoneUncertain,
}

impl std::fmt::Display for BreakOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BreakOutcome::Deleted => "deleted",
            BreakOutcome::AlreadyGone => "already gone",
            BreakOutcome::GoneUncertain => "gone (our delete or its owner's end)",
        })
    }
}

/// Misuse of the [`Session`](crate::Session) API or bad input. Nothing is lost: the
/// session is unchanged when a call returns one of these.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UsageError {
    /// The lock path is not a valid ZooKeeper path for a lock.
    #[error("invalid lock path \"{path}\": {reason}")]
    InvalidPath {
        /// The path given.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Participant data is larger than ZooKeeper accepts in one request beside the
    /// node's path ([`Config::max_packet`](crate::Config::max_packet)).
    #[error("data of {len} bytes exceeds the limit of {max} bytes for this path")]
    DataTooLarge {
        /// Size given.
        len: usize,
        /// The most this lock's node can hold.
        max: usize,
    },
    /// A request would exceed the servers' packet limit
    /// ([`Config::max_packet`](crate::Config::max_packet)); nothing was sent.
    #[error("a request of {len} bytes exceeds the server's limit of {max} bytes (jute.maxbuffer)")]
    RequestTooLarge {
        /// Encoded size of the request, with room for ACLs.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The owner already holds a node on this path that this acquisition would
    /// wait behind forever: a read lock upgraded to write, or a mutex re-entered.
    /// Release the held lock first (read locks cannot be upgraded, as in Curator).
    #[error("owner \"{owner}\" already holds a {held} lock on {path} that this acquisition would wait for forever")]
    SelfDeadlock {
        /// The lock path.
        path: String,
        /// The owner.
        owner: String,
        /// The kind of node the owner holds there.
        held: crate::NodeKind,
    },
    /// A multi-lock names the same lock path twice (two parts on one path would
    /// wait for each other, or take a second node for one owner).
    #[error("a multi-lock names {path} twice")]
    DuplicatePath {
        /// The path named twice.
        path: String,
    },
    /// A multi-lock needs at least one part.
    #[error("a multi-lock needs at least one lock")]
    EmptyMulti,
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
    /// The operation does not apply to this kind of handle or recipe.
    #[error("unsupported: {0}")]
    Unsupported(&'static str),
    /// The naming scheme has no layout for this recipe: go-zookeeper
    /// ([`NameScheme::Go`](crate::NameScheme::Go)) has only a mutex, and
    /// [`NameScheme::Other`](crate::NameScheme::Other) names no layout at all.
    /// Nothing was sent: a node the peer cannot read as what it is would mislead it.
    #[error("the {scheme:?} naming scheme has no layout for a {recipe} (it has: {has})")]
    NoLayout {
        /// The scheme asked for.
        scheme: crate::NameScheme,
        /// The recipe asked for: `read lock`, `write half of a read/write lock`,
        /// `semaphore` or `leader election`.
        recipe: &'static str,
        /// What the scheme does have.
        has: &'static str,
    },
}

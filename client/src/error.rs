//! [`Error`]: why a call of the user API failed, whatever the binding.

use lock_core::{CycleNode, FailReason, LostReason, NodeKind, UsageError, ZkError};

/// One deadlock: its nodes in wait order (each waits for the next, the last for
/// the first), as [`Error::Deadlock`] and
/// [`LockClient::deadlocks`](crate::LockClient::deadlocks) report them.
pub type Cycle = Vec<CycleNode>;

/// Why a lock operation failed.
///
/// ```
/// use zklock::Error;
/// let e = Error::from(lock_core::validate_lock_path("relative").unwrap_err());
/// assert!(e.is_invalid_path());
/// assert!(!Error::Timeout.is_invalid_path());
/// ```
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Bad input, refused before anything was sent: an invalid lock path, a
    /// semaphore of 0 permits, oversized participant data.
    #[error(transparent)]
    Usage(UsageError),
    /// The binding's first connection to ZooKeeper failed (its client's error,
    /// described).
    #[error("cannot connect to ZooKeeper: {0}")]
    Connect(String),
    /// The server refused the connection's credentials (an auth scheme it has no
    /// provider for, failed SASL): the session is closed. Digest credentials are
    /// never refused at connect; wrong ones get [`ZkError::NoAuth`] on nodes whose
    /// ACL they do not match ([`Error::is_auth`]).
    #[error("ZooKeeper refused the credentials: {0}")]
    AuthFailed(String),
    /// An invalid [`ConnectOptions`](crate::ConnectOptions) value, refused before
    /// connecting (which option, and why).
    #[error("invalid connection option: {0}")]
    BadOption(String),
    /// The binding's client library cannot do what the options ask (e.g. TLS on
    /// the blocking `zookeeper` crate); nothing was connected.
    #[error("not supported by this binding: {0}")]
    Unsupported(String),
    /// The binding found no async runtime to run on (lock-zookeeper-client: enable
    /// one of the features `tokio`, `async-std`, `smol`, and connect from inside a
    /// tokio runtime or pass it a runtime).
    #[error("no async runtime: enable a runtime feature (tokio, async-std, smol) or pass one")]
    NoRuntime,
    /// The deadline passed before the lock was acquired.
    #[error("timed out waiting for the lock")]
    Timeout,
    /// `try_lock` semantics: the lock was busy (only from
    /// [`LockClient::acquire`](crate::LockClient::acquire) with a try-only spec; the
    /// `try_lock` methods return `Ok(None)` instead).
    #[error("the lock is busy")]
    WouldBlock,
    /// The ZooKeeper session expired while waiting; a new session is opened
    /// automatically, so a retry may succeed.
    #[error("the ZooKeeper session expired")]
    SessionExpired,
    /// Our waiting node was deleted by someone else (an administrator).
    #[error("our lock node was deleted by someone else")]
    NodeDeleted,
    /// The acquisition was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// A revocable waiter was asked to give up its place.
    #[error("the acquisition was revoked")]
    Revoked,
    /// Deadlock detection ([`Mutex::detect_deadlocks`](crate::Mutex::detect_deadlocks))
    /// found this acquisition in a cycle of waits and chose it as the cycle's one
    /// victim (the youngest waiting zklock node in it): its node is gone, the other
    /// members keep their places and one of them proceeds. The owner still holds
    /// its other locks: release some (or all) and retry, ideally in a canonical order.
    #[error("deadlock: this acquisition was chosen to break a cycle of {} nodes", cycle.len())]
    Deadlock {
        /// The cycle, in wait order (each node waits for the next, the last for the
        /// first, which is ours).
        cycle: Cycle,
    },
    /// Refused at once, before anything was sent: the acquisition's
    /// [owner](crate::Mutex::owner) already holds a lock on `path` that it would
    /// wait for forever (re-entering a mutex that is not
    /// [reentrant](crate::Mutex::reentrant), upgrading a read lock to write).
    /// Release the held lock first. Also the outcome of a downgrade (the read half
    /// taken while holding the write half, see [`RwLock`](crate::RwLock)) that found
    /// another writer queued between its two nodes: that writer waits for the
    /// owner's write, and the read would wait for that writer (failed at the first
    /// listing, its node removed).
    #[error("owner {owner:?} already holds a {held} lock on {path} that this acquisition would wait for forever")]
    SelfDeadlock {
        /// The lock path.
        path: String,
        /// The owner.
        owner: String,
        /// The kind of node the owner holds there.
        held: NodeKind,
    },
    /// The acquisition ended for another reason the core reports.
    #[error("the acquisition failed: {0}")]
    Failed(FailReason),
    /// The lock was lost before it could be released (the protected work may have
    /// overlapped another holder's).
    #[error("the lock was lost: {0}")]
    Lost(LostReason),
    /// The client was closed (explicitly, or every handle was dropped).
    #[error("the lock client is closed")]
    Closed,
    /// The lock is suspended (the connection is down), so the operation was not
    /// sent. Wait for [`LockEvent::Resumed`](lock_core::LockEvent::Resumed) and try
    /// again.
    #[error("the lock is suspended")]
    Suspended,
    /// [`LockClient::break_lock`](crate::LockClient::break_lock) broke nothing:
    /// why (nobody holds, several hold, no such participant, not forced).
    #[error(transparent)]
    Break(crate::BreakError),
    /// ZooKeeper answered with an error the protocol cannot recover from.
    #[error("ZooKeeper error: {0}")]
    Zk(ZkError),
}

impl Error {
    /// Whether this acquisition was refused or failed because of a deadlock:
    /// [`Error::Deadlock`] (chosen as a cycle's victim) or [`Error::SelfDeadlock`]
    /// (its owner holds what it would wait for).
    pub fn is_deadlock(&self) -> bool {
        matches!(self, Error::Deadlock { .. } | Error::SelfDeadlock { .. })
    }

    /// Whether the server refused this client: credentials refused at connect
    /// ([`Error::AuthFailed`]) or an ACL that does not let it touch a node
    /// ([`ZkError::NoAuth`], also inside a failed acquisition).
    ///
    /// ```
    /// use zklock::{Error, ZkError};
    /// assert!(Error::Zk(ZkError::NoAuth).is_auth());
    /// assert!(!Error::Timeout.is_auth());
    /// ```
    pub fn is_auth(&self) -> bool {
        matches!(self, Error::AuthFailed(_) | Error::Zk(ZkError::NoAuth))
    }

    /// Whether this is an invalid lock path.
    pub fn is_invalid_path(&self) -> bool {
        matches!(self, Error::Usage(UsageError::InvalidPath { .. }))
    }
}

impl From<UsageError> for Error {
    fn from(e: UsageError) -> Self {
        match e {
            UsageError::Closed => Error::Closed,
            UsageError::SelfDeadlock { path, owner, held } => {
                Error::SelfDeadlock { path, owner, held }
            }
            other => Error::Usage(other),
        }
    }
}

impl From<FailReason> for Error {
    fn from(reason: FailReason) -> Self {
        match reason {
            FailReason::Timeout => Error::Timeout,
            FailReason::Cancelled => Error::Cancelled,
            FailReason::SessionExpired => Error::SessionExpired,
            FailReason::NodeDeleted => Error::NodeDeleted,
            FailReason::Closed => Error::Closed,
            FailReason::Zk(e) => Error::Zk(e),
            FailReason::WouldBlock => Error::WouldBlock,
            FailReason::Revoked => Error::Revoked,
            FailReason::Deadlock { cycle } => Error::Deadlock { cycle },
            FailReason::SelfDeadlock { path, owner, held } => {
                Error::SelfDeadlock { path, owner, held }
            }
            other => Error::Failed(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_core_reasons() {
        assert_eq!(Error::from(UsageError::Closed), Error::Closed);
        assert_eq!(Error::from(FailReason::Timeout), Error::Timeout);
        assert_eq!(
            Error::from(FailReason::Zk(ZkError::NoAuth)),
            Error::Zk(ZkError::NoAuth)
        );
        let e = Error::from(FailReason::Deadlock { cycle: vec![] });
        assert_eq!(e, Error::Deadlock { cycle: vec![] });
        assert!(e.is_deadlock());
        let e = Error::from(UsageError::SelfDeadlock {
            path: "/l".into(),
            owner: "o".into(),
            held: NodeKind::Read,
        });
        assert!(matches!(
            &e,
            Error::SelfDeadlock {
                held: NodeKind::Read,
                ..
            }
        ));
        assert!(e.is_deadlock() && !Error::Timeout.is_deadlock());
    }
}

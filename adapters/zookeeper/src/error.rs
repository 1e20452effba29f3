//! The binding's error type, and the mapping of the `zookeeper` crate's results onto
//! the core's vocabulary.

use lock_core::{FailReason, LostReason, UsageError, ZkError};

/// Why a lock operation failed.
///
/// The variants are the same as `lock-zookeeper-client`'s, so code can move between
/// the blocking and the async binding without relearning the failure model.
///
/// ```
/// use lock_zookeeper::Error;
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
    /// No session could be established within the
    /// [connect timeout](crate::Builder::connect_timeout), the connect string is
    /// malformed, or the session marker cannot be created.
    #[error("cannot connect to ZooKeeper: {0}")]
    Connect(String),
    /// The deadline passed before the lock was acquired. [`try_lock`] also reports
    /// this when ZooKeeper could not be reached within the session timeout.
    ///
    /// [`try_lock`]: crate::Mutex::try_lock
    #[error("timed out waiting for the lock")]
    Timeout,
    /// The lock was busy (only from [`LockClient::acquire`](crate::LockClient::acquire)
    /// with a try-only spec; the `try_lock` methods return `Ok(None)` instead).
    #[error("the lock is busy")]
    WouldBlock,
    /// The ZooKeeper session expired (or was replaced) while waiting; the client
    /// opens a new session by itself, so a retry may succeed.
    #[error("the ZooKeeper session expired")]
    SessionExpired,
    /// Our waiting node was deleted by someone else (an administrator).
    #[error("our lock node was deleted by someone else")]
    NodeDeleted,
    /// A [revocable](crate::Mutex::revocable) waiter was asked to give up its place
    /// ([`LockClient::revoke`](crate::LockClient::revoke)); its node is deleted.
    #[error("the acquisition was revoked")]
    Revoked,
    /// The acquisition was cancelled ([`PendingLock::cancel`](crate::PendingLock::cancel)).
    #[error("cancelled")]
    Cancelled,
    /// The lock was lost before it could be released (the protected work may have
    /// overlapped another holder's).
    #[error("the lock was lost: {0:?}")]
    Lost(LostReason),
    /// The client was closed (explicitly, or every handle was dropped).
    #[error("the lock client is closed")]
    Closed,
    /// ZooKeeper answered with an error the protocol cannot recover from (for
    /// example [`ZkError::NoAuth`] on a protected lock directory).
    #[error("ZooKeeper error: {0}")]
    Zk(ZkError),
}

impl Error {
    /// Whether this is an invalid lock path.
    ///
    /// ```
    /// # use lock_zookeeper::Error;
    /// assert!(!Error::Closed.is_invalid_path());
    /// ```
    pub fn is_invalid_path(&self) -> bool {
        matches!(self, Error::Usage(UsageError::InvalidPath { .. }))
    }
}

impl From<UsageError> for Error {
    fn from(e: UsageError) -> Self {
        match e {
            UsageError::Closed => Error::Closed,
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
            other => Error::Zk(ZkError::Other(format!("{other:?}"))),
        }
    }
}

/// The text of the error every `Op::Multi` gets: the `zookeeper` crate (0.8) has no
/// `multi` (and no way to send a raw request), so fenced writes and crash-detecting
/// sections cannot run on this binding.
pub const MULTI_UNSUPPORTED: &str = "multi unsupported by the zookeeper crate";

/// Maps a `zookeeper` crate error onto the core's.
pub(crate) fn zk_error(e: zookeeper::ZkError) -> ZkError {
    use zookeeper::ZkError as E;
    match e {
        E::NoNode => ZkError::NoNode,
        E::NodeExists => ZkError::NodeExists,
        E::NotEmpty => ZkError::NotEmpty,
        E::BadVersion => ZkError::BadVersion,
        E::NoChildrenForEphemerals => ZkError::NoChildrenForEphemerals,
        // The outcome is unknown: the request may or may not have been applied. The
        // crate also answers every call with ConnectionLoss once it is closed for good;
        // the driver learns that from the state listener and stops using the client.
        E::ConnectionLoss | E::SessionMoved => ZkError::ConnectionLoss,
        E::OperationTimeout => ZkError::OperationTimeout,
        E::SessionExpired => ZkError::SessionExpired,
        E::BadArguments => ZkError::BadArguments,
        E::NoAuth | E::AuthFailed => ZkError::NoAuth,
        other => ZkError::Other(format!("{other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_errors() {
        assert_eq!(zk_error(zookeeper::ZkError::NoNode), ZkError::NoNode);
        assert_eq!(
            zk_error(zookeeper::ZkError::SessionMoved),
            ZkError::ConnectionLoss
        );
        assert!(zk_error(zookeeper::ZkError::OperationTimeout).is_connection_loss());
        assert_eq!(zk_error(zookeeper::ZkError::AuthFailed), ZkError::NoAuth);
        assert!(matches!(
            zk_error(zookeeper::ZkError::Unimplemented),
            ZkError::Other(_)
        ));
        assert_eq!(Error::from(UsageError::Closed), Error::Closed);
        assert_eq!(Error::from(FailReason::Timeout), Error::Timeout);
        assert_eq!(
            Error::from(FailReason::Zk(ZkError::NoAuth)),
            Error::Zk(ZkError::NoAuth)
        );
    }
}

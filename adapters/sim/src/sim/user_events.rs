//! What the user sees, in the core's terms: the reason behind an error lock-client
//! returned, and the status a guard must show after the events it gave.

use lock_client::{Error, LockStatus};
use lock_core::{FailReason, LockEvent};

/// What a guard's status must be after `last`.
pub(crate) fn expected_status(last: &LockEvent) -> LockStatus {
    match last {
        LockEvent::Suspended => LockStatus::Suspended,
        LockEvent::Lost(reason) => LockStatus::Lost(reason.clone()),
        _ => LockStatus::Held,
    }
}

/// The core's reason behind a failed acquisition's error.
pub(crate) fn fail_reason(e: Error) -> FailReason {
    match e {
        Error::Timeout => FailReason::Timeout,
        Error::Cancelled => FailReason::Cancelled,
        Error::SessionExpired => FailReason::SessionExpired,
        Error::NodeDeleted => FailReason::NodeDeleted,
        Error::Zk(e) => FailReason::Zk(e),
        Error::WouldBlock => FailReason::WouldBlock,
        Error::Revoked => FailReason::Revoked,
        Error::Deadlock { cycle } => FailReason::Deadlock { cycle },
        Error::SelfDeadlock { path, owner, held } => FailReason::SelfDeadlock { path, owner, held },
        Error::Failed(reason) => reason,
        _ => FailReason::Closed,
    }
}

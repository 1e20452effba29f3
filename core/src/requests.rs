//! Request bookkeeping: which acquisition is waiting for which reply, and why.
//!
//! Ids are minted from a counter that never repeats, so a reply to a forgotten
//! request (sent before a disconnect, or superseded by a recovery) can never be
//! mistaken for a current one: it is simply not found, and counted as stale.

use crate::event::LockId;
use crate::proto::RequestId;
use std::collections::HashMap;

/// Why a request was sent; decides how its reply is handled.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) enum Purpose {
    /// A container for the lock directory or one of its ancestors.
    CreateParent,
    /// Our ephemeral sequential participant node.
    CreateNode,
    /// A listing of the lock directory.
    List,
    /// getData + watch on a lower participant we wait for.
    WatchPeer { name: String },
    /// getData on our own node (with a watch while waiting, or when a feature needs it):
    /// its stat (token, owner), revocation requests and deletion.
    OwnData,
    /// Delete our node (release, cancel, cleanup).
    DeleteOwn,
    /// Does the crash marker exist (a contended grant with crash detection)?
    MarkerCheck,
    /// Open (`open`) or close a critical section.
    Section { open: bool },
    /// A write fenced by a check on our node.
    FencedWrite { write: u64 },
    /// Drop the watch on our own node (held, and no feature needs it).
    RemoveOwnWatch,
    /// A read of a deadlock chase (a listing or a node's data).
    Chase,
    /// Publish where our owner waits, in our held node's header.
    Publish,
    /// Read one participant's data and stat for an inspection.
    Inspect,
    /// Delete a duplicate node of ours (a create that was retried after a connection loss).
    DeleteExtra { path: String },
}

#[derive(Default)]
pub(crate) struct RequestBook {
    next: u64,
    pending: HashMap<RequestId, (LockId, Purpose)>,
}

impl RequestBook {
    pub(crate) fn insert(&mut self, lock: LockId, purpose: Purpose) -> RequestId {
        self.next += 1;
        let id = RequestId(self.next);
        self.pending.insert(id, (lock, purpose));
        id
    }

    /// Takes the bookkeeping for a reply; `None` for unknown or forgotten ids.
    pub(crate) fn take(&mut self, id: RequestId) -> Option<(LockId, Purpose)> {
        self.pending.remove(&id)
    }

    /// Forgets every outstanding request (the connection dropped: replies to them,
    /// if any arrive, are stale).
    pub(crate) fn forget_all(&mut self) {
        self.pending.clear();
    }

    /// Forgets the outstanding requests of one acquisition.
    pub(crate) fn forget_lock(&mut self, lock: LockId) {
        self.pending.retain(|_, (l, _)| *l != lock);
    }

    pub(crate) fn len(&self) -> usize {
        self.pending.len()
    }
}

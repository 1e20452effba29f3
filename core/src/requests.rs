//! Request bookkeeping: which acquisition is waiting for which reply, and why.
//!
//! Ids are minted from a counter that never repeats, so a reply to a forgotten
//! request (sent before a disconnect, or superseded by a recovery) can never be
//! mistaken for a current one: it is simply not found, and counted as stale.

use crate::ids::LockId;
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
    /// Create (`take: false`) or take over (`take: true`) the lock-delay marker,
    /// checking our node in the same multi.
    DelayMarker { take: bool },
    /// Read the lock-delay marker: whose is it?
    DelayRead,
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
    /// Create our lease node in a peer's semaphore pool (see `acquisition::lease`).
    LeaseCreate,
    /// List a peer's semaphore pool, leaving a children watch.
    LeaseList,
    /// Read the permit count kazoo keeps in its semaphore pool's data.
    PoolData,
    /// Create kazoo's semaphore pool with our permit count.
    PoolCreate,
    /// Read or delete the node an operator breaks (see `break_lock`).
    Break,
}

#[derive(Default)]
pub(crate) struct RequestBook {
    next: u64,
    pending: HashMap<RequestId, (LockId, Purpose)>,
    /// Outstanding requests per acquisition (no entry: none), so that forgetting a
    /// finished acquisition, which usually has none left, costs O(1).
    per_lock: HashMap<LockId, usize>,
}

impl RequestBook {
    pub(crate) fn insert(&mut self, lock: LockId, purpose: Purpose) -> RequestId {
        let id = self.mint();
        self.pending.insert(id, (lock, purpose));
        *self.per_lock.entry(lock).or_default() += 1;
        id
    }

    /// A fresh id for a request of the session's own, which no task waits for.
    pub(crate) fn mint(&mut self) -> RequestId {
        self.next += 1;
        RequestId(self.next)
    }

    /// Takes the bookkeeping for a reply; `None` for unknown or forgotten ids.
    pub(crate) fn take(&mut self, id: RequestId) -> Option<(LockId, Purpose)> {
        let taken = self.pending.remove(&id)?;
        if let Some(count) = self.per_lock.get_mut(&taken.0) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.per_lock.remove(&taken.0);
            }
        }
        Some(taken)
    }

    /// Forgets every outstanding request (the connection dropped: replies to them,
    /// if any arrive, are stale).
    pub(crate) fn forget_all(&mut self) {
        self.pending.clear();
        self.per_lock.clear();
    }

    /// Forgets the outstanding requests of one acquisition: O(1) when it has none
    /// (the common case: a task ends on the reply to its last request), a scan of
    /// the pending requests otherwise.
    pub(crate) fn forget_lock(&mut self, lock: LockId) {
        if self.per_lock.remove(&lock).is_some() {
            self.pending.retain(|_, (l, _)| *l != lock);
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.pending.len()
    }

    /// Outstanding requests of one acquisition.
    #[cfg(test)]
    pub(crate) fn pending_of(&self, lock: LockId) -> usize {
        self.per_lock.get(&lock).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ctx::InFlight;
    use crate::proto::Op;

    #[test]
    fn in_flight_takes_only_the_reply_to_its_latest_request_until_forgotten() {
        let mut session = crate::ctx::tests::CtxParts::default();
        let lock = LockId(3);
        let list = || Op::GetChildren { path: "/l".into() };
        let mut in_flight = InFlight::default();
        assert!(!in_flight.is_pending());
        assert!(in_flight.send(&mut session.cx(), lock, Purpose::List, list()));
        assert!(in_flight.send(&mut session.cx(), lock, Purpose::List, list()));
        let sent: Vec<RequestId> = session.sent().iter().map(|r| r.id).collect();
        // Superseded: the first reply is not ours any more.
        assert!(!in_flight.take_reply(sent[0]));
        assert!(in_flight.take_reply(sent[1]));
        assert!(!in_flight.is_pending());
        // Taken once: a duplicate is not ours.
        assert!(!in_flight.take_reply(sent[1]));
        assert!(in_flight.send(&mut session.cx(), lock, Purpose::List, list()));
        let sent = session.sent();
        assert!(in_flight.forget());
        assert!(!in_flight.forget());
        assert!(!in_flight.take_reply(sent[0].id), "forgotten: not ours");
        let mut cx = session.cx();
        cx.connected = false;
        assert!(!in_flight.send(&mut cx, lock, Purpose::List, list()));
        assert!(!in_flight.is_pending());
        assert!(session.sent().is_empty());
    }

    #[test]
    fn the_book_counts_each_locks_requests_and_forgets_only_its_own() {
        let mut book = RequestBook::default();
        let (a, b) = (LockId(1), LockId(2));
        let a1 = book.insert(a, Purpose::CreateNode);
        let a2 = book.insert(a, Purpose::List);
        let b1 = book.insert(b, Purpose::CreateNode);
        assert_eq!((book.pending_of(a), book.pending_of(b)), (2, 1));
        assert!(book.take(a1).is_some());
        // A reply to a taken request is stale and changes nothing.
        assert_eq!(book.take(a1), None);
        assert_eq!(book.pending_of(a), 1);
        book.forget_lock(a);
        assert_eq!((book.take(a2), book.pending_of(a)), (None, 0));
        assert_eq!(book.take(b1), Some((b, Purpose::CreateNode)));
        assert_eq!(book.pending_of(b), 0);
        // Nothing outstanding: forgetting is a no-op, and later ids still work.
        book.forget_lock(a);
        let a3 = book.insert(a, Purpose::DeleteOwn);
        book.forget_all();
        assert_eq!((book.len(), book.pending_of(a)), (0, 0));
        assert_eq!(book.take(a3), None);
        let a4 = book.insert(a, Purpose::DeleteOwn);
        assert_eq!(book.take(a4), Some((a, Purpose::DeleteOwn)));
    }
}

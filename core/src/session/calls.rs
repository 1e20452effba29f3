//! Calls on a running task: release, abandon, cancel, critical sections and
//! fenced writes.

use super::task::Task;
use super::Session;
use crate::acquisition::{Acquisition, State};
use crate::ctx::Ctx;
use crate::event::{FailReason, UsageError};
use crate::ids::LockId;
use crate::oneshot::OneShot;
use crate::proto::MultiOp;
use crate::time::Timestamp;

impl Session {
    /// Releases a held lock: deletes its node (retrying across reconnects) and reports
    /// [`LockEvent::Released`](crate::LockEvent::Released), or [`LockEvent::Lost`](crate::LockEvent::Lost) with
    /// [`NodeDeleted`](crate::LostReason::NodeDeleted) if someone else had deleted the
    /// node (found by the first delete; after a delete whose outcome was unknown, a
    /// missing node counts as released). A lock that is not held gives [`UsageError::NotHeld`]
    /// (use [`cancel`](Self::cancel) to give up waiting).
    pub fn release(&mut self, id: LockId, now: Timestamp) -> Result<(), UsageError> {
        self.let_go(id, now, Acquisition::release)
    }

    /// Lets go of a held lock without closing its open critical section (a guard
    /// dropped inside a section, as by a holder that crashed there): its node is
    /// deleted and the acquisition ends with [`LockEvent::Released`](crate::LockEvent::Released), but the
    /// section marker stays, so the next holder sees
    /// [`Grant::previous_holder_crashed`](crate::Grant::previous_holder_crashed).
    /// Without an open section this is [`release`](Self::release).
    pub fn abandon(&mut self, id: LockId, now: Timestamp) -> Result<(), UsageError> {
        self.let_go(id, now, Acquisition::abandon)
    }

    /// Lets go of the held acquisition `id` the way `how` does.
    fn let_go(
        &mut self,
        id: LockId,
        now: Timestamp,
        how: fn(&mut Acquisition, &mut Ctx),
    ) -> Result<(), UsageError> {
        match self
            .tasks
            .get(&id)
            .map(|t| t.acquisition().map(Acquisition::state))
        {
            None => Err(UsageError::UnknownLock(id)),
            Some(Some(State::Held)) => self.with_acquisition(id, now, |a, cx| {
                how(a, cx);
                Ok(())
            }),
            Some(_) => Err(UsageError::NotHeld(id)),
        }
    }

    /// Gives up: a waiting acquisition fails with [`FailReason::Cancelled`] and its
    /// node (even one whose create is still in flight) is removed in the background;
    /// a held one is released; an observer or revocation stops. Cancelling an ended
    /// one is a no-op.
    pub fn cancel(&mut self, id: LockId, now: Timestamp) -> Result<(), UsageError> {
        if !self.tasks.contains_key(&id) {
            return Err(UsageError::UnknownLock(id));
        }
        self.with_task(id, now, |t, cx| match t {
            Task::Acquisition(a) => match a.state() {
                State::Held => a.release(cx),
                State::Waiting | State::Granting => a.fail(cx, FailReason::Cancelled),
                _ => {}
            },
            Task::Observer(o) => o.stop(cx, FailReason::Cancelled),
            Task::Revoke(r) => r.stop(cx, FailReason::Cancelled),
            Task::Break(b) => b.stop(cx, FailReason::Cancelled),
            Task::Inspect(i) => i.stop(cx, FailReason::Cancelled),
            Task::Scan(s) => s.stop(cx, FailReason::Cancelled),
        });
        Ok(())
    }

    /// Looks at a waiting acquisition's queue again (one `getChildren`), so that
    /// its place ([`Progress::Queued`](crate::Progress::Queued)) is reported
    /// anew if it changed: between its own looks a waiter watches only the
    /// participants right ahead of it, and does not see others leave. A no-op
    /// unless the acquisition waits with its node on a connected session and
    /// no listing of its queue is in flight (so calling it often costs at most
    /// one request per round trip).
    pub fn look_again(&mut self, id: LockId, now: Timestamp) -> Result<(), UsageError> {
        self.with_acquisition(id, now, |a, cx| {
            a.look_again(cx);
            Ok(())
        })
    }

    /// Opens a critical section on a held lock with crash detection: a marker
    /// (fenced by our node) tells the next holder if we die before a clean
    /// [`release`](Self::release) or [`close_section`](Self::close_section).
    /// Reports [`LockEvent::SectionOpened`](crate::LockEvent::SectionOpened).
    pub fn open_section(&mut self, id: LockId, now: Timestamp) -> Result<(), UsageError> {
        self.with_acquisition(id, now, |a, cx| a.open_section(cx))
    }

    /// Closes the critical section; reports [`LockEvent::SectionClosed`](crate::LockEvent::SectionClosed).
    pub fn close_section(&mut self, id: LockId, now: Timestamp) -> Result<(), UsageError> {
        self.with_acquisition(id, now, |a, cx| a.close_section(cx))
    }

    /// Applies `ops` in one `multi` with a `check` on our lock node, so they apply
    /// only while we hold the lock. The outcome comes as [`LockEvent::FencedWrite`](crate::LockEvent::FencedWrite)
    /// with the returned id. Refused with [`UsageError::NotHeld`] unless held and
    /// connected.
    pub fn fenced_write(
        &mut self,
        id: LockId,
        ops: Vec<MultiOp>,
        now: Timestamp,
    ) -> Result<u64, UsageError> {
        let write = self.next_write + 1;
        self.with_acquisition(id, now, |a, cx| a.fenced_write(cx, write, ops))?;
        self.next_write = write;
        Ok(write)
    }
}

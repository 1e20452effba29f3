//! The end of an acquisition: its one terminal event, then the cleanup of
//! whatever node of ours remains.

use super::{Acquisition, Create, State};
use crate::ctx::Ctx;
use crate::event::{FailReason, LockEvent};

impl Acquisition {
    /// The acquisition ends for the user without holding.
    pub(crate) fn fail(&mut self, cx: &mut Ctx, reason: FailReason) {
        self.terminal(cx, LockEvent::Failed(reason));
    }

    /// Emits the terminal event, then removes whatever node remains.
    pub(super) fn terminal(&mut self, cx: &mut Ctx, event: LockEvent) {
        debug_assert!(event.is_terminal());
        if matches!(self.state, State::Cleanup | State::Done) {
            return;
        }
        self.holder.abandon_writes(cx, self.id, &event);
        self.detection.stop(cx, self.id);
        cx.emit(self.id, event);
        cx.timers.cancel_lock(self.id);
        self.state = State::Cleanup;
        self.queue.clear();
        self.suspended = false;
        self.lease_terminal(cx);
        self.continue_cleanup(cx);
    }

    /// Cleanup: delete our node (or find it first if a create's outcome is unknown),
    /// and duplicates; done when nothing of ours can remain.
    pub(super) fn continue_cleanup(&mut self, cx: &mut Ctx) {
        if self.node.own.is_some() {
            if !self.node.delete.is_pending() {
                self.send_delete(cx);
            }
            return;
        }
        match self.node.create {
            Create::InFlight(_) => return, // its reply decides
            Create::Unknown => {
                if !self.queue.list.is_pending() {
                    self.send_list(cx);
                }
                return;
            }
            Create::NotSent | Create::Done => {}
        }
        if !self.lease_cleanup_settled(cx) {
            return;
        }
        if self.node.extra.is_empty() {
            self.state = State::Done;
        }
    }
}

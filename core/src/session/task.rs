//! [`Task`]: one unit of work on the session (an acquisition, an observer, a
//! revocation, an inspection, a deadlock scan).

use crate::acquisition::{Acquisition, State};
use crate::break_lock::BreakNode;
use crate::ctx::Ctx;
use crate::deadlock::scan::Scan;
use crate::inspect::Inspect;
use crate::observer::Observer;
use crate::oneshot::OneShot;
use crate::revoke::Revoke;

/// One unit of work on the session, addressed by a [`LockId`].
///
/// [`LockId`]: crate::LockId
// Boxed, every one: the task map holds one `Task` per held or waiting lock,
// and an unboxed variant would size every entry to the largest.
pub(super) enum Task {
    Acquisition(Box<Acquisition>),
    Observer(Box<Observer>),
    Revoke(Box<Revoke>),
    Break(Box<BreakNode>),
    Inspect(Box<Inspect>),
    Scan(Box<Scan>),
}

impl Task {
    pub(super) fn is_done(&self) -> bool {
        match self {
            Task::Acquisition(a) => a.state() == State::Done,
            Task::Observer(o) => o.run.done,
            Task::Revoke(r) => r.run.done,
            Task::Break(b) => b.run.done,
            Task::Inspect(i) => i.run.done,
            Task::Scan(s) => s.run.done,
        }
    }

    pub(super) fn recover(&mut self, cx: &mut Ctx) {
        match self {
            Task::Acquisition(a) => a.recover(cx),
            Task::Observer(o) => o.recover(cx),
            Task::Revoke(r) => r.recover(cx),
            Task::Break(b) => b.recover(cx),
            Task::Inspect(i) => i.recover(cx),
            Task::Scan(s) => s.recover(cx),
        }
    }

    pub(super) fn acquisition(&self) -> Option<&Acquisition> {
        match self {
            Task::Acquisition(a) => Some(a),
            _ => None,
        }
    }
}

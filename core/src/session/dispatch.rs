//! Running tasks: each gets a [`Ctx`] over the session's parts, and a task that is
//! done is dropped with its timers, requests and watches.

use super::task::Task;
use super::{Conn, Session};
use crate::acquisition::{Acquisition, State};
use crate::ctx::Ctx;
use crate::event::UsageError;
use crate::ids::LockId;
use crate::time::Timestamp;
use std::collections::BTreeMap;

impl Session {
    pub(super) fn with_acquisition(
        &mut self,
        id: LockId,
        now: Timestamp,
        f: impl FnOnce(&mut Acquisition, &mut Ctx) -> Result<(), UsageError>,
    ) -> Result<(), UsageError> {
        let mut out = Err(UsageError::UnknownLock(id));
        self.with_task(id, now, |t, cx| {
            out = match t {
                Task::Acquisition(a) => f(a, cx),
                _ => Err(UsageError::Unsupported("not a lock acquisition")),
            }
        });
        out
    }

    pub(super) fn ctx_parts(&mut self, now: Timestamp) -> (Ctx<'_>, &mut BTreeMap<LockId, Task>) {
        let (connected, session_id) = match self.conn {
            Conn::Connected(id) => (true, Some(id)),
            Conn::Disconnected(id) => (false, Some(id)),
            _ => (false, None),
        };
        let cx = Ctx {
            now,
            connected,
            session_id,
            config: &self.config,
            requests: &mut self.requests,
            out: &mut self.out,
            timers: &mut self.timers,
            stats: &mut self.stats,
            watches: &mut self.watches,
            contact: &mut self.contact,
        };
        (cx, &mut self.tasks)
    }

    pub(super) fn with_task(
        &mut self,
        id: LockId,
        now: Timestamp,
        f: impl FnOnce(&mut Task, &mut Ctx),
    ) {
        self.with_task_inner(id, now, f);
        self.sync_publications(now);
        self.arm_sync();
    }

    pub(super) fn with_task_inner(
        &mut self,
        id: LockId,
        now: Timestamp,
        f: impl FnOnce(&mut Task, &mut Ctx),
    ) {
        let (mut cx, tasks) = self.ctx_parts(now);
        if let Some(t) = tasks.get_mut(&id) {
            f(t, &mut cx);
            settle(&mut cx, tasks, id);
        }
    }

    /// Files the new task `task` under `id` and starts it if connected.
    pub(super) fn start(&mut self, id: LockId, task: Task, now: Timestamp) {
        self.tasks.insert(id, task);
        self.with_task(id, now, |t, cx| {
            if cx.connected {
                t.recover(cx);
            }
        });
    }

    pub(super) fn for_each_task(&mut self, now: Timestamp, mut f: impl FnMut(&mut Task, &mut Ctx)) {
        let (mut cx, tasks) = self.ctx_parts(now);
        let ids: Vec<LockId> = tasks.keys().copied().collect();
        for id in ids {
            if let Some(t) = tasks.get_mut(&id) {
                f(t, &mut cx);
                settle(&mut cx, tasks, id);
            }
        }
        self.sync_publications(now);
        self.arm_sync();
    }
}

/// After a call on the task `id`: whether the session must prove contact for
/// it, and if it is done, the task dropped with its timers, requests and watches.
fn settle(cx: &mut Ctx, tasks: &mut BTreeMap<LockId, Task>, id: LockId) {
    let Some(t) = tasks.get(&id) else {
        return;
    };
    cx.contact.set_wanted(id, wants_proof(t));
    cx.contact.set_awaiting(id, awaits_contact(t));
    let unwatched = cx.config.sync_interval.is_some()
        && matches!(t, Task::Acquisition(a) if a.is_unwatched_hold());
    cx.contact.set_unwatched(id, unwatched);
    if t.is_done() {
        tasks.remove(&id);
        cx.timers.cancel_lock(id);
        cx.requests.forget_lock(id);
        cx.watches.forget_lock(id);
    }
}

/// Whether a renewed proof of contact moves `task` on: what
/// `Acquisition::on_contact_renewed` acts on (a grant waiting for it, a
/// suspended hold).
fn awaits_contact(task: &Task) -> bool {
    matches!(task, Task::Acquisition(a)
        if a.state() == State::Granting || (a.state() == State::Held && a.is_suspended()))
}

/// Whether the session keeps proving contact for `task` (see `Contact::wanted`
/// and the module docs of [`crate::contact`], "Cost").
fn wants_proof(task: &Task) -> bool {
    matches!(task, Task::Acquisition(a)
        if matches!(a.state(), State::Held | State::Granting) || a.is_next_in_line())
}

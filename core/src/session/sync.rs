//! The session's own timers: the `sync` that proves the leader hears us, and the
//! suspension of held locks when no newer proof comes (see [`crate::contact`]).

use super::task::Task;
use super::{Session, SESSION_TIMERS};
use crate::output::Output;
use crate::proto::{Op, Request};
use crate::time::Timestamp;
use crate::timers::TimerKind;

impl Session {
    /// A reply, for what it proves of the leader's contact (see [`crate::contact`]).
    pub(super) fn on_contact_reply<T>(
        &mut self,
        request: crate::proto::RequestId,
        result: &Result<T, crate::proto::ZkError>,
        now: Timestamp,
    ) {
        if self.config.sync_interval.is_none() {
            return;
        }
        if self.contact.on_reply(&self.config, request, result, now) {
            self.arm_contact();
            if self.contact.is_fresh(&self.config, now) {
                // Only the tasks a renewed proof moves on (in lock order, as a
                // walk over every task would call them): the rest would do
                // nothing, and a session holding 10,000 locks renews contact
                // with nearly every reply.
                for id in self.contact.awaiting() {
                    self.with_task_inner(id, now, |t, cx| {
                        if let Task::Acquisition(a) = t {
                            a.on_contact_renewed(cx);
                        }
                    });
                }
                self.sync_publications(now);
            }
        }
        self.arm_sync();
    }

    /// The binding learned `role` of the server the session is connected to, from
    /// a probe it sent after the connection was established (see
    /// [`Session::learn_server`]).
    pub(super) fn on_server_learned(&mut self, role: crate::contact::ServerRole, now: Timestamp) {
        if self.is_connected() {
            self.contact.on_server_learned(role, now);
        }
    }

    /// Arms the session's next `sync` unless it is armed already (a timer that
    /// fires early finds out and arms again: sends only ever make it later).
    pub(super) fn arm_sync(&mut self) {
        if self.timers.is_armed(SESSION_TIMERS, TimerKind::Sync) || !self.is_connected() {
            return;
        }
        if let Some(at) = self.contact.next_sync(&self.config) {
            self.timers.set(SESSION_TIMERS, TimerKind::Sync, at);
        }
    }

    /// Arms the suspension of held locks for want of a newer proof of contact.
    pub(super) fn arm_contact(&mut self) {
        match self.contact.suspend_at(&self.config) {
            Some(at) => self.timers.set(SESSION_TIMERS, TimerKind::Contact, at),
            None => self.timers.cancel(SESSION_TIMERS, TimerKind::Contact),
        }
    }

    /// The sync timer fired: a `sync` goes out if one is due, else the timer is
    /// armed for when one will be.
    fn on_sync_timer(&mut self, now: Timestamp) {
        match self.contact.next_sync(&self.config) {
            Some(at) if at <= now => {
                let id = self.requests.mint();
                let op = Op::Sync { path: "/".into() };
                self.contact.on_sync_sent(&self.config, id, &op, now);
                self.stats.requests += 1;
                self.out.push_back(Output::Request(Request { id, op }));
            }
            Some(at) => self.timers.set(SESSION_TIMERS, TimerKind::Sync, at),
            None => {}
        }
    }

    pub(super) fn on_session_timer(&mut self, kind: TimerKind, now: Timestamp) {
        match kind {
            TimerKind::Sync if self.is_connected() => {
                self.on_sync_timer(now);
                // A hold that outlived a sync interval watches its node (once).
                if let Some(interval) = self.config.sync_interval {
                    self.for_each_task(now, |t, cx| {
                        if let Task::Acquisition(a) = t {
                            a.on_sync_timer(cx, interval);
                        }
                    });
                }
            }
            TimerKind::Contact => {
                // No newer proof came in time: held locks are no longer trusted
                // (locks granted from now on are suspended as they are granted).
                if let Some(lost_at) = self.contact.trusted_until(&self.config) {
                    self.for_each_task(now, |t, cx| {
                        if let Task::Acquisition(a) = t {
                            a.suspend(cx, lost_at);
                        }
                    });
                }
            }
            _ => {}
        }
    }
}

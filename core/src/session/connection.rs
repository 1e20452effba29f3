//! Session changes: connected (a new session id means the old one is gone),
//! disconnected (held locks suspended, lost before the server could expire the
//! session), expired, abandoned, closed.

use super::task::Task;
use super::{Conn, Session, SESSION_TIMERS};
use crate::acquisition::Ended;
use crate::event::FailReason;
use crate::oneshot::OneShot;
use crate::proto::SessionEvent;
use crate::time::Timestamp;
use crate::timers::TimerKind;

impl Session {
    pub(super) fn on_session(&mut self, event: SessionEvent, now: Timestamp) {
        match (event, self.conn) {
            (_, Conn::Closed) => {}
            (
                SessionEvent::Connected { session_id },
                Conn::Connected(old) | Conn::Disconnected(old),
            ) if old != session_id => {
                // A different session: the old one is gone for us, though perhaps
                // not yet on the server: its nodes are deleted from this one.
                self.end_session(now, Ended::Abandoned);
                self.on_connected(session_id, now);
            }
            (SessionEvent::Connected { session_id }, _) => self.on_connected(session_id, now),
            (SessionEvent::Disconnected { since_contact }, Conn::Connected(id)) => {
                self.conn = Conn::Disconnected(id);
                self.requests.forget_all();
                self.contact.forget_connection();
                self.timers.cancel(SESSION_TIMERS, TimerKind::Sync);
                self.timers.cancel_kind(TimerKind::Retry);
                // Held locks are lost before the server could expire the session:
                // counted from the last contact, not from this report, and from
                // the last contact proven to have reached the leader if known.
                let reported = now + self.config.lost_window(since_contact);
                let lost_at = self
                    .contact
                    .trusted_until(&self.config)
                    .map_or(reported, |until| until.min(reported));
                self.for_each_task(now, |t, cx| {
                    if let Task::Acquisition(a) = t {
                        a.on_disconnected(cx, lost_at)
                    }
                });
            }
            (SessionEvent::Disconnected { .. }, _) => {}
            (SessionEvent::Expired, _) => self.end_session(now, Ended::Expired),
            (SessionEvent::Abandoned, _) => self.end_session(now, Ended::Abandoned),
            (SessionEvent::Closed, _) => {
                self.end_session(now, Ended::Closed);
                self.conn = Conn::Closed;
            }
        }
    }

    fn on_connected(&mut self, session_id: i64, now: Timestamp) {
        self.conn = Conn::Connected(session_id);
        self.contact.on_connected(now);
        self.timers.cancel(SESSION_TIMERS, TimerKind::Sync);
        if self.config.sync_interval.is_some() {
            self.arm_contact();
            self.arm_sync();
        }
        self.for_each_task(now, |t, cx| t.recover(cx));
    }

    fn end_session(&mut self, now: Timestamp, how: Ended) {
        let closed = how == Ended::Closed;
        self.requests.forget_all();
        self.contact.on_session_ended();
        self.timers.cancel(SESSION_TIMERS, TimerKind::Sync);
        self.timers.cancel(SESSION_TIMERS, TimerKind::Contact);
        self.timers.cancel_kind(TimerKind::Retry);
        self.timers.cancel_kind(TimerKind::Grace);
        // Events for the old session's locks carry its id; then there is none.
        // Nothing is sent meanwhile: deletions wait for the next session.
        if let Conn::Connected(id) = self.conn {
            self.conn = Conn::Disconnected(id);
        }
        self.for_each_task(now, |t, cx| match t {
            Task::Acquisition(a) => a.on_session_ended(cx, how),
            // Observers and revocations own no node: they go on with the next session.
            Task::Observer(o) if closed => o.stop(cx, FailReason::Closed),
            Task::Revoke(r) if closed => r.stop(cx, FailReason::Closed),
            Task::Inspect(i) if closed => i.stop(cx, FailReason::Closed),
            Task::Scan(s) if closed => s.stop(cx, FailReason::Closed),
            _ => {}
        });
        self.conn = Conn::NoSession;
    }
}

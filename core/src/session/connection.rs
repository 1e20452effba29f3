//! Session changes: connected (a new session id means the old one is gone),
//! disconnected (held locks suspended, lost before the server could expire the
//! session), expired, abandoned, closed.

use super::task::Task;
use super::{Conn, Session, SESSION_TIMERS};
use crate::acquisition::Ended;
use crate::event::FailReason;
use crate::oneshot::OneShot;
use crate::proto::SessionEvent;
use crate::spec::Config;
use crate::time::Timestamp;
use crate::timers::TimerKind;

impl Session {
    /// Replaces the session's settings: for a binding whose client learns the
    /// session timeout the server granted only once connected (servers fit the one
    /// asked for into their `minSessionTimeout..=maxSessionTimeout`, and a new
    /// session after an expiry may be granted another). Feed it before the
    /// `Connected` of the session it is for, so that every lock of that session is
    /// timed by it (suspension grace, expiry margin, proof of contact).
    ///
    /// Keeps every task and the attempt-id generator (`config.seed` is not used
    /// again), and the times already decided: a suspended lock keeps the time it is
    /// lost at (the session those times were decided for keeps its timeout). While
    /// connected, the session's own timers (the next `sync`, the suspension for want
    /// of contact) are armed again by the new settings.
    ///
    /// ```
    /// use lock_core::{Config, Session};
    /// use std::time::Duration;
    /// let mut s = Session::new(Config::new(Duration::from_secs(20), 7));
    /// // The server granted 4 s.
    /// s.reconfigure(Config::new(Duration::from_secs(4), 7));
    /// assert_eq!(s.config().session_timeout, Duration::from_secs(4));
    /// ```
    pub fn reconfigure(&mut self, config: Config) {
        self.config = config;
        // The holds the sync timer looks at are kept only with a sync interval.
        let sync = self.config.sync_interval.is_some();
        for (id, t) in &self.tasks {
            let unwatched = sync && matches!(t, Task::Acquisition(a) if a.is_unwatched_hold());
            self.contact.set_unwatched(*id, unwatched);
        }
        if self.is_connected() {
            self.timers.cancel(SESSION_TIMERS, TimerKind::Sync);
            // Without a sync interval neither arms (the contact timer goes).
            self.arm_contact();
            self.arm_sync();
        }
    }

    /// The session's settings (as made, or as last [reconfigured](Self::reconfigure)).
    pub fn config(&self) -> &Config {
        &self.config
    }

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
        self.arm_contact();
        self.arm_sync();
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
            Task::Break(b) if closed => b.stop(cx, FailReason::Closed),
            Task::Inspect(i) if closed => i.stop(cx, FailReason::Closed),
            Task::Scan(s) if closed => s.stop(cx, FailReason::Closed),
            _ => {}
        });
        self.conn = Conn::NoSession;
    }
}

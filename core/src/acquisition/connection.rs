//! Connection and session changes: recovering after a reconnect (or a pause after
//! trouble), suspending a held lock, resuming it, and the end of the session.

use super::release::delete_op;
use super::{Acquisition, Create, Ended, State};
use crate::ctx::Ctx;
use crate::event::{FailReason, LockEvent, LostReason};
use crate::proto::ZkError;
use crate::requests::Purpose;
use crate::time::Timestamp;
use crate::timers::TimerKind;

impl Acquisition {
    /// Starts (or restarts after a reconnect) whatever the state needs. Every
    /// request of the previous connection is forgotten by then.
    pub(crate) fn recover(&mut self, cx: &mut Ctx) {
        cx.requests.forget_lock(self.id);
        cx.timers.cancel(self.id, TimerKind::Retry);
        self.forget_requests();
        for path in self.node.extra.clone() {
            cx.send(
                self.id,
                Purpose::DeleteExtra { path: path.clone() },
                delete_op(&path),
            );
        }
        match self.state {
            State::Waiting => match self.node.create {
                Create::NotSent => self.send_create(cx),
                // Find our node by attempt id (adopt it), or create again.
                Create::Unknown | Create::Done | Create::InFlight(_) => self.send_list(cx),
            },
            // Is our node still ours? (Watched from here on.)
            State::Granting | State::Held => self.send_own_read(cx),
            State::Releasing => self.send_delete(cx),
            State::Cleanup => self.continue_cleanup(cx),
            State::Done => {}
        }
    }

    /// Every part forgets what it had in flight (the connection dropped, or a
    /// recovery starts over): each keeps what outlives a connection.
    fn forget_requests(&mut self) {
        self.node.forget();
        self.queue.forget();
        self.holder.forget();
        self.delay.forget();
        self.detection.forget();
        self.lease_forget();
    }

    /// A request failed without the connection being declared down (or with an
    /// error worth retrying): start over from the state after a pause.
    pub(super) fn trouble(&mut self, cx: &mut Ctx, _error: ZkError) {
        cx.stats.retries += 1;
        cx.timers
            .set(self.id, TimerKind::Retry, cx.now + cx.config.retry_interval);
    }

    /// The connection dropped: outstanding requests are forgotten by the session.
    /// A held lock is suspended, and lost at `lost_at` unless the connection comes
    /// back first.
    pub(crate) fn on_disconnected(&mut self, cx: &mut Ctx, lost_at: Timestamp) {
        cx.timers.cancel(self.id, TimerKind::Retry);
        self.forget_requests();
        self.holder.writes_unknown(cx, self.id);
        self.suspend(cx, lost_at);
    }

    /// A held lock is no longer trusted: suspended, and lost at `lost_at` unless
    /// it is resumed first (the connection comes back, or the leader is proven to
    /// hear us again).
    pub(crate) fn suspend(&mut self, cx: &mut Ctx, lost_at: Timestamp) {
        if self.state == State::Held && !self.suspended {
            self.suspended = true;
            cx.emit(self.id, LockEvent::Suspended);
            if lost_at <= cx.now {
                // The server may already have expired the session.
                self.terminal(cx, LockEvent::Lost(LostReason::SuspendedTooLong));
            } else {
                cx.timers.set(self.id, TimerKind::Grace, lost_at);
            }
        }
    }

    /// The leader was proven to hear us again: a lock suspended for want of that
    /// proof (the connection up) checks that its node is still ours, then resumes;
    /// a grant that waited for it goes on.
    pub(crate) fn on_contact_renewed(&mut self, cx: &mut Ctx) {
        if !cx.connected {
            return;
        }
        match self.state {
            State::Held if self.suspended && !self.node.own_read.is_pending() => {
                self.send_own_read(cx);
            }
            State::Granting => {
                self.state = State::Waiting;
                self.grant(cx);
            }
            _ => {}
        }
    }

    /// The session is gone (expired, abandoned or closed). After an expiry so are
    /// our nodes; after an abandonment they may live on, so the paths are kept
    /// and cleanup deletes them from the next session (a create whose outcome is
    /// unknown is looked for by attempt id).
    pub(crate) fn on_session_ended(&mut self, cx: &mut Ctx, how: Ended) {
        let closed = how == Ended::Closed;
        self.lease_session_ended(how != Ended::Abandoned);
        if how == Ended::Abandoned {
            if let Create::InFlight(_) = self.node.create {
                self.node.create = Create::Unknown;
            }
        } else {
            self.node.own = None;
            self.node.extra.clear();
            if self.node.create != Create::NotSent {
                self.node.create = Create::Done;
            }
        }
        match self.state {
            State::Waiting | State::Granting => {
                if self.node.create == Create::NotSent && !closed {
                    // Never reached the old session: it will start on the next one
                    // (unless the client is closed: then it fails like the others).
                    return;
                }
                let reason = if closed {
                    FailReason::Closed
                } else {
                    FailReason::SessionExpired
                };
                self.fail(cx, reason)
            }
            State::Held => {
                let reason = if closed {
                    LostReason::Closed
                } else {
                    LostReason::SessionExpired
                };
                self.terminal(cx, LockEvent::Lost(reason))
            }
            State::Releasing => self.terminal(cx, LockEvent::Released),
            State::Cleanup => self.continue_cleanup(cx),
            State::Done => {}
        }
        if closed && self.state != State::Done {
            // A closed client can send nothing more; what it had dies with the session.
            self.state = State::Done;
        }
    }
}

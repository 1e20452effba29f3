//! The grant: holding once our node's token (its stat) and, with crash detection,
//! the previous holder's section marker are known.

use super::{ours, Acquisition, Create, Ours, State};
use crate::ctx::Ctx;
use crate::event::{Grant, LockEvent};
use crate::ids::FencingToken;
use crate::timers::TimerKind;

impl Acquisition {
    pub(super) fn grant(&mut self, cx: &mut Ctx) {
        if !cx.connected {
            // A late notification while the connection is down: a grant now could not
            // be trusted (no `Suspended` would follow). The listing after the
            // reconnect decides again.
            return;
        }
        if self.lease_pending() {
            // What the walk won is the internal mutex of a peer's semaphore: the
            // lease comes next.
            self.state = State::Waiting;
            return self.lease_start(cx);
        }
        let own = self.node.own.as_ref().expect("granted without a node");
        let stat = own.stat;
        let crashed = self.holder.previous_crashed(&self.spec);
        let (Some(stat), Some(crashed)) = (stat, crashed) else {
            self.state = State::Granting;
            // The client library gave no stat on create: a getData on our own node
            // brings the token.
            if stat.is_none()
                && !self.node.own_read.is_pending()
                && !matches!(self.node.create, Create::InFlight(_))
            {
                self.send_own_read(cx);
            }
            // We waited: whether the previous holder closed its section is unknown.
            if crashed.is_none() {
                self.holder.check_marker(cx, ours!(self));
            }
            return;
        };
        if !self.delay.may_grant(cx, ours!(self)) {
            // Lock-delay: our marker is being made, or another holder's says it
            // ended uncleanly and the delay runs (see `delay`).
            self.state = State::Granting;
            return;
        }
        if cx.distrusted().is_some() {
            // Nothing proves the leader heard the session lately (an idle session
            // sends no `sync`): granted once a `sync` proves it
            // (`on_contact_renewed`), never reported held on a session that may
            // be expiring. Being granted makes the session prove contact at once.
            self.state = State::Granting;
            return;
        }
        let own = self.node.own.as_ref().expect("granted without a node");
        let grant = Grant {
            path: own.path.clone(),
            token: FencingToken(stat.czxid),
            sequence: own.seq,
            session_id: cx.session_id.unwrap_or_default(),
            previous_holder_crashed: crashed,
        };
        self.state = State::Held;
        self.holder.granted(cx.now);
        self.detection.stop(cx, self.id);
        cx.timers.cancel(self.id, TimerKind::Deadline);
        if let Some(max_hold) = self.spec.max_hold {
            cx.timers.set(self.id, TimerKind::Lease, cx.now + max_hold);
        }
        cx.stats.acquired += 1;
        cx.emit(self.id, LockEvent::Acquired(grant));
    }
}

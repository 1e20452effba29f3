//! Our own node: reading its stat and data (with a watch when needed), revocation
//! requests found there, and its loss.

use super::{Acquisition, State};
use crate::ctx::Ctx;
use crate::event::{FailReason, LockEvent, LostReason};
use crate::proto::{Op, Reply, ZkError};
use crate::requests::Purpose;
use crate::timers::TimerKind;

/// Data a holder finds in its own node when someone asks it to let go: Curator's
/// revocation marker and the ZooKeeper recipe's `unlock`.
const REVOKE_MARKERS: [&[u8]; 2] = [crate::revoke::REVOKE, b"unlock"];

impl Acquisition {
    /// Reads our own node (its stat, its data) and leaves a watch on it.
    ///
    /// Every read of our node watches it: the watch costs no request of its own,
    /// and it is how a holder hears at once that its node was deleted under it
    /// (an operator's `break`, an administrator). It is kept once held (no
    /// `RemoveWatch`: our own release's delete fires it, one notification we
    /// ignore, cheaper than a request).
    pub(super) fn send_own_read(&mut self, cx: &mut Ctx) {
        let Some(own) = &self.node.own else { return };
        let op = Op::GetData {
            path: own.path.clone(),
            watch: true,
        };
        let sent = self.node.own_read.send(cx, self.id, Purpose::OwnData, op);
        self.node.own_watched |= sent;
    }

    /// Reads our node if something is missing: its stat (a client that returns none
    /// with `create`, or a node adopted from a listing), or a watch the spec needs.
    pub(super) fn ensure_own_read(&mut self, cx: &mut Ctx) {
        let watch = self.spec.watches_node();
        let stat_known = self.node.own.as_ref().is_some_and(|o| o.stat.is_some());
        if !self.node.own_read.is_pending() && ((watch && !self.node.own_watched) || !stat_known) {
            self.send_own_read(cx);
        }
    }

    /// The session's sync timer fired (about once a sync interval while a lock is
    /// held, whether a `sync` went out or the session's other requests made one
    /// unnecessary): a holder that has held for `interval` and whose node is not
    /// watched yet (an uncontended grant on a client that gave the stat with
    /// `create`) watches it now. So a hold hears of its node's deletion at once
    /// from at most two intervals after its grant, at one read per hold that
    /// long; a shorter hold costs nothing and learns of it at its release or its
    /// next fenced write.
    pub(crate) fn on_sync_timer(&mut self, cx: &mut Ctx, interval: std::time::Duration) {
        let held_long = self.holder.held_for(cx.now, interval);
        if self.state == State::Held
            && held_long
            && !self.suspended
            && !self.node.own_watched
            && !self.node.own_read.is_pending()
        {
            self.send_own_read(cx);
        }
    }

    pub(super) fn on_own_data(&mut self, cx: &mut Ctx, result: Result<Reply, ZkError>) {
        match result {
            Ok(Reply::Data { data, stat }) => {
                if Some(stat.ephemeral_owner) != cx.session_id {
                    return self.own_gone(cx, LostReason::NodeNotOwned);
                }
                if let Some(own) = &mut self.node.own {
                    own.stat.get_or_insert(stat);
                }
                self.detection.node_read(&self.spec, &data, &stat);
                match self.state {
                    State::Granting => {
                        self.state = State::Waiting;
                        self.grant(cx);
                    }
                    // Resumed only once the leader is proven to hear us again.
                    State::Held if self.suspended && cx.distrusted().is_none() => {
                        self.suspended = false;
                        cx.timers.cancel(self.id, TimerKind::Grace);
                        cx.emit(self.id, LockEvent::Resumed);
                    }
                    _ => {}
                }
                self.resend_section(cx);
                let revoke = self.spec.revocable && REVOKE_MARKERS.contains(&data.as_slice());
                if revoke {
                    match self.state {
                        State::Held if !self.node.revocation_seen => {
                            self.node.revocation_seen = true;
                            cx.emit(self.id, LockEvent::RevocationRequested);
                        }
                        State::Waiting | State::Granting => self.fail(cx, FailReason::Revoked),
                        _ => {}
                    }
                }
            }
            // Not our node's data: read it again later (a grant may be waiting on it).
            Ok(_) => self.trouble(cx, ZkError::Other("unexpected reply".into())),
            Err(ZkError::NoNode) => self.own_gone(cx, LostReason::NodeDeleted),
            Err(e) if e.is_connection_loss() => self.trouble(cx, e),
            Err(e) => {
                self.node.own_watched = false;
                if matches!(self.state, State::Waiting | State::Granting) {
                    self.fail(cx, FailReason::Zk(e));
                }
            }
        }
    }

    /// Our node is gone (or not ours) while we still counted on it.
    pub(super) fn own_gone(&mut self, cx: &mut Ctx, reason: LostReason) {
        self.node.own_read.forget();
        self.node.own_watched = false;
        match self.state {
            State::Waiting | State::Granting => {
                self.node.own = None;
                self.fail(cx, FailReason::NodeDeleted)
            }
            State::Held => {
                self.node.own = None;
                self.terminal(cx, LockEvent::Lost(reason));
            }
            // Our own delete's watch firing: its reply, right behind, ends the release.
            State::Releasing if self.node.delete.is_pending() => {}
            State::Releasing => {
                self.node.own = None;
                self.terminal(cx, LockEvent::Released);
            }
            State::Cleanup | State::Done => {}
        }
    }
}

//! Our own node: reading its stat and data (with a watch when needed), revocation
//! requests found there, and its loss.

use super::{Acquisition, State};
use crate::ctx::Ctx;
use crate::event::{FailReason, LockEvent, LostReason};
use crate::proto::{Op, Reply, WatchType, ZkError};
use crate::requests::Purpose;
use crate::timers::TimerKind;

/// Data a holder finds in its own node when someone asks it to let go: Curator's
/// revocation marker and the ZooKeeper recipe's `unlock`.
const REVOKE_MARKERS: [&[u8]; 2] = [crate::revoke::REVOKE, b"unlock"];

impl Acquisition {
    /// Reads our own node (its stat, its data), leaving a watch on it if `watch`.
    pub(super) fn send_own_read(&mut self, cx: &mut Ctx, watch: bool) {
        let Some(own) = &self.node.own else { return };
        let op = Op::GetData {
            path: own.path.clone(),
            watch,
        };
        let sent = self.node.own_read.send(cx, self.id, Purpose::OwnData, op);
        self.node.own_watched |= watch && sent;
    }

    /// Reads our node if something is missing: its stat (a client that returns none
    /// with `create`, or a node adopted from a listing), or a watch the spec needs.
    pub(super) fn ensure_own_read(&mut self, cx: &mut Ctx) {
        let watch = self.spec.watches_node();
        let stat_known = self.node.own.as_ref().is_some_and(|o| o.stat.is_some());
        if !self.node.own_read.is_pending() && ((watch && !self.node.own_watched) || !stat_known) {
            self.send_own_read(cx, watch);
        }
    }

    /// Held and the watch on our node is no longer needed (it was set while we
    /// waited): drop it, so our own release does not notify us.
    pub(super) fn drop_own_watch(&mut self, cx: &mut Ctx) {
        if !self.node.own_watched || self.spec.watches_node() {
            return;
        }
        let Some(own) = &self.node.own else { return };
        // Another task of this session may watch our node too (the one queued
        // behind us): the server's watch is then still needed, for it.
        if cx.watches.remove(self.id, &own.path) {
            let op = Op::RemoveWatch {
                path: own.path.clone(),
                watch: WatchType::Data,
            };
            cx.send(self.id, Purpose::RemoveOwnWatch, op);
        }
        self.node.own_watched = false;
        // A read still in flight answers for a node we no longer need news of.
        self.node.own_read.forget();
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
                if self.spec.detect_after.is_some() || self.spec.owner.is_some() {
                    self.detection.publication.observe(
                        &data,
                        &stat,
                        self.spec.scheme,
                        self.spec.owner.as_deref(),
                    );
                }
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

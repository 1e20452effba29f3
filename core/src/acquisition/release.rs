//! Releasing: deleting our node (with the section marker in one multi on a clean
//! release), and the duplicates of it a retried create left.

use super::{Acquisition, State};
use crate::ctx::Ctx;
use crate::event::{FailReason, LockEvent, LostReason};
use crate::proto::{Op, Reply, ZkError};
use crate::requests::Purpose;
use crate::timers::TimerKind;

impl Acquisition {
    /// The user releases a held lock.
    pub(crate) fn release(&mut self, cx: &mut Ctx) {
        self.state = State::Releasing;
        cx.timers.cancel(self.id, TimerKind::Grace);
        self.send_delete(cx);
    }

    /// The user lets go inside an open section: release, leaving the marker.
    pub(crate) fn abandon(&mut self, cx: &mut Ctx) {
        self.holder.abandoned = true;
        self.release(cx);
    }

    pub(super) fn send_delete(&mut self, cx: &mut Ctx) {
        let Some(own) = &self.node.own else { return };
        // A section maybe opened (its reply lost) is closed too: if the marker is not
        // there, the multi fails on it and the node is deleted alone.
        let section = self.holder.section_open || self.holder.section_wanted == Some(true);
        let op = if section && self.state == State::Releasing && !self.holder.abandoned {
            // A clean release closes the section in the same transaction.
            Op::Multi(vec![
                crate::proto::MultiOp::Delete {
                    path: self.marker_path(),
                    version: None,
                },
                crate::proto::MultiOp::Delete {
                    path: own.path.clone(),
                    version: None,
                },
            ])
        } else {
            delete_op(&own.path)
        };
        self.node.delete.send(cx, self.id, Purpose::DeleteOwn, op);
    }

    pub(super) fn on_delete(&mut self, cx: &mut Ctx, result: Result<Reply, ZkError>) {
        if let Err(ZkError::MultiFailed { index, error }) = &result {
            if **error == ZkError::NoNode && *index == 0 {
                // Our section marker is already gone: delete the node alone.
                self.holder.section_open = false;
                self.holder.section_wanted = None;
                return self.send_delete(cx);
            }
        }
        let result = match result {
            Err(ZkError::MultiFailed { error, .. }) => Err(*error),
            other => other,
        };
        match result {
            Err(ZkError::NoNode)
                if self.state == State::Releasing && !self.node.delete_maybe_applied =>
            {
                // Deleted by someone else while we believed we held it (a plain lock
                // does not watch its node): what the lock protected may have
                // overlapped another holder, and the release says so.
                self.node.own = None;
                self.terminal(cx, LockEvent::Lost(LostReason::NodeDeleted));
            }
            Ok(_) | Err(ZkError::NoNode) => {
                self.node.own = None;
                match self.state {
                    State::Releasing => self.terminal(cx, LockEvent::Released),
                    State::Cleanup => self.continue_cleanup(cx),
                    _ => {}
                }
            }
            Err(e) if e.is_connection_loss() => {
                self.node.delete_maybe_applied = true;
                self.trouble(cx, e)
            }
            Err(e) => match self.state {
                State::Releasing => self.terminal(cx, LockEvent::Failed(FailReason::Zk(e))),
                _ => self.trouble(cx, e),
            },
        }
    }

    /// Deletes a duplicate node of ours (once; recovery sends it again if needed).
    pub(super) fn delete_extra(&mut self, cx: &mut Ctx, path: String) {
        if !self.node.extra.contains(&path) {
            cx.send(
                self.id,
                Purpose::DeleteExtra { path: path.clone() },
                delete_op(&path),
            );
            self.node.extra.push(path);
        }
    }
}

pub(super) fn delete_op(path: &str) -> Op {
    Op::Delete {
        path: path.to_owned(),
        version: None,
    }
}

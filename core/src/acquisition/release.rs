//! Releasing: deleting our node (with the section and lock-delay markers in one
//! multi on a clean release), and the duplicates of it a retried create left.

use super::{delay, holder, Acquisition, State};
use crate::ctx::Ctx;
use crate::event::{FailReason, LockEvent, LostReason};
use crate::proto::{MultiOp, Op, Reply, ZkError};
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
        self.holder.abandon();
        self.release(cx);
    }

    pub(super) fn send_delete(&mut self, cx: &mut Ctx) {
        let Some(own) = &self.node.own else { return };
        let markers = self.release_markers();
        let op = if markers.is_empty() {
            delete_op(&own.path)
        } else {
            // A clean release closes the section and gives up the lock-delay
            // marker in the same transaction as our node's delete.
            let mut ops: Vec<_> = markers
                .iter()
                .map(|marker| MultiOp::Delete {
                    path: self.release_marker_path(*marker),
                    version: None,
                })
                .collect();
            ops.push(MultiOp::Delete {
                path: own.path.clone(),
                version: None,
            });
            Op::Multi(ops)
        };
        self.node.delete.send(cx, self.id, Purpose::DeleteOwn, op);
    }

    /// The markers a clean release deletes with our node, in the multi's order.
    /// Only a clean release (not an abandonment, not the cleanup after a loss or
    /// failure) deletes them: a marker left behind is how the next holder learns
    /// of an unclean end.
    fn release_markers(&self) -> Vec<ReleaseMarker> {
        let mut markers = Vec::new();
        if self.state != State::Releasing || self.holder.is_abandoned() {
            return markers;
        }
        // A section maybe opened (its reply lost) is closed too: if the marker is
        // not there, the multi fails on it and goes again without it.
        if self.holder.release_closes_section() {
            markers.push(ReleaseMarker::Section);
        }
        if self.delay.marker_ours {
            markers.push(ReleaseMarker::Delay);
        }
        markers
    }

    fn release_marker_path(&self, marker: ReleaseMarker) -> String {
        match marker {
            ReleaseMarker::Section => holder::marker_path(&self.spec.path),
            ReleaseMarker::Delay => delay::marker_path(&self.spec.path),
        }
    }

    pub(super) fn on_delete(&mut self, cx: &mut Ctx, result: Result<Reply, ZkError>) {
        if let Err(ZkError::MultiFailed { index, error }) = &result {
            let markers = self.release_markers();
            if **error == ZkError::NoNode && (*index as usize) < markers.len() {
                // That marker is already gone: delete the rest without it.
                match markers[*index as usize] {
                    ReleaseMarker::Section => self.holder.section_gone(),
                    ReleaseMarker::Delay => self.delay.marker_ours = false,
                }
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

/// A marker a clean release deletes in the multi with our node.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ReleaseMarker {
    /// The crash-detection section marker (an open section closed by the release).
    Section,
    /// Our lock-delay marker.
    Delay,
}

//! Breaking a lock: an operator deletes one participant's node (a wedged
//! holder's, whose session lives) without its owner's release.
//!
//! [`Session::break_node`](crate::Session::break_node) deletes exactly the node
//! that was inspected, never another one of the same name: it reads the node
//! first and deletes only if its `czxid` is the token the caller saw, with the
//! data version it read (a holder that writes its node meanwhile, e.g. deadlock
//! detection publishing or a revocation marker arriving, makes it read again).
//! Two round trips; nothing is watched. It ends with one
//! [`LockEvent::Broken`] saying what became of the node ([`BreakOutcome`]).
//!
//! It deletes nothing but that node: the lock directory's other children (a
//! crash or lock-delay marker the holder left) stay, so the next holder sees
//! the end as unclean.
//!
//! Failures follow the [`OneShot`] policy: a request whose outcome is unknown
//! is asked again once connected. A delete that may have been applied before
//! the connection dropped makes a later "no such node" uncertain
//! ([`BreakOutcome::GoneUncertain`]).

use crate::ctx::Ctx;
use crate::event::LockEvent;
use crate::ids::{FencingToken, LockId};
use crate::oneshot::{unexpected_reply, OneShot};
use crate::proto::{Op, Reply, RequestId, ZkError};
use crate::requests::Purpose;

/// What a [`break_node`](crate::Session::break_node) did to the node.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum BreakOutcome {
    /// Our delete removed the node: its owner no longer holds (or waits).
    Deleted,
    /// The node was gone before our delete could reach it (released, its
    /// session ended, deleted by someone else), or the node of that name is
    /// another one (a different `czxid`): nothing was deleted.
    AlreadyGone,
    /// The node is gone, after a delete of ours whose answer was lost with the
    /// connection: our delete or its owner's end removed it.
    GoneUncertain,
}

impl std::fmt::Display for BreakOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BreakOutcome::Deleted => "deleted",
            BreakOutcome::AlreadyGone => "already gone",
            BreakOutcome::GoneUncertain => "gone (our delete or its owner's end)",
        })
    }
}

/// The task: read the node, check its token, delete it at the version read.
pub(crate) struct BreakNode {
    id: LockId,
    /// The participant node's full path.
    node: String,
    /// The `czxid` of the node the caller inspected.
    token: FencingToken,
    /// The read in flight.
    read: Option<RequestId>,
    /// The delete in flight.
    delete: Option<RequestId>,
    /// A delete of ours may have been applied (its answer was lost).
    delete_maybe_applied: bool,
    pub(crate) done: bool,
    /// A failed request is to be asked again: not finished before it is.
    retry_due: bool,
}

impl BreakNode {
    pub(crate) fn new(id: LockId, node: String, token: FencingToken) -> Self {
        BreakNode {
            id,
            node,
            token,
            read: None,
            delete: None,
            delete_maybe_applied: false,
            done: false,
            retry_due: false,
        }
    }

    fn send_read(&mut self, cx: &mut Ctx) {
        let op = Op::GetData {
            path: self.node.clone(),
            watch: false,
        };
        self.read = cx.send(self.id, Purpose::Break, op);
    }

    /// The node is gone: ours or not, said once.
    fn gone(&mut self, cx: &mut Ctx) {
        let outcome = if self.delete_maybe_applied {
            BreakOutcome::GoneUncertain
        } else {
            BreakOutcome::AlreadyGone
        };
        self.finish(cx, outcome);
    }

    fn finish(&mut self, cx: &mut Ctx, outcome: BreakOutcome) {
        if !self.done {
            self.done = true;
            let node = self.node.clone();
            cx.emit(self.id, LockEvent::Broken { node, outcome });
        }
    }

    pub(crate) fn on_reply(
        &mut self,
        cx: &mut Ctx,
        request: RequestId,
        result: Result<Reply, ZkError>,
    ) {
        if self.done {
            return;
        }
        if self.read == Some(request) {
            self.read = None;
            match result {
                Ok(Reply::Data { stat, .. }) if FencingToken(stat.czxid) == self.token => {
                    let op = Op::Delete {
                        path: self.node.clone(),
                        version: Some(stat.version),
                    };
                    self.delete = cx.send(self.id, Purpose::Break, op);
                }
                // Another node of that name: the one inspected is gone.
                Ok(Reply::Data { .. }) | Err(ZkError::NoNode) => self.gone(cx),
                Ok(_) => self.trouble(cx, unexpected_reply()),
                Err(e) => self.trouble(cx, e),
            }
        } else if self.delete == Some(request) {
            self.delete = None;
            match result {
                Ok(Reply::Deleted) => self.finish(cx, BreakOutcome::Deleted),
                Err(ZkError::NoNode) => self.gone(cx),
                // Written since our read (its holder publishing, a revocation
                // request): read again, the token still decides.
                Err(ZkError::BadVersion) => self.send_read(cx),
                Ok(_) => self.trouble(cx, unexpected_reply()),
                Err(e) => {
                    if e.is_connection_loss() {
                        self.delete_maybe_applied = true;
                    }
                    self.trouble(cx, e)
                }
            }
        }
    }
}

impl OneShot for BreakNode {
    fn id_and_done(&mut self) -> (LockId, &mut bool) {
        (self.id, &mut self.done)
    }

    fn retry_due(&mut self) -> &mut bool {
        &mut self.retry_due
    }

    fn restart(&mut self, cx: &mut Ctx) {
        // A delete still in flight when the connection dropped may have been
        // applied: its reply is forgotten with the connection.
        if self.delete.take().is_some() {
            self.delete_maybe_applied = true;
        }
        cx.requests.forget_lock(self.id);
        self.send_read(cx);
    }
}

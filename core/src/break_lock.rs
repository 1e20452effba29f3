//! Breaking a lock ([`Session::break_node`](crate::Session::break_node)): read
//! the node, check its token, delete it at the data version read (a holder that
//! writes its node meanwhile, e.g. deadlock detection publishing or a revocation
//! marker arriving, makes it read again). It deletes nothing but that node: a
//! crash or lock-delay marker the holder left stays, so the next holder sees the
//! end as unclean.
//!
//! With a record (see [`BREAK_RECORD`]), the delete goes in one `multi` with the
//! record's create (or, when it exists from an earlier break, its `setData`): a
//! break that happens is recorded, and a record says only what happened. A
//! record that turns out to exist (or to be gone) costs one more round trip.
//!
//! Failures follow the [`OneShot`] policy. A delete that may have been applied
//! before the connection dropped makes a later "no such node" uncertain
//! ([`BreakOutcome::GoneUncertain`]).

use crate::ctx::{Ctx, InFlight};
use crate::event::{BreakOutcome, LockEvent};
use crate::ids::{FencingToken, LockId};
use crate::names::BREAK_RECORD;
use crate::oneshot::{OneShot, OneShotRun};
use crate::path::split_parent;
use crate::proto::{MultiOp, Op, Reply, RequestId, ZkError};
use crate::requests::Purpose;

/// What a break records about itself (see [`Session::break_node`](crate::Session::break_node)).
#[derive(Clone, Copy, Debug)]
pub struct BreakRecord<'a> {
    /// The session that owns the node being broken (from the inspection).
    pub session: i64,
    /// Who breaks it (e.g. `user@host`), if known.
    pub by: Option<&'a str>,
}

/// The task: read the node, check its token, delete it at the version read.
pub(crate) struct BreakNode {
    pub(crate) run: OneShotRun,
    /// The participant node's full path.
    node: String,
    /// The `czxid` of the node the caller inspected.
    token: FencingToken,
    /// The read in flight.
    read: InFlight,
    /// The delete in flight.
    delete: InFlight,
    /// A delete of ours may have been applied (its answer was lost).
    delete_maybe_applied: bool,
    /// The record to leave beside the delete (its data), if any.
    record: Option<Vec<u8>>,
    /// Whether the record node exists (from an earlier break): set, not created.
    record_exists: bool,
    /// The node's data version our read found (what the delete expects).
    version: i32,
}

impl BreakNode {
    pub(crate) fn new(
        id: LockId,
        node: String,
        token: FencingToken,
        record: Option<Vec<u8>>,
    ) -> Self {
        BreakNode {
            run: OneShotRun::new(id),
            node,
            token,
            read: InFlight::default(),
            delete: InFlight::default(),
            delete_maybe_applied: false,
            record,
            record_exists: false,
            version: 0,
        }
    }

    fn send_read(&mut self, cx: &mut Ctx) {
        let op = Op::read(self.node.clone());
        self.read.send(cx, self.run.id, Purpose::Break, op);
    }

    /// Deletes the node at `version`, in one `multi` with the record if there is
    /// one.
    fn send_delete(&mut self, cx: &mut Ctx, version: i32) {
        self.version = version;
        let delete = Op::Delete {
            path: self.node.clone(),
            version: Some(version),
        };
        let op = match &self.record {
            None => delete,
            Some(data) => {
                let (dir, _) = split_parent(&self.node);
                let path = format!("{dir}/{BREAK_RECORD}");
                let record = MultiOp::put_persistent(path, data.clone(), self.record_exists);
                Op::Multi(vec![
                    MultiOp::Delete {
                        path: self.node.clone(),
                        version: Some(version),
                    },
                    record,
                ])
            }
        };
        self.delete.send(cx, self.run.id, Purpose::Break, op);
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
        if !self.run.done {
            self.run.done = true;
            let node = self.node.clone();
            cx.emit(self.run.id, LockEvent::Broken { node, outcome });
        }
    }

    pub(crate) fn on_reply(
        &mut self,
        cx: &mut Ctx,
        request: RequestId,
        result: Result<Reply, ZkError>,
    ) {
        if self.run.done {
            return;
        }
        if self.read.take_reply(request) {
            match result {
                Ok(Reply::Data { stat, .. }) if FencingToken(stat.czxid) == self.token => {
                    self.send_delete(cx, stat.version)
                }
                // Another node of that name: the one inspected is gone.
                Ok(Reply::Data { .. }) | Err(ZkError::NoNode) => self.gone(cx),
                Ok(_) => self.trouble(cx, ZkError::unexpected_reply()),
                Err(e) => self.trouble(cx, e),
            }
        } else if self.delete.take_reply(request) {
            // A failed `multi` names its first failing op: 0 is the delete, 1
            // the record (created while it exists, or set while it is gone:
            // nothing was applied, so the delete goes again with the other).
            let result = match result {
                Err(ZkError::MultiFailed { index: 1, error }) => {
                    match *error {
                        ZkError::NodeExists if !self.record_exists => self.record_exists = true,
                        ZkError::NoNode if self.record_exists => self.record_exists = false,
                        e => return self.trouble(cx, e),
                    }
                    return self.send_delete(cx, self.version);
                }
                Err(ZkError::MultiFailed { index: 0, error }) => Err(*error),
                // A binding whose client library has no `multi` refuses it
                // before sending (`Unimplemented`): the delete goes alone, and
                // the break is not recorded.
                Err(ZkError::Unimplemented | ZkError::Other(_)) if self.record.is_some() => {
                    self.record = None;
                    return self.send_delete(cx, self.version);
                }
                Ok(Reply::Multi(_)) => Ok(Reply::Deleted),
                other => other,
            };
            match result {
                Ok(Reply::Deleted) => self.finish(cx, BreakOutcome::Deleted),
                Err(ZkError::NoNode) => self.gone(cx),
                // Written since our read (its holder publishing, a revocation
                // request): read again, the token still decides.
                Err(ZkError::BadVersion) => self.send_read(cx),
                Ok(_) => self.trouble(cx, ZkError::unexpected_reply()),
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
    fn run(&mut self) -> &mut OneShotRun {
        &mut self.run
    }

    fn restart(&mut self, cx: &mut Ctx) {
        // A delete still in flight when the connection dropped may have been
        // applied: its reply is forgotten with the connection.
        if self.delete.forget() {
            self.delete_maybe_applied = true;
        }
        self.send_read(cx);
    }
}

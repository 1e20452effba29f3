//! Our lease node's create: Curator's sequential node (with the pool's containers
//! first when missing), kazoo's fixed `<pool>/<hex32>`.

use super::{Create, Layout, Lease, LeaseVerdict};
use crate::acquisition::node::OwnNode;
use crate::ctx::Ctx;
use crate::event::FailReason;
use crate::names::parse_sequence;
use crate::output::Progress;
use crate::proto::{CreateMode, Op, Reply, ZkError};
use crate::requests::Purpose;

impl Lease {
    pub(super) fn send_create(&mut self, cx: &mut Ctx, id: crate::ids::LockId) {
        let mode = match self.layout {
            Layout::Curator => CreateMode::EphemeralSequential,
            Layout::Kazoo => CreateMode::Ephemeral,
        };
        let op = Op::Create {
            path: self.create_path.clone(),
            data: self.data.clone(),
            mode,
        };
        if let Some(r) = cx.send(id, Purpose::LeaseCreate, op) {
            self.create = Create::InFlight(r);
        }
    }

    /// Curator: the lease directory is missing: its containers, then our lease
    /// node and a listing, in one burst.
    fn send_parents_then_create(&mut self, cx: &mut Ctx, id: crate::ids::LockId) {
        cx.send_containers(id, &self.pool, true);
        self.send_create(cx, id);
        self.send_list(cx, id);
    }

    /// The reply to our lease node's create. In cleanup, a node it made is spare.
    pub(super) fn on_create(
        &mut self,
        cx: &mut Ctx,
        id: crate::ids::LockId,
        result: Result<Reply, ZkError>,
        cleanup: bool,
        parent_tries: &mut u32,
        max_parent_tries: u32,
    ) -> LeaseVerdict {
        match result {
            Ok(Reply::Created { path, stat }) => {
                let seq = match self.layout {
                    Layout::Curator => path
                        .strip_prefix(self.create_path.as_str())
                        .and_then(parse_sequence),
                    Layout::Kazoo => (path == self.create_path).then_some(0),
                };
                self.create = Create::Done;
                let Some(seq) = seq else {
                    // Not the node we asked for: never adopt it. Identity, if made, is
                    // found by its attempt id like after a lost reply.
                    self.create = Create::Unknown;
                    return LeaseVerdict::Fail(FailReason::Zk(ZkError::Other(format!(
                        "unexpected created path {path:?}"
                    ))));
                };
                if cleanup {
                    self.spare.push(path);
                    return LeaseVerdict::Pending;
                }
                cx.progress(id, Progress::Created { node: path.clone() });
                let stat = stat.map(Into::into);
                self.node = Some(OwnNode {
                    path: path.into(),
                    seq,
                    stat,
                });
                match self.layout {
                    // Made while the pool had room: ours.
                    Layout::Kazoo => LeaseVerdict::Hold,
                    // The listing right behind decides.
                    Layout::Curator => {
                        if std::mem::take(&mut self.relist_after_create) && !self.list.is_pending()
                        {
                            self.send_list(cx, id);
                        }
                        LeaseVerdict::Pending
                    }
                }
            }
            Ok(_) => {
                self.create = Create::Unknown;
                LeaseVerdict::Fail(FailReason::Zk(ZkError::unexpected_reply()))
            }
            // kazoo: a create of ours whose reply was lost made it: it is ours.
            Err(ZkError::NodeExists) if self.layout == Layout::Kazoo => {
                self.create = Create::Done;
                if cleanup {
                    self.spare.push(self.create_path.clone());
                    return LeaseVerdict::Pending;
                }
                self.node = Some(OwnNode::unread(self.create_path.as_str(), 0));
                LeaseVerdict::Hold
            }
            Err(ZkError::NoNode) => {
                self.create = Create::NotSent;
                if cleanup {
                    self.create = Create::Done;
                    return LeaseVerdict::Pending;
                }
                *parent_tries += 1;
                if *parent_tries > max_parent_tries {
                    return LeaseVerdict::Fail(FailReason::Zk(ZkError::NoNode));
                }
                match self.layout {
                    Layout::Curator => self.send_parents_then_create(cx, id),
                    // The pool went (deleted by hand): check it again.
                    Layout::Kazoo => {
                        self.pool_checked = false;
                        self.send_pool_read(cx, id);
                    }
                }
                LeaseVerdict::Pending
            }
            Err(e) if e.is_connection_loss() => {
                self.create = Create::Unknown;
                LeaseVerdict::Trouble(e)
            }
            Err(e) => {
                self.create = if cleanup {
                    Create::Done
                } else {
                    Create::NotSent
                };
                LeaseVerdict::Fail(FailReason::Zk(e))
            }
        }
    }
}

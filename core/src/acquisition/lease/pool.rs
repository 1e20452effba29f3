//! kazoo's pool node: the permit count it stores as its data, read and checked
//! before the first listing, and the pool created with our count when missing.

use super::{Lease, LeaseVerdict};
use crate::ctx::Ctx;
use crate::event::FailReason;
use crate::proto::{CreateMode, Op, Reply, ZkError};
use crate::requests::Purpose;

impl Lease {
    pub(super) fn send_pool_read(&mut self, cx: &mut Ctx, id: crate::ids::LockId) {
        let op = Op::read(self.pool.clone());
        self.pool_read.send(cx, id, Purpose::PoolData, op);
    }

    /// kazoo: creates the pool with our permit count as its data (kazoo's
    /// `ensure_path` and `set`, in one step), after its missing ancestors.
    fn send_pool_create(&mut self, cx: &mut Ctx, id: crate::ids::LockId, parents: bool) {
        if parents {
            cx.send_containers(id, &self.pool, false);
        }
        let op = Op::Create {
            path: self.pool.clone(),
            data: self.permits.to_string().into_bytes(),
            mode: CreateMode::Persistent,
        };
        self.pool_create.send(cx, id, Purpose::PoolCreate, op);
    }

    /// kazoo: the permit count in the pool's data, as kazoo reads it (data that
    /// is no number is someone else's use of the node, and ignored).
    fn check_count(&self, data: &[u8]) -> Result<(), FailReason> {
        let stored = std::str::from_utf8(data)
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok());
        match stored {
            Some(theirs) if theirs != i64::from(self.permits) => Err(FailReason::PermitsMismatch {
                ours: self.permits,
                theirs: u32::try_from(theirs.max(0)).unwrap_or(u32::MAX),
            }),
            _ => Ok(()),
        }
    }

    pub(super) fn on_pool_data(
        &mut self,
        cx: &mut Ctx,
        id: crate::ids::LockId,
        result: Result<Reply, ZkError>,
    ) -> LeaseVerdict {
        match result {
            Ok(Reply::Data { data, .. }) => {
                if let Err(reason) = self.check_count(&data) {
                    return LeaseVerdict::Fail(reason);
                }
                self.pool_checked = true;
                self.send_list(cx, id);
                LeaseVerdict::Pending
            }
            Ok(_) => LeaseVerdict::Trouble(ZkError::unexpected_reply()),
            Err(ZkError::NoNode) => {
                self.send_pool_create(cx, id, false);
                LeaseVerdict::Pending
            }
            Err(e) if e.is_connection_loss() => LeaseVerdict::Trouble(e),
            Err(e) => LeaseVerdict::Fail(FailReason::Zk(e)),
        }
    }

    pub(super) fn on_pool_create(
        &mut self,
        cx: &mut Ctx,
        id: crate::ids::LockId,
        result: Result<Reply, ZkError>,
        parent_tries: &mut u32,
        max_parent_tries: u32,
    ) -> LeaseVerdict {
        match result {
            Ok(_) => {
                self.pool_checked = true;
                self.send_list(cx, id);
                LeaseVerdict::Pending
            }
            // Someone else created it meanwhile: read its count.
            Err(ZkError::NodeExists) => {
                self.send_pool_read(cx, id);
                LeaseVerdict::Pending
            }
            Err(ZkError::NoNode) => {
                *parent_tries += 1;
                if *parent_tries > max_parent_tries {
                    return LeaseVerdict::Fail(FailReason::Zk(ZkError::NoNode));
                }
                self.send_pool_create(cx, id, true);
                LeaseVerdict::Pending
            }
            Err(e) if e.is_connection_loss() => LeaseVerdict::Trouble(e),
            Err(e) => LeaseVerdict::Fail(FailReason::Zk(e)),
        }
    }
}

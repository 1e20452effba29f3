//! The lease step's side of the acquisition: starting the step once the walk's
//! grant is the internal mutex, the pool watch, the lease's replies (acted on
//! here as far as the lease and our node go: spare nodes deleted, the lease
//! node handed over as our node once held; the acquisition's own move comes
//! back as a [`PartAsks`]).

use super::{Create, Layout, Lease, LeaseVerdict};
use crate::acquisition::node::{Node, OwnNode};
use crate::acquisition::PartAsks;
use crate::ctx::Ctx;
use crate::event::FailReason;
use crate::ids::LockId;
use crate::output::Progress;
use crate::proto::{Reply, RequestId, ZkError};
use crate::requests::Purpose;
use crate::spec::LockSpec;

/// Where the acquisition is when a reply of the lease step comes.
pub(in crate::acquisition) struct LeaseCaller<'a> {
    /// Whose requests.
    pub(in crate::acquisition) id: LockId,
    /// The acquisition waits (the step of a mutex we hold acts).
    pub(in crate::acquisition) waiting: bool,
    /// The acquisition cleans up (it hears of nodes made).
    pub(in crate::acquisition) cleanup: bool,
    /// What the acquisition acquires.
    pub(in crate::acquisition) spec: &'a LockSpec,
    /// Our node: the internal mutex's until the lease is held, then the lease
    /// node (its container creates are shared with the lease's).
    pub(in crate::acquisition) node: &'a mut Node,
}

impl Lease {
    // Replies.

    /// A reply to one of the lease's requests, acted on: spare nodes of ours
    /// are deleted, a lease that is ours becomes our node, and what is left is
    /// the acquisition's move ([`PartAsks::Pending`] too for a reply that is not the one
    /// in flight, or that the step does not act on now).
    pub(in crate::acquisition) fn on_reply(
        &mut self,
        cx: &mut Ctx,
        step: LeaseCaller<'_>,
        request: RequestId,
        purpose: Purpose,
        result: Result<Reply, ZkError>,
    ) -> PartAsks {
        let (id, waiting, cleanup) = (step.id, step.waiting, step.cleanup);
        let parent_tries = &mut step.node.parent_tries;
        let max_tries = cx.config.max_parent_retries;
        // Only the step of a mutex we hold acts; cleanup hears of nodes made.
        let live = (waiting && self.active) || cleanup;
        let outcome = match purpose {
            Purpose::LeaseCreate if self.create == Create::InFlight(request) => {
                self.on_create(cx, id, result, cleanup || !live, parent_tries, max_tries)
            }
            Purpose::LeaseList if self.list.take_reply(request) => {
                if !live {
                    return PartAsks::Pending;
                }
                self.on_list(cx, id, result, cleanup)
            }
            Purpose::PoolData if self.pool_read.take_reply(request) => {
                if !live || cleanup {
                    return PartAsks::Pending;
                }
                self.on_pool_data(cx, id, result)
            }
            Purpose::PoolCreate if self.pool_create.take_reply(request) => {
                if !live || cleanup {
                    return PartAsks::Pending;
                }
                self.on_pool_create(cx, id, result, parent_tries, max_tries)
            }
            _ => return PartAsks::Pending,
        };
        self.act(cx, step, outcome)
    }

    /// Acts on a reply's `outcome` as far as the lease and our `node` go, and
    /// says what the acquisition does next.
    fn act(&mut self, cx: &mut Ctx, step: LeaseCaller<'_>, outcome: LeaseVerdict) -> PartAsks {
        let LeaseCaller {
            id,
            cleanup,
            spec,
            node,
            ..
        } = step;
        for path in self.take_spare() {
            // kazoo's lease path is fixed: a late reply to a create of it (or a
            // listing) names the node we hold, which is no spare.
            if node.path() == Some(path.as_str()) {
                continue;
            }
            node.delete_extra(cx, id, path);
        }
        if cleanup {
            return match outcome {
                LeaseVerdict::Trouble(e) => PartAsks::Trouble(e),
                _ => PartAsks::Cleanup,
            };
        }
        match outcome {
            LeaseVerdict::Pending => PartAsks::Pending,
            LeaseVerdict::Hold => match self.hold(node.own.as_ref()) {
                Some(lease) => {
                    node.hold_lease(cx, id, spec, lease);
                    PartAsks::Grant
                }
                None => PartAsks::Pending,
            },
            LeaseVerdict::Full if !spec.wait => PartAsks::Fail(FailReason::WouldBlock),
            LeaseVerdict::Full => {
                // The pool's directory: what a full pool waits on.
                let node = self.pool.clone();
                cx.progress(id, Progress::QueuedBehind { node });
                PartAsks::Pending
            }
            LeaseVerdict::Fail(reason) => PartAsks::Fail(reason),
            LeaseVerdict::Trouble(e) => PartAsks::Trouble(e),
        }
    }

    // Mutators.

    /// The internal mutex is ours: take a lease (once; a recovery starts again).
    pub(in crate::acquisition) fn start(&mut self, cx: &mut Ctx, id: LockId) {
        if self.active || self.granted {
            return;
        }
        self.active = true;
        self.send_step(cx, id);
    }

    /// A watch fired on `path`: `true` if it was the pool's children watch
    /// (then a `waiting` step looks at the pool again).
    pub(in crate::acquisition) fn on_pool_watch(
        &mut self,
        cx: &mut Ctx,
        id: LockId,
        path: &str,
        waiting: bool,
    ) -> bool {
        if self.pool != path {
            return false;
        }
        if waiting && self.active && !self.list.is_pending() && !self.pool_read.is_pending() {
            self.send_step(cx, id);
        }
        true
    }

    /// Nodes of ours found spare (to delete), taken.
    pub(in crate::acquisition) fn take_spare(&mut self) -> Vec<String> {
        std::mem::take(&mut self.spare)
    }

    /// The lease is ours: the lease node, to hold as our node once the internal
    /// mutex `mutex` is released (as the peers do once they have their lease).
    fn hold(&mut self, mutex: Option<&OwnNode>) -> Option<OwnNode> {
        let mut node = self.node.take()?;
        self.active = false;
        self.granted = true;
        // kazoo's lease node has no sequence: the grant carries the mutex's, our
        // place in the queue.
        if let (Some(mutex), Layout::Kazoo) = (mutex, self.layout) {
            node.seq = mutex.seq;
        }
        Some(node)
    }

    /// The acquisition ended: a lease node not (yet) our own goes too. Returns
    /// the nodes to delete.
    pub(in crate::acquisition) fn terminal(&mut self) -> Vec<String> {
        self.active = false;
        if let Some(node) = self.node.take() {
            self.spare.push(node.path.to_string());
        }
        if self.layout == Layout::Kazoo && self.create == Create::Unknown {
            self.create = Create::Done;
            self.spare.push(self.create_path.clone());
        }
        self.take_spare()
    }
}

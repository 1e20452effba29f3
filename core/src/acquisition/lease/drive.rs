//! The lease step's side of the acquisition: starting the step once the walk's
//! grant is the internal mutex, the pool watch, the lease's replies (returning
//! an [`Outcome`] the acquisition acts on), and handing over the lease node as
//! our node once held.

use super::{Layout, Lease, LeaseCreate, Outcome};
use crate::acquisition::node::OwnNode;
use crate::ctx::Ctx;
use crate::ids::LockId;
use crate::proto::{Reply, RequestId, ZkError};
use crate::requests::Purpose;

/// Where the acquisition is when a reply of the lease step comes.
pub(in crate::acquisition) struct Step<'a> {
    /// Whose requests.
    pub(in crate::acquisition) id: LockId,
    /// The acquisition waits (the step of a mutex we hold acts).
    pub(in crate::acquisition) waiting: bool,
    /// The acquisition cleans up (it hears of nodes made).
    pub(in crate::acquisition) cleanup: bool,
    /// The container creates so far, shared with our node's create.
    pub(in crate::acquisition) parent_tries: &'a mut u32,
}

impl Lease {
    // Getters.

    /// The pool's directory (what a full pool waits on).
    pub(in crate::acquisition) fn pool_path(&self) -> &str {
        &self.pool
    }

    // Replies.

    /// A reply to one of the lease's requests: `None` if it is not the one in
    /// flight, or the step does not act on it now.
    pub(in crate::acquisition) fn on_reply(
        &mut self,
        cx: &mut Ctx,
        step: Step<'_>,
        request: RequestId,
        purpose: Purpose,
        result: Result<Reply, ZkError>,
    ) -> Option<Outcome> {
        let Step {
            id,
            waiting,
            cleanup,
            parent_tries,
        } = step;
        let max_tries = cx.config.max_parent_retries;
        // Only the step of a mutex we hold acts; cleanup hears of nodes made.
        let live = (waiting && self.active) || cleanup;
        let outcome = match purpose {
            Purpose::LeaseCreate if self.create == LeaseCreate::InFlight(request) => {
                self.on_create(cx, id, result, cleanup || !live, parent_tries, max_tries)
            }
            Purpose::LeaseList if self.list.take_reply(request) => {
                if !live {
                    return None;
                }
                self.on_list(cx, id, result, cleanup)
            }
            Purpose::PoolData if self.pool_read.take_reply(request) => {
                if !live || cleanup {
                    return None;
                }
                self.on_pool_data(cx, id, result)
            }
            Purpose::PoolCreate if self.pool_create.take_reply(request) => {
                if !live || cleanup {
                    return None;
                }
                self.on_pool_create(cx, id, result, parent_tries, max_tries)
            }
            _ => return None,
        };
        Some(outcome)
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
    pub(in crate::acquisition) fn hold(&mut self, mutex: Option<&OwnNode>) -> Option<OwnNode> {
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
            self.spare.push(node.path);
        }
        if self.layout == Layout::Kazoo && self.create == LeaseCreate::Unknown {
            self.create = LeaseCreate::Done;
            self.spare.push(self.create_path.clone());
        }
        self.take_spare()
    }
}

//! The acquisition's side of the lease: the walk's grant starts the lease step,
//! the lease's replies and pool watch are routed to it, and its outcome is acted
//! on (hold, wait, fail, retry, delete spare nodes).

use super::{Layout, LeaseCreate, Outcome};
use crate::acquisition::{Acquisition, State};
use crate::ctx::Ctx;
use crate::event::FailReason;
use crate::output::Progress;
use crate::proto::{Reply, RequestId, ZkError};
use crate::requests::Purpose;
use crate::spec::Recipe;

impl Acquisition {
    /// The kind of walk our node makes in its queue's directory: the semaphore's
    /// own recipe, or for a semaphore in a peer's layout its internal mutex.
    pub(in crate::acquisition) fn walk_recipe(&self) -> Recipe {
        match self.lease {
            Some(_) => Recipe::Write,
            None => self.spec.recipe,
        }
    }

    /// Whether the walk's grant is the internal mutex of a lease still to take.
    pub(in crate::acquisition) fn lease_pending(&self) -> bool {
        self.lease.as_ref().is_some_and(|l| l.pending())
    }

    /// The internal mutex is ours: take a lease (once; a recovery starts again).
    pub(in crate::acquisition) fn lease_start(&mut self, cx: &mut Ctx) {
        let id = self.id;
        let Some(lease) = self.lease.as_deref_mut() else {
            return;
        };
        if lease.active || lease.granted {
            return;
        }
        lease.active = true;
        lease.send_step(cx, id);
    }

    /// A watch fired on `path`; true if it was the pool's children watch.
    pub(in crate::acquisition) fn on_pool_watch(&mut self, cx: &mut Ctx, path: &str) -> bool {
        let id = self.id;
        let waiting = self.state == State::Waiting;
        let Some(lease) = self.lease.as_deref_mut() else {
            return false;
        };
        if lease.pool != path {
            return false;
        }
        if waiting && lease.active && !lease.list.is_pending() && !lease.pool_read.is_pending() {
            lease.send_step(cx, id);
        }
        true
    }

    /// A reply to one of the lease's requests.
    pub(in crate::acquisition) fn on_lease_reply(
        &mut self,
        cx: &mut Ctx,
        request: RequestId,
        purpose: Purpose,
        result: Result<Reply, ZkError>,
    ) {
        let id = self.id;
        let cleanup = self.state == State::Cleanup;
        let max_tries = cx.config.max_parent_retries;
        let mut tries = self.node.parent_tries;
        let Some(lease) = self.lease.as_deref_mut() else {
            return;
        };
        // Only the step of a mutex we hold acts; cleanup hears of nodes made.
        let live = (self.state == State::Waiting && lease.active) || cleanup;
        let outcome = match purpose {
            Purpose::LeaseCreate if lease.create == LeaseCreate::InFlight(request) => {
                lease.on_create(cx, id, result, cleanup || !live, &mut tries, max_tries)
            }
            Purpose::LeaseList if lease.list.take_reply(request) => {
                if !live {
                    return;
                }
                lease.on_list(cx, id, result, cleanup)
            }
            Purpose::PoolData if lease.pool_read.take_reply(request) => {
                if !live || cleanup {
                    return;
                }
                lease.on_pool_data(cx, id, result)
            }
            Purpose::PoolCreate if lease.pool_create.take_reply(request) => {
                if !live || cleanup {
                    return;
                }
                lease.on_pool_create(cx, id, result, &mut tries, max_tries)
            }
            _ => return,
        };
        self.node.parent_tries = tries;
        self.act_on(cx, outcome);
    }

    fn act_on(&mut self, cx: &mut Ctx, outcome: Outcome) {
        let spare = self
            .lease
            .as_deref_mut()
            .map(|l| std::mem::take(&mut l.spare))
            .unwrap_or_default();
        for path in spare {
            // kazoo's lease path is fixed: a late reply to a create of it (or a
            // listing) names the node we hold, which is no spare.
            if self.node.own.as_ref().is_some_and(|o| o.path == path) {
                continue;
            }
            self.node.delete_extra(cx, self.id, path);
        }
        if self.state == State::Cleanup {
            return match outcome {
                Outcome::Trouble(e) => self.trouble(cx, e),
                _ => self.continue_cleanup(cx),
            };
        }
        match outcome {
            Outcome::Pending => {}
            Outcome::Hold => self.lease_hold(cx),
            Outcome::Full if !self.spec.wait => self.fail(cx, FailReason::WouldBlock),
            Outcome::Full => {
                if let Some(lease) = &self.lease {
                    let node = lease.pool.clone();
                    cx.progress(self.id, Progress::QueuedBehind { node });
                }
            }
            Outcome::Fail(reason) => self.fail(cx, reason),
            Outcome::Trouble(e) => self.trouble(cx, e),
        }
    }

    /// The lease is ours: release the internal mutex (as the peers do once they
    /// have their lease) and hold the lease node as our own.
    fn lease_hold(&mut self, cx: &mut Ctx) {
        let Some(lease) = self.lease.as_deref_mut() else {
            return;
        };
        let Some(mut node) = lease.node.take() else {
            return;
        };
        lease.active = false;
        lease.granted = true;
        if let Some(mutex) = self.node.own.take() {
            if self.node.own_watched {
                cx.watches.remove(self.id, &mutex.path);
            }
            // kazoo's lease node has no sequence: the grant carries the mutex's,
            // our place in the queue.
            if lease.layout == Layout::Kazoo {
                node.seq = mutex.seq;
            }
            self.node.delete_extra(cx, self.id, mutex.path);
        }
        self.node.own_watched = false;
        self.node.own_read.forget();
        self.node.own = Some(node);
        self.node.ensure_read(cx, self.id, &self.spec);
        self.grant(cx);
    }

    /// The acquisition ended: a lease node not (yet) our own goes too.
    pub(in crate::acquisition) fn lease_terminal(&mut self, cx: &mut Ctx) {
        let Some(lease) = self.lease.as_deref_mut() else {
            return;
        };
        lease.active = false;
        if let Some(node) = lease.node.take() {
            lease.spare.push(node.path);
        }
        if lease.layout == Layout::Kazoo && lease.create == LeaseCreate::Unknown {
            lease.create = LeaseCreate::Done;
            lease.spare.push(lease.create_path.clone());
        }
        let spare = std::mem::take(&mut lease.spare);
        for path in spare {
            self.node.delete_extra(cx, self.id, path);
        }
    }

    /// Cleanup: whether nothing of the lease can remain unaccounted for.
    pub(in crate::acquisition) fn lease_cleanup_settled(&mut self, cx: &mut Ctx) -> bool {
        let id = self.id;
        let Some(lease) = self.lease.as_deref_mut() else {
            return true;
        };
        let settled = lease.cleanup_settled(cx, id);
        let spare = std::mem::take(&mut lease.spare);
        for path in spare {
            self.node.delete_extra(cx, self.id, path);
        }
        settled
    }

    /// Requests in flight are gone (a disconnect, a recovery).
    pub(in crate::acquisition) fn lease_forget(&mut self) {
        if let Some(lease) = self.lease.as_deref_mut() {
            lease.forget();
        }
    }

    /// The session ended (see [`Lease::session_ended`](super::Lease::session_ended)).
    pub(in crate::acquisition) fn lease_session_ended(&mut self, expired: bool) {
        if let Some(lease) = self.lease.as_deref_mut() {
            lease.session_ended(expired);
        }
    }
}

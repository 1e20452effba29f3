//! The window: deciding from the cached lower blockers, watching the `permits`
//! closest of them, and deciding again when one goes.

use super::queue::Decision;
use super::{Acquisition, Look, State, Watch};
use crate::ctx::Ctx;
use crate::event::FailReason;
use crate::output::Progress;
use crate::proto::{Op, Reply, RequestId, ZkError};
use crate::requests::Purpose;

impl Acquisition {
    /// Decides from the cached lower blockers: hold, or watch the window.
    pub(super) fn evaluate(&mut self, cx: &mut Ctx, look: Look) {
        if self.state != State::Waiting {
            return;
        }
        let recipe = self.walk_recipe();
        let window = match self.queue.decide(recipe) {
            Decision::Hold => {
                self.queue.watched.clear();
                if look == Look::Cache && self.node.own_read.is_pending() {
                    // The news of our own node is still on its way (rare: a watch set
                    // before it fired first). Hold only once it says the node is there.
                    self.state = State::Granting;
                    return;
                }
                return self.grant(cx);
            }
            Decision::Wait { window } => window,
        };
        if !self.spec.wait {
            return self.fail(cx, FailReason::WouldBlock);
        }
        if let Some(own) = &self.node.own {
            if let Some(place) = self.queue.report_place(recipe) {
                let node = own.path.clone();
                cx.progress(self.id, Progress::Queued { node, place });
            }
        }
        self.detection.start_waiting(cx, self.id, &self.spec);
        self.holder.set_marker_known(None);
        // When one notification could grant us from the cache, with no further look
        // at the server (the cache holds no more than `permits` blockers), our own
        // node is watched too, and this read goes out before the peer watches:
        // per-session FIFO order then brings news of our node (deleted by an
        // administrator, say) before that notification. Without it a waiter whose
        // node was deleted would take the lock beside the one queued behind it.
        // A deeper cache lists again after a notification, and the listing shows
        // whether our node is still there: no watch needed (a long queue drains at
        // one notification and no extra request per handoff).
        if !self.node.own_watched && self.queue.lower.len() <= recipe.permits() {
            self.node.send_read(cx, self.id);
        }
        for name in self.queue.narrow_to(window) {
            self.watch_peer(cx, name);
        }
    }

    pub(super) fn watch_peer(&mut self, cx: &mut Ctx, name: String) {
        let path = format!("{}/{}", self.queue.dir, name);
        let op = Op::GetData {
            path: path.clone(),
            watch: true,
        };
        if let Some(id) = cx.send(self.id, Purpose::WatchPeer { name: name.clone() }, op) {
            self.queue.watched.insert(name, Watch::Pending(id));
            cx.stats.watches_set += 1;
            cx.progress(self.id, Progress::QueuedBehind { node: path });
        }
    }

    pub(super) fn on_peer_data(
        &mut self,
        cx: &mut Ctx,
        request: RequestId,
        name: String,
        result: Result<Reply, ZkError>,
    ) {
        if !self.queue.take_watch_reply(&name, request) {
            return;
        }
        match result {
            Ok(_) => {
                self.queue.watched.insert(name, Watch::Armed);
            }
            Err(ZkError::NoNode) => self.peer_gone(cx, &name),
            Err(e) if e.is_connection_loss() => self.trouble(cx, e),
            Err(e) => self.fail(cx, FailReason::Zk(e)),
        }
    }

    pub(super) fn peer_gone(&mut self, cx: &mut Ctx, name: &str) {
        let permits = self.walk_recipe().permits();
        if !self.queue.drop_blocker(name, permits) {
            // The cache can no longer block us: hold now, no round trip.
            return self.evaluate(cx, Look::Cache);
        }
        // The rest of the cache is likely stale (in a queue, everyone below our
        // predecessor left before it did): one fresh listing beats checking the
        // candidates one round trip at a time.
        if !self.queue.list.is_pending() {
            self.send_list(cx);
        }
    }
}

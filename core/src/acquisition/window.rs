//! The window: deciding from the cached lower blockers, watching the `permits`
//! closest of them, and deciding again when one goes.

use super::{Acquisition, Look, State, Watch};
use crate::ctx::Ctx;
use crate::event::FailReason;
use crate::names::{parse_participant, NodeKind};
use crate::output::Progress;
use crate::proto::{Op, Reply, RequestId, ZkError};
use crate::requests::Purpose;
use crate::spec::Recipe;
use crate::timers::TimerKind;

impl Acquisition {
    /// Decides from the cached lower blockers: hold, or watch the window.
    pub(super) fn evaluate(&mut self, cx: &mut Ctx, look: Look) {
        if self.state != State::Waiting {
            return;
        }
        let permits = self.walk_recipe().permits();
        // A semaphore never holds beside an exclusive participant below it (a write
        // lock or leader on the same path): that one must go first, whatever the
        // permits. `lower` is farthest first, so this is the closest such writer.
        let writer = match self.walk_recipe() {
            Recipe::Semaphore { .. } => self
                .lower
                .iter()
                .rev()
                .find(|(_, n)| {
                    parse_participant(n)
                        .is_some_and(|p| matches!(p.kind, NodeKind::Write | NodeKind::Leader))
                })
                .map(|(_, n)| n.clone()),
            _ => None,
        };
        if writer.is_none() && self.lower.len() < permits {
            self.watched.clear();
            if look == Look::Cache && self.own_read.is_pending() {
                // The news of our own node is still on its way (rare: a watch set
                // before it fired first). Hold only once it says the node is there.
                self.state = State::Granting;
                return;
            }
            return self.grant(cx);
        }
        if !self.spec.wait {
            return self.fail(cx, FailReason::WouldBlock);
        }
        if let (Some(after), None) = (self.spec.detect_after, self.wait_started) {
            self.wait_started = Some(cx.now);
            cx.timers.set(self.id, TimerKind::Detect, cx.now + after);
        }
        self.marker_known = None;
        // When one notification could grant us from the cache, with no further look
        // at the server (the cache holds no more than `permits` blockers), our own
        // node is watched too, and this read goes out before the peer watches:
        // per-session FIFO order then brings news of our node (deleted by an
        // administrator, say) before that notification. Without it a waiter whose
        // node was deleted would take the lock beside the one queued behind it.
        // A deeper cache lists again after a notification, and the listing shows
        // whether our node is still there: no watch needed (a long queue drains at
        // one notification and no extra request per handoff).
        if !self.own_watched && self.lower.len() <= permits {
            self.send_own_read(cx, true);
        }
        let window: Vec<String> = match writer {
            Some(w) => vec![w],
            None => self.lower[self.lower.len() - permits..]
                .iter()
                .map(|(_, n)| n.clone())
                .collect(),
        };
        self.watched.retain(|n, _| window.contains(n));
        for name in window {
            if !self.watched.contains_key(&name) {
                self.watch_peer(cx, name);
            }
        }
    }

    pub(super) fn watch_peer(&mut self, cx: &mut Ctx, name: String) {
        let path = format!("{}/{}", self.dir, name);
        let op = Op::GetData {
            path: path.clone(),
            watch: true,
        };
        if let Some(id) = cx.send(self.id, Purpose::WatchPeer { name: name.clone() }, op) {
            self.watched.insert(name, Watch::Pending(id));
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
        if self.watched.get(&name) != Some(&Watch::Pending(request)) {
            return;
        }
        match result {
            Ok(_) => {
                self.watched.insert(name, Watch::Armed);
            }
            Err(ZkError::NoNode) => self.peer_gone(cx, &name),
            Err(e) if e.is_connection_loss() => self.trouble(cx, e),
            Err(e) => self.fail(cx, FailReason::Zk(e)),
        }
    }

    pub(super) fn peer_gone(&mut self, cx: &mut Ctx, name: &str) {
        self.watched.remove(name);
        self.lower.retain(|(_, n)| n != name);
        if self.lower.len() < self.walk_recipe().permits() {
            // The cache can no longer block us: hold now, no round trip.
            return self.evaluate(cx, Look::Cache);
        }
        // The rest of the cache is likely stale (in a queue, everyone below our
        // predecessor left before it did): one fresh listing beats checking the
        // candidates one round trip at a time.
        if !self.list.is_pending() {
            self.send_list(cx);
        }
    }
}

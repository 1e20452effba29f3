//! The acquisition's transitions: the grant, the terminal event and the cleanup
//! after it, and the connection's changes (recovering after a reconnect or a
//! pause after trouble, suspending a held lock, resuming it, the session's end).
//! The parts act on their own state; these move the acquisition's [`State`].

use super::markers::ReleaseMarker;
use super::node::{CreateOutcome, DeleteOutcome, Node, ReadOutcome};
use super::queue::{Decision, Queue};
use super::{
    identity, node_dir, our_queue, Acquisition, Create, Ended, GrantBasis, Identity, State,
};
use crate::ctx::Ctx;
use crate::event::{FailReason, Grant, LockEvent, LostReason};
use crate::ids::FencingToken;
use crate::proto::{Reply, RequestId, ZkError};
use crate::time::Timestamp;
use crate::timers::TimerKind;

impl Acquisition {
    // The grant: holding once our node's token (its stat) and, with crash
    // detection, the previous holder's section marker are known.

    pub(super) fn grant(&mut self, cx: &mut Ctx) {
        if !cx.connected {
            // A late notification while the connection is down: a grant now could not
            // be trusted (no `Suspended` would follow). The listing after the
            // reconnect decides again.
            return;
        }
        if let Some(lease) = self.lease.as_deref_mut().filter(|l| l.pending()) {
            // What the walk won is the internal mutex of a peer's semaphore: the
            // lease comes next.
            self.state = State::Waiting;
            return lease.start(cx, self.id);
        }
        let own = self.node.own.as_ref().expect("granted without a node");
        let stat = own.stat;
        let crashed = self.sections_and_writes.previous_crashed(&self.spec);
        let (Some(stat), Some(crashed)) = (stat, crashed) else {
            self.state = State::Granting;
            // The client library gave no stat on create: a getData on our own node
            // brings the token.
            if stat.is_none()
                && !self.node.own_read.is_pending()
                && !matches!(self.node.create, Create::InFlight(_))
            {
                self.node.send_read(cx, self.id, self.spec.watches_node());
            }
            // We waited: whether the previous holder closed its section is unknown.
            if crashed.is_none() {
                self.sections_and_writes.check_marker(cx, identity!(self));
            }
            return;
        };
        if !self.delay.may_grant(cx, identity!(self)) {
            // Lock-delay: our marker is being made, or another holder's says it
            // ended uncleanly and the delay runs (see `delay`).
            self.state = State::Granting;
            return;
        }
        if !cx.proof_lasts() {
            // Nothing proves the leader heard the session lately enough for the
            // proof to last until a `sync` renews it (an idle session sends none):
            // granted once one does (`on_contact_renewed`), never reported held
            // on a session that may be expiring, nor on a proof that would run
            // out before its renewal (a false `Suspended` right after the grant).
            // Being granted makes the session prove contact at once.
            self.state = State::Granting;
            return;
        }
        let own = self.node.own.as_ref().expect("granted without a node");
        let grant = Grant {
            path: own.path.clone(),
            token: FencingToken(stat.czxid),
            sequence: own.seq,
            session_id: cx.session_id.unwrap_or_default(),
            previous_holder_crashed: crashed,
        };
        self.state = State::Held;
        self.drop_queue_if_held();
        self.sections_and_writes.granted(cx.now);
        self.detection.stop(cx, self.id);
        cx.timers.cancel(self.id, TimerKind::Deadline);
        if let Some(max_hold) = self.spec.rare().max_hold {
            cx.timers.set(self.id, TimerKind::Lease, cx.now + max_hold);
        }
        cx.stats.acquired += 1;
        cx.emit(self.id, LockEvent::Acquired(grant));
    }

    /// What a grant in [`State::Granting`] waited for has come: try it again.
    pub(super) fn grant_again(&mut self, cx: &mut Ctx) {
        self.state = State::Waiting;
        self.grant(cx);
    }

    // The end: the one terminal event, then the cleanup of whatever node of
    // ours remains.

    /// The acquisition ends for the user without holding.
    pub(crate) fn fail(&mut self, cx: &mut Ctx, reason: FailReason) {
        self.terminal(cx, LockEvent::Failed(reason));
    }

    /// Emits the terminal event, then removes whatever node remains.
    pub(super) fn terminal(&mut self, cx: &mut Ctx, event: LockEvent) {
        debug_assert!(event.is_terminal());
        if matches!(self.state, State::Cleanup | State::Done) {
            return;
        }
        self.sections_and_writes.abandon_writes(cx, self.id, &event);
        self.detection.stop(cx, self.id);
        cx.emit(self.id, event);
        cx.timers.cancel_lock(self.id);
        self.state = State::Cleanup;
        self.queue = None;
        self.suspended = false;
        if let Some(lease) = self.lease.as_deref_mut() {
            for path in lease.terminal() {
                self.node.delete_extra(cx, self.id, path);
            }
        }
        self.continue_cleanup(cx);
    }

    /// Cleanup: delete our node (or find it first if a create's outcome is unknown),
    /// and duplicates; done when nothing of ours can remain.
    pub(super) fn continue_cleanup(&mut self, cx: &mut Ctx) {
        if self.node.own.is_some() {
            if !self.node.delete.is_pending() {
                self.send_delete(cx);
            }
            return;
        }
        match self.node.create {
            Create::InFlight(_) => return, // its reply decides
            Create::Unknown => {
                if !our_queue!(self).list.is_pending() {
                    our_queue!(self).send_list(cx, self.id, node_dir!(self));
                }
                return;
            }
            Create::NotSent | Create::Done => {}
        }
        if let Some(lease) = self.lease.as_deref_mut() {
            let settled = lease.cleanup_settled(cx, self.id);
            for path in lease.take_spare() {
                self.node.delete_extra(cx, self.id, path);
            }
            if !settled {
                return;
            }
        }
        if self.node.extra.is_empty() {
            self.state = State::Done;
        }
    }

    // Connection and session changes.

    /// Starts (or restarts after a reconnect) whatever the state needs. Every
    /// request of the previous connection is forgotten by then.
    pub(crate) fn recover(&mut self, cx: &mut Ctx) {
        cx.requests.forget_lock(self.id);
        cx.timers.cancel(self.id, TimerKind::Retry);
        self.forget_requests();
        self.node.resend_extra(cx, self.id);
        match self.state {
            State::Waiting => match self.node.create {
                Create::NotSent => self.send_create(cx),
                // Find our node by attempt id (adopt it), or create again.
                Create::Unknown | Create::Done | Create::InFlight(_) => {
                    our_queue!(self).send_list(cx, self.id, node_dir!(self))
                }
            },
            // Is our node still ours? (Watched from here on.)
            State::Granting | State::Held => self.node.send_read(cx, self.id, true),
            State::Releasing => self.send_delete(cx),
            State::Cleanup => self.continue_cleanup(cx),
            State::Done => {}
        }
    }

    /// Every part forgets what it had in flight (the connection dropped, or a
    /// recovery starts over): each keeps what outlives a connection.
    fn forget_requests(&mut self) {
        self.node.forget();
        if let Some(queue) = self.queue.as_deref_mut() {
            queue.forget();
        }
        self.sections_and_writes.forget();
        self.delay.forget();
        self.detection.forget();
        if let Some(lease) = self.lease.as_deref_mut() {
            lease.forget();
        }
    }

    /// A request failed without the connection being declared down (or with an
    /// error worth retrying): start over from the state after a pause.
    pub(super) fn trouble(&mut self, cx: &mut Ctx, error: ZkError) {
        if error == ZkError::Unimplemented && matches!(self.state, State::Waiting | State::Granting)
        {
            // The client cannot send what this acquisition needs (a lock-delay
            // marker without `multi`): waiting cannot help.
            return self.fail(cx, FailReason::Zk(error));
        }
        cx.stats.retries += 1;
        cx.timers
            .set(self.id, TimerKind::Retry, cx.now + cx.config.retry_interval);
    }

    /// The connection dropped: outstanding requests are forgotten by the session.
    /// A held lock is suspended, and lost at `lost_at` unless the connection comes
    /// back first.
    pub(crate) fn on_disconnected(&mut self, cx: &mut Ctx, lost_at: Timestamp) {
        cx.timers.cancel(self.id, TimerKind::Retry);
        self.forget_requests();
        self.sections_and_writes.writes_unknown(cx, self.id);
        self.suspend(cx, lost_at);
    }

    /// A held lock is no longer trusted: suspended, and lost at `lost_at` unless
    /// it is resumed first (the connection comes back, or the leader is proven to
    /// hear us again).
    pub(crate) fn suspend(&mut self, cx: &mut Ctx, lost_at: Timestamp) {
        if self.state == State::Held && !self.suspended {
            self.suspended = true;
            cx.emit(self.id, LockEvent::Suspended);
            if lost_at <= cx.now {
                // The server may already have expired the session.
                self.terminal(cx, LockEvent::Lost(LostReason::SuspendedTooLong));
            } else {
                cx.timers.set(self.id, TimerKind::Grace, lost_at);
            }
        }
    }

    /// The leader was proven to hear us again: a lock suspended for want of that
    /// proof (the connection up) checks that its node is still ours, then resumes;
    /// a grant that waited for it goes on.
    pub(crate) fn on_contact_renewed(&mut self, cx: &mut Ctx) {
        if !cx.connected {
            return;
        }
        match self.state {
            State::Held if self.suspended && !self.node.own_read.is_pending() => {
                self.node.send_read(cx, self.id, true);
            }
            State::Granting => self.grant_again(cx),
            _ => {}
        }
    }

    /// The session is gone (expired, abandoned or closed). After an expiry so are
    /// our nodes; after an abandonment they may live on, so the paths are kept
    /// and cleanup deletes them from the next session (a create whose outcome is
    /// unknown is looked for by attempt id).
    pub(crate) fn on_session_ended(&mut self, cx: &mut Ctx, how: Ended) {
        let closed = how == Ended::Closed;
        if let Some(lease) = self.lease.as_deref_mut() {
            lease.session_ended(how != Ended::Abandoned);
        }
        self.node.on_session_ended(how == Ended::Abandoned);
        match self.state {
            State::Waiting | State::Granting => {
                if self.node.create == Create::NotSent && !closed {
                    // Never reached the old session: it will start on the next one
                    // (unless the client is closed: then it fails like the others).
                    return;
                }
                let reason = if closed {
                    FailReason::Closed
                } else {
                    FailReason::SessionExpired
                };
                self.fail(cx, reason)
            }
            State::Held => {
                let reason = if closed {
                    LostReason::Closed
                } else {
                    LostReason::SessionExpired
                };
                self.terminal(cx, LockEvent::Lost(reason))
            }
            State::Releasing => self.terminal(cx, LockEvent::Released),
            State::Cleanup => self.continue_cleanup(cx),
            State::Done => {}
        }
        if closed && self.state != State::Done {
            // A closed client can send nothing more; what it had dies with the session.
            self.state = State::Done;
        }
    }

    // Our node (see [`node`](super::node)): its create, the reads of it and its
    // delete, acted on.

    pub(super) fn send_create(&mut self, cx: &mut Ctx) {
        let create_path = self.create_path();
        if self.node.send_create(cx, self.id, &self.spec, create_path) {
            // Pipelined: per-session FIFO means this listing already holds our node.
            our_queue!(self).send_list(cx, self.id, node_dir!(self));
        }
    }

    pub(super) fn on_create_reply(
        &mut self,
        cx: &mut Ctx,
        request: RequestId,
        result: Result<Reply, ZkError>,
    ) {
        let cleanup = self.state == State::Cleanup;
        let create_path = self.create_path();
        match (self.node).on_create_reply(cx, self.id, request, result, &create_path) {
            CreateOutcome::Stale => {}
            CreateOutcome::Created { stat } => {
                if let Some(stat) = &stat {
                    let spec = &self.spec;
                    let data = crate::owner::node_data(
                        spec.scheme,
                        spec.rare().owner.as_deref(),
                        &spec.rare().data,
                    );
                    self.detection.node_created(spec, data, stat);
                }
                match self.state {
                    // The listing came first and found us free: the stat was missing.
                    State::Granting => self.grant_again(cx),
                    State::Waiting => {
                        self.node.ensure_read(cx, self.id, &self.spec);
                        if std::mem::take(&mut our_queue!(self).relist_after_create)
                            && !our_queue!(self).list.is_pending()
                        {
                            our_queue!(self).send_list(cx, self.id, node_dir!(self));
                        }
                    }
                    State::Cleanup => self.continue_cleanup(cx),
                    _ => {}
                }
            }
            CreateOutcome::Unknown(_) if cleanup => self.continue_cleanup(cx),
            CreateOutcome::Unknown(reason) => self.fail(cx, reason),
            CreateOutcome::NoParent => {
                // The lock directory (or an ancestor) is missing: create the
                // containers, then our node, in one pipelined burst.
                our_queue!(self).list.forget();
                if cleanup {
                    return self.continue_cleanup(cx);
                }
                if !self.node.send_parents(cx, self.id, node_dir!(self)) {
                    return self.fail(cx, FailReason::Zk(ZkError::NoNode));
                }
                self.send_create(cx);
            }
            CreateOutcome::Failed(reason) => {
                our_queue!(self).list.forget();
                if cleanup {
                    return self.continue_cleanup(cx);
                }
                self.fail(cx, reason);
            }
            CreateOutcome::Trouble(e) => self.trouble(cx, e),
        }
    }

    /// A read of our node answered: its token, whether it is still ours, a
    /// revocation request in it.
    pub(super) fn on_own_data(&mut self, cx: &mut Ctx, result: Result<Reply, ZkError>) {
        let data = match self.node.on_read_reply(cx.session_id, result) {
            ReadOutcome::Identity { data, stat } => {
                self.detection.node_read(&self.spec, &data, &stat);
                data
            }
            ReadOutcome::Gone(reason) => return self.own_gone(cx, reason),
            ReadOutcome::Trouble(e) => return self.trouble(cx, e),
            ReadOutcome::Failed(e) => {
                if matches!(self.state, State::Waiting | State::Granting) {
                    self.fail(cx, FailReason::Zk(e));
                }
                return;
            }
        };
        match self.state {
            State::Granting => self.grant_again(cx),
            // Resumed only once the leader is proven to hear us again.
            State::Held if self.suspended && cx.distrusted().is_none() => {
                self.suspended = false;
                cx.timers.cancel(self.id, TimerKind::Grace);
                cx.emit(self.id, LockEvent::Resumed);
            }
            _ => {}
        }
        self.resend_section(cx);
        if Node::is_revocation(&self.spec, &data) {
            match self.state {
                State::Held if self.node.note_revocation() => {
                    cx.emit(self.id, LockEvent::RevocationRequested);
                }
                State::Waiting | State::Granting => self.fail(cx, FailReason::Revoked),
                _ => {}
            }
        }
    }

    /// Our node is gone (or not ours) while we still counted on it.
    pub(super) fn own_gone(&mut self, cx: &mut Ctx, reason: LostReason) {
        self.node.unwatch();
        match self.state {
            State::Waiting | State::Granting => {
                self.node.own = None;
                self.fail(cx, FailReason::NodeDeleted)
            }
            State::Held => {
                self.node.own = None;
                self.terminal(cx, LockEvent::Lost(reason));
            }
            // Our own delete's watch firing: its reply, right behind, ends the release.
            State::Releasing if self.node.delete.is_pending() => {}
            State::Releasing => {
                self.node.own = None;
                self.terminal(cx, LockEvent::Released);
            }
            State::Cleanup | State::Done => {}
        }
    }

    // Releasing: deleting our node (with the section and lock-delay markers in
    // one multi on a clean release).

    /// The user releases a held lock.
    pub(crate) fn release(&mut self, cx: &mut Ctx) {
        self.state = State::Releasing;
        cx.timers.cancel(self.id, TimerKind::Grace);
        self.send_delete(cx);
    }

    /// The user lets go inside an open section: release, leaving the marker.
    pub(crate) fn abandon(&mut self, cx: &mut Ctx) {
        self.sections_and_writes.abandon();
        self.release(cx);
    }

    /// Deletes our node; a clean release closes the section and gives up the
    /// lock-delay marker in the same transaction.
    pub(super) fn send_delete(&mut self, cx: &mut Ctx) {
        let markers = self.release_markers().into_iter();
        let paths = markers.map(|m| m.path(&self.spec.path)).collect();
        self.node.send_delete(cx, self.id, paths);
    }

    /// The markers a clean release deletes with our node (see [`ReleaseMarker`]).
    fn release_markers(&self) -> Vec<ReleaseMarker> {
        let clean = self.state == State::Releasing;
        ReleaseMarker::for_release(clean, &self.sections_and_writes, &self.delay)
    }

    pub(super) fn on_delete(&mut self, cx: &mut Ctx, result: Result<Reply, ZkError>) {
        if let Some(marker) = ReleaseMarker::missing(&result, &self.release_markers()) {
            // That marker is already gone: delete the rest without it.
            marker.forget(&mut self.sections_and_writes, &mut self.delay);
            return self.send_delete(cx);
        }
        match self.node.on_delete_reply(result) {
            // Deleted by someone else while we believed we held it (a plain lock
            // does not watch its node): what the lock protected may have
            // overlapped another holder, and the release says so.
            DeleteOutcome::DeletedByOther if self.state == State::Releasing => {
                self.terminal(cx, LockEvent::Lost(LostReason::NodeDeleted));
            }
            DeleteOutcome::Deleted | DeleteOutcome::DeletedByOther => match self.state {
                State::Releasing => self.terminal(cx, LockEvent::Released),
                State::Cleanup => self.continue_cleanup(cx),
                _ => {}
            },
            DeleteOutcome::Trouble(e) => self.trouble(cx, e),
            DeleteOutcome::Failed(e) => match self.state {
                State::Releasing => self.terminal(cx, LockEvent::Failed(FailReason::Zk(e))),
                _ => self.trouble(cx, e),
            },
        }
    }

    // The queue (see [`queue`](super::queue)): the listing, the decision and
    // the window, acted on.

    /// The listing of our directory answered: adopt our node (deleting
    /// duplicates), cache the lower blockers, decide.
    pub(super) fn on_list(&mut self, cx: &mut Ctx, result: Result<Reply, ZkError>) {
        let children = match result {
            Ok(Reply::Children(c)) => c,
            // Not a listing: nothing is awaited any more, so ask again later.
            Ok(_) => return self.trouble(cx, ZkError::unexpected_reply()),
            Err(ZkError::NoNode) => Vec::new(),
            Err(e) if e.is_connection_loss() => return self.trouble(cx, e),
            Err(e) => {
                if self.state == State::Cleanup {
                    return self.trouble(cx, e);
                }
                return self.fail(cx, FailReason::Zk(e));
            }
        };
        let listing = Queue::sort_listing(cx, children, self.node.attempt);
        let cleanup = self.state == State::Cleanup;
        let dir = node_dir!(self);
        let kept = (self.node).sort_out_mine(cx, self.id, listing.mine, cleanup, dir);
        if cleanup {
            if self.node.create == Create::Unknown {
                self.node.create = Create::Done;
            }
            return self.continue_cleanup(cx);
        }
        if self.state != State::Waiting {
            return;
        }
        let Some((seq, name)) = kept else {
            return match self.node.create {
                // It existed and is gone: someone deleted it (or the session lost it).
                Create::Done => self.fail(cx, FailReason::NodeDeleted),
                // The create never happened: do it now.
                Create::Unknown | Create::NotSent => {
                    self.node.create = Create::NotSent;
                    self.send_create(cx)
                }
                // Only without FIFO order (a binding that cannot keep it): the
                // listing overtook our create. List again once the create is answered.
                Create::InFlight(_) => our_queue!(self).relist_after_create = true,
            };
        };
        let create_in_flight = self.node.adopt(cx, self.id, seq, &name, node_dir!(self));
        // With our create's reply right behind, our node's stat comes with it: it
        // is not read for it (a grant waits in Granting).
        if !create_in_flight || self.spec.watches_node() {
            self.node.ensure_read(cx, self.id, &self.spec);
        }
        let recipe = self.walk_recipe();
        let downgrade = &self.detection.downgrade;
        let placed =
            our_queue!(self).take_place(listing.others, seq, recipe, downgrade, &self.spec);
        if let Err(reason) = placed {
            return self.fail(cx, reason);
        }
        // A grant straight from this listing knows the marker for free.
        self.sections_and_writes
            .set_marker_known(Some(listing.marker_seen));
        self.evaluate(cx, GrantBasis::FreshListing);
    }

    /// Decides from the cached lower blockers: hold, or watch the window.
    pub(super) fn evaluate(&mut self, cx: &mut Ctx, basis: GrantBasis) {
        if self.state != State::Waiting {
            return;
        }
        let recipe = self.walk_recipe();
        let window = match our_queue!(self).decide(recipe) {
            Decision::Hold => {
                our_queue!(self).watched.clear();
                if basis == GrantBasis::CachedLowerSet && self.node.own_read.is_pending() {
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
        if let Some(own) = self.node.path() {
            our_queue!(self).report(cx, self.id, recipe, own);
        }
        self.detection.start_waiting(cx, self.id, &self.spec);
        self.sections_and_writes.set_marker_known(None);
        // When one notification could grant us from the cache, with no further look
        // at the server (the cache holds no more than `permits` blockers), our own
        // node is watched too, and this read goes out before the peer watches:
        // per-session FIFO order then brings news of our node (deleted by an
        // administrator, say) before that notification. Without it a waiter whose
        // node was deleted would take the lock beside the one queued behind it.
        // A deeper cache lists again after a notification, and the listing shows
        // whether our node is still there: no watch needed (a long queue drains at
        // one notification and no extra request per handoff).
        if !self.node.own_watched && our_queue!(self).lower.len() <= recipe.permits() {
            self.node.send_read(cx, self.id, true);
        }
        our_queue!(self).watch_window(cx, self.id, node_dir!(self), window);
    }

    /// A holder keeps no queue, unless a listing of it is still in flight (its
    /// answer may show duplicates of our node to delete).
    pub(super) fn drop_queue_if_held(&mut self) {
        let listing = self.queue.as_ref().is_some_and(|q| q.list.is_pending());
        if self.state == State::Held && !listing {
            self.queue = None;
        }
    }

    /// The blocker `name` is gone: hold from the cache, or list again.
    pub(super) fn peer_gone(&mut self, cx: &mut Ctx, name: &str) {
        let permits = self.walk_recipe().permits();
        if our_queue!(self).on_blocker_gone(cx, self.id, node_dir!(self), name, permits) {
            // The cache can no longer block us: hold now, no round trip.
            self.evaluate(cx, GrantBasis::CachedLowerSet);
        }
    }
}

//! One acquisition of one lock: the protocol shared by every recipe.
//!
//! All recipes are the same walk over the lock directory and differ only in
//! which lower participants block us ([`Recipe::is_blocked_by`]) and how many of
//! them we tolerate ([`Recipe::permits`]).
//!
//! We hold when fewer than `permits` blockers are lower than our node. Otherwise we
//! put a getData watch on the `permits` closest lower blockers (the "window"): only
//! the deletion of one of those can let us through, and a deletion elsewhere cannot
//! (for one permit this is the classic herd-free "watch your predecessor"; for n
//! permits a single watch would miss holders releasing out of order).
//!
//! The set of lower blockers is cached from the listing. Sequence numbers only grow,
//! so it can only shrink: when a watched node goes, we drop it from the cache and
//! decide again without asking the server. If the cache says we can no longer be
//! blocked we hold at once (0 round trips after the notification); otherwise we list
//! again (one round trip: in a queue the rest of the cache is usually stale, and
//! checking it node by node would cost a round trip per stale node).
//!
//! The state and logic live in parts, one file each (the fields of
//! [`Acquisition`]), each with a `forget()` for a dropped connection: a part
//! sends its own requests and returns an outcome for what it cannot decide alone
//! (our node gone, hold, fail, retry). Here the acquisition routes replies (by
//! [`Purpose`]), watches and timers to the parts and acts on their outcomes; the
//! moves of its [`State`] are in [`transitions`]. A recovery after a reconnect
//! is the parts' `forget()` and one resend.

use crate::ctx::Ctx;
use crate::event::{FailReason, LockEvent, LostReason, UsageError};
use crate::ids::LockId;
use crate::names::{node_prefix, rwlock_node_prefix, semaphore_node_prefix, AttemptId, NodeKind};
use crate::path::split_parent;
use crate::proto::{MultiOp, Reply, RequestId, WatchKind, ZkError};
use crate::requests::Purpose;
use crate::spec::{LockSpec, Recipe};
use crate::timers::TimerKind;

mod delay;
mod detection;
mod holder;
pub(crate) mod lease;
mod markers;
mod node;
mod queue;
#[cfg(test)]
mod sizes;
mod transitions;

use delay::Delay;
use detection::Detection;
use holder::SectionsAndWrites;
use lease::{Lease, LeaseCaller};
use node::{Create, Node, OwnNode};
use queue::{PeerOutcome, Queue};

/// Where the acquisition is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum State {
    /// Trying to acquire: creating, listing or watching lower participants.
    Waiting,
    /// The listing says we hold but our node's stat (the token) is not known yet.
    Granting,
    /// Held (possibly suspended).
    Held,
    /// The user released; deleting our node.
    Releasing,
    /// The user has seen the terminal event; removing whatever node we left.
    Cleanup,
    /// Nothing left to do: the session drops it.
    Done,
}

/// How a session ended, as far as its nodes are concerned.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Ended {
    /// The server expired it: its ephemeral nodes are gone.
    Expired,
    /// The client gave it up; the server may keep it (and our nodes) a while.
    Abandoned,
    /// The client was closed: nothing more can be sent.
    Closed,
}

/// What a part reads of its acquisition to act on its own: whose requests it
/// sends, the spec, and our node as far as known.
#[derive(Clone, Copy)]
pub(in crate::acquisition) struct Identity<'a> {
    pub(in crate::acquisition) id: LockId,
    pub(in crate::acquisition) spec: &'a LockSpec,
    pub(in crate::acquisition) node: Option<&'a OwnNode>,
}

#[cfg(test)]
impl<'a> Identity<'a> {
    /// Acquisition `id` of `spec` with our node `own`, for a part's unit tests.
    pub(in crate::acquisition) fn with_node(
        id: LockId,
        spec: &'a LockSpec,
        own: &'a OwnNode,
    ) -> Self {
        let node = Some(own);
        Identity { id, spec, node }
    }
}

/// [`Identity`] of an acquisition, borrowing only the fields it names (so that a
/// part beside them can be borrowed mutably at once).
macro_rules! identity {
    ($acquisition:expr) => {
        Identity {
            id: $acquisition.id,
            spec: &$acquisition.spec,
            node: $acquisition.node.own.as_ref(),
        }
    };
}
use identity;

/// The acquisition's [`Queue`], made again (empty, in our node's directory)
/// where the grant dropped it: a holder keeps none until it lists again.
macro_rules! our_queue {
    ($acquisition:expr) => {
        $acquisition.queue.get_or_insert_with(Box::default)
    };
}
use our_queue;

/// The directory our node is created and queued in: the lock's path, or for a
/// semaphore in Curator's or kazoo's layout its internal mutex (see [`lease`]).
/// Derived where needed (borrowing only the fields it reads), not kept: every
/// lock would pay for a copy.
macro_rules! node_dir {
    ($acquisition:expr) => {
        match &$acquisition.lease {
            Some(lease) => lease.mutex_dir(),
            None => $acquisition.spec.path.as_str(),
        }
    };
}
use node_dir;

/// What a part's reply handler asks of its acquisition: what the part could
/// not decide alone.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(in crate::acquisition) enum PartAsks {
    /// Nothing until a reply, a watch or a timer.
    Pending,
    /// What the grant waited for has come: try it again.
    Grant,
    /// A check on our node failed: it is gone.
    Lost,
    /// The acquisition cleans up: it goes on with that.
    Cleanup,
    /// The acquisition fails.
    Fail(FailReason),
    /// Trouble worth retrying after a pause.
    Trouble(ZkError),
}

/// What a decision to hold rests on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum GrantBasis {
    /// A listing just answered: our node was there when it was made.
    FreshListing,
    /// The cached lower set, after a notification.
    CachedLowerSet,
}

/// One acquisition, driven by the session. Calling order: `new` (then `downgrade_from` for a downgrade), `recover` once
/// connected (and after every reconnect), then inputs and user calls as they come
/// until `state` is [`State::Done`]. Every output goes through the [`Ctx`].
pub(crate) struct Acquisition {
    id: LockId,
    spec: LockSpec,
    /// A semaphore in Curator's or kazoo's layout: the lease taken once the
    /// internal mutex is ours (see [`lease`]).
    lease: Option<Box<Lease>>,
    state: State,
    /// Held but not trusted (disconnected, or the leader not proven to hear us).
    suspended: bool,
    /// Our node's life: its create, the reads of it, its delete, duplicates.
    node: Node,
    /// Our place in the queue: boxed, and dropped at the grant (made again by
    /// [`our_queue!`] for a listing after it), as a holder has no use for it.
    queue: Option<Box<Queue>>,
    /// What a holder does besides releasing: sections, the crash marker, fenced writes.
    sections_and_writes: SectionsAndWrites,
    /// Deadlock detection: the wait, the chase, the publication, a downgrade.
    detection: Detection,
    /// Lock-delay: our marker, and the wait after another holder's unclean end.
    delay: Delay,
}

impl Acquisition {
    pub(crate) fn new(id: LockId, spec: LockSpec, attempt: AttemptId) -> Self {
        let lease = Lease::for_spec(&spec, attempt).map(Box::new);
        Acquisition {
            id,
            spec,
            lease,
            state: State::Waiting,
            suspended: false,
            node: Node::new(attempt),
            queue: Some(Box::default()),
            sections_and_writes: SectionsAndWrites::default(),
            detection: Detection::default(),
            delay: Delay::default(),
        }
    }

    /// Makes this read acquisition a downgrade from the write nodes `names`, held
    /// by its owner on this session (see [`LockSpec::read`]).
    pub(crate) fn downgrade_from(&mut self, names: Vec<String>) {
        self.detection.downgrade = names;
    }

    // Getters.

    /// The path our sequential node is created at (the server appends the
    /// sequence): made for each create and its reply rather than kept.
    fn create_path(&self) -> String {
        let (spec, attempt) = (&self.spec, self.node.attempt);
        let prefix = match spec.recipe {
            // The internal mutex of a semaphore in a peer's layout.
            _ if self.lease.is_some() => node_prefix(spec.scheme, attempt, NodeKind::Write),
            Recipe::Semaphore { permits } => semaphore_node_prefix(spec.scheme, attempt, permits),
            _ if spec.rwlock => rwlock_node_prefix(spec.scheme, attempt, spec.recipe.node_kind()),
            _ => node_prefix(spec.scheme, attempt, spec.recipe.node_kind()),
        };
        format!("{}/{prefix}", node_dir!(self))
    }

    /// The full path of our node, once known.
    pub(crate) fn node_path(&self) -> Option<&str> {
        self.node.path()
    }

    pub(crate) fn state(&self) -> State {
        self.state
    }

    pub(crate) fn spec(&self) -> &LockSpec {
        &self.spec
    }

    pub(crate) fn is_suspended(&self) -> bool {
        self.suspended
    }

    /// Whether this acquisition holds without a watch on its node: the sync
    /// timer looks at it (see [`on_sync_timer`](Self::on_sync_timer)).
    pub(crate) fn is_unwatched_hold(&self) -> bool {
        self.state == State::Held && !self.node.own_watched
    }

    /// Whether this acquisition waits where one departure can let it in (one
    /// blocker left in its cached queue): the session keeps its proof of contact
    /// fresh for it, as for a holder.
    pub(crate) fn is_next_in_line(&self) -> bool {
        self.state == State::Waiting
            && self.node.own.is_some()
            && (self.queue.as_ref()).is_some_and(|q| q.place(self.walk_recipe()).position <= 1)
    }

    // Deadlock detection, called by the session after every call (see
    // [`detection`]).

    /// Where our owner waits, if we publish it: (owner, our waiting node).
    pub(crate) fn published_wait(&self) -> Option<(&str, String)> {
        let waiting = self.state == State::Waiting;
        self.detection.published_wait(waiting, identity!(self))
    }

    /// The node we hold, for our owner's chases.
    pub(crate) fn held_node(&self) -> Option<(&str, &str)> {
        match self.state {
            State::Held => Some((self.spec.rare().owner.as_deref()?, self.node.path()?)),
            _ => None,
        }
    }

    /// Tells a detecting waiter which nodes its owner holds on this session.
    pub(crate) fn set_owner_held(&mut self, held: &[String]) {
        self.detection.set_owner_held(&self.spec, held);
    }

    /// Publishes `waits` in our held node's header (or withdraws what is there).
    pub(crate) fn publish(&mut self, cx: &mut Ctx, waits: Vec<String>) {
        let trusted = self.state == State::Held && !self.suspended;
        let identity = identity!(self);
        self.detection.publish(cx, identity, trusted, waits);
    }

    /// Our node's path while we hold and are trusted: what a holder's request is
    /// fenced by.
    fn trusted_path(&self) -> Result<String, UsageError> {
        match (self.node.path(), self.state) {
            (Some(own), State::Held) if !self.suspended => Ok(own.to_owned()),
            _ => Err(UsageError::NotHeld(self.id)),
        }
    }

    // User calls of a holder (see [`holder`]).

    /// Marks a critical section as in progress, fenced by our node: if we no longer
    /// hold the lock, nothing is written.
    pub(crate) fn open_section(&mut self, cx: &mut Ctx) -> Result<(), UsageError> {
        let own = self.trusted_path()?;
        self.sections_and_writes
            .section(cx, identity!(self), own, true)
    }

    /// Closes the critical section (the work is consistent again).
    pub(crate) fn close_section(&mut self, cx: &mut Ctx) -> Result<(), UsageError> {
        let own = self.trusted_path()?;
        self.sections_and_writes
            .section(cx, identity!(self), own, false)
    }

    /// Applies `ops` atomically, only while our node exists.
    pub(crate) fn fenced_write(
        &mut self,
        cx: &mut Ctx,
        write: u64,
        ops: Vec<MultiOp>,
    ) -> Result<(), UsageError> {
        let own = self.trusted_path()?;
        self.sections_and_writes
            .fenced_write(cx, self.id, own, write, ops)
    }

    /// Our node is verified: a section call whose outcome was lost goes again.
    fn resend_section(&mut self, cx: &mut Ctx) {
        if let Ok(own) = self.trusted_path() {
            self.sections_and_writes
                .resend_section(cx, identity!(self), own);
        }
    }

    // Inputs, routed here by the session.

    pub(crate) fn on_reply(
        &mut self,
        cx: &mut Ctx,
        request: RequestId,
        purpose: Purpose,
        result: Result<Reply, ZkError>,
    ) {
        match purpose {
            Purpose::CreateParent => {}
            Purpose::CreateNode => self.on_create_reply(cx, request, result),
            Purpose::List => {
                if (self.queue.as_mut()).is_some_and(|q| q.list.take_reply(request)) {
                    self.on_list(cx, result);
                    self.drop_queue_if_held();
                }
            }
            Purpose::WatchPeer { name } => self.on_peer_data(cx, request, &name, result),
            Purpose::OwnData => {
                if self.node.own_read.take_reply(request) {
                    self.on_own_data(cx, result);
                }
            }
            Purpose::RemoveOwnWatch | Purpose::Inspect | Purpose::Break => {}
            Purpose::Chase => {
                let waiting = self.state == State::Waiting;
                if let Some(deadlock) = self.detection.on_chase_reply(cx, request, result, waiting)
                {
                    self.fail(cx, deadlock);
                }
            }
            Purpose::Publish => {
                let identity = identity!(self);
                self.detection
                    .on_publish_reply(cx, identity, request, &result);
            }
            Purpose::DeleteOwn => {
                if self.node.delete.take_reply(request) {
                    self.on_delete(cx, result);
                }
            }
            Purpose::MarkerCheck => {
                if self.sections_and_writes.take_marker_check(request)
                    && self.state == State::Granting
                {
                    match self.sections_and_writes.on_marker_check(result) {
                        Ok(()) => self.grant_again(cx),
                        Err(e) => self.trouble(cx, e),
                    }
                }
            }
            Purpose::DelayMarker { .. } | Purpose::DelayRead => {
                if self.delay.take_reply(request) && self.state == State::Granting {
                    let identity = identity!(self);
                    let outcome = self.delay.on_reply(cx, identity, purpose, result);
                    self.act_on(cx, outcome);
                }
            }
            Purpose::Section { open } => {
                if self.sections_and_writes.take_section_reply(request) && self.state == State::Held
                {
                    let own = self.trusted_path().ok();
                    let identity = identity!(self);
                    let outcome = self
                        .sections_and_writes
                        .on_section_reply(cx, identity, own, open, result);
                    self.act_on(cx, outcome);
                }
            }
            Purpose::FencedWrite { write } => {
                let outcome = self
                    .sections_and_writes
                    .on_fenced_reply(cx, self.id, request, write, result);
                self.act_on(cx, outcome);
            }
            Purpose::LeaseCreate | Purpose::LeaseList | Purpose::PoolData | Purpose::PoolCreate => {
                self.on_lease_reply(cx, request, purpose, result)
            }
            Purpose::DeleteExtra { path } => match self.node.on_extra_reply(&path, result) {
                Ok(()) => {
                    if self.state == State::Cleanup {
                        self.continue_cleanup(cx);
                    }
                }
                Err(e) => self.trouble(cx, e),
            },
        }
    }

    pub(crate) fn on_watch(&mut self, cx: &mut Ctx, path: &str, kind: WatchKind) {
        if self.node.own.as_ref().is_some_and(|o| &*o.path == path) {
            // While disconnected, a late firing may stem from a session expiry we have
            // not heard of yet: the check after the reconnect gives the true reason.
            if matches!(self.state, State::Cleanup | State::Done) || !cx.connected {
                return;
            }
            self.node.own_watched = false;
            return match kind {
                WatchKind::NodeDeleted => self.own_gone(cx, LostReason::NodeDeleted),
                // Data changed (a revocation request?): look, and watch again.
                _ => {
                    self.node.revocation_seen = false;
                    self.node.send_read(cx, self.id, true)
                }
            };
        }
        if self.on_pool_watch(cx, path) {
            return;
        }
        let (parent, name) = split_parent(path);
        let Some(queue) = self.queue.as_deref_mut() else {
            return;
        };
        if parent != node_dir!(self) || self.state != State::Waiting {
            return;
        }
        match kind {
            WatchKind::NodeDeleted if queue.blocks_with(name) => {
                cx.stats.handoff_notifications += 1;
                let name = name.to_owned();
                self.peer_gone(cx, &name);
            }
            // Any other firing on a watched peer (data changed, or a kind a data
            // watch never gets, which adapters may still pass on) spends our entry
            // in the watch index, though the server may still hold a watch there
            // for another task: set it again, or the peer's deletion would reach
            // nobody and we would wait behind a node that is gone.
            _ => {
                // Someone may have published a wait there: chase now.
                let dir = node_dir!(self);
                if queue.on_peer_fired(cx, self.id, dir, name) && kind == WatchKind::NodeDataChanged
                {
                    let identity = identity!(self);
                    self.detection.on_blocker_changed(cx, identity);
                }
            }
        }
    }

    /// The session's sync timer fired (about once a sync interval while a lock is
    /// held, whether a `sync` went out or the session's other requests made one
    /// unnecessary): a holder that has held for `interval` and whose node is not
    /// watched yet (an uncontended grant on a client that gave the stat with
    /// `create`) watches it now. So a hold hears of its node's deletion at once
    /// from at most two intervals after its grant, at one read per hold that
    /// long; a shorter hold costs nothing and learns of it at its release or its
    /// next fenced write.
    pub(crate) fn on_sync_timer(&mut self, cx: &mut Ctx, interval: std::time::Duration) {
        let held_long = self.sections_and_writes.held_for(cx.now, interval);
        if self.state == State::Held
            && held_long
            && !self.suspended
            && !self.node.own_watched
            && !self.node.own_read.is_pending()
        {
            self.node.send_read(cx, self.id, true);
        }
    }

    /// See [`Session::look_again`](crate::Session::look_again).
    pub(crate) fn look_again(&mut self, cx: &mut Ctx) {
        if self.state == State::Waiting
            && cx.connected
            && self.node.own.is_some()
            && !our_queue!(self).list.is_pending()
        {
            our_queue!(self).send_list(cx, self.id, node_dir!(self));
        }
    }

    /// Acts on what a part's reply handler asks (see [`PartAsks`]).
    fn act_on(&mut self, cx: &mut Ctx, asks: PartAsks) {
        match asks {
            PartAsks::Pending => {}
            PartAsks::Grant => self.grant_again(cx),
            PartAsks::Lost => self.own_gone(cx, LostReason::NodeDeleted),
            PartAsks::Cleanup => self.continue_cleanup(cx),
            PartAsks::Fail(reason) => self.fail(cx, reason),
            PartAsks::Trouble(e) => self.trouble(cx, e),
        }
    }

    /// The reply to a blocker's watch.
    pub(super) fn on_peer_data(
        &mut self,
        cx: &mut Ctx,
        request: RequestId,
        name: &str,
        result: Result<Reply, ZkError>,
    ) {
        let Some(queue) = self.queue.as_deref_mut() else {
            return; // held: the watch no longer matters
        };
        match queue.on_peer_reply(request, name, result) {
            PeerOutcome::Done => {}
            PeerOutcome::Gone => self.peer_gone(cx, name),
            PeerOutcome::Trouble(e) => self.trouble(cx, e),
            PeerOutcome::Failed(e) => self.fail(cx, FailReason::Zk(e)),
        }
    }

    // The lease (see [`lease`](super::lease)): a semaphore in a peer's layout,
    // whose walk is its internal mutex.

    /// The kind of walk our node makes in its queue's directory: the semaphore's
    /// own recipe, or for a semaphore in a peer's layout its internal mutex.
    pub(super) fn walk_recipe(&self) -> Recipe {
        match self.lease {
            Some(_) => Recipe::Write,
            None => self.spec.recipe,
        }
    }

    /// A watch fired on `path`; true if it was the pool's children watch.
    pub(super) fn on_pool_watch(&mut self, cx: &mut Ctx, path: &str) -> bool {
        let waiting = self.state == State::Waiting;
        match self.lease.as_deref_mut() {
            Some(lease) => lease.on_pool_watch(cx, self.id, path, waiting),
            None => false,
        }
    }

    /// A reply to one of the lease's requests (acted on by the lease as far as
    /// it and our node go).
    pub(super) fn on_lease_reply(
        &mut self,
        cx: &mut Ctx,
        request: RequestId,
        purpose: Purpose,
        result: Result<Reply, ZkError>,
    ) {
        let Some(lease) = self.lease.as_deref_mut() else {
            return;
        };
        let step = LeaseCaller {
            id: self.id,
            waiting: self.state == State::Waiting,
            cleanup: self.state == State::Cleanup,
            spec: &self.spec,
            node: &mut self.node,
        };
        let asks = lease.on_reply(cx, step, request, purpose, result);
        self.act_on(cx, asks);
    }

    pub(crate) fn on_timer(&mut self, cx: &mut Ctx, kind: TimerKind) {
        match kind {
            TimerKind::Deadline => {
                if matches!(self.state, State::Waiting | State::Granting) {
                    self.fail(cx, FailReason::Timeout);
                }
            }
            TimerKind::Grace => {
                if self.state == State::Held && self.suspended {
                    self.terminal(cx, LockEvent::Lost(LostReason::SuspendedTooLong));
                }
            }
            TimerKind::Retry => {
                if cx.connected {
                    self.recover(cx);
                }
            }
            TimerKind::Detect => {
                let waiting = self.state == State::Waiting;
                let identity = identity!(self);
                self.detection.on_timer(cx, identity, waiting);
            }
            // The delay is over: the grant goes on (taking the marker over).
            TimerKind::LockDelay => {
                if self.state == State::Granting && cx.connected {
                    self.grant_again(cx);
                }
            }
            TimerKind::Lease => {
                if self.state == State::Held {
                    self.terminal(cx, LockEvent::Lost(LostReason::LeaseExpired));
                }
            }
            // The session's own.
            TimerKind::Sync | TimerKind::Contact => {}
        }
    }
}

//! [`Session`]: every lock of one ZooKeeper session, multiplexed in one state machine.

use crate::acquisition::{Acquisition, Ended, State};
use crate::contact::Contact;
use crate::ctx::Ctx;
use crate::deadlock::scan::Scan;
use crate::event::{FailReason, UsageError};
use crate::ids::LockId;
use crate::inspect::Inspect;
use crate::limits;
use crate::names::{AttemptId, NameScheme};
use crate::observer::Observer;
use crate::oneshot::OneShot;
use crate::output::Output;
use crate::path::validate_lock_path;
use crate::proto::MultiOp;
use crate::proto::{Input, Op, Request, SessionEvent};
use crate::requests::RequestBook;
use crate::revoke::Revoke;
use crate::rng::SplitMix64;
use crate::spec::{Config, LockSpec, Recipe};
use crate::stats::Stats;
use crate::time::Timestamp;
use crate::timers::{TimerKind, Timers};
use crate::watches::WatchIndex;
use std::collections::{BTreeMap, VecDeque};

/// Whether `spec` (to acquire) is the read half of the read/write lock whose write
/// half `held` its owner holds: a downgrade, which does not queue behind that
/// write (Curator's rule). A mutex's owner taking the read half waits as before.
fn is_downgrade(spec: &LockSpec, held: &LockSpec) -> bool {
    spec.recipe == Recipe::Read && spec.rwlock && held.recipe == Recipe::Write && held.rwlock
}

/// What an acquisition is doing, for status queries.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum LockState {
    /// Not held yet.
    Waiting,
    /// Held and trusted.
    Held,
    /// Held, but the connection is down: not trusted until resumed.
    Suspended,
    /// Released by the user; the node is being deleted.
    Releasing,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Conn {
    /// No session yet (new, or the previous one expired).
    NoSession,
    Connected(i64),
    Disconnected(i64),
    Closed,
}

/// One unit of work on the session, addressed by a [`LockId`].
enum Task {
    Acquisition(Box<Acquisition>),
    Observer(Observer),
    Revoke(Revoke),
    Inspect(Inspect),
    Scan(Scan),
}

impl Task {
    fn is_done(&self) -> bool {
        match self {
            Task::Acquisition(a) => a.state() == State::Done,
            Task::Observer(o) => o.done,
            Task::Revoke(r) => r.done,
            Task::Inspect(i) => i.done,
            Task::Scan(s) => s.done,
        }
    }

    fn recover(&mut self, cx: &mut Ctx) {
        match self {
            Task::Acquisition(a) => a.recover(cx),
            Task::Observer(o) => o.recover(cx),
            Task::Revoke(r) => r.recover(cx),
            Task::Inspect(i) => i.recover(cx),
            Task::Scan(s) => s.recover(cx),
        }
    }

    fn acquisition(&self) -> Option<&Acquisition> {
        match self {
            Task::Acquisition(a) => Some(a),
            _ => None,
        }
    }
}

/// Every lock protocol of one ZooKeeper session, as a sans-IO state machine.
///
/// # Calling contract
///
/// The adapter owns one `Session` per ZooKeeper client and follows these rules:
///
/// 1. **Connect.** Feed [`SessionEvent::Connected`] with the session id once the client is
///    connected. Nothing is sent before; acquisitions made earlier wait.
/// 2. **Drain after every call.** After [`acquire`](Self::acquire), [`release`](Self::release),
///    [`cancel`](Self::cancel), [`handle_input`](Self::handle_input) and
///    [`handle_timeout`](Self::handle_timeout), call [`poll_output`](Self::poll_output) until it
///    returns `None`. Send each [`Output::Request`] in the order polled, without waiting
///    for replies (the core pipelines and relies on ZooKeeper's per-session FIFO
///    order); hand each [`Output::Event`] to the user.
/// 3. **Echo replies.** Feed the outcome of every request as [`Input::Reply`] with its
///    [`RequestId`](crate::RequestId); replies for unknown or forgotten ids are ignored
///    (and counted in [`Stats::stale_replies`]).
/// 4. **Forward watches** as [`Input::Watch`] and **session changes** as
///    [`Input::Session`]. Report [`SessionEvent::Disconnected`] no later than 2/3 of the
///    session timeout after the last contact with the server, with the time since that
///    contact: held locks are lost a margin before the server could expire the
///    session ([`Config::lost_window`](crate::Config::lost_window)). A `Connected` with
///    a new session id means the old session expired.
/// 5. **Time.** Pass a monotonic `now` to every call and call `handle_timeout(now)` once
///    `now >= poll_timeout()`.
///
/// Misuse returns a [`UsageError`] and changes nothing; trouble with ZooKeeper turns
/// into [`LockEvent`](crate::LockEvent)s. Every acquisition ends in exactly one terminal event.
///
/// ```
/// use lock_core::*;
/// use std::time::Duration;
///
/// let mut s = Session::new(Config::new(Duration::from_secs(10), 7));
/// let now = Timestamp::ZERO;
/// s.handle_input(Input::Session(SessionEvent::Connected { session_id: 1 }), now);
/// let lock = s.acquire(LockSpec::write("/locks/job"), now).unwrap();
/// // Create and GetChildren come out back to back: one round trip.
/// let mut sent = Vec::new();
/// while let Some(out) = s.poll_output() {
///     if let Output::Request(r) = out { sent.push(r) }
/// }
/// assert!(matches!(sent[0].op, Op::Create { .. }));
/// assert!(matches!(sent[1].op, Op::GetChildren { .. }));
/// // The server answers: our node, then a listing with only our node.
/// let path = match &sent[0].op { Op::Create { path, .. } => format!("{path}0000000000"), _ => unreachable!() };
/// let name = path.rsplit('/').next().unwrap().to_owned();
/// let stat = Stat { czxid: 42, ephemeral_owner: 1, ..Stat::default() };
/// s.handle_input(Input::Reply { request: sent[0].id, result: Ok(Reply::Created { path, stat: Some(stat) }) }, now);
/// s.handle_input(Input::Reply { request: sent[1].id, result: Ok(Reply::Children(vec![name])) }, now);
/// let acquired = std::iter::from_fn(|| s.poll_output()).any(|o| matches!(
///     o, Output::Event { event: LockEvent::Acquired(g), .. } if g.token == FencingToken(42)));
/// assert!(acquired);
/// # let _ = lock;
/// ```
pub struct Session {
    config: Config,
    conn: Conn,
    tasks: BTreeMap<LockId, Task>,
    requests: RequestBook,
    timers: Timers,
    watches: WatchIndex,
    out: VecDeque<Output>,
    rng: SplitMix64,
    next_id: u64,
    next_write: u64,
    stats: Stats,
    /// Some acquisition detects deadlocks: publications must follow waits.
    detection: bool,
    /// When the leader last heard from the session, as far as is proven.
    contact: Contact,
}

/// The timers of the session itself (not of a task) are filed under this id, which
/// no task gets (task ids start at 1).
const SESSION_TIMERS: LockId = LockId(0);

impl Session {
    /// A session with no lock and no connection yet.
    pub fn new(config: Config) -> Session {
        let rng = SplitMix64::new(config.seed);
        Session {
            config,
            conn: Conn::NoSession,
            tasks: BTreeMap::new(),
            requests: RequestBook::default(),
            timers: Timers::default(),
            watches: WatchIndex::default(),
            out: VecDeque::new(),
            rng,
            next_id: 0,
            next_write: 0,
            stats: Stats::default(),
            detection: false,
            contact: Contact::default(),
        }
    }

    /// Starts an acquisition. Its progress comes as events for the returned id.
    ///
    /// Bad input (an invalid path, oversized data, a semaphore of 0 permits, a leader
    /// without a participant id, crash detection on a shared recipe) is refused here,
    /// before anything is sent.
    pub fn acquire(&mut self, spec: LockSpec, now: Timestamp) -> Result<LockId, UsageError> {
        self.check_open()?;
        validate_lock_path(&spec.path)?;
        // A peer's semaphore layout nests its nodes deeper than the lock path.
        let room = limits::room_for_data(
            self.config.max_packet,
            &crate::acquisition::lease::longest_dir(&spec),
        )?;
        // The owner header counts toward the data size.
        let len = crate::owner::node_data(spec.scheme, spec.owner.as_deref(), &spec.data).len();
        if len > room {
            return Err(UsageError::DataTooLarge { len, max: room });
        }
        match spec.recipe {
            Recipe::Semaphore { permits: 0 } => return Err(UsageError::ZeroPermits),
            // A peer's semaphore layout (a lease pool behind an internal mutex, see
            // acquisition::lease) has no place for published waits.
            Recipe::Semaphore { .. }
                if spec.scheme != NameScheme::Native && spec.detect_after.is_some() =>
            {
                return Err(UsageError::Unsupported(
                    "deadlock detection on a semaphore needs NameScheme::Native",
                ))
            }
            Recipe::Leader if spec.data.is_empty() => return Err(UsageError::EmptyParticipant),
            _ => {}
        }
        if spec.detect_crashes && !matches!(spec.recipe, Recipe::Write | Recipe::Leader) {
            return Err(UsageError::Unsupported(
                "crash detection needs an exclusive recipe",
            ));
        }
        if spec.detect_after.is_some() {
            if spec.owner.is_none() {
                return Err(UsageError::Unsupported(
                    "deadlock detection needs an owner (LockSpec::owner)",
                ));
            }
            // The kazoo scheme carries the owner as the node's data (kazoo's
            // identifier), and chases infer where such an owner waits.
            let kazoo_owner = spec.scheme == NameScheme::Kazoo && spec.data.is_empty();
            if spec.scheme != NameScheme::Native && !kazoo_owner {
                return Err(UsageError::Unsupported(
                    "deadlock detection needs NameScheme::Native, or NameScheme::Kazoo without data (the owner is the node's data)",
                ));
            }
            self.detection = true;
        }
        self.check_self_deadlock(&spec)?;
        let downgrade = self.downgrade_from(&spec);
        let id = self.new_id();
        let attempt = AttemptId(self.rng.next_u128()).as_uuid_v4();
        if let Some(deadline) = spec.deadline {
            self.timers.set(id, TimerKind::Deadline, deadline);
        }
        let mut acquisition = Acquisition::new(id, spec, attempt);
        acquisition.downgrade_from(downgrade);
        self.start(id, Task::Acquisition(Box::new(acquisition)), now);
        // A deadline already past fails at once rather than at the next timeout call.
        self.handle_timeout(now);
        Ok(id)
    }

    /// Follows the leader of the election at `path` without taking part: reports
    /// [`LockEvent::LeaderChanged`](crate::LockEvent::LeaderChanged) now and at every change, until
    /// [`cancel`](Self::cancel)led (then [`FailReason::Cancelled`]).
    pub fn observe(&mut self, path: &str, now: Timestamp) -> Result<LockId, UsageError> {
        self.check_open()?;
        validate_lock_path(path)?;
        limits::room_for_data(self.config.max_packet, path)?;
        let id = self.new_id();
        self.start(id, Task::Observer(Observer::new(id, path.to_owned())), now);
        Ok(id)
    }

    /// Asks the holders of the lock at `path` (or, for a participant node's path,
    /// that node's owner, waiting or holding) to let go, by writing `__REVOKE__` to
    /// their node. Ends with [`LockEvent::RevocationSent`](crate::LockEvent::RevocationSent) naming the nodes asked.
    pub fn revoke(&mut self, path: &str, now: Timestamp) -> Result<LockId, UsageError> {
        self.check_open()?;
        validate_lock_path(path)?;
        limits::room_for_data(self.config.max_packet, path)?;
        let id = self.new_id();
        self.start(id, Task::Revoke(Revoke::new(id, path.to_owned())), now);
        Ok(id)
    }

    /// Lists the holders and waiters of the lock at `path`, in queue order, with
    /// their owners, sessions, ages and tokens, and what each waiter waits for: one
    /// pipelined round trip (a listing, then a `getData` per participant, no
    /// watches). Ends with [`LockEvent::Participants`](crate::LockEvent::Participants).
    pub fn inspect(&mut self, path: &str, now: Timestamp) -> Result<LockId, UsageError> {
        self.check_open()?;
        validate_lock_path(path)?;
        limits::room_for_data(self.config.max_packet, path)?;
        let id = self.new_id();
        self.start(id, Task::Inspect(Inspect::new(id, path.to_owned())), now);
        Ok(id)
    }

    /// Scans the lock directories under `root` (the root itself and its direct
    /// children) for deadlocks, and ends with [`LockEvent::Deadlocks`](crate::LockEvent::Deadlocks): one cycle of
    /// waits per deadlock, each node with its owner, session, token and age. Every
    /// edge is read twice (see [`crate::deadlock`]); cycles through participants of
    /// any client count, as long as their owners are named in their data.
    pub fn deadlocks(&mut self, root: &str, now: Timestamp) -> Result<LockId, UsageError> {
        self.check_open()?;
        validate_lock_path(root)?;
        limits::room_for_data(self.config.max_packet, root)?;
        let id = self.new_id();
        self.start(id, Task::Scan(Scan::new(id, root.to_owned())), now);
        Ok(id)
    }

    /// An owner never waits behind its own node: a waiting acquisition of a single
    /// permit that a node the same owner holds on the path would block can only
    /// end by timing out. A try-only acquisition cannot wait, so it is let through.
    fn check_self_deadlock(&self, spec: &LockSpec) -> Result<(), UsageError> {
        let Some(owner) = spec.owner.as_deref() else {
            return Ok(());
        };
        if !spec.wait || spec.recipe.permits() != 1 {
            return Ok(());
        }
        let held = self.tasks.values().filter_map(Task::acquisition).find(|a| {
            let other = a.spec();
            other.path == spec.path
                && other.owner.as_deref() == Some(owner)
                && matches!(a.state(), State::Held | State::Granting)
                && spec.recipe.is_blocked_by(other.recipe.node_kind())
                && !is_downgrade(spec, other)
        });
        match held {
            Some(a) => Err(UsageError::SelfDeadlock {
                path: spec.path.clone(),
                owner: owner.to_owned(),
                held: a.spec().recipe.node_kind(),
            }),
            None => Ok(()),
        }
    }

    /// For a read that downgrades (see [`is_downgrade`]): the names of the write
    /// nodes its owner holds on the path, which do not block it.
    fn downgrade_from(&self, spec: &LockSpec) -> Vec<String> {
        if spec.owner.is_none() {
            return Vec::new();
        }
        self.tasks
            .values()
            .filter_map(Task::acquisition)
            .filter(|a| {
                let other = a.spec();
                other.path == spec.path
                    && other.owner == spec.owner
                    && matches!(a.state(), State::Held | State::Granting)
                    && is_downgrade(spec, other)
            })
            .filter_map(|a| a.node_path())
            .map(|p| crate::path::split_parent(p).1.to_owned())
            .collect()
    }

    fn check_open(&self) -> Result<(), UsageError> {
        match self.conn {
            Conn::Closed => Err(UsageError::Closed),
            _ => Ok(()),
        }
    }

    fn new_id(&mut self) -> LockId {
        self.next_id += 1;
        LockId(self.next_id)
    }

    fn start(&mut self, id: LockId, task: Task, now: Timestamp) {
        self.tasks.insert(id, task);
        self.with_task(id, now, |t, cx| {
            if cx.connected {
                t.recover(cx);
            }
        });
    }

    /// Releases a held lock: deletes its node (retrying across reconnects) and reports
    /// [`LockEvent::Released`](crate::LockEvent::Released), or [`LockEvent::Lost`](crate::LockEvent::Lost) with
    /// [`NodeDeleted`](crate::LostReason::NodeDeleted) if someone else had deleted the
    /// node (found by the first delete; after a delete whose outcome was unknown, a
    /// missing node counts as released). A lock that is not held gives [`UsageError::NotHeld`]
    /// (use [`cancel`](Self::cancel) to give up waiting).
    pub fn release(&mut self, id: LockId, now: Timestamp) -> Result<(), UsageError> {
        match self.tasks.get(&id) {
            None => Err(UsageError::UnknownLock(id)),
            Some(t) => match t.acquisition().map(Acquisition::state) {
                Some(State::Held) => self.with_acquisition(id, now, |a, cx| {
                    a.release(cx);
                    Ok(())
                }),
                _ => Err(UsageError::NotHeld(id)),
            },
        }
    }

    /// Lets go of a held lock without closing its open critical section (a guard
    /// dropped inside a section, as by a holder that crashed there): its node is
    /// deleted and the acquisition ends with [`LockEvent::Released`](crate::LockEvent::Released), but the
    /// section marker stays, so the next holder sees
    /// [`Grant::previous_holder_crashed`](crate::Grant::previous_holder_crashed).
    /// Without an open section this is [`release`](Self::release).
    pub fn abandon(&mut self, id: LockId, now: Timestamp) -> Result<(), UsageError> {
        match self.tasks.get(&id) {
            None => Err(UsageError::UnknownLock(id)),
            Some(t) => match t.acquisition().map(Acquisition::state) {
                Some(State::Held) => self.with_acquisition(id, now, |a, cx| {
                    a.abandon(cx);
                    Ok(())
                }),
                _ => Err(UsageError::NotHeld(id)),
            },
        }
    }

    /// Gives up: a waiting acquisition fails with [`FailReason::Cancelled`] and its
    /// node (even one whose create is still in flight) is removed in the background;
    /// a held one is released; an observer or revocation stops. Cancelling an ended
    /// one is a no-op.
    pub fn cancel(&mut self, id: LockId, now: Timestamp) -> Result<(), UsageError> {
        if !self.tasks.contains_key(&id) {
            return Err(UsageError::UnknownLock(id));
        }
        self.with_task(id, now, |t, cx| match t {
            Task::Acquisition(a) => match a.state() {
                State::Held => a.release(cx),
                State::Waiting | State::Granting => a.fail(cx, FailReason::Cancelled),
                _ => {}
            },
            Task::Observer(o) => o.stop(cx, FailReason::Cancelled),
            Task::Revoke(r) => r.stop(cx, FailReason::Cancelled),
            Task::Inspect(i) => i.stop(cx, FailReason::Cancelled),
            Task::Scan(s) => s.stop(cx, FailReason::Cancelled),
        });
        Ok(())
    }

    /// Opens a critical section on a held lock with crash detection: a marker
    /// (fenced by our node) tells the next holder if we die before a clean
    /// [`release`](Self::release) or [`close_section`](Self::close_section).
    /// Reports [`LockEvent::SectionOpened`](crate::LockEvent::SectionOpened).
    pub fn open_section(&mut self, id: LockId, now: Timestamp) -> Result<(), UsageError> {
        self.with_acquisition(id, now, |a, cx| a.open_section(cx))
    }

    /// Closes the critical section; reports [`LockEvent::SectionClosed`](crate::LockEvent::SectionClosed).
    pub fn close_section(&mut self, id: LockId, now: Timestamp) -> Result<(), UsageError> {
        self.with_acquisition(id, now, |a, cx| a.close_section(cx))
    }

    /// Applies `ops` in one `multi` with a `check` on our lock node, so they apply
    /// only while we hold the lock. The outcome comes as [`LockEvent::FencedWrite`](crate::LockEvent::FencedWrite)
    /// with the returned id. Refused with [`UsageError::NotHeld`] unless held and
    /// connected.
    pub fn fenced_write(
        &mut self,
        id: LockId,
        ops: Vec<MultiOp>,
        now: Timestamp,
    ) -> Result<u64, UsageError> {
        let write = self.next_write + 1;
        self.with_acquisition(id, now, |a, cx| a.fenced_write(cx, write, ops))?;
        self.next_write = write;
        Ok(write)
    }

    /// Feeds a reply, a watch firing or a session change.
    pub fn handle_input(&mut self, input: Input, now: Timestamp) {
        match input {
            Input::Reply { request, result } => {
                // Every answer counts as contact, even one nobody waits for any more.
                let own_sync = self.contact.is_own_sync(request);
                self.on_contact_reply(request, &result, now);
                if own_sync {
                    return;
                }
                match self.requests.take(request) {
                    None => self.stats.stale_replies += 1,
                    Some((lock, purpose)) => self.with_task(lock, now, |t, cx| match t {
                        Task::Acquisition(a) => a.on_reply(cx, request, purpose, result),
                        Task::Observer(o) => o.on_reply(cx, request, purpose, result),
                        Task::Revoke(r) => r.on_reply(cx, request, purpose, result),
                        Task::Inspect(i) => i.on_reply(cx, request, purpose, result),
                        Task::Scan(s) => s.on_reply(cx, request, result),
                    }),
                }
            }
            // Only the tasks that set this watch hear it: a release wakes its
            // successor, not every waiter of the session.
            Input::Watch { path, kind } => {
                for lock in self.watches.take(&path) {
                    self.with_task(lock, now, |t, cx| match t {
                        Task::Acquisition(a) => a.on_watch(cx, &path, kind),
                        Task::Observer(o) => o.on_watch(cx, &path, kind),
                        Task::Revoke(_) | Task::Inspect(_) | Task::Scan(_) => {}
                    });
                }
            }
            Input::Session(event) => self.on_session(event, now),
        }
    }

    fn on_session(&mut self, event: SessionEvent, now: Timestamp) {
        match (event, self.conn) {
            (_, Conn::Closed) => {}
            (
                SessionEvent::Connected { session_id },
                Conn::Connected(old) | Conn::Disconnected(old),
            ) if old != session_id => {
                // A different session: the old one is gone for us, though perhaps
                // not yet on the server: its nodes are deleted from this one.
                self.end_session(now, Ended::Abandoned);
                self.on_connected(session_id, now);
            }
            (SessionEvent::Connected { session_id }, _) => self.on_connected(session_id, now),
            (SessionEvent::Disconnected { since_contact }, Conn::Connected(id)) => {
                self.conn = Conn::Disconnected(id);
                self.requests.forget_all();
                self.contact.forget_connection();
                self.timers.cancel(SESSION_TIMERS, TimerKind::Sync);
                self.timers.cancel_kind(TimerKind::Retry);
                // Held locks are lost before the server could expire the session:
                // counted from the last contact, not from this report, and from
                // the last contact proven to have reached the leader if known.
                let reported = now + self.config.lost_window(since_contact);
                let lost_at = self
                    .contact
                    .trusted_until(&self.config)
                    .map_or(reported, |until| until.min(reported));
                self.for_each_task(now, |t, cx| {
                    if let Task::Acquisition(a) = t {
                        a.on_disconnected(cx, lost_at)
                    }
                });
            }
            (SessionEvent::Disconnected { .. }, _) => {}
            (SessionEvent::Expired, _) => self.end_session(now, Ended::Expired),
            (SessionEvent::Abandoned, _) => self.end_session(now, Ended::Abandoned),
            (SessionEvent::Closed, _) => {
                self.end_session(now, Ended::Closed);
                self.conn = Conn::Closed;
            }
        }
    }

    fn on_connected(&mut self, session_id: i64, now: Timestamp) {
        self.conn = Conn::Connected(session_id);
        self.contact.on_connected(now);
        self.timers.cancel(SESSION_TIMERS, TimerKind::Sync);
        if self.config.sync_interval.is_some() {
            self.arm_contact();
            self.arm_sync();
        }
        self.for_each_task(now, |t, cx| t.recover(cx));
    }

    /// A reply, for what it proves of the leader's contact (see [`crate::contact`]).
    fn on_contact_reply<T>(
        &mut self,
        request: crate::proto::RequestId,
        result: &Result<T, crate::proto::ZkError>,
        now: Timestamp,
    ) {
        if self.config.sync_interval.is_none() {
            return;
        }
        if self.contact.on_reply(&self.config, request, result, now) {
            self.arm_contact();
            if self.contact.is_fresh(&self.config, now) {
                self.for_each_task(now, |t, cx| {
                    if let Task::Acquisition(a) = t {
                        a.on_contact_renewed(cx);
                    }
                });
            }
        }
        self.arm_sync();
    }

    /// Arms the session's next `sync` unless it is armed already (a timer that
    /// fires early finds out and arms again: sends only ever make it later).
    fn arm_sync(&mut self) {
        if self.timers.is_armed(SESSION_TIMERS, TimerKind::Sync) || !self.is_connected() {
            return;
        }
        if let Some(at) = self.contact.next_sync(&self.config) {
            self.timers.set(SESSION_TIMERS, TimerKind::Sync, at);
        }
    }

    /// Arms the suspension of held locks for want of a newer proof of contact.
    fn arm_contact(&mut self) {
        match self.contact.suspend_at(&self.config) {
            Some(at) => self.timers.set(SESSION_TIMERS, TimerKind::Contact, at),
            None => self.timers.cancel(SESSION_TIMERS, TimerKind::Contact),
        }
    }

    fn on_session_timer(&mut self, kind: TimerKind, now: Timestamp) {
        match kind {
            TimerKind::Sync if self.is_connected() => match self.contact.next_sync(&self.config) {
                Some(at) if at <= now => {
                    let id = self.requests.mint();
                    let op = Op::Sync { path: "/".into() };
                    self.contact.on_sync_sent(&self.config, id, &op, now);
                    self.stats.requests += 1;
                    self.out.push_back(Output::Request(Request { id, op }));
                }
                Some(at) => self.timers.set(SESSION_TIMERS, TimerKind::Sync, at),
                None => {}
            },
            TimerKind::Contact => {
                // No newer proof came in time: held locks are no longer trusted
                // (locks granted from now on are suspended as they are granted).
                if let Some(lost_at) = self.contact.trusted_until(&self.config) {
                    self.for_each_task(now, |t, cx| {
                        if let Task::Acquisition(a) = t {
                            a.suspend(cx, lost_at);
                        }
                    });
                }
            }
            _ => {}
        }
    }

    fn end_session(&mut self, now: Timestamp, how: Ended) {
        let closed = how == Ended::Closed;
        self.requests.forget_all();
        self.contact.on_session_ended();
        self.timers.cancel(SESSION_TIMERS, TimerKind::Sync);
        self.timers.cancel(SESSION_TIMERS, TimerKind::Contact);
        self.timers.cancel_kind(TimerKind::Retry);
        self.timers.cancel_kind(TimerKind::Grace);
        // Events for the old session's locks carry its id; then there is none.
        // Nothing is sent meanwhile: deletions wait for the next session.
        if let Conn::Connected(id) = self.conn {
            self.conn = Conn::Disconnected(id);
        }
        self.for_each_task(now, |t, cx| match t {
            Task::Acquisition(a) => a.on_session_ended(cx, how),
            // Observers and revocations own no node: they go on with the next session.
            Task::Observer(o) if closed => o.stop(cx, FailReason::Closed),
            Task::Revoke(r) if closed => r.stop(cx, FailReason::Closed),
            Task::Inspect(i) if closed => i.stop(cx, FailReason::Closed),
            Task::Scan(s) if closed => s.stop(cx, FailReason::Closed),
            _ => {}
        });
        self.conn = Conn::NoSession;
    }

    /// Fires every timer due at `now`.
    pub fn handle_timeout(&mut self, now: Timestamp) {
        while let Some((lock, kind)) = self.timers.pop_due(now) {
            if lock == SESSION_TIMERS {
                self.on_session_timer(kind, now);
                continue;
            }
            self.with_task(lock, now, |t, cx| match t {
                Task::Acquisition(a) => a.on_timer(cx, kind),
                Task::Observer(o) => o.on_timer(cx, kind),
                Task::Revoke(r) => r.on_timer(cx, kind),
                Task::Inspect(i) => i.on_timer(cx, kind),
                Task::Scan(s) => s.on_timer(cx, kind),
            });
        }
    }

    /// The next output, if any. Drain until `None` after every call.
    #[must_use]
    pub fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    /// When [`handle_timeout`](Self::handle_timeout) must next be called, if ever.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        self.timers.next()
    }

    /// The current session id, if connected or suspended on one.
    pub fn session_id(&self) -> Option<i64> {
        match self.conn {
            Conn::Connected(id) | Conn::Disconnected(id) => Some(id),
            Conn::NoSession | Conn::Closed => None,
        }
    }

    /// Whether the connection is currently up.
    pub fn is_connected(&self) -> bool {
        matches!(self.conn, Conn::Connected(_))
    }

    /// What an acquisition is doing; `None` once it has ended for the user (or for
    /// observers and revocations).
    pub fn state(&self, id: LockId) -> Option<LockState> {
        let a = self.tasks.get(&id)?.acquisition()?;
        Some(match a.state() {
            State::Waiting | State::Granting => LockState::Waiting,
            State::Held if a.is_suspended() => LockState::Suspended,
            State::Held => LockState::Held,
            State::Releasing => LockState::Releasing,
            State::Cleanup | State::Done => return None,
        })
    }

    /// True when nothing is in progress: no acquisition, observer or revocation, no
    /// node of ours awaiting deletion, no output undrained.
    pub fn is_idle(&self) -> bool {
        self.tasks.is_empty() && self.out.is_empty()
    }

    /// Tasks still tracked, including acquisitions cleaning up in the background.
    pub fn tracked(&self) -> usize {
        self.tasks.len()
    }

    /// Requests awaiting a reply.
    pub fn in_flight(&self) -> usize {
        self.requests.len()
    }

    /// Counters.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    fn with_acquisition(
        &mut self,
        id: LockId,
        now: Timestamp,
        f: impl FnOnce(&mut Acquisition, &mut Ctx) -> Result<(), UsageError>,
    ) -> Result<(), UsageError> {
        let mut out = Err(UsageError::UnknownLock(id));
        self.with_task(id, now, |t, cx| {
            out = match t {
                Task::Acquisition(a) => f(a, cx),
                _ => Err(UsageError::Unsupported("not a lock acquisition")),
            }
        });
        out
    }

    fn ctx_parts(&mut self, now: Timestamp) -> (Ctx<'_>, &mut BTreeMap<LockId, Task>) {
        let (connected, session_id) = match self.conn {
            Conn::Connected(id) => (true, Some(id)),
            Conn::Disconnected(id) => (false, Some(id)),
            _ => (false, None),
        };
        let cx = Ctx {
            now,
            connected,
            session_id,
            config: &self.config,
            requests: &mut self.requests,
            out: &mut self.out,
            timers: &mut self.timers,
            stats: &mut self.stats,
            watches: &mut self.watches,
            contact: &mut self.contact,
        };
        (cx, &mut self.tasks)
    }

    fn with_task(&mut self, id: LockId, now: Timestamp, f: impl FnOnce(&mut Task, &mut Ctx)) {
        self.with_task_inner(id, now, f);
        self.sync_publications(now);
    }

    /// Keeps every held node of an owner publishing where that owner waits (the
    /// detecting waiters past their `detect_after`), see [`crate::deadlock`].
    fn sync_publications(&mut self, now: Timestamp) {
        if !self.detection {
            return;
        }
        let mut waits: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for a in self.tasks.values().filter_map(Task::acquisition) {
            if let Some((owner, path)) = a.published_wait() {
                waits.entry(owner.to_owned()).or_default().push(path);
            }
        }
        for w in waits.values_mut() {
            w.sort();
            w.dedup();
        }
        let mut held: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for a in self.tasks.values().filter_map(Task::acquisition) {
            if let Some((owner, path)) = a.held_node() {
                held.entry(owner.to_owned())
                    .or_default()
                    .push(path.to_owned());
            }
        }
        let (mut cx, tasks) = self.ctx_parts(now);
        for t in tasks.values_mut() {
            if let Task::Acquisition(a) = t {
                let wanted = a
                    .spec()
                    .owner
                    .as_ref()
                    .and_then(|o| waits.get(o))
                    .cloned()
                    .unwrap_or_default();
                a.publish(&mut cx, wanted);
                let h = a.spec().owner.as_ref().and_then(|o| held.get(o));
                a.set_owner_held(h.map_or(&[], Vec::as_slice));
            }
        }
    }

    fn with_task_inner(&mut self, id: LockId, now: Timestamp, f: impl FnOnce(&mut Task, &mut Ctx)) {
        let (mut cx, tasks) = self.ctx_parts(now);
        if let Some(t) = tasks.get_mut(&id) {
            f(t, &mut cx);
            if t.is_done() {
                tasks.remove(&id);
                cx.timers.cancel_lock(id);
                cx.requests.forget_lock(id);
                cx.watches.forget_lock(id);
            }
        }
    }

    fn for_each_task(&mut self, now: Timestamp, f: impl FnMut(&mut Task, &mut Ctx)) {
        self.for_each_task_inner(now, f);
        self.sync_publications(now);
    }

    fn for_each_task_inner(&mut self, now: Timestamp, mut f: impl FnMut(&mut Task, &mut Ctx)) {
        let (mut cx, tasks) = self.ctx_parts(now);
        let mut done = Vec::new();
        for (id, t) in tasks.iter_mut() {
            f(t, &mut cx);
            if t.is_done() {
                done.push(*id);
            }
        }
        for id in done {
            tasks.remove(&id);
            cx.timers.cancel_lock(id);
            cx.requests.forget_lock(id);
            cx.watches.forget_lock(id);
        }
    }
}

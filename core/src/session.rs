//! [`Session`]: every lock of one ZooKeeper session, multiplexed in one state machine.

use crate::acquisition::{Acquisition, Ctx, State};
use crate::event::{FailReason, LockEvent, LockId, UsageError};
use crate::names::AttemptId;
use crate::path::validate_lock_path;
use crate::proto::{Input, Request, SessionEvent};
use crate::requests::RequestBook;
use crate::rng::SplitMix64;
use crate::spec::{Config, LockSpec, Recipe, MAX_DATA_LEN};
use crate::time::Timestamp;
use crate::timers::{TimerKind, Timers};
use std::collections::{BTreeMap, VecDeque};

/// Something the adapter must act on, from [`Session::poll_output`].
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum Output {
    /// Send this request now, after every request polled before it.
    Request(Request),
    /// Tell the user about an acquisition.
    Event {
        /// Which acquisition.
        lock: LockId,
        /// What happened.
        event: LockEvent,
    },
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

/// Counters for diagnostics and benchmarks.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
#[non_exhaustive]
pub struct Stats {
    /// Requests emitted.
    pub requests: u64,
    /// Replies whose request was unknown or forgotten (e.g. sent before a disconnect).
    pub stale_replies: u64,
    /// Children of lock directories that match no naming scheme, seen in listings.
    pub foreign_children: u64,
    /// Watches set on lower participants.
    pub watches_set: u64,
    /// Deletions of a watched lower participant that reached an acquisition.
    pub handoff_notifications: u64,
    /// Acquisitions granted.
    pub acquired: u64,
    /// Retries after errors that left the connection up.
    pub retries: u64,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Conn {
    /// No session yet (new, or the previous one expired).
    NoSession,
    Connected(i64),
    Disconnected(i64),
    Closed,
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
///    session timeout after the last contact with the server. A `Connected` with a new
///    session id means the old session expired.
/// 5. **Time.** Pass a monotonic `now` to every call and call `handle_timeout(now)` once
///    `now >= poll_timeout()`.
///
/// Misuse returns a [`UsageError`] and changes nothing; trouble with ZooKeeper turns
/// into [`LockEvent`]s. Every acquisition ends in exactly one terminal event.
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
    locks: BTreeMap<LockId, Acquisition>,
    requests: RequestBook,
    timers: Timers,
    out: VecDeque<Output>,
    rng: SplitMix64,
    next_lock: u64,
    stats: Stats,
}

impl Session {
    /// A session with no lock and no connection yet.
    pub fn new(config: Config) -> Session {
        let rng = SplitMix64::new(config.seed);
        Session {
            config,
            conn: Conn::NoSession,
            locks: BTreeMap::new(),
            requests: RequestBook::default(),
            timers: Timers::default(),
            out: VecDeque::new(),
            rng,
            next_lock: 0,
            stats: Stats::default(),
        }
    }

    /// Starts an acquisition. Its progress comes as events for the returned id.
    ///
    /// Bad input (an invalid path, oversized data, a semaphore of 0 permits, a leader
    /// without a participant id) is refused here, before anything is sent.
    pub fn acquire(&mut self, spec: LockSpec, now: Timestamp) -> Result<LockId, UsageError> {
        if self.conn == Conn::Closed {
            return Err(UsageError::Closed);
        }
        validate_lock_path(&spec.path)?;
        if spec.data.len() > MAX_DATA_LEN {
            return Err(UsageError::DataTooLarge {
                len: spec.data.len(),
                max: MAX_DATA_LEN,
            });
        }
        match spec.recipe {
            Recipe::Semaphore { permits: 0 } => return Err(UsageError::ZeroPermits),
            Recipe::Leader if spec.data.is_empty() => return Err(UsageError::EmptyParticipant),
            _ => {}
        }
        self.next_lock += 1;
        let id = LockId(self.next_lock);
        let attempt = AttemptId(self.rng.next_u128()).as_uuid_v4();
        if let Some(deadline) = spec.deadline {
            self.timers.set(id, TimerKind::Deadline, deadline);
        }
        self.locks.insert(id, Acquisition::new(id, spec, attempt));
        self.with_lock(id, now, |a, cx| {
            if cx.connected {
                a.recover(cx);
            }
        });
        // A deadline already past fails at once rather than at the next timeout call.
        self.handle_timeout(now);
        Ok(id)
    }

    /// Releases a held lock: deletes its node (retrying across reconnects) and reports
    /// [`LockEvent::Released`]. A lock that is not held gives [`UsageError::NotHeld`]
    /// (use [`cancel`](Self::cancel) to give up waiting).
    pub fn release(&mut self, id: LockId, now: Timestamp) -> Result<(), UsageError> {
        match self.locks.get(&id).map(Acquisition::state) {
            None => Err(UsageError::UnknownLock(id)),
            Some(State::Held) => {
                self.with_lock(id, now, |a, cx| a.release(cx));
                Ok(())
            }
            Some(_) => Err(UsageError::NotHeld(id)),
        }
    }

    /// Gives up an acquisition: a waiting one fails with [`FailReason::Cancelled`] and
    /// its node (even one whose create is still in flight) is removed in the
    /// background; a held one is released. Cancelling an ended one is a no-op.
    pub fn cancel(&mut self, id: LockId, now: Timestamp) -> Result<(), UsageError> {
        match self.locks.get(&id).map(Acquisition::state) {
            None => Err(UsageError::UnknownLock(id)),
            Some(State::Held) => {
                self.with_lock(id, now, |a, cx| a.release(cx));
                Ok(())
            }
            Some(State::Waiting | State::Granting) => {
                self.with_lock(id, now, |a, cx| a.fail(cx, FailReason::Cancelled));
                Ok(())
            }
            Some(_) => Ok(()),
        }
    }

    /// Feeds a reply, a watch firing or a session change.
    pub fn handle_input(&mut self, input: Input, now: Timestamp) {
        match input {
            Input::Reply { request, result } => match self.requests.take(request) {
                None => self.stats.stale_replies += 1,
                Some((lock, purpose)) => {
                    self.with_lock(lock, now, |a, cx| a.on_reply(cx, request, purpose, result));
                }
            },
            Input::Watch { path, kind } => {
                self.for_each_lock(now, |a, cx| a.on_watch(cx, &path, kind));
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
                // A different session: the old one expired with all its nodes.
                self.end_session(now, false);
                self.conn = Conn::Connected(session_id);
                self.for_each_lock(now, |a, cx| a.recover(cx));
            }
            (SessionEvent::Connected { session_id }, _) => {
                self.conn = Conn::Connected(session_id);
                self.for_each_lock(now, |a, cx| a.recover(cx));
            }
            (SessionEvent::Disconnected, Conn::Connected(id)) => {
                self.conn = Conn::Disconnected(id);
                self.requests.forget_all();
                self.timers.cancel_kind(TimerKind::Retry);
                self.for_each_lock(now, |a, cx| a.on_disconnected(cx));
            }
            (SessionEvent::Disconnected, _) => {}
            (SessionEvent::Expired, _) => self.end_session(now, false),
            (SessionEvent::Closed, _) => {
                self.end_session(now, true);
                self.conn = Conn::Closed;
            }
        }
    }

    fn end_session(&mut self, now: Timestamp, closed: bool) {
        self.requests.forget_all();
        self.timers.cancel_kind(TimerKind::Retry);
        self.timers.cancel_kind(TimerKind::Grace);
        // Events for the old session's locks carry its id; then there is none.
        self.for_each_lock(now, |a, cx| a.on_session_ended(cx, closed));
        self.conn = Conn::NoSession;
    }

    /// Fires every timer due at `now`.
    pub fn handle_timeout(&mut self, now: Timestamp) {
        while let Some((lock, kind)) = self.timers.pop_due(now) {
            self.with_lock(lock, now, |a, cx| a.on_timer(cx, kind));
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

    /// What an acquisition is doing; `None` once it has ended for the user.
    pub fn state(&self, id: LockId) -> Option<LockState> {
        let a = self.locks.get(&id)?;
        Some(match a.state() {
            State::Waiting | State::Granting => LockState::Waiting,
            State::Held if a.is_suspended() => LockState::Suspended,
            State::Held => LockState::Held,
            State::Releasing => LockState::Releasing,
            State::Cleanup | State::Done => return None,
        })
    }

    /// True when no acquisition is in progress and no node of ours awaits deletion.
    pub fn is_idle(&self) -> bool {
        self.locks.is_empty() && self.out.is_empty()
    }

    /// Acquisitions still tracked, including ones cleaning up in the background.
    pub fn tracked(&self) -> usize {
        self.locks.len()
    }

    /// Requests awaiting a reply.
    pub fn in_flight(&self) -> usize {
        self.requests.len()
    }

    /// Counters.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    fn ctx_parts(&mut self, now: Timestamp) -> (Ctx<'_>, &mut BTreeMap<LockId, Acquisition>) {
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
        };
        (cx, &mut self.locks)
    }

    fn with_lock(
        &mut self,
        id: LockId,
        now: Timestamp,
        f: impl FnOnce(&mut Acquisition, &mut Ctx),
    ) {
        let (mut cx, locks) = self.ctx_parts(now);
        if let Some(a) = locks.get_mut(&id) {
            f(a, &mut cx);
            if a.state() == State::Done {
                locks.remove(&id);
                cx.timers.cancel_lock(id);
                cx.requests.forget_lock(id);
            }
        }
    }

    fn for_each_lock(&mut self, now: Timestamp, mut f: impl FnMut(&mut Acquisition, &mut Ctx)) {
        let (mut cx, locks) = self.ctx_parts(now);
        let mut done = Vec::new();
        for (id, a) in locks.iter_mut() {
            f(a, &mut cx);
            if a.state() == State::Done {
                done.push(*id);
            }
        }
        for id in done {
            locks.remove(&id);
            cx.timers.cancel_lock(id);
            cx.requests.forget_lock(id);
        }
    }
}

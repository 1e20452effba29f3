//! [`Session`]: every lock of one ZooKeeper session, multiplexed in one state
//! machine; its methods live in the submodules, one per concept.

use crate::acquisition::State;
use crate::contact::Contact;

use crate::ids::LockId;
use crate::oneshot::OneShot;
use crate::output::Output;
use crate::proto::Input;
use crate::requests::RequestBook;
use crate::rng::SplitMix64;
use crate::spec::Config;
use crate::stats::Stats;
use crate::time::Timestamp;
use crate::timers::Timers;
use crate::watches::WatchIndex;
use std::collections::{BTreeMap, VecDeque};

mod calls;
mod connection;
mod dispatch;
mod publications;
mod start;
mod sync;
mod task;

use task::Task;

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
///
/// [`SessionEvent::Connected`]: crate::SessionEvent::Connected
/// [`SessionEvent::Disconnected`]: crate::SessionEvent::Disconnected
/// [`UsageError`]: crate::UsageError
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

/// The most outputs' room the session keeps once drained.
const OUTPUT_KEPT: usize = 256;

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

    // Inputs.

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
                        Task::Break(b) => b.on_reply(cx, request, result),
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
                        Task::Revoke(_) | Task::Break(_) | Task::Inspect(_) | Task::Scan(_) => {}
                    });
                }
            }
            Input::Session(event) => self.on_session(event, now),
        }
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
                Task::Break(b) => b.on_timer(cx, kind),
                Task::Inspect(i) => i.on_timer(cx, kind),
                Task::Scan(s) => s.on_timer(cx, kind),
            });
        }
    }

    // Outputs.

    /// The next output, if any. Drain until `None` after every call.
    #[must_use]
    pub fn poll_output(&mut self) -> Option<Output> {
        let out = self.out.pop_front();
        if out.is_none() && self.out.capacity() > OUTPUT_KEPT {
            // A burst (a reconnect's recovery of every lock) is over: its
            // buffer goes, or the ring's writes would cycle through it cold.
            self.out.shrink_to(OUTPUT_KEPT);
        }
        out
    }

    /// When [`handle_timeout`](Self::handle_timeout) must next be called, if ever.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        self.timers.next()
    }

    // Getters.

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

    /// Tells what the binding learned of the server the session is connected to
    /// (its role, its `tickTime`), from a probe sent *after* the current
    /// connection was established (a probe answered before it proves nothing of
    /// it). It shortens how far proven contact trails the present, and so how long
    /// a held lock survives a loss of contact (see [`crate::contact`]), once a
    /// request sent at or after `now` is answered on this connection: that answer
    /// shows the connection outlived the probe's answer, and a server that
    /// changes role closes its connections. Forgotten at every disconnection:
    /// learn it again after each reconnect. Ignored while disconnected.
    pub fn learn_server(&mut self, role: crate::contact::ServerRole, now: Timestamp) {
        if self.is_connected() {
            self.contact.on_server_learned(role, now);
        }
    }

    /// Until when held locks can be trusted, from the latest proven contact with
    /// the ensemble's leader (see [`crate::contact`]): one session timeout after
    /// it, less the [`margin`](Config::margin). `None` without proven contact on
    /// the current session, or with [`Config::sync_interval`] off.
    ///
    /// The value only moves forward while the session lasts, and a reading that
    /// is late (taken before the newest proof was handled) is earlier, never
    /// wrong: a process that enforces it on its own clock (zklock's guard of
    /// CMD) is safe with any reading it has.
    pub fn trusted_until(&self) -> Option<Timestamp> {
        self.contact.trusted_until(&self.config)
    }
}

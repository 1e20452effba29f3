//! The state every handle and the [`Link`](crate::Link) share: the core
//! [`Session`] and one slot per acquisition, under one mutex (quinn's
//! `ConnectionRef`: lock, call the core, drain, then wake whoever must act).

// The connection tracker is part of this state (not of the `connection` module,
// whose streams read it), so that this module imports no handle built on it.
pub(crate) mod tracker;

use crate::error::Error;
use crate::section_calls::SectionCalls;
use crate::status::LockStatus;
use lock_core::{
    Config, FencedError, Grant, LockEvent, LockId, MultiResult, Output, Request, Session, Timestamp,
};
use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::task::Waker;
use std::time::{Duration, Instant};

/// The outcome of a fenced write, as the guard's caller sees it.
pub(crate) type WriteResult = Result<Vec<MultiResult>, FencedError>;

/// One more hold on a reentrant mutex held by the same owner on this session.
pub(crate) struct Holds {
    pub(crate) owner: String,
    pub(crate) path: String,
    pub(crate) grant: Grant,
    /// Guards alive on it; the node is released when the last one goes.
    pub(crate) count: usize,
}

/// Everything shared, behind one `Arc`.
pub(crate) struct Shared {
    state: Mutex<SharedState>,
    /// Signalled with `SharedState::link_dirty` for a binding that waits on a thread.
    link_cv: Condvar,
    /// The core's session timeout in nanoseconds (readable without the mutex):
    /// the one the client was made with, or the one the binding last set with
    /// `Link::reconfigure` (the server's grant).
    session_timeout_ns: AtomicU64,
    /// What the binding attaches for its own handle extensions.
    pub(crate) extension: OnceLock<Arc<dyn Any + Send + Sync>>,
}

/// What one acquisition, observer or revocation has for its handle.
pub(crate) struct Slot {
    /// Events for the handle, in order (answers to section calls and fenced
    /// writes go to the fields below instead).
    pub(crate) events: VecDeque<LockEvent>,
    /// Meaningful once `acquired`.
    pub(crate) status: LockStatus,
    pub(crate) acquired: bool,
    pub(crate) revocation_requested: bool,
    /// The terminal event was dispatched.
    pub(crate) ended: bool,
    /// The handle is gone: the slot goes with the terminal event.
    pub(crate) dropped: bool,
    /// The handle's section calls and their answers.
    pub(crate) section: SectionCalls,
    /// Fenced writes in flight, by the core's write id (`Some` once answered).
    pub(crate) writes: FencedWrites,
    /// The election whose stream also gets this slot's events.
    pub(crate) election: Option<u64>,
    /// The acquisition's tracing span, unless disabled (no subscriber wants
    /// it, or another task): boxed, as most slots have none and a `Span` is 40
    /// bytes.
    pub(crate) span: Option<Box<tracing::Span>>,
    /// The acquisition's metrics (`None` for other tasks).
    pub(crate) metrics: Option<crate::metrics::AcquisitionMetrics>,
    /// Where the acquisition stands in its queue, while it waits (the core's
    /// last `Progress::Queued`).
    /// Boxed, and dropped at the grant: a `Queued` is 56 bytes and only a
    /// waiting acquisition has one.
    pub(crate) queued: Option<Box<crate::status::Queued>>,
    wakers: Vec<Waker>,
}

impl Slot {
    fn new(election: Option<u64>) -> Slot {
        Slot {
            events: VecDeque::new(),
            status: LockStatus::Held,
            acquired: false,
            revocation_requested: false,
            ended: false,
            dropped: false,
            section: SectionCalls::default(),
            writes: FencedWrites::default(),
            election,
            span: None,
            metrics: None,
            queued: None,
            wakers: Vec::new(),
        }
    }

    /// Registers the task to wake at the slot's next change.
    pub(crate) fn register(&mut self, waker: &Waker) {
        register(&mut self.wakers, waker);
    }
}

/// A slot's fenced writes in flight, by the core's write id (`Some` once
/// answered): made at the first write, as few holders write fenced and an
/// empty `HashMap` is 48 bytes inline in every slot.
// Boxed on purpose: the point is the 8 bytes inline, not the map's buffer.
#[allow(clippy::box_collection)]
#[derive(Default)]
pub(crate) struct FencedWrites(Option<Box<HashMap<u64, Option<WriteResult>>>>);

impl FencedWrites {
    pub(crate) fn insert(&mut self, write: u64, answer: Option<WriteResult>) {
        self.0
            .get_or_insert_with(Box::default)
            .insert(write, answer);
    }

    pub(crate) fn get(&self, write: &u64) -> Option<&Option<WriteResult>> {
        self.0.as_ref()?.get(write)
    }

    pub(crate) fn get_mut(&mut self, write: &u64) -> Option<&mut Option<WriteResult>> {
        self.0.as_mut()?.get_mut(write)
    }

    /// Removes `write`'s entry (and the map once empty).
    pub(crate) fn remove(&mut self, write: &u64) -> Option<Option<WriteResult>> {
        let map = self.0.as_mut()?;
        let removed = map.remove(write);
        if map.is_empty() {
            self.0 = None;
        }
        removed
    }
}

/// The events of every term of one election participant.
#[derive(Default)]
pub(crate) struct ElectionQueue {
    pub(crate) events: VecDeque<(LockId, LockEvent)>,
    wakers: Vec<Waker>,
}

impl ElectionQueue {
    pub(crate) fn register(&mut self, waker: &Waker) {
        register(&mut self.wakers, waker);
    }
}

fn register(wakers: &mut Vec<Waker>, waker: &Waker) {
    if !wakers.iter().any(|w| w.will_wake(waker)) {
        // Room for one more only: a waiting acquisition usually has one task
        // waiting on it, and a first push would make room for four.
        wakers.reserve_exact(1);
        wakers.push(waker.clone());
    }
}

/// The state behind the mutex.
pub(crate) struct SharedState {
    pub(crate) core: Session,
    /// The core's `Timestamp::ZERO`.
    epoch: Instant,
    /// Where handles read the time (the binding's, see [`crate::Clock`]).
    clock: Arc<dyn crate::Clock>,
    /// Boxed: one per held or waiting lock, in a table with room to spare.
    pub(crate) slots: HashMap<LockId, Box<Slot>>,
    pub(crate) elections: HashMap<u64, ElectionQueue>,
    next_election: u64,
    /// Reentrant mutexes held, by acquisition: who holds, and how many guards.
    pub(crate) holds: HashMap<LockId, Holds>,
    /// Reentrant mutexes not granted yet: (owner, path), for `holds` at the grant.
    pub(crate) reentrant: HashMap<LockId, (String, String)>,
    /// Requests drained from the core, for the link to send in this order.
    pub(crate) requests: VecDeque<Request>,
    /// Handles changed something the link must look at (requests, the timer, close).
    pub(crate) link_dirty: bool,
    link_waker: Option<Waker>,
    idle_wakers: Vec<Waker>,
    /// `LockClient::close` was called.
    pub(crate) close_requested: bool,
    /// Every user handle (client, lock object, guard, election) is gone.
    pub(crate) handles_gone: bool,
    /// The binding dropped its `Link`: nothing can be sent any more.
    pub(crate) link_gone: bool,
    close_wakers: Vec<Waker>,
    /// Wakers to wake once the mutex is released.
    to_wake: Vec<Waker>,
    /// The client-wide connection state and its subscribers.
    pub(crate) connection: tracker::Tracker,
    /// The opt-in depth of the metrics' `prefix` label.
    pub(crate) metrics_prefix: Option<usize>,
    /// Counts the session changes fed to the core: a report about the server
    /// learned under another count is about another connection.
    pub(crate) connection_generation: u64,
}

impl Shared {
    pub(crate) fn new(config: Config, clock: Arc<dyn crate::Clock>) -> Shared {
        let session_timeout = config.session_timeout;
        Shared {
            state: Mutex::new(SharedState {
                core: Session::new(config),
                epoch: clock.now(),
                clock,
                slots: HashMap::new(),
                elections: HashMap::new(),
                next_election: 0,
                holds: HashMap::new(),
                reentrant: HashMap::new(),
                requests: VecDeque::new(),
                link_dirty: false,
                link_waker: None,
                idle_wakers: Vec::new(),
                close_requested: false,
                handles_gone: false,
                link_gone: false,
                close_wakers: Vec::new(),
                to_wake: Vec::new(),
                connection: Default::default(),
                metrics_prefix: None,
                connection_generation: 0,
            }),
            link_cv: Condvar::new(),
            session_timeout_ns: AtomicU64::new(duration_ns(session_timeout)),
            extension: OnceLock::new(),
        }
    }

    /// The core's session timeout (see [`Link::reconfigure`](crate::Link::reconfigure)).
    pub(crate) fn session_timeout(&self) -> Duration {
        Duration::from_nanos(self.session_timeout_ns.load(Ordering::Acquire))
    }

    /// Gives the core new settings (see [`Link::reconfigure`](crate::Link::reconfigure)).
    pub(crate) fn reconfigure(&self, config: Config) {
        self.with_quiet(|s| {
            self.session_timeout_ns
                .store(duration_ns(config.session_timeout), Ordering::Release);
            s.core.reconfigure(config);
        });
    }

    fn lock(&self) -> MutexGuard<'_, SharedState> {
        unpoisoned(self.state.lock())
    }

    /// Reads the state without changing it.
    pub(crate) fn read<R>(&self, f: impl FnOnce(&SharedState) -> R) -> R {
        f(&self.lock())
    }

    /// A handle's mutation: runs `f`, drains the core, and wakes the link (it may
    /// have requests to send, a new timer, a close), then whoever else the outputs
    /// concern, after releasing the mutex.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut SharedState) -> R) -> R {
        self.update(|s| (f(s), true))
    }

    /// A look that may change nothing the link cares about (registering a waker,
    /// taking an event): like [`with`](Self::with) without waking the link. The
    /// link's own calls use it too (their caller polls right after).
    pub(crate) fn with_quiet<R>(&self, f: impl FnOnce(&mut SharedState) -> R) -> R {
        self.update(|s| (f(s), false))
    }

    /// [`with`](Self::with) when `f` says it called the core (`true`), else
    /// [`with_quiet`](Self::with_quiet): for polls that call the core only once.
    pub(crate) fn update<R>(&self, f: impl FnOnce(&mut SharedState) -> (R, bool)) -> R {
        let mut state = self.lock_state();
        let (out, wake_link) = f(&mut state);
        state.release(wake_link);
        out
    }

    /// The state, locked for a handle's mutation without a closure (quinn's
    /// habit: lock, call the core, then [`StateLock::wake`]). Dropped without
    /// `wake`, it only unlocks: nothing is drained and nobody is woken.
    pub(crate) fn lock_state(&self) -> StateLock<'_> {
        StateLock {
            shared: self,
            state: self.lock(),
        }
    }

    /// Marks the link as having something to look at, and wakes it.
    pub(crate) fn notify_link(&self) {
        let waker = {
            let mut state = self.lock();
            state.link_dirty = true;
            state.link_waker.take()
        };
        self.link_cv.notify_all();
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Blocks until a handle changed something or `deadline` passes; true if woken.
    pub(crate) fn wait_link(&self, deadline: Option<Instant>) -> bool {
        let mut state = self.lock();
        loop {
            if std::mem::take(&mut state.link_dirty) {
                return true;
            }
            let timeout = match deadline {
                Some(at) => match at.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => Some(left),
                    _ => return false,
                },
                None => None,
            };
            state = match timeout {
                Some(left) => unpoisoned(self.link_cv.wait_timeout(state, left)).0,
                None => unpoisoned(self.link_cv.wait(state)),
            };
        }
    }
}

/// [`SharedState`] locked by a handle (see [`Shared::lock_state`]).
pub(crate) struct StateLock<'a> {
    shared: &'a Shared,
    state: MutexGuard<'a, SharedState>,
}

impl StateLock<'_> {
    /// Ends a handle's mutation: drains the core, wakes the link (it may have
    /// requests to send, a new timer, a close), then, with the mutex released,
    /// whoever else the outputs concern.
    pub(crate) fn wake(self) {
        self.release(true);
    }

    /// Drains the core, wakes the link if `wake_link`, unlocks, then wakes
    /// whoever the outputs concern.
    fn release(self, wake_link: bool) {
        let StateLock { shared, mut state } = self;
        state.drain();
        if wake_link {
            state.link_dirty = true;
            if let Some(waker) = state.link_waker.take() {
                state.to_wake.push(waker);
            }
        }
        let wake = std::mem::take(&mut state.to_wake);
        drop(state);
        if wake_link {
            // A binding waiting on a thread (`Link::wait`).
            shared.link_cv.notify_all();
        }
        wake.into_iter().for_each(Waker::wake);
    }
}

impl std::ops::Deref for StateLock<'_> {
    type Target = SharedState;

    fn deref(&self) -> &SharedState {
        &self.state
    }
}

impl std::ops::DerefMut for StateLock<'_> {
    fn deref_mut(&mut self) -> &mut SharedState {
        &mut self.state
    }
}

impl SharedState {
    /// The core's clock reading for `at`.
    pub(crate) fn timestamp(&self, at: Instant) -> Timestamp {
        Timestamp::from_duration(at.saturating_duration_since(self.epoch))
    }

    /// The binding's clock reading for the core's `at`.
    pub(crate) fn instant(&self, at: Timestamp) -> Instant {
        self.epoch + at.since_epoch()
    }

    /// The core's clock now (for handles: the binding passes its own `now`).
    pub(crate) fn now(&self) -> Timestamp {
        self.timestamp(self.clock.now())
    }

    /// The binding's clock now.
    pub(crate) fn instant_now(&self) -> Instant {
        self.clock.now()
    }

    /// The status the handles of acquisition `id` report: the one the driver
    /// last set, read against the clock ([`Closed`](lock_core::LostReason::Closed)
    /// lost once the slot is gone).
    ///
    /// The driver moves a lock to `Suspended` and `Lost` when it gets to the
    /// trust deadline, but a process paused past it (SIGSTOP, a GC, a VM
    /// migration) runs the user's next check before its driver has run: a `Held`
    /// lock whose deadline has passed is reported `Suspended`. Not `Lost`: the
    /// loss and its reason are the driver's to decide and report as an event (it
    /// may yet learn that the session expired), and a status must not run ahead
    /// of the events the handle will read.
    pub(crate) fn lock_status(&self, id: LockId) -> LockStatus {
        match self.slots.get(&id).map(|slot| &slot.status) {
            None => LockStatus::Lost(lock_core::LostReason::Closed),
            Some(LockStatus::Held) if self.trust_expired() => LockStatus::Suspended,
            Some(status) => status.clone(),
        }
    }

    /// Until when acquisition `id` can be trusted, while it is held (trusted or
    /// suspended): see [`LockGuard::trusted_until`](crate::LockGuard::trusted_until).
    pub(crate) fn trusted_until(&self, id: LockId) -> Option<Instant> {
        // Read with the lock's status under one lock: a lock still held is on
        // the session whose proofs the core reports (an expiry makes it lost
        // before a new session connects).
        let held = matches!(
            self.slots.get(&id).map(|slot| &slot.status),
            Some(LockStatus::Held | LockStatus::Suspended)
        );
        let until = self.core.trusted_until().map(|at| self.instant(at));
        until.filter(|_| held)
    }

    /// Whether the held locks' trust deadline has passed on the client's clock
    /// (never without one: see [`lock_core::Session::trusted_until`]).
    fn trust_expired(&self) -> bool {
        self.core
            .trusted_until()
            .is_some_and(|until| self.now() >= until)
    }

    /// Whether the user side may start nothing more.
    pub(crate) fn is_closed(&self) -> bool {
        self.close_requested || self.link_gone
    }

    /// A slot for a task the core just started.
    pub(crate) fn add_slot(&mut self, id: LockId, election: Option<u64>) {
        self.slots.insert(id, Box::new(Slot::new(election)));
    }

    pub(crate) fn new_election(&mut self) -> u64 {
        self.next_election += 1;
        self.elections
            .insert(self.next_election, ElectionQueue::default());
        self.next_election
    }

    /// The handle of `id` is gone: forget its slot now if it has ended, else when
    /// its terminal event comes.
    pub(crate) fn drop_slot(&mut self, id: LockId) {
        if let Some(slot) = self.slots.get_mut(&id) {
            if slot.ended {
                self.slots.remove(&id);
            } else {
                slot.dropped = true;
            }
        }
    }

    /// Registers `waker` for the link (async bindings).
    pub(crate) fn register_link(&mut self, waker: &Waker) {
        match &self.link_waker {
            Some(w) if w.will_wake(waker) => {}
            _ => self.link_waker = Some(waker.clone()),
        }
    }

    pub(crate) fn register_idle(&mut self, waker: &Waker) {
        register(&mut self.idle_wakers, waker);
    }

    pub(crate) fn register_close(&mut self, waker: &Waker) {
        register(&mut self.close_wakers, waker);
    }

    /// The link is gone: the session ends for every handle (the core reports each
    /// acquisition's terminal event) and closers return.
    pub(crate) fn end(&mut self, now: Timestamp) {
        self.link_gone = true;
        self.session_changed(lock_core::SessionEvent::Closed, now);
        self.requests.clear();
        self.to_wake.append(&mut self.close_wakers);
        self.to_wake.append(&mut self.idle_wakers);
    }

    /// What the binding reports about the session, for the core and for the
    /// client-wide connection state.
    /// A binding's check of a server's settings ([`crate::ServerChecker`]).
    pub(crate) fn server_checked(&mut self, check: crate::ServerCheck) {
        self.connection.on_server_check(check, &mut self.to_wake);
    }

    /// The binding reported that the watched node at `path` was deleted: for
    /// the handoff metric of the acquisitions waiting behind it.
    pub(crate) fn watched_node_deleted(&mut self, path: &str) {
        for slot in self.slots.values_mut() {
            if let Some(metrics) = &mut slot.metrics {
                metrics.on_node_deleted(path);
            }
        }
    }

    /// What a binding learned of the connection's server, from a probe sent while
    /// the connection was the one of `generation`: told to the core only if it
    /// still is.
    pub(crate) fn server_learned(
        &mut self,
        generation: u64,
        role: lock_core::ServerRole,
        now: Timestamp,
    ) {
        if generation == self.connection_generation {
            self.core.learn_server(role, now);
        }
    }

    pub(crate) fn session_changed(&mut self, event: lock_core::SessionEvent, now: Timestamp) {
        self.connection_generation += 1;
        self.connection.on_session(&event, &mut self.to_wake);
        self.core
            .handle_input(lock_core::Input::Session(event), now);
    }

    /// Rule 2 of the core's contract: drain after every call. Requests queue for the
    /// link; events go to their slots.
    fn drain(&mut self) {
        while let Some(output) = self.core.poll_output() {
            match output {
                Output::Request(request) if !self.link_gone => self.requests.push_back(request),
                Output::Event { lock, event } => self.dispatch(lock, event),
                Output::Progress { lock, progress } => {
                    let delay_ends = match &progress {
                        lock_core::Progress::LockDelay { until, .. } => Some(self.instant(*until)),
                        _ => None,
                    };
                    if let Some(slot) = self.slots.get_mut(&lock) {
                        // A disabled span still parents the events (to none).
                        let none = tracing::Span::none();
                        crate::trace::progress(slot.span.as_deref().unwrap_or(&none), &progress);
                        if let Some(metrics) = &mut slot.metrics {
                            metrics.on_progress(&progress);
                        }
                        let queued = match progress {
                            lock_core::Progress::Queued { node, place } => {
                                let clock = self.clock.clone();
                                Some(crate::status::Queued::new(node, place, clock))
                            }
                            lock_core::Progress::LockDelay { node, .. } => delay_ends.map(|ends| {
                                crate::status::Queued::lock_delay(node, ends, self.clock.clone())
                            }),
                            _ => None,
                        };
                        if let Some(queued) = queued {
                            slot.queued = Some(Box::new(queued));
                            self.to_wake.extend(std::mem::take(&mut slot.wakers));
                        }
                    }
                }
                _ => {}
            }
        }
        if self.core.is_idle() {
            self.to_wake.append(&mut self.idle_wakers);
        }
    }

    fn dispatch(&mut self, lock: LockId, event: LockEvent) {
        let Some(slot) = self.slots.get_mut(&lock) else {
            return;
        };
        let none = tracing::Span::none();
        crate::trace::event(slot.span.as_deref().unwrap_or(&none), &event);
        if let Some(metrics) = &mut slot.metrics {
            metrics.on_event(&event);
        }
        // Taken, not appended: a held lock's slot keeps no room for wakers.
        self.to_wake.extend(std::mem::take(&mut slot.wakers));
        // Answers to a handle's own calls go to whoever awaits them.
        match event {
            LockEvent::FencedWrite { write, result } => {
                if let Some(answer) = slot.writes.get_mut(&write) {
                    *answer = Some(result);
                }
                return;
            }
            LockEvent::SectionOpened | LockEvent::SectionClosed => {
                slot.section.answer(Ok(()));
                return;
            }
            LockEvent::SectionFailed(e) => {
                slot.section.answer(Err(Error::Zk(e)));
                return;
            }
            _ => {}
        }
        if let Some((owner, path)) = self.reentrant.get(&lock) {
            if let LockEvent::Acquired(grant) = &event {
                // Held for its owner from now on: a re-entry counts on it even
                // before the first guard is handed out.
                let holds = Holds {
                    owner: owner.clone(),
                    path: path.clone(),
                    grant: grant.clone(),
                    count: 0,
                };
                self.holds.insert(lock, holds);
            }
            if matches!(event, LockEvent::Acquired(_)) || event.is_terminal() {
                self.reentrant.remove(&lock);
            }
        }
        match &event {
            LockEvent::Acquired(_) => {
                slot.status = LockStatus::Held;
                slot.acquired = true;
                // Read only while waiting: a holder keeps no queue place (nor
                // its copy of the node's path).
                slot.queued = None;
            }
            LockEvent::Resumed => slot.status = LockStatus::Held,
            LockEvent::Suspended => slot.status = LockStatus::Suspended,
            LockEvent::Lost(reason) => slot.status = LockStatus::Lost(reason.clone()),
            LockEvent::Released => slot.status = LockStatus::Released,
            LockEvent::RevocationRequested => slot.revocation_requested = true,
            _ => {}
        }
        let terminal = event.is_terminal();
        if terminal {
            slot.ended = true;
            // A section call survives a suspension (the core sends it again once the
            // node is verified); it ends with the lock.
            slot.section.answer(Err(match &event {
                LockEvent::Lost(reason) => Error::Lost(reason.clone()),
                _ => Error::Closed,
            }));
        }
        if let Some(queue) = slot.election.and_then(|e| self.elections.get_mut(&e)) {
            queue.events.push_back((lock, event.clone()));
            self.to_wake.append(&mut queue.wakers);
        }
        if slot.dropped {
            if terminal {
                self.slots.remove(&lock);
            }
        } else {
            slot.events.push_back(event);
        }
    }
}

/// `d` in nanoseconds, saturating (585 years).
fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The poisoning policy (quinn's and raft-rs's): only lock-client and lock-core
/// code runs under the state's mutex (wakers and user callbacks run after it is
/// released), so a panic there is a bug that may have left the core half-way
/// through a transition, and every later call on the state panics too rather
/// than act on it: a lock must never be reported held from a broken state.
/// Except while this thread is already unwinding (a handle dropped by the very
/// panic): panicking again would abort the process and hide the first panic, so
/// that drop goes ahead, and the first panic goes on unwinding.
fn unpoisoned<G>(locked: std::sync::LockResult<G>) -> G {
    locked.unwrap_or_else(|poisoned| {
        if std::thread::panicking() {
            poisoned.into_inner()
        } else {
            panic!(
                "lock-client's shared state is poisoned: code of lock-client or lock-core \
                 panicked while holding it (a bug; please report it)"
            )
        }
    })
}

#[cfg(test)]
mod sizes;
#[cfg(test)]
mod tests;

//! The state every handle and the [`Link`](crate::Link) share: the core
//! [`Session`] and the parts around it, under one mutex (quinn's
//! `ConnectionRef`: lock, call the core, drain, unlock, then wake whoever must
//! act). Each part owns its fields and resets itself; [`Shared::with`] is the
//! one way in.

// The connection tracker is part of this state (not of the `connection` module,
// whose streams read it), so that this module imports no handle built on it.
pub(crate) mod tracker;

mod closing;
mod elections;
mod link_io;
pub(crate) mod locks;
mod time;
mod wakeups;

use crate::status::LockStatus;
use crate::sync::{Condvar, Mutex, MutexGuard};
use lock_core::{Config, FencedError, LockId, MultiResult, Output, Progress, Session, Timestamp};
use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::Waker;
use std::time::{Duration, Instant};

pub(crate) use locks::Holds;

/// The outcome of a fenced write, as the guard's caller sees it.
pub(crate) type WriteResult = Result<Vec<MultiResult>, FencedError>;

/// Everything shared, behind one `Arc`.
pub(crate) struct Shared {
    state: Mutex<SharedState>,
    /// Signalled when the link is marked, for a binding that waits on a thread.
    link_cv: Condvar,
    /// The core's session timeout in nanoseconds (readable without the mutex):
    /// the one the client was made with, or the one the binding last set with
    /// `Link::reconfigure` (the server's grant).
    session_timeout_ns: AtomicU64,
    /// What the binding attaches for its own handle extensions.
    pub(crate) extension: OnceLock<Arc<dyn Any + Send + Sync>>,
}

/// The state behind the mutex.
pub(crate) struct SharedState {
    pub(crate) core: Session,
    pub(crate) time: time::Timeline,
    pub(crate) locks: locks::Locks,
    pub(crate) elections: elections::Elections,
    pub(crate) io: link_io::LinkIo,
    pub(crate) closing: closing::Closing,
    pub(crate) wakeups: wakeups::Wakeups,
    /// The client-wide connection state, its subscribers, and how many session
    /// changes were fed to the core.
    pub(crate) connection: tracker::Tracker,
}

impl Shared {
    pub(crate) fn new(config: Config, clock: Arc<dyn crate::Clock>) -> Shared {
        let session_timeout = config.session_timeout;
        Shared {
            state: Mutex::new(SharedState {
                core: Session::new(config),
                time: time::Timeline::new(clock),
                locks: Default::default(),
                elections: Default::default(),
                io: Default::default(),
                closing: Default::default(),
                wakeups: Default::default(),
                connection: Default::default(),
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
        self.with(|s| {
            self.session_timeout_ns
                .store(duration_ns(config.session_timeout), Ordering::Release);
            s.core.reconfigure(config);
        });
    }

    fn lock(&self) -> MutexGuard<'_, SharedState> {
        unpoisoned(self.state.lock())
    }

    /// The one way into the state: locks it, runs `f`, drains the core, unlocks,
    /// then wakes the link's thread if `f` marked it, and every waker collected.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut SharedState) -> R) -> R {
        let mut state = self.lock();
        let was_marked = state.io.is_marked();
        let out = f(&mut state);
        state.drain();
        // A waiting link thread sees no mark: only a new one needs the signal.
        let marked = !was_marked && state.io.is_marked();
        let wake = state.wakeups.take();
        drop(state);
        if marked {
            self.link_cv.notify_all();
        }
        wake.into_iter().for_each(Waker::wake);
        out
    }

    /// Blocks until a handle marked the link or `deadline` passes; true if marked.
    pub(crate) fn wait_link(&self, deadline: Option<Instant>) -> bool {
        let mut state = self.lock();
        loop {
            if state.io.take_marked() {
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

impl SharedState {
    // Getters.

    /// The core's clock now (for handles: the binding passes its own `now`).
    pub(crate) fn now(&self) -> Timestamp {
        self.time.now()
    }

    /// The status the handles of acquisition `id` report (`Lost(Closed)` once
    /// the slot is gone): see [`LockGuard::status`](crate::LockGuard::status)
    /// for why a `Held` lock past its trust deadline reads `Suspended`.
    pub(crate) fn lock_status(&self, id: LockId) -> LockStatus {
        match self.locks.slot(id).map(|slot| &slot.status) {
            None => LockStatus::Lost(lock_core::LostReason::Closed),
            // Closing: the binding may close the session (and the server delete
            // our nodes for others to take) before it feeds `Closed`.
            Some(LockStatus::Held) if self.trust_expired() || self.closing.link_must_close() => {
                LockStatus::Suspended
            }
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
            self.locks.slot(id).map(|slot| &slot.status),
            Some(LockStatus::Held | LockStatus::Suspended)
        );
        let until = self.core.trusted_until().map(|at| self.time.instant(at));
        until.filter(|_| held)
    }

    /// Whether the held locks' trust deadline has passed on the client's clock
    /// (never without one: see [`lock_core::Session::trusted_until`]).
    fn trust_expired(&self) -> bool {
        self.core
            .trusted_until()
            .is_some_and(|until| self.now() >= until)
    }

    // Mutators.

    /// A handle changed something the link must look at (requests to send, a
    /// new timer, a close): the link is woken once the mutex is released.
    pub(crate) fn mark_link(&mut self) {
        if let Some(waker) = self.io.mark() {
            self.wakeups.ready().push(waker);
        }
    }

    // Inputs (from the link).

    /// The link is gone: the session ends for every handle (the core reports each
    /// acquisition's terminal event), nothing more is sent, closers return.
    pub(crate) fn handle_link_gone(&mut self) {
        self.closing.handle_link_gone(self.wakeups.ready());
        let now = self.now();
        self.handle_session(lock_core::SessionEvent::Closed, now);
        self.io.reset();
        self.wakeups.handle_idle();
    }

    /// What the binding reports about the session, for the core and for the
    /// client-wide connection state.
    pub(crate) fn handle_session(&mut self, event: lock_core::SessionEvent, now: Timestamp) {
        self.connection.handle_session(&event, self.wakeups.ready());
        self.core
            .handle_input(lock_core::Input::Session(event), now);
    }

    /// Rule 2 of the core's contract: drain after every call.
    fn drain(&mut self) {
        while let Some(output) = self.core.poll_output() {
            match output {
                Output::Request(request) if !self.closing.is_link_gone() => self.io.push(request),
                Output::Event { lock, event } => {
                    let to_wake = self.wakeups.ready();
                    if let Some((election, event)) = self.locks.handle_event(lock, event, to_wake) {
                        self.elections
                            .handle_event(election, lock, event, self.wakeups.ready());
                    }
                }
                Output::Progress { lock, progress } => {
                    let time = &self.time;
                    let queued = |progress| match progress {
                        Progress::Queued { node, place } => {
                            Some(crate::status::Queued::new(node, place, time.clock()))
                        }
                        Progress::LockDelay { node, until } => {
                            let ends = time.instant(until);
                            Some(crate::status::Queued::lock_delay(node, ends, time.clock()))
                        }
                        _ => None,
                    };
                    let to_wake = self.wakeups.ready();
                    self.locks.handle_progress(lock, progress, queued, to_wake);
                }
                _ => {}
            }
        }
        if self.core.is_idle() {
            self.wakeups.handle_idle();
        }
    }
}

/// `d` in nanoseconds, saturating (585 years).
fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The poisoning policy (quinn's and raft-rs's): only our code runs under the
/// mutex, so a panic there is a bug that may have left the core half-way through
/// a transition, and every later call panics too: a lock must never be reported
/// held from a broken state. Except during that very unwind (a handle dropped by
/// the panic), where a second panic would abort and hide the first.
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

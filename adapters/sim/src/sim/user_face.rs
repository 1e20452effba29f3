//! The simulator's clients through lock-client's user API ([`SimConfig::user_api`]):
//! each client is a [`LockClient`] and the [`Link`] a binding drives, on a virtual
//! [`Clock`], instead of a bare [`Session`].
//!
//! Like quinn-proto's test `Pair`, the harness is the binding and the executor at
//! once, and polls the user's futures **only when their waker was woken**, so the
//! checker sees what the user sees. Two checks belong to this face:
//!
//! * **lost wake-up**: after every drain, each future whose waker was not woken is
//!   probed with another waker; one that is ready is a wake-up the client lost;
//! * **status**: a held guard's [`LockGuard::status`] agrees with the last event
//!   its stream gave, at every poll of the user's.
//!
//! A holder's sections and fenced writes ([`crate::sim::user_calls`]) and the
//! user's queries to the client ([`crate::sim::user_queries`]) are futures of their
//! own; a release waits until no call shares the guard, as its owner must take it
//! back to release it.
//!
//! [`SimConfig::user_api`]: crate::SimConfig::user_api

use crate::sim::face::ClientCore;
use crate::sim::user_calls::Sides;
use crate::sim::user_queries::{Ask, Queries};
use lock_client::{Clock, Error, Link, LockClient, LockGuard, LockStatus, PendingLock};
use lock_core::{
    Config, FailReason, Input, LockEvent, LockId, LockSpec, LockState, LostReason, MultiOp,
    Request, Timestamp, UsageError,
};
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

type Releasing = Pin<Box<dyn Future<Output = Result<(), Error>> + Send>>;

/// Where one acquisition stands, as its user holds it.
enum Stage {
    /// Awaiting the [`PendingLock`].
    Waiting(PendingLock),
    /// Holding the guard and reading its events; `last` is the last one read. The
    /// guard is shared with the side calls in flight; `release_asked`: the user
    /// releases it once they have returned.
    Held {
        guard: Arc<LockGuard>,
        last: LockEvent,
        release_asked: bool,
    },
    /// Awaiting `guard.release()`.
    Releasing(Releasing),
    /// Lost: the guard is kept to check that it keeps saying so.
    Lost {
        guard: Arc<LockGuard>,
        reason: LostReason,
    },
}

struct UserTask {
    stage: Stage,
    wake: TaskWaker,
}

/// What draining a user-face client gives the scheduler.
pub(crate) enum Drained {
    /// A request the link asked to send.
    Request(Request),
    /// What the user saw happen to an acquisition.
    Event { lock: LockId, event: LockEvent },
    /// lock-client handed a section call of the user's to the core.
    SectionCall { lock: LockId, open: bool },
    /// lock-client handed a fenced write of the user's to the core (`write`: the
    /// harness's name for it).
    FencedCall {
        lock: LockId,
        write: u64,
        ops: Vec<MultiOp>,
    },
    /// A step of an acquisition (the session face's [`Output::Progress`](lock_core::Output::Progress)).
    Progress {
        lock: LockId,
        progress: lock_core::Progress,
    },
    /// A line for the trace.
    Note(String),
    /// The user API broke a promise: which check, and what happened.
    Broken(crate::ViolationKind, String),
}

/// One simulated client through lock-client.
pub(crate) struct UserClient {
    client: LockClient,
    link: Link,
    clock: Arc<SimClock>,
    tasks: BTreeMap<LockId, UserTask>,
    /// The holders' section calls and fenced writes in flight.
    sides: Sides,
    /// Revocations, inspections, deadlock scans and election observers.
    queries: Queries,
    out: VecDeque<Drained>,
    /// What the link last handed over: requests not passed on yet, the timer.
    requests: VecDeque<Request>,
    timeout: Option<Instant>,
    /// The waker of probes and of `wait_idle`.
    probe: Waker,
    /// Whether to note the user's polls for the trace.
    trace: bool,
}

impl UserClient {
    pub(crate) fn new(config: Config, zero: Instant, now: Timestamp) -> UserClient {
        // Paired at `zero`: the core's timestamps are the simulation's.
        let clock = Arc::new(SimClock {
            zero,
            nanos: AtomicU64::new(0),
        });
        let (client, link) = lock_client::pair_with_clock(config, clock.clone());
        let mut user = UserClient {
            client,
            link,
            clock,
            tasks: BTreeMap::new(),
            sides: Sides::default(),
            queries: Queries::default(),
            out: VecDeque::new(),
            requests: VecDeque::new(),
            timeout: None,
            probe: TaskWaker::default().waker,
            trace: false,
        };
        user.set_now(now);
        user
    }

    fn set_now(&mut self, now: Timestamp) {
        let nanos = u64::try_from(now.since_epoch().as_nanos()).unwrap_or(u64::MAX);
        self.clock.nanos.store(nanos, Ordering::Relaxed);
    }

    fn instant(&self, at: Timestamp) -> Instant {
        self.clock.zero + at.since_epoch()
    }
}

/// The binding's side (inputs, timers, requests out) and the user's (calls on the
/// client and its guards).
impl ClientCore for UserClient {
    /// Section calls and fenced writes are reported when lock-client hands them to
    /// the core ([`Drained::SectionCall`], [`Drained::FencedCall`]).
    fn reports_calls(&self) -> bool {
        true
    }

    fn handle_input(&mut self, input: Input, now: Timestamp) {
        self.set_now(now);
        let at = self.instant(now);
        match input {
            Input::Reply { request, result } => self.link.handle_reply(request, result, at),
            Input::Watch { path, kind } => self.link.handle_watch(path, kind, at),
            Input::Session(event) => self.link.handle_session(event, at),
            other => unreachable!("the simulator feeds no {other:?}"),
        }
    }

    fn handle_timeout(&mut self, now: Timestamp) {
        self.set_now(now);
        let at = self.instant(now);
        self.link.handle_timeout(at);
    }

    /// As of the last [`poll_output`](ClientCore::poll_output): the scheduler
    /// drains after every input.
    fn poll_timeout(&self) -> Option<Timestamp> {
        self.timeout
            .map(|at| Timestamp::from_duration(at.saturating_duration_since(self.clock.zero)))
    }

    fn session_id(&self) -> Option<i64> {
        self.link.session_id()
    }

    /// No acquisition or cleanup left in the core (what `wait_idle` waits for).
    fn is_idle(&self) -> bool {
        let mut cx = Context::from_waker(&self.probe);
        let mut idle = std::pin::pin!(self.client.wait_idle());
        idle.as_mut().poll(&mut cx).is_ready()
    }

    /// Acquisitions the user still has a handle on.
    fn tracked(&self) -> usize {
        self.tasks.len()
    }

    /// The next thing to hand the scheduler: requests first (rule 2 of the link),
    /// then what the woken futures report.
    fn poll_output(&mut self, now: Timestamp, check: bool, trace: bool) -> Option<Drained> {
        self.set_now(now);
        self.trace = trace;
        loop {
            if self.requests.is_empty() {
                self.timeout = self.link.poll(&mut self.requests).timeout;
            }
            if let Some(request) = self.requests.pop_front() {
                return Some(Drained::Request(request));
            }
            if let Some(out) = self.out.pop_front() {
                return Some(out);
            }
            if !self.poll_woken() {
                if check {
                    self.probe_unwoken_sides();
                    self.probe_unwoken();
                    if let Some(out) = self.out.pop_front() {
                        return Some(out);
                    }
                }
                return None;
            }
        }
    }

    fn acquire(&mut self, spec: LockSpec, now: Timestamp) -> Result<LockId, UsageError> {
        self.set_now(now);
        // The spec's deadline is on the simulation's clock, which is the core's.
        let pending = self.client.start(spec, None).map_err(|e| match e {
            Error::Usage(u) => u,
            _ => UsageError::Closed,
        })?;
        let id = pending.id();
        let task = UserTask {
            stage: Stage::Waiting(pending),
            wake: TaskWaker::default(),
        };
        // Polled once at once, as `.await` does.
        task.wake.wake();
        self.tasks.insert(id, task);
        Ok(id)
    }

    fn release(&mut self, lock: LockId, now: Timestamp) -> Result<(), UsageError> {
        self.set_now(now);
        match self.tasks.get(&lock).map(|t| &t.stage) {
            None | Some(Stage::Lost { .. }) => Err(UsageError::UnknownLock(lock)),
            // A suspended lock is released once the connection is back (as the core does).
            Some(Stage::Held {
                guard,
                release_asked: false,
                ..
            }) if matches!(guard.status(), LockStatus::Held | LockStatus::Suspended) => {
                self.ask_release(lock);
                Ok(())
            }
            Some(_) => Err(UsageError::NotHeld(lock)),
        }
    }

    /// Gives up a waiting acquisition (drops its [`PendingLock`]: the user sees it
    /// end there), or releases a held one.
    fn cancel(&mut self, lock: LockId, now: Timestamp) -> Result<(), UsageError> {
        self.set_now(now);
        if self.queries.contains(lock) {
            self.queries.cancel(lock, &mut self.out);
            return Ok(());
        }
        match self.tasks.get(&lock).map(|t| &t.stage) {
            None => Err(UsageError::UnknownLock(lock)),
            Some(Stage::Waiting(_)) => {
                self.tasks.remove(&lock);
                self.out.push_back(Drained::Event {
                    lock,
                    event: LockEvent::Failed(FailReason::Cancelled),
                });
                Ok(())
            }
            Some(Stage::Held { .. }) => {
                self.ask_release(lock);
                Ok(())
            }
            Some(Stage::Releasing(_) | Stage::Lost { .. }) => Ok(()),
        }
    }

    fn state(&self, lock: LockId) -> Option<LockState> {
        match &self.tasks.get(&lock)?.stage {
            Stage::Waiting(_) => Some(LockState::Waiting),
            Stage::Held {
                release_asked: true,
                ..
            } => Some(LockState::Releasing),
            Stage::Held { guard, .. } => match guard.status() {
                LockStatus::Held => Some(LockState::Held),
                LockStatus::Suspended => Some(LockState::Suspended),
                _ => Some(LockState::Releasing),
            },
            Stage::Releasing(_) => Some(LockState::Releasing),
            Stage::Lost { .. } => None,
        }
    }

    /// The user calls `open_section` (`open`) or `close_section` on the guard of
    /// `lock` (after the section call in flight on it, if any).
    fn section(&mut self, lock: LockId, open: bool, now: Timestamp) -> Result<(), UsageError> {
        self.set_now(now);
        let guard = self.guard_in_hand(lock)?;
        self.sides.section(&guard, lock, open, &mut self.out)
    }

    /// The user asks a revocation, an inspection, a deadlock scan or to observe an
    /// election: the harness's name of the query.
    fn ask(&mut self, ask: Ask, now: Timestamp) -> Result<LockId, UsageError> {
        self.set_now(now);
        self.queries.start(&self.client, ask, &mut self.out)
    }

    /// The user calls `fenced_write(ops)` on the guard of `lock`: the harness's
    /// name of the write (its outcome is reported under it).
    fn fenced_write(
        &mut self,
        lock: LockId,
        ops: Vec<MultiOp>,
        now: Timestamp,
    ) -> Result<u64, UsageError> {
        self.set_now(now);
        let guard = self.guard_in_hand(lock)?;
        self.sides.fenced_write(&guard, lock, ops, &mut self.out)
    }
}

impl UserClient {
    /// The user gives the guard back to release it: at once, or once the side calls
    /// sharing it have returned.
    fn ask_release(&mut self, lock: LockId) {
        if let Some(Stage::Held { release_asked, .. }) =
            self.tasks.get_mut(&lock).map(|t| &mut t.stage)
        {
            *release_asked = true;
        }
        self.start_releases();
    }

    /// Starts every release asked for whose guard no side call shares any more.
    fn start_releases(&mut self) {
        for (lock, task) in &mut self.tasks {
            let ready = matches!(
                task.stage,
                Stage::Held {
                    release_asked: true,
                    ..
                }
            ) && !self.sides.busy(*lock);
            if !ready {
                continue;
            }
            let placeholder = Stage::Releasing(Box::pin(async { Ok(()) }));
            if let Stage::Held { guard, .. } = std::mem::replace(&mut task.stage, placeholder) {
                let guard = Arc::try_unwrap(guard)
                    .unwrap_or_else(|_| unreachable!("no side call shares the guard"));
                task.stage = Stage::Releasing(Box::pin(guard.release()));
                task.wake.wake();
            }
        }
    }

    /// The guard of `lock` while the user still has it to call on (held, not given
    /// to a release).
    fn guard_in_hand(&self, lock: LockId) -> Result<Arc<LockGuard>, UsageError> {
        match self.tasks.get(&lock).map(|t| &t.stage) {
            None => Err(UsageError::UnknownLock(lock)),
            Some(Stage::Held {
                guard,
                release_asked: false,
                ..
            }) => Ok(guard.clone()),
            Some(_) => Err(UsageError::NotHeld(lock)),
        }
    }

    /// Whether the user holds `lock` (and has not seen it end).
    fn holds(tasks: &BTreeMap<LockId, UserTask>) -> impl Fn(LockId) -> bool + '_ {
        move |lock| matches!(tasks.get(&lock).map(|t| &t.stage), Some(Stage::Held { .. }))
    }

    // ----- the executor ------------------------------------------------------------

    /// Polls every side call, then every task, whose waker was woken; true if one
    /// was. Side calls first: an answer the core gave before the lock's end reaches
    /// the checker before the end.
    fn poll_woken(&mut self) -> bool {
        let held = Self::holds(&self.tasks);
        let sides = self.sides.poll_woken(&held, &mut self.out);
        drop(held);
        self.start_releases();
        let queries = self.queries.poll_woken(&mut self.out);
        let woken = take_woken(&self.tasks, |t| &t.wake);
        for (id, waker) in &woken {
            self.poll_task(*id, waker, false);
        }
        sides || queries || !woken.is_empty()
    }

    fn probe_unwoken_sides(&mut self) {
        let held = Self::holds(&self.tasks);
        self.sides.probe_unwoken(&self.probe, &held, &mut self.out);
        drop(held);
        self.start_releases();
        self.queries.probe_unwoken(&self.probe, &mut self.out);
    }

    /// Polls the futures of every task not woken with the probe's waker: a ready one
    /// lost its wake-up.
    fn probe_unwoken(&mut self) {
        let ids: Vec<LockId> = self
            .tasks
            .iter()
            .filter(|(_, t)| !matches!(t.stage, Stage::Lost { .. }))
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            let before = self.out.len();
            let probe = self.probe.clone();
            let wakes = self.tasks[&id].wake.wakes();
            self.poll_task(id, &probe, true);
            let seen: Vec<String> = self
                .out
                .iter()
                .skip(before)
                .filter_map(|o| match o {
                    Drained::Event { event, .. } => Some(format!("{event:?}")),
                    _ => None,
                })
                .collect();
            if !seen.is_empty() {
                let what = format!("{id}'s future ({})", seen.join(", "));
                self.out.insert(before, lost_wake_up(what, wakes));
            }
        }
    }

    fn poll_task(&mut self, id: LockId, waker: &Waker, probing: bool) {
        let mut cx = Context::from_waker(waker);
        let Some(task) = self.tasks.get_mut(&id) else {
            return;
        };
        let mut report = Vec::new();
        let mut remove = false;
        loop {
            match &mut task.stage {
                Stage::Waiting(pending) => match Pin::new(pending).poll(&mut cx) {
                    Poll::Pending => break,
                    Poll::Ready(Ok(guard)) => {
                        let event = LockEvent::Acquired(guard.grant().clone());
                        report.push(event.clone());
                        task.stage = Stage::Held {
                            guard: Arc::new(guard),
                            last: event,
                            release_asked: false,
                        };
                    }
                    Poll::Ready(Err(e)) => {
                        report.push(LockEvent::Failed(fail_reason(e)));
                        remove = true;
                        break;
                    }
                },
                Stage::Held { guard, last, .. } => {
                    let polled = {
                        let mut next = std::pin::pin!(guard.next_event());
                        next.as_mut().poll(&mut cx)
                    };
                    match polled {
                        Poll::Pending => break,
                        Poll::Ready(Some(LockEvent::Lost(reason))) => {
                            report.push(LockEvent::Lost(reason.clone()));
                            let guard = guard.clone();
                            task.stage = Stage::Lost { guard, reason };
                        }
                        Poll::Ready(Some(event)) => {
                            report.push(event.clone());
                            *last = event;
                        }
                        Poll::Ready(None) => {
                            report.push(LockEvent::Lost(LostReason::Closed));
                            remove = true;
                            break;
                        }
                    }
                }
                Stage::Releasing(release) => match release.as_mut().poll(&mut cx) {
                    Poll::Pending => break,
                    Poll::Ready(result) => {
                        report.push(match result {
                            Ok(()) => LockEvent::Released,
                            Err(Error::Lost(reason)) => LockEvent::Lost(reason),
                            Err(_) => LockEvent::Lost(LostReason::Closed),
                        });
                        remove = true;
                        break;
                    }
                },
                Stage::Lost { .. } => break,
            }
        }
        let status = match &task.stage {
            Stage::Held { guard, last, .. } => Some((
                guard.status(),
                match last {
                    LockEvent::Suspended => LockStatus::Suspended,
                    _ => LockStatus::Held,
                },
            )),
            Stage::Lost { guard, reason } => {
                Some((guard.status(), LockStatus::Lost(reason.clone())))
            }
            _ => None,
        };
        for event in report {
            self.out.push_back(Drained::Event { lock: id, event });
        }
        // Checked at the user's own polls (a probe's finds the same).
        if let Some((status, expected)) = status.filter(|_| !probing) {
            if status != expected {
                self.out.push_back(Drained::Broken(
                    crate::ViolationKind::IllegalEvent,
                    format!(
                        "{id}: the guard's status() is {status:?}, but its events say \
                         {expected:?}"
                    ),
                ));
            }
        }
        if remove {
            self.tasks.remove(&id);
        }
        let wakes = self.tasks.get(&id).map(|t| t.wake.wakes());
        if let Some(wakes) = wakes.filter(|_| self.trace && !probing) {
            self.out
                .push_back(Drained::Note(format!("user polled {id} ({wakes} wakes)")));
        }
    }
}

// ----- the executors' wakers, the binding's clock, errors as the core's reasons -----

/// A client's virtual clock: `zero` plus the simulation's time, which the harness
/// sets before every call into the client.
struct SimClock {
    zero: Instant,
    nanos: AtomicU64,
}

impl Clock for SimClock {
    fn now(&self) -> Instant {
        self.zero + Duration::from_nanos(self.nanos.load(Ordering::Relaxed))
    }
}

/// A task's waker, which records that it was woken and how often: the three small
/// executors of the user face (acquisitions, side calls, queries) poll a future
/// only when [`take_woken`] finds its flag set.
pub(crate) struct TaskWaker {
    flag: Arc<WakeFlag>,
    pub(crate) waker: Waker,
}

impl Default for TaskWaker {
    fn default() -> TaskWaker {
        let flag = Arc::new(WakeFlag::default());
        let waker = Waker::from(flag.clone());
        TaskWaker { flag, waker }
    }
}

impl TaskWaker {
    /// Marks the task to be polled at the next drain, as a wake does.
    pub(crate) fn wake(&self) {
        self.flag.woken.store(true, Ordering::Relaxed);
    }

    /// How often the future woke it so far (for the trace and lost wake-ups).
    pub(crate) fn wakes(&self) -> u64 {
        self.flag.wakes.load(Ordering::Relaxed)
    }
}

/// The tasks woken since the last look, with their wakers (clearing their flags).
pub(crate) fn take_woken<K: Copy, T>(
    tasks: &BTreeMap<K, T>,
    wake: impl Fn(&T) -> &TaskWaker,
) -> Vec<(K, Waker)> {
    let woken = |t: &T| wake(t).flag.woken.swap(false, Ordering::Relaxed);
    let with_waker = |(k, t): (&K, &T)| (*k, wake(t).waker.clone());
    tasks
        .iter()
        .filter(|(_, t)| woken(t))
        .map(with_waker)
        .collect()
}

/// What a probe reports when the future `what`, not woken, was ready: a wake-up
/// the client lost (one sentence for the acquisitions, side calls and queries).
pub(crate) fn lost_wake_up(what: impl std::fmt::Display, wakes: u64) -> Drained {
    let detail = format!(
        "lost wake-up: {what} was ready but its waker was not woken ({wakes} wakes so far): \
         an executor would never poll it again"
    );
    Drained::Broken(crate::ViolationKind::Liveness, detail)
}

#[derive(Default)]
struct WakeFlag {
    woken: AtomicBool,
    wakes: AtomicU64,
}

impl Wake for WakeFlag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Relaxed);
        self.wakes.fetch_add(1, Ordering::Relaxed);
    }
}

/// The core's reason behind a failed acquisition's error.
pub(crate) fn fail_reason(e: Error) -> FailReason {
    match e {
        Error::Timeout => FailReason::Timeout,
        Error::Cancelled => FailReason::Cancelled,
        Error::SessionExpired => FailReason::SessionExpired,
        Error::NodeDeleted => FailReason::NodeDeleted,
        Error::Zk(e) => FailReason::Zk(e),
        Error::WouldBlock => FailReason::WouldBlock,
        Error::Revoked => FailReason::Revoked,
        Error::Deadlock { cycle } => FailReason::Deadlock { cycle },
        Error::SelfDeadlock { path, owner, held } => FailReason::SelfDeadlock { path, owner, held },
        Error::Failed(reason) => reason,
        _ => FailReason::Closed,
    }
}

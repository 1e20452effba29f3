//! The driver task: owns the zookeeper-client session and the core's [`Session`],
//! and follows the core's calling contract.
//!
//! * Every core call is followed by [`Driver::drain`], which sends each
//!   [`Output::Request`] at once and in order: zookeeper-client puts a request on the
//!   wire when its method is *called*, so calling them in program order pipelines
//!   them in order (the future only collects the reply). The future is polled once
//!   on the spot to make that call, then parked in a `FuturesUnordered`. For the
//!   requests to also *leave* in order without waiting, the connection needs
//!   TCP_NODELAY, which zookeeper-client does not set: `set_nodelay` sets it after
//!   every (re)connect (see lock-nodelay).
//! * Replies, watch firings (the `OneshotWatcher`s from `get_and_watch_data`, kept
//!   until they fire: dropping one would send a `removeWatches`) and session state
//!   changes are fed back as [`Input`]s; `handle_timeout` runs when `poll_timeout`
//!   is due.
//!
//! # Session states
//!
//! | zookeeper-client `SessionState` | fed to the core |
//! |---|---|
//! | `Disconnected` | `Disconnected` |
//! | `SyncConnected` | `Connected { session_id }` (preceded by `Disconnected` if the driver missed one: the state channel keeps only the latest value) |
//! | `ConnectedReadOnly` | treated as `Disconnected` (read-only sessions are never asked for) |
//! | `Expired`, `AuthFailed`, or `Closed` not asked for | `Expired`, then a new session is opened and announced with `Connected` |
//! | closed by us | `Closed` |
//!
//! zookeeper-client declares `Disconnected` by itself in time for the core's rule
//! (within 2/3 of the session timeout of the last contact): with no connection
//! timeout configured (the adapter never configures one) its tick is 1/20 of the
//! negotiated session timeout, it pings after 3/20 without sending, and it drops the
//! connection once nothing was *received* for 8 ticks = 2/5 of the session timeout,
//! checked every tick. A silent network (no FIN, no RST) is thus reported at most
//! 9/20 = 0.45 of the session timeout after the last byte received, well before 2/3.
//! The tests check this against a blackholing proxy.

use crate::error::{zk_error, Error};
use crate::lock::{GuardState, LockStatus, Notice};
use crate::runtime::Runtime;
use futures::channel::{mpsc, oneshot};
use futures::future::{abortable, AbortHandle, Aborted, BoxFuture};
use futures::stream::{BoxStream, FuturesUnordered};
use futures::{FutureExt, StreamExt};
use lock_core::{
    Config, CreateMode, FailReason, FencedError, Input, LockEvent, LockId, LockSpec, LockState,
    LostReason, MultiOp, MultiResult, Op, Output, Reply, Request, RequestId, Session, SessionEvent,
    Stat, Stats, Timestamp, WatchKind, ZkError,
};
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use zookeeper_client::{Acls, Client, EventType, OneshotWatcher, SessionState, WatchedEvent};

/// What the handles may read without asking the driver.
#[derive(Default)]
pub(crate) struct Shared {
    /// The session id, 0 when there is none.
    session_id: AtomicI64,
    connected: AtomicBool,
}

impl Shared {
    pub(crate) fn session_id(&self) -> Option<i64> {
        match self.session_id.load(Ordering::Acquire) {
            0 => None,
            id => Some(id),
        }
    }

    pub(crate) fn is_connected(&self) -> bool {
        self.connected.load(Ordering::Acquire)
    }
}

/// The outcome of a fenced write, as the guard's caller sees it.
pub(crate) type WriteResult = Result<Vec<MultiResult>, FencedError>;

/// A copy of a task's events for a second listener (an election participant's own
/// stream, besides its leadership guard's), tagged with the task's key.
pub(crate) type Tap = mpsc::UnboundedSender<(u64, LockEvent)>;

/// What a started task is.
pub(crate) enum Task {
    /// An acquisition (lock, permit, election candidacy).
    Acquire {
        spec: LockSpec,
        deadline: Option<Instant>,
    },
    /// An election observer.
    Observe { path: String },
    /// A revocation request.
    Revoke { path: String },
}

/// What handles ask of the driver.
pub(crate) enum Command {
    Start {
        key: u64,
        task: Task,
        notices: mpsc::UnboundedSender<Notice>,
        state: Arc<Mutex<GuardState>>,
        tap: Option<Tap>,
    },
    /// Explicit release of a held lock.
    Release {
        key: u64,
    },
    /// A dropped `lock()` future or guard: cancel if waiting, release if held
    /// (unless a critical section is open: then the node goes without closing it).
    Cancel {
        key: u64,
    },
    /// Open (`open`) or close the critical section of a held lock.
    Section {
        key: u64,
        open: bool,
        reply: oneshot::Sender<Result<(), Error>>,
    },
    /// A write fenced by the lock node.
    FencedWrite {
        key: u64,
        ops: Vec<MultiOp>,
        reply: oneshot::Sender<WriteResult>,
    },
    WaitIdle(oneshot::Sender<()>),
    Stats(oneshot::Sender<Stats>),
    Close(oneshot::Sender<()>),
}

/// Something that finished in the background.
enum Completion {
    Reply {
        id: RequestId,
        result: Result<Reply, ZkError>,
        /// The watch a request left, with its path.
        watcher: Option<(String, OneshotWatcher)>,
    },
    Watch(WatchedEvent),
    /// A data watch dropped on the core's `RemoveWatch`.
    Unwatched,
    Connected(Result<Client, zookeeper_client::Error>),
}

/// What woke the driver.
enum Wake {
    Command(Option<Command>),
    Done(Completion),
    State(SessionState),
    Timer,
    NoDelay(std::io::Result<lock_nodelay::Applied>),
}

/// What the core has been told about the connection.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Fed {
    Connected(i64),
    Disconnected,
    /// No session (expired; a new one is being opened).
    Gone,
}

struct Entry {
    key: u64,
    notices: mpsc::UnboundedSender<Notice>,
    state: Arc<Mutex<GuardState>>,
    tap: Option<Tap>,
    /// Our node, once held.
    path: Option<String>,
    /// The core reported the critical section open (and not closed since), or an
    /// open is in flight (the core sends it again after a reconnect).
    section_open: bool,
    /// Who awaits the outcome of the section request in flight.
    section_waiter: Option<oneshot::Sender<Result<(), Error>>>,
    /// Who awaits each fenced write in flight, by the core's write id.
    writes: HashMap<u64, oneshot::Sender<WriteResult>>,
}

impl Entry {
    fn new(
        key: u64,
        notices: mpsc::UnboundedSender<Notice>,
        state: Arc<Mutex<GuardState>>,
        tap: Option<Tap>,
    ) -> Entry {
        Entry {
            key,
            notices,
            state,
            tap,
            path: None,
            section_open: false,
            section_waiter: None,
            writes: HashMap::new(),
        }
    }
}

pub(crate) struct Driver {
    runtime: Runtime,
    cluster: String,
    requested_timeout: Duration,
    epoch: Instant,
    core: Session,
    client: Option<Arc<Client>>,
    states: Option<BoxStream<'static, SessionState>>,
    fed: Fed,
    inflight: FuturesUnordered<BoxFuture<'static, Completion>>,
    /// Handles to drop the data watches still pending, by path: dropping a
    /// `OneshotWatcher` makes zookeeper-client send `removeWatches`.
    data_watches: HashMap<String, Vec<AbortHandle>>,
    ready: VecDeque<Completion>,
    commands: mpsc::UnboundedReceiver<Command>,
    locks: HashMap<LockId, Entry>,
    keys: HashMap<u64, LockId>,
    idle_waiters: Vec<oneshot::Sender<()>>,
    timer: Option<(Instant, BoxFuture<'static, ()>)>,
    reconnect_at: Option<Instant>,
    shared: Arc<Shared>,
    /// Outcomes of `set_nodelay`, from its helper threads.
    nodelay: (
        mpsc::UnboundedSender<std::io::Result<lock_nodelay::Applied>>,
        mpsc::UnboundedReceiver<std::io::Result<lock_nodelay::Applied>>,
    ),
    /// Told when the first connection has TCP_NODELAY (or could not get it).
    nodelay_ready: Option<oneshot::Sender<()>>,
    /// `set_nodelay` has reported at least once.
    nodelay_reported: bool,
}

impl Driver {
    pub(crate) fn new(
        runtime: Runtime,
        cluster: String,
        requested_timeout: Duration,
        grace: Option<Duration>,
        client: Client,
        commands: mpsc::UnboundedReceiver<Command>,
        shared: Arc<Shared>,
    ) -> Driver {
        let mut config = Config::new(client.session_timeout(), seed(client.session_id().0));
        config.suspended_grace = grace;
        let mut driver = Driver {
            runtime,
            cluster,
            requested_timeout,
            epoch: Instant::now(),
            core: Session::new(config),
            client: None,
            states: None,
            fed: Fed::Gone,
            inflight: FuturesUnordered::new(),
            data_watches: HashMap::new(),
            ready: VecDeque::new(),
            commands,
            locks: HashMap::new(),
            keys: HashMap::new(),
            idle_waiters: Vec::new(),
            timer: None,
            reconnect_at: None,
            shared,
            nodelay: mpsc::unbounded(),
            nodelay_ready: None,
            nodelay_reported: false,
        };
        driver.install(client);
        driver
    }

    /// Resolves once the first connection has TCP_NODELAY, or could not get it
    /// (see `set_nodelay`). Call before `run`.
    pub(crate) fn nodelay_ready(&mut self) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        if self.nodelay_reported {
            let _ = tx.send(());
        } else {
            self.nodelay_ready = Some(tx);
        }
        rx
    }

    /// The driver task.
    pub(crate) async fn run(mut self) {
        loop {
            let wake = futures::future::poll_fn(|cx| self.poll_wake(cx)).await;
            match wake {
                Wake::Command(Some(Command::Close(done))) => {
                    self.shutdown().await;
                    let _ = done.send(());
                    return;
                }
                Wake::Command(Some(command)) => self.on_command(command),
                Wake::Command(None) => {
                    // Every handle, lock and guard is gone.
                    self.shutdown().await;
                    return;
                }
                Wake::Done(completion) => self.on_completion(completion),
                Wake::State(state) => self.on_state(state),
                Wake::Timer => self.on_timer(),
                Wake::NoDelay(outcome) => self.on_nodelay(outcome),
            }
            self.after_step();
        }
    }

    fn poll_wake(&mut self, cx: &mut Context<'_>) -> Poll<Wake> {
        if let Some(done) = self.ready.pop_front() {
            return Poll::Ready(Wake::Done(done));
        }
        // State changes before replies: zookeeper-client publishes a state change
        // before it fails the requests of a lost connection.
        if let Some(states) = &mut self.states {
            if let Poll::Ready(Some(state)) = states.poll_next_unpin(cx) {
                return Poll::Ready(Wake::State(state));
            }
        }
        if let Poll::Ready(Some(done)) = self.inflight.poll_next_unpin(cx) {
            return Poll::Ready(Wake::Done(done));
        }
        if let Poll::Ready(command) = self.commands.poll_next_unpin(cx) {
            return Poll::Ready(Wake::Command(command));
        }
        if let Poll::Ready(Some(outcome)) = self.nodelay.1.poll_next_unpin(cx) {
            return Poll::Ready(Wake::NoDelay(outcome));
        }
        if let Some((_, timer)) = &mut self.timer {
            if timer.as_mut().poll(cx).is_ready() {
                self.timer = None;
                return Poll::Ready(Wake::Timer);
            }
        }
        Poll::Pending
    }

    fn now(&self) -> Timestamp {
        Timestamp::from_duration(self.epoch.elapsed())
    }

    fn timestamp(&self, at: Instant) -> Timestamp {
        Timestamp::from_duration(at.saturating_duration_since(self.epoch))
    }

    /// Feeds one input and drains the outputs.
    fn feed(&mut self, input: Input) {
        let now = self.now();
        self.core.handle_input(input, now);
        self.drain();
    }

    /// Rule 2 of the calling contract: drain after every call; send requests in the
    /// order polled, at once; hand events to the user.
    fn drain(&mut self) {
        while let Some(output) = self.core.poll_output() {
            match output {
                Output::Request(request) => self.send(request),
                Output::Event { lock, event } => self.dispatch(lock, event),
                _ => {}
            }
        }
    }

    fn dispatch(&mut self, lock: LockId, event: LockEvent) {
        let Some(entry) = self.locks.get_mut(&lock) else {
            return;
        };
        // Answers to a guard's own requests go to whoever awaits them, not to the
        // event stream.
        match event {
            LockEvent::FencedWrite { write, result } => {
                if let Some(reply) = entry.writes.remove(&write) {
                    let _ = reply.send(result);
                }
                return;
            }
            LockEvent::SectionOpened | LockEvent::SectionClosed => {
                entry.section_open = event == LockEvent::SectionOpened;
                if let Some(reply) = entry.section_waiter.take() {
                    let _ = reply.send(Ok(()));
                }
                return;
            }
            LockEvent::SectionFailed(e) => {
                if let Some(reply) = entry.section_waiter.take() {
                    let _ = reply.send(Err(Error::Zk(e)));
                }
                return;
            }
            _ => {}
        }
        {
            let mut state = entry.state.lock().unwrap_or_else(|p| p.into_inner());
            match &event {
                LockEvent::Acquired(grant) => {
                    state.status = LockStatus::Held;
                    state.acquired = true;
                    entry.path = Some(grant.path.clone());
                }
                LockEvent::Resumed => state.status = LockStatus::Held,
                LockEvent::Suspended => state.status = LockStatus::Suspended,
                LockEvent::Lost(reason) => state.status = LockStatus::Lost(reason.clone()),
                LockEvent::Released => state.status = LockStatus::Released,
                LockEvent::RevocationRequested => state.revocation_requested = true,
                _ => {}
            }
        }
        // A section call survives a suspension (the core sends it again once the node
        // is verified); it ends with the lock.
        if let LockEvent::Lost(reason) = &event {
            if let Some(reply) = entry.section_waiter.take() {
                let _ = reply.send(Err(Error::Lost(reason.clone())));
            }
        }
        let terminal = event.is_terminal();
        if let Some(tap) = &entry.tap {
            let _ = tap.unbounded_send((entry.key, event.clone()));
        }
        // The receiver may be gone (a dropped future or guard): nothing to tell.
        let _ = entry.notices.unbounded_send(Notice::Event(event));
        if terminal {
            // Waiters left (a section request of a released lock) see their sender
            // dropped.
            if let Some(entry) = self.locks.remove(&lock) {
                self.keys.remove(&entry.key);
            }
        }
    }

    fn on_command(&mut self, command: Command) {
        let now = self.now();
        match command {
            Command::Start {
                key,
                task,
                notices,
                state,
                tap,
            } => {
                let started = match task {
                    Task::Acquire { mut spec, deadline } => {
                        if let Some(deadline) = deadline {
                            spec = spec.deadline(self.timestamp(deadline));
                        }
                        self.core.acquire(spec, now)
                    }
                    Task::Observe { path } => self.core.observe(&path, now),
                    Task::Revoke { path } => self.core.revoke(&path, now),
                };
                match started {
                    Ok(id) => {
                        self.keys.insert(key, id);
                        self.locks.insert(id, Entry::new(key, notices, state, tap));
                    }
                    Err(e) => {
                        let _ = notices.unbounded_send(Notice::Refused(e));
                    }
                }
            }
            Command::Release { key } => {
                if let Some(&id) = self.keys.get(&key) {
                    if let Err(e) = self.core.release(id, now) {
                        if let Some(entry) = self.locks.get(&id) {
                            let _ = entry.notices.unbounded_send(Notice::Refused(e));
                        }
                    }
                }
            }
            Command::Cancel { key } => {
                if let Some(&id) = self.keys.get(&key) {
                    // A dropped guard inside a section leaves the section marked for
                    // the next holder (as a crash there would); otherwise a release.
                    let held = matches!(
                        self.core.state(id),
                        Some(LockState::Held | LockState::Suspended)
                    );
                    if held {
                        let _ = self.core.abandon(id, now);
                    } else {
                        let _ = self.core.cancel(id, now);
                    }
                }
            }
            Command::Section { key, open, reply } => {
                let Some(&id) = self.keys.get(&key) else {
                    let _ = reply.send(Err(Error::Closed));
                    return;
                };
                let result = if open {
                    self.core.open_section(id, now)
                } else {
                    self.core.close_section(id, now)
                };
                match result {
                    Ok(()) => {
                        if let Some(entry) = self.locks.get_mut(&id) {
                            // An open in flight counts as open if the guard is dropped
                            // (its marker may be written before our node goes).
                            entry.section_open |= open;
                            entry.section_waiter = Some(reply);
                        }
                    }
                    Err(e) => {
                        let _ = reply.send(Err(e.into()));
                    }
                }
            }
            Command::FencedWrite { key, ops, reply } => {
                let Some(&id) = self.keys.get(&key) else {
                    let _ = reply.send(Err(FencedError::NotHeld));
                    return;
                };
                match self.core.fenced_write(id, ops, now) {
                    Ok(write) => {
                        if let Some(entry) = self.locks.get_mut(&id) {
                            entry.writes.insert(write, reply);
                        }
                    }
                    // Not held (or not trusted: suspended): nothing was sent.
                    Err(_) => {
                        let _ = reply.send(Err(FencedError::NotHeld));
                    }
                }
            }
            Command::WaitIdle(done) => self.idle_waiters.push(done),
            Command::Stats(done) => {
                let _ = done.send(self.core.stats());
            }
            Command::Close(_) => unreachable!("handled by run"),
        }
        self.drain();
    }

    fn on_completion(&mut self, completion: Completion) {
        match completion {
            Completion::Reply {
                id,
                result,
                watcher,
            } => {
                if let Some((path, watcher)) = watcher {
                    let (changed, handle) = abortable(watcher.changed());
                    self.data_watches.entry(path).or_default().push(handle);
                    self.inflight
                        .push(Box::pin(changed.map(|fired| match fired {
                            Ok(event) => Completion::Watch(event),
                            Err(Aborted) => Completion::Unwatched,
                        })));
                }
                if let (Err(e), Some(client)) = (&result, &self.client) {
                    // zookeeper-client publishes a state change before it fails the
                    // requests it concerns, but the driver may see the failed reply
                    // first: catch up with the state, so that the core hears of the
                    // disconnect (or expiry) before the reply it explains.
                    let state = client.state();
                    let catch_up = match e {
                        ZkError::SessionExpired | ZkError::Closed => is_terminal(state),
                        e if e.is_connection_loss() => {
                            state == SessionState::Disconnected
                                && matches!(self.fed, Fed::Connected(_))
                        }
                        _ => false,
                    };
                    if catch_up {
                        self.on_state(state);
                    }
                }
                self.feed(Input::Reply {
                    request: id,
                    result,
                });
            }
            Completion::Unwatched => {}
            Completion::Watch(event) => {
                // Fired: its handles are spent (a child watch on the same path, if
                // any, just cannot be removed early any more).
                self.data_watches.remove(&event.path);
                let kind = match event.event_type {
                    EventType::NodeDeleted => WatchKind::NodeDeleted,
                    EventType::NodeDataChanged => WatchKind::NodeDataChanged,
                    EventType::NodeCreated => WatchKind::NodeCreated,
                    EventType::NodeChildrenChanged => WatchKind::NodeChildrenChanged,
                    // The session ended; the state channel reports it.
                    EventType::Session => return,
                };
                self.feed(Input::Watch {
                    path: event.path,
                    kind,
                });
            }
            Completion::Connected(Ok(client)) => {
                tracing::debug!(session = client.session_id().0, "new session");
                self.install(client);
            }
            Completion::Connected(Err(e)) => {
                tracing::debug!(error = %e, "reconnect failed; retrying");
                let pause = (self.requested_timeout / 4).min(Duration::from_secs(1));
                self.reconnect_at = Some(Instant::now() + pause);
            }
        }
    }

    /// Takes a freshly connected client into use.
    fn install(&mut self, client: Client) {
        let mut watcher = client.state_watcher();
        // Consume the current state here and get every later change from the stream:
        // no change is seen twice or missed.
        let initial = watcher.state();
        self.states = Some(
            futures::stream::unfold(watcher, |mut w| async move {
                let state = w.changed().await;
                Some((state, w))
            })
            .boxed(),
        );
        self.client = Some(Arc::new(client));
        self.fed = Fed::Disconnected;
        self.on_state(initial);
    }

    fn on_state(&mut self, state: SessionState) {
        let Some(client) = &self.client else { return };
        let session_id = client.session_id().0;
        tracing::debug!(session = session_id, %state, fed = ?self.fed, "session state");
        match state {
            SessionState::SyncConnected => {
                self.set_nodelay();
                if let Fed::Connected(_) = self.fed {
                    // Connected again without us seeing the disconnect in between.
                    self.feed(Input::Session(SessionEvent::Disconnected));
                }
                self.fed = Fed::Connected(session_id);
                self.shared.session_id.store(session_id, Ordering::Release);
                self.shared.connected.store(true, Ordering::Release);
                self.feed(Input::Session(SessionEvent::Connected { session_id }));
            }
            SessionState::Disconnected | SessionState::ConnectedReadOnly => {
                if let Fed::Connected(_) = self.fed {
                    self.fed = Fed::Disconnected;
                    self.shared.connected.store(false, Ordering::Release);
                    self.feed(Input::Session(SessionEvent::Disconnected));
                }
            }
            // Terminal states of this client: the session is gone.
            _ => {
                if self.fed != Fed::Gone {
                    self.fed = Fed::Gone;
                    self.publish();
                    self.feed(Input::Session(SessionEvent::Expired));
                }
                self.client = None;
                self.states = None;
                self.start_connect();
            }
        }
    }

    /// Turns Nagle's algorithm off on the client's connection, new after every
    /// (re)connect: zookeeper-client (0.11.2) leaves it on and writes each request
    /// on its own, so a request sent while an earlier one is unanswered would wait
    /// for that reply (the `getChildren` behind the `create`: 2 round trips for a
    /// free lock instead of 1). lock-nodelay finds the socket among the process's
    /// descriptors by the server's address (see its docs); on a thread of its own,
    /// as it may resolve host names. The outcome comes back as `Wake::NoDelay`.
    fn set_nodelay(&mut self) {
        let tx = self.nodelay.0.clone();
        let started = lock_nodelay::apply_in_background(self.cluster.clone(), move |outcome| {
            let _ = tx.unbounded_send(outcome);
        });
        if let Err(e) = started {
            self.on_nodelay(Err(e));
        }
    }

    fn on_nodelay(&mut self, outcome: std::io::Result<lock_nodelay::Applied>) {
        match outcome {
            Ok(applied) => tracing::debug!(?applied, "TCP_NODELAY"),
            Err(e) => tracing::debug!(error = %e, "TCP_NODELAY could not be set"),
        }
        self.nodelay_reported = true;
        if let Some(ready) = self.nodelay_ready.take() {
            let _ = ready.send(());
        }
    }

    fn start_connect(&mut self) {
        self.reconnect_at = None;
        let connector =
            zookeeper_client::Client::connector().with_session_timeout(self.requested_timeout);
        let cluster = self.cluster.clone();
        let connect = self
            .runtime
            .scope(async move { connector.connect(&cluster).await });
        self.inflight
            .push(Box::pin(connect.map(Completion::Connected)));
    }

    fn on_timer(&mut self) {
        let now = self.now();
        if self.core.poll_timeout().is_some_and(|at| at <= now) {
            self.core.handle_timeout(now);
            self.drain();
        }
        if self.reconnect_at.is_some_and(|at| at <= Instant::now()) {
            self.start_connect();
        }
    }

    /// Re-arms the timer, publishes the connection state and answers idle waiters.
    fn after_step(&mut self) {
        let core_due = self
            .core
            .poll_timeout()
            .map(|at| self.epoch + at.since_epoch());
        let due = match (core_due, self.reconnect_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match due {
            None => self.timer = None,
            Some(at) if self.timer.as_ref().map(|(t, _)| *t) != Some(at) => {
                self.timer = Some((at, self.runtime.sleep_until(at)));
            }
            Some(_) => {}
        }
        self.publish();
        if self.core.is_idle() && !self.idle_waiters.is_empty() {
            for done in self.idle_waiters.drain(..) {
                let _ = done.send(());
            }
        }
    }

    /// Publishes the session id and connection state for the handles (before the
    /// events of a change are dispatched, so that a user reacting to an event sees
    /// the state that caused it).
    fn publish(&self) {
        let (id, connected) = match self.fed {
            Fed::Connected(id) => (id, true),
            Fed::Disconnected => (self.core.session_id().unwrap_or(0), false),
            Fed::Gone => (0, false),
        };
        self.shared.session_id.store(id, Ordering::Release);
        self.shared.connected.store(connected, Ordering::Release);
    }

    /// Ends everything: locks report `Closed`, the session is closed (the server
    /// deletes its nodes), and the driver returns.
    async fn shutdown(&mut self) {
        self.feed(Input::Session(SessionEvent::Closed));
        // The core ends every acquisition on `Closed` (lock-core at 1b7a57c missed a
        // waiting one whose create was never sent); end whatever is left here, so that
        // every acquisition gets exactly one terminal event whatever the core version.
        let left: Vec<LockId> = self.locks.keys().copied().collect();
        for id in left {
            let event = match self.core.state(id) {
                Some(LockState::Held | LockState::Suspended) => LockEvent::Lost(LostReason::Closed),
                // The session's end deleted the node.
                Some(LockState::Releasing) => LockEvent::Released,
                _ => LockEvent::Failed(FailReason::Closed),
            };
            self.dispatch(id, event);
        }
        self.keys.clear();
        self.idle_waiters.clear();
        self.shared.session_id.store(0, Ordering::Release);
        self.shared.connected.store(false, Ordering::Release);
        // Dropping the last `Client` clone (the in-flight requests hold some) makes
        // zookeeper-client send closeSession; wait for it to finish, bounded.
        self.inflight = FuturesUnordered::new();
        self.data_watches.clear();
        self.ready.clear();
        self.client = None;
        if let Some(mut states) = self.states.take() {
            let bound = self
                .runtime
                .sleep_until(Instant::now() + self.core_timeout());
            let closed = async {
                while let Some(state) = states.next().await {
                    if is_terminal(state) {
                        break;
                    }
                }
            };
            futures::pin_mut!(closed);
            futures::future::select(closed, bound).await;
        }
    }

    fn core_timeout(&self) -> Duration {
        self.requested_timeout.max(Duration::from_secs(1))
    }

    /// Sends one request now (the client method is called before this returns).
    fn send(&mut self, request: Request) {
        let Request { id, op } = request;
        let Some(client) = self.client.clone() else {
            // Only possible if the core sends while no session exists; it cannot,
            // but a lost request is a retried one.
            self.ready.push_back(Completion::Reply {
                id,
                result: Err(ZkError::ConnectionLoss),
                watcher: None,
            });
            return;
        };
        let future: BoxFuture<'static, Completion> = match op {
            Op::Create { path, data, mode } => Box::pin(async move {
                let options = create_mode(mode).with_acls(Acls::anyone_all());
                let result = client.create(&path, &data, &options).await;
                let result = result.map_err(zk_error).map(|(stat, sequence)| {
                    let path = if mode == CreateMode::EphemeralSequential {
                        // The server's `%010d` of a signed 32-bit counter.
                        format!("{path}{:010}", sequence.into_i64())
                    } else {
                        path
                    };
                    Reply::Created {
                        path,
                        stat: (!stat.is_invalid()).then(|| core_stat(&stat)),
                    }
                });
                Completion::Reply {
                    id,
                    result,
                    watcher: None,
                }
            }),
            Op::GetChildren { path } => Box::pin(async move {
                let result = client.list_children(&path).await;
                Completion::Reply {
                    id,
                    result: result.map(Reply::Children).map_err(zk_error),
                    watcher: None,
                }
            }),
            Op::WatchChildren { path } => Box::pin(async move {
                match client.list_and_watch_children(&path).await {
                    Ok((children, watcher)) => Completion::Reply {
                        id,
                        result: Ok(Reply::Children(children)),
                        watcher: Some((path, watcher)),
                    },
                    Err(e) => Completion::Reply {
                        id,
                        result: Err(zk_error(e)),
                        watcher: None,
                    },
                }
            }),
            Op::GetData { path, watch: true } => Box::pin(async move {
                match client.get_and_watch_data(&path).await {
                    Ok((data, stat, watcher)) => Completion::Reply {
                        id,
                        result: Ok(Reply::Data {
                            data,
                            stat: core_stat(&stat),
                        }),
                        watcher: Some((path, watcher)),
                    },
                    Err(e) => Completion::Reply {
                        id,
                        result: Err(zk_error(e)),
                        watcher: None,
                    },
                }
            }),
            Op::GetData { path, watch: false } => Box::pin(async move {
                let result = client.get_data(&path).await;
                Completion::Reply {
                    id,
                    result: result
                        .map(|(data, stat)| Reply::Data {
                            data,
                            stat: core_stat(&stat),
                        })
                        .map_err(zk_error),
                    watcher: None,
                }
            }),
            Op::SetData {
                path,
                data,
                version,
            } => Box::pin(async move {
                let result = client.set_data(&path, &data, version).await;
                Completion::Reply {
                    id,
                    result: result.map(|s| Reply::Stat(core_stat(&s))).map_err(zk_error),
                    watcher: None,
                }
            }),
            Op::Delete { path, version } => Box::pin(async move {
                let result = client.delete(&path, version).await;
                Completion::Reply {
                    id,
                    result: result.map(|()| Reply::Deleted).map_err(zk_error),
                    watcher: None,
                }
            }),
            Op::RemoveWatch { path } => {
                // Dropping the watchers (once the aborted futures are polled) sends
                // removeWatches, behind the requests already written.
                for handle in self.data_watches.remove(&path).unwrap_or_default() {
                    handle.abort();
                }
                self.ready.push_back(Completion::Reply {
                    id,
                    result: Ok(Reply::WatchRemoved),
                    watcher: None,
                });
                return;
            }
            Op::Multi(ops) => Box::pin(async move {
                let result = multi(&client, ops).await;
                Completion::Reply {
                    id,
                    result,
                    watcher: None,
                }
            }),
            other => {
                let message = format!("operation not supported by this adapter: {other:?}");
                Box::pin(async move {
                    Completion::Reply {
                        id,
                        result: Err(ZkError::Other(message)),
                        watcher: None,
                    }
                })
            }
        };
        self.start(future);
    }

    /// Polls `future` once right away, which makes its client call (and so puts the
    /// request on the wire in program order), then parks it until its reply.
    fn start(&mut self, mut future: BoxFuture<'static, Completion>) {
        let mut cx = Context::from_waker(futures::task::noop_waker_ref());
        match future.as_mut().poll(&mut cx) {
            // Refused on the spot (e.g. bad arguments): fed after the drain.
            Poll::Ready(done) => self.ready.push_back(done),
            // `FuturesUnordered` polls a pushed future again with the real waker.
            Poll::Pending => self.inflight.push(future),
        }
    }
}

/// A multi as one request (the ops are written into one buffer, sent on commit).
fn multi(
    client: &Client,
    ops: Vec<MultiOp>,
) -> Pin<Box<dyn Future<Output = Result<Reply, ZkError>> + Send + '_>> {
    let mut writer = client.new_multi_writer();
    for op in &ops {
        let added = match op {
            MultiOp::Create { path, data, mode } => {
                let options = create_mode(*mode).with_acls(Acls::anyone_all());
                writer.add_create(path, data, &options)
            }
            MultiOp::Delete { path, version } => writer.add_delete(path, *version),
            MultiOp::SetData {
                path,
                data,
                version,
            } => writer.add_set_data(path, data, *version),
            MultiOp::Check { path, version } => {
                writer.add_check_version(path, version.unwrap_or(-1))
            }
            other => {
                let message = format!("multi op not supported by this adapter: {other:?}");
                return Box::pin(async move { Err(ZkError::Other(message)) });
            }
        };
        if let Err(e) = added {
            return Box::pin(async move { Err(zk_error(e)) });
        }
    }
    let commit = writer.commit();
    Box::pin(async move {
        use zookeeper_client::{MultiWriteError, MultiWriteResult};
        match commit.await {
            Ok(results) => Ok(Reply::Multi(
                results
                    .into_iter()
                    .map(|r| match r {
                        MultiWriteResult::Create { path, .. } => MultiResult::Created { path },
                        MultiWriteResult::Delete => MultiResult::Deleted,
                        MultiWriteResult::SetData { stat } => MultiResult::SetData {
                            stat: core_stat(&stat),
                        },
                        _ => MultiResult::Checked,
                    })
                    .collect(),
            )),
            Err(MultiWriteError::OperationFailed { index, source }) => Err(ZkError::MultiFailed {
                index: u32::try_from(index).unwrap_or(u32::MAX),
                error: Box::new(zk_error(source)),
            }),
            Err(MultiWriteError::RequestFailed { source }) => Err(zk_error(source)),
        }
    })
}

fn create_mode(mode: CreateMode) -> zookeeper_client::CreateMode {
    match mode {
        CreateMode::Persistent => zookeeper_client::CreateMode::Persistent,
        CreateMode::Ephemeral => zookeeper_client::CreateMode::Ephemeral,
        CreateMode::EphemeralSequential => zookeeper_client::CreateMode::EphemeralSequential,
        CreateMode::Container => zookeeper_client::CreateMode::Container,
        // Future modes: the closest safe one (a node that dies with the session).
        _ => zookeeper_client::CreateMode::Ephemeral,
    }
}

fn core_stat(stat: &zookeeper_client::Stat) -> Stat {
    Stat {
        czxid: stat.czxid,
        mzxid: stat.mzxid,
        version: stat.version,
        cversion: stat.cversion,
        ephemeral_owner: stat.ephemeral_owner,
        num_children: stat.num_children,
        data_length: stat.data_length,
        ctime: stat.ctime,
    }
}

fn is_terminal(state: SessionState) -> bool {
    matches!(
        state,
        SessionState::Expired | SessionState::Closed | SessionState::AuthFailed
    )
}

/// The core's seed: the session id mixed with this process's randomness (std's
/// `RandomState` keys are random per process) and the time.
fn seed(session_id: i64) -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_i64(session_id);
    hasher.write_u32(std::process::id());
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        hasher.write_u128(t.as_nanos());
    }
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_formatting_matches_the_server() {
        // The server formats with Java's %010d of an int.
        assert_eq!(format!("{:010}", 0i64), "0000000000");
        assert_eq!(format!("{:010}", 42i64), "0000000042");
        assert_eq!(format!("{:010}", i64::from(i32::MAX)), "2147483647");
        assert_eq!(format!("{:010}", -5i64), "-000000005");
        assert_eq!(format!("{:010}", i64::from(i32::MIN)), "-2147483648");
    }

    #[test]
    fn seeds_differ() {
        assert_ne!(seed(1), seed(1));
        assert_ne!(seed(1), seed(2));
    }

    #[test]
    fn stat_conversion_keeps_the_token_and_owner() {
        let mut stat = zookeeper_client::Stat {
            czxid: 7,
            mzxid: 8,
            pzxid: 9,
            ctime: 0,
            mtime: 0,
            version: 1,
            cversion: 2,
            aversion: 0,
            ephemeral_owner: 99,
            data_length: 3,
            num_children: 0,
        };
        let s = core_stat(&stat);
        assert_eq!((s.czxid, s.ephemeral_owner, s.version), (7, 99, 1));
        stat.czxid = -1;
        assert!(stat.is_invalid());
    }
}

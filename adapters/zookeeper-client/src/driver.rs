//! The driver task: owns the zookeeper-client session and the [`Link`], and runs
//! the canonical binding loop of lock-client: send what the link polls (through
//! [`glue::call`]), feed back replies, watch firings, session changes and time.
//!
//! # Session states
//!
//! | zookeeper-client `SessionState` | fed to the link |
//! |---|---|
//! | `Disconnected` | `Disconnected` |
//! | `SyncConnected` | `Connected { session_id }` (preceded by `Disconnected` if the driver missed one: the state channel keeps only the latest value) |
//! | `ConnectedReadOnly` | treated as `Disconnected` (read-only sessions are never asked for) |
//! | `Expired`, `AuthFailed`, or `Closed` not asked for | `Expired`, then a new session is opened and announced with `Connected` |
//! | closed by us | `Closed` |
//!
//! zookeeper-client declares `Disconnected` by itself in time for the core's rule
//! (the crate docs' "Detecting a silent network in time").
//!
//! With `Disconnected` goes the time since the server last heard from the session
//! (`since_contact`): the core reports held locks lost before the server could
//! expire the session. zookeeper-client keeps its last receive time to itself, so
//! the driver counts from the sending of the newest request the server answered,
//! bounded by what the client's ping and read timeouts allow (13/20 of the session
//! timeout).

use crate::dial::Dial;
use crate::glue::{self, Answer};
use crate::runtime::{in_runtime, Runtime};
use futures::channel::oneshot;
use futures::future::{abortable, AbortHandle, BoxFuture};
use futures::stream::{BoxStream, FuturesUnordered};
use futures::{FutureExt, StreamExt};
use lock_client::Link;
use lock_core::{Op, Reply, Request, RequestId, SessionEvent, WatchKind, ZkError};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use zookeeper_client::{Client, EventType, SessionState, WatchedEvent};

/// What woke the driver.
enum Wake {
    /// A handle changed something: drain the link.
    Link,
    /// The link's timer is due.
    Timer,
    /// The session's state changed.
    State(SessionState),
    /// A request's answer, with when it was sent (`None`: answered locally).
    Reply(RequestId, Answer, Option<Instant>),
    /// A watch fired.
    Watch(WatchedEvent),
    /// A watch dropped on the core's `RemoveWatch`.
    Unwatched,
    /// A new session opened (or failed to) after an expiry.
    Connected(Result<Client, zookeeper_client::Error>),
    /// [`SERVER_CHECK_DELAY`] has passed since a (re)connect.
    CheckServer,
}

/// How long after a (re)connect the server's settings are asked for: out of the
/// way of the session's first requests (the `conf` exchange is a connection of
/// its own that the server answers beside them). The driver waits, on the
/// runtime's timer, not a thread: a client closed sooner (a command-line run)
/// starts no thread for it.
const SERVER_CHECK_DELAY: Duration = Duration::from_millis(100);

/// At most this many wake-ups are fed before the requests they caused are sent:
/// enough to take a burst of replies under one poll of the link, few enough
/// that a steady stream of them does not hold those requests back.
const BATCH: usize = 32;

pub(crate) struct Driver {
    runtime: Arc<dyn Runtime>,
    /// Opens the sessions after an expiry, with the first one's options.
    dial: Dial,
    link: Link,
    client: Option<Arc<Client>>,
    /// `client` is the application's (`Builder::client`): closing ours does not
    /// end its session.
    shared: bool,
    states: Option<BoxStream<'static, SessionState>>,
    /// Replies, watches and reconnects in progress.
    inflight: FuturesUnordered<BoxFuture<'static, Wake>>,
    /// Handles to drop the watches still pending, by path: dropping a
    /// `OneshotWatcher` makes zookeeper-client send `removeWatches`.
    watches: HashMap<String, Vec<AbortHandle>>,
    /// Answered without the server, fed at the next wake-up.
    ready: VecDeque<Wake>,
    timer: Option<(Instant, BoxFuture<'static, ()>)>,
    /// Until the server's settings are asked for after the last (re)connect;
    /// dropped with the driver, so a closed client asks nothing.
    server_check: Option<BoxFuture<'static, ()>>,
    /// When the newest request the server answered on this client was sent: the
    /// server heard from the session no earlier (see `since_contact`).
    contact: Instant,
    /// Told (or dropped) once the first connection has TCP_NODELAY or could not
    /// get it: `connect` returns then.
    nodelay_ready: Option<oneshot::Sender<()>>,
    /// The current session's client, for [`session_client`] (the link's
    /// extension): weak, so that it keeps no session open.
    session_client: Arc<SessionClient>,
}

/// The link's extension of this binding: the current session's client.
type SessionClient = Mutex<Weak<Client>>;

/// The zookeeper-client [`Client`] of `locks`' current session (`None` while
/// no session is open, or once closed), for reads the lock client does not make
/// (listing a directory's children, watching a subtree) without a session of
/// their own. It keeps its session's connection open while held: drop it
/// before [`LockClient::close`](lock_client::LockClient::close), which
/// otherwise waits for it. After an expiry the binding opens a new session,
/// with a new client; an old one answers `SessionExpired`.
pub fn session_client(locks: &lock_client::LockClient) -> Option<Arc<Client>> {
    let current = locks.extension::<SessionClient>()?;
    let client = current
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .upgrade();
    client
}

impl Driver {
    pub(crate) fn new(
        runtime: Arc<dyn Runtime>,
        dial: Dial,
        client: Client,
        shared: bool,
        link: Link,
        nodelay_ready: oneshot::Sender<()>,
    ) -> Driver {
        let mut driver = Driver {
            runtime,
            dial,
            link,
            client: None,
            shared,
            states: None,
            inflight: FuturesUnordered::new(),
            watches: HashMap::new(),
            ready: VecDeque::new(),
            timer: None,
            server_check: None,
            contact: Instant::now(),
            nodelay_ready: Some(nodelay_ready),
            session_client: Arc::new(Mutex::new(Weak::new())),
        };
        driver.link.set_extension(driver.session_client.clone());
        driver.install(client);
        driver
    }

    /// The driver task: poll, send, wait, feed, until the user side is done.
    pub(crate) async fn run(mut self) {
        let mut requests = Vec::new();
        loop {
            let polled = self.link.poll(&mut requests);
            self.send_requests(&mut requests);
            if polled.closed {
                return self.shutdown().await;
            }
            self.arm_timer(polled.timeout);
            futures::future::poll_fn(|cx| self.feed_batch(cx)).await;
        }
    }

    /// Feeds what woke the driver and whatever else is already at hand (up to
    /// [`BATCH`]), so that one [`Link::poll`] answers them all; pending while
    /// nothing is.
    fn feed_batch(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        for fed in 0..BATCH {
            let Poll::Ready(wake) = self.poll_wake(cx) else {
                return if fed == 0 {
                    Poll::Pending
                } else {
                    Poll::Ready(())
                };
            };
            match wake {
                Wake::Link => {}
                Wake::Timer => self.link.handle_timeout(Instant::now()),
                Wake::State(state) => self.on_state(state),
                Wake::CheckServer => self.check_server(),
                done => self.on_completion(done),
            }
        }
        Poll::Ready(())
    }

    fn poll_wake(&mut self, cx: &mut Context<'_>) -> Poll<Wake> {
        if let Some(done) = self.ready.pop_front() {
            return Poll::Ready(done);
        }
        // State changes before replies: zookeeper-client publishes a state change
        // before it fails the requests of a lost connection.
        if let Some(states) = &mut self.states {
            if let Poll::Ready(Some(state)) = states.poll_next_unpin(cx) {
                return Poll::Ready(Wake::State(state));
            }
        }
        if let Poll::Ready(Some(done)) = self.inflight.poll_next_unpin(cx) {
            return Poll::Ready(done);
        }
        if self.link.poll_wake(cx).is_ready() {
            return Poll::Ready(Wake::Link);
        }
        if let Some((_, timer)) = &mut self.timer {
            if timer.as_mut().poll(cx).is_ready() {
                self.timer = None;
                return Poll::Ready(Wake::Timer);
            }
        }
        if let Some(pause) = &mut self.server_check {
            if pause.as_mut().poll(cx).is_ready() {
                self.server_check = None;
                return Poll::Ready(Wake::CheckServer);
            }
        }
        Poll::Pending
    }

    /// Rule 2 of the link: send every request now, in the order polled.
    fn send_requests(&mut self, requests: &mut Vec<Request>) {
        for request in requests.drain(..) {
            if let Op::RemoveWatch { path, .. } = &request.op {
                // Dropping the watchers (once the aborted futures are polled) sends
                // removeWatches, behind the requests already written; the core
                // expects `WatchRemoved` whatever happens.
                for handle in self.watches.remove(path).unwrap_or_default() {
                    handle.abort();
                }
                let answer = (Ok(Reply::WatchRemoved), None);
                self.ready.push_back(Wake::Reply(request.id, answer, None));
                continue;
            }
            let Some(client) = self.client.clone() else {
                // The core sends nothing while no session exists; a lost request
                // is a retried one anyway.
                let answer = (Err(ZkError::ConnectionLoss), None);
                self.ready.push_back(Wake::Reply(request.id, answer, None));
                continue;
            };
            let (id, sent) = (request.id, Some(Instant::now()));
            let call = glue::call(client, request.op, self.dial.acls.clone())
                .map(move |answer| Wake::Reply(id, answer, sent));
            self.start(call.boxed());
        }
    }

    /// Polls `future` once right away, which makes its client call (and so puts the
    /// request on the wire in program order), then parks it until its reply.
    fn start(&mut self, mut future: BoxFuture<'static, Wake>) {
        let mut cx = Context::from_waker(futures::task::noop_waker_ref());
        match future.as_mut().poll(&mut cx) {
            // Refused on the spot (e.g. bad arguments): fed at the next wake-up.
            Poll::Ready(done) => self.ready.push_back(done),
            // `FuturesUnordered` polls a pushed future again with the real waker.
            Poll::Pending => self.inflight.push(future),
        }
    }

    fn arm_timer(&mut self, at: Option<Instant>) {
        match at {
            None => self.timer = None,
            Some(at) if self.timer.as_ref().map(|(t, _)| *t) != Some(at) => {
                self.timer = Some((at, self.runtime.sleep_until(at)));
            }
            Some(_) => {}
        }
    }

    fn on_completion(&mut self, done: Wake) {
        match done {
            Wake::Reply(id, (result, watcher), sent) => {
                // The server heard this request: it touched our session after
                // we sent it.
                let heard = result
                    .as_ref()
                    .map_or_else(ZkError::is_from_server, |_| true);
                if let Some(sent) = sent.filter(|_| heard) {
                    self.contact = self.contact.max(sent);
                }
                if let Some((path, watcher)) = watcher {
                    let (changed, handle) = abortable(watcher.changed());
                    self.watches.entry(path).or_default().push(handle);
                    let fired = changed.map(|fired| fired.map_or(Wake::Unwatched, Wake::Watch));
                    self.inflight.push(Box::pin(fired));
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
                            state == SessionState::Disconnected && self.link.is_connected()
                        }
                        _ => false,
                    };
                    if catch_up {
                        self.on_state(state);
                    }
                }
                self.link.handle_reply(id, result, Instant::now());
            }
            Wake::Unwatched => {}
            Wake::Watch(event) => {
                // Fired: its handles are spent (a child watch on the same path, if
                // any, just cannot be removed early any more).
                self.watches.remove(&event.path);
                let kind = match event.event_type {
                    EventType::NodeDeleted => WatchKind::NodeDeleted,
                    EventType::NodeDataChanged => WatchKind::NodeDataChanged,
                    EventType::NodeCreated => WatchKind::NodeCreated,
                    EventType::NodeChildrenChanged => WatchKind::NodeChildrenChanged,
                    // The session ended; the state channel reports it.
                    EventType::Session => return,
                };
                self.link.handle_watch(event.path, kind, Instant::now());
            }
            Wake::Connected(Ok(client)) => {
                tracing::debug!(session = client.session_id().0, "new session");
                self.shared = false;
                self.install(client);
            }
            Wake::Connected(Err(e)) => {
                tracing::debug!(error = %e, "reconnect failed; retrying");
                let pause = (self.dial.session_timeout / 4).min(Duration::from_secs(1));
                self.start_connect(Some(Instant::now() + pause));
            }
            Wake::Link | Wake::Timer | Wake::State(_) | Wake::CheckServer => {}
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
        let client = Arc::new(client);
        *self
            .session_client
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Arc::downgrade(&client);
        self.client = Some(client);
        self.contact = Instant::now();
        self.on_state(initial);
    }

    /// How long before `now` the server last heard from the session, at most: since
    /// the newest answered request of ours was sent, or, for an idle session, what
    /// zookeeper-client's own timing allows. It pings after 3 ticks without
    /// sending (a tick is 1/20 of the session timeout) and reports `Disconnected`
    /// once nothing was received for 8 ticks, checked every tick: so when it does,
    /// its last ping that reached the server was sent no more than 3 + 8 + 2 = 13
    /// ticks earlier (plus round trips, which the core's margin covers). An
    /// application's own client may have a connection timeout, which makes the
    /// tick up to 3/40 of the session timeout: 13 of those are 39/40.
    fn since_contact(&self, client: &Client, now: Instant) -> Duration {
        let timeout = client.session_timeout();
        let silence = if self.shared {
            timeout * 39 / 40
        } else {
            timeout * 13 / 20
        };
        now.saturating_duration_since(self.contact).min(silence)
    }

    fn on_state(&mut self, state: SessionState) {
        let Some(client) = &self.client else { return };
        let session_id = client.session_id().0;
        tracing::debug!(session = session_id, %state, "session state");
        let now = Instant::now();
        let disconnected = SessionEvent::Disconnected {
            since_contact: self.since_contact(client, now),
        };
        match state {
            SessionState::SyncConnected => {
                self.set_nodelay();
                if self.link.is_connected() {
                    // Connected again without us seeing the disconnect in between.
                    self.link.handle_session(disconnected, now);
                }
                self.link
                    .handle_session(SessionEvent::Connected { session_id }, now);
                // After the link heard of the connection: what the check learns
                // of the server is for this connection.
                self.server_check = Some(self.runtime.sleep_until(now + SERVER_CHECK_DELAY));
            }
            SessionState::Disconnected | SessionState::ConnectedReadOnly => {
                if self.link.is_connected() {
                    self.link.handle_session(disconnected, now);
                }
            }
            // Terminal states of this client: the session is gone.
            _ => {
                if self.link.session_id().is_some() {
                    self.link.handle_session(SessionEvent::Expired, now);
                }
                self.client = None;
                self.states = None;
                self.start_connect(None);
            }
        }
    }

    /// Turns Nagle's algorithm off on the client's connection, new after every
    /// (re)connect: zookeeper-client (0.11.2) leaves it on and writes each request
    /// on its own, so a request sent while an earlier one is unanswered would wait
    /// for that reply (the `getChildren` behind the `create`: 2 round trips for a
    /// free lock instead of 1). lock-nodelay finds the socket among the process's
    /// descriptors by the server's address (see its docs); on a thread of its own
    /// when the connect string names hosts (resolving them may block). Without it
    /// everything works, with Nagle's delays.
    fn set_nodelay(&mut self) {
        let ready = self.nodelay_ready.take();
        let report = move |outcome: std::io::Result<lock_nodelay::Applied>| {
            match outcome {
                Ok(applied) => tracing::debug!(?applied, "TCP_NODELAY"),
                Err(e) => tracing::debug!(error = %e, "TCP_NODELAY could not be set"),
            }
            drop(ready); // `connect` may return
        };
        // Addresses only, no name to resolve: set here and now (a few system
        // calls), without a thread to start and hear back from before the first
        // request may leave.
        if let Some(peers) = lock_nodelay::Peers::literal(&self.dial.cluster) {
            return report(lock_nodelay::apply(&peers));
        }
        let started = lock_nodelay::apply_in_background(self.dial.cluster.clone(), report);
        if let Err(e) = started {
            tracing::debug!(error = %e, "TCP_NODELAY could not be set");
        }
    }

    /// Asks the server the client is now connected to for its settings (`conf`)
    /// and has lock-client judge them for this session (a `ServerHazard` event
    /// and a warning when a majority could expire the session while this server
    /// still answers it). On a thread of its own (the exchanges block), called
    /// [`SERVER_CHECK_DELAY`] after the connect: nothing waits for it.
    fn check_server(&self) {
        let checker = self.link.server_checker();
        let started = lock_nodelay::ask_connected_servers_all_after(
            Duration::ZERO,
            self.dial.cluster.clone(),
            &["srvr", "conf"],
            move |all| checker.report_probes(lock_client::ServerProbe::from_answers(all)),
        );
        if let Err(e) = started {
            tracing::debug!(error = %e, "the server's settings could not be checked");
        }
    }

    /// Opens a new session, at `at` (a pause after a failed attempt) or now.
    fn start_connect(&mut self, at: Option<Instant>) {
        let pause = at.map(|at| self.runtime.sleep_until(at));
        let connect = in_runtime(&self.runtime, self.dial.clone().connect());
        let connect = async move {
            if let Some(pause) = pause {
                pause.await;
            }
            Wake::Connected(connect.await)
        };
        self.inflight.push(Box::pin(connect));
    }

    /// Ends everything (rule 6 of the link): the replies to the requests already
    /// sent are fed first (a release in flight when `close` was called completes
    /// as released), then locks report `Closed`, the session is closed (the server
    /// deletes its nodes), and dropping the link at the end lets
    /// `LockClient::close` return.
    async fn shutdown(mut self) {
        // Watches are of no use any more; aborted, their futures end at once.
        for (_, handles) in self.watches.drain() {
            handles.iter().for_each(AbortHandle::abort);
        }
        // Dropping our clone lets zookeeper-client send closeSession as soon as the
        // requests in flight no longer hold one (a `delete` holds none): right
        // behind them. The server answers in order, closeSession last.
        let had_session = self.client.take().is_some();
        if !had_session {
            // Between an expiry and the next session nothing is in flight but a
            // reconnect, which is dropped unanswered.
            self.inflight = FuturesUnordered::new();
        }
        if !self.shared {
            let timeout = self.dial.session_timeout.max(Duration::from_secs(1));
            let deadline = Instant::now() + timeout;
            self.feed_last_replies(deadline).await;
            self.link
                .handle_session(SessionEvent::Closed, Instant::now());
            self.inflight = FuturesUnordered::new();
            self.wait_closed(deadline).await;
        } else {
            // The application's session lives on; nothing to wait for.
            self.link
                .handle_session(SessionEvent::Closed, Instant::now());
        }
    }

    /// Feeds the replies of the requests in flight (and those answered locally)
    /// until none is left or `deadline`; a watch a reply sets is dropped, and what
    /// the core asks for meanwhile is not sent.
    async fn feed_last_replies(&mut self, deadline: Instant) {
        let bound = self.runtime.sleep_until(deadline);
        let fed = async {
            loop {
                let done = match self.ready.pop_front() {
                    Some(done) => Some(done),
                    None => self.inflight.next().await,
                };
                match done {
                    Some(Wake::Reply(id, (result, _watcher), _)) => {
                        self.link.handle_reply(id, result, Instant::now())
                    }
                    Some(_) => {}
                    None => break,
                }
            }
        };
        futures::pin_mut!(fed);
        futures::future::select(fed, bound).await;
    }

    /// Waits (until `deadline`) for zookeeper-client to report the session closed.
    async fn wait_closed(&mut self, deadline: Instant) {
        let Some(mut states) = self.states.take() else {
            return;
        };
        let bound = self.runtime.sleep_until(deadline);
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

fn is_terminal(state: SessionState) -> bool {
    matches!(
        state,
        SessionState::Expired | SessionState::Closed | SessionState::AuthFailed
    )
}

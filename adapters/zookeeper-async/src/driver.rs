//! The driver task: owns the zookeeper-async client and the [`Link`], and runs
//! lock-client's binding loop: send what the link polls (through [`glue::call`]),
//! feed back replies, watch firings, session changes and time, and watch the
//! connection itself (the crate notices a silent one too late, see the crate docs).

use crate::glue::{self, Dial, Opened, Report};
use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use lock_client::{ConnectOptions, Link};
use lock_core::{Reply, RequestId, SessionEvent, WatchKind, ZkError};
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use zookeeper_async::{WatchedEventType, ZkState, ZooKeeper};

/// A call's or an opening's outcome.
pub(crate) enum Done {
    /// `id` is `None` for the driver's own requests (probes, credentials).
    Reply {
        generation: u64,
        seq: u64,
        id: Option<RequestId>,
        result: Result<Reply, ZkError>,
        sent: Instant,
    },
    Opened(Result<Opened, ZkError>),
}

/// What woke the driver.
enum Wake {
    Report(Report),
    Done(Done),
    Link,
    Timer,
}

pub(crate) struct Driver {
    link: Link,
    dial: Dial,
    options: ConnectOptions,
    seed: u64,
    /// The session timeout everything is timed by (the one granted, when known).
    timeout: Duration,
    /// Counts the clients opened: reports of replaced ones are ignored.
    generation: u64,
    zk: Option<Arc<ZooKeeper>>,
    session_id: i64,
    marker: Arc<str>,
    acl: Arc<[zookeeper_async::Acl]>,
    reports_tx: UnboundedSender<Report>,
    reports: UnboundedReceiver<Report>,
    inflight: FuturesUnordered<BoxFuture<'static, Done>>,
    ready: VecDeque<Done>,
    /// The link was told `Connected`, and nothing since says otherwise.
    live: bool,
    /// The crate's last state was `Connected`.
    crate_connected: bool,
    /// When the newest request the server answered was sent: the server heard
    /// from the session no earlier.
    contact: Instant,
    /// When the newest answer arrived.
    heard: Instant,
    /// Send times of the unanswered requests, by sequence number.
    pending: HashMap<u64, Instant>,
    next_seq: u64,
}

impl Driver {
    /// A driver on the session `opened`, fed to the link at once (`Connected`).
    pub(crate) fn new(
        link: Link,
        dial: Dial,
        options: ConnectOptions,
        seed: u64,
        timeout: Duration,
        opened: Opened,
        reports: (UnboundedSender<Report>, UnboundedReceiver<Report>),
    ) -> Driver {
        let now = Instant::now();
        let mut driver = Driver {
            link,
            acl: dial.acl.clone().into(),
            dial,
            options,
            seed,
            timeout,
            generation: 0,
            zk: None,
            session_id: 0,
            marker: "".into(),
            reports_tx: reports.0,
            reports: reports.1,
            inflight: FuturesUnordered::new(),
            ready: VecDeque::new(),
            live: false,
            crate_connected: false,
            contact: now,
            heard: now,
            pending: HashMap::new(),
            next_seq: 0,
        };
        driver.install(opened);
        driver
    }

    /// Drain, wait, feed, until the user side is done.
    pub(crate) async fn run(mut self) {
        loop {
            self.send_requests();
            if self.link.is_closed() {
                return self.shutdown().await;
            }
            let at = [self.link.poll_timeout(), self.next_check()]
                .into_iter()
                .flatten()
                .min();
            let mut timer = at.map(|at| Box::pin(tokio::time::sleep_until(at.into())));
            let wake = futures::future::poll_fn(|cx| self.poll_wake(cx, timer.as_mut())).await;
            let now = Instant::now();
            match wake {
                Wake::Report(report) => self.on_report(report, now),
                Wake::Done(done) => self.on_done(done, now),
                Wake::Link | Wake::Timer => {}
            }
            if self.link.poll_timeout().is_some_and(|at| at <= now) {
                self.link.handle_timeout(now);
            }
            self.check_connection(now);
        }
    }

    fn poll_wake(
        &mut self,
        cx: &mut Context<'_>,
        timer: Option<&mut std::pin::Pin<Box<tokio::time::Sleep>>>,
    ) -> Poll<Wake> {
        if let Some(done) = self.ready.pop_front() {
            return Poll::Ready(Wake::Done(done));
        }
        // Reports before replies: the crate reports `Connecting` before it fails
        // the requests of the connection it dropped.
        if let Poll::Ready(Some(report)) = self.reports.poll_recv(cx) {
            return Poll::Ready(Wake::Report(report));
        }
        if let Poll::Ready(Some(done)) = self.inflight.poll_next_unpin(cx) {
            return Poll::Ready(Wake::Done(done));
        }
        if self.link.poll_wake(cx).is_ready() {
            return Poll::Ready(Wake::Link);
        }
        match timer.map(|t| t.as_mut().poll(cx)) {
            Some(Poll::Ready(())) => Poll::Ready(Wake::Timer),
            _ => Poll::Pending,
        }
    }

    /// Rule 2 of the link: every request now, in the order polled.
    fn send_requests(&mut self) {
        while let Some(request) = self.link.poll_request() {
            match self.zk.clone() {
                Some(zk) => {
                    let (acl, marker) = (self.acl.clone(), self.marker.clone());
                    let call = async move { glue::call(&zk, request.op, &acl, &marker).await };
                    self.issue(Some(request.id), call);
                }
                // No session (between an expiry and the next): a lost request is
                // a retried one anyway.
                None => self.ready.push_back(Done::Reply {
                    generation: self.generation,
                    seq: u64::MAX,
                    id: Some(request.id),
                    result: Err(ZkError::ConnectionLoss),
                    sent: Instant::now(),
                }),
            }
        }
    }

    /// Starts a call: polled once right away, so that it takes its place in the
    /// crate's request queue (a fair lock, then a channel) in program order;
    /// `unconstrained`, so that tokio's budget cannot make that poll return early.
    fn issue(
        &mut self,
        id: Option<RequestId>,
        call: impl std::future::Future<Output = Result<Reply, ZkError>> + Send + 'static,
    ) {
        let (seq, sent, generation) = (self.next_seq, Instant::now(), self.generation);
        self.next_seq += 1;
        self.pending.insert(seq, sent);
        let done = async move {
            let result = call.await;
            Done::Reply {
                generation,
                seq,
                id,
                result,
                sent,
            }
        };
        let mut future: BoxFuture<'static, Done> = Box::pin(tokio::task::unconstrained(done));
        let mut cx = Context::from_waker(futures::task::noop_waker_ref());
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(done) => self.ready.push_back(done),
            // `FuturesUnordered` polls it again with the real waker.
            Poll::Pending => self.inflight.push(future),
        }
    }

    fn on_done(&mut self, done: Done, now: Instant) {
        match done {
            Done::Reply {
                generation,
                seq,
                id,
                result,
                sent,
            } => {
                let current = generation == self.generation && self.pending.remove(&seq).is_some();
                let from_server = result
                    .as_ref()
                    .map_or_else(ZkError::is_from_server, |_| true);
                if current && from_server {
                    self.contact = self.contact.max(sent);
                    self.heard = now;
                    if !self.live && self.crate_connected {
                        // The silence that made us report a disconnect is over, on
                        // the same connection (so the same session).
                        self.connected(now);
                    }
                }
                if let Some(id) = id {
                    self.link.handle_reply(id, result, now);
                }
            }
            Done::Opened(Ok(opened)) => self.install(opened),
            Done::Opened(Err(e)) => {
                tracing::debug!(error = %e, "no new session yet; retrying");
                self.open(Some(self.timeout / 4));
            }
        }
    }

    fn on_report(&mut self, report: Report, now: Instant) {
        match report {
            // Before `install`, a new client's reports are of the session it is
            // still opening (`open` learns its id).
            Report::State(generation, state)
                if generation == self.generation && self.zk.is_some() =>
            {
                self.on_state(state, now)
            }
            Report::Watch(generation, event) if generation == self.generation => {
                let kind = match event.event_type {
                    WatchedEventType::NodeCreated => WatchKind::NodeCreated,
                    WatchedEventType::NodeDeleted => WatchKind::NodeDeleted,
                    WatchedEventType::NodeDataChanged => WatchKind::NodeDataChanged,
                    WatchedEventType::NodeChildrenChanged => WatchKind::NodeChildrenChanged,
                    _ => return,
                };
                // Not while the connection is believed down: the core re-lists and
                // re-watches on `Connected`, and a notification may be the last
                // thing a dying session says (the server fires our watches as it
                // expires it).
                if let (Some(path), true) = (event.path, self.live) {
                    self.link.handle_watch(path, kind, now);
                }
            }
            Report::State(..) | Report::Watch(..) => {}
        }
    }

    #[allow(deprecated)] // `NotConnected`: what the crate reports for an expired session
    fn on_state(&mut self, state: ZkState, now: Instant) {
        tracing::debug!(session = self.session_id, ?state, "session state");
        match state {
            ZkState::Connected => {
                self.crate_connected = true;
                if !self.live {
                    // Reconnected into the same session (after an expiry the crate
                    // reports `NotConnected` first). The server keeps credentials
                    // per connection and the crate does not send them again: they
                    // go first, ahead of every request the core sends once told.
                    let (zk, dial) = (self.zk.clone(), self.dial.clone());
                    if let (Some(zk), false) = (zk, dial.auth.is_empty()) {
                        let auth =
                            async move { dial.authenticate(&zk).await.map(|()| Reply::Synced) };
                        self.issue(None, auth);
                    }
                    // Reopening a session on a server revalidates it with the leader.
                    self.contact = now;
                    self.connected(now);
                }
            }
            ZkState::Connecting | ZkState::ConnectedReadOnly | ZkState::Associating => {
                self.crate_connected = false;
                self.disconnected(now);
            }
            // Expired (`NotConnected`), refused credentials, or closed: this
            // client's session is over, and the crate would silently open another.
            ZkState::NotConnected | ZkState::AuthFailed | ZkState::Closed => {
                if self.link.session_id().is_some() {
                    self.link.handle_session(SessionEvent::Expired, now);
                }
                self.live = false;
                self.crate_connected = false;
                self.retire();
                self.open(None);
            }
        }
    }

    fn connected(&mut self, now: Instant) {
        self.live = true;
        self.heard = now;
        let session_id = self.session_id;
        self.link
            .handle_session(SessionEvent::Connected { session_id }, now);
    }

    fn disconnected(&mut self, now: Instant) {
        if std::mem::take(&mut self.live) {
            let since_contact = now.saturating_duration_since(self.contact);
            self.link
                .handle_session(SessionEvent::Disconnected { since_contact }, now);
        }
    }

    /// When [`check_connection`](Self::check_connection) has something to do.
    fn next_check(&self) -> Option<Instant> {
        if !self.live {
            return None;
        }
        Some(match self.pending.values().min() {
            Some(oldest) => *oldest + self.timeout / 3,
            None => self.heard + self.timeout / 4,
        })
    }

    /// The crate notices a silent connection only after twice its ping interval
    /// in whole seconds (a whole session timeout and more), so the binding
    /// watches it as the Java client does: a connection idle for T/4 is probed,
    /// and a request unanswered for T/3 reports `Disconnected`, at most 7/12 T
    /// after the last answer (the link's rule is 2/3).
    fn check_connection(&mut self, now: Instant) {
        let Some(at) = self.next_check().filter(|at| *at <= now) else {
            return;
        };
        if self.pending.is_empty() {
            if let Some(zk) = self.zk.clone() {
                let probe = async move {
                    zk.exists("/", false)
                        .await
                        .map(|_| Reply::Synced)
                        .map_err(glue::zk_error)
                };
                self.issue(None, probe);
            }
        } else {
            tracing::debug!(silent_since = ?now - at, "no answer for T/3: disconnected");
            self.disconnected(now);
        }
    }

    /// Takes a freshly opened session into use and tells the link.
    fn install(&mut self, opened: Opened) {
        let now = Instant::now();
        if opened.timeout != self.timeout {
            self.timeout = opened.timeout;
            self.link
                .reconfigure(self.options.lock_config(opened.timeout, self.seed));
        }
        self.zk = Some(Arc::new(opened.zk));
        self.session_id = opened.session_id;
        self.marker = opened.marker.into();
        self.crate_connected = true;
        self.contact = now;
        self.connected(now);
    }

    /// Stops using the current client, and closes it in the background.
    fn retire(&mut self) {
        self.generation += 1;
        self.pending.clear();
        if let Some(zk) = self.zk.take() {
            tokio::spawn(async move { glue::close(&zk).await });
        }
    }

    /// Opens a new session, after `pause` (following a failed attempt).
    fn open(&mut self, pause: Option<Duration>) {
        let (dial, reports, generation) =
            (self.dial.clone(), self.reports_tx.clone(), self.generation);
        let bound = self.timeout * 2 + Duration::from_secs(4);
        self.inflight.push(Box::pin(async move {
            if let Some(pause) = pause {
                tokio::time::sleep(pause).await;
            }
            let opened = tokio::time::timeout(bound, dial.open(generation, reports)).await;
            Done::Opened(opened.unwrap_or(Err(ZkError::ConnectionLoss)))
        }));
    }

    /// Rule 6 of the link: locks report `Closed`, the session is closed (the
    /// server deletes its nodes), and dropping the link lets `close` return.
    async fn shutdown(mut self) {
        self.link
            .handle_session(SessionEvent::Closed, Instant::now());
        self.inflight = FuturesUnordered::new();
        if let Some(zk) = self.zk.take() {
            glue::close(&zk).await;
        }
    }
}

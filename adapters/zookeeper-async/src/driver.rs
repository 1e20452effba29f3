//! The driver task: owns the client and the [`Link`], runs lock-client's binding
//! loop, and watches the connection itself.

use crate::glue::{self, Dial, Opened, Report};
use futures::future::{ready, BoxFuture};
use futures::stream::{FuturesUnordered, StreamExt};
use lock_client::{ConnectOptions, Link, ZkError};
use lock_core::{Reply, RequestId, SessionEvent, WatchKind};
use std::collections::HashMap;
use std::future::Future;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use zookeeper_async::{WatchedEventType as Event, ZkState};

/// A call's outcome (generation, sequence number, request: none for the
/// driver's own, sent at), or a new session's.
enum Done {
    Reply(u64, u64, Option<RequestId>, Result<Reply, ZkError>, Instant),
    Opened(Result<Opened, ZkError>),
}

/// The reports channel, fed by the crate's listener and watcher.
pub(crate) type Reports = (UnboundedSender<Report>, UnboundedReceiver<Report>);

pub(crate) struct Driver {
    link: Link,
    dial: Dial,
    /// What `Link::reconfigure` needs: the options and the seed.
    config: (ConnectOptions, u64),
    /// The session in use (none between an expiry and the next).
    session: Option<Opened>,
    /// Counts the clients opened: reports of replaced ones are ignored.
    generation: u64,
    reports: Reports,
    inflight: FuturesUnordered<BoxFuture<'static, Done>>,
    /// The link was told `Connected`, and nothing since says otherwise.
    live: bool,
    /// When the newest request the server answered was sent (it heard from the
    /// session no earlier), and when an answer last arrived.
    contact: Instant,
    heard: Instant,
    /// Send times of the unanswered requests, by sequence number.
    pending: HashMap<u64, Instant>,
    seq: u64,
}

impl Driver {
    /// A driver on the session `opened`, fed to the link at once.
    pub(crate) fn new(
        link: Link,
        dial: Dial,
        config: (ConnectOptions, u64),
        opened: Opened,
        reports: Reports,
    ) -> Driver {
        let (now, inflight, pending) = (Instant::now(), FuturesUnordered::new(), HashMap::new());
        let (session, generation, live, seq) = (None, 0, false, 0);
        let mut driver = Driver {
            link,
            dial,
            config,
            session,
            generation,
            reports,
            inflight,
            live,
            contact: now,
            heard: now,
            pending,
            seq,
        };
        driver.install(opened);
        driver
    }

    /// Drain, wait, feed, until the user side is done.
    pub(crate) async fn run(mut self) {
        loop {
            while let Some(request) = self.link.poll_request() {
                self.send(request);
            }
            if self.link.is_closed() {
                // Rule 6: locks report `Closed`, the session is closed (the server
                // deletes its nodes), and dropping the link lets `close` return.
                self.link.handle_session(SessionEvent::Closed, Instant::now());
                return glue::close(self.session.take().map(|s| s.zk)).await;
            }
            let at = [self.link.poll_timeout(), self.next_check()].into_iter().flatten().min();
            let mut timer = at.map(|at| Box::pin(tokio::time::sleep_until(at.into())));
            let woke = futures::future::poll_fn(|cx| self.poll_wake(cx, timer.as_mut())).await;
            let now = Instant::now();
            match woke {
                Some(Ok(report)) => self.on_report(report, now),
                Some(Err(done)) => self.on_done(done, now),
                None => {}
            }
            if self.link.poll_timeout().is_some_and(|at| at <= now) {
                self.link.handle_timeout(now);
            }
            self.check_connection(now);
        }
    }

    /// A report, a completion, or `None`: a handle's change, or the timer.
    #[allow(clippy::type_complexity)]
    fn poll_wake(
        &mut self,
        cx: &mut Context<'_>,
        timer: Option<&mut std::pin::Pin<Box<tokio::time::Sleep>>>,
    ) -> Poll<Option<Result<Report, Done>>> {
        // Reports before replies: the crate reports `Connecting` before it fails
        // the requests of the connection it dropped.
        if let Poll::Ready(Some(report)) = self.reports.1.poll_recv(cx) {
            return Poll::Ready(Some(Ok(report)));
        }
        if let Poll::Ready(Some(done)) = self.inflight.poll_next_unpin(cx) {
            return Poll::Ready(Some(Err(done)));
        }
        let timer = timer.is_some_and(|t| t.as_mut().poll(cx).is_ready());
        if self.link.poll_wake(cx).is_ready() || timer {
            Poll::Ready(None)
        } else {
            Poll::Pending
        }
    }

    /// Rule 2 of the link: every request at once, in the order polled.
    fn send(&mut self, request: lock_core::Request) {
        let Some(Opened { zk, marker, .. }) = self.session.clone() else {
            // Between an expiry and the next session: lost, so retried.
            let lost = Done::Reply(
                self.generation,
                u64::MAX,
                Some(request.id),
                Err(ZkError::ConnectionLoss),
                Instant::now(),
            );
            return self.inflight.push(Box::pin(ready(lost)));
        };
        let acl = self.dial.acl.clone();
        self.issue(
            Some(request.id),
            async move { glue::call(&zk, request.op, &acl, &marker).await },
        );
    }

    /// Starts a call, polled once at once so that it takes its place in the
    /// crate's queue (a fair lock, then a channel) in program order;
    /// `unconstrained`, so that tokio's budget cannot cut that first poll short.
    fn issue(
        &mut self,
        id: Option<RequestId>,
        call: impl Future<Output = Result<Reply, ZkError>> + Send + 'static,
    ) {
        let (generation, seq, sent) = (self.generation, self.seq, Instant::now());
        (self.seq, _) = (seq + 1, self.pending.insert(seq, sent));
        let done = async move { Done::Reply(generation, seq, id, call.await, sent) };
        let mut future: BoxFuture<'static, Done> = Box::pin(tokio::task::unconstrained(done));
        match future.as_mut().poll(&mut Context::from_waker(futures::task::noop_waker_ref())) {
            Poll::Ready(done) => self.inflight.push(Box::pin(ready(done))),
            Poll::Pending => self.inflight.push(future),
        }
    }

    fn on_done(&mut self, done: Done, now: Instant) {
        match done {
            Done::Reply(generation, seq, id, result, sent) => {
                let current = generation == self.generation && self.pending.remove(&seq).is_some();
                if current && result.as_ref().map_or_else(ZkError::is_from_server, |_| true) {
                    (self.contact, self.heard) = (self.contact.max(sent), now);
                    if !self.live {
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
                self.open(self.config.0.requested_session_timeout() / 4);
            }
        }
    }

    #[allow(deprecated)] // `NotConnected`: what the crate reports for an expired session
    fn on_report(&mut self, report: Report, now: Instant) {
        match report {
            // Before `install`, a new client's reports are of a session still opening.
            Report::State(g, _) | Report::Watch(g, _)
                if g != self.generation || self.session.is_none() => {}
            Report::Watch(_, event) => {
                let kind = match event.event_type {
                    Event::NodeCreated => WatchKind::NodeCreated,
                    Event::NodeDeleted => WatchKind::NodeDeleted,
                    Event::NodeDataChanged => WatchKind::NodeDataChanged,
                    Event::NodeChildrenChanged => WatchKind::NodeChildrenChanged,
                    _ => return,
                };
                // Not while the connection is believed down: the core re-lists on
                // `Connected`, and a dying session's server fires our watches.
                if let (Some(path), true) = (event.path, self.live) {
                    self.link.handle_watch(path, kind, now);
                }
            }
            Report::State(_, ZkState::Connected) if !self.live => {
                // Reconnected into the same session (an expiry is `NotConnected`
                // first). The server keeps credentials per connection and the
                // crate does not resend them: they go first.
                if let (Some(s), false) = (self.session.clone(), self.dial.auth.is_empty()) {
                    let dial = self.dial.clone();
                    self.issue(None, async move {
                        dial.authenticate(&s.zk).await.map(|()| Reply::Synced)
                    });
                }
                // Reopening a session revalidates it with the leader.
                self.contact = now;
                self.connected(now);
            }
            Report::State(_, ZkState::Connected) => {}
            Report::State(
                _,
                ZkState::Connecting | ZkState::ConnectedReadOnly | ZkState::Associating,
            ) => self.disconnected(now),
            // Expired, refused credentials, closed: the session is over (and the
            // crate would silently open another one): a new client.
            Report::State(_, ZkState::NotConnected | ZkState::AuthFailed | ZkState::Closed) => {
                if self.link.session_id().is_some() {
                    self.link.handle_session(SessionEvent::Expired, now);
                }
                (self.live, self.generation) = (false, self.generation + 1);
                self.pending.clear();
                tokio::spawn(glue::close(self.session.take().map(|s| s.zk)));
                self.open(Duration::ZERO);
            }
        }
    }

    fn connected(&mut self, now: Instant) {
        (self.live, self.heard) = (true, now);
        let session_id = self.session.as_ref().map_or(0, |s| s.session_id);
        self.link.handle_session(SessionEvent::Connected { session_id }, now);
    }

    fn disconnected(&mut self, now: Instant) {
        if std::mem::take(&mut self.live) {
            let since_contact = now.saturating_duration_since(self.contact);
            self.link.handle_session(SessionEvent::Disconnected { since_contact }, now);
        }
    }

    /// When [`check_connection`](Self::check_connection) has something to do.
    fn next_check(&self) -> Option<Instant> {
        let timeout = self.session.as_ref()?.timeout;
        let oldest = self.pending.values().min();
        self.live.then(|| oldest.map_or(self.heard + timeout / 4, |sent| *sent + timeout / 3))
    }

    /// The crate notices a silent connection only after twice its ping interval
    /// in whole seconds (a session timeout and more), so the binding watches it
    /// as the Java client does: idle for T/4, it is probed; a request unanswered
    /// for T/3 reports `Disconnected`, at most 7/12 T after the last answer.
    fn check_connection(&mut self, now: Instant) {
        if self.next_check().is_none_or(|at| at > now) {
        } else if !self.pending.is_empty() {
            self.disconnected(now);
        } else if let Some(s) = self.session.clone() {
            self.issue(None, async move {
                s.zk.exists("/", false).await.map(|_| Reply::Synced).map_err(glue::zk_error)
            });
        }
    }

    /// Takes a freshly opened session into use (timed by the timeout granted,
    /// given to the core before it hears of the session) and tells the link.
    fn install(&mut self, opened: Opened) {
        let (options, seed) = &self.config;
        self.link.reconfigure(options.lock_config(opened.timeout, *seed));
        (self.session, self.contact) = (Some(opened), Instant::now());
        self.connected(self.contact);
    }

    /// Opens a new session, after `pause` (following a failed attempt).
    fn open(&mut self, pause: Duration) {
        let (dial, reports, generation) =
            (self.dial.clone(), self.reports.0.clone(), self.generation);
        self.inflight.push(Box::pin(async move {
            tokio::time::sleep(pause).await;
            Done::Opened(dial.open(generation, reports).await)
        }));
    }
}

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

/// A call's outcome (generation, sequence, the core's request id, sent at), or a session's.
enum Done {
    Reply(u64, u64, Option<RequestId>, Result<Reply, ZkError>, Instant),
    Opened(Result<Opened, ZkError>),
}

/// The reports channel, fed by the crate's listener and watcher.
pub(crate) type Reports = (UnboundedSender<Report>, UnboundedReceiver<Report>);

pub(crate) struct Driver {
    pub(crate) link: Link,
    pub(crate) dial: Dial,
    /// What `Link::reconfigure` needs: the options and the seed.
    pub(crate) config: (ConnectOptions, u64),
    pub(crate) reports: Reports,
    /// Send time of the newest request the server answered (it heard us no earlier).
    pub(crate) contact: Instant,
    pub(crate) s: State,
}

/// The driver's changing state.
#[derive(Default)]
pub(crate) struct State {
    /// The session in use (none between an expiry and the next).
    session: Option<Opened>,
    /// Counts the clients opened: reports of replaced ones are ignored.
    generation: u64,
    inflight: FuturesUnordered<BoxFuture<'static, Done>>,
    timer: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
    /// The link was told `Connected`, and nothing since says otherwise.
    live: bool,
    /// Send times of the unanswered requests, by sequence number.
    pending: HashMap<u64, Instant>,
    seq: u64,
}

impl Driver {
    /// Drain, wait, feed, until the user side is done.
    pub(crate) async fn run(mut self) {
        let mut requests = Vec::new();
        loop {
            let polled = self.link.poll(&mut requests);
            requests.drain(..).for_each(|request| self.send(request));
            if polled.closed {
                // Rule 6: `Closed`, then closing the session deletes its nodes.
                self.link
                    .handle_session(SessionEvent::Closed, Instant::now());
                return glue::close(self.s.session.take().map(|s| s.zk)).await;
            }
            let at = [polled.timeout, self.next_check()]
                .into_iter()
                .flatten()
                .min();
            self.s.timer = at.map(|at| Box::pin(tokio::time::sleep_until(at.into())));
            let woke = futures::future::poll_fn(|cx| self.poll_wake(cx)).await;
            let now = Instant::now();
            match woke {
                Some(Ok(report)) => self.on_report(report, now),
                Some(Err(done)) => self.on_done(done, now),
                None => {}
            }
            if polled.timeout.is_some_and(|at| at <= now) {
                self.link.handle_timeout(now);
            }
            self.check_connection(now);
        }
    }

    /// A report, a completion, or `None`: a handle's change, or the timer.
    fn poll_wake(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Report, Done>>> {
        // Reports first: the crate says `Connecting` before failing dropped requests.
        if let Poll::Ready(Some(report)) = self.reports.1.poll_recv(cx) {
            return Poll::Ready(Some(Ok(report)));
        }
        if let Poll::Ready(Some(done)) = self.s.inflight.poll_next_unpin(cx) {
            return Poll::Ready(Some(Err(done)));
        }
        let timer = self
            .s
            .timer
            .as_mut()
            .is_some_and(|t| t.as_mut().poll(cx).is_ready());
        let woke = self.link.poll_wake(cx).is_ready() || timer;
        if woke {
            Poll::Ready(None)
        } else {
            Poll::Pending
        }
    }

    /// Rule 2 of the link: every request at once, in the order polled.
    fn send(&mut self, request: lock_core::Request) {
        let Some(Opened { zk, marker, .. }) = self.s.session.clone() else {
            // Between an expiry and the next session: lost, so retried.
            return self.issue(
                Some(request.id),
                Box::pin(ready(Err(ZkError::ConnectionLoss))),
            );
        };
        let acl = self.dial.acl.clone();
        let call = async move { glue::call(&zk, request.op, &acl, &marker).await };
        self.issue(Some(request.id), Box::pin(call));
    }

    /// Starts a call, polled once at once so that it takes its place in the
    /// crate's queue (a fair lock, then a channel) in program order;
    /// `unconstrained`, so that tokio's budget cannot cut that first poll short.
    fn issue(&mut self, id: Option<RequestId>, call: BoxFuture<'static, Result<Reply, ZkError>>) {
        let (generation, seq, sent) = (self.s.generation, self.s.seq, Instant::now());
        (self.s.seq, _) = (seq + 1, self.s.pending.insert(seq, sent));
        let done = async move { Done::Reply(generation, seq, id, call.await, sent) };
        let mut future: BoxFuture<'static, Done> = Box::pin(tokio::task::unconstrained(done));
        match future
            .as_mut()
            .poll(&mut Context::from_waker(futures::task::noop_waker_ref()))
        {
            Poll::Ready(done) => self.s.inflight.push(Box::pin(ready(done))),
            Poll::Pending => self.s.inflight.push(future),
        }
    }

    fn on_done(&mut self, done: Done, now: Instant) {
        match done {
            Done::Reply(generation, seq, id, result, sent) => {
                let current =
                    generation == self.s.generation && self.s.pending.remove(&seq).is_some();
                if current
                    && result
                        .as_ref()
                        .map_or_else(ZkError::is_from_server, |_| true)
                {
                    self.contact = self.contact.max(sent);
                    if !self.s.live {
                        // The silence we reported is over, on the same connection.
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
                if g != self.s.generation || self.s.session.is_none() => {}
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
                if let (Some(path), true) = (event.path, self.s.live) {
                    self.link.handle_watch(path, kind, now);
                }
            }
            Report::State(_, ZkState::Connected) if !self.s.live => {
                // The same session (an expiry is `NotConnected` first). The server
                // keeps credentials per connection; the crate does not resend them.
                if let (Some(s), false) = (self.s.session.clone(), self.dial.auth.is_empty()) {
                    let dial = self.dial.clone();
                    let auth =
                        async move { dial.authenticate(&s.zk).await.map(|()| Reply::Synced) };
                    self.issue(None, Box::pin(auth));
                }
                // Reopening a session revalidates it with the leader.
                self.contact = now;
                self.connected(now);
            }
            Report::State(_, ZkState::Connected) => {}
            // Expired, refused, closed: over (the crate would silently open another).
            Report::State(_, ZkState::NotConnected | ZkState::AuthFailed | ZkState::Closed) => {
                if self.link.session_id().is_some() {
                    self.link.handle_session(SessionEvent::Expired, now);
                }
                (self.s.live, self.s.generation) = (false, self.s.generation + 1);
                self.s.pending.clear();
                tokio::spawn(glue::close(self.s.session.take().map(|s| s.zk)));
                self.open(Duration::ZERO);
            }
            // Connecting, read-only (never asked for): the connection is down.
            Report::State(..) => self.disconnected(now),
        }
    }

    fn connected(&mut self, now: Instant) {
        self.s.live = true;
        let session_id = self.s.session.as_ref().map_or(0, |s| s.session_id);
        self.link
            .handle_session(SessionEvent::Connected { session_id }, now);
    }

    fn disconnected(&mut self, now: Instant) {
        if std::mem::take(&mut self.s.live) {
            let since_contact = now.saturating_duration_since(self.contact);
            self.link
                .handle_session(SessionEvent::Disconnected { since_contact }, now);
        }
    }

    /// When [`check_connection`](Self::check_connection) has something to do.
    fn next_check(&self) -> Option<Instant> {
        let timeout = self.s.session.as_ref()?.timeout;
        let oldest = self.s.pending.values().min();
        self.s
            .live
            .then(|| oldest.map_or(self.contact + timeout / 4, |sent| *sent + timeout / 3))
    }

    /// The crate notices a silent connection after twice its ping interval in whole
    /// seconds (a session timeout or more), so the binding watches it as the Java
    /// client does: probed T/4 after the last contact; a request unanswered for T/3
    /// reports `Disconnected`, at most 7/12 T after the contact (the rule is 2/3).
    fn check_connection(&mut self, now: Instant) {
        if self.next_check().is_none_or(|at| at > now) {
        } else if !self.s.pending.is_empty() {
            self.disconnected(now);
        } else if let Some(s) = self.s.session.clone() {
            let probe = async move { s.zk.exists("/", false).await.map_err(glue::zk_error) };
            self.issue(
                None,
                Box::pin(async move { probe.await.map(|_| Reply::Synced) }),
            );
        }
    }

    /// Takes an opened session into use, timed by its granted timeout; tells the link.
    pub(crate) fn install(&mut self, opened: Opened) {
        let (options, seed) = &self.config;
        self.link
            .reconfigure(options.lock_config(opened.timeout, *seed));
        (self.s.session, self.contact) = (Some(opened), Instant::now());
        self.connected(self.contact);
    }

    /// Opens a new session, after `pause` (following a failed attempt).
    fn open(&mut self, pause: Duration) {
        let (dial, reports, generation) =
            (self.dial.clone(), self.reports.0.clone(), self.s.generation);
        self.s.inflight.push(Box::pin(async move {
            tokio::time::sleep(pause).await;
            Done::Opened(dial.open(generation, reports).await)
        }));
    }
}

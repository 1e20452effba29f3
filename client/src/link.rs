//! [`Link`]: the end of a [`LockClient`](crate::LockClient) that a binding drives.

// The checker writes into the shared state, so it lives here with the binding's
// other handle rather than in `server`, which judges settings and imports nothing.
mod checker;

pub use checker::ServerChecker;

use crate::shared::Shared;
use lock_core::{Reply, Request, RequestId, SessionEvent, Stats, WatchKind, ZkError};
use std::any::Any;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

/// The binding's end of a [`LockClient`](crate::LockClient), from [`pair`](crate::pair).
///
/// The link carries the core's requests to the binding's ZooKeeper client and
/// brings back what happened: replies, watch firings, session changes and the
/// passing of time. It does no I/O and reads no clock: every `handle_*` takes the
/// binding's `now`. Handles ([`LockClient`](crate::LockClient), guards, elections)
/// mutate the same state under one mutex and then wake the link; the binding never
/// hears of them otherwise (no commands, no channels).
///
/// # Methods, by kind
///
/// * **Getters**: [`is_closed`](Self::is_closed), [`session_id`](Self::session_id),
///   [`is_connected`](Self::is_connected), [`stats`](Self::stats),
///   [`server_checker`](Self::server_checker).
/// * **Settings**: [`reconfigure`](Self::reconfigure) (the session timeout the
///   server granted, when the binding learns it only once connected).
/// * **Inputs** (`handle_*`): [`handle_session`](Self::handle_session),
///   [`handle_reply`](Self::handle_reply), [`handle_watch`](Self::handle_watch),
///   [`handle_timeout`](Self::handle_timeout).
/// * **Outputs**: [`poll`](Self::poll): the requests to send, whether to close,
///   when the timer is due, all at once.
/// * **Wake-ups**: [`poll_wake`](Self::poll_wake) for an async loop,
///   [`wait`](Self::wait) for a thread.
///
/// # Calling rules
///
/// 1. **Connect first.** Feed `handle_session(SessionEvent::Connected { session_id })`
///    once the ZooKeeper session is up. Nothing is sent before; locks asked for
///    earlier wait.
/// 2. **Poll after every batch of inputs, and after every wake-up.** After the
///    `handle_*` calls of a batch (one input, or every reply already at hand) and
///    each time [`poll_wake`](Self::poll_wake) is ready (or [`wait`](Self::wait)
///    returns), call [`poll`](Self::poll) once and send each request it hands over
///    at once, in the order polled, without waiting for earlier replies (the core
///    pipelines on ZooKeeper's per-session FIFO order). Then re-arm the timer from
///    its [`timeout`](Polled::timeout), and close when it says
///    [`closed`](Polled::closed).
/// 3. **Echo every reply** with its [`RequestId`] through
///    [`handle_reply`](Self::handle_reply), including failures (a lost connection is
///    [`ZkError::ConnectionLoss`]). Stale ids are ignored and counted.
/// 4. **Forward watch firings and session changes**: every watch the requests set
///    (`getData`/`getChildren` with a watch) through
///    [`handle_watch`](Self::handle_watch), and `Disconnected` (no later than 2/3 of
///    the session timeout after the last contact with the server), `Connected`,
///    `Expired` through [`handle_session`](Self::handle_session). After an expiry the
///    binding may open a new session and report it with `Connected`.
///    `Disconnected { since_contact }` says how long ago the server last heard from
///    the session: the time since the newest answered request was *sent* (a ping
///    counts, a watch notification does not), or a longer time the client
///    library's own timing guarantees when it keeps that to itself. Held locks are
///    reported lost before the server could expire the session, counted from then:
///    an underestimate here lets another session hold the lock first.
/// 5. **Time**: call [`handle_timeout`](Self::handle_timeout) once `now` reaches
///    the polled [`timeout`](Polled::timeout). Every `now` is read from the client's
///    clock: `Instant::now()` after [`pair`](crate::pair), the binding's
///    [`Clock`](crate::Clock) after [`pair_with_clock`](crate::pair_with_clock)
///    (a simulation's virtual time).
/// 6. **Close**: once [`closed`](Polled::closed) is true, close the ZooKeeper
///    session, feed `handle_session(SessionEvent::Closed)`, and drop the link. The
///    server answers a session's requests in order, `closeSession` last: a binding
///    that sends `closeSession` right behind the requests already sent feeds their
///    replies before `Closed`, so their outcomes (a release in flight when `close`
///    was called) are the server's, and the release costs no round trip more. Dropping
///    the link (also without closing first, e.g. when the binding's task dies) ends
///    the session for every handle: waiting locks fail and held ones are lost with
///    `Closed`, and [`LockClient::close`](crate::LockClient::close) returns. Held
///    locks are not trusted from the moment `closed` is true: the server may give
///    them to others as soon as the session is closed, before `Closed` is fed.
///
/// [`poll`](Self::poll) is `#[must_use]`: an undrained request is a lock that never moves.
///
/// ```
/// use zklock::Link;
/// use lock_core::{Op, Request, SessionEvent};
/// use std::time::Instant;
///
/// /// One step of a binding's loop (the client calls are the binding's own).
/// fn step(link: &mut Link, send: &mut impl FnMut(Request)) {
///     let mut requests = Vec::new();
///     let polled = link.poll(&mut requests);
///     for request in requests {
///         send(request); // e.g. zk.create(..) for Op::Create, in this order
///     }
///     if polled.timeout.is_some_and(|at| at <= Instant::now()) {
///         link.handle_timeout(Instant::now());
///         step(link, send);
///     }
/// }
///
/// let config = lock_core::Config::new(std::time::Duration::from_secs(10), 7);
/// let (locks, mut link) = zklock::pair(config);
/// link.handle_session(SessionEvent::Connected { session_id: 0x42 }, Instant::now());
/// let job = locks.mutex("/locks/job");
/// let mut lock = Box::pin(job.lock());
/// // Polled by the user's executor: the core asks for create + getChildren at once.
/// use futures::FutureExt;
/// assert!((&mut lock).now_or_never().is_none());
/// let mut sent = Vec::new();
/// step(&mut link, &mut |r| sent.push(r));
/// assert!(matches!(sent[0].op, Op::Create { .. }));
/// assert!(matches!(sent[1].op, Op::GetChildren { .. }));
/// ```
pub struct Link {
    shared: Arc<Shared>,
}

/// What [`Link::poll`] says besides the requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Polled {
    /// The user side is done ([`Link::is_closed`]): close the session (rule 6).
    pub closed: bool,
    /// When [`handle_timeout`](Link::handle_timeout) must next be called, if
    /// ever: re-arm the timer (rule 5).
    pub timeout: Option<Instant>,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("session_id", &self.session_id())
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl Link {
    pub(crate) fn new(shared: Arc<Shared>) -> Link {
        Link { shared }
    }

    // Getters.

    /// Whether the user side is done: [`LockClient::close`](crate::LockClient::close)
    /// was called, or every handle (client, lock object, guard, election) is gone.
    /// Then close the ZooKeeper session, feed `SessionEvent::Closed`, and drop the
    /// link (rule 6).
    pub fn is_closed(&self) -> bool {
        self.shared.with(|s| s.closing.link_must_close())
    }

    /// The session the core is on (also while disconnected from it); `None` before
    /// the first `Connected` and between an expiry and the next session.
    pub fn session_id(&self) -> Option<i64> {
        self.shared.with(|s| s.core.session_id())
    }

    /// Whether the core was told the connection is up: the last session change fed
    /// was `Connected` (not followed by `Disconnected`, `Expired`, `Abandoned` or
    /// `Closed`). A binding whose client library can skip a state (report
    /// `Connected` twice) feeds the `Disconnected` it missed when this is still true.
    pub fn is_connected(&self) -> bool {
        self.shared.with(|s| s.core.is_connected())
    }

    /// The core's counters.
    pub fn stats(&self) -> Stats {
        self.shared.with(|s| s.core.stats())
    }

    /// Attaches `extension` to the client, for the binding's own extensions of
    /// [`LockClient`](crate::LockClient) (e.g. connection diagnostics), which find it
    /// with [`LockClient::extension`](crate::LockClient::extension). Once: later
    /// calls are ignored.
    pub fn set_extension(&self, extension: Arc<dyn Any + Send + Sync>) {
        let _ = self.shared.extension.set(extension);
    }

    /// Where to report the settings of each server the binding connects to (its
    /// answer to the `conf` four-letter word), from a background thread: see
    /// [`ServerChecker`](crate::ServerChecker).
    pub fn server_checker(&self) -> ServerChecker {
        ServerChecker::new(self.shared.clone())
    }

    /// Gives the core new settings: for a binding whose client learns the session
    /// timeout the server granted only once connected (servers fit the one asked
    /// for into their `minSessionTimeout..=maxSessionTimeout`; a new session after an
    /// expiry may be granted another). Build `config` as for [`pair`](crate::pair),
    /// with [`ConnectOptions::lock_config`](crate::ConnectOptions::lock_config) and the
    /// granted timeout, and feed it before the `Connected` of the session it is for.
    /// [`LockClient::session_timeout`](crate::LockClient::session_timeout) and the
    /// checks of the servers' settings use it from then on. See
    /// [`lock_core::Session::reconfigure`] for what it changes.
    ///
    /// ```
    /// use lock_client::ConnectOptions;
    /// use std::time::Duration;
    /// let options = ConnectOptions::new();
    /// let (locks, mut link) = lock_client::pair(options.lock_config(Duration::from_secs(20), 7));
    /// // Connected: the server granted 4 s.
    /// link.reconfigure(options.lock_config(Duration::from_secs(4), 7));
    /// assert_eq!(locks.session_timeout(), Duration::from_secs(4));
    /// ```
    pub fn reconfigure(&mut self, config: lock_core::Config) {
        self.shared.reconfigure(config);
    }

    /// Applies the options lock-client acts on itself rather than the binding
    /// (today the metrics' [path prefix](crate::ConnectOptions::metrics_path_prefix));
    /// a binding calls it once, right after [`pair`](crate::pair).
    pub fn apply_options(&self, options: &crate::ConnectOptions) {
        self.shared
            .with(|s| s.locks.metrics_prefix = options.metrics_path_prefix);
    }

    // Inputs.

    /// A change of the ZooKeeper session: `Connected { session_id }` (also after a
    /// reconnect; a new id means the old session expired), `Disconnected`, `Expired`,
    /// `Closed`.
    pub fn handle_session(&mut self, event: SessionEvent, now: Instant) {
        self.shared.with(|s| {
            let now = s.time.timestamp(now);
            s.handle_session(event, now);
        });
    }

    /// The outcome of the request `request` (echo the id of the polled [`Request`]).
    pub fn handle_reply(
        &mut self,
        request: RequestId,
        result: Result<Reply, ZkError>,
        now: Instant,
    ) {
        self.input(lock_core::Input::Reply { request, result }, now);
    }

    /// A watch set by a request fired on `path`.
    pub fn handle_watch(&mut self, path: String, kind: WatchKind, now: Instant) {
        if kind == WatchKind::NodeDeleted {
            self.shared.with(|s| s.locks.handle_node_deleted(&path));
        }
        self.input(lock_core::Input::Watch { path, kind }, now);
    }

    /// Time passed: fires whatever is due at `now` (call once `now` reaches the
    /// polled [`timeout`](Polled::timeout); calling early is harmless).
    pub fn handle_timeout(&mut self, now: Instant) {
        self.shared.with(|s| {
            let now = s.time.timestamp(now);
            s.core.handle_timeout(now);
        });
    }

    fn input(&mut self, input: lock_core::Input, now: Instant) {
        self.shared.with(|s| {
            let now = s.time.timestamp(now);
            s.core.handle_input(input, now);
        });
    }

    // Outputs.

    /// What everything fed since the last call asks of the binding, under one
    /// lock of the shared state: appends the requests to send to `requests`, in
    /// order, and says whether to close and when the timer is due (rule 2).
    #[must_use = "the requests must be sent in the order polled, the timer re-armed, a close acted on"]
    pub fn poll(&mut self, requests: &mut impl Extend<Request>) -> Polled {
        self.shared.with(|s| {
            requests.extend(
                s.io.drain()
                    .inspect(|r| crate::metrics::request_sent(&r.op)),
            );
            Polled {
                closed: s.closing.link_must_close(),
                timeout: s.core.poll_timeout().map(|at| s.time.instant(at)),
            }
        })
    }

    // Wake-ups.

    /// Ready once a handle changed something since the last ready (a lock asked
    /// for, released, cancelled; a close); then drain (rule 2). Registers `cx`'s
    /// waker otherwise. For async loops.
    #[must_use = "a ready wake-up means requests or a new timer to look at"]
    pub fn poll_wake(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        self.shared.with(|s| s.io.poll_marked(cx.waker()))
    }

    /// Blocks this thread until a handle changed something (true) or `deadline`
    /// passes (false): the thread-based twin of [`poll_wake`](Self::poll_wake). A
    /// binding whose client reports on other threads calls its `handle_*` from them
    /// through a shared `Mutex<Link>`, or wakes this wait by other means.
    pub fn wait(&self, deadline: Option<Instant>) -> bool {
        self.shared.wait_link(deadline)
    }

    /// A handle that ends a [`wait`](Self::wait) (or readies
    /// [`poll_wake`](Self::poll_wake)) from elsewhere: the notify hook for a binding
    /// whose client reports on threads of its own (queue the report, then notify).
    pub fn notifier(&self) -> Notifier {
        Notifier {
            shared: self.shared.clone(),
        }
    }
}

/// Wakes a binding's loop from another thread, from [`Link::notifier`].
#[derive(Clone)]
pub struct Notifier {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Notifier")
    }
}

impl Notifier {
    /// Ends the link's current or next [`wait`](Link::wait) and readies its
    /// [`poll_wake`](Link::poll_wake).
    pub fn notify(&self) {
        self.shared.with(|s| s.mark_link());
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.shared.with(|s| s.handle_link_gone());
    }
}

//! The driver thread: owns the `zookeeper` client and the [`Link`] of lock-client's
//! state, and follows the link's calling rules.
//!
//! Everything the driver learns arrives as a [`Msg`] on one channel: wake-ups from
//! the handles (the link's waker sends `Msg::Wake`), replies from the worker threads
//! that make the blocking calls, watch firings from the crate's event thread, and
//! state changes from the crate's state listener. The listener and the watcher only *send* (never block, never call
//! ZooKeeper): the listener runs on the crate's I/O thread while it holds the
//! listener lock, and a ZooKeeper call from there waits for a reply that only that
//! thread could read, forever.
//!
//! Its parts, each with the reasons for its rules: [`ordering`] (issuing requests
//! in an order the crate cannot reorder), [`session_probe`] (the session id the crate
//! hides), [`liveness`] (silent connections) and [`reopening`] (clients given up
//! and opened again).

mod liveness;
mod ordering;
mod reopening;
mod session_probe;

use liveness::Timing;
use reopening::reap;

use crate::wire::Pool;
use lock_client::{Error, Link};
use lock_core::{Reply, Request, RequestId, SessionEvent, WatchKind, ZkError};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::task::{Context, Wake, Waker};
use std::time::{Duration, Instant};
use zookeeper::{ZkState, ZooKeeper};

/// What the driver counts for [`Diagnostics`], shared with the handles (attached
/// to the client as its extension).
#[derive(Default)]
pub(crate) struct Counters {
    clients_opened: AtomicU64,
    sessions: AtomicU64,
    reconnects: AtomicU64,
    silences: AtomicU64,
}

impl Counters {
    pub(crate) fn diagnostics(&self) -> Diagnostics {
        Diagnostics {
            clients_opened: self.clients_opened.load(Ordering::Acquire),
            sessions: self.sessions.load(Ordering::Acquire),
            reconnects: self.reconnects.load(Ordering::Acquire),
            silences: self.silences.load(Ordering::Acquire),
        }
    }
}

/// What a [`LockClient`](crate::LockClient) went through, from
/// [`Diagnose::diagnostics`](crate::Diagnose::diagnostics).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
#[non_exhaustive]
pub struct Diagnostics {
    /// `zookeeper` clients opened: 1, plus one each time the crate closed a client
    /// for good or the binding gave up on a silent one.
    pub clients_opened: u64,
    /// Distinct sessions seen, including ones the crate opened silently after an
    /// expiry.
    pub sessions: u64,
    /// Reconnections that kept the session.
    pub reconnects: u64,
    /// Times the binding declared a connection silent (a request unanswered past
    /// the reply deadline) while the crate still believed it connected.
    pub silences: u64,
}

/// Identifies a request the driver is waiting for.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) enum Key {
    /// One of the core's.
    Core(RequestId),
    /// The driver's own cleanup (a node created by a request of an older session).
    Internal(u64),
}

/// Everything that wakes the driver. `gen` tells which `zookeeper` client it is from:
/// messages from a client the driver has given up on are ignored.
pub(crate) enum Msg {
    /// A handle changed something: drain the link.
    Wake,
    Reply {
        gen: u64,
        key: Key,
        result: Result<Reply, ZkError>,
    },
    Watch {
        gen: u64,
        path: String,
        kind: WatchKind,
    },
    State {
        gen: u64,
        state: ZkState,
    },
    Session {
        gen: u64,
        epoch: u64,
        result: Result<(i64, String), ZkError>,
    },
    Ping {
        gen: u64,
        /// The connection delivered an answer.
        contact: bool,
        /// The server answered it (so it heard from the session).
        heard: bool,
    },
}

/// Settings fixed at connect time.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    pub(crate) hosts: Vec<String>,
    pub(crate) chroot: String,
    /// The session timeout to ask for. The server may grant another: everything
    /// is timed by the granted one once known (`Driver::adopt_session_timeout`).
    pub(crate) requested_timeout: Duration,
    /// The user's options, to build the core's settings for a granted timeout.
    pub(crate) options: lock_client::ConnectOptions,
    pub(crate) marker_prefix: String,
    pub(crate) seed: u64,
    /// How long `connect` keeps trying (with fresh clients) for a first session.
    pub(crate) connect_timeout: Duration,
    /// Credentials, sent again on every connection.
    pub(crate) auth: Arc<[lock_client::Auth]>,
    /// The ACL of every node created.
    pub(crate) acl: Arc<[zookeeper::Acl]>,
}

/// A request issued and not answered yet.
struct Out {
    order: ordering::Order,
    issued: Instant,
    /// The session id when it was issued.
    sid: Option<i64>,
    /// An ephemeral create: if it lands in a session other than the one it was meant
    /// for, the driver deletes the node.
    ephemeral: bool,
}

/// The current `zookeeper` client and what the driver knows about it.
struct CurrentClient {
    gen: u64,
    zk: Option<Arc<ZooKeeper>>,
    /// Set by the listener when the crate reports `Closed` (read by the reaper).
    closed_flag: Arc<AtomicBool>,
    /// The crate says connected (or a probe proved it).
    connected: bool,
    connected_at: Instant,
    /// Bumped whenever the crate leaves `Connected`: stale session probes are ignored.
    epoch: u64,
    probing: Option<u64>,
    probe_retry_at: Option<Instant>,
    /// The session marker was checked on this connection.
    verified: bool,
    sid: Option<i64>,
    marker: Option<String>,
    suspect_since: Option<Instant>,
    /// When the connection last delivered a reply (or came up): an idle connection
    /// is probed `probe_after` later.
    last_contact: Instant,
    /// When the newest request the server answered was issued (or the client
    /// opened): the server last heard from the session no earlier. Reported with
    /// `Disconnected`.
    heard_at: Instant,
    /// When the running session probe was issued.
    probe_issued: Instant,
    ping_since: Option<Instant>,
    last_ping: Option<Instant>,
    queue: VecDeque<Request>,
    outstanding: HashMap<Key, Out>,
    /// Ephemeral nodes created by requests of an older connection, awaiting the
    /// session probe: (session id at issue, path).
    suspicious: Vec<(Option<i64>, String)>,
    reopen_at: Option<Instant>,
    failures: u32,
    /// When the client was opened or last reported a state change.
    last_state_at: Instant,
    /// The last state it reported (`None`: none yet).
    last_state: Option<ZkState>,
    /// How the last session probe on this client failed, if it did.
    probe_error: Option<ZkError>,
    /// When the client was opened, and what happened to it since (states, probes;
    /// the first few dozen): a `connect` that times out says it.
    opened_at: Instant,
    trail: Vec<(Duration, String)>,
    /// The servers of the client's connect string, resolved when it was opened
    /// (as the crate resolves them), for `set_nodelay`.
    peers: Option<lock_nodelay::Peers>,
}

impl CurrentClient {
    fn new(now: Instant) -> CurrentClient {
        CurrentClient {
            gen: 0,
            zk: None,
            closed_flag: Arc::new(AtomicBool::new(false)),
            connected: false,
            connected_at: now,
            epoch: 0,
            probing: None,
            probe_retry_at: None,
            verified: false,
            sid: None,
            marker: None,
            suspect_since: None,
            last_contact: now,
            heard_at: now,
            probe_issued: now,
            ping_since: None,
            last_ping: None,
            queue: VecDeque::new(),
            outstanding: HashMap::new(),
            suspicious: Vec::new(),
            reopen_at: Some(now),
            failures: 0,
            last_state_at: now,
            last_state: None,
            probe_error: None,
            opened_at: now,
            trail: Vec::new(),
            peers: None,
        }
    }

    /// The oldest unanswered request, counted from when the connection came up.
    fn oldest_pending(&self) -> Option<Instant> {
        self.outstanding
            .values()
            .map(|o| o.issued)
            .chain(self.ping_since)
            .min()
            .map(|t| t.max(self.connected_at))
    }
}

pub(crate) struct Driver {
    settings: Settings,
    /// The session timeout everything is timed by: the one asked for until the
    /// server grants one, then the one granted to the current session.
    session_timeout: Duration,
    timing: Timing,
    /// How long after the server last heard from the session a request still
    /// unanswered makes the connection suspect, however young the request: the
    /// session timeout less the core's expiry margin, when the core must report
    /// held locks lost.
    lost_after: Duration,
    tx: mpsc::Sender<Msg>,
    rx: mpsc::Receiver<Msg>,
    link: Link,
    /// Wakes this thread when a handle changes something (sends `Msg::Wake`).
    waker: Waker,
    conn: CurrentClient,
    pool: Pool,
    connect_waiter: Option<mpsc::Sender<Result<(), Error>>>,
    connect_deadline: Instant,
    ever_connected: bool,
    counters: Arc<Counters>,
    next_internal: u64,
    rng: u64,
    /// Stop (the first connection failed).
    stop: bool,
    /// When the link's timer is due, and whether it must close: as last polled.
    link_timeout: Option<Instant>,
    closed: bool,
}

/// The link's waker for a thread blocked on the channel.
struct WakeMsg(mpsc::Sender<Msg>);

impl Wake for WakeMsg {
    fn wake(self: Arc<Self>) {
        let _ = self.0.send(Msg::Wake);
    }
}

impl Driver {
    pub(crate) fn new(
        settings: Settings,
        link: Link,
        counters: Arc<Counters>,
        connect_waiter: mpsc::Sender<Result<(), Error>>,
    ) -> Driver {
        let (tx, rx) = mpsc::channel();
        let now = Instant::now();
        let settings_connect_timeout = settings.connect_timeout;
        let session_timeout = settings.requested_timeout;
        let config = settings.options.lock_config(session_timeout, settings.seed);
        Driver {
            session_timeout,
            timing: Timing::new(session_timeout),
            lost_after: session_timeout.saturating_sub(config.margin()),
            rng: settings.seed | 1,
            settings,
            waker: Waker::from(Arc::new(WakeMsg(tx.clone()))),
            tx,
            rx,
            link,
            conn: CurrentClient::new(now),
            pool: Pool::new(),
            connect_waiter: Some(connect_waiter),
            connect_deadline: now + settings_connect_timeout,
            ever_connected: false,
            counters,
            next_internal: 0,
            stop: false,
            link_timeout: None,
            closed: false,
        }
    }

    /// The driver thread's body: the link's canonical loop on a channel.
    pub(crate) fn run(mut self) {
        loop {
            let now = Instant::now();
            let msg = match self.next_deadline() {
                Some(at) => self.rx.recv_timeout(at.saturating_duration_since(now)),
                None => self.rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            };
            match msg {
                Ok(msg) => self.on_msg(msg),
                Err(RecvTimeoutError::Timeout) => {}
                // Impossible: the driver holds a sender itself.
                Err(RecvTimeoutError::Disconnected) => self.stop = true,
            }
            self.on_tick();
            // Re-arm the wake-up before draining: a change after the drain wakes us.
            let waker = self.waker.clone();
            while self
                .link
                .poll_wake(&mut Context::from_waker(&waker))
                .is_ready()
            {}
            self.drain();
            if self.stop || self.closed {
                return self.shutdown();
            }
            self.pump();
        }
    }

    /// Feeds a session change to the link.
    fn feed(&mut self, event: SessionEvent) {
        self.link.handle_session(event, Instant::now());
        self.drain();
    }

    /// Rule 2 of the link: take every request, in order (`pump` issues them),
    /// and what the link says of the timer and of closing.
    fn drain(&mut self) {
        let polled = self.link.poll(&mut self.conn.queue);
        (self.link_timeout, self.closed) = (polled.timeout, polled.closed);
    }

    fn on_msg(&mut self, msg: Msg) {
        match msg {
            Msg::Wake => {}
            Msg::Reply { gen, key, result } if gen == self.conn.gen => self.on_reply(key, result),
            // A notification proves nothing about the connection (it may be the last
            // thing a dying one delivers: the server fires our watches when it
            // expires our session), so it does not put off the next probe. While the
            // core believes the connection down it gets none: on `Connected` it
            // re-lists and re-verifies everything anyway.
            Msg::Watch { gen, path, kind } if gen == self.conn.gen && self.link.is_connected() => {
                self.link.handle_watch(path, kind, Instant::now());
                self.drain();
            }
            Msg::State { gen, state } if gen == self.conn.gen => self.on_state(state),
            Msg::Session { gen, epoch, result } if gen == self.conn.gen => {
                self.on_session_probe(epoch, result)
            }
            Msg::Ping {
                gen,
                contact,
                heard,
            } if gen == self.conn.gen => {
                if let (true, Some(issued)) = (heard, self.conn.ping_since) {
                    self.heard(issued);
                }
                self.conn.ping_since = None;
                let now = Instant::now();
                if contact {
                    self.contact(now);
                } else if self.conn.connected {
                    self.suspect(now);
                }
            }
            // From a client given up on.
            _ => {}
        }
    }

    /// Stops (rule 6 of the link): the locks end with `Closed`, the session is
    /// closed (waiting a while for the server to confirm, so that its nodes are gone
    /// when `LockClient::close` returns), and dropping the link wakes every handle.
    fn shutdown(mut self) {
        self.link
            .handle_session(SessionEvent::Closed, Instant::now());
        if let Some(zk) = self.conn.zk.take() {
            let flag = self.conn.closed_flag.clone();
            let (tx, rx) = mpsc::channel();
            std::thread::spawn(move || {
                let _ = zk.close();
                let _ = tx.send(());
                reap(zk, flag);
            });
            let _ = rx.recv_timeout(self.session_timeout);
        }
    }
}

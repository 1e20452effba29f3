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
//! # Ordering
//!
//! The core sends requests back to back and relies on ZooKeeper's per-session FIFO
//! order (its `getChildren` must see the `create` sent before it). The crate gives no
//! order between calls made from different threads (see `wire.rs`), so the driver
//! issues the core's requests, in the order polled, under one rule that makes every
//! reply what FIFO order would have given: a write is issued only when nothing sent
//! before it is still unanswered, a read only when no write sent before it is. Reads
//! run concurrently; no reply can depend on an order the crate does not guarantee.
//!
//! The price is small. The uncontended path is `create`, then `getChildren` and the
//! `getData` on our own node, which the core sends when the create returns: the
//! `getData` had to wait for the create's path anyway, and it brings the fencing
//! token (the crate's `create` returns no Stat), so the grant comes after 2 round
//! trips either way. (Both reads leave together only because `set_nodelay` turns
//! Nagle's algorithm off, which the crate leaves on: 3 round trips otherwise.) A contended waiter sets its watch one round trip later than
//! with full pipelining; a handoff is unchanged (0 round trips after the
//! notification).
//!
//! # Session
//!
//! The crate hides the session id (and the negotiated timeout). The driver learns
//! the id from the `ephemeralOwner` of a marker node (`probe_session`): created once
//! per session, checked with one `exists` after every reconnect. A marker that is
//! gone means the crate silently opened a new session after an expiry; the core
//! then gets `Connected` with the new id and reports the old session's locks lost.
//!
//! # Liveness
//!
//! The crate never notices a silent connection (no read timeout: it pings after 2/3
//! of the session timeout of idleness and waits for the answer forever). So the
//! driver watches the connection itself, as the Java client does: a request
//! unanswered for `reply_deadline` (T/3) makes the connection suspect (the core gets
//! `Disconnected`), and a connection without a reply for `probe_after` (T/3) is
//! probed (`exists("/")`). A silent network is thus reported at most 2/3 T after
//! the last reply, and never later than `T` less the core's expiry margin after the
//! newest answered request was issued (`lost_after`), when the core must report
//! held locks lost anyway: with the default margin (T/10) a held lock reads
//! `Suspended` for at least 0.23 T before it is `Lost`. A connection suspect for
//! `T + reply_deadline` is abandoned (the session is expired on the server by
//! then): the core gets `Abandoned` and a new client is opened.
//!
//! When the crate reconnects, it gives up for good (`Closed`) if the server's last
//! answer is more than `floor(T) + 1` s old. (The published crate counted from its
//! last *ping*, which a busy client never sends, so it gave up a session the server
//! still held on any connection loss; the workspace builds it patched:
//! patches/README.md.) The probes keep that answer fresh on an idle connection, so
//! the crate itself no longer needs to ping.
//!
//! Only replies prove a connection alive. A watch notification may be the last
//! thing a dead connection delivers (the server fires our watches when it expires
//! our session, and a healed partition hands that over before the end of the
//! stream), so notifications never clear a suspicion, and the core gets none while
//! it believes the connection down: on `Connected` it re-lists and re-verifies.
//!
//! The crate's first connection attempt has no timeout (only its reconnects have
//! one): a client that is neither connected nor reporting any state change for
//! `stuck_after` (`T + 4 s`) is given up and replaced, and so is a first client
//! that has not given a verified session `stuck_after` after it was opened.

use crate::wire::{self, Pool};
use lock_client::{Error, Link};
use lock_core::{CreateMode, Op, Reply, Request, RequestId, SessionEvent, WatchKind, ZkError};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::task::{Context, Wake, Waker};
use std::time::{Duration, Instant};
use zookeeper::{WatchedEvent, WatchedEventType, ZkState, ZooKeeper};

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
    /// How long after the server last heard from the session a request still
    /// unanswered makes the connection suspect, however young the request: the
    /// session timeout less the core's expiry margin, when the core must report
    /// held locks lost.
    pub(crate) lost_after: Duration,
    pub(crate) hosts: Vec<String>,
    pub(crate) chroot: String,
    pub(crate) session_timeout: Duration,
    pub(crate) marker_prefix: String,
    pub(crate) seed: u64,
    /// How long `connect` keeps trying (with fresh clients) for a first session.
    pub(crate) connect_timeout: Duration,
    /// Credentials, sent again on every connection.
    pub(crate) auth: Arc<[lock_client::Auth]>,
    /// The ACL of every node created.
    pub(crate) acl: Arc<[zookeeper::Acl]>,
}

/// The liveness timings derived from the session timeout `T` (see the module docs).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timing {
    /// How long a connection may stay without a reply before the driver probes it:
    /// T/3, as the Java client pings.
    pub(crate) probe_after: Duration,
    /// How long a request may stay unanswered before the connection is suspect: T/3,
    /// so that a silent network is noticed 2/3 T after the last reply at the latest
    /// (the Java client's read timeout).
    pub(crate) reply_deadline: Duration,
    /// How long a suspect connection is kept before it is abandoned.
    pub(crate) abandon_after: Duration,
    /// How long a client may stay unconnected without any state change before it is
    /// given up as stuck (the crate's first connection attempt has no timeout).
    pub(crate) stuck_after: Duration,
}

impl Timing {
    pub(crate) fn new(t: Duration) -> Timing {
        let reply_deadline = t / 3;
        Timing {
            probe_after: t / 3,
            reply_deadline,
            abandon_after: t + reply_deadline,
            // The crate itself gives up within floor(T) + 1 s plus its 2 s connection
            // timeout; a client silent for longer is stuck.
            stuck_after: t + Duration::from_secs(4),
        }
    }

    /// The latest a silent network is reported, after the last reply.
    #[cfg(test)]
    pub(crate) fn worst_detection(&self) -> Duration {
        self.probe_after + self.reply_deadline
    }
}

/// A request issued and not answered yet.
struct Out {
    write: bool,
    issued: Instant,
    /// The session id when it was issued.
    sid: Option<i64>,
    /// An ephemeral create: if it lands in a session other than the one it was meant
    /// for, the driver deletes the node.
    ephemeral: bool,
}

/// The current `zookeeper` client and what the driver knows about it.
struct Conn {
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

impl Conn {
    fn new(now: Instant) -> Conn {
        Conn {
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
    timing: Timing,
    tx: mpsc::Sender<Msg>,
    rx: mpsc::Receiver<Msg>,
    link: Link,
    /// Wakes this thread when a handle changes something (sends `Msg::Wake`).
    waker: Waker,
    conn: Conn,
    pool: Pool,
    connect_waiter: Option<mpsc::Sender<Result<(), Error>>>,
    connect_deadline: Instant,
    ever_connected: bool,
    counters: Arc<Counters>,
    next_internal: u64,
    rng: u64,
    /// Stop (the first connection failed).
    stop: bool,
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
        Driver {
            timing: Timing::new(settings.session_timeout),
            rng: settings.seed | 1,
            settings,
            waker: Waker::from(Arc::new(WakeMsg(tx.clone()))),
            tx,
            rx,
            link,
            conn: Conn::new(now),
            pool: Pool::new(),
            connect_waiter: Some(connect_waiter),
            connect_deadline: now + settings_connect_timeout,
            ever_connected: false,
            counters,
            next_internal: 0,
            stop: false,
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
            if self.stop || self.link.is_closed() {
                return self.shutdown();
            }
            self.drain();
            self.pump();
        }
    }

    /// Feeds a session change to the link.
    fn feed(&mut self, event: SessionEvent) {
        self.link.handle_session(event, Instant::now());
        self.drain();
    }

    /// Rule 2 of the link: take every request, in order; `pump` issues them.
    fn drain(&mut self) {
        while let Some(request) = self.link.poll_request() {
            self.conn.queue.push_back(request);
        }
    }

    // ----- requests -------------------------------------------------------------

    /// Issues queued requests in order, as far as the ordering rule allows.
    fn pump(&mut self) {
        let Some(zk) = self.conn.zk.clone() else {
            // No client: the core was told the session is gone and sends nothing;
            // anything queued belonged to the old session.
            self.conn.queue.clear();
            return;
        };
        while let Some(request) = self.conn.queue.front() {
            let write = wire::is_write(&request.op);
            if !may_issue(write, self.conn.outstanding.values().map(|o| o.write)) {
                break;
            }
            let request = self.conn.queue.pop_front().expect("front exists");
            let ephemeral = matches!(
                request.op,
                Op::Create {
                    mode: CreateMode::EphemeralSequential | CreateMode::Ephemeral,
                    ..
                }
            );
            self.issue(&zk, Key::Core(request.id), request.op, write, ephemeral);
        }
    }

    fn issue(&mut self, zk: &Arc<ZooKeeper>, key: Key, op: Op, write: bool, ephemeral: bool) {
        self.conn.outstanding.insert(
            key,
            Out {
                write,
                issued: Instant::now(),
                sid: self.conn.sid,
                ephemeral,
            },
        );
        let gen = self.conn.gen;
        let tx = self.tx.clone();
        if let Some(error) = wire::unsupported(&op) {
            // Answered without a call (multi): through the channel, like any reply.
            let _ = tx.send(Msg::Reply {
                gen,
                key,
                result: Err(error),
            });
            return;
        }
        let zk = zk.clone();
        let acl = self.settings.acl.clone();
        self.pool.run(
            move || wire::run_op(&zk, &op, &acl),
            move |result| {
                let _ = tx.send(Msg::Reply { gen, key, result });
            },
        );
    }

    fn on_reply(&mut self, key: Key, result: Result<Reply, ZkError>) {
        let now = Instant::now();
        let out = self.conn.outstanding.remove(&key);
        if let Some(out) = &out {
            if result
                .as_ref()
                .map_or_else(ZkError::is_from_server, |_| true)
            {
                self.heard(out.issued);
            }
        }
        let contact = !matches!(result, Err(ZkError::ConnectionLoss));
        if contact {
            self.contact(now);
        } else if self.conn.connected {
            // The crate failed a request while it claims to be connected: it is
            // reconnecting (its listener will say so) or its I/O thread is gone.
            self.suspect(now);
        }
        if let (Some(out), Ok(Reply::Created { path, .. })) = (&out, &result) {
            if out.ephemeral {
                self.check_created(out.sid, path.clone());
            }
        }
        if let Key::Core(request) = key {
            self.link.handle_reply(request, result, now);
            self.drain();
        }
    }

    /// An ephemeral node was created. If the request was issued on an older
    /// connection and the crate meanwhile switched to a new session, the node belongs
    /// to a session the core knows nothing of: delete it, or it stays as an orphan.
    fn check_created(&mut self, issued_in: Option<i64>, path: String) {
        let current = (self.conn.verified && self.conn.suspect_since.is_none())
            .then_some(self.conn.sid)
            .flatten();
        match current {
            Some(sid) if Some(sid) == issued_in => {}
            Some(_) => self.delete_internal(path),
            None => self.conn.suspicious.push((issued_in, path)),
        }
    }

    fn delete_internal(&mut self, path: String) {
        let Some(zk) = self.conn.zk.clone() else {
            return;
        };
        self.next_internal += 1;
        let key = Key::Internal(self.next_internal);
        self.issue(
            &zk,
            key,
            Op::Delete {
                path,
                version: None,
            },
            true,
            false,
        );
    }

    /// The connection looks dead although the crate believes it connected.
    fn suspect(&mut self, now: Instant) {
        if self.conn.suspect_since.is_none() {
            self.conn.suspect_since = Some(now);
            self.counters.silences.fetch_add(1, Ordering::AcqRel);
            self.sync_core();
        }
    }

    /// The server answered a request issued at `issued`.
    fn heard(&mut self, issued: Instant) {
        self.conn.heard_at = self.conn.heard_at.max(issued);
    }

    fn contact(&mut self, now: Instant) {
        self.conn.last_contact = now;
        if self.conn.suspect_since.take().is_some() {
            self.sync_core();
        }
    }

    // ----- session and connection ---------------------------------------------

    /// Tells the core what it must know about the connection.
    fn sync_core(&mut self) {
        let l = &self.conn;
        let usable = l.zk.is_some() && l.connected && l.verified && l.suspect_since.is_none();
        let desired = if usable { l.sid } else { None };
        let connected = self.link.is_connected();
        match desired {
            Some(sid) if connected && self.link.session_id() == Some(sid) => {}
            // A different id than before means the old session is gone; the core
            // ends its locks itself.
            Some(session_id) => self.feed(SessionEvent::Connected { session_id }),
            None if connected => {
                let since_contact = self.conn.heard_at.elapsed();
                self.feed(SessionEvent::Disconnected { since_contact });
            }
            None => {}
        }
    }

    /// Opens a new `zookeeper` client (a new session).
    fn open(&mut self, now: Instant) {
        self.conn.reopen_at = None;
        let gen = self.conn.gen + 1;
        let tx = self.tx.clone();
        let watcher = move |event: WatchedEvent| {
            let kind = match event.event_type {
                WatchedEventType::NodeCreated => WatchKind::NodeCreated,
                WatchedEventType::NodeDeleted => WatchKind::NodeDeleted,
                WatchedEventType::NodeDataChanged => WatchKind::NodeDataChanged,
                WatchedEventType::NodeChildrenChanged => WatchKind::NodeChildrenChanged,
                _ => return,
            };
            if let Some(path) = event.path {
                let _ = tx.send(Msg::Watch { gen, path, kind });
            }
        };
        let connect = self.connect_string();
        match wire::open(&connect, self.settings.session_timeout, watcher) {
            Ok(zk) => {
                let closed_flag = Arc::new(AtomicBool::new(false));
                let tx = self.tx.clone();
                let flag = closed_flag.clone();
                // Runs on the crate's I/O thread under its listener lock: only send.
                zk.add_listener(move |state| {
                    if state == ZkState::Closed {
                        flag.store(true, Ordering::Release);
                    }
                    let _ = tx.send(Msg::State { gen, state });
                });
                self.counters.clients_opened.fetch_add(1, Ordering::AcqRel);
                let l = &mut self.conn;
                l.gen = gen;
                l.zk = Some(Arc::new(zk));
                l.closed_flag = closed_flag;
                l.connected = false;
                l.connected_at = now;
                l.epoch += 1;
                l.verified = false;
                l.sid = None;
                l.marker = None;
                l.suspect_since = None;
                l.last_contact = now;
                // The server creates the session after this.
                l.heard_at = now;
                l.ping_since = None;
                l.probing = None;
                l.last_state_at = now;
                l.last_state = None;
                l.probe_error = None;
                l.opened_at = now;
                l.trail.clear();
                l.peers = lock_nodelay::Peers::resolve(&connect).ok();
                // The listener may have missed the first `Connected` (it is added after
                // the crate started connecting): the probe blocks until connected.
                self.start_probe();
            }
            Err(e) => {
                if !self.ever_connected && now >= self.connect_deadline {
                    self.fail_connect(Error::Connect(e));
                } else {
                    self.schedule_reopen(now);
                }
            }
        }
    }

    /// The connect string with the hosts shuffled (the crate always starts with the
    /// first host; shuffling spreads clients over an ensemble).
    fn connect_string(&mut self) -> String {
        let mut hosts = self.settings.hosts.clone();
        for i in (1..hosts.len()).rev() {
            let j = (self.next_random() % (i as u64 + 1)) as usize;
            hosts.swap(i, j);
        }
        format!("{}{}", hosts.join(","), self.settings.chroot)
    }

    fn next_random(&mut self) -> u64 {
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn start_probe(&mut self) {
        let Some(zk) = self.conn.zk.clone() else {
            return;
        };
        let epoch = self.conn.epoch;
        self.conn.probing = Some(epoch);
        self.conn.probe_retry_at = None;
        self.conn.probe_issued = Instant::now();
        self.note("probe sent");
        let gen = self.conn.gen;
        let marker = self.conn.marker.clone();
        let prefix = self.settings.marker_prefix.clone();
        let (auth, acl) = (self.settings.auth.clone(), self.settings.acl.clone());
        let tx = self.tx.clone();
        self.pool.run(
            move || wire::probe_session(&zk, marker.as_deref(), &prefix, &auth, &acl),
            move |result| {
                let _ = tx.send(Msg::Session { gen, epoch, result });
            },
        );
    }

    fn on_session_probe(&mut self, epoch: u64, result: Result<(i64, String), ZkError>) {
        let outcome = match &result {
            Ok((sid, _)) => format!("probe: session {sid:#x}"),
            Err(e) => format!("probe: {e}"),
        };
        self.note(&outcome);
        if self.conn.epoch != epoch {
            return; // the connection changed meanwhile; another probe follows
        }
        self.conn.probing = None;
        let now = Instant::now();
        match result {
            Ok((sid, marker)) => {
                // Before the core (or `connect`'s caller) sends anything on it.
                self.set_nodelay();
                self.check_server();
                if !self.conn.connected {
                    // Connected before the listener was added.
                    self.conn.connected = true;
                    self.conn.connected_at = now;
                }
                self.conn.verified = true;
                let counter = if self.conn.sid == Some(sid) {
                    &self.counters.reconnects
                } else {
                    &self.counters.sessions
                };
                counter.fetch_add(1, Ordering::AcqRel);
                self.conn.sid = Some(sid);
                self.conn.marker = Some(marker);
                self.conn.failures = 0;
                self.contact(now);
                self.heard(self.conn.probe_issued);
                for (issued_in, path) in std::mem::take(&mut self.conn.suspicious) {
                    if issued_in != Some(sid) {
                        self.delete_internal(path);
                    }
                }
                self.ever_connected = true;
                // The core hears of the session before `connect` returns: a caller
                // asking for `session_id()` right away must see it.
                self.sync_core();
                if let Some(waiter) = self.connect_waiter.take() {
                    let _ = waiter.send(Ok(()));
                }
            }
            Err(ZkError::ConnectionLoss) => {
                // Reconnecting (the listener will say so) or closed for good (likewise).
                self.conn.probe_error = Some(ZkError::ConnectionLoss);
                self.conn.probe_retry_at = Some(now + self.timing.reply_deadline);
            }
            Err(e) => {
                self.conn.probe_error = Some(e.clone());
                if !self.ever_connected && e == ZkError::Other(wire::AUTH_REFUSED.to_owned()) {
                    self.fail_connect(Error::AuthFailed(wire::AUTH_REFUSED.to_owned()));
                } else if !self.ever_connected {
                    self.fail_connect(Error::Connect(format!(
                        "cannot create the session marker under {:?}: {e}",
                        self.settings.marker_prefix
                    )));
                } else {
                    self.conn.probe_retry_at = Some(now + Duration::from_secs(1));
                }
            }
        }
    }

    /// Turns Nagle's algorithm off on the crate's connection, new after every
    /// (re)connect: the crate (0.8.0) leaves it on and writes each request on its
    /// own, so a request written while an earlier one is unanswered would wait for
    /// that reply (the `getChildren` and the own-node `getData`, issued together
    /// once the `create` is answered, would take 2 round trips instead of 1).
    /// lock-nodelay finds the socket among the process's descriptors by the
    /// server's address (see its docs). Quick (no network traffic), so done here,
    /// on the driver thread, before the core hears of the connection.
    fn set_nodelay(&mut self) {
        if let Some(peers) = &self.conn.peers {
            // Without it everything works, with Nagle's delays.
            let _ = lock_nodelay::apply(peers);
        }
    }

    /// Asks the server the crate is now connected to for its settings (`conf`)
    /// and has lock-client judge them for this session (a `ServerHazard` event
    /// and a warning when a majority could expire the session while this server
    /// still answers it). On a thread of its own: nothing waits for it.
    fn check_server(&self) {
        let checker = self.link.server_checker();
        let _ = lock_nodelay::ask_connected_servers_in_background(
            self.settings.hosts.join(","),
            "conf",
            move |server, answer| checker.report(server, answer),
        );
    }

    fn on_state(&mut self, state: ZkState) {
        let now = Instant::now();
        self.conn.last_state_at = now;
        self.conn.last_state = Some(state);
        self.note(&format!("{state:?}"));
        match state {
            ZkState::Connected => {
                if self.conn.connected {
                    return; // the first `Connected`, after a probe already proved it
                }
                self.conn.connected = true;
                self.conn.connected_at = now;
                self.conn.last_contact = now;
                self.conn.suspect_since = None;
                if self.conn.probing != Some(self.conn.epoch) {
                    self.start_probe();
                }
            }
            ZkState::Closed => self.link_down(now),
            // Connecting, NotConnected, ConnectedReadOnly (never asked for), AuthFailed:
            // not usable. The crate reconnects by itself (within the same session, or,
            // after an expiry, silently in a new one: the probe tells).
            _ => {
                if self.conn.connected || self.conn.probing.is_some() || self.conn.verified {
                    self.conn.epoch += 1;
                }
                self.conn.connected = false;
                self.conn.verified = false;
                self.conn.probing = None;
                self.conn.suspect_since = None;
                self.conn.ping_since = None;
                self.sync_core();
            }
        }
    }

    /// The client is closed for good (or abandoned): its session is over for us.
    fn link_down(&mut self, now: Instant) {
        if let Some(zk) = self.conn.zk.take() {
            reap(zk, self.conn.closed_flag.clone());
        }
        let l = &mut self.conn;
        l.connected = false;
        l.verified = false;
        l.probing = None;
        l.sid = None;
        l.marker = None;
        l.suspect_since = None;
        l.ping_since = None;
        l.queue.clear();
        l.outstanding.clear();
        l.suspicious.clear();
        l.epoch += 1;
        if self.link.session_id().is_some() {
            // The server may still hold the session (a client given up on, or closed
            // by the crate, within the session timeout): the core deletes its nodes
            // from the next session rather than leave the queues stuck behind them.
            self.feed(SessionEvent::Abandoned);
        }
        if !self.ever_connected && now >= self.connect_deadline {
            self.fail_connect(Error::Connect(format!(
                "no session within {:?} (the zookeeper crate closed every client before \
                 it reached a server; {})",
                self.settings.connect_timeout,
                self.connect_progress(now)
            )));
            return;
        }
        self.schedule_reopen(now);
    }

    /// Where the first connection stands, for the error of a `connect` that timed
    /// out: enough to tell a server that never answered from a session probe that
    /// never returned, or from clients the crate kept closing.
    fn connect_progress(&self, now: Instant) -> String {
        let l = &self.conn;
        let opened = self.counters.clients_opened.load(Ordering::Acquire);
        let current = if l.zk.is_none() {
            "none open".to_owned()
        } else {
            let state = match l.last_state {
                Some(state) => format!(
                    "last reported {state:?} {:?} ago",
                    now.saturating_duration_since(l.last_state_at)
                ),
                None => format!(
                    "opened {:?} ago, no state reported",
                    now.saturating_duration_since(l.last_state_at)
                ),
            };
            let probe = match (&l.probing, &l.probe_error) {
                (Some(_), _) => "session probe unanswered".to_owned(),
                (None, Some(e)) => format!("session probe failed: {e}"),
                (None, None) => "no session probe".to_owned(),
            };
            let trail: Vec<String> = l
                .trail
                .iter()
                .map(|(t, e)| format!("{e} at {t:.2?}"))
                .collect();
            format!("{state}, {probe}; since opened: {}", trail.join(", "))
        };
        format!("{opened} client(s) opened; current client: {current}")
    }

    /// Adds to the current client's trail (see `Conn::trail`).
    fn note(&mut self, what: &str) {
        let l = &mut self.conn;
        if l.trail.len() < 40 {
            l.trail.push((l.opened_at.elapsed(), what.to_owned()));
        }
    }

    fn schedule_reopen(&mut self, now: Instant) {
        let failures = self.conn.failures.min(6);
        self.conn.failures += 1;
        let pause =
            (Duration::from_millis(50) * (1 << failures)).min(self.settings.session_timeout);
        self.conn.reopen_at = Some(now + pause);
    }

    fn fail_connect(&mut self, error: Error) {
        if let Some(waiter) = self.connect_waiter.take() {
            let _ = waiter.send(Err(error));
        }
        self.stop = true;
    }

    fn issue_ping(&mut self, now: Instant) {
        let Some(zk) = self.conn.zk.clone() else {
            return;
        };
        self.conn.ping_since = Some(now);
        self.conn.last_ping = Some(now);
        let gen = self.conn.gen;
        let tx = self.tx.clone();
        self.pool.run(
            move || match zk.exists("/", false) {
                Ok(_) => (true, true),
                Err(zookeeper::ZkError::ConnectionLoss) => (false, false),
                Err(_) => (true, false),
            },
            move |(contact, heard)| {
                let _ = tx.send(Msg::Ping {
                    gen,
                    contact,
                    heard,
                });
            },
        );
    }

    // ----- the loop ---------------------------------------------------------------

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

    fn on_tick(&mut self) {
        let now = Instant::now();
        if !self.ever_connected && now >= self.connect_deadline {
            self.fail_connect(Error::Connect(format!(
                "no session within {:?} ({})",
                self.settings.connect_timeout,
                self.connect_progress(now)
            )));
            return;
        }
        if self.link.poll_timeout().is_some_and(|due| due <= now) {
            self.link.handle_timeout(now);
            self.drain();
        }
        if self.conn.zk.is_none() {
            if self.conn.reopen_at.is_some_and(|at| at <= now) && !self.stop {
                self.open(now);
            }
            return;
        }
        if self.conn.probing.is_none()
            && !self.conn.verified
            && self.conn.connected
            && self.conn.probe_retry_at.map_or(true, |at| at <= now)
        {
            self.start_probe();
        }
        if !self.ever_connected
            && !self.conn.verified
            && self.conn.opened_at + self.timing.stuck_after <= now
        {
            // The first client has not given a session in all that time, whatever
            // states it went through (it said Connected but the probe that learns
            // the session never got an answer: seen in CI, under load). Nothing is
            // held yet: start over with a fresh client rather than wait for
            // `connect` to time out on this one.
            self.link_down(now);
            return;
        }
        if !self.conn.connected {
            if self.conn.last_state_at + self.timing.stuck_after <= now {
                // Neither connected nor closed, and silent: the crate's first
                // connection attempt (which has no timeout) hangs on a server that
                // accepted the connection and never answered. Start over.
                self.link_down(now);
            }
            return;
        }
        let t = self.timing;
        match self.conn.suspect_since {
            None => match self.conn.oldest_pending() {
                Some(oldest) if oldest + t.reply_deadline <= now => self.suspect(now),
                // Still no answer when the server could soon expire the session.
                Some(_) if self.conn.heard_at + self.settings.lost_after <= now => {
                    self.suspect(now)
                }
                Some(_) => {}
                None => {
                    let idle_since = self.conn.last_contact.max(self.conn.connected_at);
                    if idle_since + t.probe_after <= now {
                        self.issue_ping(now);
                    }
                }
            },
            Some(since) => {
                if since + t.abandon_after <= now {
                    self.link_down(now);
                } else if self.conn.ping_since.is_none()
                    && self
                        .conn
                        .last_ping
                        .map_or(true, |at| at + t.reply_deadline <= now)
                {
                    // Find out when the connection is back.
                    self.issue_ping(now);
                }
            }
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        let t = self.timing;
        let l = &self.conn;
        let mut next: Option<Instant> = self.link.poll_timeout();
        let mut at = |i: Instant| next = Some(next.map_or(i, |n| n.min(i)));
        if !self.ever_connected {
            at(self.connect_deadline);
        }
        if l.zk.is_none() {
            if let Some(reopen) = l.reopen_at {
                at(reopen);
            }
        } else {
            if let Some(retry) = l.probe_retry_at {
                at(retry);
            }
            if !l.connected {
                at(l.last_state_at + t.stuck_after);
            }
            if !self.ever_connected && !l.verified {
                at(l.opened_at + t.stuck_after);
            }
            if l.connected {
                match l.suspect_since {
                    None => match l.oldest_pending() {
                        Some(oldest) => {
                            at(oldest + t.reply_deadline);
                            at(l.heard_at + self.settings.lost_after);
                        }
                        None => at(l.last_contact.max(l.connected_at) + t.probe_after),
                    },
                    Some(since) => {
                        at(since + t.abandon_after);
                        if l.ping_since.is_none() {
                            at(l.last_ping.map_or(since, |p| p + t.reply_deadline));
                        }
                    }
                }
            }
        }
        next
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
            let _ = rx.recv_timeout(self.settings.session_timeout);
        }
    }
}

/// The ordering rule (see the module docs): a request may be issued when no reply it
/// could depend on is outstanding. `outstanding` says, for each unanswered request,
/// whether it is a write.
fn may_issue(write: bool, outstanding: impl IntoIterator<Item = bool>) -> bool {
    let mut any = false;
    for outstanding_write in outstanding {
        if outstanding_write {
            return false;
        }
        any = true;
    }
    !(write && any)
}

/// Lets go of a client on a thread of its own: the crate's `close` (also run by its
/// `Drop`) blocks until the server answers, forever on a dead connection.
fn reap(zk: Arc<ZooKeeper>, closed: Arc<AtomicBool>) {
    let _ = std::thread::Builder::new()
        .name("lock-zookeeper-reaper".into())
        .spawn(move || {
            // A close cut short by a reconnect is tried again, so that a session the
            // crate silently opened meanwhile does not live on.
            for _ in 0..3 {
                if closed.load(Ordering::Acquire) || zk.close().is_ok() {
                    break;
                }
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordering_rule() {
        // Nothing outstanding: anything goes.
        assert!(may_issue(true, []));
        assert!(may_issue(false, []));
        // A create is outstanding: the listing after it waits (it must see the node).
        assert!(!may_issue(false, [true]));
        assert!(!may_issue(true, [true]));
        // Reads run together; a write waits for them (a delete must not overtake a
        // getData sent before it).
        assert!(may_issue(false, [false, false]));
        assert!(!may_issue(true, [false]));
    }

    #[test]
    fn detection_leaves_a_suspended_window() {
        for ms in [500, 1000, 2000, 5000, 10_000, 30_000] {
            let t = Duration::from_millis(ms);
            let timing = Timing::new(t);
            // Reported 2/3 T after the last reply at the latest: a held lock then
            // reads `Suspended` for at least the 0.9 T - 2/3 T before the core must
            // report it lost (with the default margin of T/10).
            assert!(timing.worst_detection() <= t * 2 / 3, "{t:?}: {timing:?}");
            let lost_after = t - lock_core::Config::new(t, 0).margin();
            assert!(timing.worst_detection() + t / 5 < lost_after, "{t:?}");
        }
    }
}

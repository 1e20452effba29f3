//! [`LockClient`]: the handle that owns one ZooKeeper session and its driver thread.

use crate::driver::{Command, Diagnostics, Driver, Msg, Settings, Shared, Task};
use crate::election::{Election, ElectionObserver};
use crate::error::Error;
use crate::lock::{
    start, start_task, LockGuard, Mutex, Next, Notice, PendingLock, RwLock, Semaphore,
};
use lock_core::{LockEvent, LockSpec, Stats};
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// Default requested session timeout.
pub const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// Default prefix of the session marker node (see [`Builder::session_marker`]).
pub const DEFAULT_SESSION_MARKER: &str = "/zklock-session-";

/// Settings for a [`LockClient`]; finish with [`connect`](Builder::connect).
///
/// ```no_run
/// # fn demo() -> Result<(), lock_zookeeper::Error> {
/// use std::time::Duration;
/// let locks = lock_zookeeper::LockClient::builder("127.0.0.1:2181")
///     .session_timeout(Duration::from_secs(6))
///     .suspended_grace(Duration::from_secs(3))
///     .connect()?;
/// # drop(locks); Ok(()) }
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until connect() is called"]
pub struct Builder {
    cluster: String,
    session_timeout: Duration,
    grace: Option<Duration>,
    marker: String,
    connect_timeout: Option<Duration>,
}

impl Builder {
    /// The session timeout to ask the server for (default 10 s).
    ///
    /// The `zookeeper` crate does not tell the timeout the server negotiated, so the
    /// binding times everything (suspension grace, its liveness checks) on this one:
    /// ask for a value inside the server's `minSessionTimeout..=maxSessionTimeout`
    /// (by default 2 to 20 ticks, 4 s to 40 s with the usual 2 s tick). Values
    /// below 500 ms leave too little time to notice a silent network before the
    /// server expires the session.
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// How long a held lock may stay suspended (connection down) before it is
    /// reported lost (default: the session timeout).
    pub fn suspended_grace(mut self, grace: Duration) -> Self {
        self.grace = Some(grace);
        self
    }

    /// Where the session marker lives (default [`DEFAULT_SESSION_MARKER`], a node at
    /// the root of the connect string's chroot; the server appends a sequence
    /// number).
    ///
    /// The `zookeeper` crate hides the session id, and silently opens a new session
    /// when the old one expired. The binding learns the id from the owner of this
    /// ephemeral node (one per session), and checks after every reconnect that it
    /// still exists. The client needs the right to create it.
    pub fn session_marker(mut self, prefix: impl Into<String>) -> Self {
        self.marker = prefix.into();
        self
    }

    /// How long [`connect`](Self::connect) tries to establish the first session
    /// (default: twice the session timeout plus 4 s, so that a first client stuck
    /// connecting, which is replaced after the session timeout plus 4 s, is followed
    /// by a fresh attempt before `connect` gives up). The `zookeeper` crate
    /// closes a client for good when it gets no session within about the session
    /// timeout plus a second (its own connection timeout is a fixed 2 s); `connect`
    /// then tries again with a fresh one until this timeout.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(timeout);
        self
    }

    /// Connects: returns once a session is established (and its id known).
    ///
    /// # Errors
    /// [`Error::Connect`] for a malformed connect string, no session within the
    /// [connect timeout](Self::connect_timeout), or a session marker that cannot be
    /// created.
    pub fn connect(self) -> Result<LockClient, Error> {
        let (hosts, chroot) = parse_cluster(&self.cluster)?;
        lock_core::validate_lock_path(&format!("{}x", self.marker))
            .map_err(|e| Error::Connect(format!("bad session marker prefix: {e}")))?;
        let settings = Settings {
            hosts,
            chroot,
            session_timeout: self.session_timeout,
            grace: self.grace,
            marker_prefix: self.marker,
            seed: seed(),
            connect_timeout: self
                .connect_timeout
                .unwrap_or((self.session_timeout + Duration::from_secs(4)) * 2),
        };
        let (tx, rx) = mpsc::channel();
        let shared = Arc::new(Shared::default());
        let (ready_tx, ready_rx) = mpsc::channel();
        let driver = Driver::new(settings, tx.clone(), rx, shared.clone(), ready_tx);
        std::thread::Builder::new()
            .name("lock-zookeeper-driver".into())
            .spawn(move || driver.run())
            .map_err(|e| Error::Connect(format!("cannot start the driver thread: {e}")))?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(LockClient {
                inner: Arc::new(Inner {
                    tx,
                    next_key: AtomicU64::new(1),
                    shared,
                    session_timeout: self.session_timeout,
                }),
            }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(Error::Connect("the driver stopped".into())),
        }
    }
}

/// Splits `host:port,host:port/chroot`, checking the hosts resolve (the crate would
/// otherwise refuse the whole string with a bare `BadArguments`).
fn parse_cluster(cluster: &str) -> Result<(Vec<String>, String), Error> {
    let (hosts, chroot) = match cluster.find('/') {
        Some(i) => (&cluster[..i], &cluster[i..]),
        None => (cluster, ""),
    };
    let chroot = if chroot == "/" { "" } else { chroot };
    if !chroot.is_empty() {
        lock_core::validate_lock_path(chroot)
            .map_err(|e| Error::Connect(format!("bad chroot in {cluster:?}: {e}")))?;
    }
    let hosts: Vec<String> = hosts
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(str::to_owned)
        .collect();
    if hosts.is_empty() {
        return Err(Error::Connect(format!("no host in {cluster:?}")));
    }
    for host in &hosts {
        use std::net::ToSocketAddrs;
        let resolves = host.to_socket_addrs().map(|mut a| a.next().is_some());
        if !matches!(resolves, Ok(true)) {
            return Err(Error::Connect(format!("cannot resolve {host:?}")));
        }
    }
    Ok((hosts, chroot.to_owned()))
}

/// A seed for the core's attempt ids, different in every client.
fn seed() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    h.write_u32(std::process::id());
    h.finish()
}

pub(crate) struct Inner {
    tx: mpsc::Sender<Msg>,
    next_key: AtomicU64,
    shared: Arc<Shared>,
    session_timeout: Duration,
}

impl Inner {
    /// Queues a command for the driver; `Err(Closed)` once it has stopped.
    pub(crate) fn send(&self, command: Command) -> Result<(), Error> {
        if self.shared.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        self.tx
            .send(Msg::Command(command))
            .map_err(|_| Error::Closed)
    }

    pub(crate) fn next_key(&self) -> u64 {
        self.next_key.fetch_add(1, Ordering::Relaxed)
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The last handle, lock object or guard is gone: close the session.
        let _ = self.tx.send(Msg::Command(Command::Shutdown));
    }
}

/// A handle on one ZooKeeper session that drives every lock taken through it.
///
/// Cheap to clone (an `Arc`), `Send + Sync`. One background thread (the driver) owns
/// the `zookeeper` client and a [`lock_core::Session`] holding every lock of that
/// session; handles, lock objects and guards talk to it through a channel, and the
/// blocking ZooKeeper calls run on a small pool of worker threads. The session stays
/// open while any handle, lock object or guard exists, or until
/// [`close`](Self::close).
///
/// # Session loss
/// When the session expires (or the `zookeeper` crate gives up on its connection for
/// good), held locks report
/// [`LostReason::SessionExpired`](lock_core::LostReason::SessionExpired), waiting
/// acquisitions fail with [`Error::SessionExpired`], and the handle opens a **new
/// session** by itself: later acquisitions (and ones made while no session exists)
/// run on it. The handle is dead only after [`close`](Self::close), or when every
/// clone is dropped; then every call returns [`Error::Closed`].
///
/// ```no_run
/// # fn demo() -> Result<(), lock_zookeeper::Error> {
/// use lock_zookeeper::LockClient;
///
/// let locks = LockClient::connect("127.0.0.1:2181")?;
/// let job = locks.mutex("/locks/job");
/// let guard = job.lock()?;
/// println!("holding {} with fencing token {}", guard.path(), guard.token());
/// guard.release()?;
/// locks.close();
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct LockClient {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for LockClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockClient")
            .field("session_id", &self.session_id())
            .field("connected", &self.is_connected())
            .finish()
    }
}

impl LockClient {
    /// Connects with default settings (see [`Builder`]).
    ///
    /// `cluster` is a ZooKeeper connect string: `host:port[,host:port...][/chroot]`.
    ///
    /// ```no_run
    /// # fn demo() -> Result<(), lock_zookeeper::Error> {
    /// let locks = lock_zookeeper::LockClient::connect("127.0.0.1:2181")?;
    /// # drop(locks); Ok(()) }
    /// ```
    pub fn connect(cluster: &str) -> Result<LockClient, Error> {
        Self::builder(cluster).connect()
    }

    /// Settings for a connection to `cluster`.
    ///
    /// ```
    /// let builder = lock_zookeeper::LockClient::builder("127.0.0.1:2181");
    /// # drop(builder);
    /// ```
    pub fn builder(cluster: &str) -> Builder {
        Builder {
            cluster: cluster.to_owned(),
            session_timeout: DEFAULT_SESSION_TIMEOUT,
            grace: None,
            marker: DEFAULT_SESSION_MARKER.to_owned(),
            connect_timeout: None,
        }
    }

    /// An exclusive lock on the lock directory `path`.
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// let guard = locks.mutex("/locks/job").lock()?;
    /// # drop(guard); Ok(()) }
    /// ```
    pub fn mutex(&self, path: impl Into<String>) -> Mutex {
        Mutex::new(self.clone(), path.into())
    }

    /// A read/write lock on `path`: many readers or one writer.
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// let table = locks.rwlock("/locks/table");
    /// let r1 = table.read().lock()?;
    /// let r2 = table.read().lock()?; // readers share
    /// # drop((r1, r2)); Ok(()) }
    /// ```
    pub fn rwlock(&self, path: impl Into<String>) -> RwLock {
        RwLock::new(self.clone(), path.into())
    }

    /// A counting semaphore on `path` with `permits` concurrent holders.
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// let slots = locks.semaphore("/locks/gpu", 3);
    /// let permit = slots.lock()?;
    /// # drop(permit); Ok(()) }
    /// ```
    pub fn semaphore(&self, path: impl Into<String>, permits: u32) -> Semaphore {
        Semaphore::new(self.clone(), path.into(), permits)
    }

    /// Runs any [`LockSpec`] (e.g. a leader-election participant, or a lock with
    /// another naming scheme), giving up at `deadline` if given.
    ///
    /// Give the deadline here rather than with `LockSpec::deadline`, whose
    /// timestamps are on the driver's private clock. A spec made
    /// [`try_only`](LockSpec::try_only) that finds the lock busy gives
    /// [`Error::WouldBlock`]. Critical sections and fenced writes
    /// ([`LockSpec::detect_crashes`]) are not available on this binding: they need
    /// `multi`, which the `zookeeper` crate lacks.
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// use lock_core::{LockSpec, NameScheme};
    /// let spec = LockSpec::write("/locks/shared-with-curator").scheme(NameScheme::Curator);
    /// let guard = locks.acquire(spec, None)?;
    /// # drop(guard); Ok(()) }
    /// ```
    pub fn acquire(&self, spec: LockSpec, deadline: Option<Instant>) -> Result<LockGuard, Error> {
        start(self, spec, deadline)?.wait()
    }

    /// Starts an acquisition of any [`LockSpec`] without waiting; see
    /// [`PendingLock`].
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// let pending = locks.start(lock_core::LockSpec::leader("/election", "node-1"), None)?;
    /// let leadership = pending.wait()?;
    /// # drop(leadership); Ok(()) }
    /// ```
    pub fn start(&self, spec: LockSpec, deadline: Option<Instant>) -> Result<PendingLock, Error> {
        start(self, spec, deadline)
    }

    /// Joins the leader election at `path` as `participant` (its id, stored in its
    /// node for observers to read; must not be empty). The participant joins at once;
    /// see [`Election`].
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// let mut election = locks.election("/services/scheduler/leader", "node-1");
    /// let leadership = election.leadership()?; // waits until elected
    /// println!("leading, token {}", leadership.token());
    /// leadership.resign()?;
    /// # Ok(()) }
    /// ```
    pub fn election(&self, path: impl Into<String>, participant: impl Into<Vec<u8>>) -> Election {
        Election::new(self.clone(), path.into(), participant.into())
    }

    /// Follows the leader of the election at `path` without taking part (the
    /// election directory need not exist yet). Returns once the current leader is
    /// known. While the observer lives, [`wait_idle`](Self::wait_idle) waits too (it
    /// is work in progress on the session).
    ///
    /// # Errors
    /// [`Error::Usage`] for an invalid path, [`Error::Closed`] once the client is
    /// closed.
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// let mut observer = locks.observe_election("/services/scheduler/leader")?;
    /// println!("leader: {:?}", observer.leader().map(|l| l.id.clone()));
    /// let next = observer.changed()?;
    /// # drop(next); Ok(()) }
    /// ```
    pub fn observe_election(&self, path: impl Into<String>) -> Result<ElectionObserver, Error> {
        ElectionObserver::start(self, path.into())
    }

    /// Asks holders to let go, by writing Curator's `__REVOKE__` into their nodes:
    /// given a lock directory, its current holders (the lowest node, or the leading
    /// readers); given a participant node's path, that node's owner, holding or
    /// waiting. Returns the nodes asked (empty if there were none), once written.
    ///
    /// Holders of locks made [`revocable`](Mutex::revocable) are told
    /// ([`LockGuard::revocation_requested`]) and decide; a revocable waiter gives up
    /// its place ([`Error::Revoked`]); other participants ignore the request. Curator
    /// clients honour it too.
    ///
    /// # Errors
    /// [`Error::Usage`] for an invalid path, [`Error::Zk`] if ZooKeeper refused,
    /// [`Error::Closed`] once the client is closed.
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// let asked = locks.revoke("/locks/job")?;
    /// println!("asked {asked:?} to let go");
    /// // Now wait for the lock as usual.
    /// let guard = locks.mutex("/locks/job").lock()?;
    /// # drop(guard); Ok(()) }
    /// ```
    pub fn revoke(&self, path: impl Into<String>) -> Result<Vec<String>, Error> {
        let (_, slot) = start_task(&self.inner, Task::Revoke { path: path.into() })?;
        loop {
            match slot.next(None) {
                Next::Notice(Notice::Event(LockEvent::RevocationSent { nodes })) => {
                    return Ok(nodes)
                }
                Next::Notice(Notice::Event(LockEvent::Failed(reason))) => return Err(reason.into()),
                Next::Notice(Notice::Refused(e)) => return Err(e.into()),
                Next::Notice(Notice::Event(_)) | Next::TimedOut => {}
                Next::Gone => return Err(Error::Closed),
            }
        }
    }

    /// The ZooKeeper session id the locks currently run on (`None` between an
    /// expiry and the next session, and after close).
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) {
    /// println!("session {:#x}", locks.session_id().unwrap_or(0));
    /// # }
    /// ```
    pub fn session_id(&self) -> Option<i64> {
        self.inner.shared.session_id()
    }

    /// Whether the driver currently believes the connection is up.
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) {
    /// assert!(locks.is_connected());
    /// # }
    /// ```
    pub fn is_connected(&self) -> bool {
        self.inner.shared.is_connected()
    }

    /// The session timeout asked for (the `zookeeper` crate does not tell the one the
    /// server negotiated; see [`Builder::session_timeout`]).
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) {
    /// println!("{:?}", locks.session_timeout());
    /// # }
    /// ```
    pub fn session_timeout(&self) -> Duration {
        self.inner.session_timeout
    }

    /// Waits until nothing is in progress on this session: no lock held or awaited
    /// and every node it created deleted (releases by dropped guards and cancelled
    /// acquisitions happen in the background; this waits for them).
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// drop(locks.mutex("/locks/job").lock()?); // released in the background
    /// locks.wait_idle()?;                      // ... and now it is gone
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::Closed`] if the client is (or gets) closed.
    pub fn wait_idle(&self) -> Result<(), Error> {
        let (tx, rx) = mpsc::channel();
        self.inner.send(Command::WaitIdle(tx))?;
        rx.recv().map_err(|_| Error::Closed)
    }

    /// What this client went through: `zookeeper` clients opened, sessions,
    /// reconnections, silent connections detected.
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) {
    /// let d = locks.diagnostics();
    /// println!("{} sessions over {} clients", d.sessions, d.clients_opened);
    /// # }
    /// ```
    pub fn diagnostics(&self) -> Diagnostics {
        self.inner.shared.diagnostics()
    }

    /// The core's counters (requests sent, stale replies, acquisitions, ...).
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// println!("{} requests so far", locks.stats()?.requests);
    /// # Ok(()) }
    /// ```
    pub fn stats(&self) -> Result<Stats, Error> {
        let (tx, rx) = mpsc::channel();
        self.inner.send(Command::Stats(tx))?;
        rx.recv().map_err(|_| Error::Closed)
    }

    /// Closes the session: held locks report
    /// [`LostReason::Closed`](lock_core::LostReason::Closed), waiting acquisitions
    /// fail with [`Error::Closed`], the server deletes every node of the session, and
    /// every later call on any clone returns [`Error::Closed`]. Returns once the
    /// server has confirmed (or after about a session timeout). Idempotent.
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) {
    /// locks.close();
    /// assert!(locks.mutex("/locks/job").lock().is_err());
    /// # }
    /// ```
    pub fn close(&self) {
        let (tx, rx) = mpsc::channel();
        if self.inner.send(Command::Close(tx)).is_ok() {
            let _ = rx.recv();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_connect_strings() {
        let (hosts, chroot) = parse_cluster("127.0.0.1:1,127.0.0.1:2/app").unwrap();
        assert_eq!(hosts, vec!["127.0.0.1:1", "127.0.0.1:2"]);
        assert_eq!(chroot, "/app");
        let (hosts, chroot) = parse_cluster("localhost:2181/").unwrap();
        assert_eq!(hosts.len(), 1);
        assert_eq!(chroot, "");
        assert!(matches!(parse_cluster(""), Err(Error::Connect(_))));
        assert!(matches!(parse_cluster("nohost"), Err(Error::Connect(_))));
        assert!(matches!(
            parse_cluster("127.0.0.1:1/a/"),
            Err(Error::Connect(_))
        ));
    }

    #[test]
    fn handles_are_thread_safe() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<LockClient>();
        send_sync::<Mutex>();
        send_sync::<RwLock>();
        send_sync::<Semaphore>();
        send_sync::<LockGuard>();
        send_sync::<PendingLock>();
        send_sync::<crate::Canceller>();
        send_sync::<Election>();
        send_sync::<crate::Leadership>();
        send_sync::<ElectionObserver>();
        send_sync::<Error>();
    }

    #[test]
    fn closed_client_refuses_everything() {
        // A client whose driver is gone, without a server.
        let (tx, rx) = mpsc::channel();
        drop(rx);
        let shared = Arc::new(Shared::default());
        let locks = LockClient {
            inner: Arc::new(Inner {
                tx,
                next_key: AtomicU64::new(1),
                shared,
                session_timeout: Duration::from_secs(1),
            }),
        };
        assert_eq!(locks.mutex("/a").lock().unwrap_err(), Error::Closed);
        assert_eq!(locks.mutex("/a").try_lock().unwrap_err(), Error::Closed);
        assert_eq!(locks.wait_idle().unwrap_err(), Error::Closed);
        assert_eq!(locks.stats().unwrap_err(), Error::Closed);
        locks.close();
        assert_eq!(locks.session_id(), None);
    }
}

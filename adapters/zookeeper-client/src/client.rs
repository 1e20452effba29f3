//! [`LockClient`]: the handle that owns one ZooKeeper session and its driver task.

use crate::driver::{Command, Driver, Shared, Task};
use crate::election::{Election, ElectionObserver};
use crate::error::Error;
use crate::lock::{acquire, LockGuard, Mutex, Notice, RwLock, Semaphore, Started};
use crate::runtime::Runtime;
use futures::channel::{mpsc, oneshot};
use lock_core::{LockSpec, Stats};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Default requested session timeout.
pub const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// Settings for a [`LockClient`]; finish with [`connect`](Builder::connect).
///
/// ```no_run
/// # async fn demo() -> Result<(), lock_zookeeper_client::Error> {
/// use std::time::Duration;
/// let locks = lock_zookeeper_client::LockClient::builder("127.0.0.1:2181")
///     .session_timeout(Duration::from_secs(6))
///     .suspended_grace(Duration::from_secs(3))
///     .connect()
///     .await?;
/// # drop(locks); Ok(()) }
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until connect() is awaited"]
pub struct Builder {
    cluster: String,
    session_timeout: Duration,
    grace: Option<Duration>,
    runtime: Option<Runtime>,
}

impl Builder {
    /// The session timeout to ask the server for (default 10 s). The server clamps
    /// it to its `minSessionTimeout..=maxSessionTimeout`; the negotiated value is
    /// what counts (see [`LockClient::session_timeout`]).
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// How long a held lock may stay suspended (connection down) before it is
    /// reported lost (default: the negotiated session timeout).
    pub fn suspended_grace(mut self, grace: Duration) -> Self {
        self.grace = Some(grace);
        self
    }

    /// Runs the driver and zookeeper-client's session task on `runtime` (default:
    /// [`Runtime::current`]).
    pub fn runtime(mut self, runtime: Runtime) -> Self {
        self.runtime = Some(runtime);
        self
    }

    /// Connects (waits until the session is established) and starts the driver.
    ///
    /// # Errors
    /// [`Error::NoRuntime`] without a runtime, [`Error::Connect`] if no session could be
    /// established (zookeeper-client gives up after about the session timeout).
    pub async fn connect(self) -> Result<LockClient, Error> {
        let runtime = self
            .runtime
            .or_else(Runtime::current)
            .ok_or(Error::NoRuntime)?;
        let connector =
            zookeeper_client::Client::connector().with_session_timeout(self.session_timeout);
        let cluster = self.cluster.clone();
        let client = runtime
            .scope(async move { connector.connect(&cluster).await })
            .await
            .map_err(Error::Connect)?;
        let (tx, rx) = mpsc::unbounded();
        let shared = Arc::new(Shared::default());
        let session_timeout = client.session_timeout();
        let mut driver = Driver::new(
            runtime.clone(),
            self.cluster,
            self.session_timeout,
            self.grace,
            client,
            rx,
            shared.clone(),
        );
        let nodelay = driver.nodelay_ready();
        runtime.spawn(driver.run());
        // The first requests must not meet Nagle's algorithm either: return once
        // the connection has TCP_NODELAY (or could not get it; see the driver's
        // `set_nodelay`).
        let _ = nodelay.await;
        Ok(LockClient {
            inner: Arc::new(Inner {
                commands: tx,
                next_key: AtomicU64::new(1),
                shared,
                session_timeout,
            }),
        })
    }
}

pub(crate) struct Inner {
    commands: mpsc::UnboundedSender<Command>,
    next_key: AtomicU64,
    shared: Arc<Shared>,
    session_timeout: Duration,
}

impl Inner {
    /// Queues a command for the driver; `Err(Closed)` once the driver has stopped.
    pub(crate) fn send(&self, command: Command) -> Result<(), Error> {
        self.commands
            .unbounded_send(command)
            .map_err(|_| Error::Closed)
    }

    pub(crate) fn next_key(&self) -> u64 {
        self.next_key.fetch_add(1, Ordering::Relaxed)
    }
}

/// A handle on one ZooKeeper session that drives every lock taken through it.
///
/// Cheap to clone (an `Arc`), `Send + Sync`. One background task (the driver) owns the
/// zookeeper-client session and a [`lock_core::Session`]; handles, lock objects and
/// guards talk to it through a channel. The session stays open while any handle,
/// lock object or guard exists, or until [`close`](Self::close).
///
/// # Session loss
/// When the session expires, held locks report
/// [`LostReason::SessionExpired`](lock_core::LostReason::SessionExpired), waiting
/// acquisitions fail with [`Error::SessionExpired`], and the handle opens a **new
/// session** by itself: later acquisitions (and ones made while no session exists)
/// run on it. The handle is dead only after [`close`](Self::close), or when every
/// clone is dropped; then every call returns [`Error::Closed`].
///
/// ```no_run
/// # async fn demo() -> Result<(), lock_zookeeper_client::Error> {
/// use lock_zookeeper_client::LockClient;
///
/// let locks = LockClient::connect("127.0.0.1:2181").await?;
/// let job = locks.mutex("/locks/job");
/// let guard = job.lock().await?;
/// println!("holding {} with fencing token {}", guard.path(), guard.token());
/// guard.release().await?;
/// locks.close().await;
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
    /// # async fn demo() -> Result<(), lock_zookeeper_client::Error> {
    /// let locks = lock_zookeeper_client::LockClient::connect("127.0.0.1:2181").await?;
    /// # drop(locks); Ok(()) }
    /// ```
    pub async fn connect(cluster: &str) -> Result<LockClient, Error> {
        Self::builder(cluster).connect().await
    }

    /// Settings for a connection to `cluster`.
    ///
    /// ```
    /// let builder = lock_zookeeper_client::LockClient::builder("127.0.0.1:2181");
    /// # drop(builder);
    /// ```
    pub fn builder(cluster: &str) -> Builder {
        Builder {
            cluster: cluster.to_owned(),
            session_timeout: DEFAULT_SESSION_TIMEOUT,
            grace: None,
            runtime: None,
        }
    }

    /// An exclusive lock on the lock directory `path`.
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
    /// let guard = locks.mutex("/locks/job").lock().await?;
    /// # drop(guard); Ok(()) }
    /// ```
    pub fn mutex(&self, path: impl Into<String>) -> Mutex {
        Mutex::new(self.clone(), path.into())
    }

    /// A read/write lock on `path`: many readers or one writer.
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
    /// let table = locks.rwlock("/locks/table");
    /// let r1 = table.read().lock().await?;
    /// let r2 = table.read().lock().await?; // readers share
    /// # drop((r1, r2)); Ok(()) }
    /// ```
    pub fn rwlock(&self, path: impl Into<String>) -> RwLock {
        RwLock::new(self.clone(), path.into())
    }

    /// A counting semaphore on `path` with `permits` concurrent holders.
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
    /// let slots = locks.semaphore("/locks/gpu", 3);
    /// let permit = slots.lock().await?;
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
    /// [`Error::WouldBlock`].
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
    /// use lock_core::{LockSpec, NameScheme};
    /// let spec = LockSpec::write("/locks/shared-with-curator").scheme(NameScheme::Curator);
    /// let guard = locks.acquire(spec, None).await?;
    /// # drop(guard); Ok(()) }
    /// ```
    pub async fn acquire(
        &self,
        spec: LockSpec,
        deadline: Option<Instant>,
    ) -> Result<LockGuard, Error> {
        acquire(self, spec, deadline).await
    }

    /// Joins the leader election at `path` as `participant` (its id, stored in its
    /// node for observers to read; must not be empty). The participant joins at once;
    /// see [`Election`].
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
    /// let mut election = locks.election("/services/scheduler/leader", "node-1");
    /// let leadership = election.leadership().await?; // waits until elected
    /// println!("leading, token {}", leadership.token());
    /// leadership.resign().await?;
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
    /// [`Error::Usage`] for an invalid path, [`Error::Closed`] once the client is closed.
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
    /// let mut observer = locks.observe_election("/services/scheduler/leader").await?;
    /// println!("leader: {:?}", observer.leader().map(|l| l.id.clone()));
    /// let next = observer.changed().await?;
    /// # drop(next); Ok(()) }
    /// ```
    pub async fn observe_election(
        &self,
        path: impl Into<String>,
    ) -> Result<ElectionObserver, Error> {
        ElectionObserver::start(self, path.into()).await
    }

    /// Asks holders to let go, by writing Curator's `__REVOKE__` into their nodes:
    /// given a lock directory, its current holders (the lowest node, or the leading
    /// readers); given a participant node's path, that node's owner, holding or
    /// waiting. Returns the nodes asked (empty if there were none).
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
    /// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
    /// let asked = locks.revoke("/locks/job").await?;
    /// println!("asked {asked:?} to let go");
    /// // Now wait for the lock as usual.
    /// let guard = locks.mutex("/locks/job").lock().await?;
    /// # drop(guard); Ok(()) }
    /// ```
    pub async fn revoke(&self, path: impl Into<String>) -> Result<Vec<String>, Error> {
        let mut started = Started::start(self, Task::Revoke { path: path.into() }, None)?;
        loop {
            match started.next().await {
                Some(Notice::Event(lock_core::LockEvent::RevocationSent { nodes })) => {
                    started.ended();
                    return Ok(nodes);
                }
                Some(Notice::Event(lock_core::LockEvent::Failed(reason))) => {
                    started.ended();
                    return Err(reason.into());
                }
                Some(Notice::Refused(e)) => {
                    started.ended();
                    return Err(e.into());
                }
                Some(Notice::Event(_)) => {}
                None => return Err(Error::Closed),
            }
        }
    }

    /// The current ZooKeeper session id (`None` between an expiry and the next
    /// session, and after close).
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_zookeeper_client::LockClient) {
    /// println!("session {:#x}", locks.session_id().unwrap_or(0));
    /// # }
    /// ```
    pub fn session_id(&self) -> Option<i64> {
        self.inner.shared.session_id()
    }

    /// Whether the driver currently believes the connection is up.
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_zookeeper_client::LockClient) {
    /// assert!(locks.is_connected());
    /// # }
    /// ```
    pub fn is_connected(&self) -> bool {
        self.inner.shared.is_connected()
    }

    /// The session timeout negotiated with the server at connect time.
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_zookeeper_client::LockClient) {
    /// println!("{:?}", locks.session_timeout());
    /// # }
    /// ```
    pub fn session_timeout(&self) -> std::time::Duration {
        self.inner.session_timeout
    }

    /// Waits until nothing is in progress on this session: no lock held or awaited
    /// and every node it created deleted (releases by dropped guards and cancelled
    /// acquisitions happen in the background; this waits for them).
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
    /// drop(locks.mutex("/locks/job").lock().await?); // released in the background
    /// locks.wait_idle().await?;                      // ... and now it is gone
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::Closed`] if the client is (or gets) closed.
    pub async fn wait_idle(&self) -> Result<(), Error> {
        let (tx, rx) = oneshot::channel();
        self.inner.send(Command::WaitIdle(tx))?;
        rx.await.map_err(|_| Error::Closed)
    }

    /// The core's counters (requests sent, stale replies, acquisitions, ...).
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
    /// println!("{} requests so far", locks.stats().await?.requests);
    /// # Ok(()) }
    /// ```
    pub async fn stats(&self) -> Result<Stats, Error> {
        let (tx, rx) = oneshot::channel();
        self.inner.send(Command::Stats(tx))?;
        rx.await.map_err(|_| Error::Closed)
    }

    /// Closes the session: held locks report
    /// [`LostReason::Closed`](lock_core::LostReason::Closed), waiting acquisitions
    /// fail with [`Error::Closed`], the server deletes every node of the session, and
    /// every later call on any clone returns [`Error::Closed`]. Returns once the
    /// server has confirmed (or after about a session timeout). Idempotent.
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_zookeeper_client::LockClient) {
    /// locks.close().await;
    /// assert!(locks.mutex("/locks/job").lock().await.is_err());
    /// # }
    /// ```
    pub async fn close(&self) {
        let (tx, rx) = oneshot::channel();
        if self.inner.send(Command::Close(tx)).is_ok() {
            let _ = rx.await;
        }
    }
}

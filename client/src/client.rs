//! [`LockClient`]: the user's handle on one ZooKeeper session, and [`pair`].

use crate::election::{Election, ElectionObserver};
use crate::error::{Cycle, Error};
use crate::guard::{LockGuard, Pending};
use crate::link::Link;
use crate::lock::{Mutex, RwLock, Semaphore};
use crate::pending::PendingLock;
use crate::shared::{Shared, State};
use lock_core::{Config, LockEvent, LockId, LockSpec, Participants, Stats};
use std::future::poll_fn;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

/// A [`LockClient`] and the [`Link`] its binding drives, sharing one core
/// [`Session`](lock_core::Session) made from `config` (its `session_timeout` is
/// the negotiated one; give every session a different `seed`).
///
/// ```
/// let config = lock_core::Config::new(std::time::Duration::from_secs(10), 7);
/// let (locks, link) = lock_client::pair(config);
/// assert_eq!(locks.session_timeout(), std::time::Duration::from_secs(10));
/// assert!(!link.is_closed());
/// drop(link); // the binding is gone: the client is closed
/// assert!(locks.session_id().is_none());
/// ```
pub fn pair(config: Config) -> (LockClient, Link) {
    pair_with_clock(config, Arc::new(crate::SystemClock))
}

/// [`pair`] on the binding's `clock` instead of the operating system's: the
/// handles read the time from it (see [`Clock`](crate::Clock) for the contract),
/// and the binding passes the link instants of the same clock. A seeded
/// simulation gives a virtual clock.
pub fn pair_with_clock(config: Config, clock: Arc<dyn crate::Clock>) -> (LockClient, Link) {
    crate::metrics::describe_metrics();
    let shared = Arc::new(Shared::new(config, clock));
    let client = LockClient {
        inner: Arc::new(Handles {
            shared: shared.clone(),
        }),
        owner: None,
    };
    (client, Link::new(shared))
}

/// What every user handle holds: when the last one goes, the link hears of it.
pub(crate) struct Handles {
    pub(crate) shared: Arc<Shared>,
}

impl Drop for Handles {
    fn drop(&mut self) {
        self.shared.with(|s| s.handles_gone = true);
    }
}

/// What a task is, for [`LockClient::start`].
pub(crate) enum Task {
    Acquire {
        spec: LockSpec,
        deadline: Option<Instant>,
        /// A reentrant mutex: its grant becomes a counted hold of its owner at
        /// once (see `State::holds`), so that the owner re-enters it even before
        /// the first guard is handed out.
        reentrant: bool,
    },
    Observe(String),
    Revoke(String),
    Inspect(String),
    Scan(String),
}

/// A handle on one ZooKeeper session that drives every lock taken through it.
///
/// Cheap to clone (an `Arc`), `Send + Sync`. Handles, lock objects and guards share
/// one state with the binding's [`Link`] (the core
/// [`Session`](lock_core::Session) and a slot per lock); a call locks it, asks the
/// core, and wakes the link, which sends the requests. The session stays open while
/// any handle, lock object or guard exists, or until [`close`](Self::close).
///
/// # Session loss
/// When the session expires, held locks report
/// [`LostReason::SessionExpired`](lock_core::LostReason::SessionExpired), waiting
/// acquisitions fail with [`Error::SessionExpired`], and a binding that reconnects
/// (lock-zookeeper-client does) opens a **new session** by itself: later
/// acquisitions (and ones made while no session exists) run on it. The handle is
/// dead only after [`close`](Self::close), or when every clone is dropped, or when
/// the binding stops; then every call returns [`Error::Closed`].
///
/// # Blocking
/// Every async method has a `*_blocking` twin (see [`blocking`](crate::blocking)).
///
/// ```
/// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
/// let job = locks.mutex("/locks/job");
/// let guard = job.lock().await?;
/// println!("holding {} with fencing token {}", guard.path(), guard.token());
/// guard.release().await?;
/// locks.close().await;
/// # Ok(()) }
/// # futures::executor::block_on(demo(lock_sim::Server::new().client())).unwrap();
/// ```
#[derive(Clone)]
pub struct LockClient {
    pub(crate) inner: Arc<Handles>,
    /// The default owner of the lock objects made through this handle
    /// ([`with_owner`](Self::with_owner)).
    pub(crate) owner: Option<Arc<str>>,
}

impl std::fmt::Debug for LockClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockClient")
            .field("session_id", &self.session_id())
            .field("connected", &self.is_connected())
            .field("owner", &self.owner)
            .finish()
    }
}

impl LockClient {
    pub(crate) fn shared(&self) -> &Shared {
        &self.inner.shared
    }

    /// Starts a task in the core and gives it a slot; its id comes back at once.
    pub(crate) fn start_task(&self, task: Task, election: Option<u64>) -> Result<LockId, Error> {
        self.shared().with(|s: &mut State| {
            if s.is_closed() {
                return Err(Error::Closed);
            }
            let now = s.now();
            let mut span = tracing::Span::none();
            let mut metrics = None;
            let id = match task {
                Task::Acquire {
                    mut spec,
                    deadline,
                    reentrant,
                } => {
                    if let Some(deadline) = deadline {
                        spec = spec.deadline(s.timestamp(deadline));
                    }
                    let held_for = spec
                        .owner_id()
                        .filter(|_| reentrant)
                        .map(|o| (o.to_owned(), spec.path().to_owned()));
                    let lock = crate::trace::acquisition_span(&spec);
                    let started = crate::metrics::Acquisition::start(&spec, s.metrics_prefix);
                    let id = s.core.acquire(spec, now)?;
                    lock.record("lock", id.0);
                    span = lock;
                    metrics = Some(started);
                    if let Some(held_for) = held_for {
                        s.reentrant.insert(id, held_for);
                    }
                    id
                }
                Task::Observe(path) => s.core.observe(&path, now)?,
                Task::Revoke(path) => s.core.revoke(&path, now)?,
                Task::Inspect(path) => s.core.inspect(&path, now)?,
                Task::Scan(root) => s.core.deadlocks(&root, now)?,
            };
            s.add_slot(id, election);
            if let Some(slot) = s.slots.get_mut(&id) {
                slot.span = span;
                slot.metrics = metrics;
            }
            Ok(id)
        })
    }

    /// A handle on the same session whose lock objects ([`mutex`](Self::mutex),
    /// [`rwlock`](Self::rwlock), [`semaphore`](Self::semaphore)) are taken for
    /// `owner` by default (see [`Mutex::owner`]): the unit deadlock detection and the
    /// self-deadlock check reason about, e.g. one worker or one philosopher. Several
    /// owners may share one session (one handle each); a lock object's own
    /// [`owner`](Mutex::owner) overrides this.
    ///
    /// ```
    /// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
    /// use std::time::Duration;
    /// let worker = locks.with_owner("worker-7");
    /// let a = worker.mutex("/locks/a").detect_deadlocks(Duration::from_secs(1)).lock().await?;
    /// // Taking "/locks/a" again for "worker-7" is refused at once:
    /// assert!(matches!(
    ///     worker.mutex("/locks/a").lock().await,
    ///     Err(lock_client::Error::SelfDeadlock { .. })
    /// ));
    /// # drop(a); Ok(()) }
    /// # futures::executor::block_on(demo(lock_sim::Server::new().client())).unwrap();
    /// ```
    pub fn with_owner(&self, owner: impl Into<String>) -> LockClient {
        LockClient {
            inner: self.inner.clone(),
            owner: Some(Arc::from(owner.into())),
        }
    }

    /// The default owner given with [`with_owner`](Self::with_owner), if any.
    pub fn owner(&self) -> Option<&str> {
        self.owner.as_deref()
    }

    /// An exclusive lock on the lock directory `path`.
    ///
    /// ```
    /// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
    /// let guard = locks.mutex("/locks/job").lock().await?;
    /// # drop(guard); Ok(()) }
    /// # futures::executor::block_on(demo(lock_sim::Server::new().client())).unwrap();
    /// ```
    pub fn mutex(&self, path: impl Into<String>) -> Mutex {
        Mutex::new(self.clone(), path.into())
    }

    /// A read/write lock on `path`: many readers or one writer.
    ///
    /// ```
    /// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
    /// let table = locks.rwlock("/locks/table");
    /// let r1 = table.read().lock().await?;
    /// let r2 = table.read().lock().await?; // readers share
    /// # drop((r1, r2)); Ok(()) }
    /// # futures::executor::block_on(demo(lock_sim::Server::new().client())).unwrap();
    /// ```
    pub fn rwlock(&self, path: impl Into<String>) -> RwLock {
        RwLock::new(self.clone(), path.into())
    }

    /// A counting semaphore on `path` with `permits` concurrent holders.
    ///
    /// With [`with_scheme`](Semaphore::with_scheme)`(NameScheme::Curator)` it shares
    /// `path` with Curator's `InterProcessSemaphoreV2` (and
    /// `InterProcessSemaphoreMutex`), with `NameScheme::Kazoo` with kazoo's
    /// `Semaphore`, in their layouts: a queue (an internal mutex) and a pool of
    /// lease nodes (see [`names::semaphore_mutex_dir`](lock_core::names::semaphore_mutex_dir)).
    /// kazoo's permit count is stored on the path and a different one is refused
    /// ([`FailReason::PermitsMismatch`](lock_core::FailReason::PermitsMismatch));
    /// Curator's layout stores none, so every client must be given the same count.
    ///
    /// ```
    /// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
    /// let slots = locks.semaphore("/locks/gpu", 3);
    /// let permit = slots.lock().await?;
    /// # drop(permit); Ok(()) }
    /// # futures::executor::block_on(demo(lock_sim::Server::new().client())).unwrap();
    /// ```
    pub fn semaphore(&self, path: impl Into<String>, permits: u32) -> Semaphore {
        Semaphore::new(self.clone(), path.into(), permits)
    }

    /// Runs any [`LockSpec`] (e.g. a leader-election participant, or a lock with
    /// another naming scheme), giving up at `deadline` if given.
    ///
    /// Give the deadline here rather than with `LockSpec::deadline`, whose
    /// timestamps are on the core's private clock. A spec made
    /// [`try_only`](LockSpec::try_only) that finds the lock busy gives
    /// [`Error::WouldBlock`]. Cancel-safe: dropping the future gives up and leaves
    /// no node behind.
    ///
    /// ```
    /// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
    /// use lock_core::{LockSpec, NameScheme};
    /// let spec = LockSpec::write("/locks/shared-with-curator").scheme(NameScheme::Curator);
    /// let guard = locks.acquire(spec, None).await?;
    /// # drop(guard); Ok(()) }
    /// # futures::executor::block_on(demo(lock_sim::Server::new().client())).unwrap();
    /// ```
    pub async fn acquire(
        &self,
        spec: LockSpec,
        deadline: Option<Instant>,
    ) -> Result<LockGuard, Error> {
        self.start(spec, deadline)?.await
    }

    /// Starts any [`LockSpec`] (as [`acquire`](Self::acquire)) and returns at once
    /// with the acquisition under way.
    ///
    /// # Errors
    /// [`Error::Usage`] for bad input, [`Error::Closed`] once the client is closed.
    ///
    /// ```
    /// # fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
    /// let pending = locks.start(lock_core::LockSpec::write("/locks/job"), None)?;
    /// let guard = pending.wait_blocking()?;
    /// # drop(guard); Ok(()) }
    /// # demo(lock_sim::Server::new().client()).unwrap();
    /// ```
    pub fn start(&self, spec: LockSpec, deadline: Option<Instant>) -> Result<PendingLock, Error> {
        let id = self.start_task(
            Task::Acquire {
                spec,
                deadline,
                reentrant: false,
            },
            None,
        )?;
        Ok(PendingLock::new(self.clone(), id))
    }

    /// Acquires a reentrant mutex's `spec` (see [`Mutex::reentrant`]).
    pub(crate) async fn acquire_reentrant(
        &self,
        spec: LockSpec,
        deadline: Option<Instant>,
    ) -> Result<LockGuard, Error> {
        let task = Task::Acquire {
            spec,
            deadline,
            reentrant: true,
        };
        let id = self.start_task(task, None)?;
        PendingLock::new(self.clone(), id).await
    }

    /// Blocking twin of [`acquire`](Self::acquire).
    pub fn acquire_blocking(
        &self,
        spec: LockSpec,
        deadline: Option<Instant>,
    ) -> Result<LockGuard, Error> {
        crate::blocking::block_on(self.acquire(spec, deadline))
    }

    /// Joins the leader election at `path` as `participant` (its id, stored in its
    /// node for observers to read; must not be empty). The participant joins at once;
    /// see [`Election`].
    ///
    /// ```
    /// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
    /// let mut election = locks.election("/services/scheduler/leader", "node-1");
    /// let leadership = election.leadership().await?; // waits until elected
    /// println!("leading, token {}", leadership.token());
    /// leadership.resign().await?;
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(lock_sim::Server::new().client())).unwrap();
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
    /// ```
    /// # async fn demo(locks: lock_client::LockClient, server: lock_sim::Server) -> Result<(), lock_client::Error> {
    /// let mut observer = locks.observe_election("/services/scheduler/leader").await?;
    /// # let _leader = server.client().election("/services/scheduler/leader", "node-2").leadership().await?;
    /// println!("leader: {:?}", observer.leader().map(|l| l.id.clone()));
    /// let next = observer.changed().await?;
    /// # drop(next); Ok(()) }
    /// # let server = lock_sim::Server::new();
    /// # futures::executor::block_on(demo(server.client(), server.clone())).unwrap();
    /// ```
    pub async fn observe_election(
        &self,
        path: impl Into<String>,
    ) -> Result<ElectionObserver, Error> {
        ElectionObserver::start(self, path.into()).await
    }

    /// Blocking twin of [`observe_election`](Self::observe_election).
    pub fn observe_election_blocking(
        &self,
        path: impl Into<String>,
    ) -> Result<ElectionObserver, Error> {
        crate::blocking::block_on(self.observe_election(path))
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
    /// ```
    /// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
    /// let asked = locks.revoke("/locks/job").await?;
    /// println!("asked {asked:?} to let go");
    /// // Now wait for the lock as usual.
    /// let guard = locks.mutex("/locks/job").lock().await?;
    /// # drop(guard); Ok(()) }
    /// # futures::executor::block_on(demo(lock_sim::Server::new().client())).unwrap();
    /// ```
    pub async fn revoke(&self, path: impl Into<String>) -> Result<Vec<String>, Error> {
        let id = self.start_task(Task::Revoke(path.into()), None)?;
        let mut pending = Pending::new(self.clone(), id);
        loop {
            match pending.next().await {
                Some(LockEvent::RevocationSent { nodes }) => return Ok(nodes),
                Some(LockEvent::Failed(reason)) => return Err(reason.into()),
                Some(_) => {}
                None => return Err(Error::Closed),
            }
        }
    }

    /// Blocking twin of [`revoke`](Self::revoke).
    pub fn revoke_blocking(&self, path: impl Into<String>) -> Result<Vec<String>, Error> {
        crate::blocking::block_on(self.revoke(path))
    }

    /// Who holds the lock at `path` and who waits, in queue order: each
    /// [`Participant`](crate::Participant) with its node, kind, naming scheme, owner, session, creation
    /// time (`ctime`), fencing token (`czxid`, higher is younger), user data, and
    /// for a waiter the nodes it waits for. Works on locks taken by any client
    /// (Curator's and kazoo's participants have no owner). One pipelined round trip
    /// (a listing and a read per participant); no watches are left behind. A lock
    /// directory that does not exist has no participants.
    ///
    /// # Errors
    /// [`Error::Usage`] for an invalid path, [`Error::Zk`] if ZooKeeper refused,
    /// [`Error::Closed`] once the client is closed.
    ///
    /// ```
    /// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
    /// let who = locks.participants("/locks/job").await?;
    /// for h in &who.holders {
    ///     println!("held by {:?} (session {:#x}, token {})", h.owner, h.session, h.token);
    /// }
    /// for w in &who.waiters {
    ///     println!("{} ({:?}) waits for {:?}", w.node, w.owner, w.waits_for);
    /// }
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(lock_sim::Server::new().client())).unwrap();
    /// ```
    pub async fn participants(&self, path: impl Into<String>) -> Result<Participants, Error> {
        let id = self.start_task(Task::Inspect(path.into()), None)?;
        let mut pending = Pending::new(self.clone(), id);
        loop {
            match pending.next().await {
                Some(LockEvent::Participants(participants)) => return Ok(participants),
                Some(LockEvent::Failed(reason)) => return Err(reason.into()),
                Some(_) => {}
                None => return Err(Error::Closed),
            }
        }
    }

    /// Blocking twin of [`participants`](Self::participants).
    pub fn participants_blocking(&self, path: impl Into<String>) -> Result<Participants, Error> {
        crate::blocking::block_on(self.participants(path))
    }

    /// Scans the lock directories under `root` (`root` itself and its direct
    /// children) for deadlocks, and returns one cycle per deadlock (empty: none).
    /// Each cycle lists its nodes in wait order (each waits for the next, the last
    /// for the first) with owner, session, token and `ctime`. Every edge is read
    /// twice, so a reported cycle really existed; cycles through participants of
    /// any client count, as long as their owners are named in their data (see
    /// [`Mutex::owner`] and [`Mutex::detect_deadlocks`]: an owner's waits are
    /// published once it has waited for its `detect_deadlocks` delay). Breaks
    /// nothing: acquisitions with detection on break their own cycles.
    ///
    /// # Errors
    /// [`Error::Usage`] for an invalid path, [`Error::Zk`] if ZooKeeper refused,
    /// [`Error::Closed`] once the client is closed.
    ///
    /// ```
    /// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
    /// for cycle in locks.deadlocks("/locks").await? {
    ///     let owners: Vec<_> = cycle.iter().map(|n| n.owner.as_deref().unwrap_or("?")).collect();
    ///     println!("deadlock: {}", owners.join(" -> "));
    /// }
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(lock_sim::Server::new().client())).unwrap();
    /// ```
    pub async fn deadlocks(&self, root: impl Into<String>) -> Result<Vec<Cycle>, Error> {
        let id = self.start_task(Task::Scan(root.into()), None)?;
        let mut pending = Pending::new(self.clone(), id);
        loop {
            match pending.next().await {
                Some(LockEvent::Deadlocks { cycles }) => return Ok(cycles),
                Some(LockEvent::Failed(reason)) => return Err(reason.into()),
                Some(_) => {}
                None => return Err(Error::Closed),
            }
        }
    }

    /// Blocking twin of [`deadlocks`](Self::deadlocks).
    pub fn deadlocks_blocking(&self, root: impl Into<String>) -> Result<Vec<Cycle>, Error> {
        crate::blocking::block_on(self.deadlocks(root))
    }

    /// The current ZooKeeper session id (`None` before the first session, between
    /// an expiry and the next session, and after close).
    ///
    /// ```
    /// # fn demo(locks: lock_client::LockClient) {
    /// println!("session {:#x}", locks.session_id().unwrap_or(0));
    /// # }
    /// # demo(lock_sim::Server::new().client());
    /// ```
    pub fn session_id(&self) -> Option<i64> {
        self.shared().read(|s| s.core.session_id())
    }

    /// Whether the connection is up, as last reported by the binding.
    ///
    /// ```
    /// # fn demo(locks: lock_client::LockClient) {
    /// # locks.mutex("/locks/warm-up").try_lock_blocking().unwrap(); // a round trip: connected
    /// assert!(locks.is_connected());
    /// # }
    /// # demo(lock_sim::Server::new().client());
    /// ```
    pub fn is_connected(&self) -> bool {
        self.shared().read(|s| s.core.is_connected())
    }

    /// What the binding attached with [`Link::set_extension`], if it is a `T`: how a
    /// binding extends the client (e.g. lock-zookeeper's connection diagnostics).
    ///
    /// ```
    /// let config = lock_core::Config::new(std::time::Duration::from_secs(10), 7);
    /// let (locks, link) = lock_client::pair(config);
    /// link.set_extension(std::sync::Arc::new(42u32));
    /// assert_eq!(locks.extension::<u32>().as_deref(), Some(&42));
    /// assert!(locks.extension::<String>().is_none());
    /// ```
    pub fn extension<T: std::any::Any + Send + Sync>(&self) -> Option<Arc<T>> {
        self.shared().extension.get()?.clone().downcast().ok()
    }

    /// The session timeout negotiated with the server.
    ///
    /// ```
    /// # fn demo(locks: lock_client::LockClient) {
    /// println!("{:?}", locks.session_timeout());
    /// # }
    /// # demo(lock_sim::Server::new().client());
    /// ```
    pub fn session_timeout(&self) -> Duration {
        self.shared().session_timeout
    }

    /// The client's clock now (the binding's, see [`Clock`](crate::Clock)): what
    /// `lock_timeout` and the like count a timeout from, and the time line of every
    /// `deadline` a method takes.
    ///
    /// ```
    /// let (locks, _link) = lock_client::pair(lock_core::Config::new(std::time::Duration::from_secs(10), 7));
    /// assert!(locks.now() <= std::time::Instant::now());
    /// ```
    pub fn now(&self) -> Instant {
        self.shared().read(|s| s.instant_now())
    }

    /// Waits until nothing is in progress on this session: no lock held or awaited
    /// and every node it created deleted (releases by dropped guards and cancelled
    /// acquisitions happen in the background; this waits for them).
    ///
    /// ```
    /// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
    /// drop(locks.mutex("/locks/job").lock().await?); // released in the background
    /// locks.wait_idle().await?;                      // ... and now it is gone
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(lock_sim::Server::new().client())).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`Error::Closed`] if the client is (or gets) closed.
    pub async fn wait_idle(&self) -> Result<(), Error> {
        poll_fn(|cx| {
            self.shared().with_quiet(|s| {
                if s.is_closed() {
                    Poll::Ready(Err(Error::Closed))
                } else if s.core.is_idle() {
                    Poll::Ready(Ok(()))
                } else {
                    s.register_idle(cx.waker());
                    Poll::Pending
                }
            })
        })
        .await
    }

    /// Blocking twin of [`wait_idle`](Self::wait_idle).
    pub fn wait_idle_blocking(&self) -> Result<(), Error> {
        crate::blocking::block_on(self.wait_idle())
    }

    /// The core's counters (requests sent, stale replies, acquisitions, ...).
    ///
    /// ```
    /// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
    /// println!("{} requests so far", locks.stats().await?.requests);
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(lock_sim::Server::new().client())).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`Error::Closed`] once the client is closed.
    pub async fn stats(&self) -> Result<Stats, Error> {
        self.stats_blocking()
    }

    /// Blocking twin of [`stats`](Self::stats) (it never waits).
    pub fn stats_blocking(&self) -> Result<Stats, Error> {
        self.shared().read(|s| {
            if s.is_closed() {
                Err(Error::Closed)
            } else {
                Ok(s.core.stats())
            }
        })
    }

    /// Closes the session: held locks report
    /// [`LostReason::Closed`](lock_core::LostReason::Closed), waiting acquisitions
    /// fail with [`Error::Closed`], the server deletes every node of the session, and
    /// every later call on any clone returns [`Error::Closed`]. Returns once the
    /// binding has closed its session (lock-zookeeper-client: once the server
    /// confirmed, or after about a session timeout). Idempotent.
    ///
    /// ```
    /// # async fn demo(locks: lock_client::LockClient) {
    /// locks.close().await;
    /// assert!(locks.mutex("/locks/job").lock().await.is_err());
    /// # }
    /// # futures::executor::block_on(demo(lock_sim::Server::new().client()));
    /// ```
    pub async fn close(&self) {
        poll_fn(|cx| {
            self.shared().with(|s| {
                s.close_requested = true;
                if s.link_gone {
                    Poll::Ready(())
                } else {
                    s.register_close(cx.waker());
                    Poll::Pending
                }
            })
        })
        .await
    }

    /// Blocking twin of [`close`](Self::close).
    pub fn close_blocking(&self) {
        crate::blocking::block_on(self.close())
    }
}

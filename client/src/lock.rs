//! User-facing lock objects ([`Mutex`], [`RwLock`], [`Semaphore`]): what to lock, and how.

use crate::error::Error;
use crate::guard::LockGuard;
use crate::handle::LockClient;
use crate::pending::PendingLock;
use lock_core::{LockSpec, NameScheme};
use std::time::{Duration, Instant};

macro_rules! lock_methods {
    // A lock object whose acquisition is the client's, with nothing of its own.
    (plain $($rest:tt)*) => {
        async fn acquire(&self, spec: LockSpec, deadline: Option<Instant>) -> Result<LockGuard, Error> {
            self.client.acquire(spec, deadline).await
        }

        lock_methods!($($rest)*);
    };
    ($what:literal, $example_revocable:literal, $example_lease:literal) => {
        /// Waits until
        #[doc = $what]
        /// is held. Cancel-safe: dropping the future gives up and leaves no node behind.
        ///
        /// # Errors
        /// [`Error::Usage`] for an invalid path, [`Error::Closed`] once the client is
        /// closed, [`Error::SessionExpired`] if the session expired while waiting.
        pub async fn lock(&self) -> Result<LockGuard, Error> {
            self.acquire(self.spec.clone(), None).await
        }

        /// Takes
        #[doc = $what]
        /// only if it is free at the first look (one round trip); `Ok(None)` if busy.
        /// Does not wait for the lock, but may wait for ZooKeeper: [`Error::Timeout`]
        /// if no session could be used within the session timeout.
        pub async fn try_lock(&self) -> Result<Option<LockGuard>, Error> {
            let deadline = self.client.now() + self.client.session_timeout();
            match self
                .acquire(self.spec.clone().try_only(), Some(deadline))
                .await
            {
                Ok(guard) => Ok(Some(guard)),
                Err(Error::WouldBlock) => Ok(None),
                Err(e) => Err(e),
            }
        }

        /// Like the plain lock method, giving up with [`Error::Timeout`] after `timeout`.
        pub async fn lock_timeout(&self, timeout: Duration) -> Result<LockGuard, Error> {
            self.lock_until(self.client.now() + timeout).await
        }

        /// Like the plain lock method, giving up with [`Error::Timeout`] at `deadline`.
        pub async fn lock_until(&self, deadline: Instant) -> Result<LockGuard, Error> {
            self.acquire(self.spec.clone(), Some(deadline)).await
        }

        /// Starts the acquisition and returns at once (see [`PendingLock`]).
        ///
        /// # Errors
        /// [`Error::Usage`] for an invalid path, [`Error::Closed`] once the client is
        /// closed.
        pub fn start(&self) -> Result<PendingLock, Error> {
            self.client.start(self.spec.clone(), None)
        }

        crate::blocking::twins! {
            fn lock_blocking(&self) -> Result<LockGuard, Error> = lock;
            fn try_lock_blocking(&self) -> Result<Option<LockGuard>, Error> = try_lock;
            fn lock_timeout_blocking(&self, timeout: Duration) -> Result<LockGuard, Error> = lock_timeout;
            fn lock_until_blocking(&self, deadline: Instant) -> Result<LockGuard, Error> = lock_until;
        }

        /// The lock directory.
        pub fn path(&self) -> &str {
            self.spec.path()
        }

        /// What this lock object acquires (for [`LockClient::multi`]).
        pub(crate) fn spec(&self) -> &LockSpec {
            &self.spec
        }

        /// Names this lock's nodes with `scheme` (default [`NameScheme::Native`]), e.g.
        /// to share the lock with Curator or kazoo clients.
        pub fn with_scheme(mut self, scheme: NameScheme) -> Self {
            self.spec = self.spec.scheme(scheme);
            self
        }

        /// Stores `data` in this lock's nodes (e.g. who holds it, for inspection).
        pub fn with_data(mut self, data: impl Into<Vec<u8>>) -> Self {
            self.spec = self.spec.data(data);
            self
        }

        /// Watches the held node, so that an administrator deleting it ends the hold
        /// at once ([`LockEvent::Lost`](crate::LockEvent::Lost) with `NodeDeleted`).
        /// Costs one request per acquisition and one notification per release;
        /// without it (as with Curator and kazoo) such a deletion is noticed at the
        /// next reconnect, fenced write or release. Session expiry and long
        /// suspensions are noticed either way. Revocable locks always watch.
        pub fn watch_node(mut self) -> Self {
            self.spec = self.spec.watch_node();
            self
        }

        /// Takes this lock for `owner` (e.g. a worker, a request, a philosopher),
        /// which may differ from the session: several owners can share one session,
        /// and one owner holds several locks. The owner is written into the node (a
        /// versioned header before the user data, in the native scheme) and read back
        /// by [`LockClient::participants`] and [`LockClient::deadlocks`]. An owner
        /// that waits for a lock it holds itself on this session (re-entering a
        /// mutex that is not [reentrant](Mutex::reentrant), upgrading a read lock)
        /// is refused at once with [`Error::SelfDeadlock`] instead of waiting
        /// forever. Default: the client's
        /// [`with_owner`](LockClient::with_owner), if any.
        pub fn owner(mut self, owner: impl Into<String>) -> Self {
            self.spec = self.spec.owner(owner);
            self
        }

        /// Detects distributed deadlocks this acquisition is part of: once it has
        /// waited for `after`, it publishes where its owner waits (in the nodes the
        /// owner holds on this session) and chases its blockers' waits through
        /// ZooKeeper, with no coordinator. If a cycle is confirmed (every edge read
        /// twice) exactly one member, the youngest waiting node, fails with
        /// [`Error::Deadlock`] and leaves its place; the others keep theirs. A wait
        /// shorter than `after` costs no request. Needs an [`owner`](Self::owner)
        /// (or the client's [`with_owner`](LockClient::with_owner)), and the native
        /// naming scheme, or the kazoo scheme with no data of its own (then the
        /// owner is the node's data, as kazoo's identifier). zklock owners in a
        /// cycle should all detect (one that does not publishes nothing); kazoo
        /// clients whose `Lock` has an identifier take part too: their waits are
        /// inferred from their nodes, and they are never the victim.
        pub fn detect_deadlocks(mut self, after: Duration) -> Self {
            self.spec = self.spec.detect_deadlocks(after);
            self
        }

        /// Honours revocation requests ([`LockClient::revoke`]): a holder is told
        /// ([`LockGuard::revocation_requested`], [`LockEvent::RevocationRequested`](crate::LockEvent::RevocationRequested))
        /// and decides; a waiter gives up its place and its lock call fails with
        /// [`Error::Revoked`].
        ///
        /// ```
        /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
        #[doc = $example_revocable]
        /// # drop(guard); Ok(()) }
        /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
        /// ```
        pub fn revocable(mut self) -> Self {
            self.spec = self.spec.revocable();
            self
        }

        /// A lease: once held for `max_hold`, the lock is taken away, whatever the
        /// holder does: the guard reports [`LockEvent::Lost`](crate::LockEvent::Lost) with
        /// [`LostReason::LeaseExpired`](crate::LostReason::LeaseExpired) (see [`LockGuard::lost`]) and the node is
        /// deleted, letting the next waiter in. A holder that missed it and writes
        /// late is caught by its [fencing token](LockGuard::token) (or fails its
        /// [fenced writes](LockGuard::fenced_write)).
        ///
        /// ```
        /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
        /// use std::time::Duration;
        #[doc = $example_lease]
        /// # drop(guard); Ok(()) }
        /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
        /// ```
        pub fn max_hold(mut self, max_hold: Duration) -> Self {
            self.spec = self.spec.max_hold(max_hold);
            self
        }
    };
}

/// Crash detection, for the exclusive lock objects.
macro_rules! crash_detection {
    ($example:literal) => {
        /// Crash-detecting critical sections: each grant says whether a previous
        /// holder died inside a section ([`LockGuard::previous_holder_crashed`]);
        /// holders mark sections with [`LockGuard::open_section`] /
        /// [`LockGuard::close_section`]. Free on the uncontended acquire (the listing
        /// shows the marker); one extra read on a contended grant.
        ///
        /// ```
        /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
        #[doc = $example]
        /// if guard.previous_holder_crashed() { /* repair */ }
        /// # Ok(()) }
        /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
        /// ```
        pub fn detect_crashes(mut self) -> Self {
            self.spec = self.spec.detect_crashes();
            self
        }
    };
}

/// Lock-delay, for the exclusive lock objects.
macro_rules! lock_delay {
    ($example:literal) => {
        /// Lock-delay (Chubby's, Consul's): after a holder's *unclean* end (its
        /// session expired, it was lost, its node was deleted by someone else or
        /// broken), the next holder is granted no sooner than `delay` after it found
        /// the lock free, by its own clock; a clean release is not delayed. For
        /// resources that cannot check a [fencing token](LockGuard::token): a paused
        /// or cut-off old holder's in-flight writes get `delay` to land first.
        /// A waiter waiting out the delay says so ([`PendingLock::queued`](crate::PendingLock::queued)
        /// gives [`Queued::lock_delay_ends`](crate::Queued::lock_delay_ends));
        /// `try_lock` finds the lock busy. `Duration::ZERO` means no delay.
        ///
        /// Costs one round trip per grant (the holder's marker node, `zkl-delay`,
        /// created before the grant is reported and deleted with the node by a
        /// clean release). Holders that leave no marker (Curator, kazoo, Go, or
        /// zklock without lock-delay) count as ending cleanly. See
        /// [`LockSpec::lock_delay`](lock_core::LockSpec::lock_delay) for the design.
        ///
        /// ```
        /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
        /// use std::time::Duration;
        #[doc = $example]
        /// # drop(guard); Ok(()) }
        /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
        /// ```
        pub fn lock_delay(mut self, delay: Duration) -> Self {
            self.spec = self.spec.lock_delay(delay);
            self
        }
    };
}

/// An exclusive lock (a ZooKeeper write lock).
///
/// ```
/// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
/// use std::time::Duration;
/// let job = locks.mutex("/locks/job");
/// match job.try_lock().await? {
///     Some(guard) => guard.release().await?,
///     None => println!("busy"),
/// }
/// let guard = job.lock_timeout(Duration::from_secs(5)).await?;
/// # drop(guard); Ok(()) }
/// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct Mutex {
    client: LockClient,
    spec: LockSpec,
    reentrant: bool,
}

/// The client's default owner, or else a new one, `{kind}-{n}`, for a value
/// (with its clones) that is one owner.
pub(crate) fn owner_of_one_value(client: &LockClient, kind: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    match client.owner() {
        Some(owner) => owner.to_owned(),
        None => format!(
            "{kind}-{}",
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ),
    }
}

/// The spec with the client's default owner, if it has one.
fn owned(client: &LockClient, spec: LockSpec) -> LockSpec {
    match client.owner() {
        Some(owner) => spec.owner(owner),
        None => spec,
    }
}

impl Mutex {
    pub(crate) fn new(client: LockClient, path: String) -> Self {
        Mutex {
            spec: owned(&client, LockSpec::exclusive(path)),
            client,
            reentrant: false,
        }
    }

    /// Makes the mutex reentrant for its [owner](Self::owner) (Curator's
    /// `InterProcessMutex` semantics, with an owner in place of a thread): while
    /// the owner holds it on this client's session, locking it again (through this
    /// or any other reentrant `Mutex` on the same path and owner) returns at once
    /// with another guard on the same node, with no request. The node is released
    /// when the last of those guards is released or dropped; see
    /// [`LockGuard::holds`]. The guards share one status and one event stream.
    ///
    /// Needs an owner ([`owner`](Self::owner) or the client's
    /// [`with_owner`](LockClient::with_owner)): without one, locking gives
    /// [`Error::Usage`]. Without `reentrant`, re-entering is refused with
    /// [`Error::SelfDeadlock`].
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// let job = locks.with_owner("worker-1").mutex("/locks/job").reentrant();
    /// let outer = job.lock().await?;
    /// let inner = job.lock().await?; // no new node, no request
    /// assert_eq!((outer.path(), inner.holds()), (inner.path(), 2));
    /// inner.release().await?; // still held
    /// outer.release().await?; // now the node goes
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
    /// ```
    pub fn reentrant(mut self) -> Self {
        self.reentrant = true;
        self
    }

    async fn acquire(&self, spec: LockSpec, deadline: Option<Instant>) -> Result<LockGuard, Error> {
        if !self.reentrant {
            return self.client.acquire(spec, deadline).await;
        }
        let Some(owner) = spec.owner_id().map(str::to_owned) else {
            return Err(Error::Usage(lock_core::UsageError::Unsupported(
                "a reentrant mutex needs an owner (Mutex::owner or LockClient::with_owner)",
            )));
        };
        if let Some(again) = LockGuard::reenter(&self.client, &owner, spec.path()) {
            return Ok(again);
        }
        let id = self.client.start_acquisition(spec, deadline, true, None)?;
        let guard = PendingLock::new(self.client.clone(), id).await?;
        Ok(guard.count_holds(&owner, self.spec.path()))
    }

    lock_methods!(
        "the lock",
        "let guard = locks.mutex(\"/locks/job\").revocable().lock().await?;",
        "let guard = locks.mutex(\"/locks/job\").max_hold(Duration::from_secs(30)).lock().await?;"
    );

    crash_detection!("let guard = locks.mutex(\"/locks/ledger\").detect_crashes().lock().await?;");

    lock_delay!("let guard = locks.mutex(\"/locks/job\").lock_delay(Duration::from_secs(15)).lock().await?;");
}

/// A read/write lock: any number of readers, or one writer. A waiting writer is not
/// starved by readers that come after it (they queue behind it).
///
/// A read lock cannot be upgraded: while this `RwLock` (or a clone of it) holds the
/// read half, waiting for its write half is refused at once with
/// [`Error::SelfDeadlock`] (it would wait
/// for itself forever; `try_lock` just finds the lock busy). Release the read lock
/// first. Independent tasks that contend for one path each take their own
/// `rwlock(path)`.
///
/// A write lock can be downgraded: while this `RwLock` (its owner) holds the write
/// half, its read half is granted at once beside it (Curator's rule), and the write
/// can then be released. Should a writer of another owner have queued between the
/// two nodes, the read fails at once with [`Error::SelfDeadlock`]: that writer
/// waits for our write, and the read would wait for that writer.
///
/// ```
/// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
/// let table = locks.rwlock("/locks/table");
/// let reader = table.read().lock().await?;
/// assert!(table.write().try_lock().await?.is_none()); // a reader holds it
/// reader.release().await?;
/// let writer = table.write().lock().await?;
/// # drop(writer); Ok(()) }
/// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct RwLock {
    read: ReadLock,
    write: WriteLock,
}

impl RwLock {
    pub(crate) fn new(client: LockClient, path: String) -> Self {
        // One `RwLock` value (with its clones) is one owner, as one thread is in
        // Curator: its write half is refused at once while its read half holds
        // (an upgrade would wait for itself forever), instead of hanging.
        let owner = owner_of_one_value(&client, "rwlock");
        RwLock {
            read: ReadLock {
                client: client.clone(),
                spec: LockSpec::read(path.clone()).owner(owner.clone()),
            },
            write: WriteLock {
                client,
                spec: LockSpec::write(path).owner(owner),
            },
        }
    }

    /// Sets both halves' specs with `set`.
    fn both(mut self, set: impl Fn(LockSpec) -> LockSpec) -> Self {
        self.read.spec = set(self.read.spec);
        self.write.spec = set(self.write.spec);
        self
    }

    /// The shared (read) half.
    pub fn read(&self) -> &ReadLock {
        &self.read
    }

    /// The exclusive (write) half.
    pub fn write(&self) -> &WriteLock {
        &self.write
    }

    /// The lock directory.
    pub fn path(&self) -> &str {
        self.read.path()
    }

    /// Names both halves' nodes with `scheme` (Curator's and kazoo's read/write
    /// locks are compatible).
    pub fn with_scheme(self, scheme: NameScheme) -> Self {
        self.both(|spec| spec.scheme(scheme))
    }

    /// Makes both halves [revocable](Mutex::revocable) (the seeds' "revocable shared
    /// locks": a writer can ask the readers to let go).
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// let table = locks.rwlock("/locks/table").revocable();
    /// let reader = table.read().lock().await?;
    /// # drop(reader); Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
    /// ```
    pub fn revocable(self) -> Self {
        self.both(LockSpec::revocable)
    }

    /// Takes both halves for `owner` (see [`Mutex::owner`]); by default, the
    /// client's [`with_owner`](LockClient::with_owner), else an owner private to
    /// this `RwLock` and its clones.
    pub fn owner(self, owner: impl Into<String>) -> Self {
        let owner = owner.into();
        self.both(|spec| spec.owner(owner.clone()))
    }

    /// Turns on [deadlock detection](Mutex::detect_deadlocks) for both halves: a
    /// read waiting behind a write is a wait like any other.
    pub fn detect_deadlocks(self, after: Duration) -> Self {
        self.both(|spec| spec.detect_deadlocks(after))
    }

    /// Gives both halves a [lease](Mutex::max_hold) of `max_hold`.
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// use std::time::Duration;
    /// let table = locks.rwlock("/locks/table").max_hold(Duration::from_secs(60));
    /// # drop(table); Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
    /// ```
    pub fn max_hold(self, max_hold: Duration) -> Self {
        self.both(|spec| spec.max_hold(max_hold))
    }
}

/// The shared half of an [`RwLock`].
///
/// ```
/// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
/// let reader = locks.rwlock("/locks/table").read().lock().await?;
/// # drop(reader); Ok(()) }
/// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct ReadLock {
    client: LockClient,
    spec: LockSpec,
}

impl ReadLock {
    lock_methods!(
        plain
        "a read lock",
        "let guard = locks.rwlock(\"/locks/table\").read().clone().revocable().lock().await?;",
        "let guard = locks.rwlock(\"/locks/table\").read().clone().max_hold(Duration::from_secs(30)).lock().await?;"
    );
}

/// The exclusive half of an [`RwLock`].
///
/// ```
/// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
/// let writer = locks.rwlock("/locks/table").write().lock().await?;
/// # drop(writer); Ok(()) }
/// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct WriteLock {
    client: LockClient,
    spec: LockSpec,
}

impl WriteLock {
    lock_methods!(
        plain
        "the write lock",
        "let guard = locks.rwlock(\"/locks/table\").write().clone().revocable().lock().await?;",
        "let guard = locks.rwlock(\"/locks/table\").write().clone().max_hold(Duration::from_secs(30)).lock().await?;"
    );

    crash_detection!(
        "let guard = locks.rwlock(\"/locks/table\").write().clone().detect_crashes().lock().await?;"
    );

    lock_delay!(
        "let guard = locks.rwlock(\"/locks/table\").write().clone().lock_delay(Duration::from_secs(15)).lock().await?;"
    );
}

/// A counting semaphore: at most `permits` holders at once.
///
/// ```
/// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
/// let slots = locks.semaphore("/locks/gpu", 2);
/// let a = slots.lock().await?;
/// let b = slots.lock().await?;
/// assert!(slots.try_lock().await?.is_none());
/// # drop((a, b)); Ok(()) }
/// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
/// ```
#[derive(Clone, Debug)]
#[doc(alias = "acquire")]
pub struct Semaphore {
    client: LockClient,
    spec: LockSpec,
    permits: u32,
}

impl Semaphore {
    pub(crate) fn new(client: LockClient, path: String, permits: u32) -> Self {
        Semaphore {
            spec: owned(&client, LockSpec::semaphore(path, permits)),
            client,
            permits,
        }
    }

    /// The number of permits.
    pub fn permits(&self) -> u32 {
        self.permits
    }

    lock_methods!(
        plain
        "a permit",
        "let guard = locks.semaphore(\"/locks/gpu\", 2).revocable().lock().await?;",
        "let guard = locks.semaphore(\"/locks/gpu\", 2).max_hold(Duration::from_secs(30)).lock().await?;"
    );
}

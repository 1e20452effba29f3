//! User-facing lock objects ([`Mutex`], [`RwLock`], [`Semaphore`]) and [`LockGuard`].

use crate::client::{Inner, LockClient};
use crate::driver::Command;
use crate::error::Error;
use futures::channel::mpsc;
use futures::StreamExt;
use lock_core::{FencingToken, Grant, LockEvent, LockSpec, LostReason, NameScheme, UsageError};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

/// What the driver tells one acquisition.
pub(crate) enum Notice {
    Event(LockEvent),
    /// A command was refused (bad input at `acquire`, or a release that came too late).
    Refused(UsageError),
}

/// Where a held lock stands, from [`LockGuard::status`].
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum LockStatus {
    /// Held and trusted.
    Held,
    /// The connection is down: ownership is not guaranteed until it is resumed (or
    /// lost after the suspension grace). Stop touching the protected resource, or
    /// fence your writes with [`LockGuard::token`].
    Suspended,
    /// No longer held.
    Lost(LostReason),
    /// Released by us.
    Released,
}

/// Starts an acquisition and waits for its outcome. Dropping the future cancels it
/// (the driver deletes the node, even one whose create is still in flight).
pub(crate) async fn acquire(
    client: &LockClient,
    spec: LockSpec,
    deadline: Option<Instant>,
) -> Result<LockGuard, Error> {
    let inner = client.inner.clone();
    let key = inner.next_key();
    let (tx, mut notices) = mpsc::unbounded();
    let status = Arc::new(StdMutex::new(LockStatus::Held));
    inner.send(Command::Acquire {
        key,
        spec,
        deadline,
        notices: tx,
        status: status.clone(),
    })?;
    let mut pending = CancelOnDrop {
        inner: Some(inner),
        key,
    };
    while let Some(notice) = notices.next().await {
        match notice {
            Notice::Refused(e) => {
                pending.disarm();
                return Err(e.into());
            }
            Notice::Event(LockEvent::Acquired(grant)) => {
                let inner = pending.disarm().expect("armed until now");
                return Ok(LockGuard {
                    inner,
                    key,
                    grant,
                    status,
                    notices,
                    ended: false,
                });
            }
            Notice::Event(LockEvent::Failed(reason)) => {
                pending.disarm();
                return Err(reason.into());
            }
            // Nothing else is reported before `Acquired`.
            Notice::Event(_) => {}
        }
    }
    pending.disarm();
    Err(Error::Closed)
}

/// Cancels an acquisition whose `lock()` future is dropped before it ends.
struct CancelOnDrop {
    inner: Option<Arc<Inner>>,
    key: u64,
}

impl CancelOnDrop {
    fn disarm(&mut self) -> Option<Arc<Inner>> {
        self.inner.take()
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            let _ = inner.send(Command::Cancel { key: self.key });
        }
    }
}

/// A held lock (or semaphore permit). Released by [`release`](Self::release), or in
/// the background when dropped.
///
/// The guard also reports what happens to the lock while held: poll
/// [`status`](Self::status), or await [`next_event`](Self::next_event) /
/// [`lost`](Self::lost).
///
/// ```no_run
/// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
/// use futures::FutureExt;
/// let mut guard = locks.mutex("/locks/job").lock().await?;
/// let token = guard.token(); // pass it to the resource you protect
/// futures::select! {
///     reason = guard.lost().fuse() => eprintln!("lost the lock: {reason:?}"),
///     _ = do_the_work(token).fuse() => {}
/// }
/// guard.release().await?;
/// # Ok(()) }
/// # async fn do_the_work(_: lock_core::FencingToken) {}
/// ```
#[must_use = "dropping a guard releases the lock"]
pub struct LockGuard {
    inner: Arc<Inner>,
    key: u64,
    grant: Grant,
    status: Arc<StdMutex<LockStatus>>,
    notices: mpsc::UnboundedReceiver<Notice>,
    /// The terminal event was seen (or the release completed): nothing to release.
    ended: bool,
}

impl std::fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockGuard")
            .field("path", &self.grant.path)
            .field("token", &self.grant.token)
            .field("status", &self.status())
            .finish()
    }
}

impl LockGuard {
    /// The fencing token: the `czxid` of our lock node. Tokens of successive holders
    /// of an exclusive lock strictly increase.
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
    /// let first = locks.mutex("/locks/job").lock().await?;
    /// let t1 = first.token();
    /// first.release().await?;
    /// let second = locks.mutex("/locks/job").lock().await?;
    /// assert!(second.token() > t1);
    /// # Ok(()) }
    /// ```
    pub fn token(&self) -> FencingToken {
        self.grant.token
    }

    /// The full path of our lock node.
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
    /// let guard = locks.mutex("/locks/job").lock().await?;
    /// assert!(guard.path().starts_with("/locks/job/"));
    /// # Ok(()) }
    /// ```
    pub fn path(&self) -> &str {
        &self.grant.path
    }

    /// Everything the acquisition was granted: path, token, sequence number, session.
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
    /// let guard = locks.mutex("/locks/job").lock().await?;
    /// assert_eq!(Some(guard.grant().session_id), locks.session_id());
    /// # Ok(()) }
    /// ```
    pub fn grant(&self) -> &Grant {
        &self.grant
    }

    /// The latest status (updated by the driver as events happen, whether or not
    /// they have been read with [`next_event`](Self::next_event)).
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
    /// use lock_zookeeper_client::LockStatus;
    /// let guard = locks.mutex("/locks/job").lock().await?;
    /// assert_eq!(guard.status(), LockStatus::Held);
    /// # Ok(()) }
    /// ```
    pub fn status(&self) -> LockStatus {
        self.status
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Whether the lock is held and trusted right now (not suspended, not lost).
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
    /// let guard = locks.mutex("/locks/job").lock().await?;
    /// if guard.is_trusted() { /* touch the resource */ }
    /// # Ok(()) }
    /// ```
    pub fn is_trusted(&self) -> bool {
        self.status() == LockStatus::Held
    }

    /// The next thing that happens to the lock: [`LockEvent::Suspended`],
    /// [`LockEvent::Resumed`], [`LockEvent::RevocationRequested`], or the terminal
    /// [`LockEvent::Lost`]. `None` after the terminal event.
    ///
    /// Cancel-safe: dropping the future loses no event.
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
    /// use lock_core::LockEvent;
    /// let mut guard = locks.mutex("/locks/job").lock().await?;
    /// while let Some(event) = guard.next_event().await {
    ///     match event {
    ///         LockEvent::Suspended => eprintln!("connection down: pausing"),
    ///         LockEvent::Resumed => eprintln!("connection back: still ours"),
    ///         other => eprintln!("{other:?}"),
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn next_event(&mut self) -> Option<LockEvent> {
        if self.ended {
            return None;
        }
        loop {
            match self.notices.next().await {
                Some(Notice::Event(event)) => {
                    if event.is_terminal() {
                        self.ended = true;
                    }
                    return Some(event);
                }
                Some(Notice::Refused(_)) => {}
                None => {
                    // The driver stopped (client closed): the session is gone.
                    self.ended = true;
                    self.set_status(LockStatus::Lost(LostReason::Closed));
                    return Some(LockEvent::Lost(LostReason::Closed));
                }
            }
        }
    }

    /// Waits until the lock is lost, and says why. Events before that (suspension,
    /// resumption) are consumed. Cancel-safe.
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
    /// let mut guard = locks.mutex("/locks/job").lock().await?;
    /// let reason = guard.lost().await; // e.g. an administrator deleted our node
    /// eprintln!("lost: {reason:?}");
    /// # Ok(()) }
    /// ```
    pub async fn lost(&mut self) -> LostReason {
        loop {
            match self.next_event().await {
                Some(LockEvent::Lost(reason)) => return reason,
                Some(_) => {}
                None => {
                    return match self.status() {
                        LockStatus::Lost(reason) => reason,
                        _ => LostReason::Closed,
                    }
                }
            }
        }
    }

    /// Waits until the lock is suspended (connection down) or lost, and returns the
    /// event. Cancel-safe.
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
    /// let mut guard = locks.mutex("/locks/job").lock().await?;
    /// let event = guard.suspended().await;
    /// eprintln!("stop trusting the lock: {event:?}");
    /// # Ok(()) }
    /// ```
    pub async fn suspended(&mut self) -> LockEvent {
        loop {
            match self.next_event().await {
                Some(event @ (LockEvent::Suspended | LockEvent::Lost(_))) => return event,
                Some(_) => {}
                None => return LockEvent::Lost(LostReason::Closed),
            }
        }
    }

    /// Releases the lock: deletes our node and waits for the server to confirm (across
    /// reconnects, if the connection is down meanwhile).
    ///
    /// # Errors
    /// [`Error::Lost`] if the lock had been lost before (whatever the guard protected
    /// may have overlapped another holder), [`Error::Closed`] if the client is closed,
    /// [`Error::Zk`] if ZooKeeper refused the delete.
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
    /// let guard = locks.mutex("/locks/job").lock().await?;
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn release(mut self) -> Result<(), Error> {
        // Anything already reported (a loss) decides without asking.
        while let Ok(notice) = self.notices.try_recv() {
            if let Notice::Event(LockEvent::Lost(reason)) = notice {
                self.ended = true;
                return Err(Error::Lost(reason));
            }
        }
        if self.ended {
            return match self.status() {
                LockStatus::Lost(reason) => Err(Error::Lost(reason)),
                _ => Ok(()),
            };
        }
        self.inner.send(Command::Release { key: self.key })?;
        let result = loop {
            match self.notices.next().await {
                Some(Notice::Event(LockEvent::Released)) => break Ok(()),
                Some(Notice::Event(LockEvent::Lost(reason))) => break Err(Error::Lost(reason)),
                Some(Notice::Event(LockEvent::Failed(reason))) => break Err(reason.into()),
                Some(_) => {}
                None => break Err(Error::Closed),
            }
        };
        self.ended = true;
        result
    }

    fn set_status(&self, status: LockStatus) {
        *self.status.lock().unwrap_or_else(|p| p.into_inner()) = status;
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if !self.ended {
            // Fire and forget: the driver deletes the node in the background (see
            // `LockClient::wait_idle`).
            let _ = self.inner.send(Command::Cancel { key: self.key });
        }
    }
}

/// The acquisition methods shared by every lock object.
macro_rules! lock_methods {
    ($what:literal, $lock:ident, $try_lock:ident, $lock_timeout:ident, $lock_until:ident) => {
        /// Waits until
        #[doc = $what]
        /// is held. Cancel-safe: dropping the future gives up and leaves no node behind.
        ///
        /// # Errors
        /// [`Error::Usage`] for an invalid path, [`Error::Closed`] once the client is
        /// closed, [`Error::SessionExpired`] if the session expired while waiting.
        pub async fn $lock(&self) -> Result<LockGuard, Error> {
            self.client.acquire(self.spec.clone(), None).await
        }

        /// Takes
        #[doc = $what]
        /// only if it is free at the first look (one round trip); `Ok(None)` if busy.
        pub async fn $try_lock(&self) -> Result<Option<LockGuard>, Error> {
            match self
                .client
                .acquire(self.spec.clone().try_only(), None)
                .await
            {
                Ok(guard) => Ok(Some(guard)),
                Err(Error::WouldBlock) => Ok(None),
                Err(e) => Err(e),
            }
        }

        /// Like the plain lock method, giving up with [`Error::Timeout`] after `timeout`.
        pub async fn $lock_timeout(&self, timeout: Duration) -> Result<LockGuard, Error> {
            self.$lock_until(Instant::now() + timeout).await
        }

        /// Like the plain lock method, giving up with [`Error::Timeout`] at `deadline`.
        pub async fn $lock_until(&self, deadline: Instant) -> Result<LockGuard, Error> {
            self.client.acquire(self.spec.clone(), Some(deadline)).await
        }

        /// The lock directory.
        pub fn path(&self) -> &str {
            self.spec.path()
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
    };
}

/// An exclusive lock (a ZooKeeper write lock).
///
/// ```no_run
/// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
/// use std::time::Duration;
/// let job = locks.mutex("/locks/job");
/// match job.try_lock().await? {
///     Some(guard) => guard.release().await?,
///     None => println!("busy"),
/// }
/// let guard = job.lock_timeout(Duration::from_secs(5)).await?;
/// # drop(guard); Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Mutex {
    client: LockClient,
    spec: LockSpec,
}

impl Mutex {
    pub(crate) fn new(client: LockClient, path: String) -> Self {
        Mutex {
            client,
            spec: LockSpec::write(path),
        }
    }

    lock_methods!("the lock", lock, try_lock, lock_timeout, lock_until);
}

/// A read/write lock: any number of readers, or one writer. A waiting writer is not
/// starved by readers that come after it (they queue behind it).
///
/// ```no_run
/// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
/// let table = locks.rwlock("/locks/table");
/// let reader = table.read().lock().await?;
/// assert!(table.write().try_lock().await?.is_none()); // a reader holds it
/// reader.release().await?;
/// let writer = table.write().lock().await?;
/// # drop(writer); Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct RwLock {
    read: ReadLock,
    write: WriteLock,
}

impl RwLock {
    pub(crate) fn new(client: LockClient, path: String) -> Self {
        RwLock {
            read: ReadLock {
                client: client.clone(),
                spec: LockSpec::read(path.clone()),
            },
            write: WriteLock {
                client,
                spec: LockSpec::write(path),
            },
        }
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
        RwLock {
            read: self.read.with_scheme(scheme),
            write: self.write.with_scheme(scheme),
        }
    }
}

/// The shared half of an [`RwLock`].
///
/// ```no_run
/// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
/// let reader = locks.rwlock("/locks/table").read().lock().await?;
/// # drop(reader); Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct ReadLock {
    client: LockClient,
    spec: LockSpec,
}

impl ReadLock {
    lock_methods!("a read lock", lock, try_lock, lock_timeout, lock_until);
}

/// The exclusive half of an [`RwLock`].
///
/// ```no_run
/// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
/// let writer = locks.rwlock("/locks/table").write().lock().await?;
/// # drop(writer); Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct WriteLock {
    client: LockClient,
    spec: LockSpec,
}

impl WriteLock {
    lock_methods!("the write lock", lock, try_lock, lock_timeout, lock_until);
}

/// A counting semaphore: at most `permits` holders at once.
///
/// ```no_run
/// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
/// let slots = locks.semaphore("/locks/gpu", 2);
/// let a = slots.lock().await?;
/// let b = slots.lock().await?;
/// assert!(slots.try_lock().await?.is_none());
/// # drop((a, b)); Ok(()) }
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
            client,
            spec: LockSpec::semaphore(path, permits),
            permits,
        }
    }

    /// The number of permits.
    pub fn permits(&self) -> u32 {
        self.permits
    }

    lock_methods!("a permit", lock, try_lock, lock_timeout, lock_until);
}

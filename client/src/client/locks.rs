//! Taking locks: the lock objects ([`Mutex`], [`RwLock`], [`Semaphore`]) and
//! acquisitions from a [`LockSpec`].

use super::{LockClient, Task};
use crate::error::Error;
use crate::guard::LockGuard;
use crate::lock::{Mutex, RwLock, Semaphore};
use crate::pending::PendingLock;
use lock_core::LockSpec;
use std::time::Instant;

impl LockClient {
    /// An exclusive lock on the lock directory `path`.
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// let guard = locks.mutex("/locks/job").lock().await?;
    /// # drop(guard); Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
    /// ```
    pub fn mutex(&self, path: impl Into<String>) -> Mutex {
        Mutex::new(self.clone(), path.into())
    }

    /// A read/write lock on `path`: many readers or one writer.
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// let table = locks.rwlock("/locks/table");
    /// let r1 = table.read().lock().await?;
    /// let r2 = table.read().lock().await?; // readers share
    /// # drop((r1, r2)); Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
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
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// let slots = locks.semaphore("/locks/gpu", 3);
    /// let permit = slots.lock().await?;
    /// # drop(permit); Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
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
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// use zklock::{LockSpec, NameScheme};
    /// let spec = LockSpec::write("/locks/shared-with-curator").scheme(NameScheme::Curator);
    /// let guard = locks.acquire(spec, None).await?;
    /// # drop(guard); Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
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
    /// # fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// let pending = locks.start(zklock::LockSpec::write("/locks/job"), None)?;
    /// let guard = pending.wait_blocking()?;
    /// # drop(guard); Ok(()) }
    /// # demo(zklock::sim::Server::new().client()).unwrap();
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
}

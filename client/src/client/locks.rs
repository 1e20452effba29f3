//! The lock objects ([`Mutex`], [`RwLock`], [`Semaphore`]) a client makes; they
//! acquire through [`LockClient::acquire`] (`start.rs`).

use crate::handle::LockClient;
use crate::lock::{Mutex, RwLock, Semaphore};

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
}

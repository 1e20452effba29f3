//! [`MultiLock`]: several locks taken all-or-nothing, in one canonical order
//! (Curator's `InterProcessMultiLock`), and the [`MultiGuard`] holding them.
//!
//! The parts are acquired one at a time, each an ordinary acquisition, the next
//! started once the previous is held, in the order of their lock paths (then
//! recipe). Two multi-locks over overlapping sets therefore take their common locks
//! in the same order, so neither can hold a lock the other waits for while waiting
//! for one the other holds: no cycle of waits can form among multi-locks (nor with
//! single-lock users, who wait while holding nothing). Queueing every part at once
//! would save round trips but bring the deadlock back between two multi-locks, so
//! it is not done.

use crate::error::Error;
use crate::guard::LockGuard;
use crate::handle::LockClient;
use crate::lock::{Mutex, ReadLock, Semaphore, WriteLock};
use crate::status::LockStatus;
use lock_core::{FencingToken, LockSpec, LostReason, Recipe, UsageError};
use std::future::poll_fn;
use std::task::Poll;
use std::time::{Duration, Instant};

/// One part of a [`MultiLock`]: what to lock. Made from a lock object
/// ([`Mutex`], [`ReadLock`], [`WriteLock`], [`Semaphore`]), a [`LockSpec`], or a
/// path (a mutex on it, as Curator's `InterProcessMultiLock(client, paths)`).
///
/// ```
/// use zklock::MultiPart;
/// let part = MultiPart::from("/locks/a");
/// assert_eq!(part.path(), "/locks/a");
/// ```
#[derive(Clone, Debug)]
pub struct MultiPart {
    spec: LockSpec,
}

impl MultiPart {
    /// The lock directory.
    pub fn path(&self) -> &str {
        self.spec.path()
    }
}

impl From<LockSpec> for MultiPart {
    fn from(spec: LockSpec) -> Self {
        MultiPart { spec }
    }
}

impl From<&str> for MultiPart {
    fn from(path: &str) -> Self {
        LockSpec::exclusive(path).into()
    }
}

impl From<String> for MultiPart {
    fn from(path: String) -> Self {
        LockSpec::exclusive(path).into()
    }
}

macro_rules! part_from {
    ($($t:ty),*) => {$(
        impl From<&$t> for MultiPart {
            fn from(lock: &$t) -> Self {
                lock.spec().clone().into()
            }
        }
        impl From<$t> for MultiPart {
            fn from(lock: $t) -> Self {
                lock.spec().clone().into()
            }
        }
    )*};
}
part_from!(Mutex, ReadLock, WriteLock, Semaphore);

/// Where a recipe sorts among parts on one path (only one part per path is
/// allowed, so this only makes the order total).
fn recipe_rank(recipe: Recipe) -> u8 {
    match recipe {
        Recipe::Write => 0,
        Recipe::Read => 1,
        Recipe::Semaphore { .. } => 2,
        _ => 3,
    }
}

/// Several locks taken all-or-nothing for one owner, in one canonical order;
/// made by [`LockClient::multi`].
///
/// * **Order.** The parts are sorted by lock path (byte order), then recipe, and
///   acquired one after another, so two multi-locks over overlapping sets can
///   never deadlock (see [`LockClient::multi`]).
/// * **All or nothing.** If any part fails (timeout, cancel, session expiry, a
///   deadlock victim, ...) the parts already held are released, last first, before
///   the error is returned; a `try_lock` that finds any part busy returns `None`
///   the same way. Dropping a `lock()` future cancels the part under way and
///   releases those held (in the background).
/// * **Owner.** Every part is taken for the multi-lock's owner: the client's
///   [`with_owner`](LockClient::with_owner) if it has one, else one private to this
///   `MultiLock` (and its clones); [`owner`](Self::owner) sets another.
///
/// ```
/// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
/// use std::time::Duration;
/// let transfer = locks.multi(["/accounts/bob", "/accounts/alice"]);
/// let both = transfer.lock_timeout(Duration::from_secs(5)).await?; // alice first, then bob
/// assert_eq!(both.parts().len(), 2);
/// both.release().await?; // bob first, then alice
/// # Ok(()) }
/// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct MultiLock {
    client: LockClient,
    /// In canonical order.
    parts: Vec<LockSpec>,
    /// Bad input found when made, returned by every lock call.
    invalid: Option<UsageError>,
}

impl MultiLock {
    pub(crate) fn new(client: LockClient, parts: Vec<MultiPart>) -> MultiLock {
        let owner = crate::lock::owner_of_one_value(&client, "multi");
        let mut parts: Vec<LockSpec> = parts.into_iter().map(|p| p.spec.owner(&owner)).collect();
        parts.sort_by(|a, b| {
            (a.path(), recipe_rank(a.recipe())).cmp(&(b.path(), recipe_rank(b.recipe())))
        });
        let invalid = match parts.windows(2).find(|w| w[0].path() == w[1].path()) {
            Some(w) => Some(UsageError::DuplicatePath {
                path: w[0].path().to_owned(),
            }),
            None if parts.is_empty() => Some(UsageError::EmptyMulti),
            None => None,
        };
        MultiLock {
            client,
            parts,
            invalid,
        }
    }

    /// The lock paths, in the order they are acquired.
    pub fn paths(&self) -> Vec<&str> {
        self.parts.iter().map(LockSpec::path).collect()
    }

    /// Takes every part for `owner` (see [`Mutex::owner`]).
    pub fn owner(mut self, owner: impl Into<String>) -> Self {
        let owner = owner.into();
        self.parts = self.parts.into_iter().map(|p| p.owner(&owner)).collect();
        self
    }

    /// Turns on [deadlock detection](Mutex::detect_deadlocks) for every part: a
    /// multi-lock cannot deadlock with another, but it can wait on a single-lock
    /// user that locks in its own order.
    pub fn detect_deadlocks(mut self, after: Duration) -> Self {
        self.parts = self
            .parts
            .into_iter()
            .map(|p| p.detect_deadlocks(after))
            .collect();
        self
    }

    /// Waits until every part is held. Cancel-safe: dropping the future gives up
    /// the part under way and releases the others.
    ///
    /// # Errors
    /// [`Error::Usage`] for bad input (an empty set, a path named twice, an invalid
    /// path), or the error of the first part that failed (its held predecessors
    /// released first).
    pub async fn lock(&self) -> Result<MultiGuard, Error> {
        self.acquire(None, false).await.map(|g| g.expect("waits"))
    }

    /// Like [`lock`](Self::lock), giving up with [`Error::Timeout`] after
    /// `timeout` (for the whole set).
    pub async fn lock_timeout(&self, timeout: Duration) -> Result<MultiGuard, Error> {
        self.lock_until(self.client.now() + timeout).await
    }

    /// Like [`lock`](Self::lock), giving up with [`Error::Timeout`] at `deadline`.
    pub async fn lock_until(&self, deadline: Instant) -> Result<MultiGuard, Error> {
        self.acquire(Some(deadline), false)
            .await
            .map(|g| g.expect("waits"))
    }

    /// Takes every part only if each is free at its first look; `Ok(None)` (the
    /// parts taken released) as soon as one is busy.
    pub async fn try_lock(&self) -> Result<Option<MultiGuard>, Error> {
        let deadline = self.client.now() + self.client.session_timeout();
        self.acquire(Some(deadline), true).await
    }

    crate::blocking::twins! {
        fn lock_blocking(&self) -> Result<MultiGuard, Error> = lock;
        fn lock_timeout_blocking(&self, timeout: Duration) -> Result<MultiGuard, Error> = lock_timeout;
        fn lock_until_blocking(&self, deadline: Instant) -> Result<MultiGuard, Error> = lock_until;
        fn try_lock_blocking(&self) -> Result<Option<MultiGuard>, Error> = try_lock;
    }

    async fn acquire(
        &self,
        deadline: Option<Instant>,
        try_only: bool,
    ) -> Result<Option<MultiGuard>, Error> {
        if let Some(invalid) = &self.invalid {
            return Err(invalid.clone().into());
        }
        // Dropped (cancelled) midway, `held` releases what it has, last first.
        let mut held = MultiGuard { parts: Vec::new() };
        for spec in &self.parts {
            let spec = if try_only {
                spec.clone().try_only()
            } else {
                spec.clone()
            };
            match self.client.acquire(spec, deadline).await {
                Ok(guard) => held.parts.push(guard),
                Err(e) => {
                    // All or nothing: nothing of ours is left when this returns.
                    let _ = held.release().await;
                    return match e {
                        Error::WouldBlock if try_only => Ok(None),
                        e => Err(e),
                    };
                }
            }
        }
        Ok(Some(held))
    }
}

/// Every part of a [`MultiLock`], held. Released by [`release`](Self::release),
/// or in the background when dropped, last part first.
#[must_use = "dropping a guard releases the locks"]
pub struct MultiGuard {
    /// In canonical order.
    parts: Vec<LockGuard>,
}

impl std::fmt::Debug for MultiGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultiGuard")
            .field("parts", &self.parts)
            .field("status", &self.status())
            .finish()
    }
}

impl MultiGuard {
    /// The parts' guards, in the order they were acquired (canonical order).
    pub fn parts(&self) -> &[LockGuard] {
        &self.parts
    }

    /// Each part's fencing token, in canonical order.
    pub fn tokens(&self) -> Vec<FencingToken> {
        self.parts.iter().map(LockGuard::token).collect()
    }

    /// The status of the whole: [`LockStatus::Lost`] as soon as any part is lost
    /// (the first lost part's reason), else [`LockStatus::Suspended`] if any part
    /// is suspended, else [`LockStatus::Held`].
    pub fn status(&self) -> LockStatus {
        let statuses: Vec<LockStatus> = self.parts.iter().map(LockGuard::status).collect();
        if let Some(lost) = statuses
            .iter()
            .find(|s| matches!(s, LockStatus::Lost(_) | LockStatus::Released))
        {
            return lost.clone();
        }
        if statuses.contains(&LockStatus::Suspended) {
            return LockStatus::Suspended;
        }
        LockStatus::Held
    }

    /// Whether every part is held and trusted right now (each part's
    /// [`LockGuard::is_trusted`], read against the clock).
    pub fn is_trusted(&self) -> bool {
        self.status() == LockStatus::Held
    }

    /// Waits until any part is lost, and says why. Reads no part's events (they
    /// stay for [`LockGuard::next_event`]). Cancel-safe.
    pub async fn lost(&self) -> LostReason {
        poll_fn(|cx| {
            for part in &self.parts {
                if let Some(reason) = part.poll_lost(cx) {
                    return Poll::Ready(reason);
                }
            }
            Poll::Pending
        })
        .await
    }

    crate::blocking::twins!(fn lost_blocking(&self) -> LostReason = lost;);

    /// Releases every part, last first, and waits for each.
    ///
    /// # Errors
    /// The first error of a part's [`release`](LockGuard::release) (e.g.
    /// [`Error::Lost`] for a part lost before); every part is released regardless.
    pub async fn release(mut self) -> Result<(), Error> {
        let mut result = Ok(());
        while let Some(part) = self.parts.pop() {
            let released = part.release().await;
            if result.is_ok() {
                result = released;
            }
        }
        result
    }

    crate::blocking::twins!(fn release_blocking(self) -> Result<(), Error> = release;);
}

impl Drop for MultiGuard {
    fn drop(&mut self) {
        // Last first, as a release would.
        while let Some(part) = self.parts.pop() {
            drop(part);
        }
    }
}

impl LockClient {
    /// A [`MultiLock`] over `parts`: several locks taken all-or-nothing, in one
    /// canonical order (Curator's `InterProcessMultiLock`), for one owner.
    ///
    /// The parts are acquired one at a time in the order of their lock paths, so
    /// that any two multi-locks take their common locks in the same order: they can
    /// never deadlock with each other (a cycle of waits needs someone waiting for a
    /// lock while holding a later one in the order). Parts are lock objects, specs,
    /// or paths (mutexes); each path may appear once.
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// use zklock::MultiPart;
    /// let table = locks.rwlock("/locks/table");
    /// let job = locks.multi([MultiPart::from(table.read()), MultiPart::from("/locks/job")]);
    /// let held = job.lock().await?; // "/locks/job", then the read lock on "/locks/table"
    /// held.release().await?;
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
    /// ```
    pub fn multi<I, P>(&self, parts: I) -> MultiLock
    where
        I: IntoIterator<Item = P>,
        P: Into<MultiPart>,
    {
        MultiLock::new(self.clone(), parts.into_iter().map(Into::into).collect())
    }
}

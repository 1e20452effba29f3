//! [`PendingLock`]: an acquisition under way, to await, wait for, or give up.

use crate::client::LockClient;
use crate::error::Error;
use crate::guard::{LockGuard, UnclaimedTask};
use lock_core::{LockId, LockState};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// An acquisition under way, from `start()` on a lock object (or
/// [`LockClient::start`]): the core has it already (its node is being created).
///
/// Await it (it is a future of the guard), or wait on a thread with
/// [`wait_blocking`](Self::wait_blocking) /
/// [`wait_timeout_blocking`](Self::wait_timeout_blocking), or give up with
/// [`cancel`](Self::cancel) (also from elsewhere, through a [`Canceller`]).
/// Dropping it gives up; giving up leaves no node behind.
///
/// ```
/// # fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
/// use std::time::Duration;
/// let mut pending = locks.mutex("/locks/job").start()?;
/// let stop = pending.canceller(); // e.g. for a signal handler
/// match pending.wait_timeout_blocking(Duration::from_secs(1)) {
///     Some(result) => drop(result?),
///     None => stop.cancel(), // still waiting: give up
/// }
/// # Ok(()) }
/// # demo(zklock::sim::Server::new().client()).unwrap();
/// ```
#[must_use = "dropping a PendingLock gives up the acquisition"]
pub struct PendingLock {
    client: LockClient,
    id: LockId,
    /// `None` once the outcome was handed out.
    pending: Option<UnclaimedTask>,
}

impl std::fmt::Debug for PendingLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingLock")
            .field("id", &self.id)
            .field("finished", &self.pending.is_none())
            .finish()
    }
}

impl PendingLock {
    pub(crate) fn new(client: LockClient, id: LockId) -> PendingLock {
        PendingLock {
            pending: Some(UnclaimedTask::new(client.clone(), id)),
            client,
            id,
        }
    }

    /// The core's id of this acquisition (as in its events and
    /// [`Stats`](lock_core::Stats)' logs): stable for the acquisition's life, e.g.
    /// to key what a harness records about it.
    pub fn id(&self) -> LockId {
        self.id
    }

    /// Blocks until the lock is held, or the acquisition fails.
    ///
    /// # Errors
    /// [`Error::Timeout`] at the deadline, [`Error::Cancelled`] if cancelled,
    /// [`Error::SessionExpired`] if the session expired while waiting,
    /// [`Error::Closed`] once the client is closed.
    pub fn wait_blocking(self) -> Result<LockGuard, Error> {
        crate::blocking::block_on(self)
    }

    /// Blocks at most `timeout`: `None` if the acquisition is still under way (call
    /// again, or give up), `Some` with its outcome once it ended. After that, every
    /// call returns `Some(Err(Error::Cancelled))`.
    pub fn wait_timeout_blocking(&mut self, timeout: Duration) -> Option<Result<LockGuard, Error>> {
        crate::blocking::block_on_until(self, Some(Instant::now() + timeout))
    }

    /// Gives up: a waiting acquisition ends with [`Error::Cancelled`] and its node
    /// (even one whose create is still in flight) is deleted in the background; a
    /// grant not yet handed out is released.
    pub fn cancel(self) {
        drop(self);
    }

    /// A handle that cancels this acquisition from anywhere (another thread, a
    /// signal handler) while it is still waiting; once the lock is held it does
    /// nothing (release the guard instead).
    pub fn canceller(&self) -> Canceller {
        Canceller {
            client: self.client.clone(),
            id: self.id,
        }
    }
}

impl Future for PendingLock {
    type Output = Result<LockGuard, Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(pending) = self.pending.as_mut() else {
            return Poll::Ready(Err(Error::Cancelled));
        };
        let result = match pending.poll_granted(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(result) => result,
        };
        let pending = self.pending.take().expect("under way");
        Poll::Ready(result.map(|grant| pending.into_guard(grant)))
    }
}

/// Cancels a [`PendingLock`] from elsewhere; see [`PendingLock::canceller`].
#[derive(Clone)]
pub struct Canceller {
    client: LockClient,
    id: LockId,
}

impl std::fmt::Debug for Canceller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Canceller").field("id", &self.id).finish()
    }
}

impl Canceller {
    /// Cancels the acquisition if it is still waiting. Idempotent.
    pub fn cancel(&self) {
        let id = self.id;
        self.client.shared().with(|s| {
            if s.core.state(id) == Some(LockState::Waiting) {
                let now = s.now();
                let _ = s.core.cancel(id, now);
            }
        });
    }
}

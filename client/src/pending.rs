//! [`PendingLock`]: an acquisition under way, to await, wait for, or give up.

use crate::error::Error;
use crate::guard::{CancelOnDrop, LockGuard};
use crate::handle::LockClient;
use crate::status::Queued;
use lock_core::{LockId, LockState};
use std::future::{poll_fn, Future};
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
    pending: Option<CancelOnDrop>,
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
            pending: Some(CancelOnDrop::new(client.clone(), id)),
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

    /// Where the acquisition stands in its lock's queue while it waits: `None`
    /// until its first look at the queue (made as soon as its node exists), and
    /// once it is granted or ended. Costs no request (see [`Queued`]).
    pub fn queued(&self) -> Option<Queued> {
        self.client.shared().with(|s| {
            let slot = s.locks.slot(self.id)?;
            (!slot.acquired && !slot.ended)
                .then(|| slot.queued.as_deref().cloned())
                .flatten()
        })
    }

    /// A handle that follows this acquisition's place in the queue (from
    /// another task or thread; see [`QueueWatch::changed`]).
    pub fn queue_watch(&self) -> QueueWatch {
        QueueWatch {
            client: self.client.clone(),
            id: self.id,
            last: None,
        }
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
                s.mark_link();
            }
        });
    }
}

/// Follows a [`PendingLock`]'s place in the queue; see
/// [`PendingLock::queue_watch`].
///
/// ```
/// # fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
/// let pending = locks.mutex("/locks/job").start()?;
/// let mut place = pending.queue_watch();
/// // Beside the wait (a task of its own, or a branch of `select!`):
/// let report = async move {
///     while let Some(queued) = place.changed().await {
///         eprintln!("waiting: {queued}"); // "2 ahead in the queue", ...
///     }
/// };
/// # drop(report);
/// let _guard = pending.wait_blocking()?;
/// # Ok(()) }
/// # demo(zklock::sim::Server::new().client()).unwrap();
/// ```
#[derive(Clone)]
pub struct QueueWatch {
    client: LockClient,
    id: LockId,
    /// The place this watch reported last.
    last: Option<Queued>,
}

impl std::fmt::Debug for QueueWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueWatch")
            .field("id", &self.id)
            .field("last", &self.last)
            .finish()
    }
}

impl QueueWatch {
    /// The next place that differs from the one this watch returned last (the
    /// current one at the first call, as soon as the acquisition has looked at
    /// its queue). `None` once the acquisition no longer waits: granted, failed,
    /// cancelled. Cancel-safe.
    pub async fn changed(&mut self) -> Option<Queued> {
        let (client, id) = (self.client.clone(), self.id);
        let last = &mut self.last;
        poll_fn(|cx| {
            client.shared().with(|s| {
                let Some(slot) = s.locks.slot_mut(id) else {
                    return Poll::Ready(None);
                };
                if slot.acquired || slot.ended {
                    return Poll::Ready(None);
                }
                match &slot.queued {
                    Some(queued) if last.as_ref() != Some(&**queued) => {
                        *last = Some((**queued).clone());
                        Poll::Ready(Some((**queued).clone()))
                    }
                    _ => {
                        slot.register(cx.waker());
                        Poll::Pending
                    }
                }
            })
        })
        .await
    }

    /// Has the acquisition look at its queue again (one read), so that
    /// [`changed`](Self::changed) reports its exact place: between its own looks
    /// a waiter watches only the participants right ahead of it and does not see
    /// others leave, so the place it knows is an upper bound. Does nothing
    /// unless it waits on a connected session; calling it again before the
    /// answer costs nothing more.
    pub fn refresh(&self) {
        let id = self.id;
        self.client.shared().with(|s| {
            let now = s.now();
            let _ = s.core.look_again(id, now);
            s.mark_link();
        });
    }

    /// [`changed`](Self::changed), blocking the calling thread.
    pub fn changed_blocking(&mut self) -> Option<Queued> {
        crate::blocking::block_on(self.changed())
    }
}

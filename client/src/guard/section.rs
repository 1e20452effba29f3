//! Crash-detecting critical sections of a held lock: the section marker in the lock
//! directory, opened and closed by the holder.

use super::LockGuard;
use crate::error::Error;
use crate::status::LockStatus;
use lock_core::UsageError;
use std::future::poll_fn;
use std::task::Poll;

impl LockGuard {
    /// For a lock with [crash detection](crate::Mutex::detect_crashes): whether a previous
    /// holder opened a critical section and never closed it (it died, was dropped
    /// inside it, or lost the lock in it). Repair what it left half done, then
    /// [`close_section`](Self::close_section) (or open a new one). Always `false`
    /// without crash detection.
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// let guard = locks.mutex("/locks/ledger").detect_crashes().lock().await?;
    /// if guard.previous_holder_crashed() {
    ///     // repair ...
    ///     guard.close_section().await?;
    /// }
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
    /// ```
    pub fn previous_holder_crashed(&self) -> bool {
        self.grant.previous_holder_crashed
    }

    /// Opens a critical section (the Ready-file idea): a marker in the lock directory,
    /// written only while we hold the lock (fenced by our node), says a holder is
    /// inside. [`close_section`](Self::close_section) or a clean
    /// [`release`](Self::release) removes it (the release in the same `multi` as the
    /// deletion of our node: no extra round trip). If instead we die, are closed, lose
    /// the lock, or the guard is **dropped** while the section is open (a panic
    /// unwinding through it), the marker stays and the next holder's
    /// [`previous_holder_crashed`](Self::previous_holder_crashed) is `true`.
    ///
    /// One round trip. Opening an open section is harmless. If the connection drops
    /// meanwhile, the call goes on once the lock is resumed (it is idempotent and
    /// fenced by our node). Section calls on one guard may overlap (tasks sharing
    /// it): a later call supersedes one still in flight, and every call in flight
    /// returns the outcome of the latest (the section ends as the latest asked).
    ///
    /// # Errors
    /// [`Error::Usage`] without [crash detection](crate::Mutex::detect_crashes);
    /// [`Error::Suspended`] if called while the lock is suspended (nothing sent: try
    /// again once resumed); [`Error::Lost`] if the lock is lost before the section
    /// could be marked.
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// let guard = locks.mutex("/locks/ledger").detect_crashes().lock().await?;
    /// guard.open_section().await?;
    /// // ... several writes that must all happen, or be repaired ...
    /// guard.release().await?; // closes the section and releases, in one multi
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
    /// ```
    pub async fn open_section(&self) -> Result<(), Error> {
        self.section(true).await
    }

    crate::blocking::twins!(fn open_section_blocking(&self) -> Result<(), Error> = open_section;);

    /// Closes the critical section: the work is consistent again. One round trip.
    ///
    /// # Errors
    /// As for [`open_section`](Self::open_section).
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// let guard = locks.mutex("/locks/ledger").detect_crashes().lock().await?;
    /// guard.open_section().await?;
    /// // ... the delicate part ...
    /// guard.close_section().await?;
    /// // ... more work that needs the lock but no repair if interrupted ...
    /// # drop(guard); Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
    /// ```
    pub async fn close_section(&self) -> Result<(), Error> {
        self.section(false).await
    }

    crate::blocking::twins!(fn close_section_blocking(&self) -> Result<(), Error> = close_section;);

    async fn section(&self, open: bool) -> Result<(), Error> {
        let id = self.id;
        let shared = self.client.shared();
        let asked = shared.with(|s| {
            let now = s.now();
            let asked = if open {
                s.core.open_section(id, now)
            } else {
                s.core.close_section(id, now)
            };
            s.mark_link();
            // The call's number, to find its answer by.
            asked.map(|()| s.locks.slot_mut(id).map(|slot| slot.section.call()))
        });
        let result = match asked {
            Err(e) => Err(e.into()),
            Ok(None) => Err(Error::Closed),
            Ok(Some(call)) => {
                poll_fn(|cx| {
                    shared.with(|s| match s.locks.slot_mut(id) {
                        None => Poll::Ready(Err(Error::Closed)),
                        Some(slot) => match slot.section.answer_to(call) {
                            Some(result) => Poll::Ready(result),
                            None => {
                                slot.register(cx.waker());
                                Poll::Pending
                            }
                        },
                    })
                })
                .await
            }
        };
        // A refusal because the lock is not held (any more) says why.
        match (result, self.status()) {
            (Ok(()), _) => Ok(()),
            (Err(e @ Error::Usage(UsageError::Unsupported(_))), _) => Err(e),
            (Err(_), LockStatus::Lost(reason)) => Err(Error::Lost(reason)),
            (Err(Error::Usage(UsageError::NotHeld(_))), LockStatus::Suspended) => {
                Err(Error::Suspended)
            }
            (Err(e), _) => Err(e),
        }
    }
}

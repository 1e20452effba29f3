//! Fenced writes: ZooKeeper writes applied only while the guard's node still holds.

use super::LockGuard;
use crate::writes::Writes;
use lock_core::{FencedError, MultiResult, ZkError};
use std::future::poll_fn;
use std::task::Poll;

impl LockGuard {
    /// Applies ZooKeeper writes atomically, **only while we hold the lock**: one `multi`
    /// with a `check` on our lock node before `writes`. Once the lock is lost (our node
    /// deleted by an administrator, a revoker's cleanup, a lease, session expiry),
    /// nothing is written. One round trip.
    ///
    /// Returns one [`MultiResult`] per write.
    ///
    /// # Errors
    /// * [`FencedError::NotHeld`]: the lock is not held, or not trusted (suspended):
    ///   nothing was written.
    /// * [`FencedError::Write`]: one of the writes failed (its index and error):
    ///   nothing was written.
    /// * [`FencedError::Unknown`]: the connection dropped (or the lock ended) before
    ///   the reply; the writes may or may not have been applied, all or none.
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), Box<dyn std::error::Error>> {
    /// use zklock::Writes;
    /// let guard = locks.mutex("/locks/config").lock().await?;
    /// let token = guard.token().to_string();
    /// # let setup = zklock::Writes::new().create("/config", b"").create("/config/current", b"v1");
    /// # guard.fenced_write(setup.create("/config/history", b"")).await?;
    /// guard
    ///     .fenced_write(
    ///         Writes::new()
    ///             .set_data("/config/current", b"v2")
    ///             .create("/config/history/v2", token.as_bytes()),
    ///     )
    ///     .await?;
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
    /// ```
    pub async fn fenced_write(
        &self,
        writes: impl Into<Writes>,
    ) -> Result<Vec<MultiResult>, FencedError> {
        if !self.is_trusted() {
            return Err(FencedError::NotHeld);
        }
        let id = self.id;
        let ops = writes.into().into_ops();
        let shared = self.client.shared();
        let write = shared.with(|s| {
            let now = s.now();
            // Not held (or not trusted: suspended): nothing was sent.
            let write = s.core.fenced_write(id, ops, now).ok()?;
            s.mark_link();
            s.locks.slot_mut(id)?.writes.insert(write, None);
            Some(write)
        });
        let Some(write) = write else {
            return Err(FencedError::NotHeld);
        };
        poll_fn(|cx| {
            shared.with(|s| {
                let Some(slot) = s.locks.slot_mut(id) else {
                    return Poll::Ready(Err(FencedError::Unknown(ZkError::Closed)));
                };
                match slot.writes.get(&write) {
                    Some(Some(_)) => {
                        let result = slot.writes.remove(&write).flatten();
                        Poll::Ready(result.expect("answered"))
                    }
                    _ if slot.ended => Poll::Ready(Err(FencedError::Unknown(ZkError::Closed))),
                    _ => {
                        slot.register(cx.waker());
                        Poll::Pending
                    }
                }
            })
        })
        .await
    }

    /// Blocking twin of [`fenced_write`](Self::fenced_write).
    pub fn fenced_write_blocking(
        &self,
        writes: impl Into<Writes>,
    ) -> Result<Vec<MultiResult>, FencedError> {
        crate::blocking::block_on(self.fenced_write(writes))
    }
}

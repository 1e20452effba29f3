//! [`LockGuard`]: a held lock.

pub(crate) mod cancel_on_drop;
mod fenced;
mod reentrancy;
mod section;

pub(crate) use cancel_on_drop::{poll_event, CancelOnDrop};
use reentrancy::Hold;

use crate::error::Error;
use crate::handle::LockClient;
use crate::status::LockStatus;
use lock_core::{FencingToken, Grant, LockEvent, LockId, LockState, LostReason};
use std::future::poll_fn;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// A held lock (or semaphore permit). Released by [`release`](Self::release), or in
/// the background when dropped.
///
/// The guard also reports what happens to the lock while held: poll
/// [`status`](Self::status), or await [`next_event`](Self::next_event) /
/// [`lost`](Self::lost). (The example uses the `futures` crate's `select!`: add
/// `futures` to your dependencies, or use `tokio::select!`.)
///
/// ```
/// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
/// use futures::FutureExt;
/// let guard = locks.mutex("/locks/job").lock().await?;
/// let token = guard.token(); // pass it to the resource you protect
/// futures::select! {
///     reason = guard.lost().fuse() => eprintln!("lost the lock: {reason:?}"),
///     _ = do_the_work(token).fuse() => {}
/// }
/// guard.release().await?;
/// # Ok(()) }
/// # async fn do_the_work(_: zklock::FencingToken) {}
/// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
/// ```
#[must_use = "dropping a guard releases the lock"]
pub struct LockGuard {
    client: LockClient,
    id: LockId,
    grant: Grant,
    hold: Hold,
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
    /// A holder that pauses past its session (GC, SIGSTOP, a VM migration) can still
    /// act after the lock has passed to the next holder; only the resource can refuse
    /// that late write. Store the token with what it writes and make every write
    /// conditional on it, in the write itself: in SQL, `UPDATE t SET v = $1, fence = $2
    /// WHERE id = $3 AND fence <= $2` (0 rows: a newer holder has written; stop). For
    /// ZooKeeper data, [`fenced_write`](Self::fenced_write) checks the lock node
    /// instead. The README's "Fencing your resource" has the shell form and other
    /// stores.
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// let first = locks.mutex("/locks/job").lock().await?;
    /// let t1 = first.token();
    /// first.release().await?;
    /// let second = locks.mutex("/locks/job").lock().await?;
    /// assert!(second.token() > t1);
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
    /// ```
    pub fn token(&self) -> FencingToken {
        self.grant.token
    }

    /// The full path of our lock node.
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// let guard = locks.mutex("/locks/job").lock().await?;
    /// assert!(guard.path().starts_with("/locks/job/"));
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
    /// ```
    pub fn path(&self) -> &str {
        &self.grant.path
    }

    /// Everything the acquisition was granted: path, token, sequence number, session.
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// let guard = locks.mutex("/locks/job").lock().await?;
    /// assert_eq!(Some(guard.grant().session_id), locks.session_id());
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
    /// ```
    pub fn grant(&self) -> &Grant {
        &self.grant
    }

    /// The latest status: the one the driver set as events happened (whether or
    /// not they have been read with [`next_event`](Self::next_event)), read
    /// against the client's clock. Once [`trusted_until`](Self::trusted_until)
    /// has passed, a lock the driver still has as held is
    /// [`Suspended`](LockStatus::Suspended), at once: after a pause (SIGSTOP, a
    /// GC, a VM migration) the first check is right before the driver has run.
    /// It stays `Suspended` until the driver reports `Lost` (or `Resumed`):
    /// `Lost` and its reason are the driver's to decide (it may yet learn that
    /// the session expired), and a status never runs ahead of the events.
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// use zklock::LockStatus;
    /// let guard = locks.mutex("/locks/job").lock().await?;
    /// assert_eq!(guard.status(), LockStatus::Held);
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
    /// ```
    pub fn status(&self) -> LockStatus {
        self.client.shared().with(|s| s.lock_status(self.id))
    }

    /// Whether the lock is held and trusted right now: the
    /// [`status`](Self::status) is [`Held`](LockStatus::Held) (not suspended,
    /// not lost), so [`trusted_until`](Self::trusted_until), if known, is still
    /// ahead on the client's clock. Check it between steps of the work the lock
    /// protects: it is right even as the first check after a pause.
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// let guard = locks.mutex("/locks/job").lock().await?;
    /// if guard.is_trusted() { /* touch the resource */ }
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
    /// ```
    pub fn is_trusted(&self) -> bool {
        self.status() == LockStatus::Held
    }

    /// Until when the lock can be trusted, on the client's clock (the process's
    /// monotonic [`Instant`] in every binding), while it is held (trusted or
    /// suspended): a margin before the server could expire the session, one
    /// session timeout after the ensemble's leader last provably heard from it
    /// (see [`lock_core::contact`]). It moves forward with every proof of
    /// contact (a `sync` or a write answered); `None` once the lock is lost or
    /// released, or without proven contact (with
    /// [`ConnectOptions::sync_interval`](crate::ConnectOptions::sync_interval)
    /// off). Once it has passed, [`status`](Self::status) is no longer `Held`.
    ///
    /// Another process can enforce it on its own clock: a reading taken late is
    /// earlier than the truth, never later. zklock's guard stops CMD when it
    /// passes unrenewed, even while zklock itself is stopped.
    ///
    /// ```
    /// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
    /// let guard = locks.mutex("/locks/job").lock().await?;
    /// if let Some(until) = guard.trusted_until() {
    ///     assert!(until <= std::time::Instant::now() + locks.session_timeout());
    /// }
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(lock_sim::Server::new().client())).unwrap();
    /// ```
    pub fn trusted_until(&self) -> Option<Instant> {
        self.client.shared().with(|s| s.trusted_until(self.id))
    }

    /// The next thing that happens to the lock: [`LockEvent::Suspended`],
    /// [`LockEvent::Resumed`], [`LockEvent::RevocationRequested`] (for a
    /// [revocable](crate::Mutex::revocable) lock), or the terminal [`LockEvent::Lost`] (e.g.
    /// [`LostReason::LeaseExpired`] for a [lease](crate::Mutex::max_hold)). `None` after the
    /// terminal event. (The outcomes of [`fenced_write`](Self::fenced_write) and of
    /// sections are returned by those calls, not reported here.)
    ///
    /// Cancel-safe: dropping the future loses no event.
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient, server: zklock::sim::Server) -> Result<(), zklock::Error> {
    /// use zklock::LockEvent;
    /// let guard = locks.mutex("/locks/job").lock().await?;
    /// # server.expire_session(&locks);
    /// while let Some(event) = guard.next_event().await {
    ///     match event {
    ///         LockEvent::Suspended => eprintln!("connection down: pausing"),
    ///         LockEvent::Resumed => eprintln!("connection back: still ours"),
    ///         other => eprintln!("{other:?}"),
    ///     }
    /// }
    /// # Ok(()) }
    /// # let server = zklock::sim::Server::new();
    /// # futures::executor::block_on(demo(server.client(), server.clone())).unwrap();
    /// ```
    pub async fn next_event(&self) -> Option<LockEvent> {
        let (client, id) = (&self.client, self.id);
        poll_fn(|cx| poll_event(client, id, cx)).await
    }

    crate::blocking::twins!(fn next_event_blocking(&self) -> Option<LockEvent> = next_event;);

    /// Like [`next_event_blocking`](Self::next_event_blocking), giving up with
    /// `None` once `timeout` has passed without an event (none is lost).
    pub fn next_event_timeout_blocking(&self, timeout: Duration) -> Option<LockEvent> {
        crate::blocking::block_on_until(self.next_event(), Some(Instant::now() + timeout)).flatten()
    }

    /// Waits until the lock is lost, and says why. Events before that (suspension,
    /// resumption) are consumed. Cancel-safe.
    ///
    /// When it resolves, nobody else can have been granted the lock yet: a lock
    /// cut off from ZooKeeper is reported lost a safety margin before the server
    /// could expire its session (see [`LockStatus::Lost`] for the clocks involved
    /// and the margin). So a task that `select!`s its work against `lost()` stops
    /// before another holder starts. [`suspended`](Self::suspended) comes earlier:
    /// the first moment ownership is in doubt.
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient, server: zklock::sim::Server) -> Result<(), zklock::Error> {
    /// let guard = locks.mutex("/locks/job").lock().await?;
    /// # server.expire_session(&locks); // (a plain lock does not watch its node: the session goes instead)
    /// let reason = guard.lost().await; // e.g. an administrator deleted our node
    /// eprintln!("lost: {reason:?}");
    /// # Ok(()) }
    /// # let server = zklock::sim::Server::new();
    /// # futures::executor::block_on(demo(server.client(), server.clone())).unwrap();
    /// ```
    pub async fn lost(&self) -> LostReason {
        loop {
            match self.next_event().await {
                Some(LockEvent::Lost(reason)) => return reason,
                Some(_) => {}
                None => return self.lost_reason(),
            }
        }
    }

    /// Why the lock is lost, once its events have ended.
    fn lost_reason(&self) -> LostReason {
        match self.status() {
            LockStatus::Lost(reason) => reason,
            _ => LostReason::Closed,
        }
    }

    /// The reason, if the lock is lost; else registers the task to wake at the
    /// next event (without taking it).
    pub(crate) fn poll_lost(&self, cx: &mut Context<'_>) -> Option<LostReason> {
        self.client
            .shared()
            .with(|s| match s.locks.slot_mut(self.id) {
                None => Some(LostReason::Closed),
                Some(slot) => match &slot.status {
                    LockStatus::Lost(reason) => Some(reason.clone()),
                    _ => {
                        slot.register(cx.waker());
                        None
                    }
                },
            })
    }

    crate::blocking::twins!(fn lost_blocking(&self) -> LostReason = lost;);

    /// Waits until the lock is suspended (connection down) or lost, and returns the
    /// event. Cancel-safe.
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient, server: zklock::sim::Server) -> Result<(), zklock::Error> {
    /// let guard = locks.mutex("/locks/job").lock().await?;
    /// # server.disconnect(&locks, std::time::Duration::from_millis(100));
    /// let event = guard.suspended().await;
    /// eprintln!("stop trusting the lock: {event:?}");
    /// # Ok(()) }
    /// # let server = zklock::sim::Server::new();
    /// # futures::executor::block_on(demo(server.client(), server.clone())).unwrap();
    /// ```
    pub async fn suspended(&self) -> LockEvent {
        loop {
            match self.next_event().await {
                Some(event @ (LockEvent::Suspended | LockEvent::Lost(_))) => return event,
                Some(_) => {}
                None => return LockEvent::Lost(LostReason::Closed),
            }
        }
    }

    crate::blocking::twins!(fn suspended_blocking(&self) -> LockEvent = suspended;);

    /// Releases the lock: deletes our node and waits for the server to confirm (across
    /// reconnects, if the connection is down meanwhile).
    ///
    /// # Errors
    /// [`Error::Lost`] if the lock had been lost before (whatever the guard protected
    /// may have overlapped another holder), including `Lost(NodeDeleted)` when the
    /// release finds that someone else deleted our node (a lock without
    /// [`watch_node`](crate::Mutex::watch_node) learns of that only at the release or
    /// the next reconnect), [`Error::Closed`] if the client is closed,
    /// [`Error::Zk`] if ZooKeeper refused the delete.
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// let guard = locks.mutex("/locks/job").lock().await?;
    /// guard.release().await?;
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
    /// ```
    pub async fn release(mut self) -> Result<(), Error> {
        if self.give_back() {
            // An inner hold of a reentrant mutex: the node stays for the others.
            return Ok(());
        }
        let id = self.id;
        let mut asked = false;
        poll_fn(|cx| {
            self.client.shared().with(|s| {
                let Some(slot) = s.locks.slot_mut(id) else {
                    return Poll::Ready(Err(Error::Closed));
                };
                // Anything already reported (a loss) decides without asking.
                if let Some(terminal) = slot.events.iter().position(LockEvent::is_terminal) {
                    let event = slot.events.drain(..=terminal).next_back();
                    let result = match event {
                        Some(LockEvent::Released) => Ok(()),
                        Some(LockEvent::Lost(reason)) => Err(Error::Lost(reason)),
                        Some(LockEvent::Failed(reason)) => Err(reason.into()),
                        _ => Err(Error::Closed),
                    };
                    return Poll::Ready(result);
                }
                if slot.ended {
                    // The terminal event was read already.
                    let result = match &slot.status {
                        LockStatus::Lost(reason) => Err(Error::Lost(reason.clone())),
                        _ => Ok(()),
                    };
                    return Poll::Ready(result);
                }
                slot.register(cx.waker());
                if asked {
                    return Poll::Pending;
                }
                // The delete goes now (the link is woken); the terminal event answers.
                asked = true;
                let now = s.now();
                match s.core.release(id, now) {
                    Ok(()) => {
                        s.mark_link();
                        Poll::Pending
                    }
                    Err(e) => Poll::Ready(Err(e.into())),
                }
            })
        })
        .await
    }

    crate::blocking::twins!(fn release_blocking(self) -> Result<(), Error> = release;);

    /// Whether someone asked us to let go ([`LockClient::revoke`](crate::LockClient::revoke)): set once a
    /// [`LockEvent::RevocationRequested`] arrived, whether or not it was read. Only
    /// locks made [`revocable`](crate::Mutex::revocable) are ever asked.
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// let guard = locks.mutex("/locks/job").revocable().lock().await?;
    /// for step in 0..100 {
    ///     if guard.is_revocation_requested() {
    ///         break; // someone needs the lock: stop at a consistent point
    ///     }
    ///     # let _ = step;
    /// }
    /// guard.release().await?;
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
    /// ```
    pub fn is_revocation_requested(&self) -> bool {
        self.client
            .shared()
            .with(|s| (s.locks.slot(self.id)).is_some_and(|s| s.revocation_requested))
    }

    /// Waits until someone asks us to let go ([`LockClient::revoke`](crate::LockClient::revoke) writes Curator's
    /// `__REVOKE__` into our node; the ZooKeeper recipe's `unlock` works too). The
    /// holder decides what to do, usually finish a step and release. Returns at once
    /// if a request arrived earlier, even if [`next_event`](Self::next_event) consumed
    /// it.
    ///
    /// Only locks made [`revocable`](crate::Mutex::revocable) are asked; for the others this
    /// waits until the lock is lost. Events before the request (suspension,
    /// resumption) are consumed. Cancel-safe.
    ///
    /// # Errors
    /// The lock was lost before anyone asked (the reason).
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// let guard = locks.mutex("/locks/job").revocable().lock().await?;
    /// # locks.revoke("/locks/job").await?;
    /// if guard.revocation_requested().await.is_ok() {
    ///     guard.release().await?; // cooperative: let the requester in
    /// }
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
    /// ```
    pub async fn revocation_requested(&self) -> Result<(), LostReason> {
        loop {
            if self.is_revocation_requested() {
                return Ok(());
            }
            match self.next_event().await {
                Some(LockEvent::RevocationRequested) => return Ok(()),
                Some(LockEvent::Lost(reason)) => return Err(reason),
                Some(_) => {}
                None => return Err(self.lost_reason()),
            }
        }
    }

    crate::blocking::twins!(fn revocation_requested_blocking(&self) -> Result<(), LostReason> = revocation_requested;);

    /// Like [`revocation_requested_blocking`](Self::revocation_requested_blocking),
    /// giving up with `None` once `timeout` has passed without a request or a loss.
    pub fn revocation_requested_timeout_blocking(
        &self,
        timeout: Duration,
    ) -> Option<Result<(), LostReason>> {
        crate::blocking::block_on_until(self.revocation_requested(), Some(Instant::now() + timeout))
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if self.give_back() {
            return;
        }
        let id = self.id;
        self.client.shared().with(|s| {
            if let Some(slot) = s.locks.slot_mut(id).filter(|slot| !slot.ended) {
                // Whoever shares this slot (an `Election`) must stop trusting the
                // lock now, not when the delete is confirmed.
                slot.status = LockStatus::Released;
                // Released in the background (see `LockClient::wait_idle`); inside
                // an open critical section the marker stays for the next holder, as
                // a crash there would leave it.
                let now = s.now();
                let held = matches!(
                    s.core.state(id),
                    Some(LockState::Held | LockState::Suspended)
                );
                let _ = if held {
                    s.core.abandon(id, now)
                } else {
                    s.core.cancel(id, now)
                };
                s.mark_link();
            }
            s.locks.drop_slot(id);
        });
    }
}

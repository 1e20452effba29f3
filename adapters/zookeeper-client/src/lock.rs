//! User-facing lock objects ([`Mutex`], [`RwLock`], [`Semaphore`]) and [`LockGuard`].

use crate::client::{Inner, LockClient};
use crate::driver::{Command, Tap, Task};
use crate::error::Error;
use crate::fenced::Writes;
use futures::channel::{mpsc, oneshot};
use futures::StreamExt;
use lock_core::{
    FencedError, FencingToken, Grant, LockEvent, LockSpec, LostReason, MultiResult, NameScheme,
    UsageError,
};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

/// What the driver tells one task.
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

/// What a handle may read without asking the driver (the driver updates it before
/// it hands out the event that changed it).
#[derive(Debug)]
pub(crate) struct GuardState {
    /// Meaningful once `acquired`.
    pub(crate) status: LockStatus,
    pub(crate) acquired: bool,
    pub(crate) revocation_requested: bool,
}

impl Default for GuardState {
    fn default() -> Self {
        GuardState {
            status: LockStatus::Held,
            acquired: false,
            revocation_requested: false,
        }
    }
}

pub(crate) type SharedState = Arc<StdMutex<GuardState>>;

pub(crate) fn read_state<T>(state: &SharedState, f: impl FnOnce(&GuardState) -> T) -> T {
    f(&state.lock().unwrap_or_else(|p| p.into_inner()))
}

struct Parts {
    inner: Arc<Inner>,
    key: u64,
    notices: mpsc::UnboundedReceiver<Notice>,
    state: SharedState,
}

/// A task started in the driver (an acquisition, observer or revocation), cancelled
/// when dropped before it ends or is handed on.
pub(crate) struct Started {
    parts: Option<Parts>,
}

impl Started {
    pub(crate) fn start(
        client: &LockClient,
        task: Task,
        tap: Option<Tap>,
    ) -> Result<Started, Error> {
        let inner = client.inner.clone();
        let key = inner.next_key();
        let (tx, notices) = mpsc::unbounded();
        let state = SharedState::default();
        inner.send(Command::Start {
            key,
            task,
            notices: tx,
            state: state.clone(),
            tap,
        })?;
        Ok(Started {
            parts: Some(Parts {
                inner,
                key,
                notices,
                state,
            }),
        })
    }

    /// Whether the task may still be going on (not ended, not handed on).
    pub(crate) fn is_live(&self) -> bool {
        self.parts.is_some()
    }

    pub(crate) fn key(&self) -> Option<u64> {
        self.parts.as_ref().map(|p| p.key)
    }

    pub(crate) fn state(&self) -> Option<SharedState> {
        self.parts.as_ref().map(|p| p.state.clone())
    }

    /// The next notice; `None` once the task ended or the driver stopped (then the
    /// task is forgotten). Cancel-safe.
    pub(crate) async fn next(&mut self) -> Option<Notice> {
        let parts = self.parts.as_mut()?;
        let notice = parts.notices.next().await;
        if notice.is_none() {
            self.parts = None;
        }
        notice
    }

    /// Forgets the task without cancelling it (it ended).
    pub(crate) fn ended(&mut self) {
        self.parts = None;
    }

    /// Waits for an acquisition's grant. On an error the acquisition has ended.
    /// Cancel-safe: dropping the future loses nothing (the task goes on).
    pub(crate) async fn granted(&mut self) -> Result<Grant, Error> {
        loop {
            match self.next().await {
                Some(Notice::Refused(e)) => {
                    self.ended();
                    return Err(e.into());
                }
                Some(Notice::Event(LockEvent::Acquired(grant))) => return Ok(grant),
                Some(Notice::Event(LockEvent::Failed(reason))) => {
                    self.ended();
                    return Err(reason.into());
                }
                // Nothing else is reported before `Acquired`.
                Some(Notice::Event(_)) => {}
                None => return Err(Error::Closed),
            }
        }
    }

    /// Hands a granted acquisition to a guard.
    pub(crate) fn into_guard(mut self, grant: Grant) -> LockGuard {
        let parts = self.parts.take().expect("a live acquisition");
        LockGuard {
            inner: parts.inner,
            key: parts.key,
            grant,
            state: parts.state,
            notices: parts.notices,
            ended: false,
        }
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        if let Some(parts) = self.parts.take() {
            let _ = parts.inner.send(Command::Cancel { key: parts.key });
        }
    }
}

/// Starts an acquisition and waits for its outcome. Dropping the future cancels it
/// (the driver deletes the node, even one whose create is still in flight).
pub(crate) async fn acquire(
    client: &LockClient,
    spec: LockSpec,
    deadline: Option<Instant>,
) -> Result<LockGuard, Error> {
    let mut started = Started::start(client, Task::Acquire { spec, deadline }, None)?;
    let grant = started.granted().await?;
    Ok(started.into_guard(grant))
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
    state: SharedState,
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
        read_state(&self.state, |s| s.status.clone())
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
    /// [`LockEvent::Resumed`], [`LockEvent::RevocationRequested`] (for a
    /// [revocable](Mutex::revocable) lock), or the terminal [`LockEvent::Lost`] (e.g.
    /// [`LostReason::LeaseExpired`] for a [lease](Mutex::max_hold)). `None` after the
    /// terminal event. (The outcomes of [`fenced_write`](Self::fenced_write) and of
    /// sections are returned by those calls, not reported here.)
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

    /// Whether someone asked us to let go ([`LockClient::revoke`]): set once a
    /// [`LockEvent::RevocationRequested`] arrived, whether or not it was read. Only
    /// locks made [`revocable`](Mutex::revocable) are ever asked.
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
    /// let guard = locks.mutex("/locks/job").revocable().lock().await?;
    /// for step in 0..100 {
    ///     if guard.is_revocation_requested() {
    ///         break; // someone needs the lock: stop at a consistent point
    ///     }
    ///     # let _ = step;
    /// }
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn is_revocation_requested(&self) -> bool {
        read_state(&self.state, |s| s.revocation_requested)
    }

    /// Waits until someone asks us to let go ([`LockClient::revoke`] writes Curator's
    /// `__REVOKE__` into our node; the ZooKeeper recipe's `unlock` works too). The
    /// holder decides what to do, usually finish a step and release. Returns at once
    /// if a request arrived earlier, even if [`next_event`](Self::next_event) consumed
    /// it.
    ///
    /// Only locks made [`revocable`](Mutex::revocable) are asked; for the others this
    /// waits until the lock is lost. Events before the request (suspension,
    /// resumption) are consumed. Cancel-safe.
    ///
    /// # Errors
    /// The lock was lost before anyone asked (the reason).
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
    /// let mut guard = locks.mutex("/locks/job").revocable().lock().await?;
    /// if guard.revocation_requested().await.is_ok() {
    ///     guard.release().await?; // cooperative: let the requester in
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn revocation_requested(&mut self) -> Result<(), LostReason> {
        loop {
            if self.is_revocation_requested() {
                return Ok(());
            }
            match self.next_event().await {
                Some(LockEvent::RevocationRequested) => return Ok(()),
                Some(LockEvent::Lost(reason)) => return Err(reason),
                Some(_) => {}
                None => {
                    return Err(match self.status() {
                        LockStatus::Lost(reason) => reason,
                        _ => LostReason::Closed,
                    })
                }
            }
        }
    }

    /// For a lock with [crash detection](Mutex::detect_crashes): whether a previous
    /// holder opened a critical section and never closed it (it died, was dropped
    /// inside it, or lost the lock in it). Repair what it left half done, then
    /// [`close_section`](Self::close_section) (or open a new one). Always `false`
    /// without crash detection.
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
    /// let mut guard = locks.mutex("/locks/ledger").detect_crashes().lock().await?;
    /// if guard.previous_holder_crashed() {
    ///     // repair ...
    ///     guard.close_section().await?;
    /// }
    /// # Ok(()) }
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
    /// fenced by our node).
    ///
    /// # Errors
    /// [`Error::Usage`] without [crash detection](Mutex::detect_crashes);
    /// [`Error::Suspended`] if called while the lock is suspended (nothing sent: try
    /// again once resumed); [`Error::Lost`] if the lock is lost before the section
    /// could be marked.
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
    /// let mut guard = locks.mutex("/locks/ledger").detect_crashes().lock().await?;
    /// guard.open_section().await?;
    /// // ... several writes that must all happen, or be repaired ...
    /// guard.release().await?; // closes the section and releases, in one multi
    /// # Ok(()) }
    /// ```
    pub async fn open_section(&mut self) -> Result<(), Error> {
        self.section(true).await
    }

    /// Closes the critical section: the work is consistent again. One round trip.
    ///
    /// # Errors
    /// As for [`open_section`](Self::open_section).
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
    /// let mut guard = locks.mutex("/locks/ledger").detect_crashes().lock().await?;
    /// guard.open_section().await?;
    /// // ... the delicate part ...
    /// guard.close_section().await?;
    /// // ... more work that needs the lock but no repair if interrupted ...
    /// # drop(guard); Ok(()) }
    /// ```
    pub async fn close_section(&mut self) -> Result<(), Error> {
        self.section(false).await
    }

    async fn section(&mut self, open: bool) -> Result<(), Error> {
        let (reply, answer) = oneshot::channel();
        let sent = self.inner.send(Command::Section {
            key: self.key,
            open,
            reply,
        });
        let result = match sent {
            Ok(()) => answer.await.unwrap_or(Err(Error::Closed)),
            Err(e) => Err(e),
        };
        // A refusal because the lock is not held (any more) says why.
        match (result, self.status()) {
            (Ok(()), _) => Ok(()),
            (Err(Error::Usage(UsageError::Unsupported(why))), _) => {
                Err(Error::Usage(UsageError::Unsupported(why)))
            }
            (Err(_), LockStatus::Lost(reason)) => Err(Error::Lost(reason)),
            (Err(Error::Usage(UsageError::NotHeld(_))), LockStatus::Suspended) => {
                Err(Error::Suspended)
            }
            (Err(e), _) => Err(e),
        }
    }

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
    /// ```no_run
    /// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), Box<dyn std::error::Error>> {
    /// use lock_zookeeper_client::Writes;
    /// let guard = locks.mutex("/locks/config").lock().await?;
    /// let token = guard.token().to_string();
    /// guard
    ///     .fenced_write(
    ///         Writes::new()
    ///             .set_data("/config/current", b"v2")
    ///             .create("/config/history/v2", token.as_bytes()),
    ///     )
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub async fn fenced_write(
        &self,
        writes: impl Into<Writes>,
    ) -> Result<Vec<MultiResult>, FencedError> {
        if !self.is_trusted() {
            return Err(FencedError::NotHeld);
        }
        let (reply, answer) = oneshot::channel();
        let ops = writes.into().into_ops();
        if self
            .inner
            .send(Command::FencedWrite {
                key: self.key,
                ops,
                reply,
            })
            .is_err()
        {
            return Err(FencedError::NotHeld);
        }
        answer
            .await
            .unwrap_or(Err(FencedError::Unknown(lock_core::ZkError::Closed)))
    }

    fn set_status(&self, status: LockStatus) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).status = status;
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if !self.ended {
            // Whoever shares this state (an `Election`) must stop trusting the lock
            // now, not when the driver confirms the delete.
            self.set_status(LockStatus::Released);
            // Fire and forget: the driver deletes the node in the background (see
            // `LockClient::wait_idle`).
            let _ = self.inner.send(Command::Cancel { key: self.key });
        }
    }
}

/// The acquisition methods shared by every lock object.
macro_rules! lock_methods {
    (
        $what:literal,
        $lock:ident,
        $try_lock:ident,
        $lock_timeout:ident,
        $lock_until:ident,
        $example_revocable:literal,
        $example_lease:literal
    ) => {
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

        /// Watches the held node, so that an administrator deleting it ends the hold
        /// at once ([`LockEvent::Lost`] with `NodeDeleted`). Costs one request per
        /// acquisition and one notification per release; without it (as with
        /// Curator and kazoo) such a deletion is noticed at the next reconnect,
        /// fenced write or release. Session expiry and long suspensions are noticed
        /// either way. Revocable locks always watch.
        pub fn watch_node(mut self) -> Self {
            self.spec = self.spec.watch_node();
            self
        }

        /// Honours revocation requests ([`LockClient::revoke`]): a holder is told
        /// ([`LockGuard::revocation_requested`], [`LockEvent::RevocationRequested`])
        /// and decides; a waiter gives up its place and its lock call fails with
        /// [`Error::Revoked`].
        ///
        /// ```no_run
        /// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
        #[doc = $example_revocable]
        /// # drop(guard); Ok(()) }
        /// ```
        pub fn revocable(mut self) -> Self {
            self.spec = self.spec.revocable();
            self
        }

        /// A lease: once held for `max_hold`, the lock is taken away, whatever the
        /// holder does: the guard reports [`LockEvent::Lost`] with
        /// [`LostReason::LeaseExpired`] (see [`LockGuard::lost`]) and the node is
        /// deleted, letting the next waiter in. A holder that missed it and writes
        /// late is caught by its [fencing token](LockGuard::token) (or fails its
        /// [fenced writes](LockGuard::fenced_write)).
        ///
        /// ```no_run
        /// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
        /// use std::time::Duration;
        #[doc = $example_lease]
        /// # drop(guard); Ok(()) }
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
        /// ```no_run
        /// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
        #[doc = $example]
        /// if guard.previous_holder_crashed() { /* repair */ }
        /// # Ok(()) }
        /// ```
        pub fn detect_crashes(mut self) -> Self {
            self.spec = self.spec.detect_crashes();
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
            spec: LockSpec::exclusive(path),
        }
    }

    lock_methods!(
        "the lock",
        lock,
        try_lock,
        lock_timeout,
        lock_until,
        "let guard = locks.mutex(\"/locks/job\").revocable().lock().await?;",
        "let guard = locks.mutex(\"/locks/job\").max_hold(Duration::from_secs(30)).lock().await?;"
    );

    crash_detection!("let guard = locks.mutex(\"/locks/ledger\").detect_crashes().lock().await?;");
}

/// A read/write lock: any number of readers, or one writer. A waiting writer is not
/// starved by readers that come after it (they queue behind it).
///
/// A read lock cannot be upgraded: while this `RwLock` (or a clone of it) holds the
/// read half, waiting for its write half is refused at once with
/// [`UsageError::SelfDeadlock`](lock_core::UsageError::SelfDeadlock) (it would wait
/// for itself forever; `try_lock` just finds the lock busy). Release the read lock
/// first. Independent tasks that contend for one path each take their own
/// `rwlock(path)`.
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
        // One `RwLock` value (with its clones) is one owner, as one thread is in
        // Curator: its write half is refused at once while its read half holds
        // (an upgrade would wait for itself forever), instead of hanging.
        static NEXT_OWNER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let owner = format!(
            "rwlock-{}",
            NEXT_OWNER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
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

    /// Makes both halves [revocable](Mutex::revocable) (the seeds' "revocable shared
    /// locks": a writer can ask the readers to let go).
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
    /// let table = locks.rwlock("/locks/table").revocable();
    /// let reader = table.read().lock().await?;
    /// # drop(reader); Ok(()) }
    /// ```
    pub fn revocable(self) -> Self {
        RwLock {
            read: self.read.revocable(),
            write: self.write.revocable(),
        }
    }

    /// Gives both halves a [lease](Mutex::max_hold) of `max_hold`.
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_zookeeper_client::LockClient) -> Result<(), lock_zookeeper_client::Error> {
    /// use std::time::Duration;
    /// let table = locks.rwlock("/locks/table").max_hold(Duration::from_secs(60));
    /// # drop(table); Ok(()) }
    /// ```
    pub fn max_hold(self, max_hold: Duration) -> Self {
        RwLock {
            read: self.read.max_hold(max_hold),
            write: self.write.max_hold(max_hold),
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
    lock_methods!(
        "a read lock",
        lock,
        try_lock,
        lock_timeout,
        lock_until,
        "let guard = locks.rwlock(\"/locks/table\").read().clone().revocable().lock().await?;",
        "let guard = locks.rwlock(\"/locks/table\").read().clone().max_hold(Duration::from_secs(30)).lock().await?;"
    );
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
    lock_methods!(
        "the write lock",
        lock,
        try_lock,
        lock_timeout,
        lock_until,
        "let guard = locks.rwlock(\"/locks/table\").write().clone().revocable().lock().await?;",
        "let guard = locks.rwlock(\"/locks/table\").write().clone().max_hold(Duration::from_secs(30)).lock().await?;"
    );

    crash_detection!(
        "let guard = locks.rwlock(\"/locks/table\").write().clone().detect_crashes().lock().await?;"
    );
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

    lock_methods!(
        "a permit",
        lock,
        try_lock,
        lock_timeout,
        lock_until,
        "let guard = locks.semaphore(\"/locks/gpu\", 2).revocable().lock().await?;",
        "let guard = locks.semaphore(\"/locks/gpu\", 2).max_hold(Duration::from_secs(30)).lock().await?;"
    );
}

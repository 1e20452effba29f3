//! [`LockGuard`]: a held lock, and [`Pending`], an acquisition on its way to one.

use crate::client::LockClient;
use crate::error::Error;
use crate::writes::Writes;
use lock_core::{
    FencedError, FencingToken, Grant, LockEvent, LockId, LockState, LostReason, MultiResult,
    UsageError, ZkError,
};
use std::future::poll_fn;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// Where a held lock stands, from [`LockGuard::status`].
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum LockStatus {
    /// Held and trusted.
    Held,
    /// The connection is down: ownership is not guaranteed until it is resumed (or
    /// lost, see [`Lost`](Self::Lost)). Stop touching the protected resource, or
    /// fence your writes with [`LockGuard::token`]. Nobody else can hold the lock
    /// yet: the lock turns `Lost` before the server could expire the session.
    Suspended,
    /// No longer held. After a suspension, `Lost(SuspendedTooLong)` comes before
    /// anyone else could have been granted the lock: a margin
    /// ([`Config::expiry_margin`](lock_core::Config::expiry_margin)) before one
    /// session timeout has passed since the server last heard from this client,
    /// the earliest the server could expire the session and delete our node (or
    /// earlier, after a shorter [`Config::suspended_grace`](lock_core::Config::suspended_grace)).
    /// Both ends measure with monotonic clocks only (`Instant` here, ZooKeeper's
    /// own on the server), so wall-clock jumps do not matter; a process paused
    /// longer than the margin between the deadline and your code does.
    Lost(LostReason),
    /// Released by us.
    Released,
}

/// Polls for the next event of task `id` for its handle; `None` if its slot is
/// gone or it has ended.
pub(crate) fn poll_event(
    client: &LockClient,
    id: LockId,
    cx: &mut Context<'_>,
) -> Poll<Option<LockEvent>> {
    client.shared().with_quiet(|s| {
        let Some(slot) = s.slots.get_mut(&id) else {
            return Poll::Ready(None);
        };
        match slot.events.pop_front() {
            Some(event) => Poll::Ready(Some(event)),
            None if slot.ended => Poll::Ready(None),
            None => {
                slot.register(cx.waker());
                Poll::Pending
            }
        }
    })
}

/// A task started in the core (an acquisition, observer or revocation) whose
/// handle has not taken it over yet: cancelled when dropped before it ends.
pub(crate) struct Pending {
    client: LockClient,
    id: LockId,
    /// The task ended, or was handed to a guard.
    done: bool,
    /// Its slot belongs to a guard now.
    handed: bool,
}

impl Pending {
    pub(crate) fn new(client: LockClient, id: LockId) -> Pending {
        Pending {
            client,
            id,
            done: false,
            handed: false,
        }
    }

    /// Whether the task may still be going on (not ended, not handed on).
    pub(crate) fn is_live(&self) -> bool {
        !self.done && !self.handed
    }

    /// The next event; `None` once the task ended (then it is forgotten).
    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<LockEvent>> {
        if self.done {
            return Poll::Ready(None);
        }
        let polled = poll_event(&self.client, self.id, cx);
        if let Poll::Ready(event) = &polled {
            match event {
                Some(e) if !e.is_terminal() => {}
                _ => self.done = true,
            }
        }
        polled
    }

    /// An acquisition's grant. On an error the acquisition has ended.
    pub(crate) fn poll_granted(&mut self, cx: &mut Context<'_>) -> Poll<Result<Grant, Error>> {
        loop {
            match self.poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(LockEvent::Acquired(grant))) => return Poll::Ready(Ok(grant)),
                Poll::Ready(Some(LockEvent::Failed(reason))) => {
                    return Poll::Ready(Err(reason.into()))
                }
                // Nothing else is reported before `Acquired`.
                Poll::Ready(Some(_)) => {}
                Poll::Ready(None) => return Poll::Ready(Err(Error::Closed)),
            }
        }
    }

    /// The next event. Cancel-safe.
    pub(crate) async fn next(&mut self) -> Option<LockEvent> {
        poll_fn(|cx| self.poll_next(cx)).await
    }

    /// Waits for an acquisition's grant. Cancel-safe: dropping the future loses
    /// nothing (the task goes on).
    pub(crate) async fn granted(&mut self) -> Result<Grant, Error> {
        poll_fn(|cx| self.poll_granted(cx)).await
    }

    /// Hands a granted acquisition to a guard.
    pub(crate) fn into_guard(mut self, grant: Grant) -> LockGuard {
        self.handed = true;
        LockGuard {
            client: self.client.clone(),
            id: self.id,
            grant,
            hold: Hold::Single,
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if self.handed {
            return;
        }
        let (id, done) = (self.id, self.done);
        self.client.shared().with(|s| {
            s.reentrant.remove(&id);
            match s.holds.get(&id) {
                // A reentrant mutex granted, never handed out, but re-entered
                // meanwhile: it is theirs now (the last of them releases it).
                Some(h) if h.count > 0 => return,
                Some(_) => drop(s.holds.remove(&id)),
                None => {}
            }
            if !done {
                // Waiting: cancelled; granted but never handed out: released.
                let now = s.now();
                let _ = s.core.cancel(id, now);
            }
            s.drop_slot(id);
        });
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
/// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
/// use futures::FutureExt;
/// let guard = locks.mutex("/locks/job").lock().await?;
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
    client: LockClient,
    id: LockId,
    grant: Grant,
    hold: Hold,
}

/// How a guard holds its lock: alone, or as one of the counted holds of a
/// [reentrant](crate::Mutex::reentrant) mutex (see `State::holds`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Hold {
    Single,
    Counted,
    /// A counted hold already given back (by `release`): its drop does nothing.
    Spent,
}

/// One more hold on a reentrant mutex held by the same owner on this session.
pub(crate) struct Holds {
    pub(crate) owner: String,
    pub(crate) path: String,
    pub(crate) grant: Grant,
    /// Guards alive on it; the node is released when the last one goes.
    pub(crate) count: usize,
}

impl LockGuard {
    /// Makes this fresh guard of a reentrant mutex the first counted hold of
    /// `owner` on its path.
    pub(crate) fn count_holds(mut self, owner: &str, path: &str) -> LockGuard {
        let (id, grant) = (self.id, &self.grant);
        self.client.shared().with_quiet(|s| {
            let holds = s.holds.entry(id).or_insert_with(|| Holds {
                owner: owner.to_owned(),
                path: path.to_owned(),
                grant: grant.clone(),
                count: 0,
            });
            holds.count += 1;
        });
        self.hold = Hold::Counted;
        self
    }

    /// Another counted hold on the reentrant mutex at `path` that `owner` holds
    /// (trusted or suspended) on this session, if it does.
    pub(crate) fn reenter(client: &LockClient, owner: &str, path: &str) -> Option<LockGuard> {
        client.shared().with_quiet(|s| {
            let (&id, holds) = s
                .holds
                .iter_mut()
                .find(|(_, h)| h.owner == owner && h.path == path)?;
            if !matches!(
                s.core.state(id),
                Some(LockState::Held | LockState::Suspended)
            ) {
                return None;
            }
            holds.count += 1;
            Some(LockGuard {
                client: client.clone(),
                id,
                grant: holds.grant.clone(),
                hold: Hold::Counted,
            })
        })
    }

    /// Gives back a counted hold: `true` if other holds remain (then nothing more
    /// is to be done); `false` for the last one (or a single hold), to be released.
    fn give_back(&mut self) -> bool {
        match self.hold {
            Hold::Single => false,
            Hold::Spent => true,
            Hold::Counted => {
                let id = self.id;
                let others = self
                    .client
                    .shared()
                    .with_quiet(|s| match s.holds.get_mut(&id) {
                        Some(h) if h.count > 1 => {
                            h.count -= 1;
                            true
                        }
                        _ => {
                            s.holds.remove(&id);
                            false
                        }
                    });
                self.hold = if others { Hold::Spent } else { Hold::Single };
                others
            }
        }
    }

    /// How many guards hold this lock: more than 1 for a
    /// [reentrant](crate::Mutex::reentrant) mutex its owner re-entered (the node is
    /// released when the last one goes), else 1.
    pub fn holds(&self) -> usize {
        match self.hold {
            Hold::Single | Hold::Spent => 1,
            Hold::Counted => self
                .client
                .shared()
                .read(|s| s.holds.get(&self.id).map_or(1, |h| h.count)),
        }
    }
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
    /// ```no_run
    /// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
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
    /// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
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
    /// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
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
    /// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
    /// use lock_client::LockStatus;
    /// let guard = locks.mutex("/locks/job").lock().await?;
    /// assert_eq!(guard.status(), LockStatus::Held);
    /// # Ok(()) }
    /// ```
    pub fn status(&self) -> LockStatus {
        self.client.shared().read(|s| match s.slots.get(&self.id) {
            Some(slot) => slot.status.clone(),
            None => LockStatus::Lost(LostReason::Closed),
        })
    }

    /// Whether the lock is held and trusted right now (not suspended, not lost).
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
    /// let guard = locks.mutex("/locks/job").lock().await?;
    /// if guard.is_trusted() { /* touch the resource */ }
    /// # Ok(()) }
    /// ```
    pub fn is_trusted(&self) -> bool {
        self.status() == LockStatus::Held
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
    /// ```no_run
    /// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
    /// use lock_core::LockEvent;
    /// let guard = locks.mutex("/locks/job").lock().await?;
    /// while let Some(event) = guard.next_event().await {
    ///     match event {
    ///         LockEvent::Suspended => eprintln!("connection down: pausing"),
    ///         LockEvent::Resumed => eprintln!("connection back: still ours"),
    ///         other => eprintln!("{other:?}"),
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn next_event(&self) -> Option<LockEvent> {
        let (client, id) = (&self.client, self.id);
        poll_fn(|cx| poll_event(client, id, cx)).await
    }

    /// Blocking twin of [`next_event`](Self::next_event).
    pub fn next_event_blocking(&self) -> Option<LockEvent> {
        crate::blocking::block_on(self.next_event())
    }

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
    /// ```no_run
    /// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
    /// let guard = locks.mutex("/locks/job").lock().await?;
    /// let reason = guard.lost().await; // e.g. an administrator deleted our node
    /// eprintln!("lost: {reason:?}");
    /// # Ok(()) }
    /// ```
    pub async fn lost(&self) -> LostReason {
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

    /// The reason, if the lock is lost; else registers the task to wake at the
    /// next event (without taking it).
    pub(crate) fn poll_lost(&self, cx: &mut Context<'_>) -> Option<LostReason> {
        self.client
            .shared()
            .with_quiet(|s| match s.slots.get_mut(&self.id) {
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

    /// Blocking twin of [`lost`](Self::lost).
    pub fn lost_blocking(&self) -> LostReason {
        crate::blocking::block_on(self.lost())
    }

    /// Waits until the lock is suspended (connection down) or lost, and returns the
    /// event. Cancel-safe.
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
    /// let guard = locks.mutex("/locks/job").lock().await?;
    /// let event = guard.suspended().await;
    /// eprintln!("stop trusting the lock: {event:?}");
    /// # Ok(()) }
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

    /// Blocking twin of [`suspended`](Self::suspended).
    pub fn suspended_blocking(&self) -> LockEvent {
        crate::blocking::block_on(self.suspended())
    }

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
    /// ```no_run
    /// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
    /// let guard = locks.mutex("/locks/job").lock().await?;
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn release(mut self) -> Result<(), Error> {
        if self.give_back() {
            // An inner hold of a reentrant mutex: the node stays for the others.
            return Ok(());
        }
        let id = self.id;
        let mut asked = false;
        poll_fn(|cx| {
            self.client.shared().update(|s| {
                let Some(slot) = s.slots.get_mut(&id) else {
                    return (Poll::Ready(Err(Error::Closed)), false);
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
                    return (Poll::Ready(result), false);
                }
                if slot.ended {
                    // The terminal event was read already.
                    let result = match &slot.status {
                        LockStatus::Lost(reason) => Err(Error::Lost(reason.clone())),
                        _ => Ok(()),
                    };
                    return (Poll::Ready(result), false);
                }
                slot.register(cx.waker());
                if asked {
                    return (Poll::Pending, false);
                }
                // The delete goes now (the link is woken); the terminal event answers.
                asked = true;
                let now = s.now();
                match s.core.release(id, now) {
                    Ok(()) => (Poll::Pending, true),
                    Err(e) => (Poll::Ready(Err(e.into())), false),
                }
            })
        })
        .await
    }

    /// Blocking twin of [`release`](Self::release).
    pub fn release_blocking(self) -> Result<(), Error> {
        crate::blocking::block_on(self.release())
    }

    /// Whether someone asked us to let go ([`LockClient::revoke`](crate::LockClient::revoke)): set once a
    /// [`LockEvent::RevocationRequested`] arrived, whether or not it was read. Only
    /// locks made [`revocable`](crate::Mutex::revocable) are ever asked.
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
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
        self.client.shared().read(|s| {
            s.slots
                .get(&self.id)
                .is_some_and(|s| s.revocation_requested)
        })
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
    /// ```no_run
    /// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
    /// let guard = locks.mutex("/locks/job").revocable().lock().await?;
    /// if guard.revocation_requested().await.is_ok() {
    ///     guard.release().await?; // cooperative: let the requester in
    /// }
    /// # Ok(()) }
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
                None => {
                    return Err(match self.status() {
                        LockStatus::Lost(reason) => reason,
                        _ => LostReason::Closed,
                    })
                }
            }
        }
    }

    /// Blocking twin of [`revocation_requested`](Self::revocation_requested).
    pub fn revocation_requested_blocking(&self) -> Result<(), LostReason> {
        crate::blocking::block_on(self.revocation_requested())
    }

    /// Like [`revocation_requested_blocking`](Self::revocation_requested_blocking),
    /// giving up with `None` once `timeout` has passed without a request or a loss.
    pub fn revocation_requested_timeout_blocking(
        &self,
        timeout: Duration,
    ) -> Option<Result<(), LostReason>> {
        crate::blocking::block_on_until(self.revocation_requested(), Some(Instant::now() + timeout))
    }

    /// For a lock with [crash detection](crate::Mutex::detect_crashes): whether a previous
    /// holder opened a critical section and never closed it (it died, was dropped
    /// inside it, or lost the lock in it). Repair what it left half done, then
    /// [`close_section`](Self::close_section) (or open a new one). Always `false`
    /// without crash detection.
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
    /// let guard = locks.mutex("/locks/ledger").detect_crashes().lock().await?;
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
    /// [`Error::Usage`] without [crash detection](crate::Mutex::detect_crashes);
    /// [`Error::Suspended`] if called while the lock is suspended (nothing sent: try
    /// again once resumed); [`Error::Lost`] if the lock is lost before the section
    /// could be marked.
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
    /// let guard = locks.mutex("/locks/ledger").detect_crashes().lock().await?;
    /// guard.open_section().await?;
    /// // ... several writes that must all happen, or be repaired ...
    /// guard.release().await?; // closes the section and releases, in one multi
    /// # Ok(()) }
    /// ```
    pub async fn open_section(&self) -> Result<(), Error> {
        self.section(true).await
    }

    /// Blocking twin of [`open_section`](Self::open_section).
    pub fn open_section_blocking(&self) -> Result<(), Error> {
        crate::blocking::block_on(self.open_section())
    }

    /// Closes the critical section: the work is consistent again. One round trip.
    ///
    /// # Errors
    /// As for [`open_section`](Self::open_section).
    ///
    /// ```no_run
    /// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
    /// let guard = locks.mutex("/locks/ledger").detect_crashes().lock().await?;
    /// guard.open_section().await?;
    /// // ... the delicate part ...
    /// guard.close_section().await?;
    /// // ... more work that needs the lock but no repair if interrupted ...
    /// # drop(guard); Ok(()) }
    /// ```
    pub async fn close_section(&self) -> Result<(), Error> {
        self.section(false).await
    }

    /// Blocking twin of [`close_section`](Self::close_section).
    pub fn close_section_blocking(&self) -> Result<(), Error> {
        crate::blocking::block_on(self.close_section())
    }

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
            if asked.is_ok() {
                if let Some(slot) = s.slots.get_mut(&id) {
                    slot.section = Some(None);
                }
            }
            asked
        });
        let result = match asked {
            Err(e) => Err(e.into()),
            Ok(()) => {
                poll_fn(|cx| {
                    shared.with_quiet(|s| match s.slots.get_mut(&id) {
                        None => Poll::Ready(Err(Error::Closed)),
                        Some(slot) => match slot.section.as_mut().and_then(Option::take) {
                            Some(result) => {
                                slot.section = None;
                                Poll::Ready(result)
                            }
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
    /// # async fn demo(locks: lock_client::LockClient) -> Result<(), Box<dyn std::error::Error>> {
    /// use lock_client::Writes;
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
        let id = self.id;
        let ops = writes.into().into_ops();
        let shared = self.client.shared();
        let write = shared.with(|s| {
            let now = s.now();
            // Not held (or not trusted: suspended): nothing was sent.
            let write = s.core.fenced_write(id, ops, now).ok()?;
            s.slots.get_mut(&id)?.writes.insert(write, None);
            Some(write)
        });
        let Some(write) = write else {
            return Err(FencedError::NotHeld);
        };
        poll_fn(|cx| {
            shared.with_quiet(|s| {
                let Some(slot) = s.slots.get_mut(&id) else {
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

impl Drop for LockGuard {
    fn drop(&mut self) {
        if self.give_back() {
            return;
        }
        let id = self.id;
        self.client.shared().with(|s| {
            if let Some(slot) = s.slots.get_mut(&id).filter(|slot| !slot.ended) {
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
            }
            s.drop_slot(id);
        });
    }
}

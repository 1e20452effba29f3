//! User-facing lock objects ([`Mutex`], [`RwLock`], [`Semaphore`]), [`PendingLock`]
//! and [`LockGuard`].

use crate::client::{Inner, LockClient};
use crate::driver::{Command, Task};
use crate::error::Error;
use lock_core::{FencingToken, Grant, LockEvent, LockSpec, LostReason, NameScheme, UsageError};
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex as StdMutex, MutexGuard};
use std::time::{Duration, Instant};

/// What the driver tells one acquisition.
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

/// The mailbox of one acquisition: the driver pushes, the handle waits.
pub(crate) struct Slot {
    state: StdMutex<SlotState>,
    changed: Condvar,
}

struct SlotState {
    notices: VecDeque<Notice>,
    status: LockStatus,
    /// The driver stopped: nothing more will come.
    gone: bool,
    /// The handle has seen the terminal event.
    ended: bool,
    /// The driver pushed the terminal event (read or not).
    finished: bool,
    /// The driver pushed `Acquired` (read or not).
    acquired: bool,
    /// The driver pushed `RevocationRequested` (read or not).
    revocation_requested: bool,
}

/// The outcome of waiting on a [`Slot`].
pub(crate) enum Next {
    Notice(Notice),
    /// The driver stopped (the client was closed).
    Gone,
    TimedOut,
}

impl Slot {
    pub(crate) fn new() -> Arc<Slot> {
        Arc::new(Slot {
            state: StdMutex::new(SlotState {
                notices: VecDeque::new(),
                status: LockStatus::Held,
                gone: false,
                ended: false,
                finished: false,
                acquired: false,
                revocation_requested: false,
            }),
            changed: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, SlotState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn push(&self, notice: Notice, status: Option<LockStatus>) {
        let mut state = self.lock();
        if let Some(status) = status {
            state.status = status;
        }
        if let Notice::Event(event) = &notice {
            match event {
                LockEvent::Acquired(_) => state.acquired = true,
                LockEvent::RevocationRequested => state.revocation_requested = true,
                _ => {}
            }
            if event.is_terminal() {
                state.finished = true;
            }
        }
        state.notices.push_back(notice);
        self.changed.notify_all();
    }

    pub(crate) fn set_gone(&self) {
        let mut state = self.lock();
        state.gone = true;
        if matches!(state.status, LockStatus::Held | LockStatus::Suspended) {
            state.status = LockStatus::Lost(LostReason::Closed);
        }
        self.changed.notify_all();
    }

    /// The next notice, waiting until `deadline` (forever if `None`).
    pub(crate) fn next(&self, deadline: Option<Instant>) -> Next {
        let mut state = self.lock();
        loop {
            if let Some(notice) = state.notices.pop_front() {
                if matches!(&notice, Notice::Event(e) if e.is_terminal()) {
                    state.ended = true;
                }
                return Next::Notice(notice);
            }
            if state.gone {
                return Next::Gone;
            }
            state = match deadline {
                None => self.changed.wait(state).unwrap_or_else(|p| p.into_inner()),
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Next::TimedOut;
                    }
                    self.changed
                        .wait_timeout(state, left)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
            };
        }
    }

    pub(crate) fn status(&self) -> LockStatus {
        self.lock().status.clone()
    }

    /// Whether the task was granted and has not ended (as pushed by the driver):
    /// `Held` or `Suspended`.
    pub(crate) fn is_holding(&self) -> bool {
        let state = self.lock();
        state.acquired
            && !state.finished
            && !state.gone
            && matches!(state.status, LockStatus::Held | LockStatus::Suspended)
    }

    /// Like [`is_holding`](Self::is_holding), and not suspended.
    pub(crate) fn is_trusted_holder(&self) -> bool {
        self.is_holding() && self.status() == LockStatus::Held
    }

    fn revocation_requested(&self) -> bool {
        self.lock().revocation_requested
    }

    /// Waits until the driver pushed the terminal event (or stopped).
    pub(crate) fn wait_finished(&self) {
        let mut state = self.lock();
        while !state.finished && !state.gone {
            state = self.changed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn set_status(&self, status: LockStatus) {
        self.lock().status = status;
    }

    pub(crate) fn ended(&self) -> bool {
        self.lock().ended
    }

    pub(crate) fn set_ended(&self) {
        self.lock().ended = true;
    }
}

/// Carries a [`Slot`] in an `Acquire` command. If the command is dropped unprocessed
/// (the driver stopped with it still queued), the slot is told, so nobody waits on it
/// forever.
pub(crate) struct Ticket(Option<Arc<Slot>>);

impl Ticket {
    pub(crate) fn take(&mut self) -> Option<Arc<Slot>> {
        self.0.take()
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if let Some(slot) = self.0.take() {
            slot.set_gone();
        }
    }
}

/// Starts a task in the driver: its key and the slot its events arrive in.
pub(crate) fn start_task(inner: &Inner, task: Task) -> Result<(u64, Arc<Slot>), Error> {
    let key = inner.next_key();
    let slot = Slot::new();
    inner.send(Command::Start {
        key,
        task,
        ticket: Ticket(Some(slot.clone())),
    })?;
    Ok((key, slot))
}

/// Starts an acquisition.
pub(crate) fn start(
    client: &LockClient,
    spec: LockSpec,
    deadline: Option<Instant>,
) -> Result<PendingLock, Error> {
    let inner = client.inner.clone();
    let (key, slot) = start_task(&inner, Task::Acquire { spec, deadline })?;
    Ok(PendingLock {
        inner: Some(inner),
        key,
        slot,
    })
}

/// An acquisition in progress, from the `start` methods: wait for it, with or
/// without a timeout, or give up. Dropping it gives up too (the node is removed in
/// the background; [`LockClient::wait_idle`] waits for that).
///
/// ```no_run
/// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
/// use std::time::Duration;
/// let mut pending = locks.mutex("/locks/job").start()?;
/// let stop = pending.canceller(); // e.g. for a signal handler or another thread
/// match pending.wait_timeout(Duration::from_secs(1)) {
///     Some(result) => drop(result?),
///     None => stop.cancel(), // still waiting: give up
/// }
/// # Ok(()) }
/// ```
#[must_use = "dropping a PendingLock gives up the acquisition"]
pub struct PendingLock {
    inner: Option<Arc<Inner>>,
    key: u64,
    slot: Arc<Slot>,
}

impl std::fmt::Debug for PendingLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingLock")
            .field("finished", &self.inner.is_none())
            .finish()
    }
}

impl PendingLock {
    /// Waits until the lock is held, or the acquisition fails.
    ///
    /// # Errors
    /// [`Error::Usage`] for an invalid path, [`Error::Timeout`] at the deadline,
    /// [`Error::Cancelled`] if cancelled, [`Error::SessionExpired`] if the session
    /// expired while waiting, [`Error::Closed`] once the client is closed.
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// let guard = locks.mutex("/locks/job").start()?.wait()?;
    /// # drop(guard); Ok(()) }
    /// ```
    pub fn wait(mut self) -> Result<LockGuard, Error> {
        match self.wait_until(None) {
            Some(result) => result,
            None => unreachable!("no deadline"),
        }
    }

    /// Waits at most `timeout`: `None` if the acquisition is still in progress (call
    /// again, or give up), `Some` with its outcome once it ended. After that, every
    /// call returns `Some(Err(Error::Cancelled))`.
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// use std::time::Duration;
    /// let mut pending = locks.mutex("/locks/job").start()?;
    /// let guard = loop {
    ///     if let Some(result) = pending.wait_timeout(Duration::from_millis(100)) {
    ///         break result?;
    ///     }
    ///     println!("still waiting");
    /// };
    /// # drop(guard); Ok(()) }
    /// ```
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<Result<LockGuard, Error>> {
        self.wait_until(Some(Instant::now() + timeout))
    }

    pub(crate) fn wait_until(
        &mut self,
        deadline: Option<Instant>,
    ) -> Option<Result<LockGuard, Error>> {
        if self.inner.is_none() {
            return Some(Err(Error::Cancelled));
        }
        loop {
            let result = match self.slot.next(deadline) {
                Next::TimedOut => return None,
                Next::Gone => Err(Error::Closed),
                Next::Notice(Notice::Refused(e)) => Err(e.into()),
                Next::Notice(Notice::Event(LockEvent::Failed(reason))) => Err(reason.into()),
                Next::Notice(Notice::Event(LockEvent::Acquired(grant))) => {
                    let inner = self.inner.take().expect("still pending");
                    return Some(Ok(LockGuard {
                        inner,
                        key: self.key,
                        grant,
                        slot: self.slot.clone(),
                    }));
                }
                // Nothing else is reported before the outcome.
                Next::Notice(Notice::Event(_)) => continue,
            };
            self.inner = None;
            return Some(result);
        }
    }

    /// Gives up. A waiting acquisition ends with [`Error::Cancelled`] and its node
    /// (even one whose create is still in flight) is deleted in the background.
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// let pending = locks.mutex("/locks/job").start()?;
    /// pending.cancel();
    /// locks.wait_idle()?; // the node is gone now
    /// # Ok(()) }
    /// ```
    pub fn cancel(self) {
        drop(self);
    }

    /// The driver's key of this acquisition and its mailbox (for elections).
    pub(crate) fn parts(&self) -> (u64, Arc<Slot>) {
        (self.key, self.slot.clone())
    }

    /// A handle that cancels this acquisition from anywhere (another thread, a
    /// signal handler) while it is still waiting; once the lock is held it does
    /// nothing (release the guard instead).
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// let pending = locks.mutex("/locks/job").start()?;
    /// let stop = pending.canceller();
    /// std::thread::spawn(move || stop.cancel());
    /// match pending.wait() {
    ///     Err(lock_zookeeper::Error::Cancelled) => println!("gave up"),
    ///     other => drop(other?),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn canceller(&self) -> Canceller {
        Canceller {
            inner: self.inner.clone(),
            key: self.key,
        }
    }
}

impl Drop for PendingLock {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            // Waiting: cancel. Granted but never handed out: release.
            let _ = inner.send(Command::Cancel {
                key: self.key,
                only_waiting: false,
            });
        }
    }
}

/// Cancels a [`PendingLock`] from another thread; see [`PendingLock::canceller`].
#[derive(Clone)]
pub struct Canceller {
    inner: Option<Arc<Inner>>,
    key: u64,
}

impl std::fmt::Debug for Canceller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Canceller").finish_non_exhaustive()
    }
}

impl Canceller {
    /// Cancels the acquisition if it is still waiting. Idempotent.
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// let pending = locks.mutex("/locks/job").start()?;
    /// pending.canceller().cancel();
    /// assert!(matches!(pending.wait(), Err(lock_zookeeper::Error::Cancelled) | Ok(_)));
    /// # Ok(()) }
    /// ```
    pub fn cancel(&self) {
        if let Some(inner) = &self.inner {
            let _ = inner.send(Command::Cancel {
                key: self.key,
                only_waiting: true,
            });
        }
    }
}

/// A held lock (or semaphore permit). Released by [`release`](Self::release), or in
/// the background when dropped.
///
/// The guard also reports what happens to the lock while held: ask
/// [`status`](Self::status) / [`is_trusted`](Self::is_trusted), or wait with
/// [`next_event`](Self::next_event), [`next_event_timeout`](Self::next_event_timeout),
/// [`suspended`](Self::suspended) or [`lost`](Self::lost). `Send + Sync`: one thread
/// can do the work while another waits for trouble.
///
/// ```no_run
/// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
/// let guard = locks.mutex("/locks/job").lock()?;
/// let token = guard.token(); // pass it to the resource you protect
/// std::thread::scope(|s| {
///     s.spawn(|| {
///         let event = guard.suspended(); // returns when ownership is in doubt
///         eprintln!("stop trusting the lock: {event:?}");
///     });
///     // ... work, checking guard.is_trusted() and sending `token` along ...
/// #   let _ = token;
/// });
/// guard.release()?;
/// # Ok(()) }
/// ```
#[must_use = "dropping a guard releases the lock"]
pub struct LockGuard {
    inner: Arc<Inner>,
    key: u64,
    grant: Grant,
    slot: Arc<Slot>,
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
    /// The fencing token: the `czxid` of our lock node. Successive holders of an
    /// exclusive lock get strictly increasing tokens; let the protected resource
    /// reject writes with a token lower than one it has seen.
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// let guard = locks.mutex("/locks/job").lock()?;
    /// println!("writing with token {}", guard.token());
    /// # Ok(()) }
    /// ```
    pub fn token(&self) -> FencingToken {
        self.grant.token
    }

    /// The full path of our lock node.
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// let guard = locks.mutex("/locks/job").lock()?;
    /// assert!(guard.path().starts_with("/locks/job/"));
    /// # Ok(()) }
    /// ```
    pub fn path(&self) -> &str {
        &self.grant.path
    }

    /// Everything the grant says: path, token, sequence number, session id.
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// let guard = locks.mutex("/locks/job").lock()?;
    /// assert_eq!(Some(guard.grant().session_id), locks.session_id());
    /// # Ok(()) }
    /// ```
    pub fn grant(&self) -> &Grant {
        &self.grant
    }

    /// Where the lock stands now (as last reported by the driver).
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// use lock_zookeeper::LockStatus;
    /// let guard = locks.mutex("/locks/job").lock()?;
    /// assert_eq!(guard.status(), LockStatus::Held);
    /// # Ok(()) }
    /// ```
    pub fn status(&self) -> LockStatus {
        self.slot.status()
    }

    /// Whether the lock is held and trusted right now (not suspended, not lost).
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// let guard = locks.mutex("/locks/job").lock()?;
    /// if guard.is_trusted() { /* touch the resource */ }
    /// # Ok(()) }
    /// ```
    pub fn is_trusted(&self) -> bool {
        self.status() == LockStatus::Held
    }

    /// Waits for the next thing that happens to the lock: [`LockEvent::Suspended`],
    /// [`LockEvent::Resumed`], [`LockEvent::RevocationRequested`], or the terminal
    /// [`LockEvent::Lost`]. `None` after the terminal event. Every event is seen once,
    /// by whichever caller takes it.
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// use lock_core::LockEvent;
    /// let guard = locks.mutex("/locks/job").lock()?;
    /// while let Some(event) = guard.next_event() {
    ///     match event {
    ///         LockEvent::Suspended => eprintln!("connection down: pausing"),
    ///         LockEvent::Resumed => eprintln!("connection back: still ours"),
    ///         other => eprintln!("{other:?}"),
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn next_event(&self) -> Option<LockEvent> {
        self.next_event_until(None)
    }

    /// Like [`next_event`](Self::next_event), waiting at most `timeout`: `None` if
    /// nothing happened meanwhile (or after the terminal event).
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// use std::time::Duration;
    /// let guard = locks.mutex("/locks/job").lock()?;
    /// if let Some(event) = guard.next_event_timeout(Duration::from_millis(10)) {
    ///     eprintln!("{event:?}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn next_event_timeout(&self, timeout: Duration) -> Option<LockEvent> {
        self.next_event_until(Some(Instant::now() + timeout))
    }

    fn next_event_until(&self, deadline: Option<Instant>) -> Option<LockEvent> {
        if self.slot.ended() {
            return None;
        }
        loop {
            match self.slot.next(deadline) {
                Next::Notice(Notice::Event(event)) => return Some(event),
                Next::Notice(Notice::Refused(_)) => {}
                Next::TimedOut => return None,
                Next::Gone => {
                    // The driver stopped (client closed): the session is gone.
                    self.slot.set_ended();
                    self.slot.set_status(LockStatus::Lost(LostReason::Closed));
                    return Some(LockEvent::Lost(LostReason::Closed));
                }
            }
        }
    }

    /// Waits until the lock is lost, and says why. Events before that (suspension,
    /// resumption) are consumed.
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// let guard = locks.mutex("/locks/job").lock()?;
    /// let reason = guard.lost(); // e.g. an administrator deleted our node
    /// eprintln!("lost: {reason:?}");
    /// # Ok(()) }
    /// ```
    pub fn lost(&self) -> LostReason {
        loop {
            match self.next_event() {
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

    /// Waits until the lock is suspended (connection down) or lost, and returns that
    /// event.
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// let guard = locks.mutex("/locks/job").lock()?;
    /// let event = guard.suspended();
    /// eprintln!("stop trusting the lock: {event:?}");
    /// # Ok(()) }
    /// ```
    pub fn suspended(&self) -> LockEvent {
        loop {
            match self.next_event() {
                Some(event @ (LockEvent::Suspended | LockEvent::Lost(_))) => return event,
                Some(_) => {}
                None => {
                    return LockEvent::Lost(match self.status() {
                        LockStatus::Lost(reason) => reason,
                        _ => LostReason::Closed,
                    })
                }
            }
        }
    }

    /// Whether someone asked us to let go ([`LockClient::revoke`]): set once a
    /// [`LockEvent::RevocationRequested`] arrived, whether or not it was read. Only
    /// locks made [`revocable`](Mutex::revocable) are ever asked.
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// let guard = locks.mutex("/locks/job").revocable().lock()?;
    /// for step in 0..100 {
    ///     if guard.is_revocation_requested() {
    ///         break; // someone needs the lock: stop at a consistent point
    ///     }
    ///     # let _ = step;
    /// }
    /// guard.release()?;
    /// # Ok(()) }
    /// ```
    pub fn is_revocation_requested(&self) -> bool {
        self.slot.revocation_requested()
    }

    /// Waits until someone asks us to let go ([`LockClient::revoke`] writes Curator's
    /// `__REVOKE__` into our node). The holder decides what to do, usually finish a
    /// step and release. Returns at once if a request arrived earlier, even if
    /// [`next_event`](Self::next_event) consumed it.
    ///
    /// Only locks made [`revocable`](Mutex::revocable) are asked; for the others this
    /// waits until the lock is lost. Events before the request (suspension,
    /// resumption) are consumed.
    ///
    /// # Errors
    /// The lock was lost before anyone asked (the reason).
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// let guard = locks.mutex("/locks/job").revocable().lock()?;
    /// if guard.revocation_requested().is_ok() {
    ///     guard.release()?; // cooperative: let the requester in
    /// }
    /// # Ok(()) }
    /// ```
    pub fn revocation_requested(&self) -> Result<(), LostReason> {
        match self.revocation_requested_until(None) {
            Some(result) => result,
            None => unreachable!("no deadline"),
        }
    }

    /// Like [`revocation_requested`](Self::revocation_requested), waiting at most
    /// `timeout`: `None` if nobody asked (and the lock was not lost) meanwhile.
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// use std::time::Duration;
    /// let guard = locks.mutex("/locks/job").revocable().lock()?;
    /// while guard.revocation_requested_timeout(Duration::from_millis(100)).is_none() {
    ///     // do a step of work
    /// }
    /// guard.release()?;
    /// # Ok(()) }
    /// ```
    pub fn revocation_requested_timeout(
        &self,
        timeout: Duration,
    ) -> Option<Result<(), LostReason>> {
        self.revocation_requested_until(Some(Instant::now() + timeout))
    }

    fn revocation_requested_until(
        &self,
        deadline: Option<Instant>,
    ) -> Option<Result<(), LostReason>> {
        loop {
            if self.is_revocation_requested() {
                return Some(Ok(()));
            }
            match self.next_event_until(deadline) {
                Some(LockEvent::RevocationRequested) => return Some(Ok(())),
                Some(LockEvent::Lost(reason)) => return Some(Err(reason)),
                Some(_) => {}
                None if self.slot.ended() => {
                    return Some(Err(match self.status() {
                        LockStatus::Lost(reason) => reason,
                        _ => LostReason::Closed,
                    }))
                }
                None => return None,
            }
        }
    }

    /// Releases the lock: deletes our node and waits for the server to confirm
    /// (across reconnects, if the connection is down meanwhile).
    ///
    /// # Errors
    /// [`Error::Lost`] if the lock had been lost before (whatever the guard protected
    /// may have overlapped another holder), [`Error::Closed`] if the client is
    /// closed, [`Error::Zk`] if ZooKeeper refused the delete.
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// let guard = locks.mutex("/locks/job").lock()?;
    /// guard.release()?;
    /// # Ok(()) }
    /// ```
    pub fn release(self) -> Result<(), Error> {
        // Anything already reported (a loss) decides without asking.
        loop {
            match self.slot.next(Some(Instant::now())) {
                Next::Notice(Notice::Event(LockEvent::Lost(reason))) => {
                    return Err(Error::Lost(reason))
                }
                Next::Notice(_) => {}
                Next::Gone => return Err(Error::Closed),
                Next::TimedOut => break,
            }
        }
        if self.slot.ended() {
            return match self.status() {
                LockStatus::Lost(reason) => Err(Error::Lost(reason)),
                _ => Ok(()),
            };
        }
        self.inner.send(Command::Release { key: self.key })?;
        loop {
            match self.slot.next(None) {
                Next::Notice(Notice::Event(LockEvent::Released)) => return Ok(()),
                Next::Notice(Notice::Event(LockEvent::Lost(reason))) => {
                    return Err(Error::Lost(reason))
                }
                Next::Notice(Notice::Event(LockEvent::Failed(reason))) => return Err(reason.into()),
                Next::Notice(Notice::Refused(UsageError::Closed)) | Next::Gone => {
                    return Err(Error::Closed)
                }
                Next::Notice(_) | Next::TimedOut => {}
            }
        }
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if !self.slot.ended() {
            // Whoever shares this slot (an `Election`) must stop trusting the lock
            // now, not when the driver confirms the delete.
            self.slot.set_status(LockStatus::Released);
            // Fire and forget: the driver deletes the node in the background (see
            // `LockClient::wait_idle`). After `release` this is a no-op.
            let _ = self.inner.send(Command::Cancel {
                key: self.key,
                only_waiting: false,
            });
        }
    }
}

/// The acquisition methods shared by every lock object.
macro_rules! lock_methods {
    ($what:literal) => {
        /// Waits until
        #[doc = $what]
        /// is held.
        ///
        /// # Errors
        /// [`Error::Usage`] for an invalid path, [`Error::Closed`] once the client is
        /// closed, [`Error::SessionExpired`] if the session expired while waiting.
        pub fn lock(&self) -> Result<LockGuard, Error> {
            self.start()?.wait()
        }

        /// Takes
        #[doc = $what]
        /// only if it is free at the first look; `Ok(None)` if busy. Does not wait
        /// for the lock, but may wait for ZooKeeper: [`Error::Timeout`] if no session
        /// could be used within the session timeout.
        pub fn try_lock(&self) -> Result<Option<LockGuard>, Error> {
            let deadline = Instant::now() + self.client.session_timeout();
            match start(&self.client, self.spec.clone().try_only(), Some(deadline))?.wait() {
                Ok(guard) => Ok(Some(guard)),
                Err(Error::WouldBlock) => Ok(None),
                Err(e) => Err(e),
            }
        }

        /// Like [`lock`](Self::lock), giving up with [`Error::Timeout`] after
        /// `timeout` (the node is removed).
        pub fn lock_timeout(&self, timeout: Duration) -> Result<LockGuard, Error> {
            self.lock_until(Instant::now() + timeout)
        }

        /// Like [`lock`](Self::lock), giving up with [`Error::Timeout`] at `deadline`.
        pub fn lock_until(&self, deadline: Instant) -> Result<LockGuard, Error> {
            start(&self.client, self.spec.clone(), Some(deadline))?.wait()
        }

        /// Starts acquiring without blocking; see [`PendingLock`].
        pub fn start(&self) -> Result<PendingLock, Error> {
            start(&self.client, self.spec.clone(), None)
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
        /// and decides; a waiter gives up its place, its acquisition failing with
        /// [`Error::Revoked`]. Curator's revocable locks interoperate.
        pub fn revocable(mut self) -> Self {
            self.spec = self.spec.revocable();
            self
        }

        /// A lease: once held for `max_hold`, the lock is taken away, whatever the
        /// holder is doing: the guard reports [`LostReason::LeaseExpired`] (see
        /// [`LockGuard::lost`]) and the node is deleted, letting the next waiter in.
        /// Fence the holder's writes with [`LockGuard::token`] to stop a late one.
        pub fn max_hold(mut self, max_hold: Duration) -> Self {
            self.spec = self.spec.max_hold(max_hold);
            self
        }
    };
}

/// An exclusive lock (a ZooKeeper write lock).
///
/// ```no_run
/// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
/// use std::time::Duration;
/// let job = locks.mutex("/locks/job");
/// match job.try_lock()? {
///     Some(guard) => guard.release()?,
///     None => println!("busy"),
/// }
/// let guard = job.lock_timeout(Duration::from_secs(5))?;
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

    lock_methods!("the lock");
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
/// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
/// let table = locks.rwlock("/locks/table");
/// let reader = table.read().lock()?;
/// assert!(table.write().try_lock()?.is_none()); // a reader holds it
/// reader.release()?;
/// let writer = table.write().lock()?;
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

    /// Makes both halves [revocable](ReadLock::revocable).
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// let table = locks.rwlock("/locks/table").revocable();
    /// let reader = table.read().lock()?;
    /// # drop(reader); Ok(()) }
    /// ```
    pub fn revocable(self) -> Self {
        RwLock {
            read: self.read.revocable(),
            write: self.write.revocable(),
        }
    }

    /// Gives both halves a [lease](ReadLock::max_hold) of `max_hold`.
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// use std::time::Duration;
    /// let table = locks.rwlock("/locks/table").max_hold(Duration::from_secs(60));
    /// let writer = table.write().lock()?;
    /// # drop(writer); Ok(()) }
    /// ```
    pub fn max_hold(self, max_hold: Duration) -> Self {
        RwLock {
            read: self.read.max_hold(max_hold),
            write: self.write.max_hold(max_hold),
        }
    }

    /// Names both halves' nodes with `scheme` (Curator's and kazoo's read/write
    /// locks are compatible).
    pub fn with_scheme(self, scheme: NameScheme) -> Self {
        RwLock {
            read: self.read.with_scheme(scheme),
            write: self.write.with_scheme(scheme),
        }
    }
}

/// The shared half of an [`RwLock`].
///
/// ```no_run
/// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
/// let reader = locks.rwlock("/locks/table").read().lock()?;
/// # drop(reader); Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct ReadLock {
    client: LockClient,
    spec: LockSpec,
}

impl ReadLock {
    lock_methods!("a read lock");
}

/// The exclusive half of an [`RwLock`].
///
/// ```no_run
/// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
/// let writer = locks.rwlock("/locks/table").write().lock()?;
/// # drop(writer); Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct WriteLock {
    client: LockClient,
    spec: LockSpec,
}

impl WriteLock {
    lock_methods!("the write lock");
}

/// A counting semaphore: at most `permits` holders at once.
///
/// ```no_run
/// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
/// let slots = locks.semaphore("/locks/gpu", 2);
/// let a = slots.lock()?;
/// let b = slots.lock()?;
/// assert!(slots.try_lock()?.is_none());
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

    lock_methods!("a permit");
}

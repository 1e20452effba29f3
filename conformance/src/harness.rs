//! The suite's client side: one implementation over lock-client's `LockClient`,
//! calling its public lock objects in the environment's [`Style`].

use crate::env::{Capability, Deployment, Env, Style};
use crate::Kind;
use lock_client::blocking::{block_on, block_on_until};
use lock_client::{
    BreakLock, Broken, Cycle, Election, ElectionEvent, ElectionObserver, Error, FencedError,
    Leadership, LockClient, LockGuard, LockStatus, PendingLock, Writes,
};
use lock_core::{Leader, LockEvent, LockSpec, LostReason, MultiResult, Participants, Stats};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// How long [`Suite::lock`] may wait for the lock.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Wait {
    /// Until held (`lock()`).
    Forever,
    /// Not at all (`try_lock()`): busy is [`Error::WouldBlock`].
    Try,
    /// At most this long (`lock_timeout()`): then [`Error::Timeout`].
    Timeout(Duration),
}

/// `$async` run to completion on this thread when the suite calls the async API, else
/// `$blocking`: the two twins of one lock-client call.
macro_rules! either {
    ($suite:expr, $async:expr, $blocking:expr) => {
        if $suite.is_async() {
            block_on($async)
        } else {
            $blocking
        }
    };
}

type Acquisition = Pin<Box<dyn Future<Output = Result<LockGuard, Error>> + Send>>;

/// An acquisition started by [`Suite::start`].
pub enum Pending {
    /// [`Style::Blocking`]: lock-client's handle.
    Blocking(PendingLock),
    /// [`Style::Async`]: the `acquire` future, polled once (which starts it).
    Async(Acquisition),
    /// [`Style::Async`]: it ended at the first poll.
    Ended(Result<LockGuard, Error>),
}

/// An [`Env`] with the client side of the suite: what each conformance test takes.
pub struct Suite {
    env: Box<dyn Env>,
}

impl Suite {
    /// The suite on `env`.
    pub fn new(env: impl Env + 'static) -> Suite {
        Suite { env: Box::new(env) }
    }

    /// Whether the environment lacks `capability`; if it does, says so on
    /// stderr by name (`not applicable: <capability> (<environment>)`), for a
    /// test that then checks nothing.
    pub fn lacks(&self, capability: Capability) -> bool {
        let lacks = !self.env.capabilities().contains(&capability);
        if lacks {
            eprintln!("not applicable: {capability:?} ({})", self.name());
        }
        lacks
    }

    /// The environment.
    pub fn env(&self) -> &dyn Env {
        &*self.env
    }

    /// For messages.
    pub fn name(&self) -> String {
        self.env.name()
    }

    fn is_async(&self) -> bool {
        self.env.style() == Style::Async
    }

    /// A client on `on`, with this session timeout; panics if it cannot connect.
    pub fn client_on(&self, on: &dyn Deployment, session_timeout: Duration) -> LockClient {
        on.client(session_timeout)
            .unwrap_or_else(|e| panic!("{}: connecting: {e}", self.name()))
    }

    /// A client at `cluster` ([`Env::client_at`]), with this session timeout;
    /// panics if the environment has none or it cannot connect.
    pub fn client_at(&self, cluster: &str, session_timeout: Duration) -> LockClient {
        self.env
            .client_at(cluster, session_timeout)
            .unwrap_or_else(|| panic!("{}: no Env::client_at", self.name()))
            .unwrap_or_else(|e| panic!("{}: connecting to {cluster}: {e}", self.name()))
    }

    /// Acquires `kind` on `path` through the public lock objects, waiting as `wait`
    /// says.
    pub fn lock(
        &self,
        client: &LockClient,
        kind: Kind,
        path: &str,
        wait: Wait,
    ) -> Result<LockGuard, Error> {
        macro_rules! with {
            ($lock:expr) => {{
                let lock = $lock;
                if self.is_async() {
                    block_on(async {
                        match wait {
                            Wait::Forever => lock.lock().await,
                            Wait::Timeout(d) => lock.lock_timeout(d).await,
                            Wait::Try => lock
                                .try_lock()
                                .await
                                .and_then(|g| g.ok_or(Error::WouldBlock)),
                        }
                    })
                } else {
                    match wait {
                        Wait::Forever => lock.lock_blocking(),
                        Wait::Timeout(d) => lock.lock_timeout_blocking(d),
                        Wait::Try => lock
                            .try_lock_blocking()
                            .and_then(|g| g.ok_or(Error::WouldBlock)),
                    }
                }
            }};
        }
        match kind {
            Kind::Mutex => with!(client.mutex(path)),
            Kind::WatchedMutex => with!(client.mutex(path).watch_node()),
            Kind::Read => with!(client.rwlock(path).read().clone()),
            Kind::Write => with!(client.rwlock(path).write().clone()),
            Kind::Semaphore(n) => with!(client.semaphore(path, n)),
        }
    }

    /// Starts acquiring `kind` on `path` without waiting.
    pub fn start(&self, client: &LockClient, kind: Kind, path: &str) -> Result<Pending, Error> {
        let spec = match kind {
            Kind::Mutex | Kind::Write => LockSpec::write(path),
            Kind::WatchedMutex => LockSpec::write(path).watch_node(),
            Kind::Read => LockSpec::read(path),
            Kind::Semaphore(n) => LockSpec::semaphore(path, n),
        };
        self.start_spec(client, spec)
    }

    /// Acquires any `spec` (`acquire`), waiting at most `within`.
    pub fn acquire(
        &self,
        client: &LockClient,
        spec: LockSpec,
        within: Duration,
    ) -> Result<LockGuard, Error> {
        let deadline = Some(Instant::now() + within);
        either!(
            self,
            client.acquire(spec, deadline),
            client.acquire_blocking(spec, deadline)
        )
    }

    /// Starts acquiring any `spec` without waiting (see [`start`](Self::start)).
    pub fn start_spec(&self, client: &LockClient, spec: LockSpec) -> Result<Pending, Error> {
        if !self.is_async() {
            return client.start(spec, None).map(Pending::Blocking);
        }
        let client = client.clone();
        let mut acquisition: Acquisition =
            Box::pin(async move { client.acquire(spec, None).await });
        // The first poll starts the acquisition; it goes on in the binding's loop
        // whether or not the future is polled again.
        match acquisition
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
        {
            Poll::Ready(result) => Ok(Pending::Ended(result)),
            Poll::Pending => Ok(Pending::Async(acquisition)),
        }
    }

    /// Waits at most `within` for a started acquisition to end; panics if it has
    /// not (every test expects it to end in time).
    pub fn finish(&self, pending: Pending, within: Duration) -> Result<LockGuard, Error> {
        let outcome = match pending {
            Pending::Ended(result) => Some(result),
            Pending::Blocking(mut p) => p.wait_timeout_blocking(within),
            Pending::Async(p) => block_on_until(p, Some(Instant::now() + within)),
        };
        outcome.unwrap_or_else(|| panic!("{}: acquisition pending after {within:?}", self.name()))
    }

    /// Whether a started acquisition is still under way after waiting `within` for
    /// it (if it ended, its outcome stays in `pending` for [`finish`](Self::finish)).
    pub fn still_pending(&self, pending: &mut Pending, within: Duration) -> bool {
        let outcome = match pending {
            Pending::Ended(_) => return false,
            Pending::Blocking(p) => p.wait_timeout_blocking(within),
            Pending::Async(p) => block_on_until(p.as_mut(), Some(Instant::now() + within)),
        };
        match outcome {
            None => true,
            Some(result) => {
                *pending = Pending::Ended(result);
                false
            }
        }
    }

    /// Gives up a started acquisition: `cancel()`, or dropping the future (its node
    /// is removed in the background, even one whose create is still in flight).
    pub fn cancel(&self, pending: Pending) {
        match pending {
            Pending::Blocking(p) => p.cancel(),
            other => drop(other),
        }
    }

    /// Whether the lock is held and trusted right now.
    pub fn is_trusted(&self, guard: &LockGuard) -> bool {
        if self.is_async() {
            guard.is_trusted()
        } else {
            guard.status() == LockStatus::Held
        }
    }

    /// The next event of a held lock, waiting at most `within`; `None` if nothing
    /// happened by then (`next_event` is cancel-safe: a timeout loses no event).
    pub fn next_event(&self, guard: &mut LockGuard, within: Duration) -> Option<LockEvent> {
        if self.is_async() {
            block_on_until(guard.next_event(), Some(Instant::now() + within)).flatten()
        } else {
            guard.next_event_timeout_blocking(within)
        }
    }

    /// Releases the lock and waits for the server to confirm.
    pub fn release(&self, guard: LockGuard) -> Result<(), Error> {
        either!(self, guard.release(), guard.release_blocking())
    }

    /// Writes `writes` only while the lock is held (one `multi` with a check of
    /// the lock node).
    pub fn fenced_write(
        &self,
        guard: &LockGuard,
        writes: Writes,
    ) -> Result<Vec<MultiResult>, FencedError> {
        either!(
            self,
            guard.fenced_write(writes),
            guard.fenced_write_blocking(writes)
        )
    }

    /// Opens (`open`) or closes a crash-detecting section on the guard's lock.
    pub fn section(&self, guard: &LockGuard, open: bool) -> Result<(), Error> {
        match (self.is_async(), open) {
            (true, true) => block_on(guard.open_section()),
            (true, false) => block_on(guard.close_section()),
            (false, true) => guard.open_section_blocking(),
            (false, false) => guard.close_section_blocking(),
        }
    }

    /// Breaks a participant of the lock at `path` (`LockClient::break_lock`).
    pub fn break_lock(
        &self,
        client: &LockClient,
        path: &str,
        what: BreakLock,
    ) -> Result<Broken, Error> {
        either!(
            self,
            client.break_lock(path, what),
            client.break_lock_blocking(path, what)
        )
    }

    /// Asks the holders of the lock at `path` (or the one participant whose node
    /// `path` is) to let go (`LockClient::revoke`): the nodes asked.
    pub fn revoke(&self, client: &LockClient, path: &str) -> Result<Vec<String>, Error> {
        either!(self, client.revoke(path), client.revoke_blocking(path))
    }

    /// Waits at most `within` for the holder to be asked to let go
    /// (`LockGuard::revocation_requested`; looks once even for a zero `within`);
    /// `Err` with the reason if the lock was lost first, `None` if neither came.
    pub fn revocation_requested(
        &self,
        guard: &LockGuard,
        within: Duration,
    ) -> Option<Result<(), LostReason>> {
        if self.is_async() {
            block_on_until(guard.revocation_requested(), Some(Instant::now() + within))
        } else {
            guard.revocation_requested_timeout_blocking(within)
        }
    }

    /// The participants of the lock at `path` (`LockClient::participants`).
    pub fn participants(&self, client: &LockClient, path: &str) -> Result<Participants, Error> {
        either!(
            self,
            client.participants(path),
            client.participants_blocking(path)
        )
    }

    /// The deadlock cycles under `root` (`LockClient::deadlocks`).
    pub fn deadlocks(&self, client: &LockClient, root: &str) -> Result<Vec<Cycle>, Error> {
        either!(
            self,
            client.deadlocks(root),
            client.deadlocks_blocking(root)
        )
    }

    /// Waits at most `within` for `election` to lead ([`Election::leadership`]);
    /// [`Error::Timeout`] if it does not by then (the candidacy stays).
    pub fn leadership(
        &self,
        election: &mut Election,
        within: Duration,
    ) -> Result<Leadership, Error> {
        if self.is_async() {
            block_on_until(election.leadership(), Some(Instant::now() + within))
                .unwrap_or(Err(Error::Timeout))
        } else {
            election.leadership_timeout_blocking(within)
        }
    }

    /// Waits at most `within` for the term to be lost, skipping `Suspended` and
    /// `Resumed`; `None` if it was not lost by then.
    pub fn leadership_lost(&self, leadership: &Leadership, within: Duration) -> Option<LostReason> {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let event = if self.is_async() {
                block_on_until(leadership.next_event(), Some(Instant::now() + left)).flatten()
            } else {
                leadership.next_event_timeout_blocking(left)
            };
            match event? {
                LockEvent::Lost(reason) => return Some(reason),
                _ => continue,
            }
        }
    }

    /// Resigns the term and waits for the server to confirm.
    pub fn resign(&self, leadership: Leadership) -> Result<(), Error> {
        either!(self, leadership.resign(), leadership.resign_blocking())
    }

    /// Ends the participant's candidacy and its term, if any
    /// ([`Election::resign`]).
    pub fn resign_participant(&self, election: Election) {
        either!(self, election.resign(), election.resign_blocking());
    }

    /// The participant's next event ([`Election::next_event`], which has no
    /// blocking twin); `None` if there is none within `within` or no term is
    /// left to report on.
    pub fn election_event(
        &self,
        election: &mut Election,
        within: Duration,
    ) -> Option<ElectionEvent> {
        block_on_until(election.next_event(), Some(Instant::now() + within)).flatten()
    }

    /// Follows the election at `path` ([`LockClient::observe_election`]).
    pub fn observe_election(&self, client: &LockClient, path: &str) -> ElectionObserver {
        let observer = either!(
            self,
            client.observe_election(path),
            client.observe_election_blocking(path)
        );
        observer.unwrap_or_else(|e| panic!("{}: observing {path}: {e}", self.name()))
    }

    /// The observer's next leader change within `within` (`None`: nobody leads).
    pub fn leader_changed(
        &self,
        observer: &mut ElectionObserver,
        within: Duration,
    ) -> Option<Leader> {
        let changed = if self.is_async() {
            block_on_until(observer.changed(), Some(Instant::now() + within))
                .unwrap_or(Err(Error::Timeout))
        } else {
            observer.changed_timeout_blocking(within)
        };
        changed.unwrap_or_else(|e| panic!("{}: no leader change: {e}", self.name()))
    }

    /// Closes the client (its session ends; its locks are lost with `Closed`).
    pub fn close(&self, client: &LockClient) {
        either!(self, client.close(), client.close_blocking());
    }

    /// Waits until the client has nothing in progress.
    pub fn wait_idle(&self, client: &LockClient) -> Result<(), Error> {
        either!(self, client.wait_idle(), client.wait_idle_blocking())
    }

    /// The core's counters for this client.
    pub fn stats(&self, client: &LockClient) -> Result<Stats, Error> {
        either!(self, client.stats(), client.stats_blocking())
    }
}

//! Leader election: participants ([`Election`], [`Leadership`]) and observers
//! ([`ElectionObserver`]).
//!
//! A participant is an ephemeral sequential node whose data is its id; the lowest one
//! leads. Each participant watches only its predecessor and an observer only the
//! leader, so a change of leader wakes exactly one participant and the observers.

use crate::client::{LockClient, Task};
use crate::error::Error;
use crate::guard::{LockGuard, Pending};
use crate::status::LockStatus;
use crate::writes::Writes;
use lock_core::{
    FailReason, FencedError, FencingToken, Grant, Leader, LockEvent, LockId, LockSpec, LostReason,
    MultiResult,
};
use std::future::poll_fn;
use std::task::Poll;
use std::time::{Duration, Instant};

/// What happens to an [`Election`] participant, from [`Election::next_event`].
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum ElectionEvent {
    /// This participant became the leader.
    Elected {
        /// Its fencing token (the `czxid` of its node): strictly greater than every
        /// earlier leader's.
        token: FencingToken,
        /// Its node.
        path: String,
    },
    /// The connection is down: leadership is not guaranteed until `Resumed`. Stop
    /// acting as the leader.
    Suspended,
    /// The connection is back and the node verified: leading again.
    Resumed,
    /// Leadership is lost (session expired, suspended too long, node deleted); this
    /// term is over. [`Election::leadership`] joins again.
    Lost(LostReason),
    /// This participant resigned (released its leadership, or withdrew while waiting).
    Resigned,
    /// The candidacy ended without leading (e.g. the session expired while waiting);
    /// [`Election::leadership`] joins again.
    Failed(Error),
}

struct Term {
    id: LockId,
    /// Its terminal event was read from the participant's stream.
    ended: bool,
}

/// A participant in the leader election at a path, from [`LockClient::election`].
///
/// It joins when created (its node goes at the back of the queue) and stays until it
/// [resigns](Self::resign) or is dropped. [`leadership`](Self::leadership) waits until
/// it leads and hands out a [`Leadership`] guard for the term; when a term ends (lost
/// or resigned), `leadership` joins again.
///
/// Dropping the participant withdraws a waiting candidacy; a [`Leadership`] already
/// handed out leads until it is resigned or dropped.
///
/// ```
/// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
/// use futures::FutureExt;
/// let mut election = locks.election("/services/scheduler/leader", "node-1");
/// loop {
///     let leadership = election.leadership().await?;
///     let token = leadership.token();
///     println!("leading with token {token}");
///     let done = futures::select! {
///         reason = leadership.lost().fuse() => { eprintln!("lost: {reason:?}"); false }
///         _ = lead(token).fuse() => true,
///     };
///     if done {
///         leadership.resign().await?;
///         break;
///     }
/// }
/// # Ok(()) }
/// # async fn lead(_: lock_core::FencingToken) {}
/// # futures::executor::block_on(demo(lock_sim::Server::new().client())).unwrap();
/// ```
pub struct Election {
    client: LockClient,
    spec: LockSpec,
    /// This participant's event queue in the shared state (every term's events).
    queue: u64,
    /// The current candidacy while it waits (until handed to a `Leadership`).
    candidacy: Option<Pending>,
    term: Option<Term>,
}

impl std::fmt::Debug for Election {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Election")
            .field("path", &self.spec.path())
            .field("is_leader", &self.is_leader())
            .finish()
    }
}

impl Election {
    pub(crate) fn new(client: LockClient, path: String, participant: Vec<u8>) -> Election {
        let queue = client.shared().with_quiet(|s| s.new_election());
        let mut election = Election {
            client,
            spec: LockSpec::leader(path, participant),
            queue,
            candidacy: None,
            term: None,
        };
        // A closed client or bad input shows at `leadership()`.
        let _ = election.join();
        election
    }

    fn join(&mut self) -> Result<(), Error> {
        let task = Task::Acquire {
            reentrant: false,
            spec: self.spec.clone(),
            deadline: None,
        };
        let id = self.client.start_task(task, Some(self.queue))?;
        self.term = Some(Term { id, ended: false });
        self.candidacy = Some(Pending::new(self.client.clone(), id));
        Ok(())
    }

    /// Whether the term's slot says `f`.
    fn term_is(&self, f: impl FnOnce(bool, &LockStatus) -> bool) -> bool {
        let Some(term) = &self.term else { return false };
        self.client.shared().read(|s| {
            s.slots
                .get(&term.id)
                .is_some_and(|slot| f(slot.acquired, &slot.status))
        })
    }

    /// The election directory.
    ///
    /// ```
    /// # fn demo(locks: lock_client::LockClient) {
    /// assert_eq!(locks.election("/svc/leader", "a").path(), "/svc/leader");
    /// # }
    /// # demo(lock_sim::Server::new().client());
    /// ```
    pub fn path(&self) -> &str {
        self.spec.path()
    }

    /// Whether this participant leads right now, trusted (elected, not suspended,
    /// not lost, not resigned).
    ///
    /// ```
    /// # async fn demo(locks: lock_client::LockClient) {
    /// let election = locks.election("/svc/leader", "node-1");
    /// if election.is_leader() { /* act as the leader */ }
    /// # }
    /// # futures::executor::block_on(demo(lock_sim::Server::new().client()));
    /// ```
    pub fn is_leader(&self) -> bool {
        self.term_is(|acquired, status| acquired && *status == LockStatus::Held)
    }

    /// Waits until this participant leads and returns the [`Leadership`] for the
    /// term. If the previous term ended (lost, resigned, failed), joins again first
    /// (at the back of the queue).
    ///
    /// Cancel-safe: dropping the future keeps the candidacy (call again to go on
    /// waiting).
    ///
    /// # Errors
    /// [`Error::Usage`] for an invalid path or empty participant id, or if this
    /// participant leads already (use its `Leadership`); [`Error::SessionExpired`] if
    /// the session expired while waiting (calling again joins on the new session);
    /// [`Error::Closed`] once the client is closed.
    ///
    /// ```
    /// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
    /// let mut election = locks.election("/svc/leader", "node-1");
    /// let leadership = election.leadership().await?;
    /// assert!(election.is_leader());
    /// # drop(leadership); Ok(()) }
    /// # futures::executor::block_on(demo(lock_sim::Server::new().client())).unwrap();
    /// ```
    pub async fn leadership(&mut self) -> Result<Leadership, Error> {
        if !self.candidacy.as_ref().is_some_and(Pending::is_live) {
            let leading = self.term_is(|acquired, status| {
                acquired && matches!(status, LockStatus::Held | LockStatus::Suspended)
            });
            if leading {
                return Err(Error::Usage(lock_core::UsageError::Unsupported(
                    "this participant leads already: use its Leadership",
                )));
            }
            self.join()?;
        }
        let candidacy = self.candidacy.as_mut().expect("joined");
        let grant = candidacy.granted().await?;
        let started = self.candidacy.take().expect("joined");
        Ok(Leadership {
            guard: started.into_guard(grant),
        })
    }

    /// Blocking twin of [`leadership`](Self::leadership).
    pub fn leadership_blocking(&mut self) -> Result<Leadership, Error> {
        crate::blocking::block_on(self.leadership())
    }

    /// Like [`leadership_blocking`](Self::leadership_blocking), giving up with
    /// [`Error::Timeout`] after `timeout` (the candidacy stays: call again to go on
    /// waiting).
    ///
    /// # Errors
    /// As for [`leadership`](Self::leadership), and [`Error::Timeout`].
    pub fn leadership_timeout_blocking(&mut self, timeout: Duration) -> Result<Leadership, Error> {
        crate::blocking::block_on_until(self.leadership(), Some(Instant::now() + timeout))
            .unwrap_or(Err(Error::Timeout))
    }

    /// The next thing that happens to this participant, across terms:
    /// [`ElectionEvent::Elected`], `Suspended`, `Resumed`, and per term one of `Lost`,
    /// `Resigned`, `Failed`. `None` when no term is going on and nothing is left to
    /// read. Independent of the [`Leadership`]'s own
    /// [`next_event`](Leadership::next_event). Cancel-safe.
    ///
    /// ```
    /// # async fn demo(locks: lock_client::LockClient) {
    /// use lock_client::ElectionEvent;
    /// let mut election = locks.election("/svc/leader", "node-1");
    /// while let Some(event) = election.next_event().await {
    ///     match event {
    ///         ElectionEvent::Elected { token, .. } => println!("leading ({token})"),
    ///         ElectionEvent::Suspended => println!("pausing"),
    ///         other => println!("{other:?}"),
    ///     }
    /// #   break; // the stream follows the election for as long as it runs
    /// }
    /// # }
    /// # futures::executor::block_on(demo(lock_sim::Server::new().client()));
    /// ```
    pub async fn next_event(&mut self) -> Option<ElectionEvent> {
        loop {
            let live = self.term.as_ref().is_some_and(|t| !t.ended);
            let queue = self.queue;
            let (key, event) = poll_fn(|cx| {
                self.client.shared().with_quiet(|s| {
                    let Some(q) = s.elections.get_mut(&queue) else {
                        return Poll::Ready(None);
                    };
                    match q.events.pop_front() {
                        Some(tagged) => Poll::Ready(Some(tagged)),
                        // The live term's terminal event is still to come.
                        None if live => {
                            q.register(cx.waker());
                            Poll::Pending
                        }
                        None => Poll::Ready(None),
                    }
                })
            })
            .await?;
            if event.is_terminal() {
                if let Some(term) = self.term.as_mut().filter(|t| t.id == key) {
                    term.ended = true;
                }
            }
            let mapped = match event {
                LockEvent::Acquired(grant) => ElectionEvent::Elected {
                    token: grant.token,
                    path: grant.path,
                },
                LockEvent::Suspended => ElectionEvent::Suspended,
                LockEvent::Resumed => ElectionEvent::Resumed,
                LockEvent::Lost(reason) => ElectionEvent::Lost(reason),
                LockEvent::Released | LockEvent::Failed(FailReason::Cancelled) => {
                    ElectionEvent::Resigned
                }
                LockEvent::Failed(reason) => ElectionEvent::Failed(reason.into()),
                _ => continue,
            };
            return Some(mapped);
        }
    }

    /// Blocking twin of [`next_event`](Self::next_event).
    pub fn next_event_blocking(&mut self) -> Option<ElectionEvent> {
        crate::blocking::block_on(self.next_event())
    }

    /// Leaves the election: withdraws a waiting candidacy, or ends the leadership of
    /// the current term (its [`Leadership`] then reports it released). Returns once
    /// the node is deleted (or the term had ended anyway).
    ///
    /// ```
    /// # async fn demo(locks: lock_client::LockClient) {
    /// let election = locks.election("/svc/leader", "node-1");
    /// election.resign().await;
    /// # }
    /// # futures::executor::block_on(demo(lock_sim::Server::new().client()));
    /// ```
    pub async fn resign(mut self) {
        let Some(id) = self.term.as_ref().filter(|t| !t.ended).map(|t| t.id) else {
            return;
        };
        match self.candidacy.take() {
            // Dropping a waiting candidacy cancels it.
            Some(candidacy) if candidacy.is_live() => drop(candidacy),
            _ => self.client.shared().with(|s| {
                let now = s.now();
                let _ = s.core.cancel(id, now);
            }),
        }
        while self.term.as_ref().is_some_and(|t| !t.ended) {
            if self.next_event().await.is_none() {
                break;
            }
        }
    }

    /// Blocking twin of [`resign`](Self::resign).
    pub fn resign_blocking(self) {
        crate::blocking::block_on(self.resign())
    }
}

impl Drop for Election {
    fn drop(&mut self) {
        // A waiting candidacy is cancelled by its own drop; a handed-out
        // `Leadership` lives on.
        let queue = self.queue;
        self.client
            .shared()
            .with_quiet(|s| s.elections.remove(&queue));
    }
}

/// The leadership of an [`Election`] participant for one term, from
/// [`Election::leadership`]: like a [`LockGuard`] (a fencing token, events, loss,
/// fenced writes). Resigned by [`resign`](Self::resign), or in the background when
/// dropped.
///
/// ```
/// # async fn demo(locks: lock_client::LockClient, server: lock_sim::Server) -> Result<(), lock_client::Error> {
/// use lock_core::LockEvent;
/// let mut election = locks.election("/svc/leader", "node-1");
/// let leadership = election.leadership().await?;
/// # server.disconnect(&locks, std::time::Duration::from_millis(100));
/// match leadership.next_event().await {
///     Some(LockEvent::Suspended) => println!("stop leading until resumed"),
///     other => println!("{other:?}"),
/// }
/// # Ok(()) }
/// # let server = lock_sim::Server::new();
/// # futures::executor::block_on(demo(server.client(), server.clone())).unwrap();
/// ```
#[derive(Debug)]
#[must_use = "dropping a Leadership resigns"]
pub struct Leadership {
    guard: LockGuard,
}

impl Leadership {
    /// The leader's fencing token (the `czxid` of its node): every later leader's is
    /// greater. Pass it along with the leader's writes so stale leaders are rejected.
    ///
    /// ```
    /// # async fn demo(mut election: lock_client::Election) -> Result<(), lock_client::Error> {
    /// let leadership = election.leadership().await?;
    /// println!("epoch {}", leadership.token());
    /// # drop(leadership); Ok(()) }
    /// # futures::executor::block_on(demo(lock_sim::Server::new().client().election("/svc/leader", "node-1"))).unwrap();
    /// ```
    pub fn token(&self) -> FencingToken {
        self.guard.token()
    }

    /// The leader's node.
    ///
    /// ```
    /// # async fn demo(mut election: lock_client::Election) -> Result<(), lock_client::Error> {
    /// let leadership = election.leadership().await?;
    /// assert!(leadership.path().starts_with(election.path()));
    /// # drop(leadership); Ok(()) }
    /// # futures::executor::block_on(demo(lock_sim::Server::new().client().election("/svc/leader", "node-1"))).unwrap();
    /// ```
    pub fn path(&self) -> &str {
        self.guard.path()
    }

    /// Everything the term was granted: path, token, sequence number, session.
    ///
    /// ```
    /// # async fn demo(mut election: lock_client::Election) -> Result<(), lock_client::Error> {
    /// let leadership = election.leadership().await?;
    /// println!("session {:#x}", leadership.grant().session_id);
    /// # drop(leadership); Ok(()) }
    /// # futures::executor::block_on(demo(lock_sim::Server::new().client().election("/svc/leader", "node-1"))).unwrap();
    /// ```
    pub fn grant(&self) -> &Grant {
        self.guard.grant()
    }

    /// The latest status (see [`LockGuard::status`]).
    ///
    /// ```
    /// # async fn demo(mut election: lock_client::Election) -> Result<(), lock_client::Error> {
    /// use lock_client::LockStatus;
    /// let leadership = election.leadership().await?;
    /// assert_eq!(leadership.status(), LockStatus::Held);
    /// # drop(leadership); Ok(()) }
    /// # futures::executor::block_on(demo(lock_sim::Server::new().client().election("/svc/leader", "node-1"))).unwrap();
    /// ```
    pub fn status(&self) -> LockStatus {
        self.guard.status()
    }

    /// Whether this is the leader right now, trusted (not suspended, not lost).
    ///
    /// ```
    /// # async fn demo(mut election: lock_client::Election) -> Result<(), lock_client::Error> {
    /// let leadership = election.leadership().await?;
    /// if leadership.is_trusted() { /* act as the leader */ }
    /// # drop(leadership); Ok(()) }
    /// # futures::executor::block_on(demo(lock_sim::Server::new().client().election("/svc/leader", "node-1"))).unwrap();
    /// ```
    pub fn is_trusted(&self) -> bool {
        self.guard.is_trusted()
    }

    /// The next thing that happens to the term: [`LockEvent::Suspended`],
    /// [`LockEvent::Resumed`], or the terminal [`LockEvent::Lost`]. `None` after the
    /// terminal event. Cancel-safe. (See also [`Election::next_event`].)
    ///
    /// ```
    /// # async fn demo(locks: lock_client::LockClient, server: lock_sim::Server) -> Result<(), lock_client::Error> {
    /// # let mut election = locks.election("/svc/leader", "node-1");
    /// let leadership = election.leadership().await?;
    /// # server.expire(&locks);
    /// while let Some(event) = leadership.next_event().await {
    ///     println!("{event:?}");
    /// }
    /// # Ok(()) }
    /// # let server = lock_sim::Server::new();
    /// # futures::executor::block_on(demo(server.client(), server.clone())).unwrap();
    /// ```
    pub async fn next_event(&self) -> Option<LockEvent> {
        self.guard.next_event().await
    }

    /// Blocking twin of [`next_event`](Self::next_event).
    pub fn next_event_blocking(&self) -> Option<LockEvent> {
        crate::blocking::block_on(self.next_event())
    }

    /// Like [`next_event_blocking`](Self::next_event_blocking), giving up with
    /// `None` once `timeout` has passed without an event (none is lost).
    pub fn next_event_timeout_blocking(&self, timeout: Duration) -> Option<LockEvent> {
        self.guard.next_event_timeout_blocking(timeout)
    }

    /// Waits until leadership is suspended (connection down) or lost, and returns the
    /// event: stop acting as the leader. Cancel-safe.
    ///
    /// ```
    /// # async fn demo(locks: lock_client::LockClient, server: lock_sim::Server) -> Result<(), lock_client::Error> {
    /// # let mut election = locks.election("/svc/leader", "node-1");
    /// let leadership = election.leadership().await?;
    /// # server.disconnect(&locks, std::time::Duration::from_millis(100));
    /// let event = leadership.suspended().await;
    /// eprintln!("not trusted any more: {event:?}");
    /// # Ok(()) }
    /// # let server = lock_sim::Server::new();
    /// # futures::executor::block_on(demo(server.client(), server.clone())).unwrap();
    /// ```
    pub async fn suspended(&self) -> LockEvent {
        self.guard.suspended().await
    }

    /// Blocking twin of [`suspended`](Self::suspended).
    pub fn suspended_blocking(&self) -> LockEvent {
        crate::blocking::block_on(self.suspended())
    }

    /// Waits until leadership is lost, and says why. Cancel-safe.
    ///
    /// ```
    /// # async fn demo(locks: lock_client::LockClient, server: lock_sim::Server) -> Result<(), lock_client::Error> {
    /// # let mut election = locks.election("/svc/leader", "node-1");
    /// let leadership = election.leadership().await?;
    /// # server.expire(&locks);
    /// let reason = leadership.lost().await;
    /// eprintln!("lost leadership: {reason:?}");
    /// # Ok(()) }
    /// # let server = lock_sim::Server::new();
    /// # futures::executor::block_on(demo(server.client(), server.clone())).unwrap();
    /// ```
    pub async fn lost(&self) -> LostReason {
        self.guard.lost().await
    }

    /// Blocking twin of [`lost`](Self::lost).
    pub fn lost_blocking(&self) -> LostReason {
        crate::blocking::block_on(self.lost())
    }

    /// ZooKeeper writes applied only while this is the leader (see
    /// [`LockGuard::fenced_write`]).
    ///
    /// # Errors
    /// [`FencedError::NotHeld`] once leadership is lost or suspended (nothing written).
    ///
    /// ```
    /// # async fn demo(mut election: lock_client::Election) -> Result<(), Box<dyn std::error::Error>> {
    /// use lock_client::Writes;
    /// let leadership = election.leadership().await?;
    /// # leadership.fenced_write(Writes::new().create("/svc/assignments", b"")).await?;
    /// leadership.fenced_write(Writes::new().set_data("/svc/assignments", b"...")).await?;
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(lock_sim::Server::new().client().election("/svc/leader", "node-1"))).unwrap();
    /// ```
    pub async fn fenced_write(
        &self,
        writes: impl Into<Writes>,
    ) -> Result<Vec<MultiResult>, FencedError> {
        self.guard.fenced_write(writes).await
    }

    /// Blocking twin of [`fenced_write`](Self::fenced_write).
    pub fn fenced_write_blocking(
        &self,
        writes: impl Into<Writes>,
    ) -> Result<Vec<MultiResult>, FencedError> {
        crate::blocking::block_on(self.fenced_write(writes))
    }

    /// Resigns: deletes the leader's node (the next participant is elected) and waits
    /// for the server to confirm.
    ///
    /// # Errors
    /// As for [`LockGuard::release`]: [`Error::Lost`] if leadership had been lost.
    ///
    /// ```
    /// # async fn demo(mut election: lock_client::Election) -> Result<(), lock_client::Error> {
    /// let leadership = election.leadership().await?;
    /// leadership.resign().await?;
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(lock_sim::Server::new().client().election("/svc/leader", "node-1"))).unwrap();
    /// ```
    pub async fn resign(self) -> Result<(), Error> {
        self.guard.release().await
    }

    /// Blocking twin of [`resign`](Self::resign).
    pub fn resign_blocking(self) -> Result<(), Error> {
        crate::blocking::block_on(self.resign())
    }
}

/// Follows who leads an election without taking part, from
/// [`LockClient::observe_election`]. Watches only the leader's node, so followers
/// joining or leaving wake nobody. Dropping it stops observing.
///
/// ```
/// # async fn demo(locks: lock_client::LockClient, server: lock_sim::Server) -> Result<(), lock_client::Error> {
/// let mut observer = locks.observe_election("/svc/leader").await?;
/// # let _leader = server.client().election("/svc/leader", "node-2").leadership().await?;
/// loop {
///     match observer.leader() {
///         Some(leader) => println!(
///             "leader {} (token {})",
///             String::from_utf8_lossy(&leader.id),
///             leader.token
///         ),
///         None => println!("no leader"),
///     }
///     observer.changed().await?;
/// #     break;
/// }
/// # Ok(()) }
/// # let server = lock_sim::Server::new();
/// # futures::executor::block_on(demo(server.client(), server.clone())).unwrap();
/// ```
pub struct ElectionObserver {
    started: Pending,
    leader: Option<Leader>,
    participants: usize,
}

impl std::fmt::Debug for ElectionObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ElectionObserver")
            .field("leader", &self.leader)
            .field("participants", &self.participants)
            .finish()
    }
}

impl ElectionObserver {
    pub(crate) async fn start(client: &LockClient, path: String) -> Result<Self, Error> {
        let mut observer = ElectionObserver {
            started: Pending::new(
                client.clone(),
                client.start_task(Task::Observe(path), None)?,
            ),
            leader: None,
            participants: 0,
        };
        observer.changed().await?;
        Ok(observer)
    }

    /// The current leader (its node, participant id and fencing token), as last
    /// seen; `None` if nobody participates.
    ///
    /// ```
    /// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
    /// let observer = locks.observe_election("/svc/leader").await?;
    /// if let Some(leader) = observer.leader() {
    ///     println!("{} leads", String::from_utf8_lossy(&leader.id));
    /// }
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(lock_sim::Server::new().client())).unwrap();
    /// ```
    pub fn leader(&self) -> Option<&Leader> {
        self.leader.as_ref()
    }

    /// The number of participants (leader included) seen when the leader last
    /// changed.
    ///
    /// ```
    /// # async fn demo(locks: lock_client::LockClient) -> Result<(), lock_client::Error> {
    /// let observer = locks.observe_election("/svc/leader").await?;
    /// println!("{} participants", observer.participants());
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(lock_sim::Server::new().client())).unwrap();
    /// ```
    pub fn participants(&self) -> usize {
        self.participants
    }

    /// Waits for the next change of leader and returns the new one (`None`: nobody
    /// leads). Cancel-safe.
    ///
    /// # Errors
    /// [`Error::Closed`] once the client is closed; [`Error::Usage`] for an invalid
    /// path (at the first call, from [`LockClient::observe_election`]).
    ///
    /// ```
    /// # async fn demo(locks: lock_client::LockClient, server: lock_sim::Server) -> Result<(), lock_client::Error> {
    /// let mut observer = locks.observe_election("/svc/leader").await?;
    /// # let _leader = server.client().election("/svc/leader", "node-2").leadership().await?;
    /// let next = observer.changed().await?;
    /// println!("new leader: {:?}", next.map(|l| l.id));
    /// # Ok(()) }
    /// # let server = lock_sim::Server::new();
    /// # futures::executor::block_on(demo(server.client(), server.clone())).unwrap();
    /// ```
    pub async fn changed(&mut self) -> Result<Option<Leader>, Error> {
        loop {
            match self.started.next().await {
                Some(LockEvent::LeaderChanged {
                    leader,
                    participants,
                }) => {
                    self.leader = leader.clone();
                    self.participants = participants;
                    return Ok(leader);
                }
                Some(LockEvent::Failed(reason)) => return Err(reason.into()),
                Some(_) => {}
                None => return Err(Error::Closed),
            }
        }
    }

    /// Blocking twin of [`changed`](Self::changed).
    pub fn changed_blocking(&mut self) -> Result<Option<Leader>, Error> {
        crate::blocking::block_on(self.changed())
    }

    /// Like [`changed_blocking`](Self::changed_blocking), giving up with
    /// [`Error::Timeout`] after `timeout` without a change.
    ///
    /// # Errors
    /// As for [`changed`](Self::changed), and [`Error::Timeout`].
    pub fn changed_timeout_blocking(&mut self, timeout: Duration) -> Result<Option<Leader>, Error> {
        crate::blocking::block_on_until(self.changed(), Some(Instant::now() + timeout))
            .unwrap_or(Err(Error::Timeout))
    }
}

//! Leader election: participants ([`Election`], [`Leadership`]) and observers
//! ([`ElectionObserver`]).
//!
//! A participant is an ephemeral sequential node whose data is its id; the lowest one
//! leads. Each participant watches only its predecessor and an observer only the
//! leader, so a change of leader wakes exactly one participant and the observers.

use crate::client::{Inner, LockClient};
use crate::driver::{Command, Task};
use crate::error::Error;
use crate::lock::{start, start_task, LockGuard, LockStatus, Next, Notice, PendingLock, Slot};
use lock_core::{FencingToken, Grant, Leader, LockEvent, LockSpec, LostReason, UsageError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One candidacy (and, once elected, term) of a participant.
struct Term {
    key: u64,
    slot: Arc<Slot>,
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
/// ```no_run
/// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
/// let mut election = locks.election("/services/scheduler/leader", "node-1");
/// let leadership = election.leadership()?; // waits until elected
/// println!("leading with token {}", leadership.token());
/// // ... lead, until done or `leadership.lost()` says otherwise ...
/// leadership.resign()?;
/// # Ok(()) }
/// ```
pub struct Election {
    client: LockClient,
    spec: LockSpec,
    /// The current candidacy while it waits (until handed to a `Leadership`).
    candidacy: Option<PendingLock>,
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
        let mut election = Election {
            client,
            spec: LockSpec::leader(path, participant),
            candidacy: None,
            term: None,
        };
        // A closed client or bad input shows at `leadership()`.
        let _ = election.join();
        election
    }

    fn join(&mut self) -> Result<(), Error> {
        let pending = start(&self.client, self.spec.clone(), None)?;
        let (key, slot) = pending.parts();
        self.term = Some(Term { key, slot });
        self.candidacy = Some(pending);
        Ok(())
    }

    /// The election directory.
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) {
    /// assert_eq!(locks.election("/svc/leader", "a").path(), "/svc/leader");
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        self.spec.path()
    }

    /// Whether this participant leads right now, trusted (elected, not suspended,
    /// not lost, not resigned).
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) {
    /// let election = locks.election("/svc/leader", "node-1");
    /// if election.is_leader() { /* act as the leader */ }
    /// # }
    /// ```
    pub fn is_leader(&self) -> bool {
        self.term
            .as_ref()
            .is_some_and(|t| t.slot.is_trusted_holder())
    }

    /// Waits until this participant leads and returns the [`Leadership`] for the
    /// term. If the previous term ended (lost, resigned, failed), joins again first
    /// (at the back of the queue).
    ///
    /// # Errors
    /// [`Error::Usage`] for an invalid path or empty participant id, or if this
    /// participant leads already (use its `Leadership`); [`Error::SessionExpired`] if
    /// the session expired while waiting (calling again joins on the new session);
    /// [`Error::Closed`] once the client is closed.
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// let mut election = locks.election("/svc/leader", "node-1");
    /// let leadership = election.leadership()?;
    /// assert!(election.is_leader());
    /// # drop(leadership); Ok(()) }
    /// ```
    pub fn leadership(&mut self) -> Result<Leadership, Error> {
        self.leadership_until(None)
    }

    /// Like [`leadership`](Self::leadership), waiting at most `timeout`:
    /// [`Error::Timeout`] if not elected meanwhile. The candidacy stays in the queue
    /// (call again to go on waiting; [`resign`](Self::resign) or drop the participant
    /// to leave).
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// use std::time::Duration;
    /// let mut election = locks.election("/svc/leader", "node-1");
    /// let leadership = loop {
    ///     match election.leadership_timeout(Duration::from_secs(1)) {
    ///         Err(lock_zookeeper::Error::Timeout) => println!("still following"),
    ///         other => break other?,
    ///     }
    /// };
    /// # drop(leadership); Ok(()) }
    /// ```
    pub fn leadership_timeout(&mut self, timeout: Duration) -> Result<Leadership, Error> {
        self.leadership_until(Some(Instant::now() + timeout))
    }

    fn leadership_until(&mut self, deadline: Option<Instant>) -> Result<Leadership, Error> {
        if self.candidacy.is_none() {
            if self.term.as_ref().is_some_and(|t| t.slot.is_holding()) {
                return Err(Error::Usage(UsageError::Unsupported(
                    "this participant leads already: use its Leadership",
                )));
            }
            self.join()?;
        }
        let candidacy = self.candidacy.as_mut().expect("joined");
        match candidacy.wait_until(deadline) {
            None => Err(Error::Timeout),
            Some(result) => {
                self.candidacy = None;
                result.map(|guard| Leadership { guard })
            }
        }
    }

    /// Leaves the election: withdraws a waiting candidacy, or ends the leadership of
    /// the current term (its [`Leadership`] then reports it released). Returns once
    /// the node is deleted (or the term had ended anyway).
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) {
    /// let election = locks.election("/svc/leader", "node-1");
    /// election.resign();
    /// # }
    /// ```
    pub fn resign(mut self) {
        let Some(term) = self.term.take() else {
            return;
        };
        let inner: &Inner = &self.client.inner;
        if inner
            .send(Command::Cancel {
                key: term.key,
                only_waiting: false,
            })
            .is_ok()
        {
            term.slot.wait_finished();
        }
        // Dropping the (cancelled) candidacy sends nothing more that matters.
        self.candidacy = None;
    }
}

/// The leadership of an [`Election`] participant for one term, from
/// [`Election::leadership`]: like a [`LockGuard`] (a fencing token, events, loss).
/// Resigned by [`resign`](Self::resign), or in the background when dropped.
///
/// ```no_run
/// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
/// use lock_core::LockEvent;
/// let mut election = locks.election("/svc/leader", "node-1");
/// let leadership = election.leadership()?;
/// match leadership.next_event() {
///     Some(LockEvent::Suspended) => println!("stop leading until resumed"),
///     other => println!("{other:?}"),
/// }
/// # Ok(()) }
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
    /// ```no_run
    /// # fn demo(mut election: lock_zookeeper::Election) -> Result<(), lock_zookeeper::Error> {
    /// let leadership = election.leadership()?;
    /// println!("epoch {}", leadership.token());
    /// # drop(leadership); Ok(()) }
    /// ```
    pub fn token(&self) -> FencingToken {
        self.guard.token()
    }

    /// The leader's node.
    ///
    /// ```no_run
    /// # fn demo(mut election: lock_zookeeper::Election) -> Result<(), lock_zookeeper::Error> {
    /// let leadership = election.leadership()?;
    /// assert!(leadership.path().starts_with(election.path()));
    /// # drop(leadership); Ok(()) }
    /// ```
    pub fn path(&self) -> &str {
        self.guard.path()
    }

    /// Everything the term was granted: path, token, sequence number, session.
    ///
    /// ```no_run
    /// # fn demo(mut election: lock_zookeeper::Election) -> Result<(), lock_zookeeper::Error> {
    /// let leadership = election.leadership()?;
    /// println!("session {:#x}", leadership.grant().session_id);
    /// # drop(leadership); Ok(()) }
    /// ```
    pub fn grant(&self) -> &Grant {
        self.guard.grant()
    }

    /// The latest status (see [`LockGuard::status`]).
    ///
    /// ```no_run
    /// # fn demo(mut election: lock_zookeeper::Election) -> Result<(), lock_zookeeper::Error> {
    /// use lock_zookeeper::LockStatus;
    /// let leadership = election.leadership()?;
    /// assert_eq!(leadership.status(), LockStatus::Held);
    /// # drop(leadership); Ok(()) }
    /// ```
    pub fn status(&self) -> LockStatus {
        self.guard.status()
    }

    /// Whether this is the leader right now, trusted (not suspended, not lost).
    ///
    /// ```no_run
    /// # fn demo(mut election: lock_zookeeper::Election) -> Result<(), lock_zookeeper::Error> {
    /// let leadership = election.leadership()?;
    /// if leadership.is_trusted() { /* act as the leader */ }
    /// # drop(leadership); Ok(()) }
    /// ```
    pub fn is_trusted(&self) -> bool {
        self.guard.is_trusted()
    }

    /// The next thing that happens to the term: [`LockEvent::Suspended`],
    /// [`LockEvent::Resumed`], or the terminal [`LockEvent::Lost`]. `None` after the
    /// terminal event.
    ///
    /// ```no_run
    /// # fn demo(mut election: lock_zookeeper::Election) -> Result<(), lock_zookeeper::Error> {
    /// let leadership = election.leadership()?;
    /// while let Some(event) = leadership.next_event() {
    ///     println!("{event:?}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn next_event(&self) -> Option<LockEvent> {
        self.guard.next_event()
    }

    /// Like [`next_event`](Self::next_event), waiting at most `timeout`: `None` if
    /// nothing happened meanwhile (or after the terminal event).
    ///
    /// ```no_run
    /// # fn demo(mut election: lock_zookeeper::Election) -> Result<(), lock_zookeeper::Error> {
    /// use std::time::Duration;
    /// let leadership = election.leadership()?;
    /// if let Some(event) = leadership.next_event_timeout(Duration::from_millis(10)) {
    ///     println!("{event:?}");
    /// }
    /// # drop(leadership); Ok(()) }
    /// ```
    pub fn next_event_timeout(&self, timeout: Duration) -> Option<LockEvent> {
        self.guard.next_event_timeout(timeout)
    }

    /// Waits until leadership is suspended (connection down) or lost, and returns the
    /// event: stop acting as the leader.
    ///
    /// ```no_run
    /// # fn demo(mut election: lock_zookeeper::Election) -> Result<(), lock_zookeeper::Error> {
    /// let leadership = election.leadership()?;
    /// let event = leadership.suspended();
    /// eprintln!("not trusted any more: {event:?}");
    /// # Ok(()) }
    /// ```
    pub fn suspended(&self) -> LockEvent {
        self.guard.suspended()
    }

    /// Waits until leadership is lost, and says why.
    ///
    /// ```no_run
    /// # fn demo(mut election: lock_zookeeper::Election) -> Result<(), lock_zookeeper::Error> {
    /// let leadership = election.leadership()?;
    /// let reason = leadership.lost();
    /// eprintln!("lost leadership: {reason:?}");
    /// # Ok(()) }
    /// ```
    pub fn lost(&self) -> LostReason {
        self.guard.lost()
    }

    /// Resigns: deletes the leader's node (the next participant is elected) and waits
    /// for the server to confirm.
    ///
    /// # Errors
    /// As for [`LockGuard::release`]: [`Error::Lost`] if leadership had been lost.
    ///
    /// ```no_run
    /// # fn demo(mut election: lock_zookeeper::Election) -> Result<(), lock_zookeeper::Error> {
    /// let leadership = election.leadership()?;
    /// leadership.resign()?;
    /// # Ok(()) }
    /// ```
    pub fn resign(self) -> Result<(), Error> {
        self.guard.release()
    }
}

/// Follows who leads an election without taking part, from
/// [`LockClient::observe_election`]. Watches only the leader's node, so followers
/// joining or leaving wake nobody. Dropping it stops observing.
///
/// ```no_run
/// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
/// let mut observer = locks.observe_election("/svc/leader")?;
/// loop {
///     match observer.leader() {
///         Some(leader) => println!(
///             "leader {} (token {})",
///             String::from_utf8_lossy(&leader.id),
///             leader.token
///         ),
///         None => println!("no leader"),
///     }
///     observer.changed()?;
/// }
/// # }
/// ```
pub struct ElectionObserver {
    inner: Arc<Inner>,
    key: u64,
    slot: Arc<Slot>,
    leader: Option<Leader>,
    participants: usize,
    /// The observation ended (failed, or the client closed): the error it ended with.
    ended: Option<Error>,
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
    pub(crate) fn start(client: &LockClient, path: String) -> Result<Self, Error> {
        let inner = client.inner.clone();
        let (key, slot) = start_task(&inner, Task::Observe { path })?;
        let mut observer = ElectionObserver {
            inner,
            key,
            slot,
            leader: None,
            participants: 0,
            ended: None,
        };
        observer.changed()?;
        Ok(observer)
    }

    /// The current leader (its node, participant id and fencing token), as last
    /// seen; `None` if nobody participates.
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// let observer = locks.observe_election("/svc/leader")?;
    /// if let Some(leader) = observer.leader() {
    ///     println!("{} leads", String::from_utf8_lossy(&leader.id));
    /// }
    /// # Ok(()) }
    /// ```
    pub fn leader(&self) -> Option<&Leader> {
        self.leader.as_ref()
    }

    /// The number of participants (leader included) seen when the leader last
    /// changed.
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// let observer = locks.observe_election("/svc/leader")?;
    /// println!("{} participants", observer.participants());
    /// # Ok(()) }
    /// ```
    pub fn participants(&self) -> usize {
        self.participants
    }

    /// Waits for the next change of leader and returns the new one (`None`: nobody
    /// leads).
    ///
    /// # Errors
    /// [`Error::Closed`] once the client is closed; [`Error::Usage`] for an invalid
    /// path (from [`LockClient::observe_election`]).
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// let mut observer = locks.observe_election("/svc/leader")?;
    /// let next = observer.changed()?;
    /// println!("new leader: {:?}", next.map(|l| l.id));
    /// # Ok(()) }
    /// ```
    pub fn changed(&mut self) -> Result<Option<Leader>, Error> {
        self.changed_until(None)
    }

    /// Like [`changed`](Self::changed), waiting at most `timeout`:
    /// [`Error::Timeout`] if the leader did not change meanwhile (the observer goes
    /// on).
    ///
    /// ```no_run
    /// # fn demo(locks: lock_zookeeper::LockClient) -> Result<(), lock_zookeeper::Error> {
    /// use std::time::Duration;
    /// let mut observer = locks.observe_election("/svc/leader")?;
    /// match observer.changed_timeout(Duration::from_secs(1)) {
    ///     Err(lock_zookeeper::Error::Timeout) => println!("same leader"),
    ///     other => println!("now {:?}", other?),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn changed_timeout(&mut self, timeout: Duration) -> Result<Option<Leader>, Error> {
        self.changed_until(Some(Instant::now() + timeout))
    }

    fn changed_until(&mut self, deadline: Option<Instant>) -> Result<Option<Leader>, Error> {
        if let Some(e) = &self.ended {
            return Err(e.clone());
        }
        let ended = loop {
            match self.slot.next(deadline) {
                Next::Notice(Notice::Event(LockEvent::LeaderChanged {
                    leader,
                    participants,
                })) => {
                    self.leader = leader.clone();
                    self.participants = participants;
                    return Ok(leader);
                }
                Next::Notice(Notice::Event(LockEvent::Failed(reason))) => break reason.into(),
                Next::Notice(Notice::Refused(e)) => break e.into(),
                Next::Notice(Notice::Event(_)) => {}
                Next::Gone => break Error::Closed,
                Next::TimedOut => return Err(Error::Timeout),
            }
        };
        self.slot.set_ended();
        self.ended = Some(ended.clone());
        Err(ended)
    }
}

impl Drop for ElectionObserver {
    fn drop(&mut self) {
        if self.ended.is_none() {
            let _ = self.inner.send(Command::Cancel {
                key: self.key,
                only_waiting: false,
            });
        }
    }
}

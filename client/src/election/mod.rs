//! Leader election: participants ([`Election`], [`Leadership`]) and observers
//! ([`ElectionObserver`]).
//!
//! A participant is an ephemeral sequential node whose data is its id; the lowest one
//! leads. Each participant watches only its predecessor and an observer only the
//! leader, so a change of leader wakes exactly one participant and the observers.

use crate::error::Error;
use crate::guard::CancelOnDrop;
use crate::handle::LockClient;
use crate::status::LockStatus;
use lock_core::{FailReason, FencingToken, LockEvent, LockId, LockSpec, LostReason, ZkError};
use std::future::poll_fn;

use std::time::{Duration, Instant};

mod leadership;
mod observer;

pub use leadership::Leadership;
pub use observer::ElectionObserver;

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
/// [resigns](Self::resign), is dropped, or its client is closed.
/// [`leadership`](Self::leadership) waits until it leads and hands out a
/// [`Leadership`] guard for the term; when a term ends (lost or resigned),
/// `leadership` joins again. A candidate outlives its sessions: when the session
/// expires or is replaced, `leadership()` joins again on the new session by itself
/// and goes on waiting, and a leader's next `leadership()` does after a lost term,
/// so `leadership()` fails only once the client is closed (or for bad input).
///
/// # Supervision: a loop that runs as long as the service
///
/// (The example races the work against the loss with the `futures` crate's
/// `select!`: add `futures` to your dependencies, or use `tokio::select!`.)
///
/// ```
/// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
/// use futures::FutureExt;
/// let mut election = locks.election("/services/scheduler/leader", "node-1");
/// loop {
///     // Err only once the client is closed: session loss just means waiting again.
///     let leadership = election.leadership().await?;
///     let done = futures::select! {
///         reason = leadership.lost().fuse() => { eprintln!("lost: {reason:?}"); false }
///         _ = lead(&leadership).fuse() => true,
///     };
///     if done {
///         leadership.resign().await?; // the next candidate leads at once
///         break;
///     }
///     // Lost: the next turn of the loop joins again (on a new session if need be).
/// }
/// # Ok(()) }
/// # async fn lead(_: &zklock::Leadership) {}
/// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
/// ```
///
/// # What `select!` on [`Leadership::lost`] cancels
///
/// When `lost()` wins, `select!` (futures' or `tokio::select!`) **drops the other
/// branch's future** where it last waited: `lead` stops at its last `.await`, in the
/// middle of whatever it was doing. Work whose side effects are not atomic (two
/// writes that belong together, a file half written, a message sent but not
/// recorded) is abandoned half done, and nothing after that `.await` runs, not even
/// its clean-up (only destructors). Design the leader's work for it:
/// * make each step atomic and idempotent, so that the next leader can finish or
///   redo it: one transaction, or [`Leadership::fenced_write`] (ZooKeeper writes
///   applied only while this is still the leader, all or nothing);
/// * pass [`Leadership::token`] to every resource the leader writes, and have it
///   refuse tokens lower than the highest it has seen (fencing): a deposed leader
///   whose write arrives late is turned away, whether or not it was cancelled;
/// * or do not race the work against `lost()`: let it check
///   [`Leadership::is_trusted`] (or [`Leadership::trusted_until`]) between steps and
///   stop at a step boundary of its choosing; a cancellation-safe design.
///
/// Either way, losing leadership can never be prevented, only noticed: a process
/// paused long enough (GC, swap, `SIGSTOP`) is deposed without running any code,
/// which is what fencing tokens are for.
///
/// # Handover
///
/// Resigning ([`Leadership::resign`], [`Election::resign`]), dropping the
/// `Leadership` or a waiting `Election`, and closing the client
/// ([`LockClient::close`]) delete the node at once, so the next candidate leads
/// after a round trip and a watch notification, not a session timeout later. A
/// process that exits without closing its client leaves its node to the server's
/// expiry of the session: call `close().await` on shutdown.
///
/// Dropping the participant withdraws a waiting candidacy; a [`Leadership`] already
/// handed out leads until it is resigned or dropped.
pub struct Election {
    client: LockClient,
    spec: LockSpec,
    /// This participant's event queue in the shared state (every term's events).
    queue: u64,
    /// The current candidacy while it waits (until handed to a `Leadership`).
    candidacy: Option<CancelOnDrop>,
    term: Option<Term>,
    /// The client's connection generation when the current candidacy joined.
    joined_at_generation: u64,
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
    /// Joins at once with `spec` (a [`LockSpec::leader`]).
    pub(crate) fn new(client: LockClient, spec: LockSpec) -> Election {
        let queue = client.shared().with(|s| s.elections.open());
        let mut election = Election {
            client,
            spec,
            queue,
            candidacy: None,
            term: None,
            joined_at_generation: 0,
        };
        // A closed client or bad input shows at `leadership()`.
        let _ = election.join();
        election
    }

    fn join(&mut self) -> Result<(), Error> {
        // Read before the task starts: a session event in between counts as a
        // change since the join (one more attempt, never a missed change).
        self.joined_at_generation = self.connection_generation();
        let (spec, queue) = (self.spec.clone(), Some(self.queue));
        let id = self.client.start_acquisition(spec, None, false, queue)?;
        self.term = Some(Term { id, ended: false });
        self.candidacy = Some(CancelOnDrop::new(self.client.clone(), id));
        Ok(())
    }

    /// Whether the term's slot says `f` (of whether it was granted, and its
    /// status as its handles report it).
    fn term_is(&self, f: impl FnOnce(bool, &LockStatus) -> bool) -> bool {
        let Some(term) = &self.term else { return false };
        self.client.shared().with(|s| {
            (s.locks.slot(term.id)).is_some_and(|slot| f(slot.acquired, &s.lock_status(term.id)))
        })
    }

    /// The election directory.
    ///
    /// ```
    /// # fn demo(locks: zklock::LockClient) {
    /// assert_eq!(locks.election("/svc/leader", "a").path(), "/svc/leader");
    /// # }
    /// # demo(zklock::sim::Server::new().client());
    /// ```
    pub fn path(&self) -> &str {
        self.spec.path()
    }

    /// Whether this participant leads right now, trusted (elected, not suspended,
    /// not lost, not resigned): its term's [`Leadership::is_trusted`], read
    /// against the clock as that is.
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) {
    /// let election = locks.election("/svc/leader", "node-1");
    /// if election.is_leader() { /* act as the leader */ }
    /// # }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client()));
    /// ```
    pub fn is_leader(&self) -> bool {
        self.term_is(|acquired, status| acquired && *status == LockStatus::Held)
    }

    /// Waits until this participant leads and returns the [`Leadership`] for the
    /// term. If the previous term ended (lost, resigned, failed), joins again first
    /// (at the back of the queue, on the current session or, between sessions, on
    /// the next one).
    ///
    /// A candidate stays in the election until its client is closed or it is given
    /// up ([`resign`](Self::resign), dropped): when its session expires or is
    /// replaced while it waits, or an administrator deletes its node, it joins again
    /// by itself and goes on waiting (as Curator's `LeaderLatch` and kazoo's
    /// `Election` do). So a supervision loop around this call runs for as long as
    /// the service does (see the [type's docs](Self)).
    ///
    /// Never two terms at once: a new term starts only after the previous one
    /// ended, and a term that ended with its session has its node gone (the server
    /// deleted it) or deleted from the next session before anyone is elected behind
    /// it.
    ///
    /// Cancel-safe: dropping the future keeps the candidacy (call again to go on
    /// waiting).
    ///
    /// # Errors
    /// [`Error::Closed`] once the client is closed; [`Error::Usage`] for an invalid
    /// path or empty participant id, or if this participant leads already (use its
    /// `Leadership`); an error ZooKeeper answers that no new session mends (e.g.
    /// [`ZkError::NoAuth`](lock_core::ZkError::NoAuth)).
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// let mut election = locks.election("/svc/leader", "node-1");
    /// let leadership = election.leadership().await?;
    /// assert!(election.is_leader());
    /// # drop(leadership); Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
    /// ```
    pub async fn leadership(&mut self) -> Result<Leadership, Error> {
        loop {
            if !self.candidacy.as_ref().is_some_and(CancelOnDrop::is_live) {
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
            match candidacy.granted().await {
                Ok(grant) => {
                    let started = self.candidacy.take().expect("joined");
                    return Ok(Leadership {
                        guard: started.into_guard(grant),
                    });
                }
                // The candidacy's node went with its session (or was deleted by
                // someone else) before it led: it never held, so there is no term
                // to end. Join again: a closed client refuses the join.
                Err(Error::SessionExpired | Error::NodeDeleted) => {}
                // The server (or the client library) answered for a session that
                // is gone before the binding reported its end: joining now would
                // send the create on that session again and fail the same way, in
                // a loop. Join once the session has changed.
                Err(Error::Zk(ZkError::SessionExpired | ZkError::Closed)) => {
                    self.session_changed_since_join().await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Waits until the client's connection reported something since the
    /// candidacy joined (its session ended, was replaced, the client closed).
    ///
    /// Counted from the join, not from now: by the time the error of the dead
    /// session reaches us the binding may have opened the next session already,
    /// and waiting for *that* one to change would wait forever.
    async fn session_changed_since_join(&self) {
        // Subscribed before looking, so that no change falls in between.
        let mut changes = self.client.connection_events();
        while self.connection_generation() == self.joined_at_generation {
            if changes.next().await.is_none() {
                return;
            }
        }
    }

    /// How many session events the client has had (see `Tracker::generation`).
    fn connection_generation(&self) -> u64 {
        self.client.shared().with(|s| s.connection.generation())
    }

    crate::blocking::twins!(fn leadership_blocking(&mut self) -> Result<Leadership, Error> = leadership;);

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
    /// # async fn demo(locks: zklock::LockClient) {
    /// use zklock::ElectionEvent;
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
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client()));
    /// ```
    pub async fn next_event(&mut self) -> Option<ElectionEvent> {
        loop {
            let live = self.term.as_ref().is_some_and(|t| !t.ended);
            let queue = self.queue;
            let (key, event) = poll_fn(|cx| {
                // The live term's terminal event is still to come.
                let waker = cx.waker();
                (self.client.shared()).with(|s| s.elections.poll_next(queue, live, waker))
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
                    path: grant.path.to_string(),
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

    crate::blocking::twins!(fn next_event_blocking(&mut self) -> Option<ElectionEvent> = next_event;);

    /// Leaves the election: withdraws a waiting candidacy, or ends the leadership of
    /// the current term (its [`Leadership`] then reports it released). Returns once
    /// the node is deleted (or the term had ended anyway).
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) {
    /// let election = locks.election("/svc/leader", "node-1");
    /// election.resign().await;
    /// # }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client()));
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
                s.mark_link();
            }),
        }
        while self.term.as_ref().is_some_and(|t| !t.ended) {
            if self.next_event().await.is_none() {
                break;
            }
        }
    }

    crate::blocking::twins!(fn resign_blocking(self) = resign;);
}

impl Drop for Election {
    fn drop(&mut self) {
        // A waiting candidacy is cancelled by its own drop; a handed-out
        // `Leadership` lives on.
        let queue = self.queue;
        self.client.shared().with(|s| s.elections.close(queue));
    }
}

//! [`Leadership`]: one term of an [`Election`](super::Election) participant, a
//! guard like [`LockGuard`].

use crate::error::Error;
use crate::guard::LockGuard;
use crate::status::LockStatus;
use crate::writes::Writes;
use lock_core::{FencedError, FencingToken, Grant, LockEvent, LostReason, MultiResult};
use std::time::Duration;

/// The leadership of an [`Election`] participant for one term, from
/// [`Election::leadership`]: like a [`LockGuard`] (a fencing token, events, loss,
/// fenced writes). Resigned by [`resign`](Self::resign), or in the background when
/// dropped.
///
/// ```
/// # async fn demo(locks: zklock::LockClient, server: zklock::sim::Server) -> Result<(), zklock::Error> {
/// use zklock::LockEvent;
/// let mut election = locks.election("/svc/leader", "node-1");
/// let leadership = election.leadership().await?;
/// # server.disconnect(&locks, std::time::Duration::from_millis(100));
/// match leadership.next_event().await {
///     Some(LockEvent::Suspended) => println!("stop leading until resumed"),
///     other => println!("{other:?}"),
/// }
/// # Ok(()) }
/// # let server = zklock::sim::Server::new();
/// # futures::executor::block_on(demo(server.client(), server.clone())).unwrap();
/// ```
///
/// [`Election`]: crate::Election
/// [`Election::leadership`]: crate::Election::leadership
#[derive(Debug)]
#[must_use = "dropping a Leadership resigns"]
pub struct Leadership {
    pub(super) guard: LockGuard,
}

impl Leadership {
    /// The leader's fencing token (the `czxid` of its node): every later leader's is
    /// greater. Pass it along with the leader's writes so stale leaders are rejected.
    ///
    /// ```
    /// # async fn demo(mut election: zklock::Election) -> Result<(), zklock::Error> {
    /// let leadership = election.leadership().await?;
    /// println!("epoch {}", leadership.token());
    /// # drop(leadership); Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client().election("/svc/leader", "node-1"))).unwrap();
    /// ```
    pub fn token(&self) -> FencingToken {
        self.guard.token()
    }

    /// The leader's node.
    ///
    /// ```
    /// # async fn demo(mut election: zklock::Election) -> Result<(), zklock::Error> {
    /// let leadership = election.leadership().await?;
    /// assert!(leadership.path().starts_with(election.path()));
    /// # drop(leadership); Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client().election("/svc/leader", "node-1"))).unwrap();
    /// ```
    pub fn path(&self) -> &str {
        self.guard.path()
    }

    /// Everything the term was granted: path, token, sequence number, session.
    ///
    /// ```
    /// # async fn demo(mut election: zklock::Election) -> Result<(), zklock::Error> {
    /// let leadership = election.leadership().await?;
    /// println!("session {:#x}", leadership.grant().session_id);
    /// # drop(leadership); Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client().election("/svc/leader", "node-1"))).unwrap();
    /// ```
    pub fn grant(&self) -> &Grant {
        self.guard.grant()
    }

    /// The latest status, read against the client's clock: `Suspended` at once
    /// when [`trusted_until`](Self::trusted_until) has passed (see
    /// [`LockGuard::status`]).
    ///
    /// ```
    /// # async fn demo(mut election: zklock::Election) -> Result<(), zklock::Error> {
    /// use zklock::LockStatus;
    /// let leadership = election.leadership().await?;
    /// assert_eq!(leadership.status(), LockStatus::Held);
    /// # drop(leadership); Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client().election("/svc/leader", "node-1"))).unwrap();
    /// ```
    pub fn status(&self) -> LockStatus {
        self.guard.status()
    }

    /// Until when the leadership can be trusted, on the client's clock: see
    /// [`LockGuard::trusted_until`].
    pub fn trusted_until(&self) -> Option<std::time::Instant> {
        self.guard.trusted_until()
    }

    /// Whether this is the leader right now, trusted (not suspended, not lost):
    /// false from the moment [`trusted_until`](Self::trusted_until) has passed,
    /// even as the first check after a pause (see [`LockGuard::is_trusted`]).
    ///
    /// ```
    /// # async fn demo(mut election: zklock::Election) -> Result<(), zklock::Error> {
    /// let leadership = election.leadership().await?;
    /// if leadership.is_trusted() { /* act as the leader */ }
    /// # drop(leadership); Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client().election("/svc/leader", "node-1"))).unwrap();
    /// ```
    pub fn is_trusted(&self) -> bool {
        self.guard.is_trusted()
    }

    /// The next thing that happens to the term: [`LockEvent::Suspended`],
    /// [`LockEvent::Resumed`], or the terminal [`LockEvent::Lost`]. `None` after the
    /// terminal event. Cancel-safe. (See also [`Election::next_event`].)
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient, server: zklock::sim::Server) -> Result<(), zklock::Error> {
    /// # let mut election = locks.election("/svc/leader", "node-1");
    /// let leadership = election.leadership().await?;
    /// # server.expire_session(&locks);
    /// while let Some(event) = leadership.next_event().await {
    ///     println!("{event:?}");
    /// }
    /// # Ok(()) }
    /// # let server = zklock::sim::Server::new();
    /// # futures::executor::block_on(demo(server.client(), server.clone())).unwrap();
    /// ```
    ///
    /// [`Election::next_event`]: crate::Election::next_event
    pub async fn next_event(&self) -> Option<LockEvent> {
        self.guard.next_event().await
    }

    crate::blocking::twins!(fn next_event_blocking(&self) -> Option<LockEvent> = next_event;);

    /// Like [`next_event_blocking`](Self::next_event_blocking), giving up with
    /// `None` once `timeout` has passed without an event (none is lost).
    pub fn next_event_timeout_blocking(&self, timeout: Duration) -> Option<LockEvent> {
        self.guard.next_event_timeout_blocking(timeout)
    }

    /// Waits until leadership is suspended (connection down) or lost, and returns the
    /// event: stop acting as the leader. Cancel-safe.
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient, server: zklock::sim::Server) -> Result<(), zklock::Error> {
    /// # let mut election = locks.election("/svc/leader", "node-1");
    /// let leadership = election.leadership().await?;
    /// # server.disconnect(&locks, std::time::Duration::from_millis(100));
    /// let event = leadership.suspended().await;
    /// eprintln!("not trusted any more: {event:?}");
    /// # Ok(()) }
    /// # let server = zklock::sim::Server::new();
    /// # futures::executor::block_on(demo(server.client(), server.clone())).unwrap();
    /// ```
    pub async fn suspended(&self) -> LockEvent {
        self.guard.suspended().await
    }

    crate::blocking::twins!(fn suspended_blocking(&self) -> LockEvent = suspended;);

    /// Waits until leadership is lost, and says why. Cancel-safe.
    ///
    /// Raced against the leader's work with `select!`, a loss drops the work's
    /// future at its next `.await`, half done: see what that cancels, and the
    /// patterns that make it safe, in [`Election`](crate::Election)'s docs.
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient, server: zklock::sim::Server) -> Result<(), zklock::Error> {
    /// # let mut election = locks.election("/svc/leader", "node-1");
    /// let leadership = election.leadership().await?;
    /// # server.expire_session(&locks);
    /// let reason = leadership.lost().await;
    /// eprintln!("lost leadership: {reason:?}");
    /// # Ok(()) }
    /// # let server = zklock::sim::Server::new();
    /// # futures::executor::block_on(demo(server.client(), server.clone())).unwrap();
    /// ```
    pub async fn lost(&self) -> LostReason {
        self.guard.lost().await
    }

    crate::blocking::twins!(fn lost_blocking(&self) -> LostReason = lost;);

    /// ZooKeeper writes applied only while this is the leader (see
    /// [`LockGuard::fenced_write`]).
    ///
    /// # Errors
    /// [`FencedError::NotHeld`] once leadership is lost or suspended (nothing written).
    ///
    /// ```
    /// # async fn demo(mut election: zklock::Election) -> Result<(), Box<dyn std::error::Error>> {
    /// use zklock::Writes;
    /// let leadership = election.leadership().await?;
    /// # leadership.fenced_write(Writes::new().create("/svc/assignments", b"")).await?;
    /// leadership.fenced_write(Writes::new().set_data("/svc/assignments", b"...")).await?;
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client().election("/svc/leader", "node-1"))).unwrap();
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
    /// # async fn demo(mut election: zklock::Election) -> Result<(), zklock::Error> {
    /// let leadership = election.leadership().await?;
    /// leadership.resign().await?;
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client().election("/svc/leader", "node-1"))).unwrap();
    /// ```
    pub async fn resign(self) -> Result<(), Error> {
        self.guard.release().await
    }

    crate::blocking::twins!(fn resign_blocking(self) -> Result<(), Error> = resign;);
}

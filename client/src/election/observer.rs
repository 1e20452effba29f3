//! [`ElectionObserver`]: following who leads without taking part.

use crate::error::Error;
use crate::guard::CancelOnDrop;
use crate::handle::LockClient;
use lock_core::{Leader, LockEvent};
use std::time::{Duration, Instant};

/// Follows who leads an election without taking part, from
/// [`LockClient::observe_election`]. Watches only the leader's node, so followers
/// joining or leaving wake nobody. Dropping it stops observing.
///
/// ```
/// # async fn demo(locks: zklock::LockClient, server: zklock::sim::Server) -> Result<(), zklock::Error> {
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
/// # let server = zklock::sim::Server::new();
/// # futures::executor::block_on(demo(server.client(), server.clone())).unwrap();
/// ```
pub struct ElectionObserver {
    started: CancelOnDrop,
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
            started: CancelOnDrop::new(
                client.clone(),
                client.start_other(|core, now| core.observe(&path, now))?,
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
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// let observer = locks.observe_election("/svc/leader").await?;
    /// if let Some(leader) = observer.leader() {
    ///     println!("{} leads", String::from_utf8_lossy(&leader.id));
    /// }
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
    /// ```
    pub fn leader(&self) -> Option<&Leader> {
        self.leader.as_ref()
    }

    /// The number of participants (leader included) seen when the leader last
    /// changed.
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// let observer = locks.observe_election("/svc/leader").await?;
    /// println!("{} participants", observer.participants());
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
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
    /// # async fn demo(locks: zklock::LockClient, server: zklock::sim::Server) -> Result<(), zklock::Error> {
    /// let mut observer = locks.observe_election("/svc/leader").await?;
    /// # let _leader = server.client().election("/svc/leader", "node-2").leadership().await?;
    /// let next = observer.changed().await?;
    /// println!("new leader: {:?}", next.map(|l| l.id));
    /// # Ok(()) }
    /// # let server = zklock::sim::Server::new();
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

    crate::blocking::twins!(fn changed_blocking(&mut self) -> Result<Option<Leader>, Error> = changed;);

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

//! Leader elections: taking part ([`Election`]) and observing
//! ([`ElectionObserver`]).

use crate::election::{Election, ElectionObserver};
use crate::error::Error;
use crate::handle::LockClient;
use lock_core::{LockSpec, Recipe, UsageError};

impl LockClient {
    /// Joins the leader election at `path` as `participant` (its id, stored in its
    /// node for observers to read; must not be empty). The participant joins at once;
    /// see [`Election`].
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// let mut election = locks.election("/services/scheduler/leader", "node-1");
    /// let leadership = election.leadership().await?; // waits until elected
    /// println!("leading, token {}", leadership.token());
    /// leadership.resign().await?;
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
    /// ```
    pub fn election(&self, path: impl Into<String>, participant: impl Into<Vec<u8>>) -> Election {
        Election::new(self.clone(), LockSpec::leader(path, participant))
    }

    /// Joins the leader election that `spec` describes: a
    /// [`LockSpec::leader`] with options, such as
    /// [`lock_delay`](LockSpec::lock_delay) (after a leader's unclean end, the
    /// next one leads no sooner than the delay after finding the election free)
    /// or [`detect_crashes`](LockSpec::detect_crashes). Otherwise as
    /// [`election`](Self::election).
    ///
    /// # Errors
    /// [`Error::Usage`] for a spec of another recipe (a lock: use
    /// [`acquire`](Self::acquire)). Bad input in a leader spec shows at
    /// [`Election::leadership`], as with `election`.
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// use std::time::Duration;
    /// use zklock::LockSpec;
    /// let spec = LockSpec::leader("/services/scheduler/leader", "node-1")
    ///     .lock_delay(Duration::from_secs(15));
    /// let mut election = locks.election_with_spec(spec)?;
    /// let leadership = election.leadership().await?;
    /// leadership.resign().await?;
    /// assert!(locks.election_with_spec(LockSpec::exclusive("/x")).is_err());
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
    /// ```
    pub fn election_with_spec(&self, spec: LockSpec) -> Result<Election, Error> {
        if spec.recipe() != Recipe::Leader {
            return Err(Error::Usage(UsageError::Unsupported(
                "an election needs LockSpec::leader (a lock is taken with acquire)",
            )));
        }
        Ok(Election::new(self.clone(), spec))
    }

    /// Follows the leader of the election at `path` without taking part (the
    /// election directory need not exist yet). Returns once the current leader is
    /// known. While the observer lives, [`wait_idle`](Self::wait_idle) waits too (it
    /// is work in progress on the session).
    ///
    /// # Errors
    /// [`Error::Usage`] for an invalid path, [`Error::Closed`] once the client is closed.
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient, server: zklock::sim::Server) -> Result<(), zklock::Error> {
    /// let mut observer = locks.observe_election("/services/scheduler/leader").await?;
    /// # let _leader = server.client().election("/services/scheduler/leader", "node-2").leadership().await?;
    /// println!("leader: {:?}", observer.leader().map(|l| l.id.clone()));
    /// let next = observer.changed().await?;
    /// # drop(next); Ok(()) }
    /// # let server = zklock::sim::Server::new();
    /// # futures::executor::block_on(demo(server.client(), server.clone())).unwrap();
    /// ```
    pub async fn observe_election(
        &self,
        path: impl Into<String>,
    ) -> Result<ElectionObserver, Error> {
        ElectionObserver::start(self, path.into()).await
    }

    /// Blocking twin of [`observe_election`](Self::observe_election).
    pub fn observe_election_blocking(
        &self,
        path: impl Into<String>,
    ) -> Result<ElectionObserver, Error> {
        crate::blocking::block_on(self.observe_election(path))
    }
}

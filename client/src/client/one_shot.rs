//! One-shot tasks on the session: revocation requests, a lock's participants,
//! and a deadlock scan.

use crate::error::{Cycle, Error};
use crate::guard::CancelOnDrop;
use crate::handle::LockClient;
use lock_core::{LockEvent, LockId, Participants, Session, Timestamp, UsageError};

impl LockClient {
    /// Runs the one-shot core task `start` starts to its answer: the first event
    /// `answer` takes, or the task's failure. Dropping the future cancels the task.
    pub(crate) async fn one_shot<T>(
        &self,
        start: impl FnOnce(&mut Session, Timestamp) -> Result<LockId, UsageError>,
        answer: impl Fn(LockEvent) -> Option<T>,
    ) -> Result<T, Error> {
        let mut pending = CancelOnDrop::new(self.clone(), self.start_other(start)?);
        loop {
            match pending.next().await {
                Some(LockEvent::Failed(reason)) => return Err(reason.into()),
                Some(event) => {
                    if let Some(answer) = answer(event) {
                        return Ok(answer);
                    }
                }
                None => return Err(Error::Closed),
            }
        }
    }

    /// Asks holders to let go, by writing Curator's `__REVOKE__` into their nodes:
    /// given a lock directory, its current holders (the lowest node, or the leading
    /// readers); given a participant node's path, that node's owner, holding or
    /// waiting. Returns the nodes asked (empty if there were none).
    ///
    /// Holders of locks made [`revocable`](crate::Mutex::revocable) are told
    /// ([`LockGuard::revocation_requested`]) and decide; a revocable waiter gives up
    /// its place ([`Error::Revoked`]); other participants ignore the request. Curator
    /// clients honour it too.
    ///
    /// # Errors
    /// [`Error::Usage`] for an invalid path, [`Error::Zk`] if ZooKeeper refused,
    /// [`Error::Closed`] once the client is closed.
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// let asked = locks.revoke("/locks/job").await?;
    /// println!("asked {asked:?} to let go");
    /// // Now wait for the lock as usual.
    /// let guard = locks.mutex("/locks/job").lock().await?;
    /// # drop(guard); Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
    /// ```
    ///
    /// [`LockGuard::revocation_requested`]: crate::LockGuard::revocation_requested
    pub async fn revoke(&self, path: impl Into<String>) -> Result<Vec<String>, Error> {
        self.one_shot(
            |core, now| core.revoke(&path.into(), now),
            |event| match event {
                LockEvent::RevocationSent { nodes } => Some(nodes),
                _ => None,
            },
        )
        .await
    }

    crate::blocking::twins!(fn revoke_blocking(&self, path: impl Into<String>) -> Result<Vec<String>, Error> = revoke;);

    /// Who holds the lock at `path` and who waits, in queue order: each
    /// [`Participant`](crate::Participant) with its node, kind, naming scheme, owner, session, creation
    /// time (`ctime`), fencing token (`czxid`, higher is younger), user data, and
    /// for a waiter the nodes it waits for. Works on locks taken by any client
    /// (Curator's and kazoo's participants have no owner). One pipelined round trip
    /// (a listing and a read per participant); no watches are left behind. A lock
    /// directory that does not exist has no participants.
    ///
    /// # Errors
    /// [`Error::Usage`] for an invalid path, [`Error::Zk`] if ZooKeeper refused,
    /// [`Error::Closed`] once the client is closed.
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// let who = locks.participants("/locks/job").await?;
    /// for h in &who.holders {
    ///     println!("held by {:?} (session {:#x}, token {})", h.owner, h.session, h.token);
    /// }
    /// for w in &who.waiters {
    ///     println!("{} ({:?}) waits for {:?}", w.node, w.owner, w.waits_for);
    /// }
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
    /// ```
    pub async fn participants(&self, path: impl Into<String>) -> Result<Participants, Error> {
        self.one_shot(
            |core, now| core.inspect(&path.into(), now),
            |event| match event {
                LockEvent::Participants(participants) => Some(participants),
                _ => None,
            },
        )
        .await
    }

    crate::blocking::twins!(fn participants_blocking(&self, path: impl Into<String>) -> Result<Participants, Error> = participants;);

    /// Scans the lock directories under `root` (`root` itself and its direct
    /// children) for deadlocks, and returns one cycle per deadlock (empty: none).
    /// Each cycle lists its nodes in wait order (each waits for the next, the last
    /// for the first) with owner, session, token and `ctime`. Every edge is read
    /// twice, so a reported cycle really existed; cycles through participants of
    /// any client count, as long as their owners are named in their data (see
    /// [`Mutex::owner`] and [`Mutex::detect_deadlocks`]: an owner's waits are
    /// published once it has waited for its `detect_deadlocks` delay). Breaks
    /// nothing: acquisitions with detection on break their own cycles.
    ///
    /// # Errors
    /// [`Error::Usage`] for an invalid path, [`Error::Zk`] if ZooKeeper refused,
    /// [`Error::Closed`] once the client is closed.
    ///
    /// ```
    /// # async fn demo(locks: zklock::LockClient) -> Result<(), zklock::Error> {
    /// for cycle in locks.deadlocks("/locks").await? {
    ///     let owners: Vec<_> = cycle.iter().map(|n| n.owner.as_deref().unwrap_or("?")).collect();
    ///     println!("deadlock: {}", owners.join(" -> "));
    /// }
    /// # Ok(()) }
    /// # futures::executor::block_on(demo(zklock::sim::Server::new().client())).unwrap();
    /// ```
    ///
    /// [`Mutex::owner`]: crate::Mutex::owner
    /// [`Mutex::detect_deadlocks`]: crate::Mutex::detect_deadlocks
    pub async fn deadlocks(&self, root: impl Into<String>) -> Result<Vec<Cycle>, Error> {
        self.one_shot(
            |core, now| core.deadlocks(&root.into(), now),
            |event| match event {
                LockEvent::Deadlocks { cycles } => Some(cycles),
                _ => None,
            },
        )
        .await
    }

    crate::blocking::twins!(fn deadlocks_blocking(&self, root: impl Into<String>) -> Result<Vec<Cycle>, Error> = deadlocks;);
}

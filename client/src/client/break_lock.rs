//! Breaking a stuck lock: [`LockClient::break_lock`] deletes a holder's node
//! (or a named waiter's) without its owner's release.
//!
//! Why it refuses unless forced: ZooKeeper deletes an ephemeral node with its
//! session, so a node that exists means its owner's session is alive, and no
//! naming scheme records whether its owner would let go if asked
//! ([`LockClient::revoke`]). A break is for the holder that is wedged while its
//! session lives; it costs what the holder was protecting, unless that is
//! fenced (see [`BreakLock::force`]).

use crate::error::{BreakError, Error};
use crate::handle::LockClient;
use lock_core::{BreakOutcome, LockEvent, NameScheme, NodeKind, Participant, Participants};

/// What [`LockClient::break_lock`] breaks, and whether it may: the lock's one
/// holder ([`holder`](Self::holder)) or a named participant
/// ([`node`](Self::node)), refused unless [`force`](Self::force)d.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BreakLock {
    /// The participant to break, by node name (as
    /// [`Participant::node`] gives it) or full path; `None`: the lock's one
    /// holder.
    pub node: Option<String>,
    /// Delete it (else refuse with [`BreakError::NotForced`], naming it).
    pub force: bool,
    /// Who breaks it (e.g. `user@host`), kept in the break's record.
    pub by: Option<String>,
}

impl BreakLock {
    /// The lock's holder, which must be the only one (a read lock held by
    /// several readers, or a semaphore's permits, need [`node`](Self::node)).
    pub fn holder() -> Self {
        BreakLock::default()
    }

    /// The participant whose node is `name` (its name in the lock directory,
    /// or its full path): a holder, or a waiter.
    pub fn node(name: impl Into<String>) -> Self {
        BreakLock {
            node: Some(name.into()),
            ..BreakLock::default()
        }
    }

    /// Says who breaks it (e.g. `user@host`): kept in the record the break
    /// leaves in the lock directory, which [`LockClient::participants`] reads
    /// back ([`Participants::last_break`](lock_core::Participants::last_break);
    /// `zklock ls` shows it).
    pub fn by(mut self, who: impl Into<String>) -> Self {
        self.by = Some(who.into());
        self
    }

    /// Deletes the node. Without it the break is refused
    /// ([`BreakError::NotForced`]), naming the participant it would break.
    ///
    /// What it costs: the broken holder was alive (its session was), and may be
    /// in the middle of its work. A resource that checks fencing tokens (or
    /// writes made through [`LockGuard::fenced_write`](crate::LockGuard::fenced_write),
    /// which check the node) refuses the broken holder's writes from now on,
    /// so the break is safe for it. A resource that does not check takes the
    /// broken holder's in-flight writes until that holder learns it lost the
    /// lock: at once if it watches its node
    /// ([`Mutex::watch_node`](crate::Mutex::watch_node); `zklock exec` always
    /// does, and a zklock holder from at most two sync intervals after its
    /// grant), else at its next request on the node (a fenced write, its
    /// release), while the next holder already works.
    ///
    /// The delete leaves a record of the break in the lock directory (a
    /// persistent `zkl-broken` node: which node, its token and session, who
    /// broke it, and when), in the same `multi`, so `participants` and `zklock
    /// ls` show the last break. Not where a peer would trip over an extra
    /// child: a node in go-zookeeper's layout (its `Lock` fails on one), a
    /// semaphore in Curator's or kazoo's layout.
    pub fn force(mut self) -> Self {
        self.force = true;
        self
    }
}

/// A lock broken by [`LockClient::break_lock`]: who held it (or waited), and
/// what became of its node.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Broken {
    /// The participant broken, as inspected before the delete: its node,
    /// owner, session, `ctime` (since when) and token.
    pub participant: Participant,
    /// Whether it held the lock (else it waited).
    pub held: bool,
    /// Whether our delete removed the node ([`BreakOutcome::Deleted`]) or it
    /// was gone already.
    pub outcome: BreakOutcome,
}

impl LockClient {
    /// Breaks a stuck lock: deletes the node of its holder (or of the
    /// participant `what` names), without its owner's release, so that the
    /// next in line is granted. For the holder that is wedged while its session
    /// lives (a process stuck holding a lock, a bug): ask first with
    /// [`revoke`](Self::revoke), which a revocable holder obeys.
    ///
    /// It reads the lock's [`participants`](Self::participants), picks the
    /// participant, and, only when [`forced`](BreakLock::force), deletes
    /// exactly the node inspected (the same `czxid`): two more round trips.
    /// Markers the holder left in the lock directory (a crash marker of an
    /// open section) stay, so the next holder sees an unclean end.
    ///
    /// The broken holder gets [`LostReason::NodeDeleted`](crate::LostReason::NodeDeleted):
    /// at once if it watches its node ([`Mutex::watch_node`](crate::Mutex::watch_node)),
    /// else at its next request on the node: its next fenced write
    /// ([`LockGuard::fenced_write`](crate::LockGuard::fenced_write)) fails, its release
    /// reports the lock lost, and so does its check after a reconnect. A broken
    /// waiter fails with [`Error::NodeDeleted`] at its next look at the queue.
    ///
    /// # Errors
    /// [`Error::Break`] when nothing was broken: nobody holds, several hold
    /// and no node was named, the node named takes no part, or not forced
    /// ([`BreakError::NotForced`] names the participant it would break).
    /// [`Error::Usage`] for an invalid path, [`Error::Zk`] if ZooKeeper refused
    /// (e.g. [`ZkError::NoAuth`](crate::ZkError::NoAuth) where the node's ACL
    /// does not let this client delete it), [`Error::Closed`] once the client
    /// is closed.
    ///
    /// ```
    /// use zklock::{BreakLock, BreakOutcome};
    /// # async fn demo(locks: zklock::LockClient, stuck: zklock::LockClient) -> Result<(), zklock::Error> {
    /// let _wedged = stuck.mutex("/locks/job").lock().await?;
    /// let broken = locks.break_lock("/locks/job", BreakLock::holder().force()).await?;
    /// assert_eq!(broken.outcome, BreakOutcome::Deleted);
    /// println!("broke {} (token {})", broken.participant.node, broken.participant.token);
    /// # Ok(()) }
    /// # let server = zklock::sim::Server::new();
    /// # futures::executor::block_on(demo(server.client(), server.client())).unwrap();
    /// ```
    pub async fn break_lock(
        &self,
        path: impl Into<String>,
        what: BreakLock,
    ) -> Result<Broken, Error> {
        let who = self.participants(path).await?;
        let (target, held) = pick(&who, what.node.as_deref()).map_err(Error::Break)?;
        if !what.force {
            return Err(Error::Break(BreakError::NotForced {
                target: Box::new(target),
                held,
            }));
        }
        let node = format!("{}/{}", target.dir, target.node);
        let peer_layout = target.scheme == NameScheme::Go
            || (target.kind == NodeKind::Semaphore && target.scheme != NameScheme::Native)
            || target.dir != who.path;
        let record = (!peer_layout).then(|| (target.session, what.by.clone()));
        let token = target.token;
        let outcome = self
            .one_shot(
                |core, now| {
                    let record = record.as_ref().map(|(session, by)| lock_core::BreakRecord {
                        session: *session,
                        by: by.as_deref(),
                    });
                    core.break_node(&node, token, record, now)
                },
                |event| match event {
                    LockEvent::Broken { outcome, .. } => Some(outcome),
                    _ => None,
                },
            )
            .await?;
        Ok(Broken {
            participant: target,
            held,
            outcome,
        })
    }

    /// Blocking twin of [`break_lock`](Self::break_lock).
    pub fn break_lock_blocking(
        &self,
        path: impl Into<String>,
        what: BreakLock,
    ) -> Result<Broken, Error> {
        crate::blocking::block_on(self.break_lock(path, what))
    }
}

/// The participant to break, and whether it holds.
fn pick(who: &Participants, node: Option<&str>) -> Result<(Participant, bool), BreakError> {
    let path = || who.path.clone();
    let Some(name) = node else {
        return match who.holders.as_slice() {
            [] => Err(BreakError::NobodyHolds { path: path() }),
            [one] => Ok((one.clone(), true)),
            several => Err(BreakError::SeveralHolders {
                path: path(),
                holders: several.iter().map(|p| p.node.clone()).collect(),
            }),
        };
    };
    let named = |p: &&Participant| p.node == name || format!("{}/{}", p.dir, p.node) == name;
    if let Some(p) = who.holders.iter().find(named) {
        return Ok((p.clone(), true));
    }
    if let Some(p) = who.waiters.iter().find(named) {
        return Ok((p.clone(), false));
    }
    Err(BreakError::NoSuchNode {
        path: path(),
        node: name.to_owned(),
        participants: who
            .holders
            .iter()
            .chain(&who.waiters)
            .map(|p| p.node.clone())
            .collect(),
    })
}

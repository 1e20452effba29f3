//! The lock directories under the root as last read: read whole once, then
//! only the directories a watch notification names (see `screen`). The deadlocks
//! among them are found in memory ([`WaitFor`]), not by scanning the server.

use super::rows::{row, Row};
use lock_core::names::parse_name;
use lock_zookeeper_client::zookeeper_client::{self, Client};
use lock_zookeeper_client::{Error, LockClient, Participants, WaitFor};
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// How many lock directories are read at once.
const IN_FLIGHT: usize = 64;

/// What the view knows of the locks under the root.
pub(crate) struct Listing {
    root: String,
    /// Each lock directory with a participant, and its row.
    locks: BTreeMap<String, (Participants, Row)>,
    /// The lock directories in a deadlock, among `locks`.
    deadlocked: BTreeSet<String>,
}

impl Listing {
    /// Reads every lock directory under `root` (`root` itself and its children,
    /// as `zklock deadlocks` scans them): one listing of `root`, then one
    /// inspection per directory, [`IN_FLIGHT`] at a time.
    pub(crate) async fn read(raw: &Client, locks: &LockClient, root: &str) -> Result<Self, Error> {
        let mut listing = Listing {
            root: root.to_owned(),
            locks: BTreeMap::new(),
            deadlocked: BTreeSet::new(),
        };
        listing.reread(locks, listing.dirs(raw).await?).await?;
        Ok(listing)
    }

    /// Every lock directory under the root now.
    async fn dirs(&self, raw: &Client) -> Result<BTreeSet<String>, Error> {
        let root = &self.root;
        let children = match raw.list_children(root).await {
            Ok(children) => children,
            Err(zookeeper_client::Error::NoNode) => Vec::new(),
            Err(e) => {
                let what = format!("listing {root} failed");
                return Err(crate::raw::listing_failed(what, Some(e)));
            }
        };
        let mut dirs: BTreeSet<String> = children.iter().map(|c| self.child(c)).collect();
        dirs.insert(root.clone());
        Ok(dirs)
    }

    fn child(&self, name: &str) -> String {
        format!("{}/{name}", self.root.trim_end_matches('/'))
    }

    /// Reads everything again (after a reconnection, when notifications may
    /// have been missed): the directories known and those under the root now.
    pub(crate) async fn read_all(&mut self, raw: &Client, locks: &LockClient) -> Result<(), Error> {
        let mut dirs = self.dirs(raw).await?;
        dirs.extend(self.locks.keys().cloned());
        self.reread(locks, dirs).await
    }

    /// Reads `dirs` again, and finds the deadlocks anew.
    pub(crate) async fn reread(
        &mut self,
        locks: &LockClient,
        dirs: BTreeSet<String>,
    ) -> Result<(), Error> {
        // Under `top /`: `/` itself and the server's `/zookeeper` are no lock
        // directories (the lock client refuses them), so nobody is read there.
        let lock_dir = |dir: &String| lock_core::validate_lock_path(dir).is_ok();
        let mut dirs = dirs.into_iter().filter(lock_dir);
        let mut tasks = tokio::task::JoinSet::new();
        let mut spawn_next = |tasks: &mut tokio::task::JoinSet<_>| {
            if let Some(dir) = dirs.next() {
                let locks = locks.clone();
                tasks.spawn(async move { locks.participants(dir).await });
            }
        };
        for _ in 0..IN_FLIGHT {
            spawn_next(&mut tasks);
        }
        while let Some(done) = tasks.join_next().await {
            let client = lock_zookeeper_client::ConnectFailure::Client;
            let who = done.map_err(|e| Error::connect_caused_by(client, e))??;
            spawn_next(&mut tasks);
            match row(&who) {
                Some(row) => self.locks.insert(who.path.clone(), (who, row)),
                None => self.locks.remove(&who.path),
            };
        }
        let deadlocked = self.wait_for().deadlocked_locks();
        self.mark(deadlocked);
        Ok(())
    }

    /// The wait-for graph of the locks that can be in a deadlock: those with a
    /// holder whose owner waits somewhere (or publishes where). Every deadlock
    /// passes through such a holder in each of its directories (within one
    /// directory waits only go down the queue, so a cycle leaves it through a
    /// held node's owner), so the others need no look; with 10,000 locks and
    /// few owners both holding and waiting, the graph is a few nodes, not tens
    /// of thousands, at each refresh.
    fn wait_for(&self) -> WaitFor {
        let waiting: HashSet<&str> = self
            .locks
            .values()
            .flat_map(|(who, _)| who.waiters.iter().filter_map(|p| p.owner.as_deref()))
            .collect();
        let may_wait = |who: &&Participants| {
            who.holders.iter().any(|h| {
                !h.owner_waits_at.is_empty()
                    || h.owner.as_deref().is_some_and(|o| waiting.contains(o))
            })
        };
        WaitFor::new(self.locks.values().map(|(who, _)| who).filter(may_wait))
    }

    /// For `--once`: the deadlocks found are confirmed by reading their
    /// directories again (each edge seen in both readings held throughout
    /// between them, as the deadlock scan does); none found costs nothing.
    pub(crate) async fn confirm_deadlocks(&mut self, locks: &LockClient) -> Result<(), Error> {
        if self.deadlocked.is_empty() {
            return Ok(());
        }
        let first = self.wait_for();
        self.reread(locks, self.deadlocked.clone()).await?;
        let second = self.wait_for();
        self.mark(first.common(&second).deadlocked_locks());
        Ok(())
    }

    /// Marks the rows of `deadlocked` (and unmarks the others).
    fn mark(&mut self, deadlocked: BTreeSet<String>) {
        for path in self.deadlocked.union(&deadlocked) {
            if let Some((_, row)) = self.locks.get_mut(path) {
                row.deadlocked = deadlocked.contains(path);
            }
        }
        self.deadlocked = deadlocked;
    }

    /// The directories to read again after a notification about `path` (a node
    /// created, deleted or changed), or `None` when the root itself changed (all).
    pub(crate) fn touched(&self, path: &str) -> Option<BTreeSet<String>> {
        let base = self.root.trim_end_matches('/');
        if path == self.root {
            return None;
        }
        let Some(rest) = path.strip_prefix(base).and_then(|r| r.strip_prefix('/')) else {
            return Some(BTreeSet::new());
        };
        let first = rest.split('/').next().unwrap_or(rest);
        let dir = if !rest.contains('/') && parse_name(first).is_some() {
            // A participant of the root itself.
            self.root.clone()
        } else {
            self.child(first)
        };
        Some(BTreeSet::from([dir]))
    }

    /// The rows, in path order.
    pub(crate) fn rows(&self) -> Vec<&Row> {
        self.locks.values().map(|(_, row)| row).collect()
    }

    /// Whether the lock at `path` is in a deadlock.
    pub(crate) fn deadlocked(&self, path: &str) -> bool {
        self.deadlocked.contains(path)
    }

    /// The participants of the lock at `path`, as last read (`None`: nobody).
    pub(crate) fn participants(&self, path: &str) -> Option<&Participants> {
        self.locks.get(path).map(|(who, _)| who)
    }
}

//! Who set which watch: a firing is delivered only to the tasks that asked for it.
//!
//! ZooKeeper fires a watch once per session and path, and every task of a session
//! shares that session. Handing every firing to every task made one release wake
//! every waiter of the session: each waiter whose cached lower set held the deleted
//! node dropped it and, still blocked, listed the directory again, so N waiters on
//! one session cost O(N²) requests to drain (the herd effect inside one process).
//! Routing by path keeps a release's work in the one task that watches the node.

use crate::ids::LockId;
use std::collections::{BTreeSet, HashMap};

/// The tasks interested in each watched path (and the reverse, to forget a task).
#[derive(Default)]
pub(crate) struct WatchIndex {
    by_path: HashMap<String, BTreeSet<LockId>>,
    by_lock: HashMap<LockId, BTreeSet<String>>,
}

impl WatchIndex {
    /// `lock` sent a request that leaves a watch on `path`.
    pub(crate) fn add(&mut self, lock: LockId, path: &str) {
        self.by_path
            .entry(path.to_owned())
            .or_default()
            .insert(lock);
        self.by_lock
            .entry(lock)
            .or_default()
            .insert(path.to_owned());
    }

    /// The watch on `path` fired: the tasks that set it, oldest first. Watches are
    /// one-shot, so they are forgotten; a task that watches again is added again.
    pub(crate) fn take(&mut self, path: &str) -> Vec<LockId> {
        let Some(locks) = self.by_path.remove(path) else {
            return Vec::new();
        };
        for lock in &locks {
            if let Some(paths) = self.by_lock.get_mut(lock) {
                paths.remove(path);
                if paths.is_empty() {
                    self.by_lock.remove(lock);
                }
            }
        }
        locks.into_iter().collect()
    }

    /// `lock` no longer wants the firing of its watch on `path`. Returns whether no
    /// task watches `path` any more: only then may the session's watch be removed
    /// from the server (ZooKeeper keeps one per session and path, which another
    /// task, e.g. our successor in the same session, may be counting on).
    pub(crate) fn remove(&mut self, lock: LockId, path: &str) -> bool {
        let mut unwatched = true;
        if let Some(locks) = self.by_path.get_mut(path) {
            locks.remove(&lock);
            unwatched = locks.is_empty();
            if unwatched {
                self.by_path.remove(path);
            }
        }
        if let Some(paths) = self.by_lock.get_mut(&lock) {
            paths.remove(path);
            if paths.is_empty() {
                self.by_lock.remove(&lock);
            }
        }
        unwatched
    }

    /// `lock` has ended: it wants no firing any more.
    pub(crate) fn forget_lock(&mut self, lock: LockId) {
        for path in self.by_lock.remove(&lock).unwrap_or_default() {
            if let Some(locks) = self.by_path.get_mut(&path) {
                locks.remove(&lock);
                if locks.is_empty() {
                    self.by_path.remove(&path);
                }
            }
        }
    }

    /// Paths with at least one interested task.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.by_path.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_firing_reaches_only_the_tasks_that_watch_its_path_once() {
        let mut w = WatchIndex::default();
        w.add(LockId(1), "/l/a");
        w.add(LockId(2), "/l/b");
        w.add(LockId(3), "/l/a");
        assert_eq!(w.take("/l/a"), vec![LockId(1), LockId(3)]);
        assert_eq!(w.take("/l/a"), Vec::<LockId>::new(), "one-shot");
        // Removing one task's interest leaves the others'.
        w.add(LockId(1), "/l/c");
        w.add(LockId(2), "/l/c");
        assert!(!w.remove(LockId(1), "/l/c"), "task 2 still watches");
        assert!(w.remove(LockId(2), "/l/c"));
        assert_eq!(w.take("/l/c"), Vec::<LockId>::new());
        assert_eq!(w.take("/l/c"), Vec::<LockId>::new());
        w.forget_lock(LockId(2));
        assert_eq!(w.take("/l/b"), Vec::<LockId>::new());
        assert_eq!(w.len(), 0);
    }
}

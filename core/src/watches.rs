//! Who set which watch: a firing is delivered only to the tasks that asked for it.
//!
//! ZooKeeper fires a watch once per session and path, and every task of a session
//! shares that session: handing every firing to every task would make one release
//! wake every waiter of the session (a herd inside one process).

use crate::ids::LockId;
use std::collections::HashMap;
use std::sync::Arc;

/// The tasks interested in each watched path (and the reverse, to forget a task).
///
/// Sized for the common case, one task per path and one or two paths per task
/// (kept for every held lock and waiting acquisition): each path is allocated
/// once and shared by both maps, and each side holds one entry inline ([`Few`]).
#[derive(Default)]
pub(crate) struct WatchIndex {
    by_path: HashMap<Arc<str>, Few<LockId>>,
    by_lock: HashMap<LockId, Few<Arc<str>>>,
}

/// A small set: one entry inline, more in a `Vec` (kept sorted for ids, so that
/// a firing reaches its tasks oldest first).
enum Few<T> {
    One(T),
    Many(Vec<T>),
}

impl<T: PartialEq> Few<T> {
    fn as_slice(&self) -> &[T] {
        match self {
            Few::One(one) => std::slice::from_ref(one),
            Few::Many(many) => many,
        }
    }

    /// Adds `item` (at the index `at` gives) unless it is there.
    fn insert(&mut self, item: T, at: impl Fn(&[T], &T) -> usize) {
        if self.as_slice().contains(&item) {
            return;
        }
        if let Few::One(_) = self {
            let Few::One(one) = std::mem::replace(self, Few::Many(Vec::with_capacity(2))) else {
                unreachable!()
            };
            if let Few::Many(many) = self {
                many.push(one);
            }
        }
        if let Few::Many(many) = self {
            let i = at(many, &item);
            many.insert(i, item);
        }
    }

    /// Removes `item` (if there); returns whether the set is empty now.
    fn remove(&mut self, item: &T) -> bool {
        match self {
            Few::One(one) => one == item,
            Few::Many(many) => {
                many.retain(|x| x != item);
                if many.len() == 1 {
                    *self = Few::One(many.pop().expect("one left"));
                }
                matches!(self, Few::Many(m) if m.is_empty())
            }
        }
    }

    fn into_vec(self) -> Vec<T> {
        match self {
            Few::One(one) => vec![one],
            Few::Many(many) => many,
        }
    }
}

impl WatchIndex {
    /// `lock` sent a request that leaves a watch on `path` (`shared`: the
    /// path as its owner keeps it, kept here rather than a copy).
    pub(crate) fn add(&mut self, lock: LockId, path: &str, shared: Option<&Arc<str>>) {
        // The path's one allocation, shared with the reverse map.
        let shared: Arc<str> = match self.by_path.get_key_value(path) {
            Some((key, _)) => key.clone(),
            None => shared.cloned().unwrap_or_else(|| Arc::from(path)),
        };
        match self.by_path.get_mut(path) {
            Some(locks) => locks.insert(lock, |ids, id| ids.partition_point(|x| x < id)),
            None => {
                self.by_path.insert(shared.clone(), Few::One(lock));
            }
        }
        match self.by_lock.get_mut(&lock) {
            Some(paths) => paths.insert(shared, |paths, _| paths.len()),
            None => {
                self.by_lock.insert(lock, Few::One(shared));
            }
        }
    }

    /// The watch on `path` fired: the tasks that set it, oldest first. Watches are
    /// one-shot, so they are forgotten; a task that watches again is added again.
    pub(crate) fn take(&mut self, path: &str) -> Vec<LockId> {
        let Some(locks) = self.by_path.remove(path) else {
            return Vec::new();
        };
        let locks = locks.into_vec();
        for lock in &locks {
            self.unlink(*lock, path);
        }
        locks
    }

    /// Drops `path` from `lock`'s side.
    fn unlink(&mut self, lock: LockId, path: &str) {
        if let Some(paths) = self.by_lock.get_mut(&lock) {
            let found = paths.as_slice().iter().find(|p| &***p == path).cloned();
            if let Some(found) = found {
                if paths.remove(&found) {
                    self.by_lock.remove(&lock);
                }
            }
        }
    }

    /// `lock` no longer wants the firing of its watch on `path`. Returns whether no
    /// task watches `path` any more: only then may the session's watch be removed
    /// from the server (ZooKeeper keeps one per session and path, which another
    /// task, e.g. our successor in the same session, may be counting on).
    pub(crate) fn remove(&mut self, lock: LockId, path: &str) -> bool {
        let mut unwatched = true;
        if let Some(locks) = self.by_path.get_mut(path) {
            unwatched = locks.remove(&lock);
            if unwatched {
                self.by_path.remove(path);
            }
        }
        self.unlink(lock, path);
        unwatched
    }

    /// `lock` has ended: it wants no firing any more.
    pub(crate) fn forget_lock(&mut self, lock: LockId) {
        let Some(paths) = self.by_lock.remove(&lock) else {
            return;
        };
        for path in paths.into_vec() {
            if let Some(locks) = self.by_path.get_mut(&path) {
                if locks.remove(&lock) {
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
    fn a_firing_reaches_only_the_tasks_that_watch_its_path_once_oldest_first() {
        let mut w = WatchIndex::default();
        // A waiter watches its own node and its blocker (twice: one entry); two
        // more tasks share the blocker. A path its owner keeps is kept, not
        // copied (both maps share it).
        let shared: Arc<str> = Arc::from("/l/blocker");
        w.add(LockId(5), "/l/own", None);
        w.add(LockId(5), "/l/blocker", Some(&shared));
        assert_eq!(Arc::strong_count(&shared), 3);
        w.add(LockId(5), "/l/blocker", None);
        w.add(LockId(2), "/l/blocker", None);
        w.add(LockId(9), "/l/blocker", None);
        assert_eq!(w.len(), 2);
        // Removing one task's interest leaves the others'.
        assert!(!w.remove(LockId(9), "/l/blocker"));
        let fired = w.take("/l/blocker");
        assert_eq!(fired, vec![LockId(2), LockId(5)], "oldest first");
        assert_eq!(Arc::strong_count(&shared), 1);
        assert_eq!(w.take("/l/blocker"), Vec::<LockId>::new(), "one-shot");
        // The last task's removal unwatches the path.
        w.add(LockId(2), "/l/c", None);
        assert!(w.remove(LockId(2), "/l/c"));
        assert_eq!(w.take("/l/c"), Vec::<LockId>::new());
        // Task 5 keeps its other paths; forgetting it clears everything.
        w.add(LockId(5), "/l/third", None);
        w.forget_lock(LockId(5));
        assert_eq!(w.len(), 0);
        assert_eq!(w.take("/l/own"), Vec::<LockId>::new());
        assert!(w.by_lock.is_empty());
    }
}

//! The server's watch tables, with ZooKeeper's trigger rules.
//!
//! Like the server (`WatchManager`), there are two tables: *data watches*, left by
//! `getData` and by `exists` (also on a missing node), and *child watches*, left by
//! `getChildren`. A watch is one registration per (session, path, table): setting it
//! twice leaves one, and it fires at most once, then is gone.
//!
//! | change            | data watches of the node | child watches of the node | child watches of the parent |
//! |-------------------|--------------------------|---------------------------|-----------------------------|
//! | create            | `NodeCreated`            | -                         | `NodeChildrenChanged`       |
//! | delete            | `NodeDeleted`            | `NodeDeleted` (once per session) | `NodeChildrenChanged` |
//! | setData           | `NodeDataChanged`        | -                         | -                           |

use lock_core::WatchKind;
use std::collections::{BTreeMap, BTreeSet};

/// A watch firing, addressed to the session that set the watch.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Notification {
    /// The session whose watch fired.
    pub session: i64,
    /// The watched path.
    pub path: String,
    /// What happened.
    pub kind: WatchKind,
    /// The zxid of the change that fired it.
    pub zxid: i64,
}

/// Which table a watch lives in.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum WatchType {
    /// Set by `getData` or `exists`: fires on create, delete and data change.
    Data,
    /// Set by `getChildren`: fires on child create/delete and the node's delete.
    Child,
}

#[derive(Default, Clone, Debug)]
pub(crate) struct WatchTable {
    data: BTreeMap<String, BTreeSet<i64>>,
    child: BTreeMap<String, BTreeSet<i64>>,
}

impl WatchTable {
    fn table(&mut self, ty: WatchType) -> &mut BTreeMap<String, BTreeSet<i64>> {
        match ty {
            WatchType::Data => &mut self.data,
            WatchType::Child => &mut self.child,
        }
    }

    pub(crate) fn add(&mut self, ty: WatchType, path: &str, session: i64) {
        self.table(ty)
            .entry(path.to_owned())
            .or_default()
            .insert(session);
    }

    /// Removes every watch on `path` in table `ty` and returns the sessions to notify:
    /// all of them but `except` (those already notified of this change through the
    /// other table; their registration is consumed all the same, as on the server).
    pub(crate) fn take(
        &mut self,
        ty: WatchType,
        path: &str,
        except: &BTreeSet<i64>,
    ) -> BTreeSet<i64> {
        let Some(set) = self.table(ty).remove(path) else {
            return BTreeSet::new();
        };
        set.difference(except).copied().collect()
    }

    /// Drops `session`'s watch of type `ty` on `path` (`removeWatches`); whether
    /// there was one.
    pub(crate) fn remove(&mut self, ty: WatchType, path: &str, session: i64) -> bool {
        let table = self.table(ty);
        let Some(set) = table.get_mut(path) else {
            return false;
        };
        let removed = set.remove(&session);
        if set.is_empty() {
            table.remove(path);
        }
        removed
    }

    /// Drops every watch of `session` (its connection closed or it expired).
    pub(crate) fn remove_session(&mut self, session: i64) {
        for table in [&mut self.data, &mut self.child] {
            table.retain(|_, set| {
                set.remove(&session);
                !set.is_empty()
            });
        }
    }

    pub(crate) fn contains(&self, ty: WatchType, path: &str, session: i64) -> bool {
        let table = match ty {
            WatchType::Data => &self.data,
            WatchType::Child => &self.child,
        };
        table.get(path).is_some_and(|s| s.contains(&session))
    }

    /// Every (type, path) watched by `session`.
    pub(crate) fn of_session(&self, session: i64) -> Vec<(WatchType, String)> {
        let mut out = Vec::new();
        for (ty, table) in [
            (WatchType::Data, &self.data),
            (WatchType::Child, &self.child),
        ] {
            for (path, set) in table {
                if set.contains(&session) {
                    out.push((ty, path.clone()));
                }
            }
        }
        out
    }

    pub(crate) fn len(&self) -> usize {
        self.data
            .values()
            .chain(self.child.values())
            .map(BTreeSet::len)
            .sum()
    }
}

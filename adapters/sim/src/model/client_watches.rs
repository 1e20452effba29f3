//! What a client library knows of its own watches: the ones it believes are set,
//! consumed by the notifications that answer them and set again after a reconnect
//! (`SetWatches`). Both faces' clients keep one, so a reconnect means the same
//! thing under the seeded simulator and the in-process server.

use super::tree::ZkModel;
use super::watches::WatchType;
use lock_core::WatchKind;
use std::collections::BTreeSet;

/// The watches a client library believes it has, to re-register after a reconnect
/// (no exists watch: the core sends no `exists`).
#[derive(Default, Debug)]
pub(crate) struct ClientWatches {
    pub data: BTreeSet<String>,
    pub child: BTreeSet<String>,
}

impl ClientWatches {
    /// A notification consumes the watches it answers (client-side `materialize`).
    pub fn fired(&mut self, path: &str, kind: WatchKind) {
        match kind {
            WatchKind::NodeDeleted => {
                self.data.remove(path);
                self.child.remove(path);
            }
            WatchKind::NodeChildrenChanged => {
                self.child.remove(path);
            }
            _ => {
                self.data.remove(path);
            }
        }
    }

    pub fn clear(&mut self) {
        *self = ClientWatches::default();
    }

    /// What a request does to the registry as it is sent: the watch it leaves once
    /// answered (to [`set`](Self::set) on success). A watch removal forgets at once
    /// (it is not set again on a reconnect), as zookeeper-client does when a
    /// watcher is dropped.
    pub fn on_send(&mut self, op: &lock_core::Op) -> Option<(WatchType, String)> {
        match op {
            lock_core::Op::GetData { path, watch: true } => Some((WatchType::Data, path.clone())),
            lock_core::Op::WatchChildren { path } => Some((WatchType::Child, path.clone())),
            lock_core::Op::RemoveWatch { path, watch } => {
                match watch {
                    lock_core::WatchType::Children => self.child.remove(path),
                    _ => self.data.remove(path),
                };
                None
            }
            _ => None,
        }
    }

    /// A request that leaves `watch` succeeded: the library knows the watch.
    pub fn set(&mut self, watch: Option<(WatchType, String)>) {
        match watch {
            Some((WatchType::Data, path)) => drop(self.data.insert(path)),
            Some((WatchType::Child, path)) => drop(self.child.insert(path)),
            None => {}
        }
    }

    /// A reconnect to the same, live `session`. The server dropped the old
    /// connection's watches with it (ZooKeeper's `DataTree.removeCnxn`); a library
    /// that `keeps` watches sets its own again with the last zxid it saw
    /// (`SetWatches`: `DataTree.setWatches` fires at once those whose node changed
    /// since, see [`ZkModel::set_watches`]); one that does not forgets them. The
    /// firings wait in the model's notifications.
    pub fn reconnect(&mut self, model: &mut ZkModel, session: i64, last_zxid: i64, keeps: bool) {
        model.remove_watches(session);
        if !keeps {
            self.clear();
            return;
        }
        let data: Vec<String> = self.data.iter().cloned().collect();
        let child: Vec<String> = self.child.iter().cloned().collect();
        model.set_watches(session, last_zxid, &data, &[], &child);
    }
}

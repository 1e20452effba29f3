//! [`ZkModel`]'s reads: `getData`, `exists`, `getChildren` (each may leave a watch)
//! and `removeWatches`.

use super::paths::validate_path;
use super::tree::{ZkModel, Znode, NO_SESSION};
use super::watches::WatchType;
use lock_core::{Stat, ZkError};

impl ZkModel {
    // ----- reads ----------------------------------------------------------------

    /// `getData(path, watch)`: the data and stat; with `watch`, a data watch (only
    /// if the node exists: a missing node answers `NoNode` and leaves no watch).
    pub fn get_data(
        &mut self,
        session: i64,
        path: &str,
        watch: bool,
    ) -> Result<(Vec<u8>, Stat), ZkError> {
        self.check_session(session)?;
        validate_path(path, false).map_err(|_| ZkError::BadArguments)?;
        let node = self.nodes.get(path).ok_or(ZkError::NoNode)?;
        let out = (node.data.clone(), node.stat());
        if watch && session != NO_SESSION {
            self.watches.add(WatchType::Data, path, session);
        }
        Ok(out)
    }

    /// `removeWatches(path, type)`: drops `session`'s watch of that type on `path`; whether
    /// there was one (the server answers `NoWatcher` when not; bindings report
    /// [`Reply::WatchRemoved`](lock_core::Reply::WatchRemoved) either way, and so does [`ZkModel::apply`]).
    pub fn remove_watch(
        &mut self,
        session: i64,
        path: &str,
        watch: lock_core::WatchType,
    ) -> Result<bool, ZkError> {
        self.check_session(session)?;
        validate_path(path, false).map_err(|_| ZkError::BadArguments)?;
        let table = match watch {
            lock_core::WatchType::Children => WatchType::Child,
            _ => WatchType::Data,
        };
        Ok(self.watches.remove(table, path, session))
    }

    /// `exists(path, watch)`: the stat or `None`; with `watch`, a data watch, also on
    /// a missing node (it then fires `NodeCreated`).
    pub fn exists(
        &mut self,
        session: i64,
        path: &str,
        watch: bool,
    ) -> Result<Option<Stat>, ZkError> {
        self.check_session(session)?;
        validate_path(path, false).map_err(|_| ZkError::BadArguments)?;
        if watch && session != NO_SESSION {
            self.watches.add(WatchType::Data, path, session);
        }
        Ok(self.nodes.get(path).map(Znode::stat))
    }

    /// `getChildren(path, watch)`: child names in name order; with `watch`, a child
    /// watch (only if the node exists).
    pub fn get_children(
        &mut self,
        session: i64,
        path: &str,
        watch: bool,
    ) -> Result<Vec<String>, ZkError> {
        self.check_session(session)?;
        validate_path(path, false).map_err(|_| ZkError::BadArguments)?;
        let node = self.nodes.get(path).ok_or(ZkError::NoNode)?;
        let out = node.children.iter().cloned().collect();
        if watch && session != NO_SESSION {
            self.watches.add(WatchType::Child, path, session);
        }
        Ok(out)
    }
}
